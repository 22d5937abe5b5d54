"""What an sbatch script launches: allocation, srun steps, the worker launcher and its arguments.

:func:`read_job` walks the parsed commands in order (assignments, ``export``, ``cd``, ``uv
sync``, ``srun``), follows ``bash -c`` bodies under ``srun``, and finds each worker-group
launcher (``torchrun``, ``python -m torch.distributed.run|launch``, with or without ``uv run``)
with its own options and the training script's (Megatron's) arguments
(:mod:`analyzer.lint.launcher`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from analyzer.lint.expand import Env, Field, Var
from analyzer.lint.launcher import Launcher, Step, find_launcher
from analyzer.lint.lexer import Command, Word, tokenize
from analyzer.lint.script import Script, parse_options

_EXPORTERS = {"export", "declare", "typeset", "readonly", "local"}
_SHELLS = re.compile(r"(^|/)(bash|sh|zsh|dash)$")
_MAY_LAUNCH = re.compile(r"torch|python|srun|\buv\b|\bbash\b|\bsh\b")
_GPU_GRES = re.compile(r"^gpu(?::([A-Za-z][\w.-]*))?(?::(\d+))?")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
_SRUN_FLAGS = {
    "label", "l", "exclusive", "overlap", "unbuffered", "u", "no-kill", "K", "verbose", "v",
    "quiet", "Q", "container-remap-root", "no-container-remap-root", "container-mount-home",
    "no-container-mount-home", "container-writable", "no-container-entrypoint",
    "kill-on-bad-exit", "X", "pty",
}
_SRUN_SHORT = {"N": "nodes", "n": "ntasks", "G": "gpus", "C": "constraint", "D": "chdir",
               "o": "output", "e": "error", "p": "partition", "c": "cpus-per-task"}


@dataclass
class Srun:
    """One ``srun`` call: its options and what it runs."""

    step: Step
    opts: dict[str, Field]
    program: list[Field]
    inner: list[Step] = field(default_factory=list)
    launchers: list[Launcher] = field(default_factory=list)


@dataclass
class Job:
    """Everything the rules need from one script."""

    script: Script
    steps: list[Step]
    sruns: list[Srun]
    launchers: list[Launcher]
    cwd: Field | None = None  # the directory the job cd's into before launching
    uv_sync: list[Step] = field(default_factory=list)  # uv sync outside srun, before it

    def sbatch(self, *names: str) -> tuple[str, int] | None:
        """The value and line of the last ``#SBATCH`` option among ``names``."""
        d = self.script.directive(*names)
        return (d.value, d.line) if d else None

    def option(self, srun: Srun | None, *names: str) -> tuple[str, int] | None:
        """An allocation option from the srun line (which wins) or the ``#SBATCH`` header."""
        if srun is not None:
            for n in names:
                if n in srun.opts:
                    return srun.opts[n].value, srun.opts[n].line
        return self.sbatch(*names)

    @property
    def nodes(self) -> tuple[int, int] | None:
        """Number of nodes and the line that says so (None when not fixed or not given)."""
        got = self.option(self.main_srun, "nodes")
        if got is None or not got[0].isdigit():
            return None
        return int(got[0]), got[1]

    @property
    def main_srun(self) -> Srun | None:
        """The srun that starts the workers (the first with a launcher, else the last srun)."""
        for s in self.sruns:
            if s.launchers:
                return s
        return self.sruns[-1] if self.sruns else None

    def gpus_per_node(self) -> tuple[int, int] | None:
        """GPUs per node from --gpus-per-node, --gres=gpu:..., or --gpus / nodes."""
        s = self.main_srun
        got = self.option(s, "gpus-per-node")
        if got:
            n = got[0].rsplit(":", 1)[-1]
            if n.isdigit():
                return int(n), got[1]
        got = self.option(s, "gres")
        if got:
            for g in got[0].split(","):
                m = _GPU_GRES.match(g)
                if m and m.group(2):
                    return int(m.group(2)), got[1]
                if m and g.rsplit(":", 1)[-1].isdigit():
                    return int(g.rsplit(":", 1)[-1]), got[1]
        got = self.option(s, "gpus")
        nodes = self.nodes
        if got and nodes:
            n = got[0].rsplit(":", 1)[-1]
            if n.isdigit() and int(n) % nodes[0] == 0:
                return int(n) // nodes[0], got[1]
        return None

    def gpu_types(self) -> list[tuple[str, int, str]]:
        """GPU model names the allocation asks for: (name, line, where it came from)."""
        s = self.main_srun
        out: list[tuple[str, int, str]] = []
        for opt in ("gres", "gpus", "gpus-per-node", "gpus-per-task"):
            got = self.option(s, opt)
            if not got:
                continue
            for g in got[0].split(","):
                parts = g.split(":")
                if opt == "gres":
                    if parts[0] != "gpu":
                        continue
                    parts = parts[1:]
                names = [p for p in parts if p and not p.isdigit()]
                out += [(n, got[1], f"--{opt}") for n in names]
        got = self.option(s, "constraint")
        if got:
            for c in re.split(r"[|&,\[\]*()]+", got[0]):
                if c.strip():
                    out.append((c.strip(), got[1], "--constraint"))
        return out


def _is_assignment(w: Word) -> bool:
    return bool(w.parts) and w.parts[0][0] == "u" and _ASSIGNMENT.match(w.parts[0][1]) is not None


def _leading_assignments(words: list[Word]) -> int:
    """How many of ``words`` are ``NAME=value`` assignments before the command name."""
    k = 0
    while k < len(words) and _is_assignment(words[k]):
        k += 1
    return k


def _prefix_assignments(words: list[Word], env: Env, cond: bool) -> dict[str, Field]:
    """``NAME=value cmd``: the values the prefix ``words`` give ``cmd`` (``env`` unchanged)."""
    prefix: dict[str, Field] = {}
    scratch = env.copy() if words else env
    for w in words:
        v = scratch.assign(w, exported=True, conditional=cond)
        if v is not None and v.fields:
            prefix[v.name] = v.fields[0]
    return prefix


def _export(words: list[Word], env: Env, cond: bool) -> None:
    """Apply ``export``/``declare``/... ``words`` (the command name first) to ``env``."""
    args = words[1:]
    exported = words[0].raw == "export" or any(w.raw.startswith("-") and "x" in w.raw
                                               for w in args)
    for w in args:
        if w.raw.startswith("-"):
            continue
        if env.assign(w, exported=exported, conditional=cond) is None and exported:
            var = env.get(w.raw)
            if var is not None:  # a new Var: earlier snapshots keep the unexported one
                env.vars[var.name] = replace(var, exported=True)


def _set_allexport(args: list[Word], env: Env) -> None:
    """``set -a`` / ``set -o allexport`` (``+a`` / ``+o``: off) from here on."""
    vals = [w.raw for w in args]
    for k, v in enumerate(vals):
        name = vals[k + 1] if k + 1 < len(vals) else ""
        if v in ("-o", "+o") and name == "allexport":
            env.allexport = v == "-o"
        elif re.fullmatch(r"[-+][a-zA-Z]*a[a-zA-Z]*", v):
            env.allexport = v[0] == "-"


def _launchers(step: Step, env: Env, in_srun: bool) -> list[Launcher]:
    """The launchers ``step`` starts, directly or in a ``bash -c`` body."""
    inner = _shell_body(step, env, in_srun)
    found = ([find_launcher(st.fields, st) for st in inner] if inner is not None
             else [find_launcher(step.fields, step)])
    return [lz for lz in found if lz is not None]


def _record(step: Step, env: Env, in_srun: bool, job: Job) -> None:
    """Note in ``job`` what ``step`` does: ``cd``, ``uv sync``, ``srun`` or a launcher."""
    fields = step.fields
    vals = [f.value for f in fields]
    if vals and vals[0] == "cd" and len(vals) > 1 and not in_srun:
        job.cwd = fields[1]
    elif vals[:2] == ["uv", "sync"] and not in_srun and not job.sruns:
        job.uv_sync.append(step)
    elif vals and vals[0].rsplit("/", 1)[-1] == "srun":
        job.sruns.append(_srun(step, env, job))
        return
    job.launchers += _launchers(step, env, in_srun)


def _walk_command(cmd: Command, env: Env, in_srun: bool, job: Job | None) -> Step:
    """Run ``cmd`` against ``env`` (assignments, exports) and record what it launches."""
    words = cmd.words
    cond = cmd.conditional or cmd.depth > 0
    k = _leading_assignments(words)
    if k == len(words):
        for w in words:
            env.assign(w, exported=False, conditional=cond)
        return Step(cmd, [], env, {}, in_srun)
    prefix = _prefix_assignments(words[:k], env, cond)
    rest = words[k:]
    if rest[0].raw in _EXPORTERS:
        _export(rest, env, cond)
        return Step(cmd, [], env, prefix, in_srun)
    if rest[0].raw == "set":
        _set_allexport(rest[1:], env)
    fields = env.expand_all(rest)
    # a snapshot of the variables only where a launcher can be (the copy costs O(vars))
    snap = env.copy() if _MAY_LAUNCH.search(" ".join(f.value for f in fields)) else env
    step = Step(cmd, fields, snap, prefix, in_srun)
    if job is not None:
        _record(step, env, in_srun, job)
    return step


def _walk(commands: list[Command], env: Env, in_srun: bool, job: Job | None) -> list[Step]:
    return [_walk_command(cmd, env, in_srun, job) for cmd in commands]


def _shell_body(step: Step, env: Env, in_srun: bool) -> list[Step] | None:
    """The steps of a ``bash -c BODY [ARG0 ARGS...]`` in ``step``, or None."""
    words = step.cmd.words
    for k, w in enumerate(words[:-2]):
        head = env.expand(w)
        if not head or not _SHELLS.search(head[0].value):
            continue
        if not re.fullmatch(r"-\w*c\w*", words[k + 1].raw or ""):
            continue
        body = words[k + 2]
        text = body.raw if body.single_quoted else "".join(f.value for f in env.expand(body))
        inner_env = env.environment()  # the child shell sees exported variables only
        for name, f in step.prefix.items():
            inner_env.vars[name] = Var(name, [f], f.line, exported=True)
        positional = env.expand_all(words[k + 4 :]) if k + 3 < len(words) else []
        inner_env.vars["@"] = Var("@", positional, body.line, array=True)
        steps = _walk(tokenize(text, body.line), inner_env, in_srun, None)
        for st in steps:
            st.prefix = {**step.prefix, **st.prefix}
        return steps
    return None


def _srun_options(fields: list[Field]) -> tuple[dict[str, Field], int]:
    """srun's options (long names) and the index of the program it runs."""
    vals = [f.value for f in fields]
    i = 1
    opts: dict[str, Field] = {}
    while i < len(vals) and vals[i].startswith("-"):
        tok = vals[i]
        if tok.startswith("--"):
            name, eq, value = tok[2:].partition("=")
            if eq:
                opts[name] = Field(value, fields[i].line, fields[i].symbolic)
            elif name in _SRUN_FLAGS or i + 1 >= len(vals):
                opts[name] = Field("", fields[i].line)
            else:
                opts[name] = fields[i + 1]
                i += 1
        else:
            short = tok[1:2]
            name = _SRUN_SHORT.get(short, short)
            if len(tok) > 2:
                opts[name] = Field(tok[2:].lstrip("="), fields[i].line, fields[i].symbolic)
            elif short in _SRUN_FLAGS or i + 1 >= len(vals):
                opts[name] = Field("", fields[i].line)
            else:
                opts[name] = fields[i + 1]
                i += 1
        i += 1
    return opts, i


def _srun(step: Step, env: Env, job: Job) -> Srun:
    opts, i = _srun_options(step.fields)
    program = step.fields[i:]
    s = Srun(step, opts, program)
    inner = _shell_body(step, env, True)
    if inner is not None:
        s.inner = inner
        s.launchers = [lz for st in inner if (lz := find_launcher(st.fields, st)) is not None]
    else:
        lz = find_launcher(program, step)
        if lz is not None:
            s.launchers.append(lz)
    job.launchers += s.launchers
    return s


def read_job(script: Script) -> Job:
    """Walk ``script`` and collect what it launches."""
    job = Job(script, [], [], [])
    job.steps = _walk(script.commands, Env(), False, job)
    return job


__all__ = ["Job", "Launcher", "Srun", "Step", "parse_options", "read_job"]

"""Find the worker-group launcher in one command, with its options and the training script's.

A launcher is ``torchrun`` or ``python -m torch.distributed.run|launch``, with or without
``uv run [uv options]`` in front; what follows it is the launcher's own options, the training
script, and the script's (Megatron's) arguments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from analyzer.lint.expand import Env, Field
from analyzer.lint.lexer import Command

_PYTHON = re.compile(r"(^|/)python[0-9.]*$")
_PYTHON_VARS = ("$PYTHON", "${PYTHON}")
_DIST_MODULES = ("torch.distributed.run", "torch.distributed.launch")
_LAUNCH_FLAGS = {"standalone", "no-python", "module", "m", "run-path"}
_UV_VALUE_OPTS = {
    "project", "directory", "with", "python", "p", "extra", "group", "env-file", "package",
    "index", "index-url", "extra-index-url", "only-group", "with-requirements", "cache-dir",
    "config-file", "no-group", "with-editable",
}


@dataclass
class Step:
    """One command as it runs: expanded fields and the environment at that point."""

    cmd: Command
    fields: list[Field]
    env: Env
    prefix: dict[str, Field]
    in_srun: bool = False


@dataclass
class Launcher:
    """A worker-group launcher found in the script."""

    kind: str  # "torchrun", "run" (python -m torch.distributed.run), "launch"
    uv: bool
    uv_opts: list[str]
    first: Field  # where the launcher starts (uv, torchrun or the interpreter)
    python: Field | None
    opts: dict[str, Field]  # launcher option -> value ("" for a flag), names with dashes
    script: Field | None
    args: dict[str, Field]  # the training script's options (Megatron), names with dashes
    step: Step

    def env_value(self, name: str) -> Field | None:
        """The value of the environment variable ``name`` the launcher starts with: a prefix
        assignment, or a variable the script exported (an unexported one stays in the shell)."""
        if name in self.step.prefix:
            return self.step.prefix[name]
        var = self.step.env.get(name)
        return var.fields[0] if var is not None and var.exported and var.fields else None


def _uv_options_end_at(between: list[str]) -> bool:
    """True when ``between`` (what follows ``uv run``) holds only uv's own options."""
    i = 0
    while i < len(between):
        tok = between[i]
        if not tok.startswith("-"):
            return False
        name = tok.lstrip("-").split("=", 1)[0]
        i += 2 if name in _UV_VALUE_OPTS and "=" not in tok else 1
    return True


def _uv_run_before(vals: list[str], k: int) -> int | None:
    """Index of ``uv`` when ``vals[k]`` is preceded by ``uv run [uv options]``, else None."""
    for j in range(k - 1, 0, -1):
        if vals[j] == "run" and vals[j - 1].rsplit("/", 1)[-1] == "uv":
            return j - 1 if _uv_options_end_at(vals[j + 1 : k]) else None
        if not vals[j].startswith("-") and not (j > 0 and vals[j - 1].lstrip("-") in
                                                 _UV_VALUE_OPTS):
            return None
    return None


def _launcher_kind(vals: list[str], k: int) -> tuple[str, int] | None:
    """``(kind, index of its first option)`` when ``vals[k]`` starts a launcher, else None."""
    v = vals[k]
    if v.rsplit("/", 1)[-1] == "torchrun":
        return "torchrun", k + 1
    if not (_PYTHON.search(v) or v in _PYTHON_VARS):
        return None
    j = k + 1
    while j < len(vals) and vals[j].startswith("-") and vals[j] != "-m":
        j += 1
    if j + 1 < len(vals) and vals[j] == "-m" and vals[j + 1] in _DIST_MODULES:
        return ("run" if vals[j + 1].endswith(".run") else "launch"), j + 2
    return None


def _launcher_options(fields: list[Field], i: int) -> tuple[dict[str, Field], int]:
    """The launcher's options from ``fields[i]`` on, and the index of the training script."""
    vals = [f.value for f in fields]
    opts: dict[str, Field] = {}
    while i < len(vals) and vals[i].startswith("-"):
        name, eq, value = vals[i].lstrip("-").partition("=")
        name = name.replace("_", "-")
        if eq:
            opts[name] = Field(value, fields[i].line, fields[i].symbolic)
        elif name in _LAUNCH_FLAGS or i + 1 >= len(vals):
            opts[name] = Field("", fields[i].line)
        else:
            opts[name] = fields[i + 1]
            i += 1
        i += 1
    return opts, i


def _script_arguments(fields: list[Field], i: int) -> dict[str, Field]:
    """The training script's ``--name [value]`` arguments from ``fields[i]`` on."""
    vals = [f.value for f in fields]
    args: dict[str, Field] = {}
    while i < len(vals):
        v = vals[i]
        if v.startswith("--"):
            name, eq, value = v[2:].partition("=")
            name = name.replace("_", "-")
            if eq:
                args[name] = Field(value, fields[i].line, fields[i].symbolic)
            elif i + 1 < len(vals) and not vals[i + 1].startswith("--"):
                args[name] = fields[i + 1]
                i += 1
            else:
                args[name] = Field("", fields[i].line)
        i += 1
    return args


def find_launcher(fields: list[Field], step: Step) -> Launcher | None:
    """The first launcher in the command ``fields`` of ``step``, or None."""
    vals = [f.value for f in fields]
    for k in range(len(vals)):
        found = _launcher_kind(vals, k)
        if found is None:
            continue
        kind, opts_at = found
        python = fields[k] if kind != "torchrun" else None
        uv_at = _uv_run_before(vals, k)
        uv_opts = vals[uv_at + 2 : k] if uv_at is not None else []
        opts, i = _launcher_options(fields, opts_at)
        script = fields[i] if i < len(vals) else None
        args = _script_arguments(fields, i + 1)
        start = uv_at if uv_at is not None else k
        return Launcher(kind, uv_at is not None, uv_opts, fields[start], python, opts, script,
                        args, step)
    return None

"""The launch rules about where the job's files live: on shared storage every node sees
(``node-local-path``), mounted into the container (``container-mounts``), and a venv built once
before submission (``uv-sync``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from analyzer.lint.config import LintConfig
from analyzer.lint.expand import Field
from analyzer.lint.launchplan import Job, Launcher, Srun
from analyzer.lint.rules.base import Finding, corrected, finding, launch_var, multi_node

# --- node-local-path ----------------------------------------------------------------------------

_VENV_VARS = ("UV_PROJECT_ENVIRONMENT", "VIRTUAL_ENV")
_LOST_LOGS = "the logs vanish with the node"
_SCRIPT_PATHS = (  # the training script's options: (name, what, consequence)
    ("save", "--save", "each node keeps its own shards and a requeue starts from random"),
    ("load", "--load", "a restart on other nodes finds no checkpoint"),
    ("tensorboard-dir", "--tensorboard-dir", _LOST_LOGS),
    ("wandb-save-dir", "--wandb-save-dir", _LOST_LOGS),
)
_BRACED = re.compile(r"\$\{(\w+)(:?[-=][^}]*)?\}")


@dataclass(frozen=True)
class _Place:
    """A path the job uses, what it is, the severity and consequence if it is node-local."""

    field: Field
    what: str
    severity: str
    consequence: str


def _node_local(cfg: LintConfig, path: str) -> str | None:
    """The node-local prefix ``path`` lies under, None when it is shared."""
    p = _BRACED.sub(r"$\1", path.strip("'\""))
    for s in cfg.shared:
        if p == s or p.startswith(s.rstrip("/") + "/"):
            return None
    for pre in cfg.node_local:
        if p == pre or p.startswith(pre.rstrip("/") + "/"):
            return pre
    return None


def _shared_root(job: Job, cfg: LintConfig) -> str:
    """The directory fixes point to: the job's shared worktree, else ``$SLURM_SUBMIT_DIR``."""
    cwd = job.cwd
    if cwd is not None and _node_local(cfg, cwd.value) is None and cwd.value.startswith(("/", "$")):
        return cwd.value
    return "$SLURM_SUBMIT_DIR"


def _job_places(job: Job, worktree_sev: str) -> list[_Place]:
    """The worktree the job cd's into, and srun's --chdir, --output and --error."""
    multi = multi_node(job)
    places: list[_Place] = []
    if job.cwd is not None:
        places.append(_Place(job.cwd, "the worktree", worktree_sev,
                             "the other nodes cannot chdir there and run from /tmp" if multi
                             else "it vanishes with the node's scratch space"))
    srun = job.main_srun
    for opt, sev, consequence in (
        ("chdir", worktree_sev, "the other nodes cannot cd there"),
        ("output", "warning", "the job's log vanishes with the node"),
        ("error", "warning", "the job's log vanishes with the node"),
    ):
        got = job.option(srun, opt)
        if got:
            places.append(_Place(Field(got[0], got[1]), f"--{opt}", sev, consequence))
    return places


_VAR_NAME = re.compile(r"\$\{?(\w+)")


def _where_set(job: Job, lz: Launcher, f: Field) -> Field:
    """``f`` at the line that writes its path: where it is used when the path is written there,
    else the assignment of the variable the line uses for it (``--log-dir "$LOGS"``)."""
    text = job.script.line_text(f.line)
    if f.value in text:
        return f
    for name in _VAR_NAME.findall(text):
        var = launch_var(job, lz, name)
        if (var is not None and var.value == f.value
                and var.value in job.script.line_text(var.line)):
            return Field(f.value, var.line, f.symbolic, f.at)
    return f


def _launcher_places(job: Job, lz: Launcher, worktree_sev: str) -> list[_Place]:
    """Checkpoints, logs, the interpreter and the venv of one launch."""
    places = [_Place(_where_set(job, lz, lz.args[key]), what, "warning", why)
              for key, what, why in _SCRIPT_PATHS if key in lz.args and lz.args[key].value]
    if "log-dir" in lz.opts and lz.opts["log-dir"].value:
        places.append(_Place(_where_set(job, lz, lz.opts["log-dir"]), "--log-dir", "warning",
                             "the worker logs vanish with the node"))
    if lz.python is not None:
        places.append(_Place(lz.python, "the interpreter", worktree_sev,
                             "the other nodes do not have it"))
    for name in _VENV_VARS:
        v = lz.env_value(name)
        if v is not None:
            places.append(_Place(v, name, "warning",
                                 "every node builds its own venv inside the job"))
    return places


_REDIRECT = re.compile(r"^(\d*|&)(>>?)(.*)$")
_TEE_OPTS = re.compile(r"^-")
_LOG_LOST = "the log vanishes with the node when the job ends"


def _output_targets(fields: list[Field]) -> list[_Place]:
    """The files one command's output goes to: ``> FILE``, ``>> FILE``, ``2> FILE``, ``&> FILE``
    (or glued, ``>FILE``) and the files of a ``tee`` command."""
    out: list[_Place] = []
    words = [f.value for f in fields]
    if words and words[0].rsplit("/", 1)[-1] == "tee":
        out += [_Place(f, "tee", "warning", _LOG_LOST) for f in fields[1:]
                if f.value and not _TEE_OPTS.match(f.value)]
    for k, f in enumerate(fields):
        m = _REDIRECT.match(f.value)
        if m is None or m.group(3).startswith("&"):
            continue
        op = m.group(1) + m.group(2)
        if m.group(3):
            target = Field(m.group(3), f.line, f.symbolic, f.at)
        elif k + 1 < len(fields):
            target = fields[k + 1]
        else:
            continue
        out.append(_Place(target, f"output redirected with {op}", "warning", _LOG_LOST))
    return out


def _redirect_places(job: Job) -> list[_Place]:
    """Where the output of the srun that starts the workers (and of what it runs) is written:
    redirects and ``tee`` in the batch shell and inside the task's ``bash -c`` body."""
    steps: list[list[Field]] = []
    for srun in job.sruns:
        if srun.launchers or srun is job.main_srun:
            steps += [srun.step.fields, *(st.fields for st in srun.inner)]
    for lz in job.launchers:
        if not lz.step.in_srun:
            steps.append(lz.step.fields)
    places: list[_Place] = []
    for fields in steps:
        places += _output_targets(fields)
    return places


_SBATCH_SYMBOLS = {  # sbatch's filename pattern symbols (man sbatch, "filename pattern")
    "USER": "%u", "LOGNAME": "%u", "SLURM_JOB_ID": "%j", "SLURM_JOBID": "%j",
    "SLURM_JOB_NAME": "%x", "SLURM_ARRAY_JOB_ID": "%A", "SLURM_ARRAY_TASK_ID": "%a",
    "SLURMD_NODENAME": "%N", "HOSTNAME": "%N", "SLURM_NODEID": "%n", "SLURM_PROCID": "%t",
    "SLURM_STEP_ID": "%s", "SLURM_STEPID": "%s",
}
_SHELL_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")
_RELATIVE_NOTE = "   # relative to the directory sbatch runs in: sbatch expands no $VAR"


def sbatch_path(path: str) -> tuple[str, bool]:
    """``path`` written the way sbatch expands it: ``$USER`` as ``%u``, ``$SLURM_JOB_ID`` as
    ``%j``, ...; a leading variable with no such symbol (``$HOME/``) is dropped, which makes the
    path relative to the submission directory (True when that happened)."""
    relative = False
    m = _SHELL_VAR.match(path)
    if m and (m.group(1) or m.group(2)) not in _SBATCH_SYMBOLS:
        path, relative = path[m.end() :].lstrip("/") or "slurm-%j.out", True

    def symbol(k: re.Match[str]) -> str:
        name = k.group(1) or k.group(2)
        return _SBATCH_SYMBOLS.get(name, f"<{name}>")

    return _SHELL_VAR.sub(symbol, path), relative


def _is_directive(job: Job, line: int) -> bool:
    return job.script.line_text(line).lstrip().startswith("#SBATCH")


def _moved(text: str, f: Field, pre: str, shared: str) -> str:
    """``text`` with the node-local path of ``f`` moved under ``shared`` (unchanged if absent)."""
    for cand in (f.value, pre, "${" + pre[1:] + "}" if pre.startswith("$") else pre):
        if cand in text:
            return text.replace(cand, shared if cand == pre else shared + f.value[len(pre) :], 1)
    return text


def _moved_line(job: Job, line: int, moves: list[tuple[Field, str]], shared: str) -> str:
    """Line ``line`` with every node-local path on it moved under ``shared`` (an ``#SBATCH``
    line gets sbatch's own filename symbols, never a ``$VAR`` it would not expand)."""
    text = job.script.line_text(line)
    root, relative = sbatch_path(shared) if _is_directive(job, line) else (shared, False)
    fixed = text
    for f, pre in moves:
        fixed = _moved(fixed, f, pre, "" if relative else root)
    if relative:
        fixed = re.sub(r"(=|\s)/+", r"\1", fixed, count=1)
    if fixed == text:
        return f"use a path under {shared}"
    return fixed.strip() + (_RELATIVE_NOTE if relative else "")


_SEVERITY_RANK = {"error": 0, "warning": 1, "note": 2}


def _line_finding(job: Job, line: int, hits: list[tuple[_Place, str]], shared: str) -> Finding:
    """One finding for every node-local path written on one line, and one fix for them all."""
    severity = min((p.severity for p, _ in hits), key=_SEVERITY_RANK.__getitem__)
    what = "; ".join(f"{p.what} {p.field.value} is on node-local storage ({pre}): "
                     f"{p.consequence}" for p, pre in hits)
    return finding(job, "node-local-path", severity, line, what,
                   _moved_line(job, line, [(p.field, pre) for p, pre in hits], shared))


def check_node_local_path(job: Job, cfg: LintConfig) -> list[Finding]:
    """Worktree, checkpoints, logs or venv on a path only one node sees; one finding per line,
    whose fix moves every such path on it (``--save`` and ``--load`` together)."""
    shared = _shared_root(job, cfg)
    worktree_sev = "error" if multi_node(job) else "warning"
    places = _job_places(job, worktree_sev) + _redirect_places(job)
    for lz in job.launchers:
        places += _launcher_places(job, lz, worktree_sev)
    by_line: dict[int, list[tuple[_Place, str]]] = {}
    for p in places:
        pre = _node_local(cfg, p.field.value)
        if pre is None or (_is_directive(job, p.field.line) and "$" in p.field.value):
            continue  # an #SBATCH path with a $VAR is sbatch-output's: sbatch never expands it
        hits = by_line.setdefault(p.field.line, [])
        if all(h.field.value != p.field.value or h.what != p.what for h, _ in hits):
            hits.append((p, pre))
    return [_line_finding(job, line, hits, shared) for line, hits in by_line.items()]


# --- sbatch-output ------------------------------------------------------------------------------


def check_sbatch_output(job: Job, cfg: LintConfig) -> list[Finding]:
    """``#SBATCH --output/--error`` with a ``$VAR``: sbatch reads the line itself and replaces
    only its ``%`` symbols, so ``$HOME/logs/%j.out`` names a directory called ``$HOME``."""
    out: list[Finding] = []
    for d in job.script.directives:
        if d.name not in ("output", "error") or "$" not in d.value:
            continue
        path, relative = sbatch_path(d.value)
        text = job.script.line_text(d.line)
        fixed = (text.replace(d.value, path, 1).strip() if d.value in text
                 else f"#SBATCH --{d.name}={path}")
        out.append(finding(
            job, "sbatch-output", "warning", d.line,
            f"#SBATCH --{d.name}={d.value}: sbatch does not expand shell variables in #SBATCH "
            "lines (only its % symbols: %j, %x, %u, %N, %A, %a, ...), so the log goes to a path "
            "with a literal $ in it, or nowhere when that directory does not exist",
            fixed + (_RELATIVE_NOTE if relative else ""),
        ))
    return out


# --- container-mounts ---------------------------------------------------------------------------

_IMAGE_OPT = re.compile(r"(--container-image[= ]\S+)")


def _under(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root + "/") or root == "/"


def _mount_needs(job: Job, srun: Srun) -> list[tuple[str, str]]:
    """(what, path) the container must see: the worktree and the venv."""
    need: list[tuple[str, str]] = []
    if job.cwd is not None:
        need.append(("the worktree", job.cwd.value))
    for lz in srun.launchers:
        for name in _VENV_VARS:
            v = lz.env_value(name)
            if v is not None and v.value.startswith(("/", "$")):
                need.append(("the venv", v.value))
    return need


def _unmounted(job: Job, srun: Srun, image: Field) -> Finding | None:
    """The finding for one containerised srun, if it misses a mount."""
    mounts = srun.opts.get("container-mounts")
    sources = [m.split(":", 1)[0] for m in mounts.value.split(",")] if mounts else []
    need = _mount_needs(job, srun)
    missing = [(w, p) for w, p in need if not any(_under(p, s) for s in sources if s)]
    line = mounts.line if mounts else image.line
    text = job.script.line_text(line)
    if missing:
        add = ",".join(f"{p}:{p}" for _, p in missing)
        fix = (text.replace(mounts.value, mounts.value + "," + add, 1).strip() if mounts
               else _IMAGE_OPT.sub(rf"\1 --container-mounts={add}", text, count=1).strip())
        return finding(
            job, "container-mounts", "error", line,
            "the container does not mount "
            + " and ".join(f"{w} {p}" for w, p in missing)
            + ": the workers cannot see the code or its .venv",
            fix,
        )
    if need or sources:
        return None
    return finding(
        job, "container-mounts", "warning", line,
        "the container mounts nothing and the script does not cd into a worktree: "
        "the workers see only the image",
        _IMAGE_OPT.sub(r'\1 --container-mounts="$PWD:$PWD" --container-workdir="$PWD"',
                       text, count=1).strip(),
    )


def check_container_mounts(job: Job, cfg: LintConfig) -> list[Finding]:
    """A container (pyxis ``--container-image``) that does not mount the worktree and its venv."""
    out: list[Finding] = []
    for srun in job.sruns:
        image = srun.opts.get("container-image")
        f = _unmounted(job, srun, image) if image is not None else None
        if f is not None:
            out.append(f)
    return out


# --- uv-sync ------------------------------------------------------------------------------------


def _uv_sync_in_srun(job: Job, srun: Srun) -> list[Finding]:
    """``uv sync`` in what srun runs on every node."""
    out: list[Finding] = []
    for st in [srun.step, *srun.inner]:
        fields = st.fields if st is not srun.step else srun.program
        vals = [f.value for f in fields]
        for i in range(len(vals) - 1):
            if vals[i].rsplit("/", 1)[-1] == "uv" and vals[i + 1] == "sync":
                out.append(finding(
                    job, "uv-sync", "warning", fields[i].line,
                    "uv sync inside srun: every node rebuilds the venv at the same time",
                    "uv sync   # once, before sbatch, in the worktree",
                ))
    return out


def _syncs_in_job(job: Job, cfg: LintConfig, lz: Launcher) -> bool:
    """True when ``uv run`` of ``lz`` syncs the venv (a no-op when ``uv sync`` ran before)."""
    if not lz.uv or "--no-sync" in lz.uv_opts:
        return False
    nosync = lz.env_value("UV_NO_SYNC")
    if nosync is not None and nosync.value not in ("", "0", "false"):
        return False
    # a venv on node-local disk is rebuilt on every node for certain: node-local-path says so
    venv = [lz.env_value(name) for name in _VENV_VARS]
    if any(v is not None and _node_local(cfg, v.value) for v in venv):
        return False
    return not job.uv_sync


def check_uv_sync(job: Job, cfg: LintConfig) -> list[Finding]:
    """``uv sync`` inside srun (a warning: every node rebuilds the venv); ``uv run`` under srun
    that syncs only with ``cfg.log_checks`` (a note for the post-mortem: a script cannot show
    whether ``uv sync`` ran before submission, the guide's prerequisite; the logs tell)."""
    out: list[Finding] = []
    synced: list[Launcher] = []  # launchers after a `uv sync` in their srun: the warning says it
    for srun in job.sruns:
        inside = _uv_sync_in_srun(job, srun)
        out += inside
        synced += srun.launchers if inside else []
    for lz in job.launchers:
        if not cfg.log_checks or lz in synced or not _syncs_in_job(job, cfg, lz):
            continue
        line = lz.first.at
        out.append(finding(
            job, "uv-sync", "note", line,
            "uv run syncs the venv on every node: quick when `uv sync` ran once before sbatch "
            "(the guide's prerequisite, which a script cannot show); without it every node "
            "resolves and installs the venv inside the job (`Creating virtual environment at: "
            ".venv` in each node's output)",
            corrected(job, line, r"uv\s+run", "uv run --no-sync", "uv run --no-sync ...")
            + "   # after `uv sync` before sbatch",
        ))
    return out

"""The launch rules about the launcher itself: one srun task per node (``tasks-per-node``),
``uv run python -m torch.distributed.run`` (``launcher``) and one worker group across all nodes
(``worker-group``)."""

from __future__ import annotations

import re

from analyzer.lint.config import LintConfig
from analyzer.lint.launchplan import Job, Launcher, Srun
from analyzer.lint.rules.base import (
    LAUNCH_FIX,
    Finding,
    as_int,
    corrected,
    finding,
    multi_node,
    on_line,
    rank_fix,
)
from analyzer.lint.script import Field

# --- tasks-per-node ----------------------------------------------------------------------------


def _too_many_tasks(job: Job) -> list[Finding]:
    """The srun that starts the launcher runs more than one task per node."""
    srun = job.main_srun
    if srun is None or not srun.launchers:
        return []
    tpn = job.option(srun, "ntasks-per-node")
    nodes = job.nodes
    if tpn and (as_int(tpn[0]) or 0) > 1:
        if _inherited(srun, "ntasks-per-node", "ntasks"):
            return _inherits_tasks(job, srun, f"--ntasks-per-node={tpn[0]}", tpn[1])
        return [finding(
            job, "tasks-per-node", "error", tpn[1],
            f"{tpn[0]} srun tasks per node: each starts its own launcher, so {tpn[0]} "
            "worker groups share every node (store port in use, duplicate node ranks)",
            corrected(job, tpn[1], r"--ntasks-per-node[= ]\S+", "--ntasks-per-node=1",
                      "#SBATCH --ntasks-per-node=1"),
        )]
    if tpn is not None:
        return []
    nt = job.option(srun, "ntasks")
    n = as_int(nt[0]) if nt else None
    if not (nt and n and n > 1 and (nodes is None or n > nodes[0])):
        return []
    if _inherited(srun, "ntasks-per-node", "ntasks"):
        return _inherits_tasks(job, srun, f"--ntasks={n}", nt[1])
    per = f"{n} tasks on {nodes[0]} node(s)" if nodes else f"{n} tasks, no --nodes"
    return [finding(
        job, "tasks-per-node", "error", nt[1],
        f"{per}: more than one launcher per node",
        corrected(job, nt[1], r"(--ntasks[= ]\S+|-n\s*\S+)", "--ntasks-per-node=1",
                  "#SBATCH --ntasks-per-node=1"),
    )]


def _inherited(srun: Srun, *names: str) -> bool:
    """True when the srun line sets none of the task options ``names`` (it takes the header's)."""
    return not any(n in srun.opts for n in names)


def _inherits_tasks(job: Job, srun: Srun, header: str, line: int) -> list[Finding]:
    """An srun with no task options of its own, under a header that asks for several tasks per
    node: the srun line runs a launcher in each of them (a disable on the header line holds)."""
    off = job.script.disabled.get(line, set())
    if "tasks-per-node" in off or "all" in off:
        return []
    at = srun.step.cmd.line
    return [finding(
        job, "tasks-per-node", "error", at,
        f"this srun has no task options, so it takes #SBATCH {header} (line {line}) and "
        "starts a launcher in every task: several worker groups share each node (store port "
        "in use, duplicate node ranks)",
        corrected(job, at, r"\bsrun\b", 'srun --ntasks="$SLURM_NNODES" --ntasks-per-node=1',
                  'srun --ntasks="$SLURM_NNODES" --ntasks-per-node=1 ...'),
    )]


def _outside_srun(job: Job, lz: Launcher) -> Finding | None:
    """A launcher the batch host runs itself, on a job that spans several nodes."""
    if lz.step.in_srun or any(lz in s.launchers for s in job.sruns) or not multi_node(job):
        return None
    return finding(
        job, "tasks-per-node", "error", lz.first.at,
        "the launcher is not started by srun: it runs on the batch host only, the other "
        "nodes of the allocation get no workers",
        "srun --ntasks-per-node=1 bash -c '" + LAUNCH_FIX + " ...'",
    )


def check_tasks_per_node(job: Job, cfg: LintConfig) -> list[Finding]:
    """More than one srun task per node, or a launcher not started by srun on a multi-node job."""
    out = _too_many_tasks(job)
    out += [f for lz in job.launchers if (f := _outside_srun(job, lz)) is not None]
    return out


# --- launcher -----------------------------------------------------------------------------------

_VENV_PY = re.compile(r"(^|/)\.?venv/bin/python|\$VIRTUAL_ENV/|\$\{VIRTUAL_ENV\}/")
_PYTHON_WORD = re.compile(r"(^|/)python[0-9.]*$")


def _direct_python(job: Job) -> Field | None:
    """The interpreter of an srun that runs a training script with no launcher at all."""
    for s in job.sruns:
        if s.launchers:
            continue
        for st in [s.step, *s.inner]:
            fields = s.program if st is s.step else st.fields
            for k, f in enumerate(fields[:-1]):
                if _PYTHON_WORD.search(f.value) and fields[k + 1].value.endswith(".py"):
                    return f
    return None


def check_launcher(job: Job, cfg: LintConfig) -> list[Finding]:
    """A worker launcher other than ``uv run python -m torch.distributed.run``."""
    out: list[Finding] = []
    direct = None if job.launchers else _direct_python(job)
    if direct is not None:
        out.append(finding(
            job, "launcher", "warning", direct.at or direct.line,
            "srun starts the training script directly, one task per GPU, with no "
            "torch.distributed.run: RANK, WORLD_SIZE and MASTER_ADDR are whatever the script "
            "sets by hand",
            "srun --ntasks-per-node=1 bash -c '" + LAUNCH_FIX + " --nnodes \"$NNODES\" "
            '--nproc-per-node "$GPUS_PER_NODE" --node-rank "$SLURM_NODEID" ... '
            "pretrain_gpt.py ...'",
        ))
    for lz in job.launchers:
        line = lz.first.at
        if lz.kind == "launch":
            msg = ("python -m torch.distributed.launch is the deprecated launcher"
                   + ("" if lz.uv else ", and it runs outside uv"))
            pat = r"[^\s'\"]*python[\w.]*[^\s'\"]*(\s+-\S+)*\s+-m\s+torch\.distributed\.launch"
        elif lz.uv:
            continue
        elif lz.kind == "torchrun":
            msg = "bare torchrun: it can start an interpreter that does not see the venv"
            pat = r"[^\s'\"]*torchrun"
        elif lz.python is not None and _VENV_PY.search(lz.python.value):
            continue
        else:
            py = lz.python.value if lz.python else "python"
            msg = f"{py} -m torch.distributed.run outside uv: the interpreter may not be the venv's"
            pat = r"[^\s'\"]*python[\w.]*[^\s'\"]*(\s+-\S+)*\s+-m\s+torch\.distributed\.run"
        text = job.script.line_text(line)
        new = re.sub(pat, LAUNCH_FIX, text, count=1, flags=re.I)
        out.append(finding(job, "launcher", "warning", line, msg,
                           new.strip() if new != text else LAUNCH_FIX + " ..."))
    return out


# --- worker-group -------------------------------------------------------------------------------

_NNODES_FIX = '--nnodes "$SLURM_NNODES"'
_TASK_VAR = re.compile(r"\$\{?SLURM_(NODEID|PROCID|LOCALID)")


def _direct_in_srun(job: Job, lz: Launcher) -> bool:
    return any(lz in s.launchers and lz.step is s.step for s in job.sruns)


def _standalone(job: Job, lz: Launcher) -> Finding | None:
    """``--standalone`` on a job that may span several nodes."""
    nodes = job.nodes
    f = lz.opts["standalone"]
    if nodes is not None and nodes[0] <= 1:
        return None
    fix = rank_fix(job, lz)
    return finding(
        job, "worker-group", "warning", f.line,
        "--standalone on a multi-node job: every node starts its own single-node "
        "world and trains its own copy of the model (the job exits 0)",
        corrected(job, f.line, r"--standalone", fix, fix),
    )


def _nnodes_missing(job: Job, lz: Launcher) -> Finding | None:
    """No ``--nnodes`` on a multi-node allocation."""
    nodes = job.nodes
    if "nnodes" in lz.opts or nodes is None or nodes[0] <= 1:
        return None
    return finding(
        job, "worker-group", "error", lz.first.at,
        f"no --nnodes on a {nodes[0]}-node job: torch.distributed.run defaults to "
        "one node, so each node forms its own world",
        LAUNCH_FIX + " " + rank_fix(job, lz) + " ...",
    )


def _nnodes_mismatch(job: Job, lz: Launcher) -> Finding | None:
    """A literal ``--nnodes N`` apart from the allocation, or 1 next to a ``--node-rank``."""
    nn = lz.opts.get("nnodes")
    if nn is None or not on_line(job, nn, "--nnodes"):
        return None
    n = as_int(nn.value.split(":")[-1])
    if n is None:
        return None
    nodes = job.nodes
    fix = corrected(job, nn.line, r"--nnodes[= ]\S+", _NNODES_FIX, _NNODES_FIX)
    if nodes is not None and n != nodes[0]:
        what = ("independent single-node jobs" if n == 1
                else "a world that never completes" if n > nodes[0]
                else "node ranks beyond --nnodes")
        return finding(job, "worker-group", "error", nn.line,
                       f"--nnodes {n} but the allocation has {nodes[0]} node(s): {what}", fix)
    if nodes is None and n == 1 and "node-rank" in lz.opts:
        return finding(job, "worker-group", "error", nn.line,
                       "--nnodes 1 with a --node-rank: every node is its own world, and a node "
                       "rank above 0 waits for ranks that never come", fix)
    return None


def _node_rank_expanded_early(job: Job, lz: Launcher) -> Finding | None:
    """``--node-rank $SLURM_NODEID`` expanded by the batch shell, once for every node."""
    nr = lz.opts.get("node-rank")
    if nr is None or not _direct_in_srun(job, lz) or not _TASK_VAR.search(nr.value):
        return None
    return finding(
        job, "worker-group", "error", nr.line,
        f"--node-rank {nr.value} is expanded once by the batch shell, before srun starts "
        "the tasks: every node gets node rank 0",
        "srun bash -c '" + LAUNCH_FIX + ' --node-rank "$SLURM_NODEID" ...\'',
    )


def _node_rank_missing(job: Job, lz: Launcher) -> Finding | None:
    """No ``--node-rank`` with the static rendezvous on several nodes."""
    o = lz.opts
    nodes = job.nodes
    nn = o.get("nnodes")
    backend = o.get("rdzv-backend")
    if "node-rank" in o or (nodes is not None and nodes[0] <= 1) or nn is None:
        return None
    if (as_int(nn.value) or 2) <= 1 or (backend is not None and backend.value != "static"):
        return None
    return finding(
        job, "worker-group", "error", lz.first.at,
        "no --node-rank with the static rendezvous: every node takes node rank 0",
        LAUNCH_FIX + ' --node-rank "$SLURM_NODEID" ...',
    )


_WORKER_GROUP_CHECKS = (_nnodes_missing, _nnodes_mismatch, _node_rank_expanded_early,
                        _node_rank_missing)


def check_worker_group(job: Job, cfg: LintConfig) -> list[Finding]:
    """``--standalone``, ``--nnodes`` apart from the allocation, node ranks that collide."""
    out: list[Finding] = []
    for lz in job.launchers:
        checks = (_standalone,) if "standalone" in lz.opts else _WORKER_GROUP_CHECKS
        out += [f for check in checks if (f := check(job, lz)) is not None]
    return out

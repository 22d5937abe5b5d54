"""The launch rules about the world the workers form: its master (``master-addr``) and its size,
derived from the allocation (``allocation``)."""

from __future__ import annotations

import re
from dataclasses import replace

from analyzer.lint.config import LintConfig
from analyzer.lint.expand import Env, Field
from analyzer.lint.launchplan import Job, Launcher
from analyzer.lint.rules.base import (
    FIRST_HOST,
    HOSTNAME,
    LAUNCH_FIX,
    LOOPBACK,
    MASTER_FIX,
    Finding,
    as_int,
    corrected,
    finding,
    is_node_list,
    launch_var,
    master_value,
    multi_node,
    on_line,
    rank_fix,
)

# --- master-addr --------------------------------------------------------------------------------

_MASTER_ADDR_VAR = re.compile(r"\$\{?MASTER_ADDR\}?")
_NAMES_MASTER_ADDR = re.compile(r"\$\{?MASTER_ADDR\b")


def _per_task(job: Job, lz: Launcher, line: int) -> bool:
    """True when ``line`` lies in the body srun runs on every node (evaluated per task)."""
    for s in job.sruns:
        if lz in s.launchers and s.step.cmd.line < line <= s.step.cmd.end_line:
            return True
    return False


_MASTER_OPT = r"--master[-_]addr(=|\s+)(\"[^\"]*\"|'[^']*'|[^\s'\"]+)"


def _master_fix(job: Job, line: int, lz: Launcher | None = None) -> str:
    """The corrected MASTER_ADDR line, or the launcher's line with a ``--master-addr`` that
    names the allocation's first host (``"$MASTER_ADDR"`` where the script exports it so)."""
    text = job.script.line_text(line)
    if "MASTER_ADDR=" in text:
        return corrected(job, line, r"MASTER_ADDR=.*", MASTER_FIX.removeprefix("export "),
                         MASTER_FIX)
    if re.search(_MASTER_OPT, text):
        value = master_value(job, lz) if lz is not None else FIRST_HOST
        return corrected(job, line, _MASTER_OPT, "--master-addr " + value, MASTER_FIX)
    return MASTER_FIX


def _missing_master_addr(job: Job, lz: Launcher) -> Finding | None:
    """No ``--master-addr`` on a job that spans several nodes."""
    if not (multi_node(job) and (job.nodes is not None or lz.opts.get("nnodes"))):
        return None
    return finding(
        job, "master-addr", "error", lz.first.at,
        "no --master-addr: every node uses 127.0.0.1 and waits for a store that "
        "only its own agent serves",
        f"{LAUNCH_FIX} {rank_fix(job, lz)} ...",
    )


def _hostname_master(job: Job, lz: Launcher, line: int, fix: str) -> Finding:
    """MASTER_ADDR from ``hostname``: wrong per task, fragile on the batch host."""
    if _per_task(job, lz, line):
        return finding(
            job, "master-addr", "error", line,
            "MASTER_ADDR from hostname inside the srun task: each node names itself "
            "the master, so the nodes never meet in one world",
            fix,
        )
    return finding(
        job, "master-addr", "warning", line,
        "MASTER_ADDR from hostname on the batch host: right only while the batch "
        "host is the allocation's first node and its hostname is the name the "
        "other nodes reach it by",
        fix,
    )


def _unset_master_addr(job: Job, lz: Launcher, line: int) -> Finding | None:
    """``$MASTER_ADDR`` that the launcher's shell does not have (a wrong value set without
    export is reported once, for its value, with a fix that exports it)."""
    var = launch_var(job, lz, "MASTER_ADDR")
    if var is not None and not var.exported and _master_addr_variable(job, lz) is not None:
        return None
    if var is not None and not var.exported:
        return finding(
            job, "master-addr", "error", var.line,
            "MASTER_ADDR is set but not exported: the srun task's shell, which expands "
            "$MASTER_ADDR, gets it empty",
            "export " + job.script.line_text(var.line).strip()
            if job.script.line_text(var.line).lstrip().startswith("MASTER_ADDR=")
            else MASTER_FIX,
        )
    return finding(job, "master-addr", "error", line,
                   "--master-addr uses $MASTER_ADDR, which the script never sets", MASTER_FIX)


def _multi_node_master(job: Job, lz: Launcher, addr: Field, fix: str) -> Finding | None:
    """A MASTER_ADDR that only one node can be right about: hostname, loopback, fixed host."""
    v, line = addr.value, addr.line
    if HOSTNAME.search(v):
        return _hostname_master(job, lz, line, fix)
    if v in LOOPBACK:
        return finding(
            job, "master-addr", "error", line,
            f"MASTER_ADDR={v} on a multi-node job: each node waits on its own loopback",
            fix,
        )
    if _MASTER_ADDR_VAR.fullmatch(v):
        return _unset_master_addr(job, lz, line)
    if not addr.symbolic and "$" not in v:
        return finding(
            job, "master-addr", "warning", line,
            f"MASTER_ADDR is the fixed host {v}: right only when that node happens to be "
            "the first of the allocation",
            fix,
        )
    return None


def _wrong_master_addr(job: Job, lz: Launcher, addr: Field) -> Finding | None:
    """A master address that is not the allocation's first host."""
    v = addr.value
    fix = _master_fix(job, addr.line, lz)
    if "scontrol show hostname" in v:
        return None
    if is_node_list(v):
        return finding(
            job, "master-addr", "error", addr.line,
            "MASTER_ADDR is the raw node list (e.g. node[001-002]), not a host name: the "
            "rendezvous rejects it on every node",
            fix,
        )
    if not multi_node(job):
        return None
    return _multi_node_master(job, lz, addr, fix)


def _master_addr_variable(job: Job, lz: Launcher) -> Finding | None:
    """MASTER_ADDR set to a wrong value, reported where it is set, whether or not the launcher
    line names it (the worker group, ``srun python`` with ``env://``, a fix, all use it)."""
    var = launch_var(job, lz, "MASTER_ADDR")
    if var is None or not var.value:
        return None
    value = Field(var.value, var.line, any(f.symbolic for f in var.fields))
    f = _wrong_master_addr(job, lz, value)
    if f is not None and not var.exported and not f.fix.startswith("export "):
        f = replace(f, fix=MASTER_FIX)  # the task's shell needs it exported too
    return f


def _uses_variable(job: Job, lz: Launcher, addr: Field) -> bool:
    """True when the launcher's address is written as ``$MASTER_ADDR`` (in any quoting) and
    the script sets it: the variable's own line carries the finding."""
    text = job.script.line_text(addr.at or addr.line)
    return bool(_NAMES_MASTER_ADDR.search(text)) and launch_var(job, lz, "MASTER_ADDR") is not None


def _launcher_master_addr(job: Job, lz: Launcher) -> Finding | None:
    """The launcher's own ``--master-addr`` / ``--rdzv-endpoint``, or its absence."""
    o = lz.opts
    addr = o.get("master-addr") or o.get("rdzv-endpoint")
    if addr is None:
        return _missing_master_addr(job, lz)
    var = launch_var(job, lz, "MASTER_ADDR")
    if _uses_variable(job, lz, addr) and var is not None and (
            var.exported or _master_addr_variable(job, lz) is not None):
        return None  # the variable's line has the finding, if any
    return _wrong_master_addr(job, lz, addr)


def check_master_addr(job: Job, cfg: LintConfig) -> list[Finding]:
    """MASTER_ADDR not taken from ``scontrol show hostnames`` (raw nodelist, hostname, unset),
    reported on the line that sets it."""
    out: list[Finding] = []
    for lz in job.launchers:
        found = [_master_addr_variable(job, lz)]
        if "standalone" not in lz.opts:
            found.append(_launcher_master_addr(job, lz))
        out += [f for f in found if f is not None]
    if not job.launchers:
        out += _master_addr_without_launcher(job)
    return out


def _master_addr_without_launcher(job: Job) -> list[Finding]:
    """``srun python train.py`` (``env://``): the workers read MASTER_ADDR themselves."""
    srun = job.main_srun
    var = srun.step.env.get("MASTER_ADDR") if srun is not None else None
    if var is None or not is_node_list(var.value):
        return []
    return [finding(
        job, "master-addr", "error", var.line,
        "MASTER_ADDR is the raw node list (e.g. node[001-002]), not a host name: the "
        "rendezvous rejects it on every node",
        _master_fix(job, var.line),
    )]


# --- allocation ---------------------------------------------------------------------------------

_NODE_VARS = ("NNODES", "NUM_NODES", "N_NODES", "NODES")
_GPU_VARS = ("GPUS_PER_NODE", "NPROC_PER_NODE", "NGPUS", "NUM_GPUS", "GPUS")
_NPROC_ON_LINE = r"(?<=--nproc-per-node[= ])\S+|(?<=--nproc_per_node[= ])\S+"
_WORLD_SIZE_NUMBER = re.compile(r"WORLD_SIZE=['\"]?\d")
_WORLD_SIZE_FIX = "WORLD_SIZE=$((NNODES * GPUS_PER_NODE))"

_Count = tuple[int, int]
"""A number from the allocation and the line that says so."""


def _nnodes_hard_coded(job: Job, lz: Launcher, nodes: _Count | None) -> Finding | None:
    """``--nnodes $NNODES`` where NNODES is a number other than the allocation's nodes."""
    nn = lz.opts.get("nnodes")
    if not nodes or nn is None or on_line(job, nn, "--nnodes"):
        return None
    n = as_int(nn.value)
    if n is None or n == nodes[0]:
        return None
    return finding(
        job, "allocation", "error", nn.line,
        f"NNODES is hard-coded to {n} but --nodes asks for {nodes[0]} "
        f"(line {nodes[1]}): the world never completes or leaves nodes out",
        corrected(job, nn.line, r"=\S+", "=$SLURM_NNODES", "export NNODES=$SLURM_NNODES"),
    )


def _nproc_mismatch(job: Job, lz: Launcher, gpn: _Count | None) -> Finding | None:
    """``--nproc-per-node`` other than the GPUs each node has."""
    npn = lz.opts.get("nproc-per-node") or lz.opts.get("nproc_per_node")
    if not gpn or npn is None:
        return None
    n = as_int(npn.value)
    if n is None or n == gpn[0]:
        return None
    what = ("more workers than GPUs: invalid device ordinal" if n > gpn[0]
            else "GPUs left idle")
    if on_line(job, npn, "--nproc-per-node"):
        fix = corrected(job, npn.line, _NPROC_ON_LINE, str(gpn[0]),
                        f"export GPUS_PER_NODE={gpn[0]}")
    else:
        fix = corrected(job, npn.line, r"=\S+", "=" + str(gpn[0]),
                        f"export GPUS_PER_NODE={gpn[0]}")
    return finding(
        job, "allocation", "error" if n > gpn[0] else "warning", npn.line,
        f"{n} workers per node but the allocation has {gpn[0]} GPUs per node "
        f"(line {gpn[1]}): {what}",
        fix,
    )


def _node_var(job: Job, env: Env, name: str, nodes: _Count | None) -> Finding | None:
    """A node-count variable set to a number other than the allocation's nodes."""
    var = env.get(name)
    n = as_int(var.value) if var else None
    if not (var and nodes and n is not None and n != nodes[0]):
        return None
    return finding(
        job, "allocation", "error", var.line,
        f"{name}={n} but --nodes asks for {nodes[0]} (line {nodes[1]})",
        corrected(job, var.line, rf"{name}=\S+", f"{name}=$SLURM_NNODES",
                  f"export {name}=$SLURM_NNODES"),
    )


def _gpu_var(job: Job, env: Env, name: str, gpn: _Count | None) -> Finding | None:
    """A GPUs-per-node variable set to a number other than the allocation's."""
    var = env.get(name)
    n = as_int(var.value) if var else None
    if not (var and gpn and n is not None and n != gpn[0]):
        return None
    return finding(
        job, "allocation", "error" if n > gpn[0] else "warning", var.line,
        f"{name}={n} but the allocation has {gpn[0]} GPUs per node (line {gpn[1]})",
        corrected(job, var.line, rf"{name}=\S+", f"{name}={gpn[0]}", f"export {name}={gpn[0]}"),
    )


def _world_size(job: Job, env: Env, nodes: _Count | None, gpn: _Count | None) -> Finding | None:
    """WORLD_SIZE written as a number other than nodes × GPUs per node."""
    ws = env.get("WORLD_SIZE")
    n = as_int(ws.value) if ws else None
    if not (ws and nodes and gpn and n is not None and n != nodes[0] * gpn[0]):
        return None
    if not _WORLD_SIZE_NUMBER.search(job.script.line_text(ws.line)):
        return None
    return finding(
        job, "allocation", "error", ws.line,
        f"WORLD_SIZE={n} but nodes × GPUs per node = {nodes[0]} × {gpn[0]} = "
        f"{nodes[0] * gpn[0]}",
        corrected(job, ws.line, r"WORLD_SIZE=\S+", _WORLD_SIZE_FIX, "export " + _WORLD_SIZE_FIX),
    )


def _allocation_candidates(job: Job) -> list[Finding | None]:
    """Every allocation finding in order: launcher options, then the script's variables."""
    nodes = job.nodes
    gpn = job.gpus_per_node()
    found: list[Finding | None] = []
    for lz in job.launchers:
        found += [_nnodes_hard_coded(job, lz, nodes), _nproc_mismatch(job, lz, gpn)]
    if not job.steps:
        return found
    env = job.steps[-1].env
    found += [_node_var(job, env, name, nodes) for name in _NODE_VARS]
    found += [_gpu_var(job, env, name, gpn) for name in _GPU_VARS]
    found.append(_world_size(job, env, nodes, gpn))
    return found


def check_allocation(job: Job, cfg: LintConfig) -> list[Finding]:
    """NNODES / GPUS_PER_NODE / WORLD_SIZE hard-coded to numbers the allocation does not have."""
    out: list[Finding] = []
    seen: set[int] = set()
    for f in _allocation_candidates(job):
        if f is not None and f.line not in seen:  # one finding per line: the first
            seen.add(f.line)
            out.append(f)
    return out

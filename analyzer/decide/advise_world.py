"""Launch advisories about the world: its size against the launch, and hosts running several
srun tasks."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from analyzer.decide.advisory import Advisory, LintedScript, tagged, where
from analyzer.model.event import Event


def megatron_world_size(rows: list[Event]) -> int | None:
    """The world size Megatron printed (``using world size: N``), if it did."""
    for r in tagged(rows, "world-size-report"):
        ws = r.role_of("world_size") or ""
        if ws.isdigit():
            return int(ws)
    return None


def world_size(ws: int | None, findings_job: Any,
               geometry: tuple[int | None, int | None]) -> Advisory | None:
    """An advisory when Megatron's world size is not what the logs or the script launched."""
    if ws is None:
        return None
    n_log, per_log = geometry
    if n_log and per_log and ws != n_log * per_log:
        return Advisory(
            "allocation",
            f"Megatron ran with world size {ws}, but the logs show {n_log} node(s) × {per_log} "
            f"workers = {n_log * per_log}: the workers did not form one world of the whole "
            "allocation",
            "one worker group: --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" with "
            "NNODES=$SLURM_NNODES",
            (f"world size {ws} (Megatron); {n_log} × {per_log} from the launcher and srun "
             "labels",),
        )
    if findings_job is None:
        return None
    return _against_script(ws, findings_job)


def _against_script(ws: int, job: Any) -> Advisory | None:
    """Megatron's world size against the workers the script starts and its allocation."""
    started = _workers_started(job)
    if started is not None and ws != started[0]:
        return Advisory(
            "worker-group",
            f"Megatron ran with world size {ws}, but the script starts {started[0]} workers "
            f"({started[1]}): the launchers did not form one worker group",
            '--nnodes "$NNODES" (= the number of srun tasks) --node-rank "$SLURM_NODEID" on '
            "every node, one srun task per node",
            (f"world size {ws} (Megatron); {started[1]} in the script",),
        )
    nodes = job.nodes
    gpn = job.gpus_per_node()
    if nodes and gpn and ws != nodes[0] * gpn[0]:
        return Advisory(
            "allocation",
            f"the job ran with world size {ws}, but the allocation is {nodes[0]} node(s) × "
            f"{gpn[0]} GPUs = {nodes[0] * gpn[0]}",
            "NNODES=$SLURM_NNODES, GPUS_PER_NODE = GPUs per node, WORLD_SIZE = NNODES × "
            "GPUS_PER_NODE",
            (f"script: line {nodes[1]} (--nodes), line {gpn[1]} (GPUs per node)",),
        )
    return None


def _shared_hosts(task_hosts: Mapping[int, str]) -> dict[str, list[int]]:
    """Hosts that ran more than one srun task."""
    by: dict[str, list[int]] = defaultdict(list)
    for task, host in sorted(task_hosts.items()):
        by[host].append(task)
    return {h: t for h, t in by.items() if len(t) > 1}


def _workers_started(job: Any) -> tuple[int, str] | None:
    """(workers, how) the script starts: srun tasks × the launcher's --nproc-per-node."""
    srun = job.main_srun
    if srun is None or not srun.launchers:
        return None
    npn = srun.launchers[0].opts.get("nproc-per-node")
    per = int(npn.value) if npn is not None and npn.value.isdigit() else None
    nt = job.option(srun, "ntasks")
    tpn = job.option(srun, "ntasks-per-node")
    nodes = job.nodes
    tasks = None
    if nt and nt[0].isdigit():
        tasks = int(nt[0])
    elif nodes and tpn and tpn[0].isdigit():
        tasks = nodes[0] * int(tpn[0])
    elif nodes:
        tasks = nodes[0]
    if per is None or tasks is None:
        return None
    return tasks * per, f"{tasks} srun task(s) × --nproc-per-node {per}"


def port_in_use(rows: list[Event], sc: LintedScript,
                task_hosts: Mapping[int, str] | None) -> Advisory | None:
    """Several srun tasks on one host, and the second launcher's store port was in use."""
    shared = _shared_hosts(task_hosts or {})
    inuse = tagged(rows, "port-in-use")
    tpn = sc.finding("tasks-per-node")
    if not (shared and inuse and (sc.text is None or tpn is not None)):
        return None
    host, tasks = next(iter(shared.items()))
    return Advisory(
        "tasks-per-node",
        f"srun tasks {', '.join(map(str, tasks))} ran on the same host {host}: several "
        "launchers per node, and the second one's store port was already in use "
        "(EADDRINUSE)",
        _one_task_per_node(tpn.fix if tpn else ""),
        tuple(sc.evidence_of(tpn) + [where(r) for r in inuse[:1]]),
        "error",
        patterns=tuple(sorted({str(r.pattern_id) for r in inuse})),
        # the port is not busy by chance: the job's own second launcher holds it
        drops=frozenset({"port-free", "free-port", "master-addr", "same-port"}),
    )


def _one_task_per_node(line: str) -> str:
    """One instruction: one srun task per node, with the script's srun line as the lint
    rewrote it (a line that opens a multi-line command shown as its start, in backticks)."""
    line = line.strip()
    if not line.startswith("srun"):
        return "#SBATCH --ntasks-per-node=1: one srun task (one launcher) per node"
    shown = line if line.count("'") % 2 == 0 and line.count('"') % 2 == 0 else f"{line} …"
    return f"run one srun task (one launcher) per node: `{shown}`"

"""Launch advisories: tie what the logs show to the launch guide's rules.

The diagnosis lints the job's batch script when it has one (read before the diagnosis:
``analyzer.read.batchscript``) and joins the findings with the events (``advise_events``,
``advise_world``, ``launchlogs``): a failed chdir and ``can't open file`` (worktree not shared),
the raw node list as rendezvous endpoint, ``uv`` building ``.venv`` inside the job, Megatron
starting from random, several rank-0 outputs (independent worlds), Megatron's
CUDA_DEVICE_MAX_CONNECTIONS warnings. Each advisory is ``{rule, message, fix, evidence}``; those
about a rule whose breach explains the verdict's category say so (``explains_verdict``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from analyzer.decide import launchlogs
from analyzer.decide.advise_events import from_events
from analyzer.decide.advise_world import megatron_world_size, port_in_use, world_size
from analyzer.decide.advisory import Advisory, LintedScript, lint_script, where
from analyzer.model.event import Event
from analyzer.read.batchscript import BatchScript

__all__ = ["VERDICT_RULES", "Advisory", "LaunchInput", "launch_advisories"]

VERDICT_RULES: dict[str, frozenset[str]] = {
    "rendezvous": frozenset({"master-addr", "worker-group", "tasks-per-node", "allocation"}),
    "collective_timeout": frozenset({"worker-group", "tasks-per-node", "allocation",
                                     "master-addr"}),
    "network": frozenset({"master-addr", "tasks-per-node"}),
    "import_error": frozenset({"launcher", "uv-sync", "node-local-path", "container-mounts"}),
    "storage": frozenset({"node-local-path", "container-mounts"}),
    "checkpoint": frozenset({"node-local-path"}),
    "cuda_device_max_connections": frozenset({"max-connections"}),
    "slurm_time_limit": frozenset({"uv-sync"}),
}
"""Which broken launch rules can explain a verdict of each category."""


@dataclass(frozen=True)
class LaunchInput:
    """What the advisories read of one job: its events, its batch script (already read) and
    the launch geometry the logs show."""

    rows: list[Event]
    script: BatchScript | None = None
    nnodes: int | None = None
    nproc_per_node: int | None = None
    task_hosts: Mapping[int, str] = field(default_factory=dict)
    """srun task id -> host."""
    gpu_name: str | None = None
    """The GPU the logs name (a hint for the lint rules about GPUs per node)."""


def _advisory(f: launchlogs.Found) -> Advisory:
    return Advisory(f.rule, f.message, f.fix, tuple(f.evidence), f.severity,
                    patterns=f.patterns, explains=f.explains, drops=f.drops)


def _from_content(out: list[Advisory], rows: list[Event], sc: LintedScript,
                  nodes: int | None) -> None:
    """The launch mistakes the logs' content shows (``launchlogs``): a worlds advisory unless
    one says it already; the others replace a script finding of their rule (they say more)."""
    rules = {a.rule for a in out}
    nn = launchlogs.nnodes_mismatch(rows, sc.job, nodes)
    found = [
        launchlogs.independent_worlds(rows) if "worker-group" not in rules and nn is None
        else None,
        nn,
        launchlogs.worker_output_missing(rows, sc.job),
        launchlogs.master_addr_per_node(rows) if "master-addr" not in rules else None,
    ]
    for f in found:
        if f is None:
            continue
        same = next((a for a in out if a.rule == f.rule), None)
        if same is not None:  # the content says more than the script's finding
            out.remove(same)
        out.append(_advisory(f))


def _add_world_size(out: list[Advisory], ws: Advisory | None) -> None:
    """The world-size advisory, merged into the worker-group one when there is one."""
    if ws is None:
        return
    i = next((i for i, a in enumerate(out) if a.rule == "worker-group"), None)
    if i is not None:
        out[i] = replace(out[i], evidence=out[i].evidence + ws.evidence)
    else:
        out.append(ws)


def _add_findings(out: list[Advisory], sc: LintedScript) -> None:
    """An advisory for each script finding (not a note) whose rule none says yet."""
    covered = {a.rule for a in out}
    for f in sc.findings:
        if f.severity == "note" or f.rule in covered:
            continue
        covered.add(f.rule)
        out.append(Advisory(f.rule, f"the batch script breaks a launch rule: {f.message}",
                            f.fix, (sc.evidence(f),), f.severity, script_only=True))


def _marked(out: list[Advisory], rows: list[Event], verdict_category: str,
            verdict_pattern: str | None) -> list[Advisory]:
    """The advisories, those that explain the verdict marked; the verdict's line is their
    evidence."""
    tied = VERDICT_RULES.get(verdict_category, frozenset())
    verdict_rows = [r for r in rows if verdict_pattern and r.pattern_id == verdict_pattern]
    marked = []
    for a in out:
        explains = (a.rule in tied or verdict_category in a.explains
                    or (verdict_pattern is not None and verdict_pattern in a.patterns))
        ev = a.evidence
        if explains and not a.patterns and verdict_rows:
            ev = (*ev, where(verdict_rows[0]))
        marked.append(replace(a, explains_verdict=explains, evidence=ev))
    return marked


def launch_advisories(
    job: LaunchInput, verdict: tuple[str, str | None]
) -> tuple[list[Advisory], str | None]:
    """Advisories for one job, given the verdict's (category, pattern id), and the script they
    used (None when there was none). Reads no file: the script was read with the logs."""
    rows = job.rows
    sc = lint_script(job.script, job.gpu_name)
    out = from_events(rows, sc)
    port = port_in_use(rows, sc, job.task_hosts)
    if port is not None:
        out.append(port)
    _from_content(out, rows, sc, job.nnodes)
    ws = world_size(megatron_world_size(rows), sc.job, (job.nnodes, job.nproc_per_node))
    _add_world_size(out, ws)
    _add_findings(out, sc)
    out = _marked(out, rows, *verdict)
    out.sort(key=lambda a: (not a.explains_verdict, a.severity != "error"))
    return out, sc.path

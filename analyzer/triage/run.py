"""Diagnose many jobs: one job's row (:func:`diagnose_job`) and the batch (:func:`run_jobs`).

The batch runs in a pool of worker processes (``analyzer.triage.pool``: failure isolation,
time and memory limits); the table's columns and rows live in ``analyzer.triage.table``. Both
are re-exported here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.triage.find import Job
from analyzer.triage.pool import (
    DEFAULT_TIMEOUT,
    MAX_START_FAILURES,
    RECYCLE_AFTER,
    JobFunc,
    default_max_memory,
    run_pool,
    usable_cpus,
)
from analyzer.triage.table import COLUMNS, empty_row, polars_schema, problem_row, to_frame

if TYPE_CHECKING:
    from analyzer.catalog.model import Catalog

__all__ = [
    "COLUMNS",
    "DEFAULT_TIMEOUT",
    "MAX_START_FAILURES",
    "RECYCLE_AFTER",
    "JobFunc",
    "default_max_memory",
    "diagnose_job",
    "empty_row",
    "polars_schema",
    "problem_row",
    "run_jobs",
    "to_frame",
    "usable_cpus",
]


def _node_label(v: Any, hosts: dict[int, str]) -> str | None:
    """The verdict's node as a host name when the logs give one for its index (and the host
    names tell the nodes apart), else as the verdict names it."""
    if v.node is None:
        return None
    node = str(v.node)
    if node.isdigit() and v.node_index is not None and len(set(hosts.values())) == len(hosts):
        return hosts.get(v.node_index, node)
    return node


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _duration(times: list[datetime]) -> float | None:
    if len(times) < 2:
        return None
    try:
        return round((max(times) - min(times)).total_seconds(), 3)
    except TypeError:  # naive and aware stamps mixed: compare the wall-clock values
        naive = [t.replace(tzinfo=None) for t in times]
        return round((max(naive) - min(naive)).total_seconds(), 3)


_CATALOG: Catalog | None = None


def _catalog() -> Catalog:
    """The pattern catalog, loaded once per worker process (loading costs more than most
    jobs take to diagnose)."""
    global _CATALOG
    if _CATALOG is None:
        from analyzer.catalog.load import load_catalog

        _CATALOG = load_catalog([])
    return _CATALOG


_GOOD_RUNS: dict[tuple[str, ...], frozenset[str]] = {}
"""Templates of the good runs (``--baseline GOOD_JOB_DIR``), computed once per worker."""


def _good_run_templates(good_runs: tuple[str, ...]) -> frozenset[str] | None:
    if not good_runs:
        return None
    if good_runs not in _GOOD_RUNS:
        from analyzer.api import baseline_templates

        _GOOD_RUNS[good_runs] = baseline_templates([Path(g) for g in good_runs], _catalog())
    return _GOOD_RUNS[good_runs]


def diagnose_job(
    path: str, job_id: str, files: tuple[str, ...] = (), good_runs: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Diagnose one job (in a worker process) and return its row; ``files``: the job's files
    in the directory ``path`` (empty: all of ``path``); ``good_runs``: good runs of the same
    job, whose error lines are never an unknown failure's cause."""
    from analyzer.api import AnalyzeOptions, run_job
    from analyzer.decide.fingerprint import FINGERPRINT_VERSION, fingerprint

    job = Job(path, job_id, files)
    inputs = [os.path.join(path, n) for n in files] or [path]
    templates = _good_run_templates(good_runs)
    run = run_job(inputs, AnalyzeOptions(catalog=_catalog(), workers=1,
                                         good_run_templates=templates))
    a, d = run.analysis, run.diagnosis
    v = d.verdict
    row = empty_row(job)
    hosts: set[str] = set()
    times: list[datetime] = []
    for r in a.rows:
        for h in (r.host, r.node):
            if isinstance(h, str):
                hosts.add(h)
        if r.time is not None:
            times.append(r.time)
    if v.node:
        hosts.add(str(v.node))
    row.update(
        status=d.status,
        category=v.category,
        pattern_id=v.pattern_id,
        rank=v.rank,
        rank_certainty=v.rank_certainty,
        node=_node_label(v, a.attributed.geometry.task_hosts),
        time=v.time.replace(tzinfo=None) if v.time is not None else None,
        cause=v.cause,
        fix=v.fix or None,
        phase=d.phase,
        world_size=_int(d.fact("world_size")),
        tp=_int(d.fact("tp")),
        pp=_int(d.fact("pp")),
        cp=_int(d.fact("cp")),
        dp=_int(d.fact("dp")),
        duration_s=_duration(times),
        last_iteration=d.fact("last_iteration"),
        confidence=round(float(v.confidence), 2) if v.confidence is not None else None,
    )
    if d.status == "failed":
        key = v.key
        row["fingerprint"] = fingerprint(
            v.category,
            v.pattern_id,
            key.get("message", v.cause) + (f" op={key['op']}" if "op" in key else ""),
            hosts,
            exc_type=key.get("exc_type"),
            frame=key.get("frame"),
        )
        row["fingerprint_version"] = FINGERPRINT_VERSION
    if v.unknown:
        row["unknown_fingerprint"] = v.unknown.get("fingerprint")
        row["unknown_template"] = v.unknown.get("template")
    problems = list(a.read.problems)
    if not a.read.scans:
        skipped = [f"{rel}: {why}" for rel, why in a.discovery.skipped[:3]]
        problems.append("no log content" + (" (" + "; ".join(skipped) + ")" if skipped else ""))
        row.update(no_log_content(job.key, skipped))
    if problems:
        row["note"] = "; ".join(problems[:3])[:1000]
    return row



def no_log_content(path: str, skipped: list[str]) -> dict[str, Any]:
    """The verdict fields of a job with no log content (every file empty, unreadable or not
    a log): status ``unknown``, no category, and advice to check the log path, never "no
    failure found" and "nothing to fix"."""
    what = "; ".join(skipped) if skipped else "no log file"
    return {
        "status": "unknown",
        "category": None,
        "pattern_id": None,
        "confidence": None,
        "cause": f"No log content to diagnose ({what}): the job's status is unknown.",
        "fix": (
            f"Check the log path: {path} should hold the job's output (slurm-<jobid>.out, "
            "torchrun --log-dir files); an empty file means the job wrote nothing there "
            "(redirected output, a job killed before it started, or a file system that lost it)."
        ),
    }


def run_jobs(
    jobs: Sequence[Job],
    workers: int | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    max_memory: int | None = None,
    func: JobFunc = diagnose_job,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """One row per job, in the order of ``jobs``.

    Workers are started with the ``spawn`` method, so a script that calls this must guard its
    entry point with ``if __name__ == "__main__":`` (as any multiprocessing program).
    ``workers=0`` diagnoses in this process (no time or memory limit; for debugging).
    ``timeout`` None or 0 disables the per-job limit (it counts from the moment a ready worker
    receives the job); ``max_memory`` (bytes) None disables the memory limit. ``func`` (a
    module-level function, picklable by reference) replaces the diagnosis, for tests.
    """
    # a worker that diagnoses loads the catalog before saying ready, so that no job's time
    # limit pays for it
    warm_up = _catalog if getattr(func, "func", func) is diagnose_job else None
    return run_pool(jobs, func, workers, timeout, max_memory, progress, warm_up)

"""Diagnose many jobs in a pool of worker processes, one job per worker at a time.

Failure isolation: an exception while diagnosing a job becomes a row with status ``error``; a
job that runs past the per-job time limit has its worker killed (and replaced) and its row says
``timeout``; a worker that dies (a crash, the kernel's OOM killer) or grows past the memory
limit gives an ``error`` row. Nothing of one job can stop the batch.

Bounded memory: at most ``workers`` jobs are in memory at once, each worker is replaced after
:data:`RECYCLE_AFTER` jobs (so caches and fragmentation cannot accumulate), and a worker whose
resident memory passes ``max_memory`` bytes is killed. The parent keeps only the small rows.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from analyzer.triage.find import Job

RECYCLE_AFTER = 200
"""Jobs a worker process diagnoses before it is replaced by a fresh one."""
DEFAULT_TIMEOUT = 600.0
"""Seconds one job may take (``--timeout``)."""
_POLL = 0.5

COLUMNS: dict[str, str] = {
    "job_id": "str",
    "path": "str",
    "status": "str",
    "category": "str",
    "pattern_id": "str",
    "rank": "int",
    "node": "str",
    "time": "datetime",
    "fingerprint": "str",
    "fingerprint_version": "int",
    "cause": "str",
    "fix": "str",
    "phase": "str",
    "world_size": "int",
    "tp": "int",
    "pp": "int",
    "cp": "int",
    "dp": "int",
    "duration_s": "float",
    "last_iteration": "int",
    "confidence": "float",
    "job_name": "str",
    "user": "str",
    "partition": "str",
    "slurm_state": "str",
    "start": "datetime",
    "end": "datetime",
    "note": "str",
    "unknown_fingerprint": "str",
    "unknown_template": "str",
}
"""The triage table's columns, in order. ``time`` is a datetime (the wall clock of the logs; in
JSON and CSV the ISO 8601 form of ``analyzer.util.timefmt``)."""


def polars_schema() -> dict[str, Any]:
    """:data:`COLUMNS` as a polars schema."""
    import polars as pl

    types = {"str": pl.Utf8, "int": pl.Int64, "float": pl.Float64, "datetime": pl.Datetime("us")}
    return {k: types[t] for k, t in COLUMNS.items()}

JobFunc = Callable[[str, str], dict[str, Any]]


def usable_cpus() -> int:
    """CPUs this process may run on (honours a SLURM allocation's affinity mask)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_max_memory(workers: int) -> int | None:
    """80% of the machine's memory shared among the workers (at least 2 GiB each)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    total = int(line.split()[1]) * 1024
                    return max(2 << 30, int(total * 0.8) // max(1, workers))
    except OSError:
        pass
    return None


def empty_row(job: Job) -> dict[str, Any]:
    """A row with only the job's identity filled in."""
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row["job_id"] = job.job_id
    row["path"] = job.path
    return row


def problem_row(job: Job, status: str, note: str) -> dict[str, Any]:
    """The row of a job that could not be diagnosed (``error`` or ``timeout``)."""
    row = empty_row(job)
    row["status"] = status
    row["note"] = note[:1000]
    return row


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


_CATALOG: Any = None


def _catalog() -> Any:
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


def diagnose_job(path: str, job_id: str, good_runs: tuple[str, ...] = ()) -> dict[str, Any]:
    """Diagnose one job (in a worker process) and return its row; ``good_runs``: good runs of
    the same job, whose error lines are never an unknown failure's cause."""
    from analyzer.api import run_job
    from analyzer.decide.fingerprint import FINGERPRINT_VERSION, fingerprint

    job = Job(path, job_id)
    run = run_job([path], _catalog(), workers=1, good_run_templates=_good_run_templates(good_runs))
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
        problems.append("nothing readable" + (" (" + "; ".join(skipped) + ")" if skipped else ""))
    if problems:
        row["note"] = "; ".join(problems[:3])[:1000]
    return row


def _worker_main(conn: Any, func: JobFunc) -> None:
    os.environ.setdefault("POLARS_MAX_THREADS", "1")
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    with contextlib.suppress(AttributeError, ValueError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    if getattr(func, "func", func) is diagnose_job:
        # load the catalog before saying ready, so that no job's time limit pays for it
        try:
            _catalog()
        except Exception as exc:
            with contextlib.suppress(Exception):
                conn.send(("ready", f"{type(exc).__name__}: {exc}"))
            return
    try:
        conn.send(("ready", None))
    except (OSError, ValueError):
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        idx, path, job_id = msg
        try:
            row = func(path, job_id)
        except BaseException as exc:
            tb = traceback.extract_tb(exc.__traceback__)
            where = f" at {tb[-1].name}:{tb[-1].lineno}" if tb else ""
            row = problem_row(Job(path, job_id), "error", f"{type(exc).__name__}: {exc}{where}")
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                with contextlib.suppress(Exception):
                    conn.send((idx, row))
                return
        try:
            conn.send((idx, row))
        except (OSError, ValueError):
            return


@dataclass
class _Worker:
    proc: Any
    conn: Any
    ready: bool = False
    job: tuple[int, Job] | None = None
    started: float = 0.0
    done: int = 0


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _kill(w: _Worker) -> None:
    with contextlib.suppress(Exception):
        w.proc.kill()
    with contextlib.suppress(Exception):
        w.proc.join(5)
    with contextlib.suppress(Exception):
        w.conn.close()


def _death_note(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = " (out of memory?)" if name == "SIGKILL" else ""
        return f"the worker diagnosing this job was killed by {name}{hint}"
    return f"the worker diagnosing this job exited unexpectedly (exit code {exitcode})"


MAX_START_FAILURES = 3
"""Workers that may fail to start before the batch gives up (every row then says why)."""


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
    total = len(jobs)
    rows: list[dict[str, Any] | None] = [None] * total
    if workers == 0:
        for i, job in enumerate(jobs):
            try:
                rows[i] = func(job.path, job.job_id)
            except Exception as exc:
                rows[i] = problem_row(job, "error", f"{type(exc).__name__}: {exc}")
            if progress:
                progress(i + 1, total)
        return [
            r if r is not None else problem_row(jobs[i], "error", "not diagnosed")
            for i, r in enumerate(rows)
        ]
    if not jobs:
        return []
    import multiprocessing as mp
    from multiprocessing.connection import wait

    ctx = mp.get_context("spawn")  # no fork: the parent may hold polars' thread pool
    n = max(1, min(workers or usable_cpus(), total))
    pending: deque[tuple[int, Job]] = deque(enumerate(jobs))
    pool: list[_Worker] = []
    finished = 0
    start_failures: list[str] = []

    def start() -> None:
        parent, child = ctx.Pipe(duplex=True)
        proc = ctx.Process(target=_worker_main, args=(child, func), daemon=True)
        proc.start()
        child.close()
        pool.append(_Worker(proc, parent))

    def record(idx: int, row: dict[str, Any]) -> None:
        nonlocal finished
        rows[idx] = row
        finished += 1
        if progress:
            progress(finished, total)

    def retire(w: _Worker, graceful: bool = False) -> None:
        if graceful:
            with contextlib.suppress(Exception):
                w.conn.send(None)
            with contextlib.suppress(Exception):
                w.proc.join(2)
        _kill(w)
        pool.remove(w)
        if len(pool) < min(n, len(pending)):
            start()

    def give_up(why: str) -> None:
        while pending:
            idx, job = pending.popleft()
            record(idx, problem_row(job, "error", why))

    try:
        for _ in range(n):
            start()
        while pending or any(w.job for w in pool):
            if len(start_failures) >= MAX_START_FAILURES:
                give_up("no worker process could start: " + start_failures[-1])
            for w in list(pool):
                if not (w.ready and w.job is None and pending):
                    continue
                if w.done >= RECYCLE_AFTER:
                    retire(w, graceful=True)
                    continue
                idx, job = pending.popleft()
                try:
                    w.conn.send((idx, job.path, job.job_id))
                except (OSError, ValueError):
                    pending.appendleft((idx, job))
                    retire(w)
                    continue
                w.job = (idx, job)
                w.started = time.monotonic()
            if not pool:
                if pending:
                    start()
                continue
            now = time.monotonic()
            wait_s = _POLL
            busy = [w for w in pool if w.job]
            if timeout and busy:
                wait_s = min(wait_s, max(0.0, min(w.started + timeout for w in busy) - now))
            handles = [w.conn for w in pool] + [w.proc.sentinel for w in pool]
            ready = set(wait(handles, timeout=wait_s))
            for w in list(pool):
                msg: Any = None
                if w.conn in ready or w.proc.sentinel in ready:
                    try:
                        if w.conn.poll():
                            msg = w.conn.recv()
                    except (EOFError, OSError):
                        msg = None
                if isinstance(msg, tuple) and msg and msg[0] == "ready":
                    if msg[1] is not None:
                        start_failures.append(msg[1])
                        retire(w)
                    else:
                        w.ready = True
                    continue
                if msg is not None and w.job is not None and msg[0] == w.job[0]:
                    record(msg[0], msg[1])
                    w.job = None
                    w.done += 1
                    continue
                if not w.proc.is_alive():
                    w.proc.join(1)
                    if w.job is not None:
                        idx, job = w.job
                        record(idx, problem_row(job, "error", _death_note(w.proc.exitcode)))
                        w.job = None
                    elif not w.ready:
                        start_failures.append(_death_note(w.proc.exitcode))
                    retire(w)
                    continue
                if w.job is None:
                    continue
                idx, job = w.job
                if timeout and time.monotonic() - w.started > timeout:
                    record(
                        idx,
                        problem_row(
                            job, "timeout", f"diagnosis took longer than the {timeout:g} s limit"
                        ),
                    )
                    w.job = None
                    retire(w)
                    continue
                if max_memory:
                    rss = _rss(w.proc.pid)
                    if rss > max_memory:
                        record(
                            idx,
                            problem_row(
                                job,
                                "error",
                                f"diagnosis used {rss / 2**30:.1f} GiB, over the "
                                f"{max_memory / 2**30:.1f} GiB per-job memory limit",
                            ),
                        )
                        w.job = None
                        retire(w)
    finally:
        for w in pool:
            with contextlib.suppress(Exception):
                if w.job is None and w.proc.is_alive():
                    w.conn.send(None)
        deadline = time.monotonic() + 2
        for w in pool:
            with contextlib.suppress(Exception):
                w.proc.join(max(0.0, deadline - time.monotonic()))
            if w.proc.is_alive():
                _kill(w)
            with contextlib.suppress(Exception):
                w.conn.close()
    return [
        r if r is not None else problem_row(jobs[i], "error", "not diagnosed")
        for i, r in enumerate(rows)
    ]


def to_frame(rows: list[dict[str, Any]]) -> Any:
    """Rows -> the triage table (a polars DataFrame with the columns of :data:`COLUMNS`),
    sorted by path."""
    import polars as pl

    schema = polars_schema()
    data = {k: [r.get(k) for r in rows] for k in schema}
    return pl.DataFrame(data, schema=schema).sort("path")

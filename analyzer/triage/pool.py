"""A pool of worker processes that runs one job per worker at a time.

Failure isolation: an exception while running a job becomes a row with status ``error``; a
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
from typing import Any

from analyzer.triage.find import Job
from analyzer.triage.table import problem_row

RECYCLE_AFTER = 200
"""Jobs a worker process diagnoses before it is replaced by a fresh one."""
DEFAULT_TIMEOUT = 600.0
"""Seconds one job may take (``--timeout``)."""
MAX_START_FAILURES = 3
"""Workers that may fail to start before the batch gives up (every row then says why)."""
_POLL = 0.5

JobFunc = Callable[[str, str, tuple[str, ...]], dict[str, Any]]
"""``func(path, job_id, files) -> row``: what a worker runs for each job (``files``: the
names of the job's files in the directory ``path``, empty for the whole of ``path``)."""
Progress = Callable[[int, int], None]
"""``progress(done, total)``: called after each job's row is in."""
Row = dict[str, Any]


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


# ------------------------------------------------------------------------------------------
# The worker process
# ------------------------------------------------------------------------------------------


def _say_ready(conn: Any, warm_up: Callable[[], Any] | None) -> bool:
    """Run ``warm_up`` (before saying ready, so that no job's time limit pays for it) and tell
    the parent; False when the worker should stop (warm-up failed, or the parent is gone)."""
    if warm_up is not None:
        try:
            warm_up()
        except Exception as exc:
            with contextlib.suppress(Exception):
                conn.send(("ready", f"{type(exc).__name__}: {exc}"))
            return False
    try:
        conn.send(("ready", None))
    except (OSError, ValueError):
        return False
    return True


def _run_one(func: JobFunc, job: Job) -> tuple[Row, bool]:
    """The job's row (an ``error`` row when ``func`` raised) and whether the worker should
    stop after sending it (KeyboardInterrupt, SystemExit)."""
    try:
        return func(job.path, job.job_id, job.files), False
    except BaseException as exc:
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" at {tb[-1].name}:{tb[-1].lineno}" if tb else ""
        row = problem_row(job, "error", f"{type(exc).__name__}: {exc}{where}")
        return row, isinstance(exc, KeyboardInterrupt | SystemExit)


def _worker_main(conn: Any, func: JobFunc, warm_up: Callable[[], Any] | None = None) -> None:
    """A worker process: say ready, then run jobs sent as ``(idx, job)`` until None."""
    os.environ.setdefault("POLARS_MAX_THREADS", "1")
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    with contextlib.suppress(AttributeError, ValueError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    if not _say_ready(conn, warm_up):
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        idx, job = msg
        row, stop = _run_one(func, job)
        if stop:
            with contextlib.suppress(Exception):
                conn.send((idx, row))
            return
        try:
            conn.send((idx, row))
        except (OSError, ValueError):
            return


# ------------------------------------------------------------------------------------------
# The parent: the pool
# ------------------------------------------------------------------------------------------


@dataclass
class _Worker:
    proc: Any
    conn: Any
    ready: bool = False
    job: tuple[int, Job] | None = None
    started: float = 0.0
    done: int = 0


def _rss(pid: int) -> int:
    """Resident memory of a process in bytes (0 when unknown)."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _kill(w: _Worker) -> None:
    """Kill a worker and close its pipe, whatever state it is in."""
    with contextlib.suppress(Exception):
        w.proc.kill()
    with contextlib.suppress(Exception):
        w.proc.join(5)
    with contextlib.suppress(Exception):
        w.conn.close()


def _death_note(exitcode: int | None) -> str:
    """Why a worker that died while running a job left no row."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = " (out of memory?)" if name == "SIGKILL" else ""
        return f"the worker diagnosing this job was killed by {name}{hint}"
    return f"the worker diagnosing this job exited unexpectedly (exit code {exitcode})"


def _fill_missing(jobs: Sequence[Job], rows: list[Row | None]) -> list[Row]:
    """The rows, with a ``not diagnosed`` error row for every job that has none."""
    return [
        r if r is not None else problem_row(jobs[i], "error", "not diagnosed")
        for i, r in enumerate(rows)
    ]


def _run_inline(jobs: Sequence[Job], func: JobFunc, progress: Progress | None) -> list[Row]:
    """Every job in this process, one after the other (``workers=0``: no limits)."""
    total = len(jobs)
    rows: list[Row | None] = [None] * total
    for i, job in enumerate(jobs):
        try:
            rows[i] = func(job.path, job.job_id, job.files)
        except Exception as exc:
            rows[i] = problem_row(job, "error", f"{type(exc).__name__}: {exc}")
        if progress:
            progress(i + 1, total)
    return _fill_missing(jobs, rows)


def _is_ready_message(msg: Any) -> bool:
    return isinstance(msg, tuple) and bool(msg) and msg[0] == "ready"


class _Pool:
    """The parent's side of a batch: hands out jobs, collects rows, enforces the limits."""

    def __init__(
        self,
        jobs: Sequence[Job],
        n: int,
        timeout: float | None,
        max_memory: int | None,
        func: JobFunc,
        warm_up: Callable[[], Any] | None,
        progress: Progress | None,
    ) -> None:
        import multiprocessing as mp

        self.ctx = mp.get_context("spawn")  # no fork: the parent may hold polars' thread pool
        self.n = n
        self.timeout = timeout
        self.max_memory = max_memory
        self.func = func
        self.warm_up = warm_up
        self.progress = progress
        self.total = len(jobs)
        self.rows: list[Row | None] = [None] * self.total
        self.pending: deque[tuple[int, Job]] = deque(enumerate(jobs))
        self.workers: list[_Worker] = []
        self.finished = 0
        self.start_failures: list[str] = []

    # -- workers and rows ----------------------------------------------------------------

    def start(self) -> None:
        """Start one more worker process."""
        parent, child = self.ctx.Pipe(duplex=True)
        args = (child, self.func, self.warm_up)
        proc = self.ctx.Process(target=_worker_main, args=args, daemon=True)
        proc.start()
        child.close()
        self.workers.append(_Worker(proc, parent))

    def record(self, idx: int, row: Row) -> None:
        """Keep job ``idx``'s row and report progress."""
        self.rows[idx] = row
        self.finished += 1
        if self.progress:
            self.progress(self.finished, self.total)

    def retire(self, w: _Worker, graceful: bool = False) -> None:
        """Stop a worker (``graceful``: let it exit by itself first) and replace it while
        jobs wait for one."""
        if graceful:
            with contextlib.suppress(Exception):
                w.conn.send(None)
            with contextlib.suppress(Exception):
                w.proc.join(2)
        _kill(w)
        self.workers.remove(w)
        if len(self.workers) < min(self.n, len(self.pending)):
            self.start()

    def give_up(self, why: str) -> None:
        """An error row saying ``why`` for every job still waiting."""
        while self.pending:
            idx, job = self.pending.popleft()
            self.record(idx, problem_row(job, "error", why))

    def abort(self, w: _Worker, row: Row) -> None:
        """End the worker's job with ``row`` and replace the worker."""
        assert w.job is not None
        self.record(w.job[0], row)
        w.job = None
        self.retire(w)

    # -- the loop ------------------------------------------------------------------------

    def run(self) -> list[Row | None]:
        """Every job's row, in the order of the jobs (None where a job got none)."""
        try:
            for _ in range(self.n):
                self.start()
            while self.pending or any(w.job for w in self.workers):
                self.step()
        finally:
            self.shut_down()
        return self.rows

    def step(self) -> None:
        """One round: hand out jobs, wait for the workers, handle what they said."""
        if len(self.start_failures) >= MAX_START_FAILURES:
            self.give_up("no worker process could start: " + self.start_failures[-1])
        self.dispatch()
        if not self.workers:
            if self.pending:
                self.start()
            return
        ready = self.wait()
        for w in list(self.workers):
            self.check(w, ready)

    def dispatch(self) -> None:
        """Give a waiting job to every idle ready worker (recycling worn-out ones)."""
        for w in list(self.workers):
            if not (w.ready and w.job is None and self.pending):
                continue
            if w.done >= RECYCLE_AFTER:
                self.retire(w, graceful=True)
                continue
            self.send(w)

    def send(self, w: _Worker) -> None:
        """Send the next waiting job to ``w`` (back to the queue if the worker is gone)."""
        idx, job = self.pending.popleft()
        try:
            w.conn.send((idx, job))
        except (OSError, ValueError):
            self.pending.appendleft((idx, job))
            self.retire(w)
            return
        w.job = (idx, job)
        w.started = time.monotonic()

    def wait(self) -> set[Any]:
        """The pipes and process sentinels that became ready, waiting at most until the
        next poll or the earliest time limit."""
        from multiprocessing.connection import wait

        now = time.monotonic()
        wait_s = _POLL
        busy = [w for w in self.workers if w.job]
        if self.timeout and busy:
            wait_s = min(wait_s, max(0.0, min(w.started + self.timeout for w in busy) - now))
        handles = [w.conn for w in self.workers] + [w.proc.sentinel for w in self.workers]
        return set(wait(handles, timeout=wait_s))

    def check(self, w: _Worker, ready: set[Any]) -> None:
        """Handle a worker's message, its death, or its job's time and memory limits."""
        msg = self.receive(w, ready)
        if _is_ready_message(msg):
            self.on_ready(w, msg[1])
        elif msg is not None and w.job is not None and msg[0] == w.job[0]:
            self.record(msg[0], msg[1])
            w.job = None
            w.done += 1
        elif not w.proc.is_alive():
            self.on_death(w)
        elif w.job is not None:
            self.enforce_limits(w)

    @staticmethod
    def receive(w: _Worker, ready: set[Any]) -> Any:
        """The worker's message, if it sent one (None otherwise)."""
        if w.conn in ready or w.proc.sentinel in ready:
            try:
                if w.conn.poll():
                    return w.conn.recv()
            except (EOFError, OSError):
                return None
        return None

    def on_ready(self, w: _Worker, failure: str | None) -> None:
        """A worker finished starting: it may take jobs, or it could not start."""
        if failure is not None:
            self.start_failures.append(failure)
            self.retire(w)
        else:
            w.ready = True

    def on_death(self, w: _Worker) -> None:
        """A worker died: its job gets an error row (or its start counts as failed)."""
        w.proc.join(1)
        if w.job is not None:
            idx, job = w.job
            self.record(idx, problem_row(job, "error", _death_note(w.proc.exitcode)))
            w.job = None
        elif not w.ready:
            self.start_failures.append(_death_note(w.proc.exitcode))
        self.retire(w)

    def enforce_limits(self, w: _Worker) -> None:
        """Kill a busy worker whose job is past the time limit or the memory limit."""
        assert w.job is not None
        job = w.job[1]
        if self.timeout and time.monotonic() - w.started > self.timeout:
            note = f"diagnosis took longer than the {self.timeout:g} s limit"
            self.abort(w, problem_row(job, "timeout", note))
            return
        if self.max_memory:
            rss = _rss(w.proc.pid)
            if rss > self.max_memory:
                note = (
                    f"diagnosis used {rss / 2**30:.1f} GiB, over the "
                    f"{self.max_memory / 2**30:.1f} GiB per-job memory limit"
                )
                self.abort(w, problem_row(job, "error", note))

    def shut_down(self) -> None:
        """Tell idle workers to exit, give all of them two seconds, then kill the rest."""
        for w in self.workers:
            with contextlib.suppress(Exception):
                if w.job is None and w.proc.is_alive():
                    w.conn.send(None)
        deadline = time.monotonic() + 2
        for w in self.workers:
            with contextlib.suppress(Exception):
                w.proc.join(max(0.0, deadline - time.monotonic()))
            if w.proc.is_alive():
                _kill(w)
            with contextlib.suppress(Exception):
                w.conn.close()


def run_pool(
    jobs: Sequence[Job],
    func: JobFunc,
    workers: int | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    max_memory: int | None = None,
    progress: Progress | None = None,
    warm_up: Callable[[], Any] | None = None,
) -> list[Row]:
    """One row per job, in the order of ``jobs``: ``func(path, job_id, files)`` in worker
    processes.

    ``workers=0`` runs in this process (no time or memory limit); ``warm_up`` (picklable by
    reference) runs in each worker before it takes jobs. See ``run.run_jobs`` for the rest.
    """
    if workers == 0:
        return _run_inline(jobs, func, progress)
    if not jobs:
        return []
    n = max(1, min(workers or usable_cpus(), len(jobs)))
    pool = _Pool(jobs, n, timeout, max_memory, func, warm_up, progress)
    return _fill_missing(jobs, pool.run())

"""Read a whole job: discover its files and scan them, on every core when it pays."""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from analyzer.catalog.model import Catalog
from analyzer.read.discover import Discovery, LogFile
from analyzer.read.file import FileScan, FileScanner

PARALLEL_MIN_BYTES = 48 << 20
"""Below this total size one process is faster than starting workers."""
CHUNK_FILES = 8
"""Files per task handed to a worker (fewer, larger messages back)."""
SHARED_CAPTURES = 1 << 15
"""Distinct capture dicts ``_Shared`` remembers at once (about 4 MB of table)."""

_worker_scanner: FileScanner | None = None


def _init_worker(catalog: Catalog) -> None:
    global _worker_scanner
    # A worker lives for one job's read (see analyzer.util.gcpause); forked ones inherit it.
    gc.disable()
    # A forked worker takes its parent's scanner for this catalog (``_read_parallel`` makes it
    # before the fork): no second compilation (about 30 ms; the worker's memory is the same).
    inherited = getattr(_LAST, "scanner", None)
    if inherited is not None and inherited.catalog is catalog:
        _worker_scanner = inherited
    else:
        _worker_scanner = FileScanner(catalog)


def _scan_in_worker(lf: LogFile) -> FileScan:
    assert _worker_scanner is not None
    return _scan_safely(_worker_scanner, lf)


def _scan_chunk_in_worker(chunk: Sequence[LogFile]) -> list[FileScan]:
    # Repeated values shared before pickling: each is sent once per chunk, and the parent
    # unpickles one object per distinct value instead of one per event (``_Shared``).
    return _Shared().scans([_scan_in_worker(lf) for lf in chunk])


def _scan_safely(scanner: FileScanner, lf: LogFile) -> FileScan:
    try:
        return scanner.scan(lf)
    except PermissionError as exc:
        return FileScan(lf, problem=f"{lf.rel}: permission denied ({exc.strerror}); skipped")
    except OSError as exc:
        return FileScan(lf, problem=f"{lf.rel}: cannot read ({exc}); skipped")
    except MemoryError:
        return FileScan(lf, problem=f"{lf.rel}: too large to scan in memory; skipped")


@dataclass
class ReadResult:
    """Every file's scan, in discovery order."""

    discovery: Discovery
    scans: list[FileScan] = field(default_factory=list)

    @property
    def readable(self) -> bool:
        """Whether any file yielded anything at all (a byte, an event, an error.json)."""
        return any(s.bytes_read or s.events or s.error_json is not None for s in self.scans)

    @property
    def problems(self) -> list[str]:
        """Everything that could not be read, one line each."""
        return self.discovery.problems + [s.problem for s in self.scans if s.problem]

    @property
    def disabled(self) -> dict[str, str]:
        """User patterns switched off while reading (a regex timeout), from every process."""
        out: dict[str, str] = {}
        for s in self.scans:
            for pid, why in s.disabled.items():
                out.setdefault(pid, why)
        return out


def default_workers() -> int:
    """Worker processes: one per core."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


_LAST = threading.local()
"""Per thread, the last scanner built, kept for the next job with the same catalog (triage
diagnoses hundreds of jobs in one process; compiling the prefilter is a third of a small
job's time). A scanner keeps caches, so threads never share one."""


def scanner_for(catalog: Catalog) -> FileScanner:
    """A scanner for ``catalog``: this thread's last one when it was built for this very
    catalog object, else a new one (which replaces it)."""
    scanner: FileScanner | None = getattr(_LAST, "scanner", None)
    if scanner is None or scanner.catalog is not catalog:
        scanner = _LAST.scanner = FileScanner(catalog)
    return scanner


def read_job(
    discovery: Discovery,
    catalog: Catalog,
    *,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReadResult:
    """Scan every discovered file; ``progress(done_bytes, total_bytes)`` is called as it goes."""
    files: Sequence[LogFile] = discovery.files
    total = sum(f.size for f in files)
    n = default_workers() if workers is None else workers
    result = ReadResult(discovery)
    done = 0
    if n > 1 and total >= PARALLEL_MIN_BYTES and len(files) > 1:
        result.scans = _read_parallel(files, catalog, n, total, progress)
    else:
        scanner = scanner_for(catalog)
        shared = _Shared()
        for lf in files:
            result.scans.extend(shared.scans([_scan_safely(scanner, lf)]))
            done += lf.size
            if progress:
                progress(done, total)
    return result


def _read_parallel(
    files: Sequence[LogFile],
    catalog: Catalog,
    n: int,
    total: int,
    progress: Callable[[int, int], None] | None,
) -> list[FileScan]:
    """Scan on ``n`` cores: ``n - 1`` worker processes take chunks of files from the front
    while this process takes them from the back (cancelling their queued tasks) until the two
    meet. This process works instead of waiting, and its own scans are never pickled.

    Files are handed out smallest first, so this process reads the largest ones (a SLURM
    output holding every rank's lines yields most of a job's events): they are never pickled
    and unpickled, and no worker grows to hold them. Scans come back in discovery order."""
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
    where = {lf.path: i for i, lf in enumerate(files)}
    files = sorted(files, key=lambda lf: lf.size)
    chunks = [files[i : i + CHUNK_FILES] for i in range(0, len(files), CHUNK_FILES)]
    results: list[list[FileScan] | None] = [None] * len(chunks)
    reported = [False] * len(chunks)
    done = 0

    def report(i: int, scans: list[FileScan]) -> None:
        nonlocal done
        results[i] = scans
        if not reported[i]:
            reported[i] = True
            done += sum(s.file.size for s in scans)
            if progress:
                progress(done, total)

    shared = _Shared()
    scanner = scanner_for(catalog)  # before the workers fork: they inherit it
    with ProcessPoolExecutor(
        max_workers=n - 1, mp_context=ctx, initializer=_init_worker, initargs=(catalog,)
    ) as pool:
        futures = [pool.submit(_scan_chunk_in_worker, c) for c in chunks]
        front = 0
        """Worker chunks before this one are reported (workers take chunks in order)."""
        for i in range(len(chunks) - 1, -1, -1):
            if not futures[i].cancel():
                break  # the workers have it, and everything before it
            report(i, shared.scans([_scan_safely(scanner, lf) for lf in chunks[i]]))
            while front < i and futures[front].done():  # credit worker chunks as they come
                report(front, shared.scans(futures[front].result()))
                front += 1
        for i, f in enumerate(futures):
            if results[i] is None:
                report(i, shared.scans(f.result()))
    out = [s for scans in results if scans is not None for s in scans]
    out.sort(key=lambda sc: where[sc.file.path])
    return out


_NO_YEARS: frozenset[int] = frozenset()
"""A scan's years when none of its stamps names one (read only: one object for all such)."""


class _Shared:
    """One object per distinct value among the events of a job's scans.

    A value the events repeat (a capture such as an exit code or a host, a timestamp, a
    pattern's title) is a new object per event when a worker made it and is unpickled chunk
    by chunk; large jobs repeat a few thousand distinct values hundreds of thousands of times,
    so each is mapped to one object, and equal capture dicts (the same names and values in
    the same order) to one dict. Only kept events are seen (the reader bounds repeats), so the
    table grows with distinct values, never with hits.

    The table of captures is bounded (``SHARED_CAPTURES``; emptied when full): where most
    captures are distinct (NCCL's per-communicator claims) its keys would cost more than the
    dicts they share. Captures that recur come back after a clearing and are shared again.
    ``docs/performance.md`` ("What holds memory") has the figures."""

    __slots__ = ("_captures", "_values")

    def __init__(self) -> None:
        self._values: dict[object, Any] = {}
        self._captures: dict[tuple[str, ...], dict[str, str]] = {}

    def scans(self, scans: list[FileScan]) -> list[FileScan]:
        """``scans``, their events' repeated values now shared."""
        values = self._values
        captures = self._captures
        one = values.setdefault
        for sc in scans:
            if not sc.years:
                sc.years = _NO_YEARS
            for e in sc.events:
                e.pattern_id = one(e.pattern_id, e.pattern_id)
                e.category = one(e.category, e.category)
                e.role = one(e.role, e.role)
                e.title = one(e.title, e.title)
                e.cause = one(e.cause, e.cause)
                e.fix = one(e.fix, e.fix)
                if e.stamp is not None:
                    e.stamp = one(e.stamp, e.stamp)
                if e.nccl_host is not None:  # NCCL's writer: the same on a file's every line
                    e.nccl_host = one(e.nccl_host, e.nccl_host)
                    e.nccl_pid = one(e.nccl_pid, e.nccl_pid)
                if e.rank is not None:
                    e.rank = one(e.rank, e.rank)
                if e.task is not None:
                    e.task = one(e.task, e.task)
                if e.prefix_host is not None:
                    e.prefix_host = one(e.prefix_host, e.prefix_host)
                if e.fields:
                    # equal captures in the same order: one dict (captures are never changed
                    # once made), keyed by its flattened items
                    key = tuple([x for kv in e.fields.items() for x in kv])
                    fields = captures.get(key)
                    if fields is None:
                        if len(captures) >= SHARED_CAPTURES:
                            captures.clear()
                        fields = {one(k, k): one(v, v) for k, v in e.fields.items()}
                        captures[key] = fields
                    e.fields = fields
        return scans

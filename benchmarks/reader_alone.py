"""Time the reader alone: ``FileScanner.scan`` over a job's files in one process, CPU time.

    python benchmarks/reader_alone.py bench-data/job-0.25g-128x8-s7-dense
    python benchmarks/reader_alone.py DIR --files 400 --reps 3
    python benchmarks/reader_alone.py DIR --files 400 --profile     # cProfile, by own time

No start-up, discovery, attribution or verdict: only what the reader does per file and per
matched line (the figures in docs/performance.md). Files are taken in path order; the first
pass is untimed (page cache, regex compilation), then the best of ``--reps`` passes is printed
with the matched lines (the sum of ``repeats``) and the events kept.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from pathlib import Path

from analyzer.catalog.load import load_catalog
from analyzer.read.discover import LogFile, discover
from analyzer.read.file import FileScanner


def scan_all(scanner: FileScanner, files: list[LogFile]) -> tuple[int, int]:
    """(matched lines, kept events) of one pass over ``files``."""
    matched = kept = 0
    for lf in files:
        evs = scanner.scan(lf).events
        kept += len(evs)
        matched += sum(e.repeats for e in evs)
    return matched, kept


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("job", type=Path)
    ap.add_argument("--files", type=int, default=0, help="the first N files only (0: all)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="one pass under cProfile")
    a = ap.parse_args()
    files = sorted(discover([a.job]).files, key=lambda f: str(f.rel))
    if a.files:
        files = files[: a.files]
    scanner = FileScanner(load_catalog())
    scan_all(scanner, files)
    if a.profile:
        prof = cProfile.Profile()
        prof.enable()
        scan_all(scanner, files)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        return
    best = float("inf")
    for _ in range(max(1, a.reps)):
        t = time.process_time()
        matched, kept = scan_all(scanner, files)
        best = min(best, time.process_time() - t)
    per = best / matched * 1e6 if matched else 0.0
    print(
        f"files={len(files)} matched={matched} events={kept} best cpu={best:.3f}s "
        f"({per:.1f} us per matched line)"
    )


if __name__ == "__main__":
    main()

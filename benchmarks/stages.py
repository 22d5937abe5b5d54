"""Time each stage of one diagnosis, in one process, as the command line runs them.

    python benchmarks/stages.py bench-data/job-0.25g-128x8-s7-ncclinfo
    python benchmarks/stages.py DIR --json       # one JSON object (what bench.py --stages reads)
    python benchmarks/stages.py DIR --discovery 3   # discovery alone, 3 times: wall and CPU

Stages: ``imports`` (the command line's and the pipeline's modules), ``catalog``,
``discovery``, ``reading`` (every file, with the command line's worker processes),
``attribution``, ``records`` (the event table), ``facts``, ``decision`` (the diagnosis with
its advisories) and ``report`` (the JSON line ``--format json`` prints). Wall seconds each;
``fixed`` is everything but ``reading`` plus the interpreter's own start (``python -c pass``,
timed here): the part of a run that does not depend on how fast the reader is.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

T0 = time.perf_counter()

STAGES = (
    "imports",
    "catalog",
    "discovery",
    "reading",
    "attribution",
    "records",
    "facts",
    "decision",
    "report",
)


def interpreter_start(runs: int = 5) -> float:
    """Median wall time of ``python -c pass`` (the interpreter's start, before any import)."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def run(job: Path) -> dict[str, float]:
    """Wall seconds of each stage of diagnosing ``job`` (keys: ``STAGES``)."""
    out: dict[str, float] = {}
    t = T0

    def lap(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        out[name], t = now - t, now

    import analyzer.cli.commands  # noqa: F401  (what the command imports before its work)
    from analyzer.api import Analysis
    from analyzer.catalog.load import load_catalog
    from analyzer.read.discover import discover
    from analyzer.read.readjob import read_job
    from analyzer.report.outputs import json_line
    from analyzer.shape.attribute import attribute
    from analyzer.shape.events import build_events
    from analyzer.shape.facts import collect_facts
    from analyzer.util.gcpause import paused_gc

    lap("imports")
    with paused_gc():  # as the command line runs a diagnosis
        cat = load_catalog()
        lap("catalog")
        disc = discover([job])
        lap("discovery")
        rr = read_job(disc, cat)
        lap("reading")
        att = attribute(rr.scans, cat)
        for sc in rr.scans:
            sc.events = []
        lap("attribution")
        rows = build_events(att)
        lap("records")
        facts = collect_facts(rows)
        lap("facts")
        d = Analysis([job], rr, att, rows, facts, cat).diagnosis
        lap("decision")
        json_line(d.as_dict())
        lap("report")
    return out


def discovery_only(job: Path, runs: int) -> dict[str, float]:
    """Wall and CPU seconds of ``discover([job])``, the least of ``runs`` in this process (the
    first pays for nothing the others do not: the modules are imported before)."""
    from analyzer.read.discover import discover

    walls, cpus = [], []
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        found = discover([job])
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return {"files": len(found.files), "wall": min(walls), "cpu": min(cpus)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("job", type=Path)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument(
        "--discovery", type=int, metavar="N", help="time discovery alone, N times (least wall, CPU)"
    )
    a = ap.parse_args(argv)
    if a.discovery:
        print(json.dumps(discovery_only(a.job, a.discovery)))
        return 0
    stages = run(a.job)
    start = interpreter_start()
    fixed = start + sum(v for k, v in stages.items() if k != "reading")
    if a.json:
        print(json.dumps({"interpreter": start, **stages, "fixed": fixed}))
        return 0
    print(f"{'interpreter':12s} {start:7.3f} s")
    for k in STAGES:
        print(f"{k:12s} {stages[k]:7.3f} s")
    print(f"{'fixed':12s} {fixed:7.3f} s  (everything but reading)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

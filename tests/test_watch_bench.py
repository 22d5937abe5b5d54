"""benchmarks/watch_bench.py runs end to end on a tiny job (no timing asserted: the script
measures, docs/performance.md reports). Slow: it watches for a few seconds of real time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_watch_bench_smoke(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/watch_bench.py"), "--out", str(tmp_path / "job"),
         "--nodes", "1", "--size-gb", "0.001", "--period", "0.5", "--write-seconds", "2",
         "--rest-seconds", "2", "--settle", "3", "--interval", "0.5"],
        capture_output=True, text=True, check=False, cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["ranks"] == 8 and got["lines_written"] == 8 * 4
    # the cut job is a running one: no failure, only the end the watcher prints on stopping
    assert got["finding_kinds"] == ["end"], got
    assert got["watch_rc"] == 0
    for phase in ("first_read", "writing", "at_rest"):
        assert got[phase]["wall_s"] > 0 and got[phase]["cpu_s"] >= 0
    # the writer appended to every rank's log, nothing else
    logs = sorted((tmp_path / "job").glob("torchrun/*/*/attempt_0/*/stdout.log"))
    assert len(logs) == 8
    assert all(p.read_text().count(" iteration    20603/  500000 |") == 1 for p in logs)

"""Issue 42: report wording, widths and small defects (items 10, 11, 12, 14, 15, 17, 18).

Every job here is a bundled sample (``sample_logs/``) or a test fixture; where a line is made up
to test a mechanism it says so.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from analyzer.api import Analysis, analyze
from analyzer.report.grid import build_grid
from tests.helpers import FORMATS, SAMPLES


@cache
def analysis(sample: Path) -> Analysis:
    return analyze([str(sample)])


# ---------------------------------------------------------------------------------------------
# Item 12: the rank grid's cell and `events --by-rank` name the same first event
# ---------------------------------------------------------------------------------------------


def _grid_vs_by_rank(a: Analysis) -> list[tuple[int, str | None, str | None]]:
    """(rank, grid category, by-rank category) for every rank where the two disagree."""
    df = a.by_rank()
    if "first_category" not in df.columns:
        return []
    by_rank = dict(df.select("rank", "first_category").iter_rows())
    culprit = a.diagnosis.verdict.rank
    out = []
    for cell in build_grid(a).cells:
        if cell.rank == culprit:  # the culprit's cell shows the verdict's category
            continue
        if cell.category != by_rank.get(cell.rank):
            out.append((cell.rank, cell.category, by_rank.get(cell.rank)))
    return out


def test_grid_cell_is_the_by_rank_first_event_where_they_disagreed() -> None:
    # collective-mismatch: every rank logs the watchdog's collective timeout and, in the same
    # second, "Some NCCL operations have failed"; the grid showed the second (nccl_error).
    a = analysis(FORMATS / "collective-mismatch")
    assert a.by_rank().filter(a.by_rank()["rank"] == 0)["first_category"][0] == (
        "collective_timeout"
    )
    assert _grid_vs_by_rank(a) == []
    assert a.diagnosis.ranks[0].category == "collective_timeout"  # JSON's `ranks` too


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_grid_and_by_rank_agree_on_every_sample(sample: Path) -> None:
    assert _grid_vs_by_rank(analysis(sample)) == []


# ---------------------------------------------------------------------------------------------
# Item 15: `triage --sacct` without sacct says so, once, on stderr
# ---------------------------------------------------------------------------------------------


def test_triage_sacct_without_sacct_says_the_columns_are_empty(tmp_path: Path) -> None:
    import json
    import os
    import shutil
    import subprocess
    import sys

    from tests.helpers import REAL

    root = tmp_path / "root"
    shutil.copytree(REAL / "exception-cascade", root / "job")
    bindir = tmp_path / "bin"  # a PATH with no sacct on it
    bindir.mkdir()
    out = tmp_path / "t.json"
    env = {**os.environ, "PATH": str(bindir), "NO_COLOR": "1"}
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "triage", str(root), "-j", "1", "--sacct",
         "-o", str(out)],
        capture_output=True, text=True, env=env, check=False,
    )
    assert r.returncode == 0, r.stderr
    said = [ln for ln in r.stderr.splitlines() if "sacct" in ln and str(tmp_path) not in ln]
    assert len(said) == 1, r.stderr
    assert "sacct is not installed" in said[0] and "empty" in said[0]
    assert json.loads(out.read_text())[0]["job_name"] is None

"""80 columns: the reports and the event tables fit the width they are given.

The command line passes the terminal's width (with or without colour; 100 when standard output
is not a terminal). The text and terminal reports wrap or cut at it; the event table, 238
columns wide, and the by-rank table switch to one block per record below it.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from analyzer.api import Analysis, analyze
from analyzer.report import render
from analyzer.report.texttable import table_text
from tests.helpers import SAMPLES

WIDTH = 80


@cache
def analysis(sample: Path) -> Analysis:
    return analyze([str(sample)])


def long_lines(text: str, width: int = WIDTH) -> list[str]:
    return [ln for ln in text.splitlines() if len(ln) > width]


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_view_of_a_sample_fits_80_columns(sample: Path) -> None:
    a = analysis(sample)
    views = {
        "text": render(a, "text", width=WIDTH),
        "terminal": render(a, "terminal", width=WIDTH),
        "terminal -v": render(a, "terminal", width=WIDTH, verbose=True),
        "events": table_text(a.events, width=WIDTH),
        "events --by-rank": table_text(a.by_rank(), by_rank=True, width=WIDTH),
    }
    for name, text in views.items():
        assert not long_lines(text), (name, long_lines(text)[:2])


def test_the_report_uses_the_width_it_is_given() -> None:
    a = analysis(SAMPLES[0])
    for fmt in ("text", "terminal"):
        wide = render(a, fmt, width=140)
        assert max(map(len, wide.splitlines())) == 140  # the verdict panel spans the line
        assert max(map(len, render(a, fmt, width=WIDTH).splitlines())) == WIDTH
    assert render(a, "text") == render(a, "text", width=100)  # files and pipes: 100


def test_a_wide_event_table_becomes_one_block_per_event() -> None:
    sample = next(s for s in SAMPLES if s.name == "cuda-oom-cascade")
    a = analysis(sample)
    wide = table_text(a.events)
    assert max(map(len, wide.splitlines())) > 200  # the table this replaces
    assert table_text(a.events, width=300) == wide  # it fits: unchanged
    narrow = table_text(a.events, width=WIDTH)
    blocks = narrow.strip().split("\n\n")
    assert len(blocks) == a.events.height  # every event, none dropped
    oom = next(b for b in blocks if "memory.cuda.oom" in b)
    head, *fields = oom.splitlines()
    assert head.startswith("rank 5 · node gpu-node-002 · local 1 · 2025-12-02 15:42:42")
    assert re.search(r"^  at +slurm-48213\.out:170$", oom, re.M)
    assert re.search(r"^  category +cuda_oom$", oom, re.M)
    assert any(f.lstrip().startswith("message") and f.endswith("…") for f in fields)


def test_a_wide_by_rank_table_becomes_one_block_per_rank() -> None:
    sample = next(s for s in SAMPLES if s.name == "cuda-oom-cascade")
    df = analysis(sample).by_rank()
    narrow = table_text(df, by_rank=True, width=WIDTH)
    blocks = narrow.strip().split("\n\n")
    assert len(blocks) == df.height
    rank5 = next(b for b in blocks if b.startswith("rank 5 "))
    assert re.search(r"^  first_category +cuda_oom$", rank5, re.M)
    counts = next(ln for ln in rank5.splitlines() if ln.lstrip().startswith("by category"))
    assert "cuda_oom 1" in counts and " 0" not in counts  # zero counts left out


def test_several_jobs_get_a_job_line_in_the_narrow_table() -> None:
    import polars as pl

    a, b = SAMPLES[0], next(s for s in SAMPLES if s.name == "cuda-oom-cascade")
    frames = [analysis(s).by_rank().select(pl.lit(str(s)).alias("job"), pl.all()) for s in (a, b)]
    df = pl.concat(frames, how="diagonal_relaxed")
    narrow = table_text(df, by_rank=True, width=WIDTH)
    assert not long_lines(narrow)
    jobs = [ln for ln in narrow.splitlines() if ln.startswith("job ")]
    assert len(jobs) == 2 and jobs[1] == f"job {b}"

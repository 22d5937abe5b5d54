"""Attribution on the real sample jobs, rank by rank.

Every real sample was launched by the harness as 2 srun tasks ("nodes") × 2 torchrun workers, so
the truth is known by construction: global rank = node × 2 + local rank. Each traceback,
SIGTERM and ChildFailedError line the tool attributes must agree with it, and with what the
line itself says (``[rankN]:``, srun's label, the block's ``rank : N (local_rank: L)``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import regex

from analyzer.api import analyze
from analyzer.model.event import Event
from tests.helpers import REAL, WILD

REAL_JOBS = sorted(p.parent for p in REAL.glob("*/expected.toml"))
NPROC = 2
_LABEL = regex.compile(r"^\s*(\d+): ")
_RANK = regex.compile(r"\[rank(\d+)\]:")
_CF_RANK = regex.compile(r"rank\s*:\s*(\d+)\s*\(local_rank:\s*(\d+)\)")


def _rows(sample: Path) -> list[Event]:
    return analyze(sample, workers=1).rows


@pytest.mark.parametrize("sample", REAL_JOBS, ids=lambda p: p.name)
def test_every_attributed_rank_agrees_with_the_launch_geometry(sample: Path) -> None:
    for r in _rows(sample):
        where = f"{r.file}:{r.line} {r.text[:80]!r}"
        if r.rank is None:
            continue
        assert 0 <= r.rank < 4, where
        if r.node_index is not None:
            assert r.node_index == r.rank // NPROC, where
        if r.local_rank is not None:
            assert r.local_rank == r.rank % NPROC, where


@pytest.mark.parametrize("sample", REAL_JOBS, ids=lambda p: p.name)
def test_tracebacks_sigterms_and_childfailed_fields_are_pinned_right(sample: Path) -> None:
    rows = _rows(sample)
    checked = 0
    for r in rows:
        where = f"{r.file}:{r.line} {r.text[:80]!r}"
        text = r.text
        m = _LABEL.match(text)
        if m and r.pattern_id != "slurm.task.exit_code":
            # srun's label is the task id = node index with one task per node
            assert r.node_index == int(m[1]), where
            checked += 1
        if r.pattern_id == "python.traceback" or r.traceback:
            m = _RANK.search(text)
            if m:
                assert r.rank == int(m[1]), where
                checked += 1
        if r.pattern_id == "torchelastic.sigterm_send" and r.node_index is not None:
            assert r.rank is None or r.rank // NPROC == r.node_index, where
            checked += 1
        if r.pattern_id == "torchelastic.childfailed.rank":
            m = _CF_RANK.search(r.message)
            assert m, where
            assert (r.rank, r.local_rank) == (int(m[1]), int(m[2])), where
            assert r.node_index == int(m[1]) // NPROC, where
            checked += 1
    attributable = [
        r
        for r in rows
        if _LABEL.match(r.text)
        or _RANK.search(r.text)
        or r.pattern_id == "torchelastic.childfailed.rank"
    ]
    assert checked >= min(1, len(attributable))


def test_exception_cascade_names_each_rank_once() -> None:
    sample = REAL / "exception-cascade"
    if not sample.is_dir():
        pytest.skip("exception-cascade not recorded")
    rows = _rows(sample)
    ranks = {r.rank for r in rows if r.role != "context" and r.rank is not None}
    assert ranks == {0, 1, 2, 3}


def test_exception_cascade_pins_every_sigterm_and_traceback() -> None:
    sample = REAL / "exception-cascade"
    if not sample.is_dir():
        pytest.skip("exception-cascade not recorded")
    kinds = (
        "torchelastic.sigterm_send",
        "python.traceback",
        "torchelastic.childfailed.rank",
        "torchelastic.exit.failed",
    )
    rows = [r for r in _rows(sample) if r.pattern_id in kinds]
    assert rows
    for r in rows:
        assert r.rank is not None and r.node_index is not None, r.text


@pytest.mark.parametrize(
    ("case", "pattern", "host"),
    [
        # pdsh's "host: " in front of DeepSpeed's multi-node lines
        ("b-deepspeed-pdsh-illegal-memory-access", "cuda.error.illegal_address", "gr064"),
        # a Ray actor prefix "(RayTrainWorker pid=N, ip=A)"
        ("b-ray-train-actor-module-not-found", "python.import.module_not_found", "10.130.7.113"),
    ],
)
def test_the_host_a_launcher_prefix_names_is_the_events_host(
    case: str, pattern: str, host: str
) -> None:
    a = analyze(WILD / case, workers=1)
    ev = next(r for r in a.rows if r.pattern_id == pattern)
    assert (ev.host, ev.node) == (host, host)
    assert a.diagnosis.verdict is not None and a.diagnosis.verdict.node == host

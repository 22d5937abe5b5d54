"""The reader's fast paths give today's answers on every bundled and wild log.

A pattern that declares ``need = "first"`` (``Pattern.need``) has its repeated lines counted
instead of kept; the whole-message matcher asks the prefilter which patterns to try. Both are
compared here with the plain path (every pattern read line by line, the whole catalog asked)
on every sample job and every wild log.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

from analyzer.catalog.model import Catalog
from analyzer.read.discover import discover
from analyzer.read.match import LineMatcher
from analyzer.read.readjob import read_job
from analyzer.read.records import RawEvent
from tests.helpers import SAMPLES, WILD, builtin_catalog, fast_share

JOBS = [*SAMPLES, *sorted(p for p in WILD.iterdir() if p.is_dir())]
JOB_PARAMS = fast_share(JOBS, 5, lambda j: j.name)
"""``JOBS`` for ``parametrize`` (ids: the job's name; every second job in the fast loop, all
under ``-m ""``); ``read_both`` reads each as shipped once per test process, and
``tests/conftest.py`` runs one job's tests in one worker."""


def _plain(catalog: Catalog) -> Catalog:
    """``catalog`` with every pattern read line by line (``need = "every"``)."""
    return Catalog(
        [dataclasses.replace(p, need="every") for p in catalog.patterns], catalog.sources
    )


def _rows(events: list[RawEvent]) -> list[tuple[object, ...]]:
    return [
        (
            e.file,
            e.line,
            e.offset,
            e.pattern_id,
            tuple(sorted(e.fields.items())),
            e.repeats,
            e.rank,
            e.task,
            e.local_rank,
            repr(e.stamp),
            e.stamp_inherited,
            e.nccl_host,
            e.nccl_pid,
            e.nccl_dev,
            e.traceback,
        )
        for e in events
    ]


def _read(job: Path, catalog: Catalog) -> list[tuple[object, ...]]:
    result = read_job(discover([job]), catalog, workers=1)
    return [row for scan in result.scans for row in _rows(scan.events)]


_BUNDLED = frozenset(JOBS)


@cache
def _shipped(job: Path) -> list[tuple[object, ...]]:
    """The events of a bundled or wild job (files no test changes) read as shipped, once per
    test process (several files compare their shortcuts with it)."""
    return _read(job, builtin_catalog())


def read_both(
    job: Path, switch_off: Callable[[], None]
) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The events of ``job`` read as shipped, then after ``switch_off()`` (a shortcut
    monkeypatched away) with another catalog object: a scanner of its own, no line cached by
    the first read."""
    catalog = builtin_catalog()
    fast = _shipped(job) if job in _BUNDLED else _read(job, catalog)
    switch_off()
    return fast, _read(job, Catalog(list(catalog.patterns), catalog.sources))


def assert_same_without(job: Path, switch_off: Callable[[], None]) -> None:
    """``job`` reads the same events after ``switch_off()`` (``read_both``)."""
    fast, slow = read_both(job, switch_off)
    assert slow == fast


def test_the_first_need_is_declared_on_nccl_claims() -> None:
    """The communicator and channel lines (hundreds per process at NCCL_DEBUG=INFO) are read
    for their first line per claim; a test that cannot see the declaration proves nothing."""
    firsts = {p.id for p in builtin_catalog().patterns if p.need == "first"}
    assert {"nccl.ctx.comm_init", "nccl.ctx.channel"} <= firsts


FIRST_NEED_GAPS = {
    # Found by issue 40's sixth batch (tests/wild/README-m.md), open: SageMaker's per-host
    # colours (an ANSI code before each host's lines) and two hosts' NCCL claims interleaved;
    # the first-need shortcut counts a channel's repeats across them and drops twelve
    # communicator claims the plain read keeps (the verdict is the same: a finished job).
    "m-mpirun-sagemaker-smddp-2node-16rank-mnist-ofi-ncclgetversion-warn-finished": (
        "first need merges two hosts' coloured NCCL claims"
    ),
}
"""Jobs whose first-need read is known to differ from the plain read (strict xfail)."""


def _first_need_params() -> list[object]:
    return [
        pytest.param(j, marks=pytest.mark.xfail(reason=FIRST_NEED_GAPS[j.name], strict=True))
        if j.name in FIRST_NEED_GAPS else j
        for j in JOBS
    ]


@pytest.mark.slow
@pytest.mark.parametrize("job", _first_need_params(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_first_need_keeps_every_bundled_and_wild_event(job: Path) -> None:
    cat = builtin_catalog()
    assert _read(job, cat) == _read(job, _plain(cat))


def test_first_need_counts_repeated_claims_once(tmp_path: Path) -> None:
    """24 communicators whose claims repeat: one event per distinct claim and writer, the
    repeats counted, the first line's place kept (format: NCCL 2.21 src/init.cc)."""
    pre = "node001:1234:1234 [0] NCCL INFO "
    lines = []
    for i in range(24):
        size = (16, 8, 2)[i % 3]
        rank = (5, 5, 1)[i % 3]
        for what in ("START", "COMPLETE"):
            lines.append(
                f"{pre}ncclCommInitRank comm 0x55{i:04x} rank {rank} nranks {size} cudaDev 0 "
                f"nvmlDev 0 busId 19000 commId 0x{i:x} - Init {what}"
            )
    (tmp_path / "rank0.log").write_text("\n".join(lines) + "\n")
    cat = builtin_catalog()
    fast = [
        e
        for s in read_job(discover([tmp_path]), cat, workers=1).scans
        for e in s.events
        if e.pattern_id == "nccl.ctx.comm_init"
    ]
    assert [(e.line, e.fields["nranks"], e.repeats) for e in fast] == [
        (1, "16", 16),
        (3, "8", 16),
        (5, "2", 16),
    ]


def test_the_lane_counts_what_the_whole_path_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repeated claim lines are counted by the builder's lane (``EventBuilder._lane_key``)
    only where the whole path would read them one known way; lines behind a launcher label,
    with ANSI colour, invalid UTF-8, a split communicator or inside an open traceback take
    the whole path. Every event equals the events read with the lane switched off."""
    pre = "node001:1234:1234 [0] NCCL INFO "
    lines = []
    for i in range(12):
        size, rank = ((16, 5), (8, 5), (2, 1))[i % 3]
        body = (
            f"ncclCommInitRank comm 0x55{i:04x} rank {rank} nranks {size} cudaDev 0 "
            f"nvmlDev 0 busId 19000 commId 0x{i:x} - Init START"
        )
        lines += [pre + body, f"0: {pre}{body}", f"\x1b[32m{pre}{body}\x1b[0m"]
        lines.append(f"{pre}Channel 00/0 : {rank}[0] -> {rank + 1}[1] via P2P/CUMEM/read")
    lines.insert(20, "Traceback (most recent call last):")
    lines.insert(21, '  File "train.py", line 3, in <module>')
    lines += [
        f"{pre}ncclCommSplit comm 0x55d0a0 rank 1 nranks 4 cudaDev 0 nvmlDev 0 busId 2a000 "
        "parent 0x55c0b0 splitCount 1 color 1 key 5 - Init COMPLETE",
    ]
    bad = (pre + "Channel 00/0 : 5[0] -> 6[1] via P2P/").encode() + b"\xff"  # invalid UTF-8
    data = "\n".join(lines).encode() + b"\n" + bad + b"\n"
    (tmp_path / "rank0.log").write_bytes(data)
    cat = builtin_catalog()
    with_lane = _read(tmp_path, cat)
    monkeypatch.setattr(LineMatcher, "lane", lambda _self, _start: None)
    assert _read(tmp_path, cat) == with_lane
    counted = {row[3]: 0 for row in with_lane}
    for row in with_lane:
        counted[row[3]] += row[5]  # type: ignore[operator]
    assert counted["nccl.ctx.comm_init"] == 36
    assert counted["nccl.ctx.channel"] == 13
    # the split communicator's line is not joined with the NCCL line after it (no "wrap")
    assert {dict(row[4]).get("nccl_host") for row in with_lane} == {"node001"}  # type: ignore[arg-type]


SHARDS = 6
"""The corpus-wide checks below run as this many tests of every ``SHARDS``-th job each, so
pytest-xdist spreads them over the cores (one test of the whole corpus took two minutes alone)."""


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(SHARDS), ids=lambda i: f"jobs-{i + 1}-of-{SHARDS}")
def test_whole_message_match_equals_the_catalog(shard: int) -> None:
    """``LineMatcher.match_text`` (the prefilter names the patterns to try) gives
    ``Catalog.match``'s answer on every needle line of the bundled and wild logs."""
    cat = builtin_catalog()
    matcher = LineMatcher(cat)
    tried = 0
    for job in JOBS[shard::SHARDS]:
        for lf in discover([job]).files:
            if lf.compressed or lf.encoding or lf.is_error_json:
                continue
            for raw in lf.path.read_bytes().decode("utf-8", "replace").splitlines():
                if not any(n in raw for n in cat.needles):
                    continue
                tried += 1
                want = cat.match(raw)
                got = matcher.match_text(raw)
                assert (None if want is None else (want.pattern.id, want.fields)) == (
                    None if got is None else (got[0].id, got[1])
                ), raw
    assert tried > 1000


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(SHARDS), ids=lambda i: f"jobs-{i + 1}-of-{SHARDS}")
def test_patterns_with_needles_equal_the_python_scan(shard: int) -> None:
    """``LineMatcher.with_needles`` (the near-miss search's patterns of a line the prefilter
    did not list) equals scanning every pattern's needles, on the bundled and wild logs."""
    from analyzer.catalog.model import match_priority

    cat = builtin_catalog()
    matcher = LineMatcher(cat)
    lines = 0
    for job in JOBS[shard::SHARDS]:
        for lf in discover([job]).files:
            if lf.compressed or lf.encoding or lf.is_error_json:
                continue
            for raw in lf.path.read_bytes().decode("utf-8", "replace").splitlines()[:400]:
                want = sorted(
                    (p for p in cat.patterns if any(n in raw for n in p.needles)),
                    key=match_priority,
                )
                assert [p.id for p in matcher.with_needles(raw)] == [p.id for p in want], raw
                lines += 1
    assert lines > 10000


@pytest.mark.slow
def test_the_non_hyperscan_path_reads_the_same_events(monkeypatch: pytest.MonkeyPatch) -> None:
    """ahocorasick_rs with the ``re`` stamp sieve (aarch64's path) reads every bundled and wild
    job as Hyperscan does."""
    pytest.importorskip("ahocorasick_rs")
    cat = builtin_catalog()
    want = {job: _read(job, cat) for job in JOBS}
    monkeypatch.setenv("MCORE_DIAGNOSE_PREFILTER", "ahocorasick")
    other = _plain(cat)  # a new catalog object: a scanner built under the variable
    assert LineMatcher(other).prefilter.engine == "ahocorasick"
    for job in JOBS:
        assert _read(job, other) == want[job], job


@pytest.mark.parametrize(
    "line",
    [
        "[2026-08-20 11:02:07,123] torch.distributed.run: [WARNING] ok",
        "W0820 11:02:07.123456 1234 site-packages/torch/distributed/run.py:792] ok",
        "١١:٠٢:٠٧ a stamp in Arabic-Indic digits",
        "node000:180000:180000 [0] NCCL INFO \x1b[0m11:02:07",
        "12:3\x1b[0m4:56",
    ],
)
def test_the_re_sieve_names_every_line_the_signature_names(line: str) -> None:
    """``STAMP_SUPERSET`` (the sieve without Hyperscan) finds a line wherever
    ``STAMP_SIGNATURE`` does, so the same lines are parsed for their timestamp."""
    import re

    from analyzer.read.prefilter import STAMP_SIGNATURE, STAMP_SUPERSET

    raw = line.encode()
    assert re.search(STAMP_SIGNATURE, raw)
    assert re.search(STAMP_SUPERSET, raw)

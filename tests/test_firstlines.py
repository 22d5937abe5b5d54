"""Claim lines keyed a block at a time (``read/firstlines.py``) read as the lane reads them.

The builder counts a ``need = "first"`` line whose key it has seen without reading it; the key
comes from one ``findall`` per pattern and block. These tests check that the key is the lane's
on lines of every kind (NCCL's own, behind a label, coloured, cut, split communicators, not
matching), that a pattern whose regex could see past its line is left to the lane, and that a
job of NCCL_DEBUG=INFO start-up lines (the benchmark's generator, NCCL 2.21 formats) and every
bundled and wild job read the same events with and without it.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
import regex

from analyzer.catalog.model import Catalog, Pattern
from analyzer.lines.prefixes import nccl_own
from analyzer.read.firstlines import FirstLines, lane_key, line_local
from analyzer.read.match import CACHE_MAX_LINE, LineMatcher
from tests.helpers import builtin_catalog
from tests.test_bench_ncclinfo import _module
from tests.test_reader_needs import JOB_PARAMS, _read, assert_same_without

PRE = "node001:1234:1240 [0] NCCL INFO "
LINES = [
    PRE + "ncclCommInitRank comm 0x55d0a0 rank 5 nranks 16 cudaDev 0 nvmlDev 0 busId 19000 "
    "commId 0x1 - Init START",
    PRE + "comm 0x55d0a0 rank 5 nranks 16 cudaDev 0 busId 19000 - Init COMPLETE",
    PRE + "ncclCommSplit comm 0x55d0a1 rank 1 nranks 4 cudaDev 0 nvmlDev 0 busId 2a000 "
    "parent 0x55c0b0 splitCount 1 color 1 key 5 - Init COMPLETE",
    PRE + "Channel 00/0 : 5[0] -> 6[1] via P2P/CUMEM/read",
    PRE + "Channel 00/0 : 4[0] -> 5[1] [receive] via NET/IB/0/GDRDMA",
    PRE + "Channel 00 : 5[1020] -> 6[1040] via SHM/direct/direct",
    "0: " + PRE + "Channel 00/0 : 5[0] -> 6[1] via P2P/CUMEM/read",  # srun's label
    "  " + PRE + "Channel 00/0 : 5[0] -> 6[1] via P2P/CUMEM/read",  # indented
    "x " + PRE + "comm 0x1 rank 2 nranks 8 cudaDev 0 busId 1 - Init COMPLETE",  # not at start
    PRE + "Channel 00/0 : 5[0] -> 6[1] via P2P/CUMEM/read\r",  # a carriage return
    PRE + "Channel 00/02 :    0   1",  # the ring list: no claim
    "node001:1234 [0] NCCL INFO Channel 00/0 : 5[0] -> 6[1] via P2P",  # no tid: no NCCL head
]


def _first_patterns(cat: Catalog) -> list[Pattern]:
    return [p for p in cat.patterns if p.need == "first"]


def _keys(cat: Catalog, lines: list[str]) -> tuple[dict[int, object], LineMatcher, bytes]:
    m = LineMatcher(cat)
    data = ("\n".join(lines) + "\n").encode()
    m.candidates(data)
    return m.first_keys(data), m, data


def test_the_claim_patterns_are_read_a_block_at_a_time() -> None:
    """A test that cannot see the batch proves nothing: both NCCL claim patterns take it."""
    firsts = _first_patterns(builtin_catalog())
    assert {p.id for p in firsts} == {"nccl.ctx.comm_init", "nccl.ctx.channel"}
    assert all(line_local(p) for p in firsts)
    assert FirstLines(LineMatcher(builtin_catalog())._lanes)


@pytest.mark.parametrize(
    "source",
    [r"a\sb", r"[^x]+", r"a$", r"^a", r"(?s)a.b", r"(?<=x)a", r"(?<!x)a", r"a\Z", r"a\x0ab",
     r"a\nb", r"a\Wb", r"a\Db", r"(?i)a", r"\p{L}", "(?P<g>a)(?P=g)"],
)
def test_a_regex_that_can_see_past_its_line_keeps_the_lane(source: str) -> None:
    p = dataclasses.replace(_first_patterns(builtin_catalog())[0], regex=regex.compile(
        source if "(?P<" in source else f"(?P<g>{source})"))
    assert not line_local(p)


def test_every_key_is_the_lanes_key() -> None:
    """A line the batch keys gets the key ``lane_key`` gives it: printable ASCII starting
    with NCCL's own prefix that the pattern matches. Every other line (a label, an indent,
    a carriage return, a split communicator, the ring list) gets a key no line of the lane
    can have, and is read by the lane itself."""
    cat = builtin_catalog()
    keys, matcher, data = _keys(cat, LINES)
    keyed = []
    for s, key in keys.items():
        e = data.find(b"\n", s)
        text = data[s:e].decode("ascii")
        p = matcher.lane(s)
        assert p is not None and p.need == "first"
        m = p.regex.search(text)
        if text.isprintable() and nccl_own(text) and m is not None:
            assert key == lane_key(p, text, m), text
            keyed.append(LINES.index(text))
        else:
            assert key[1][0] == "", text  # type: ignore[index]
    assert sorted(keyed) == [0, 1, 3, 4, 5]


def test_non_ascii_and_long_lines_are_left_to_the_lane() -> None:
    """Only the line with a non-ASCII character or over the cache's line length is left out;
    the others of its pattern in the block are still keyed."""
    cat = builtin_catalog()
    odd = PRE + "comm 0x1 rank 2 nranks 8 cudaDev 0 busId 1 é - Init COMPLETE"
    keys, _m, data = _keys(cat, [*LINES[:2], odd])
    assert data.find(odd.encode()) not in keys
    assert sorted(keys) == [0, len(LINES[0]) + 1]
    long = PRE + "Channel 00/0 : 5[0] -> 6[1] via P2P/" + "x" * CACHE_MAX_LINE
    keys, _m, data = _keys(cat, [LINES[3], long])
    assert sorted(keys) == [0]


def test_a_paste_is_left_to_the_lane() -> None:
    cat = builtin_catalog()
    m = LineMatcher(cat)
    data = ("\n".join("> " + ln for ln in LINES[:6]) + "\n").encode()
    m.read_head(data)
    m.candidates(data)
    assert m.quoted and m.first_keys(data) == {}


def _no_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LineMatcher, "first_keys", lambda _self, _data: {})


def test_a_nccl_info_job_reads_the_same_events_without_the_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four ranks' NCCL_DEBUG=INFO start-up (24 communicators each, the benchmark's
    generator) with a traceback, labelled and coloured lines mixed in: the same events."""
    info = _module("ncclinfo")
    rng = random.Random(3)
    for rank in range(4):
        lines = info.startup_lines(f"node00{rank // 2}", 4242 + rank, rank % 2, rank, 64, 8, rng)
        lines[40:40] = ["Traceback (most recent call last):", '  File "t.py", line 1']
        lines[90:90] = ["0: " + lines[91], "\x1b[32m" + lines[92] + "\x1b[0m"]
        (tmp_path / f"rank{rank}.log").write_text("\n".join(lines) + "\n")
    cat = builtin_catalog()
    keyed: list[int] = []
    first_keys = LineMatcher.first_keys

    def spy(self: LineMatcher, data: bytes) -> dict[int, object]:
        keys = first_keys(self, data)
        keyed.append(sum(1 for k in keys.values() if k[1][0]))
        return keys  # type: ignore[return-value]

    monkeypatch.setattr(LineMatcher, "first_keys", spy)
    batched = _read(tmp_path, cat)
    assert sum(keyed) > 300  # most claim lines were keyed by the batch
    counted = sum(int(row[5]) for row in batched if row[3] == "nccl.ctx.channel")  # type: ignore[call-overload]
    assert counted > 40
    _no_batch(monkeypatch)
    assert _read(tmp_path, Catalog(list(cat.patterns), cat.sources)) == batched


@pytest.mark.parametrize("job", JOB_PARAMS)
def test_every_bundled_and_wild_job_reads_the_same_events_without_the_batch(
    job: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_same_without(job, lambda: _no_batch(monkeypatch))

"""Property-based tests (hypothesis) of the line reader, the prefix stripper and the timestamp
parser: any input is handled without an exception, and what can be said about it is right."""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path

import pytest
from _robust import CATALOG
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import analyzer.read.file as scan_mod
from analyzer.lines.prefixes import split_prefixes
from analyzer.lines.timestamps import Stamp, find_stamp, parse_glog, parse_iso
from analyzer.read.discover import LogFile, sniff_binary
from analyzer.read.file import FileScanner
from analyzer.read.prefilter import StampSieve
from analyzer.read.search import Searcher, StreamClock
from analyzer.util.sanitize import MAX_LINE_CHARS, clean_line, decode

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
READER = settings(SETTINGS, max_examples=50)
"""The reader properties write a file per example: fewer examples, still every CI run."""
ROOT_LINE = b"[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered"

noise_byte = st.binary(max_size=120).map(lambda b: b.replace(b"\n", b" "))
noise_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=120
)
noise_line = st.one_of(noise_byte, noise_text.map(lambda t: t.encode("utf-8")))


def _scan(data: bytes, block: int | None = None) -> scan_mod.FileScan:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "slurm-1.out"
        p.write_bytes(data)
        lf = LogFile(path=p, rel="slurm-1.out", size=len(data))
        old = scan_mod.BLOCK_BYTES
        if block is not None:
            scan_mod.BLOCK_BYTES = block
        try:
            return FileScanner(CATALOG).scan(lf)
        finally:
            scan_mod.BLOCK_BYTES = old


def _check_blocks(data: bytes, block: int) -> None:
    """The searcher's blocks tile ``data`` in order, each numbered by the lines before it."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "slurm-1.out"
        p.write_bytes(data)
        search = Searcher(LogFile(path=p, rel="slurm-1.out", size=len(data)), block)
        at = 0
        for blk in search.blocks(StreamClock(StampSieve())):
            assert blk.offset == at
            assert blk.first_line == data.count(b"\n", 0, at) + 1
            assert data[at : at + len(blk.data)] == blk.data
            at += len(blk.data)
        assert at == len(data)
        assert search.bytes_read == len(data)


# -- the line reader -----------------------------------------------------------------------
@READER
@given(st.binary(max_size=4000), st.sampled_from([1, 7, 64, 8 << 20]))
def test_reader_never_raises_and_numbers_lines(data: bytes, block: int) -> None:
    s = _scan(data)
    assert s.problem is None
    assert s.bytes_read == len(data)
    _check_blocks(data, block)


@READER
@given(
    st.lists(noise_line, max_size=30),
    st.integers(min_value=0, max_value=30),
    st.sampled_from([b"\n", b"\r\n"]),
    st.sampled_from([None, 7, 64, 1000]),
)
def test_reader_finds_the_line_wherever_it_is(
    noise: list[bytes], k: int, eol: bytes, block: int | None
) -> None:
    assume(not any(b"Traceback" in n or b"\r" in n for n in noise))
    k = min(k, len(noise))
    lines = [*noise[:k], ROOT_LINE, *noise[k:]]
    data = eol.join(lines) + eol
    s = _scan(data, block)
    hits = [e for e in s.events if e.pattern_id == "cuda.error.illegal_address"]
    assert any(e.line == k + 1 and e.rank == 3 for e in hits), [(e.line, e.rank) for e in hits]
    _check_blocks(data, block or 8 << 20)


@READER
@given(st.binary(max_size=3000), st.sampled_from([5, 64, 333]))
def test_reader_gives_the_same_events_whatever_the_block_size(data: bytes, block: int) -> None:
    data = data + b"\n" + ROOT_LINE + b"\n" + data[:100]
    whole = [(e.pattern_id, e.line, e.offset, e.rank) for e in _scan(data).events]
    small = [(e.pattern_id, e.line, e.offset, e.rank) for e in _scan(data, block).events]
    assert whole == small


@SETTINGS
@given(st.binary(max_size=2000))
def test_decode_and_clean_line_never_raise_and_leave_no_control_characters(raw: bytes) -> None:
    text = clean_line(decode(raw.replace(b"\n", b"")))  # the reader splits lines at \n
    assert not any((ord(c) < 32 and c != "\t") or 0x7F <= ord(c) <= 0x9F for c in text), text
    assert len(text) <= MAX_LINE_CHARS + 40


@SETTINGS
@given(noise_text, st.lists(st.sampled_from(["\x1b[31m", "\x1b[0m", "\x1b[2K", "\x1b[1A"])))
def test_clean_line_removes_what_ansi_added(text: str, seqs: list[str]) -> None:
    assume("\x1b" not in text and "\x9b" not in text and "\r" not in text)
    coloured = "".join(seqs) + text + "".join(reversed(seqs))
    assert clean_line(coloured) == clean_line(text)


@SETTINGS
@given(st.binary(max_size=1024))
def test_sniff_binary_never_raises(head: bytes) -> None:
    sniff_binary(head)


# -- the prefix stripper -------------------------------------------------------------------
@SETTINGS
@given(st.text(max_size=300))
def test_split_prefixes_never_raises_and_keeps_a_suffix(line: str) -> None:
    p = split_prefixes(line)
    assert line.endswith(p.message)
    for v in (p.task, p.local_rank, p.rank, p.logger_pid):
        assert v is None or v >= 0


message = st.text(
    alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FF), min_size=1, max_size=80
).filter(lambda m: m[0].isalpha() and m[0] not in "FEWIVCDP")


@SETTINGS
@given(
    st.one_of(st.none(), st.integers(0, 9999)),
    st.one_of(st.none(), st.integers(0, 127)),
    st.one_of(st.none(), st.integers(0, 99999)),
    message,
)
def test_split_prefixes_recovers_what_launchers_wrote(
    task: int | None, local: int | None, rank: int | None, msg: str
) -> None:
    line = ""
    if task is not None:
        line += f"{task:>2}: "
    if local is not None:
        line += f"[default{local}]:"
    if rank is not None:
        line += f"[rank{rank}]: "
    line += msg
    p = split_prefixes(line)
    assert (p.task, p.local_rank, p.rank) == (task, local, rank)
    assert p.message == msg


# -- the timestamp parser ------------------------------------------------------------------
stamps = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31))


@SETTINGS
@given(stamps, st.sampled_from(["T", " ", "_"]), st.sampled_from(["", ".", ","]))
def test_iso_stamps_round_trip(t: datetime, sep: str, frac: str) -> None:
    text = t.strftime(f"%Y-%m-%d{sep}%H:%M:%S")
    if frac:
        text += frac + f"{t.microsecond:06d}"
    s = parse_iso(f"[{text}] rank 3 says hi")
    assert s is not None
    assert s.to_datetime(1999) == (t if frac else t.replace(microsecond=0))


@SETTINGS
@given(stamps, st.sampled_from("EWIF"), st.booleans())
def test_glog_stamps_round_trip(t: datetime, level: str, nine: bool) -> None:
    frac = f"{t.microsecond:06d}" + ("123" if nine else "")
    text = f"{level}{t.month}{t.day:02d} {t:%H:%M:%S}.{frac} 4242 api.py:897] hello"
    s = parse_glog(text)
    assert s is not None
    # 2028 is a leap year, so 29 February round-trips too
    want = t.replace(year=2028, microsecond=0 if nine else t.microsecond)
    assert s.to_datetime(2028) == want


@SETTINGS
@given(st.text(max_size=300))
def test_timestamp_parsers_never_raise(text: str) -> None:
    for s in (parse_iso(text), parse_glog(text), find_stamp(text)):
        if s is not None:
            assert isinstance(s, Stamp)
            s.to_datetime(2026)  # an impossible date (Feb 31) gives None, never an exception


@pytest.mark.parametrize(
    "text", ["2026-02-31 10:00:00", "2026-13-01T25:61:61", "E0231 10:00:00.123456", "E1302 1:0"]
)
def test_impossible_dates_are_none_not_errors(text: str) -> None:
    for s in (parse_iso(text), parse_glog(text)):
        assert s is None or s.to_datetime(2026) is None

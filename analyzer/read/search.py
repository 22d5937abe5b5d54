"""The searcher: a log file as blocks of whole lines, with line numbers and the stream's clock.

The first of the reader's three parts (searcher, matcher, event builder; see ``file.py``). It
knows bytes and lines, not patterns: gzip is decompressed as a stream, a line longer than
``MAX_LINE_BYTES`` is handed on in pieces, every block carries its first line number and file
offset, and :class:`StreamClock` finds the timestamp a line inherits from the lines before it,
looking back across block boundaries.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path

from analyzer.lines.prefixes import split_prefixes
from analyzer.lines.timestamps import Stamp, find_stamp
from analyzer.read.discover import LogFile
from analyzer.read.prefilter import StampSieve
from analyzer.util.sanitize import clean_line, decode

BLOCK_BYTES = 8 << 20
MAX_LINE_BYTES = 1 << 20
"""A line longer than this is cut into pieces for matching (a window around each hit)."""
GZIP_PIECE_BYTES = 1 << 20
"""At most this much decompressed at a time (pieces joined into a block)."""
LOOKBACK_BYTES = 16 << 10
LOOKBACK_LINES = 200
SIGNATURE_OVERLAP = 64
"""More than the longest stamp signature (26 bytes), so chunks overlap enough."""


class Block:
    """A block of whole lines (or a piece of a giant line) with its first line number and file
    offset. ``line_at`` turns offsets into line numbers, counting each newline once."""

    __slots__ = ("_counted_lines", "_counted_to", "data", "first_line", "offset", "prev_stamp")

    def __init__(self, data: bytes, first_line: int, offset: int, prev_stamp: Stamp | None):
        self.data = data
        self.first_line = first_line
        self.offset = offset
        self.prev_stamp = prev_stamp
        """The stream's clock at the end of the block before (what an undated line inherits
        when nothing in this block's lookback window is dated)."""
        self._counted_to = 0
        self._counted_lines = 0

    def line_at(self, pos: int) -> int:
        """The line number of the line holding ``pos``; positions must not go backwards."""
        if pos > self._counted_to:
            self._counted_lines += self.data.count(b"\n", self._counted_to, pos)
            self._counted_to = pos
        return self.first_line + self._counted_lines

    def newlines(self) -> int:
        """Newlines in the whole block."""
        return self._counted_lines + self.data.count(b"\n", self._counted_to)

    def line_end(self, start: int) -> int:
        """The offset of the newline ending the line at ``start`` (or the block's end)."""
        e = self.data.find(b"\n", start)
        return len(self.data) if e < 0 else e


def raw_blocks(lf: LogFile, block_bytes: int) -> Iterator[bytes]:
    """The file's bytes in reads of ``block_bytes``; gzip is decompressed as a stream, UTF-16
    text (``LogFile.encoding``) converted to UTF-8 as it is read."""
    if lf.encoding:
        with open(lf.path, encoding=lf.encoding, errors="replace", newline="") as text:
            while t := text.read(max(1, block_bytes // 2)):
                yield t.encode("utf-8", errors="replace")
        return
    if lf.compressed:
        yield from gzip_blocks(lf.path, block_bytes)
        return
    with open(lf.path, "rb", buffering=0) as fh:
        while b := fh.read(block_bytes):
            yield b


def gzip_blocks(path: Path, block_bytes: int) -> Iterator[bytes]:
    """A gzip file decompressed in blocks of ``block_bytes``. A file cut short or corrupt yields
    every byte that decompressed before its error is raised (``GzipFile.read(n)`` drops the
    bytes of the block it was filling when the stream ends early)."""
    pieces: list[bytes] = []
    have = 0
    error: Exception | None = None
    with gzip.open(path, "rb") as fh:
        try:
            while piece := fh.read1(min(block_bytes - have, GZIP_PIECE_BYTES)):
                pieces.append(piece)
                have += len(piece)
                if have >= block_bytes:
                    yield b"".join(pieces)
                    pieces, have = [], 0
        except (OSError, EOFError, zlib.error) as exc:
            error = exc
    if pieces:
        yield b"".join(pieces)
    if error is not None:
        raise error


class Searcher:
    """Cut a file into :class:`Block` s of whole lines; ``bytes_read`` grows as it reads."""

    def __init__(self, lf: LogFile, block_bytes: int = BLOCK_BYTES) -> None:
        self.lf = lf
        self.block_bytes = max(1, block_bytes)
        self.bytes_read = 0
        self._carry = b""
        self._last: Block | None = None
        """The block handed on last. Its newlines are counted only when a block follows it (the
        next one's first line number), so those after a file's last candidate are never counted
        (about 4 % of the CPU time on the realistic benchmark job, one block a file)."""

    def blocks(self, clock: StreamClock) -> Iterator[Block]:
        """Blocks in file order. A read error propagates after the blocks read before it;
        the caller then calls :meth:`rest` for the unterminated tail."""
        self._carry, self._last = b"", None
        for raw in raw_blocks(self.lf, self.block_bytes):
            self.bytes_read += len(raw)
            data = self._carry + raw
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                if len(data) < MAX_LINE_BYTES:
                    self._carry = data
                    continue
                cut = len(data)  # a giant line: process what we have, continue the line
            block, self._carry = data[:cut], data[cut:]
            yield self._next(block, clock)
        yield from self.rest(clock)

    def rest(self, clock: StreamClock) -> Iterator[Block]:
        """The unterminated last line, if any (also after a read error)."""
        carry, self._carry = self._carry, b""
        if carry:
            yield self._next(carry, clock)

    def _next(self, data: bytes, clock: StreamClock) -> Block:
        """The block of ``data``, numbered after the last one handed on."""
        last = self._last
        if last is None:
            line, offset = 1, 0
        else:
            line, offset = last.first_line + last.newlines(), last.offset + len(last.data)
        self._last = Block(data, line, offset, clock.last)
        return self._last


class StreamClock:
    """The timestamp of the nearest dated line before a position: the stream's clock, which an
    undated line inherits. Looks back ``LOOKBACK_LINES`` lines (at most ``LOOKBACK_BYTES``)
    within a block, else takes the clock at the end of the block before."""

    def __init__(self, stamps: StampSieve) -> None:
        self.stamps = stamps
        self.last: Stamp | None = None
        """The clock at the end of the last block finished."""
        self.years: set[int] = set()
        """Years of every stamp found (a glog stamp has none; the job's year fills it in)."""
        self._data: bytes | None = None
        self._memo: dict[int, Stamp | None] = {}
        self._asked = -1
        """The furthest position :meth:`before` was asked about in the current block ..."""
        self._found: tuple[int, Stamp] | None = None
        """... and the nearest dated line before it (its start and stamp), if any."""

    def end_block(self, blk: Block) -> None:
        """Move the clock to the end of ``blk``."""
        self.last = self.before(blk, len(blk.data))

    def stamp_of(
        self, message: str, stamp: Stamp | None, blk: Block, start: int
    ) -> tuple[Stamp | None, bool]:
        """(stamp, inherited) of the line at ``start`` whose prefixes gave ``stamp``."""
        stamp = stamp or find_stamp(message)
        if stamp is not None:
            if stamp.year:
                self.years.add(stamp.year)
            return stamp, False
        return self.before(blk, start), True

    def before(self, blk: Block, end: int) -> Stamp | None:
        """The timestamp of the nearest dated line before ``end`` in ``blk``."""
        data = blk.data
        if self.stamps.available:
            if self._data is not data:
                self._data, self._memo = data, {}
                self._asked, self._found = -1, None
            # Lines are asked about in file order: only the lines since the last question
            # are new; the answer then still holds unless the window has moved past it.
            asked = self._asked
            if 0 <= asked <= end and end - asked < LOOKBACK_BYTES:
                found = self._nearest(data, asked, end, False)
                if found is None:
                    found = self._found
                    if found is not None and not _within(data, found[0], end):
                        found = None
            else:
                lo = max(0, end - LOOKBACK_BYTES)
                found = self._nearest(data, lo, end, lo > 0)
            if end >= asked:
                self._asked, self._found = end, found
            return found[1] if found is not None else blk.prev_stamp
        lo = max(0, end - LOOKBACK_BYTES)
        lines = data[lo:end].split(b"\n")
        if lo > 0:
            lines = lines[1:]
        for raw in reversed(lines[-LOOKBACK_LINES:]):
            if not raw:
                continue
            st = line_stamp(raw)
            if st is not None:
                if st.year:
                    self.years.add(st.year)
                return st
        return blk.prev_stamp

    def _nearest(
        self, data: bytes, lo: int, end: int, skip_first: bool
    ) -> tuple[int, Stamp] | None:
        """The nearest dated line in ``data[lo:end]`` (its start and stamp), or None."""
        memo = self._memo
        for s, raw in self._sieved_lines(data[lo:end], skip_first):
            at = lo + s
            if at in memo:
                st = memo[at]
            else:
                st = memo[at] = line_stamp(raw) if raw else None
            if st is not None:
                if st.year:
                    self.years.add(st.year)
                return at, st
        return None

    def _sieved_lines(self, window: bytes, skip_first: bool) -> Iterator[tuple[int, bytes]]:
        """The lines among the last ``LOOKBACK_LINES`` pieces of ``window.split(b"\\n")`` (less
        the first piece when it may be cut) that hold a stamp signature, last first. Every line
        whose timestamp parses holds one, so these are the only lines worth parsing. The window
        is sieved from its end in growing chunks: the nearest stamp is usually a line away."""
        prev = len(window) + 1
        hi = len(window)
        size = 1024
        while hi > 0:
            lo = max(0, hi - size)
            for to in sorted(self.stamps.ends(window[lo:hi]) or (), reverse=True):
                s = window.rfind(b"\n", 0, lo + to) + 1
                if s >= prev:
                    continue
                prev = s
                if (skip_first and s == 0) or window.count(b"\n", s) >= LOOKBACK_LINES:
                    return
                e = window.find(b"\n", s)
                yield s, window[s:] if e < 0 else window[s:e]
            if lo == 0:
                return
            hi = lo + SIGNATURE_OVERLAP  # a signature that straddles the cut
            size *= 4


def _within(data: bytes, start: int, end: int) -> bool:
    """Whether the line at ``start`` is still in the look-back window of a line at ``end``
    (the window ``before`` searches: the last ``LOOKBACK_LINES`` lines, at most
    ``LOOKBACK_BYTES``, less a first line the byte limit may cut)."""
    lo = end - LOOKBACK_BYTES
    return (start > lo or lo <= 0) and data.count(b"\n", start, end) < LOOKBACK_LINES


def line_stamp(raw: bytes) -> Stamp | None:
    """The timestamp of one raw line (its prefixes, else the first 80 characters)."""
    pre = split_prefixes(clean_line(decode(raw[:512])))
    return pre.stamp or find_stamp(pre.message, limit=80)

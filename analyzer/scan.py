"""Read one log file and turn its candidate lines into raw events.

Streaming: the file is read in blocks; a byte-level prefilter finds the lines that contain a
catalog needle, and only those lines are decoded, stripped of prefixes and matched. Python
tracebacks are assembled into one event (exception type, message, innermost frame).
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import regex

from analyzer.catalog import Catalog, Pattern, PatternMatch
from analyzer.discover import LogFile
from analyzer.prefilter import Prefilter, StampSieve
from analyzer.prefixes import Prefixed, split_prefixes
from analyzer.sanitize import clean_line, decode
from analyzer.timestamps import Stamp, find_stamp

BLOCK_BYTES = 8 << 20
MAX_LINE_BYTES = 1 << 20
"""A line longer than this is cut into pieces for matching (a window around each hit)."""
LOOKBACK_BYTES = 16 << 10
LOOKBACK_LINES = 200
CACHE_LINES = 4096
"""Entries kept in each of the per-scanner line caches (cleared when full)."""
CACHE_MAX_LINE = 1024
"""Longer lines are not cached (bounds the caches to a few MB)."""
SIGNATURE_OVERLAP = 64
"""More than the longest stamp signature (26 bytes), so chunks overlap enough."""
TRACEBACK_MAX_LINES = 400

TRACEBACK_START = "Traceback (most recent call last):"
GENERIC_EXCEPTION_ID = "python.exception.uncaught"
TRACEBACK_PATTERN = Pattern(
    id="python.traceback",
    category="python_exception",
    role="root",
    title="Uncaught Python exception",
    needles=(TRACEBACK_START,),
    regex=regex.compile(regex.escape(TRACEBACK_START)),
    cause="An uncaught {exc_type} was raised: {exc_msg} (at {frame}).",
    fix="Fix the code or input that raised {exc_type}; the traceback shows where.",
    versions=("Python 3",),
    source="Python traceback, assembled by the reader",
    examples=(),
    counter_examples=(),
    origin="analyzer/scan.py",
    tags=frozenset({"uncatalogued"}),
)
"""The event of a traceback whose lines no catalog pattern claims."""
"""The catalog's catch-all for exception lines; a traceback assembled here replaces it."""
EXC_LINE = regex.compile(r"^(?P<exc_type>[A-Za-z_][\w.]*)(?::[ ]?(?P<exc_msg>.*))?$")
_FRAME = regex.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<lineno>\d+)(?:, in (?P<func>.+))?')
_NCCL_HOST = regex.compile(
    r"^(?:\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[^\]]*\] )?"
    r"(?P<host>[A-Za-z0-9][\w.-]*):(?P<pid>\d+):\d+ \[\d+\]"
)


@dataclass(slots=True)
class RawEvent:
    """One matched line (or assembled traceback), before job-level attribution."""

    file: str
    line: int
    offset: int
    text: str
    message: str
    pattern_id: str
    category: str
    role: str
    title: str
    fields: dict[str, str]
    task: int | None
    local_rank: int | None
    rank: int | None
    level: str | None
    stamp: Stamp | None
    stamp_inherited: bool
    stream: str | None
    attempt: int | None
    nccl_host: str | None = None
    nccl_pid: int | None = None
    traceback: str | None = None
    cause: str = ""
    fix: str = ""


@dataclass
class FileScan:
    """What one file yielded."""

    file: LogFile
    events: list[RawEvent] = field(default_factory=list)
    lines: int = 0
    bytes_read: int = 0
    years: set[int] = field(default_factory=set)
    problem: str | None = None
    error_json: dict[str, Any] | None = None


def _blocks(lf: LogFile) -> Iterator[bytes]:
    """Yield the file in blocks; gzip is decompressed as a stream."""
    if lf.compressed:
        with gzip.open(lf.path, "rb") as fh:
            while True:
                b = fh.read(BLOCK_BYTES)
                if not b:
                    return
                yield b
    else:
        with open(lf.path, "rb", buffering=0) as fh:
            while True:
                b = fh.read(BLOCK_BYTES)
                if not b:
                    return
                yield b


def _key(p: Prefixed) -> tuple[int | None, int | None, int | None]:
    return (p.task, p.local_rank, p.rank)


class _Block:
    """A block of whole lines with its first line number and file offset."""

    __slots__ = ("counted_lines", "counted_to", "data", "first_line", "offset", "prev_stamp")

    def __init__(self, data: bytes, first_line: int, offset: int, prev_stamp: Stamp | None):
        self.data = data
        self.first_line = first_line
        self.offset = offset
        self.prev_stamp = prev_stamp
        self.counted_to = 0
        """How far the scan has counted newlines (so they are counted once)."""
        self.counted_lines = 0

    def newlines(self) -> int:
        """Newlines in the whole block."""
        return self.counted_lines + self.data.count(b"\n", self.counted_to)


class FileScanner:
    """Scan files with one catalog and prefilter (build once, reuse for every file)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.prefilter = Prefilter(catalog.needles)
        self.stamps = StampSieve()
        self._subsets: dict[frozenset[int], Catalog] = {}
        self._line_needles: dict[int, set[int]] | None = None
        """Needle indexes found on each line of the current block (by line start)."""
        self._lines: dict[bytes, tuple[str, Prefixed]] = {}
        """Cleaned text and prefixes of recently seen candidate lines (many repeat verbatim
        across ranks: ``Fatal Python error: Aborted``, ChildFailedError fields, ...)."""
        self._matches: dict[str, PatternMatch | None] = {}
        self._stamp_data: bytes | None = None
        self._stamp_memo: dict[int, Stamp | None] = {}
        """Parsed stamps of the current block's lines (by line start), for ``_last_stamp``."""

    # -- reading ------------------------------------------------------------------------
    def scan(self, lf: LogFile) -> FileScan:
        """Scan one file; unreadable or corrupt input becomes ``FileScan.problem``."""
        out = FileScan(lf)
        if lf.is_error_json:
            self._read_error_json(lf, out)
            return out
        carry = b""
        line_no = 1
        offset = 0
        prev_stamp: Stamp | None = None
        try:
            for raw in _blocks(lf):
                out.bytes_read += len(raw)
                data = carry + raw
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    if len(data) < MAX_LINE_BYTES:
                        carry = data
                        continue
                    cut = len(data)  # a giant line: process what we have, continue the line
                block, carry = data[:cut], data[cut:]
                blk = _Block(block, line_no, offset, prev_stamp)
                prev_stamp = self._scan_block(blk, lf, out)
                line_no += blk.newlines()
                offset += len(block)
        except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
            kind = "compressed file ends early or is corrupt" if lf.compressed else "read error"
            out.problem = f"{lf.rel}: {kind} ({exc}); used what could be read"
        if carry:
            self._scan_block(_Block(carry, line_no, offset, prev_stamp), lf, out)
            line_no += carry.count(b"\n") + (0 if carry.endswith(b"\n") else 1)
        out.lines = line_no - 1
        return out

    def _read_error_json(self, lf: LogFile, out: FileScan) -> None:
        try:
            raw = (
                lf.path.read_bytes() if not lf.compressed else gzip.decompress(lf.path.read_bytes())
            )
            out.bytes_read = len(raw)
            out.error_json = json.loads(raw.decode("utf-8", errors="replace"))
            from analyzer.errorjson import error_json_event

            ev = error_json_event(lf, out.error_json or {}, self.catalog)
            if ev is not None:
                out.events.append(ev)
        except (OSError, ValueError, EOFError, zlib.error, AttributeError) as exc:
            out.problem = f"{lf.rel}: not a readable torchelastic error.json ({exc})"

    # -- matching -----------------------------------------------------------------------
    def _scan_block(self, blk: _Block, lf: LogFile, out: FileScan) -> Stamp | None:
        data = blk.data
        hits = self.prefilter.find_all(data)
        self._line_needles = None
        if hits is None:
            ends = self.prefilter.find(data)
        else:
            hits.sort()
            ends = [e for e, _ in hits]
        if not ends:
            return self._last_stamp(data, len(data), blk.prev_stamp, out)
        starts: list[int] = []
        seen: set[int] = set()
        if hits is not None:
            per_line: dict[int, set[int]] = {}
            for e, nid in hits:
                s = data.rfind(b"\n", 0, e) + 1
                if s not in seen:
                    seen.add(s)
                    starts.append(s)
                    per_line[s] = {nid}
                else:
                    per_line[s].add(nid)
            self._line_needles = per_line
        else:
            for e in sorted(ends):
                s = data.rfind(b"\n", 0, e) + 1
                if s not in seen:
                    seen.add(s)
                    starts.append(s)
        consumed_until = -1
        counted_to = 0
        line_no = blk.first_line
        for s in starts:
            line_no += data.count(b"\n", counted_to, s)
            counted_to = s
            if s < consumed_until:
                continue
            e = data.find(b"\n", s)
            e = len(data) if e < 0 else e
            raw_line = data[s:e] if e - s <= MAX_LINE_BYTES else data[s : s + 8192]
            seen = self._lines.get(raw_line)
            if seen is None:
                text = clean_line(decode(raw_line))
                seen = (text, split_prefixes(text))
                if len(raw_line) <= CACHE_MAX_LINE:
                    if len(self._lines) >= CACHE_LINES:
                        self._lines.clear()
                    self._lines[raw_line] = seen
            text, pre = seen
            msg = pre.message
            if msg.startswith(TRACEBACK_START) or msg.lstrip().startswith(TRACEBACK_START):
                consumed_until = self._traceback(data, s, e, line_no, pre, text, blk, lf, out)
                continue
            pm = self._match(msg, raw_line, text, s)
            if pm is None:
                continue
            out.events.append(self._event(pm, text, pre, line_no, blk.offset + s, blk, s, lf, out))
        blk.counted_to, blk.counted_lines = counted_to, line_no - blk.first_line
        return self._last_stamp(data, len(data), blk.prev_stamp, out)

    def _match(self, msg: str, raw_line: bytes, text: str, start: int) -> PatternMatch | None:
        """``catalog.match(msg)``, asked only of the patterns whose needles the byte prefilter
        found on the line at ``start`` (none found: no pattern can match). The same answer:
        a needle in the message is a needle in the raw line, unless ``clean_line`` removed
        bytes or cut the line (``text`` is then not ``raw_line`` decoded); those lines, and
        every line where the prefilter cannot list its needles, ask the whole catalog."""
        per_line = self._line_needles
        if per_line is None or text.encode("utf-8") != raw_line:
            return self.catalog.match(msg)
        key = frozenset(per_line.get(start, ()))
        if not key:
            return None
        # The same message always gets the same answer, unless the pattern that won was
        # disabled since (a user regex that timed out): then it is asked again.
        if msg in self._matches:
            pm = self._matches[msg]
            if pm is None:
                return None
            if not pm.pattern.disabled_reason:
                return PatternMatch(pm.pattern, dict(pm.fields))
        sub = self._subsets.get(key)
        if sub is None:
            cat = self.catalog
            idx = sorted({i for n in key for i in cat.needle_patterns[n]})
            sub = Catalog([cat.patterns[i] for i in idx], cat.sources)
            self._subsets[key] = sub
        pm = sub.match(msg)
        if len(msg) <= CACHE_MAX_LINE:
            if len(self._matches) >= CACHE_LINES:
                self._matches.clear()
            self._matches[msg] = pm
        return None if pm is None else PatternMatch(pm.pattern, dict(pm.fields))

    def _stamp_for(
        self, pre: Prefixed, blk: _Block, start: int, out: FileScan
    ) -> tuple[Stamp | None, bool]:
        stamp = pre.stamp or find_stamp(pre.message)
        if stamp is not None:
            if stamp.year:
                out.years.add(stamp.year)
            return stamp, False
        return self._last_stamp(blk.data, start, blk.prev_stamp, out), True

    def _last_stamp(
        self, data: bytes, end: int, fallback: Stamp | None, out: FileScan
    ) -> Stamp | None:
        """The timestamp of the nearest dated line before ``end`` (the stream's clock)."""
        lo = max(0, end - LOOKBACK_BYTES)
        window = data[lo:end]
        if self.stamps.available:
            if self._stamp_data is not data:
                self._stamp_data, self._stamp_memo = data, {}
            memo = self._stamp_memo
            for s, raw in self._sieved_lines(window, lo > 0):
                if lo + s in memo:
                    st = memo[lo + s]
                else:
                    st = memo[lo + s] = self._line_stamp(raw) if raw else None
                if st is not None:
                    if st.year:
                        out.years.add(st.year)
                    return st
            return fallback
        lines = window.split(b"\n")
        if lo > 0:
            lines = lines[1:]
        for raw in reversed(lines[-LOOKBACK_LINES:]):
            if not raw:
                continue
            st = self._line_stamp(raw)
            if st is not None:
                if st.year:
                    out.years.add(st.year)
                return st
        return fallback

    @staticmethod
    def _line_stamp(raw: bytes) -> Stamp | None:
        pre = split_prefixes(clean_line(decode(raw[:512])))
        return pre.stamp or find_stamp(pre.message, limit=80)

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

    def _event(
        self,
        pm: PatternMatch,
        text: str,
        pre: Prefixed,
        line_no: int,
        abs_offset: int,
        blk: _Block,
        start: int,
        lf: LogFile,
        out: FileScan,
    ) -> RawEvent:
        stamp, inherited = self._stamp_for(pre, blk, start, out)
        m = _NCCL_HOST.match(pre.message)
        p = pm.pattern
        return RawEvent(
            file=lf.rel,
            line=line_no,
            offset=abs_offset,
            text=text,
            message=pre.message,
            pattern_id=p.id,
            category=p.category,
            role=p.role,
            title=p.title,
            fields=pm.fields,
            task=pre.task if pre.task is not None else lf.task,
            local_rank=pre.local_rank if pre.local_rank is not None else lf.local_rank,
            rank=pre.rank,
            level=pre.level,
            stamp=stamp,
            stamp_inherited=inherited,
            stream=lf.stream,
            attempt=lf.attempt,
            nccl_host=m["host"] if m else None,
            nccl_pid=int(m["pid"]) if m else None,
            cause=p.cause,
            fix=p.fix,
        )

    def _traceback(
        self,
        data: bytes,
        s: int,
        e: int,
        line_no: int,
        pre: Prefixed,
        text: str,
        blk: _Block,
        lf: LogFile,
        out: FileScan,
    ) -> int:
        """Assemble the traceback starting at ``s``; return the offset after its last line."""
        key = _key(pre)
        body: list[str] = [pre.message.strip()]
        frames: list[str] = []
        matches: list[tuple[PatternMatch, str, Prefixed, int, int]] = []
        pos = e + 1
        n = 0
        end_pos = pos
        exc_line: tuple[str, Prefixed, int, int] | None = None
        cur_line = line_no
        while pos < len(data) and n < TRACEBACK_MAX_LINES:
            nxt = data.find(b"\n", pos)
            nxt = len(data) if nxt < 0 else nxt
            cur_line += 1
            n += 1
            raw = data[pos : min(nxt, pos + 8192)]
            line_start = pos
            pos = nxt + 1
            t = clean_line(decode(raw))
            p2 = split_prefixes(t)
            if _key(p2) != key:
                continue  # another writer's line, interleaved
            msg = p2.message
            body.append(msg)
            end_pos = pos
            fm = _FRAME.match(msg)
            if fm:
                frames.append(msg.strip())
            pm = self._match(msg, raw, t, line_start)
            stripped = msg.strip()
            is_exc = (
                not msg[:1].isspace()
                and not fm
                and EXC_LINE.match(stripped) is not None
                and not stripped.startswith(
                    ("During handling", "The above exception", TRACEBACK_START)
                )
            )
            if pm is not None and pm.pattern.id == GENERIC_EXCEPTION_ID:
                pm = None  # the assembled traceback says more than the generic pattern
            if pm is not None and (pm.pattern.role != "context" or is_exc):
                matches.append((pm, t, p2, cur_line, line_start))
            if is_exc:
                exc_line = (t, p2, cur_line, line_start)
                break
        fields: dict[str, str] = {}
        if exc_line is not None:
            em = EXC_LINE.match(exc_line[1].message.strip())
            if em:
                fields = {k: v for k, v in em.groupdict().items() if v}
        if frames:
            fields["frame"] = frames[-1]
        tb_text = "\n".join(body)
        # The best catalog match inside the traceback decides its category; otherwise it is an
        # uncatalogued Python exception (a root cause when nothing else explains the failure).
        chosen = None
        if matches:
            # A root anywhere (e.g. a bare `assert` source line) wins; else the exception line's
            # own match (a context match there makes the whole traceback context).
            roots = [m for m in matches if m[0].pattern.role == "root"]
            chosen = (roots or matches)[-1]
        if chosen is not None:
            pm, t, p2, ln, ls = chosen
            ev = self._event(pm, t, p2, ln, blk.offset + ls, blk, ls, lf, out)
            ev.fields = {**fields, **ev.fields}
        else:
            anchor = exc_line or (text, pre, line_no, s)
            t, p2, ln, ls = anchor
            ev = self._event(
                PatternMatch(TRACEBACK_PATTERN, fields),
                t,
                p2,
                ln,
                blk.offset + ls,
                blk,
                ls,
                lf,
                out,
            )
            ev.title = f"Uncaught {fields.get('exc_type', 'exception')}"
            if exc_line is None:
                ev.role = "symptom"  # a traceback cut before its exception line
        ev.traceback = tb_text
        out.events.append(ev)
        return end_pos

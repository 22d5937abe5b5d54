"""The event builder: matched lines become raw events; Python tracebacks become one event.

The third of the reader's three parts (see ``file.py``). It walks a block's candidate lines
in order and keeps the state that crosses block boundaries: the tracebacks still open
(``tracebacks.py``: which lines belong to one, per writer, and where it ends). A traceback's
event is the best catalog match inside it, else the catalog's traceback pattern (tag
``uncatalogued``, ``python.traceback``) with the exception type and message and the innermost
frame. Repeated events are bounded per writer and pattern (``fold.py``); an event is made
(``rawevent.py``) only for a line kept.
"""

from __future__ import annotations

from typing import Any

import regex

from analyzer.catalog.model import GENERIC_EXCEPTION_TAG, Pattern, PatternMatch
from analyzer.lines.prefixes import Prefixed, bare, nccl_own, split_prefixes
from analyzer.model.event import CANDIDATE, CONTEXT, ROOT, SYMPTOM
from analyzer.read.discover import LogFile
from analyzer.read.firstlines import LaneKey, lane_key
from analyzer.read.fold import Item, RepeatBound
from analyzer.read.match import CACHE_MAX_LINE, WINDOW_BYTES, LineMatcher
from analyzer.read.progresslines import Run
from analyzer.read.rawevent import Line, raw_event
from analyzer.read.records import RawEvent
from analyzer.read.search import MAX_LINE_BYTES, Block, StreamClock
from analyzer.read.tracebacks import (
    FRAME,
    NO_WRITER,
    STARTS,
    TRACEBACK_MAX_LINES,
    Traceback,
    Writer,
    belongs,
    frame_below,
    opens,
    writer,
)
from analyzer.read.wrap import continues, unwrap


def _catch_all(p: Pattern) -> bool:
    """A match that says little: an error-looking candidate line or the generic exception."""
    return p.role == CANDIDATE or GENERIC_EXCEPTION_TAG in p.tags or "fallback" in p.tags


_FAILURE_WORD = regex.compile(
    r"(?i:error|fail|fatal|abort|kill|dead|died|exception|timeout|timed out|exit|xid|oom"
    r"|overflow|nan\b|inf\b|unexpected|mismatch|duplicate|can't|cannot|unable)"
)
_PY_WARNING = regex.compile(r"[\w.]*Warning: ")
_NCCL_INFO = "] NCCL INFO "
_HANDLED = regex.compile(r"(?i:\bfall(?:ing)?[ -]?back\b)")
"""A line that states its own fallback is an error its program handled (torchtitan's
``Error running lspci: … fallback to use device_name``, DeepSpeed's ``FusedAdam CUDA build
failed (…), falling back to …``)."""


def _errorish(pre: Prefixed, msg: str) -> bool:
    """A line no pattern matched that still reads as a failure: an error-level logger prefix,
    or a failure word (NCCL prints fatal errors at WARN) outside a Python warning. Only such a
    line may be a near miss: a harmless line that happens to hold a needle (torchvision's
    ``UserWarning: Failed to load image Python extension``) stays harmless, as does a line that
    states its fallback (``_HANDLED``), as does NCCL's own INFO line: NCCL reports its failures
    at WARN, and at INFO a plugin probe it then does without (``NET/Plugin : dlerror=
    libnccl-net.so: cannot open shared object file … using internal implementation``, NCCL
    2.10; ``Plugin load (libnccl-net.so) returned 2 : …``, 2.18: a DeepSpeed pdsh run and a
    torchrun evaluation in the wild corpus)."""
    if _PY_WARNING.search(msg) or _HANDLED.search(msg) or _NCCL_INFO in msg:
        return False
    return (
        pre.level in ("E", "F", "C") or "NCCL WARN" in msg or _FAILURE_WORD.search(msg) is not None
    )


class EventBuilder:
    """Turn one file's candidate lines into raw events (one builder per file)."""

    def __init__(self, lf: LogFile, matcher: LineMatcher, clock: StreamClock) -> None:
        self.lf = lf
        self.matcher = matcher
        self.clock = clock
        self.bound = RepeatBound(self._build)
        self.lanes: dict[LaneKey, Any] = {}
        """Groups of ``RepeatBound`` of the ``need = "first"`` lines read by ``_lane``, by
        ``firstlines.lane_key`` (pattern and groups): a later line with the same key only adds
        to the count, whether ``_lane`` or ``block`` (keys found a block at a time) meets it."""
        self.open: dict[Writer, Traceback] = {}
        """Open tracebacks by writer, oldest first."""
        self.started = False
        """Whether the file's first line has been looked at (``_head``)."""
        self._run = Run(matcher.progress_names)
        """Progress lines gathered for ``RepeatBound.extend``."""

    # -- blocks ---------------------------------------------------------------------------
    def block(self, blk: Block, starts: list[int]) -> None:
        """Read one block, given the sorted starts of its candidate lines."""
        n = len(blk.data)
        pos = 0 if self.started else self._head(blk)
        # Claim lines already seen (``firstlines``: their keys found a block at a time) are
        # only counted, at their place: what ``_lane`` would do with each of them.
        keys = self.matcher.first_keys(blk.data)
        # Progress lines (``progresslines``: their captures found a block at a time) whose
        # group keeps its first line already are gathered in runs, added to it in one go
        # before anything else is read (``RepeatBound.extend``): what ``_lane`` would keep.
        rows = self.matcher.progress_rows(blk.data)
        run, bound = self._run, self.bound
        lanes = self.lanes
        i = 0
        while True:
            if self.open:
                pos = self._follow(blk, pos)
                if pos >= n:
                    break
            while i < len(starts) and starts[i] < pos:
                i += 1
            if i >= len(starts):
                break
            s = starts[i]
            if keys and (g := lanes.get(keys.get(s))) is not None:  # type: ignore[arg-type]
                bound.repeat(g)
                i += 1
                continue
            if rows and (r := rows.get(s)) is not None:
                g = bound.past_first(NO_WRITER, r[0])
                if g is not None and run.add(g, r[0], s, r[1]):
                    i += 1
                    continue
            run.end(bound, blk)
            pos = self._candidate(blk, s)
        run.end(bound, blk)
        bound.settle()

    def finish(self) -> list[RawEvent]:
        """Close what is still open at the end of the file; every kept event in file order."""
        for tb in list(self.open.values()):
            self._close(tb)
        return self.bound.events()

    def _head(self, blk: Block) -> int:
        """A log that begins inside a traceback (its first line is an indented frame, or a
        frame's source line above a frame: a paste or an excerpt cut above ``Traceback (most
        recent call last):``) opens that traceback
        *headless*, so its frames join the exception line below them. Returns where reading
        goes on."""
        self.started = True
        data = blk.data
        pos, n = 0, len(data)
        while pos < n:  # the first line with text
            e = blk.line_end(pos)
            if data[pos:e].strip():
                break
            pos = e + 1
        else:
            self.started = False  # a block of blank lines: look again in the next one
            return pos
        raw = data[pos : min(e, pos + WINDOW_BYTES)]
        text, pre = self.matcher.line(raw)
        msg = pre.message
        if not (msg[:1].isspace() and (FRAME.match(msg) or frame_below(blk, e, self.matcher.line))):
            return 0
        line_no = blk.line_at(pos)
        st, inh = self.clock.stamp_of(msg, pre.stamp, blk, pos)
        tb = Traceback((text, pre, line_no, blk.offset + pos, st, inh), msg)
        tb.body = []
        self.open[writer(pre)] = tb
        self._feed(tb, blk, pos, raw, text, pre, line_no)
        return e + 1

    # -- lines ----------------------------------------------------------------------------
    def _candidate(self, blk: Block, s: int) -> int:
        """Read the candidate line at ``s``; return the offset after it."""
        data = blk.data
        e = data.find(b"\n", s)
        if e < 0:
            e = len(data)
        lane = self.matcher.lane(s)
        if lane is not None and e - s <= CACHE_MAX_LINE and self._lane(lane, blk, s, e):
            return e + 1
        raw = data[s:e] if e - s <= MAX_LINE_BYTES else data[s : s + WINDOW_BYTES]
        text, pre = self.matcher.line(raw)
        msg = pre.message
        if opens(msg):
            self._open(blk, s, text, pre)
            return e + 1
        got = self.matcher.lookup(msg, raw, text, s)
        if got is None and e < len(data):
            got = self._wrapped(data, e, pre, msg)
        if (got is None and _errorish(pre, msg)) or (got is not None and _catch_all(got[0])):
            got = self.matcher.near_miss(msg, s) or got
        if got is not None:
            p, fields = got
            line_no = blk.line_at(s)
            self.bound.offer(
                (pre.task, pre.local_rank, pre.rank, pre.host, pre.worker_pid),
                p,
                fields,
                line_no,
                blk.offset + s,
                (p, fields, text, pre, line_no, blk, s),
            )
        return e + 1

    def _open(self, blk: Block, s: int, text: str, pre: Prefixed) -> None:
        """Open a traceback at the line at ``s`` (its writer's open one, if any, closed)."""
        w = writer(pre)
        if w in self.open:
            self._close(self.open[w])
        msg = pre.message
        st, inh = self.clock.stamp_of(msg, pre.stamp, blk, s)
        line_no = blk.line_at(s)
        self.open[w] = Traceback((text, pre, line_no, blk.offset + s, st, inh), msg)

    def _lane(self, p: Pattern, blk: Block, s: int, e: int) -> bool:
        """Read the candidate line ``data[s:e]`` the short way when the whole path would
        read it one known way; False (nothing done) otherwise.

        The line holds one needle, of one pattern ``p`` (``LineMatcher.lane``). When it is
        printable ASCII (``clean_line`` leaves it as it is; its needles are the text's),
        ``split_prefixes`` peels nothing off it (``prefixes.bare``: no writer, the line is
        its message), it starts no traceback and ``p`` matches it, the whole path would ask
        ``p`` alone and offer its match under no writer: that is done here without the
        line's cache, prefixes and lookup. A line of a pattern that needs only its first
        line per set of captures (NCCL's claims) is then counted by its groups alone
        (``lanes``). Any other line (no match: maybe a wrapped or cut message) takes the
        whole path."""
        raw = blk.data[s:e]
        if not raw.isascii():
            return False
        text = raw.decode("ascii")
        if not text.isprintable() or not bare(text) or text.lstrip().startswith(STARTS):
            return False
        rx = p.regex
        m = rx.match(text) or rx.search(text)  # the leftmost match, as the whole path's search
        if m is None:
            return False
        key = None
        if p.need == "first":
            key = lane_key(p, text, m)
            g = self.lanes.get(key)
            if g is not None:
                self.bound.repeat(g)
                return True
        fields = p.fields(m)
        line_no = blk.line_at(s)
        g = self.bound.offer(
            NO_WRITER, p, fields, line_no, blk.offset + s, (p, fields, text, None, line_no, blk, s)
        )
        if key is not None:
            self.lanes[key] = g
        return True

    def _wrapped(
        self, data: bytes, e: int, pre: Prefixed, msg: str
    ) -> tuple[Pattern, dict[str, str]] | None:
        """A needle line no pattern matched, continued on the next line (``wrap.py``)."""
        n = data.find(b"\n", e + 1)
        raw = data[e + 1 : n if n >= 0 else min(len(data), e + 1 + WINDOW_BYTES)]
        if not raw.strip() or len(raw) > WINDOW_BYTES:
            return None
        text, nxt = self.matcher.line(raw)
        if not continues(writer(pre), writer(nxt)) or nccl_own(text):
            return None  # another writer's line, or a line NCCL printed itself (never a rest)
        got = unwrap(msg, nxt, self._match_whole)
        return None if got is None or got[0].role == CANDIDATE else got

    def _match_whole(self, msg: str) -> tuple[Pattern, dict[str, str]] | None:
        got = self.matcher.match_text(msg)
        return None if got is None else (got[0], dict(got[1]))

    def _follow(self, blk: Block, pos: int) -> int:
        """Read every line from ``pos`` while a traceback is open; return where it stopped
        (the block's end, or the start of the first line after the last traceback closed)."""
        data = blk.data
        n = len(data)
        opened = self.open
        while opened and pos < n:
            nxt = blk.line_end(pos)
            line_no = blk.line_at(pos)
            oldest = next(iter(opened.values()))
            if line_no - oldest.first_line > TRACEBACK_MAX_LINES:
                self._close(oldest)
                continue
            raw = data[pos : min(nxt, pos + WINDOW_BYTES)]
            text, pre = self.matcher.line(raw)
            tb = opened.get(writer(pre))
            if tb is not None and self._feed(tb, blk, pos, raw, text, pre, line_no):
                pos = nxt + 1
                continue
            if self.matcher.is_candidate(pos):
                self._candidate(blk, pos)
            pos = nxt + 1
        return pos

    def _feed(
        self, tb: Traceback, blk: Block, pos: int, raw: bytes, text: str, pre: Prefixed, ln: int
    ) -> bool:
        """Give a line of its writer to an open traceback; False when it cannot belong (the
        traceback is then closed, and the line is read as any other)."""
        msg = pre.message
        kind = belongs(tb, msg)
        if kind is None:
            self._close(tb)
            return False
        fm, is_exc = kind
        tb.body.append(msg)
        if fm:
            tb.frames.append(msg.strip())
        pm = self._inner_match(tb, msg, raw, text, pos, fm)
        line: Line | None = None
        if pm is not None and (pm.pattern.role != CONTEXT or is_exc):
            st, inh = self.clock.stamp_of(msg, pre.stamp, blk, pos)
            line = (text, pre, ln, blk.offset + pos, st, inh)
            tb.matches.append((pm, line))
        if is_exc:
            if line is None:
                st, inh = self.clock.stamp_of(msg, pre.stamp, blk, pos)
                line = (text, pre, ln, blk.offset + pos, st, inh)
            tb.exc = line
            self._close(tb)
        return True

    def _inner_match(
        self,
        tb: Traceback,
        msg: str,
        raw: bytes,
        text: str,
        pos: int,
        fm: regex.Match[str] | None,
    ) -> PatternMatch | None:
        """The catalog match of a traceback's line, unless the assembled traceback says more
        (a generic error form or exception line; a frame's pattern names what the program
        was doing: ``frame_hit``)."""
        pm = self.matcher.match(msg, raw, text, pos)
        if pm is None or _catch_all(pm.pattern):
            near = self.matcher.near_miss(msg, pos)
            if near is not None:
                return PatternMatch(near[0], near[1])
        if pm is None or pm.pattern.role == CANDIDATE:
            return None
        if fm and "frame" in pm.pattern.tags:
            tb.frame_hit = pm
            return None
        if GENERIC_EXCEPTION_TAG in pm.pattern.tags:
            return None
        return pm

    def _close(self, tb: Traceback) -> None:
        """The traceback's event: its best catalog match inside, else an uncaught exception."""
        self.open.pop(writer(tb.anchor[1]), None)
        fields = tb.fields()
        # The best catalog match inside the traceback decides its category; otherwise it is an
        # uncatalogued Python exception (a root cause when nothing else explains the failure).
        # A root anywhere (e.g. a bare `assert` source line) wins; else the exception line's own
        # match (a context match there makes the whole traceback context).
        if tb.matches:
            roots = [m for m in tb.matches if m[0].pattern.role == ROOT]
            pm, line = (roots or tb.matches)[-1]
            ev = raw_event(self.lf, pm, line)
            ev.fields = {**fields, **ev.fields}
        else:
            pm = PatternMatch(self.matcher.catalog.traceback, fields)
            ev = raw_event(self.lf, pm, tb.exc or tb.anchor)
            ev.title = f"Uncaught {fields.get('exc_type', 'exception')}"
            if tb.frame_hit is not None:  # e.g. raised under save_checkpoint: a checkpoint failure
                fp = tb.frame_hit.pattern
                ev.category, ev.fix = fp.category, fp.fix
                ev.title += f" {fp.title}"
            if tb.exc is None:
                ev.role = SYMPTOM.value  # a traceback cut before its exception line
        ev.traceback = "\n".join(tb.body)
        item = Item(ev.line, ev.offset, ev.fields, None)
        item.event = ev
        # Tracebacks of one writer fold only when they raise the same thing at the same place.
        key = self.bound.key(writer(tb.anchor[1]), pm.pattern, ev.role, ev.fields)
        self.bound.add((key, fields.get("exc_type"), fields.get("frame")), item)

    # -- events ---------------------------------------------------------------------------
    def _build(
        self, args: tuple[Pattern, dict[str, str], str, Prefixed | None, int, Block, int]
    ) -> RawEvent:
        p, fields, text, pre, line_no, blk, s = args
        if pre is None:  # a line read by ``_lane``: no prefixes (``split_prefixes`` says so)
            pre = split_prefixes(text)
        st, inh = self.clock.stamp_of(pre.message, pre.stamp, blk, s)
        # The captures may be shared with the matcher's cache: the event gets its own copy.
        pm = PatternMatch(p, dict(fields))
        return raw_event(self.lf, pm, (text, pre, line_no, blk.offset + s, st, inh))

"""The matcher: which lines of a block may hold a catalog pattern, and which pattern they hold.

The second of the reader's three parts (see ``file.py``). A byte-level prefilter (one
multi-literal search over the block) finds the lines that contain a needle; only those are
decoded, stripped of prefixes and asked of the patterns whose needles they contain (a needle
subset catalog, built once per subset). Lines and answers that repeat verbatim across ranks are
cached (bounded). A user pattern disabled by a regex timeout is remembered in
:attr:`LineMatcher.disabled` so that a worker process can report it to its parent.
"""

from __future__ import annotations

from typing import cast

import regex

from analyzer.catalog.model import (
    GENERIC_EXCEPTION_TAG,
    TRACEBACK_TAG,
    Catalog,
    Pattern,
    PatternMatch,
    match_priority,
)
from analyzer.lines import pastes
from analyzer.lines.prefixes import Prefixed, split_prefixes
from analyzer.model.event import Role
from analyzer.read.firstlines import FirstLines, LaneKey
from analyzer.read.prefilter import Prefilter
from analyzer.read.progresslines import Names, ProgressLines, Row
from analyzer.util.sanitize import clean_line, decode

CACHE_LINES = 4096
"""Entries kept in each of the line caches (cleared when full)."""
CACHE_MAX_LINE = 1024
"""Longer lines are not cached (bounds the caches to a few MB)."""
CACHE_MIN_HITS = CACHE_LINES // 8
"""A cache that filled up with fewer hits than this is not worth keeping up (a hit-dense log
whose lines all differ: each rank's iteration line): it is bypassed for the next
``CACHE_REST`` lines, then tried again. Only speed depends on it, never an answer."""
CACHE_REST = 4 * CACHE_LINES
WINDOW_BYTES = 8192
"""The part of a giant line that is decoded and matched."""
PASTE_HEAD = 4 << 10
"""How much of a file's first block the cheap test for a pasted prefix looks at."""
Needles = frozenset[int] | int
"""The needles the prefilter found on a line: the index of one needle (most lines), or a set."""


class LineMatcher:
    """Candidate lines and their catalog match, for one catalog (reused for every file)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.prefilter = Prefilter(catalog.needles)
        self._subsets = _Subsets(catalog)
        """Patterns owning a needle set (or the one needle of a line that holds one), in
        ``match_priority`` then catalog order (built on first use)."""
        self._line_needles: dict[int, Needles] | None = None
        """Needle indexes found on each candidate line of the current block (by line start):
        the index alone for a line holding one needle (most lines), else a frozenset. None
        when the prefilter cannot list them (every candidate then asks the catalog)."""
        self._tb_idx = [i for i, p in enumerate(catalog.patterns) if TRACEBACK_TAG in p.tags]
        """The traceback's pattern, which has no needle in the prefilter (never matched line
        by line) but is one of the patterns with a needle in a message."""
        self._lanes: dict[int, Pattern] = {}
        """Needle index -> the one pattern owning it, where a line holding only that needle
        may take the event builder's lane (``EventBuilder._lane``): a built-in context pattern
        (the lines that repeat and fold: progress, NCCL's claims, facts; a failure's line is
        kept as an event anyway and gains nothing) that is no catch-all."""
        for nid, owners in enumerate(catalog.needle_patterns):
            if len(owners) == 1:
                p = catalog.patterns[owners[0]]
                if not p.user and p.role == Role.CONTEXT and not (
                    p.tags & {GENERIC_EXCEPTION_TAG, "fallback", TRACEBACK_TAG}
                ):
                    self._lanes[nid] = p
        self._firsts = FirstLines(self._lanes)
        """The lane patterns needing their first line per claim only (``first_keys``)."""
        self._progress = ProgressLines(self._lanes)
        """The lane patterns of ``progress`` lines, read a block at a time (``progress_rows``)."""
        self._user = [p for p in catalog.patterns if p.user]
        """The patterns a timeout can switch off (read after every file: not all 300)."""
        self._starts: set[int] = set()
        self._lines: dict[bytes, tuple[str, Prefixed]] = {}
        """Cleaned text and prefixes of recently seen candidate lines (many repeat verbatim
        across ranks: ``Fatal Python error: Aborted``, ChildFailedError fields, ...)."""
        self._matches: dict[str, tuple[Pattern, dict[str, str]] | None] = {}
        """The answer for recently seen messages (captures shared: copied when handed on)."""
        self.quoted = False
        """The current file is a quoted paste (``pastes.quoted_paste``): every line's
        leading ``> `` is dropped (and the line cache, keyed by the raw line, is not used)."""
        self.pasted = ""
        """What every line of the current file carries that is no part of the log
        (``pastes.pasted_prefix``: a paste's margin, a wrapper's tag): dropped from every line
        that starts with it (the caches, keyed by the raw line, are not used)."""
        self.numbered = False
        """A numbered paste (``pastes.numbered_paste``): line numbers dropped like ``pasted``."""
        self.notebook = False
        """A notebook's output (``read/notebook.py``): no lane (its lines end in padding)."""
        self._line_hits = self._match_hits = 0
        """Hits since each cache was last cleared."""
        self._line_rest = self._match_rest = 0
        """Lines still to read without each cache (see ``CACHE_MIN_HITS``)."""

    @property
    def disabled(self) -> dict[str, str]:
        """User patterns switched off during the run (a regex timeout): id -> reason."""
        return {p.id: p.disabled_reason for p in self._user if p.disabled_reason}

    def candidates(self, data: bytes) -> list[int]:
        """Sorted start offsets of the lines in ``data`` that contain a needle."""
        hits = self.prefilter.find_all(data)
        self._line_needles = None
        starts: list[int] = []
        seen: set[int] = set()
        rfind = data.rfind
        if hits is not None:
            hits.sort()
            per_line: dict[int, Needles] = {}
            last_s = -1
            for e, nid in hits:
                s = rfind(b"\n", 0, e) + 1
                if s == last_s or s in seen:
                    got = per_line[s]
                    if type(got) is int:
                        if got != nid:
                            per_line[s] = frozenset((got, nid))
                    elif nid not in got:  # type: ignore[operator]
                        per_line[s] = got | {nid}  # type: ignore[operator]
                    continue
                last_s = s
                seen.add(s)
                starts.append(s)
                per_line[s] = nid
            self._line_needles = per_line
        else:
            for e in sorted(self.prefilter.find(data)):
                s = rfind(b"\n", 0, e) + 1
                if s not in seen:
                    seen.add(s)
                    starts.append(s)
        self._starts = seen
        return starts

    def is_candidate(self, start: int) -> bool:
        """Whether the line at ``start`` of the current block contains a needle."""
        return start in self._starts

    def read_head(self, data: bytes) -> None:
        """Set ``quoted`` and ``pasted`` for a file from its first block."""
        self.quoted = pastes.quoted_paste(data)
        self.pasted = ""
        self.numbered = False
        head = data[:PASTE_HEAD]
        e = head.find(b"\n")
        first = head if e < 0 else head[:e]
        if self._message(first).lstrip(" \t")[:1].isdigit():  # behind any collector's prefix
            lines = pastes.head_lines(data)
            self.numbered = pastes.numbered_paste([self._message(ln) for ln in lines])
            if self.numbered:
                return
        if first.strip():
            msg = self._message(first) if b"    " in first else ""
            if not pastes.may_be_pasted(msg, head, head.count(b"\n") + 1):
                return  # most files: one look at the first line and one C search of the head
        lines = pastes.head_lines(data)
        self.pasted = pastes.pasted_prefix([self._message(ln, own=True) for ln in lines])

    def _message(self, raw: bytes, own: bool = False) -> str:
        """The message of a raw line; with ``own``, the whole cleaned line where a logger's
        prefix was peeled: what follows a logger's level is the log's own text (torchrun's
        agent puts its role, ``[default] ``, in front of every message), never a paste's
        margin or a wrapper's tag, which sit in front of the logger's prefix."""
        text = clean_line(decode(raw))
        pre = split_prefixes(text, self.quoted)
        return text if own and pre.level is not None else pre.message

    @property
    def _rewritten(self) -> bool:  # a file whose lines are not read as they stand
        return self.quoted or bool(self.pasted) or self.numbered or self.notebook

    def lane(self, start: int) -> Pattern | None:
        """The pattern that alone owns the one needle on the line at ``start`` of the
        current block, where that line may take the builder's lane (``EventBuilder._lane``)."""
        per_line = self._line_needles
        if per_line is None or self._rewritten:
            return None
        found = per_line.get(start)
        return self._lanes.get(found) if type(found) is int else None

    def first_keys(self, data: bytes) -> dict[int, LaneKey]:
        """Line start -> lane key (``firstlines.lane_key``) of the lines of ``data`` that
        would take the lane for a pattern needing only its first line per claim, each as
        the lane would read it (``firstlines.FirstLines``); empty where no line can."""
        per_line = self._line_needles
        if per_line is None or self._rewritten or not self._firsts:
            return {}
        return self._firsts.keys(data, per_line, CACHE_MAX_LINE)

    def progress_rows(self, data: bytes) -> dict[int, tuple[Pattern, Row]]:
        """Line start -> (pattern, captures) of the lines of ``data`` that would take the
        lane for a ``progress`` pattern, as the lane would read them
        (``progresslines.ProgressLines``); empty where no line can."""
        per_line = self._line_needles
        if per_line is None or self._rewritten or not self._progress:
            return {}
        return self._progress.rows(data, per_line, CACHE_MAX_LINE)

    def progress_names(self, p: Pattern) -> Names:
        """Which capture each position of ``p``'s rows (``progress_rows``) holds."""
        return self._progress.names[p.id]

    def line(self, raw: bytes) -> tuple[str, Prefixed]:
        """(cleaned text, prefixes) of one raw line, cached for short lines."""
        quoted = self.quoted
        pasted = self.pasted
        rewritten = quoted or pasted or self.numbered
        if rewritten or self._line_rest:
            if not rewritten:
                self._line_rest -= 1
            return self._unpasted(clean_line(decode(raw)), quoted, pasted)
        got = self._lines.get(raw)
        if got is not None:
            self._line_hits += 1
            return got
        text = clean_line(decode(raw))
        got = (text, split_prefixes(text))
        if len(raw) <= CACHE_MAX_LINE:
            if len(self._lines) >= CACHE_LINES:
                if self._line_hits < CACHE_MIN_HITS:
                    self._line_rest = CACHE_REST
                self._line_hits = 0
                self._lines.clear()
            self._lines[raw] = got
        return got

    def _unpasted(self, text: str, quoted: bool, pasted: str) -> tuple[str, Prefixed]:
        """(text, prefixes) of a line of a quoted or pasted file: a paste's margin, line number
        or wrapper's tag (between a collector's or srun's prefix and the line) is dropped."""
        pre = split_prefixes(text, quoted)
        msg = pre.message
        if not text.endswith(msg):
            return text, pre
        cut = 0
        if self.numbered:
            m = pastes.NUMBERED.match(msg)
            cut = m.end() if m else 0
        elif pasted and msg.startswith(pasted):
            cut = len(pasted)
        if not cut:
            return text, pre
        text = text[: len(text) - len(msg)] + msg[cut:]
        return text, split_prefixes(text, quoted)

    def match(self, msg: str, raw_line: bytes, text: str, start: int) -> PatternMatch | None:
        """``catalog.match(msg)``, asked only of the patterns whose needles the byte prefilter
        found on the line at ``start`` (none found: no pattern can match). The same answer:
        a needle in the message is a needle in the raw line, unless ``clean_line`` removed
        bytes or cut the line (``text`` is then not ``raw_line`` decoded); those lines, and
        every line where the prefilter cannot list its needles, ask the whole catalog."""
        got = self.lookup(msg, raw_line, text, start)
        return None if got is None else PatternMatch(got[0], dict(got[1]))

    def lookup(
        self, msg: str, raw_line: bytes, text: str, start: int
    ) -> tuple[Pattern, dict[str, str]] | None:
        """:meth:`match` as (pattern, captures), where the captures may be shared with the
        cache: the caller must copy them before handing them on or changing them."""
        per_line = self._line_needles
        if per_line is None or text.encode("utf-8") != raw_line:
            return self._ask_catalog(msg)
        found = per_line.get(start)
        if found is None:
            return None
        # The same message always gets the same answer, unless the pattern that won was
        # disabled since (a user regex that timed out): then it is asked again.
        rest = self._match_rest
        if rest:
            self._match_rest = rest - 1
        else:
            cached = self._matches.get(msg, _MISS)
            if cached is not _MISS:
                self._match_hits += 1
                got = cast("tuple[Pattern, dict[str, str]] | None", cached)
                if got is None or not got[0].disabled_reason:
                    return got
        sub = self._subsets[found]
        # The first match in ``match_priority`` order is the one ``Catalog.match`` keeps; the
        # rest need not be searched. A pattern is a candidate when one of its needles is in the
        # message; with no prefix stripped, every needle the prefilter found is (no check).
        whole = msg is text
        holds = msg.__contains__
        got = None
        for p in sub:
            if not whole and not any(map(holds, p.needles)):
                continue
            m = p.search(msg)
            if m:
                got = (p, p.fields(m))
                break
        if not rest and len(msg) <= CACHE_MAX_LINE:
            if len(self._matches) >= CACHE_LINES:
                self._matches_full()
            self._matches[msg] = got
        return got

    def _ask_catalog(self, msg: str) -> tuple[Pattern, dict[str, str]] | None:
        """:meth:`lookup`'s slow path: the whole catalog asked, for a line whose needles the
        prefilter could not list or whose text ``clean_line`` changed."""
        pm = self.catalog.match(msg)
        return None if pm is None else (pm.pattern, pm.fields)

    def _matches_full(self) -> None:
        """Empty the full answer cache; bypass it for ``CACHE_REST`` lines when it was not
        worth keeping up (``CACHE_MIN_HITS``)."""
        if self._match_hits < CACHE_MIN_HITS:
            self._match_rest = CACHE_REST
        self._match_hits = 0
        self._matches.clear()

    def near_miss(self, msg: str, start: int | None) -> tuple[Pattern, dict[str, str]] | None:
        """The first pattern (in ``match_priority`` order) that ``msg`` is a near miss of
        (``Pattern.near``): a root or symptom pattern, not a catch-all, whose needle the line
        holds, when every such pattern means the same category. Its captures are what the
        cut line still holds, with ``near_miss`` set."""
        found = (
            None if self._line_needles is None or start is None else (self._line_needles.get(start))
        )
        sub = self.with_needles(msg) if found is None else self._subsets[found]
        holds = msg.__contains__
        near: list[tuple[Pattern, regex.Match[str]]] = []
        for p in sub:
            if p.role not in _NEAR_ROLES or GENERIC_EXCEPTION_TAG in p.tags or "fallback" in p.tags:
                continue
            if not any(map(holds, p.needles)):
                continue
            m = p.near(msg)
            if m is not None:
                near.append((p, m))
        if not near or len({p.category for p, _m in near}) != 1:
            return None  # none, or patterns of different meanings: the cut line is ambiguous
        p, m = near[0]
        return p, {**p.fields(m), NEAR_MISS: "1"}

    def with_needles(self, msg: str) -> list[Pattern]:
        """Every pattern with a needle in ``msg`` (the traceback's pattern included), in
        ``match_priority`` then catalog order: the prefilter names the needles, rather than a
        Python scan of every pattern's needles."""
        cat = self.catalog
        hits = self.prefilter.find_all(msg.encode("utf-8"))
        if hits is None:
            pats = [p for p in cat.patterns if any(n in msg for n in p.needles)]
            return sorted(pats, key=match_priority)
        idx = {i for _e, nid in hits for i in cat.needle_patterns[nid]}
        idx.update(i for i in self._tb_idx if any(n in msg for n in cat.patterns[i].needles))
        return sorted((cat.patterns[i] for i in sorted(idx)), key=match_priority)

    def match_text(self, msg: str) -> tuple[Pattern, dict[str, str]] | None:
        """``Catalog.match(msg)`` as (pattern, captures) for a message that is no line of the
        block (a wrapped line joined with the next): the prefilter names the needles in it,
        and only their patterns are asked, in ``match_priority`` order (the first match is
        the one ``Catalog.match`` keeps), not every pattern's needles in Python."""
        hits = self.prefilter.find_all(msg.encode("utf-8"))
        if hits is None:
            pm = self.catalog.match(msg)
            return None if pm is None else (pm.pattern, pm.fields)
        if not hits:
            return None
        ids = frozenset(nid for _e, nid in hits)
        for p in self._subsets[next(iter(ids)) if len(ids) == 1 else ids]:
            m = p.search(msg)
            if m:
                return p, p.fields(m)
        return None



class _Subsets(dict[Needles, list[Pattern]]):
    """The patterns owning each set of needles, in ``match_priority`` order, built the first
    time a set is asked for."""

    __slots__ = ("catalog",)

    def __init__(self, catalog: Catalog) -> None:
        super().__init__()
        self.catalog = catalog

    def __missing__(self, found: Needles) -> list[Pattern]:
        cat = self.catalog
        needles = (found,) if type(found) is int else found
        idx = sorted({i for n in needles for i in cat.needle_patterns[n]})  # type: ignore[union-attr]
        sub = self[found] = sorted((cat.patterns[i] for i in idx), key=match_priority)
        return sub


_MISS = object()
_NEAR_ROLES = frozenset({Role.ROOT.value, Role.SYMPTOM.value})
NEAR_MISS = "near_miss"
"""The capture the reader sets on a near miss's event (``LineMatcher.near_miss``)."""

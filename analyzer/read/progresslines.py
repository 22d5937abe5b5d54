"""The captures of a block's progress lines, one regex pass per pattern instead of one per line.

Megatron prints its iteration line on every rank at every step (a hit-dense log: 200,000 of
them in the benchmark's dense job). Its pattern is tagged ``progress``: of its lines the fold
(``fold.py``) keeps only the first and the last, and the lines holding the extremes of each
integer capture; every other line only counts. The builder's lane (``EventBuilder._lane``)
reads each such line in Python (decode, prefix check, regex, captures, an ``Item``, the
extremes): most of the reading of those logs. Here the lines of one progress pattern in a
block are joined and matched by one ``findall`` of a line-anchored form of its regex, which
gives each line the captures the lane would find; once its group has kept its first line, the
builder hands a run of such lines to ``RepeatBound.extend``, which keeps what the lane would
have kept, building only the items still held.

A line gets captures here only when the lane would read it the same way: printable ASCII, no
prefix to peel (``prefixes.bare``, written as a lookahead: a leading indent that leads to no
srun label or exception-group margin, or NCCL's own ``host:pid:tid [dev] ``), no traceback's
start, and the pattern's leftmost match (a lazy ``[^\\n]*?`` in front of the regex). The regex
may hold constructs that can match a newline (``\\s``, negated classes): a match that runs
into the next joined line would take that line's start, so the block's lines then number more
than the matches and none of them gets captures here (they take the lane as before). A regex
that could see past its line without consuming it (lookarounds, anchors, inline flags,
escapes of control characters) is left to the lane.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import regex

from analyzer.catalog.model import Pattern
from analyzer.lines.prefixes import NCCL_PROC
from analyzer.read.firstlines import joinable, plain_spans
from analyzer.read.fold import IDENTITY_CAPTURES, KEEP_PROGRESS, Item, RepeatBound
from analyzer.read.search import Block

Row = tuple[str, ...]
"""What ``findall`` gives a line: the guard (empty where the lane would not read the line
this way), then the pattern's groups ("" for one that took no part)."""
Names = tuple[tuple[str, int], ...]
"""(capture name, its index in a row) for each of a pattern's captures."""

BARE = "(?: +(?![ 0-9|+\\n])[\\x00-\\x7f]|" + NCCL_PROC + ")"
"""``prefixes.bare`` of a line (without a newline), as a regex at the line's start: an indent that
leads to none of srun's ``  3: `` or an exception group's ``  | ``/``  + ``, or NCCL's own
prefix (a test compares the two)."""
_NOT_TRACEBACK = "(?! *(?:Original )?Traceback \\(most recent call last\\):)"

_SEES_PAST_LINE = re.compile(r"\\[ZAzGnrNRXpPx0-9]|\(\?(?![P:])|\$|(?<!\[)\^")
"""Constructs that can see past a line's end without consuming a character there (anchors,
lookarounds, inline flags) or name a newline (escapes of control or arbitrary characters):
a pattern using one keeps the lane. ``\\s``, ``\\W``, ``\\D`` and negated classes consume
what they match: a match through a newline shows in the count of matches."""


def bulk_local(p: Pattern) -> bool:
    """Whether ``p``'s regex, run over lines joined by newlines, matches each line as it
    matches the line alone or runs into the next line (which the count of matches shows)."""
    return joinable(p, _SEES_PAST_LINE)


def takes_bulk(p: Pattern) -> bool:
    """Whether the lines of lane pattern ``p`` may be read here: a ``progress`` pattern
    read line by line whose groups in the fold are one per writer (no identity captures)."""
    return (
        "progress" in p.tags
        and p.need == "every"
        and KEEP_PROGRESS == 1
        and not (set(p.regex.groupindex) & IDENTITY_CAPTURES)
        and bulk_local(p)
    )


class ProgressLines:
    """Captures of the progress lines of a block, for the lane patterns that take it."""

    def __init__(self, lanes: dict[int, Pattern]) -> None:
        self._by_needle: dict[int, Pattern] = {}
        """Needle index -> its pattern, for the lane patterns read here."""
        self._line_rx: dict[str, Any] = {}
        """Pattern id -> its line-anchored form: one match per line."""
        self.names: dict[str, Names] = {}
        """Pattern id -> (capture name, its index in a row), as ``Pattern.fields`` reads them."""
        for nid, p in lanes.items():
            if takes_bulk(p):
                self._by_needle[nid] = p
                rx = self._line_rx[p.id] = regex.compile(
                    "^(?:(?=(" + BARE + "))" + _NOT_TRACEBACK + "[^\\n]*?(?:" + p.regex.pattern
                    + ")[^\\n]*|[^\\n]*)",
                    p.regex.flags | regex.MULTILINE,
                )
                # in the pattern's own order of names, as ``Pattern.fields`` gives them
                self.names[p.id] = tuple((n, rx.groupindex[n] - 1) for n in p.regex.groupindex)

    def __bool__(self) -> bool:
        return bool(self._by_needle)

    def rows(
        self, data: bytes, per_line: dict[int, frozenset[int] | int], max_line: int
    ) -> dict[int, tuple[Pattern, Row]]:
        """Line start -> (pattern, captures) of the lines of ``data`` the lane would read for
        a pattern read here (``per_line``: the needles of each candidate line; lines at most
        ``max_line`` bytes long)."""
        by_needle = self._by_needle
        lines: dict[str, tuple[Pattern, list[int]]] = {}
        for s, nid in per_line.items():
            if type(nid) is int and nid in by_needle:
                p = by_needle[nid]
                lines.setdefault(p.id, (p, []))[1].append(s)
        out: dict[int, tuple[Pattern, Row]] = {}
        for pid, (p, starts) in lines.items():
            starts.sort()
            spans, joined = plain_spans(data, starts, max_line)
            found = self._line_rx[pid].findall(joined)
            if len(found) != len(spans):
                continue  # a match ran into the next line: these lines take the lane
            out.update((s, (p, row)) for (s, _e), row in zip(spans, found, strict=True) if row[0])
        return out


class Run:
    """Progress lines of one group gathered in file order, then added to it at once."""

    __slots__ = ("_names", "group", "pattern", "rows", "starts")

    def __init__(self, names: Callable[[Pattern], Names]) -> None:
        self._names = names
        """Pattern -> which capture each position of its rows holds."""
        self.group: Any = None
        self.pattern: Pattern | None = None
        self.starts: list[int] = []
        self.rows: list[Row] = []

    def add(self, group: Any, pattern: Pattern, start: int, row: Row) -> bool:
        """Gather the line at ``start`` (False: the run holds another group's lines)."""
        if self.group is not group:
            if self.group is not None:
                return False
            self.group, self.pattern = group, pattern
        self.starts.append(start)
        self.rows.append(row)
        return True

    def end(self, bound: RepeatBound, blk: Block) -> None:
        """Add the lines gathered to their group (``RepeatBound.extend``); the run is empty
        afterwards. Each item kept is what the lane makes of its line (``_lane``'s
        arguments to the builder: no prefixes)."""
        p = self.pattern
        if p is None:
            return
        starts, rows, names, data = self.starts, self.rows, self._names(p), blk.data

        def item_at(j: int) -> Item:
            s = starts[j]
            e = data.find(b"\n", s)
            text = data[s : e if e >= 0 else len(data)].decode("ascii")
            row = rows[j]
            fields = {k: v for k, i in names if (v := row[i])}
            line_no = blk.line_at(s)
            return Item(line_no, blk.offset + s, fields, (p, fields, text, None, line_no, blk, s))

        bound.extend(self.group, rows, names, item_at)
        self.group = self.pattern = None
        self.starts, self.rows = [], []

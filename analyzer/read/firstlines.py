"""The keys of a block's claim lines, one regex pass per pattern instead of one per line.

At ``NCCL_DEBUG=INFO`` every process prints hundreds of communicator and channel lines, each
saying which rank the process holds in one communicator; their patterns need only the first
line per set of captures (``Pattern.need = "first"``), the rest are counted. The builder's
lane (``EventBuilder._lane``) reads such a line in Python (decode, prefix check, regex, key):
most of the reading of those logs. Here the lines of one such pattern in a block are joined
and matched by one ``findall`` of a line-anchored form of its regex, which gives each line
the key the lane would compute (:func:`lane_key`); the builder then only counts a line whose
key it has seen, at its place in the file, and reads every other line as before.

The answer is the lane's, line for line, because a line gets a key only when the lane
would read it the same way: printable ASCII, NCCL's own ``host:pid:tid [dev] `` in front
(``prefixes.bare``: no prefix to peel, no traceback's start), the pattern's leftmost match
(a lazy ``[^\\n]*?`` in front of the regex) and no way for the regex to see past the end of its
line (:func:`line_local`: no construct that can match a newline or look behind). Any other
line gets a key no group has (an empty first item) and takes the lane as before.
"""

from __future__ import annotations

import re
from itertools import repeat
from typing import Any

import regex

from analyzer.catalog.model import Pattern
from analyzer.lines.prefixes import NCCL_PROC

LaneKey = tuple[str, tuple[str, ...]]
"""(pattern id, (the line's first character, every group's value, "" for none))."""

_HEAD = "[A-Za-z0-9]"
if not NCCL_PROC.startswith(_HEAD):  # pragma: no cover - a guard on the prefix's definition
    raise AssertionError("NCCL_PROC must start with one character class")
_HEAD_AHEAD = "(?=(" + _HEAD + ")" + NCCL_PROC[len(_HEAD) :] + ")"
"""NCCL's own prefix at the line's start, its first character captured (never empty)."""

_LOOKS_PAST_LINE = re.compile(
    r"\\[sWDZAzGnrNRXpPx0-7]|\[\^|\(\?(?![P:!=])|\(\?P(?!<)|[$^]"
)
"""Constructs that can match a newline or see past the line's ends: ``\\s \\W \\D`` and
negated classes (a newline is none of the rest), ``\\Z \\A \\z \\G``, escapes of control or
arbitrary characters, anchors, lookbehinds and inline flags (``(?s)`` makes ``.`` match a
newline). Conservative: a pattern using one simply keeps the lane."""
_CONTROL = bytes([*range(0x0A), *range(0x0B, 0x20), 0x7F])
"""The ASCII characters ``str.isprintable`` refuses (a newline only joins the lines)."""


def _plain(line: bytes) -> bool:
    """Whether ``line`` is printable ASCII (what the lane reads)."""
    return line.isascii() and not _has_control(line)


def _has_control(data: bytes) -> bool:
    """Whether ``data`` holds one of ``_CONTROL`` (``bytes.translate`` deletes them: about
    four times faster than a regex search for a character class)."""
    return len(data.translate(None, _CONTROL)) != len(data)


def line_local(p: Pattern) -> bool:
    """Whether ``p``'s regex, run over lines joined by newlines, matches each line as it
    matches the line alone: nothing in it can match a newline or look past the line's ends,
    and it has groups (a key of captures)."""
    return joinable(p, _LOOKS_PAST_LINE)


def joinable(p: Pattern, unsafe: re.Pattern[str]) -> bool:
    """Whether ``p``'s regex can be run over lines joined by newlines: a ``str`` regex with
    groups, none of the flags that change what ``.``, ``^``, ``$`` or a space mean, and none
    of the constructs ``unsafe`` finds in its source."""
    rx = p.regex
    return (
        isinstance(rx.pattern, str)
        and rx.groups > 0
        and not rx.flags & (regex.DOTALL | regex.MULTILINE | regex.VERBOSE)
        and unsafe.search(rx.pattern) is None
    )


def lane_key(p: Pattern, text: str, m: Any) -> LaneKey:
    """The key the lane gives a line ``text`` that ``p`` matched as ``m``: the same as
    :class:`FirstLines` gives it."""
    return (p.id, (text[:1], *[g or "" for g in m.groups()]))


class FirstLines:
    """Keys of the claim lines of a block, for the patterns that need only their first line."""

    def __init__(self, lanes: dict[int, Pattern]) -> None:
        self._by_needle: dict[int, Pattern] = {}
        """Needle index -> its pattern, for the lane patterns of ``need = "first"``."""
        self._line_rx: dict[str, Any] = {}
        """Pattern id -> its line-anchored form: one match per line, the captures empty where
        the line does not start with NCCL's prefix or the pattern does not match it."""
        for nid, p in lanes.items():
            if p.need == "first" and line_local(p):
                self._by_needle[nid] = p
                self._line_rx[p.id] = regex.compile(
                    "^(?:" + _HEAD_AHEAD + "[^\\n]*?(?:" + p.regex.pattern + ")[^\\n]*|[^\\n]*)",
                    p.regex.flags | regex.MULTILINE,
                )

    def __bool__(self) -> bool:
        return bool(self._by_needle)

    def keys(
        self, data: bytes, per_line: dict[int, frozenset[int] | int], max_line: int
    ) -> dict[int, LaneKey]:
        """Line start -> lane key, for the lines of ``data`` holding one needle of a pattern
        read here (``per_line``: the needles of each candidate line) and at most ``max_line``
        bytes long."""
        by_needle = self._by_needle
        lines: dict[str, list[int]] = {}
        for s, nid in per_line.items():
            if type(nid) is int and nid in by_needle:
                lines.setdefault(by_needle[nid].id, []).append(s)
        out: dict[int, LaneKey] = {}
        for pid, starts in lines.items():
            starts.sort()
            spans, joined = plain_spans(data, starts, max_line)
            found = self._line_rx[pid].findall(joined)
            if len(found) != len(spans):  # pragma: no cover - one match per line, always
                continue
            out.update(zip([s for s, _e in spans], zip(repeat(pid), found), strict=True))
        return out


def plain_spans(
    data: bytes, starts: list[int], max_line: int
) -> tuple[list[tuple[int, int]], str]:
    """(start, end) of the lines of ``data`` at the sorted ``starts`` that are at most
    ``max_line`` bytes long and printable ASCII (what the lane reads), and those lines joined
    by newlines, decoded."""
    n = len(data)
    find = data.find
    spans = [(s, e if (e := find(b"\n", s)) >= 0 else n) for s in starts]
    spans = [(s, e) for s, e in spans if e - s <= max_line]
    joined = b"\n".join([data[s:e] for s, e in spans])
    if not joined.isascii() or _has_control(joined):
        # the lane reads a line with other characters on its own (a CRLF log: all)
        spans = [(s, e) for s, e in spans if _plain(data[s:e])]
        joined = b"\n".join([data[s:e] for s, e in spans])
    return spans, joined.decode("ascii")

"""Keep the events of one file bounded however many lines match.

A training log repeats some matched lines without end: every rank's iteration/loss line every
step, NCCL INFO facts, a warning per step. The events of one writer (its launcher prefixes)
and one pattern form a group; a group keeps its first ``KEEP`` and last ``KEEP`` events, and
past the first ``KEEP`` the events holding the smallest and largest value of each integer
capture (the highest iteration survives a restart that went back). The rest are counted, not
kept: the last of the first ``KEEP`` gets their number in ``repeats``, so the sum of
``repeats`` over the kept events is the exact number of matched lines.

Events whose captures name different processes or places (a pid, rank, host, exit code …)
are different facts, never repeats: those captures are part of the group's key.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

KEEP = 8
"""Events kept at each end of a group."""
IDENTITY_CAPTURES = frozenset(
    {
        "addr",
        "arg",
        "exc_type",
        "exitcode",
        "global_rank",
        "gpu",
        "hca",
        "host",
        "job_id",
        "local_rank",
        "node",
        "path",
        "pci",
        "peer",
        "pg_id",
        "pg_rank",
        "pid",
        "port",
        "rank",
        "signal",
        "src_rank",
        "step",
        "task",
        "xid",
    }
)
"""Captures that say *who* or *where*: events that differ in one are never folded together."""


class Item:
    """One matched line on its way to becoming an event (built lazily: most never are)."""

    __slots__ = ("event", "fields", "line", "make", "offset", "refs", "repeats")

    def __init__(
        self, line: int, offset: int, fields: dict[str, str], make: Callable[[], Any] | None
    ) -> None:
        self.line = line
        self.offset = offset
        self.fields = fields
        self.make = make
        """Builds the event (needs the current block); None once built."""
        self.event: Any = None
        self.repeats = 1
        self.refs = 0
        """Why a folded group still keeps it: in its tail, and each extreme it holds."""

    def build(self) -> Any:
        """The event, built once."""
        if self.make is not None:
            self.event = self.make()
            self.make = None
        return self.event


class _Group:
    __slots__ = ("extremes", "first", "n", "tail")

    def __init__(self) -> None:
        self.first: list[Item] = []
        self.tail: deque[Item] = deque(maxlen=KEEP)
        self.extremes: dict[tuple[str, bool], tuple[int, Item]] = {}
        self.n = 0


class RepeatBound:
    """The bounded groups of one file."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._groups: dict[Hashable, _Group] = {}
        self._fresh: list[Item] = []
        """Items offered since the last :meth:`settle` that are not built yet."""

    @staticmethod
    def key(writer: Hashable, pattern_id: str, role: str, fields: dict[str, str]) -> Hashable:
        """The group of an event: writer, pattern, role and the identity captures."""
        ident = [kv for kv in fields.items() if kv[0] in IDENTITY_CAPTURES]
        if len(ident) > 1:
            ident.sort()
        return (writer, pattern_id, role, tuple(ident))

    def offer(self, key: Hashable, item: Item) -> None:
        """Add one matched line to its group."""
        g = self._groups.get(key)
        if g is None:
            g = self._groups[key] = _Group()
        g.n += 1
        if len(g.first) < self.keep:
            g.first.append(item)
            item.build()
            return
        tail = g.tail
        if len(tail) == self.keep:
            tail[0].refs -= 1  # leaves the tail
        tail.append(item)
        item.refs += 1
        if item.make is not None:
            self._fresh.append(item)
        ext = g.extremes
        for k, v in item.fields.items():
            if v.isdigit():
                iv = int(v)
                for top in (True, False):
                    old = ext.get((k, top))
                    if old is None or (iv > old[0] if top else iv < old[0]):
                        if old is not None:
                            old[1].refs -= 1
                        ext[(k, top)] = (iv, item)
                        item.refs += 1

    def settle(self) -> None:
        """Build the pending items that are still kept (call before their block goes)."""
        for item in self._fresh:
            if item.refs > 0:
                item.build()
            else:
                item.make = None  # folded: never built
        self._fresh = []

    def events(self) -> list[Any]:
        """Every kept event in file order, with ``repeats`` set."""
        self.settle()
        out: list[Item] = []
        for g in self._groups.values():
            kept = {id(i): i for i in g.first}
            for i in g.tail:
                kept[id(i)] = i
            for _v, i in g.extremes.values():
                kept[id(i)] = i
            folded = g.n - len(kept)
            if folded:
                g.first[-1].repeats += folded
            out.extend(kept.values())
        out.sort(key=lambda i: (i.line, i.offset))
        evs = []
        for i in out:
            ev = i.build()
            ev.repeats = i.repeats
            evs.append(ev)
        return evs

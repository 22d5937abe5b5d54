"""Keep the events of one file bounded however many lines match.

A training log repeats some matched lines without end: every rank's iteration/loss line every
step, NCCL INFO facts, a warning per step. The events of one writer (its launcher prefixes)
and one pattern form a group; a group keeps its first ``KEEP`` and last ``KEEP`` events, and
the events holding the smallest and largest value of each integer capture (the highest
iteration survives a restart that went back; tracked from the group's first line, so an
extreme among the first lines costs no extra event). The rest are counted, not
kept: the last of the first ``KEEP`` gets their number in ``repeats``, so the sum of
``repeats`` over the kept events is the exact number of matched lines.

Events whose captures name different processes or places (a pid, rank, host, exit code …)
are different facts, never repeats: those captures are part of the group's key.

A fact said again is not a new event: a context line of an untagged pattern whose captures
equal those of its group's last kept line adds to that line's ``repeats`` (NCCL prints one
``Init COMPLETE`` line per communicator, 30 or more per process, most of them the same fact).
Tagged context lines (a ChildFailedError block's fields) are structure and stay one by one,
unless every tag is one of ``FOLDED_TAGS`` (lines code reads only as a whole: an advisory's).

A ``progress`` line (tag ``progress``: Megatron's iteration line, printed by every rank every
step) is folded harder: ``KEEP_PROGRESS`` at each end (its first and last line) and the
extremes.

A pattern that needs only the ``first`` line per identity (``Pattern.need``: NCCL's
communicator and channel lines, which say which rank a process holds in each communicator,
hundreds of times per process at ``NCCL_DEBUG=INFO``) keeps the first line of each distinct
set of captures per writer; the later ones only count (one dict lookup and an integer, no
item), so the sum of ``repeats`` stays the number of matched lines.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

from analyzer.catalog.vocabulary import FOLDED_TAGS
from analyzer.model.event import CONTEXT

KEEP = 8
"""Events kept at each end of a group."""
KEEP_PROGRESS = 1
"""Events kept at each end of a ``progress`` pattern's group (first, last; extremes apart)."""
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
    """One kept event, or the arguments to build it (most matched lines never are built)."""

    __slots__ = ("args", "event", "fields", "line", "offset", "repeats")

    def __init__(self, line: int, offset: int, fields: dict[str, str], args: Any) -> None:
        self.line = line
        self.offset = offset
        self.fields = fields
        self.args = args
        """What the builder needs to build the event; None once built."""
        self.event: Any = None
        self.repeats = 1


class _Group:
    __slots__ = ("first", "hi", "keep", "lo", "n", "tail", "touched")

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.first: list[Item] = []
        self.tail: deque[Item] = deque(maxlen=keep)
        self.hi: dict[str, tuple[int, Item]] = {}
        self.lo: dict[str, tuple[int, Item]] = {}
        self.n = 0
        self.touched = False


class RepeatBound:
    """The bounded groups of one file; ``build(args)`` makes an event from an item's args."""

    def __init__(self, build: Callable[[Any], Any], keep: int = KEEP) -> None:
        self.keep = keep
        self._build = build
        self._groups: dict[Hashable, _Group] = {}
        self._touched: list[_Group] = []
        """Groups past their first ``keep`` that got items since the last :meth:`settle`."""
        self._kinds: dict[str, tuple[tuple[str, ...], bool, int, bool]] = {}
        """Per pattern id, what its lines' groups need (see :meth:`_kind`)."""
        self._past: dict[Hashable, _Group] = {}
        """Groups :meth:`past_first` found past their first lines, by key."""

    def _kind(self, pattern: Any) -> tuple[tuple[str, ...], bool, int, bool]:
        """(identity captures, whether its lines are facts that repeat, lines kept at each
        end of its groups, whether only the first line per set of captures is kept) of a
        pattern, worked out once per pattern. A tagged context line is
        structure (a ChildFailedError block's fields) that code reads line by line, never a
        repeated fact, unless its tag is ``progress``."""
        kind = self._kinds.get(pattern.id)
        if kind is None:
            groups = getattr(pattern.regex, "groupindex", {})
            names = tuple(sorted(n for n in groups if n in IDENTITY_CAPTURES))
            tags = pattern.tags
            progress = "progress" in tags
            kind = self._kinds[pattern.id] = (
                names,
                pattern.role == CONTEXT and (progress or tags <= FOLDED_TAGS),
                KEEP_PROGRESS if progress else self.keep,
                getattr(pattern, "need", "every") == "first",
            )
        return kind

    def key(self, writer: Hashable, pattern: Any, role: str, fields: dict[str, str]) -> Hashable:
        """The group of an event: writer, pattern, role and the identity captures."""
        names = self._kind(pattern)[0]
        if not names:
            return (writer, pattern.id, role)
        return (writer, pattern.id, role, *[fields.get(n) for n in names])

    def offer(
        self,
        writer: Hashable,
        pattern: Any,
        fields: dict[str, str],
        line: int,
        offset: int,
        args: Any,
    ) -> _Group | None:
        """``add(key(writer, pattern, pattern.role, fields), Item(line, offset, fields,
        args))``: one matched line, in one call (the reader's hot path). Returns the group of
        a pattern that needs only its first line (its later lines may be counted straight
        into it: :meth:`repeat`), else None."""
        kind = self._kinds.get(pattern.id) or self._kind(pattern)
        names, context, keep, first = kind
        role = pattern.role
        if first:
            key: Hashable = (writer, pattern.id, role, *fields.items())
            g = self._groups.get(key)
            if g is not None:
                g.n += 1  # counted into the first line's repeats by ``events``
                return g
            self.add(key, Item(line, offset, fields, args), False, 1)
            return self._groups[key]
        if names:
            key = (writer, pattern.id, role, *[fields.get(n) for n in names])
        else:
            key = (writer, pattern.id, role)
        item = Item(line, offset, fields, args)
        g = self._groups.get(key)
        if g is None or len(g.first) < g.keep:
            self.add(key, item, context, keep)
            return None
        # past the group's first lines, straight to its tail (most matched lines of a
        # hit-dense log): no second lookup of the group
        self._to_tail(g, item, context)
        return None

    def past_first(self, writer: Hashable, pattern: Any) -> _Group | None:
        """The group of ``pattern``'s lines by ``writer`` once it keeps its first line, where
        ``pattern`` is a ``progress`` pattern without identity captures (one group per
        writer, the last line kept at its end): later lines may then be added in a run
        (:meth:`extend`). None otherwise."""
        key = (writer, pattern.id, pattern.role)
        g = self._past.get(key)
        if g is not None:
            return g
        names, context, keep, first = self._kinds.get(pattern.id) or self._kind(pattern)
        if names or first or not context or keep != KEEP_PROGRESS:
            return None
        g = self._groups.get(key)
        if g is None or len(g.first) < g.keep or g.tail.maxlen != 1:
            return None
        self._past[key] = g  # a group past its first lines stays so
        return g

    def extend(
        self,
        g: _Group,
        rows: list[tuple[str, ...]],
        names: tuple[tuple[str, int], ...],  # ``progresslines.Names``
        item_at: Callable[[int], Item],
    ) -> None:
        """Add a run of lines to a group :meth:`past_first` gave, with what :meth:`offer`
        would leave of them one by one: the count, the last line at the group's end, and the
        lines holding new extremes of an integer capture. ``rows``: each line's captures,
        ``names`` saying which capture each position holds ("" for none); ``item_at(j)``
        makes the item of line ``j``, asked only for the lines kept, in file order."""
        g.n += len(rows)
        last = len(rows) - 1
        plan: list[tuple[str, bool, int, int]] = []  # (capture, high end, value, line)
        his, los = g.hi, g.lo
        for k, i in names:
            col = [r[i] for r in rows]
            dec = list(map(str.isdecimal, col))
            if all(dec):
                ints: list[int | None] = list(map(int, col))
                got: list[int] = ints  # type: ignore[assignment]
            elif any(dec):  # rare: a capture that holds a number on some lines only
                ints, got = _some_ints(col, dec)
            else:
                continue
            hi, lo = max(got), min(got)
            cur = his.get(k)
            # one by one, the first line to reach a new extreme holds it (``_extremes``)
            if cur is None or hi > cur[0]:
                plan.append((k, True, hi, ints.index(hi)))
            if cur is None or lo < los[k][0]:
                plan.append((k, False, lo, ints.index(lo)))
        made = {j: item_at(j) for j in sorted({last, *[p[3] for p in plan]})}
        for k, high, v, j in plan:
            (his if high else los)[k] = (v, made[j])
        # the group's end holds one line: the last (``_to_tail``)
        g.tail.append(made[last])
        if not g.touched:
            g.touched = True
            self._touched.append(g)

    @staticmethod
    def repeat(group: _Group) -> None:
        """One more line of a ``first``-only group (what :meth:`offer` does with a line whose
        group exists)."""
        group.n += 1

    def add(
        self, key: Hashable, item: Item, context: bool = False, keep: int | None = None
    ) -> None:
        """Add one matched line to its group. A ``context`` line (of an untagged pattern)
        that captured what the group's last kept line captured adds only a count (NCCL
        prints the same ``Init COMPLETE`` fact once per communicator): among the first lines
        it is a repeat of that line, at the end it replaces the last kept one. ``keep``: the
        lines kept at each end of a new group (default: the bound's own)."""
        g = self._groups.get(key)
        if g is None:
            g = self._groups[key] = _Group(keep or self.keep)
        first = g.first
        if len(first) < g.keep:
            if context and first and item.fields == first[-1].fields:
                first[-1].repeats += 1
                return
            g.n += 1
            first.append(item)
            self._make(item)
            self._extremes(g, item)
            return
        self._to_tail(g, item, context)

    def _to_tail(self, g: _Group, item: Item, context: bool) -> None:
        """Add ``item`` to a group whose first lines are kept: a count, and the group's last
        lines (a ``context`` line that repeats the last one's captures replaces it)."""
        g.n += 1
        tail = g.tail
        if context and tail and item.fields == tail[-1].fields:
            tail[-1] = item
        else:
            tail.append(item)
        if not g.touched:
            g.touched = True
            self._touched.append(g)
        self._extremes(g, item)

    @staticmethod
    def _extremes(g: _Group, item: Item) -> None:
        """Make ``item`` its group's holder of each integer capture it holds a new extreme of."""
        his, los = g.hi, g.lo
        for k, v in item.fields.items():
            if v.isdecimal():
                iv = int(v)
                hi = his.get(k)
                if hi is None:  # the first value of ``k``: both ends at once
                    his[k] = los[k] = (iv, item)
                elif iv > hi[0]:
                    his[k] = (iv, item)
                elif iv < los[k][0]:  # (lo <= hi < iv otherwise: never both)
                    los[k] = (iv, item)

    def _make(self, item: Item) -> None:
        if item.args is not None:
            item.event = self._build(item.args)
            item.args = None

    def settle(self) -> None:
        """Build the items still kept (call before the block they point into goes)."""
        for g in self._touched:
            g.touched = False
            for item in g.tail:
                self._make(item)
            for _v, item in (*g.hi.values(), *g.lo.values()):
                self._make(item)
        self._touched = []

    def events(self) -> list[Any]:
        """Every kept event in file order, with ``repeats`` set."""
        self.settle()
        out: list[Item] = []
        for g in self._groups.values():
            kept = {id(i): i for i in g.first}
            for i in g.tail:
                kept[id(i)] = i
            for _v, i in (*g.hi.values(), *g.lo.values()):
                kept[id(i)] = i
            folded = g.n - len(kept)
            if folded:
                g.first[-1].repeats += folded
            out.extend(kept.values())
        out.sort(key=lambda i: (i.line, i.offset))
        evs = []
        for i in out:
            ev = i.event
            ev.repeats = i.repeats
            evs.append(ev)
        # Done: drop the groups and the builder (a reference cycle through ``build`` would keep
        # every folded item, and the block it points into, alive until the next full
        # garbage collection, which a job with many files and events rarely gets).
        self._groups = {}
        self._past = {}
        self._touched = []
        self._build = _finished
        return evs


def _finished(_args: Any) -> Any:
    raise RuntimeError("RepeatBound.events() was already called")


def _some_ints(col: list[str], dec: list[bool]) -> tuple[list[int | None], list[int]]:
    """(each value of ``col`` as an int, None where it is no number; the numbers alone), for
    a column whose values are numbers on some lines only (``dec``)."""
    ints = [int(v) if d else None for v, d in zip(col, dec, strict=True)]
    return ints, [v for v in ints if v is not None]

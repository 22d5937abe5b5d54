"""The rules that find a suspect in one process group, strongest first (``RULES``).

At each sequence id the ranks' op types, sizes and dtypes are compared and the odd one out is
named **by majority** (never "whoever differs from the first file"). At the group's frontier
(the highest sequence id any member enqueued) the members that never enqueued it are named,
and a member whose entry there was created long after the others' is late. A member that left
no dump is named only when nothing else was found.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import regex

from analyzer.flightrec.groups import Entry, Group
from analyzer.flightrec.load import DumpSet

LATE_MIN_S = 5.0
"""A rank is late when its entry was created at least this long after the others' ..."""
LATE_TIMEOUT_SHARE = 0.05
"""... and at least this share of the collective's timeout."""
_SIZES_AGREE = regex.compile(
    r"^_?(?:all_?reduce|allreduce_coalesced|broadcast|reduce|all_?gather(?:_into_tensor)?"
    r"|_?allgather_base|reduce_scatter(?:_tensor)?|_?reduce_scatter_base|barrier)$"
)
"""Ops whose sizes must agree on every rank (gather/scatter/all_to_all may differ)."""
KIND_ORDER = {"mismatch": 0, "missing": 1, "late": 2, "behind": 3, "no_dump": 4}
"""The kinds of suspect, strongest first."""


@dataclass
class Suspect:
    """What one rule found in one group: the rank (None when it names no single one), the
    collective, and why."""

    kind: str
    """``mismatch``, ``missing``, ``late``, ``behind`` or ``no_dump``."""
    rank: int | None
    group: Group
    seq: int
    reason: str
    ranks: list[int] | None = None
    """Every odd or lagging rank, when the finding has several."""
    op: str | None = None
    others_op: str | None = None
    entry: Entry | None = None
    """The suspect's own entry (its stack and record id), when it has one."""
    reports: frozenset[str] = field(default_factory=frozenset)
    """Which of ``ranks``, ``op``, ``others_op`` this kind of finding reports in its JSON."""

    def as_dict(self) -> dict[str, Any]:
        """JSON form (one of ``FrFinding.suspects``)."""
        out: dict[str, Any] = {"kind": self.kind, "rank": self.rank}
        if "ranks" in self.reports:
            out["ranks"] = self.ranks
        out["seq"] = self.seq
        for k in ("op", "others_op"):
            if k in self.reports:
                out[k] = getattr(self, k)
        return out | {"reason": self.reason, "group": self.group.name}

    def strength(self) -> tuple[int, bool]:
        """Sort key: the stronger kind first, then a named rank before none."""
        return KIND_ORDER[self.kind], self.rank is None


@dataclass
class GroupView:
    """One process group as the rules see it: its members with dumps and where each stopped."""

    group: Group
    ds: DumpSet
    dumped: list[int]
    """Members with a dump, in group-local order."""
    last: dict[int, int]
    """Each dumped member's highest seq id (0 without entries)."""
    first: dict[int, int]
    """Each dumped member's lowest seq id (0 without entries)."""
    frontier: int
    """The highest seq id any member enqueued: the collective the group is stuck in."""

    @cached_property
    def at_front(self) -> list[int]:
        """Dumped members that enqueued the frontier collective."""
        return [r for r in self.dumped if self.last[r] == self.frontier]

    @cached_property
    def behind(self) -> list[int]:
        """Dumped members that never enqueued the frontier collective, by rank."""
        return sorted(r for r in self.dumped if self.last[r] < self.frontier)

    @cached_property
    def front_op(self) -> str:
        """The frontier collective's op."""
        return self.front_entry(self.at_front[0]).op

    def front_entry(self, rank: int) -> Entry:
        """``rank``'s entry at the frontier (``rank`` is in ``at_front``)."""
        return self.group.entries[rank][self.frontier]


def view_of(g: Group, ds: DumpSet) -> GroupView | None:
    """The group's view, or None when no member left a dump with one of its entries."""
    dumped = [r for r in g.members if r in ds.dumps]
    if not dumped:
        return None
    last = {r: max(g.entries.get(r, {}), default=0) for r in dumped}
    first = {r: min(g.entries.get(r, {}), default=0) for r in dumped}
    frontier = max(last.values())
    if frontier <= 0:
        return None
    return GroupView(g, ds, dumped, last, first, frontier)


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------
def short_ranks(ranks: list[int]) -> str:
    """``0, 1, 2``; beyond eight ranks the first eight and the count."""
    if len(ranks) <= 8:
        return ", ".join(map(str, ranks))
    return ", ".join(map(str, ranks[:8])) + f", … ({len(ranks)} in all)"


def _s(n: int) -> str:
    return "s" if n > 1 else ""


def _odd_one(values: dict[int, Any]) -> tuple[list[int], Any, Any] | None:
    """Ranks whose value is not the majority's: (odd ranks, majority value, odd value)."""
    counts = Counter(values.values())
    if len(counts) < 2:
        return None
    (top, n_top), (_second, n_second) = counts.most_common(2)
    if n_top == n_second:
        return None
    odd = sorted(r for r, v in values.items() if v != top)
    return odd, top, values[odd[0]]


def _show(what: str, e: Entry) -> str:
    if what == "op":
        return e.op
    if what == "sizes":
        return f"{e.op} of sizes {e.sizes()}"
    dtypes = e.dtypes if isinstance(e.dtypes, tuple) else (e.dtypes,)
    return f"{e.op} of dtype {', '.join(map(str, dtypes)) or '?'}"


def _op_key(e: Entry) -> Any:
    return e.op


def _sizes_key(e: Entry) -> Any:
    return (e.in_sizes, e.out_sizes)


def _dtypes_key(e: Entry) -> Any:
    return e.dtypes


def _checks(here: dict[int, Entry]) -> list[tuple[str, Callable[[Entry], Any]]]:
    """What the ranks must agree on: the op, the sizes (for ops whose sizes must agree), the
    dtypes."""
    checks: list[tuple[str, Callable[[Entry], Any]]] = [("op", _op_key)]
    if all(_SIZES_AGREE.match(e.op) for e in here.values()):
        checks.append(("sizes", _sizes_key))
    checks.append(("dtypes", _dtypes_key))
    return checks


# ------------------------------------------------------------------------------------------
# mismatch
# ------------------------------------------------------------------------------------------
def _compared_seqs(v: GroupView) -> list[int]:
    """The seq ids present from where every dumped member's buffer starts (from 1 when one has
    no entries): the ids the dumps hold, never a range over their numbers (a dump is
    untrusted)."""
    g = v.group
    lo = max(v.first.values()) if all(v.first.values()) else 1
    return sorted({s for r in v.dumped for s in g.entries.get(r, {}) if s >= lo})


def _no_majority(g: Group, seq: int, what: str, here: dict[int, Entry]) -> Suspect:
    vals = ", ".join(f"rank {r}: {_show(what, e)}" for r, e in sorted(here.items()))
    return Suspect(
        "mismatch",
        None,
        g,
        seq,
        f"group {g.name} seq {seq}: the ranks disagree on {what} ({vals}) with no majority to "
        "say which is wrong",
    )


def _odd_ranks(
    g: Group, seq: int, what: str, here: dict[int, Entry], ranks: list[int], major: Entry
) -> Suspect:
    e = here[ranks[0]]
    return Suspect(
        "mismatch",
        ranks[0] if len(ranks) == 1 else None,
        g,
        seq,
        f"at collective #{seq} of group {g.name} rank{_s(len(ranks))} "
        f"{', '.join(map(str, ranks))} ran {_show(what, e)} while the other "
        f"{len(here) - len(ranks)} ran {_show(what, major)}",
        ranks=ranks,
        op=e.op,
        others_op=major.op,
        entry=e,
        reports=frozenset({"ranks", "op", "others_op"}),
    )


def _disagreement(g: Group, seq: int, here: dict[int, Entry]) -> Suspect | None:
    """The first check the ranks at ``seq`` fail: the odd minority, or no majority at all."""
    for what, key in _checks(here):
        values = {r: key(e) for r, e in here.items()}
        odd = _odd_one(values)
        if odd is None:
            if len(set(values.values())) > 1:
                return _no_majority(g, seq, what, here)
            continue
        ranks, top, _v = odd
        if len(ranks) * 2 >= len(here):
            continue
        major = next(x for x in here.values() if key(x) == top)
        return _odd_ranks(g, seq, what, here, ranks, major)
    return None


def mismatch(v: GroupView, found: list[Suspect]) -> list[Suspect]:
    """Applies at the earliest compared seq id that two or more dumped members recorded and
    on which they disagree (op, then sizes where they must agree, then dtypes): the odd
    minority (fewer than half of them; a rank only when it is alone), or no rank when no
    majority says which is wrong. Ends the group's search."""
    g = v.group
    for seq in _compared_seqs(v):
        here = {r: g.entries[r][seq] for r in v.dumped if seq in g.entries.get(r, {})}
        if len(here) < 2:
            continue
        s = _disagreement(g, seq, here)
        if s is not None:
            return [s]
    return []


# ------------------------------------------------------------------------------------------
# the frontier
# ------------------------------------------------------------------------------------------
def missing(v: GroupView, found: list[Suspect]) -> list[Suspect]:
    """Applies when exactly one dumped member never enqueued the frontier collective and it
    is fewer than half of them: that rank, with its last collective."""
    if len(v.behind) != 1 or len(v.behind) * 2 >= len(v.dumped):
        return []
    g, r = v.group, v.behind[0]
    last = v.last[r]
    return [
        Suspect(
            "missing",
            r,
            g,
            v.frontier,
            f"rank {r} never enqueued collective #{v.frontier} of group {g.name} "
            f"({v.front_op}) that the other {len(v.at_front)} wait in; its last was #{last}",
            op=g.op_at(r, last),
            others_op=v.front_op,
            entry=g.entries.get(r, {}).get(last),
            reports=frozenset({"op", "others_op"}),
        )
    ]


def behind(v: GroupView, found: list[Suspect]) -> list[Suspect]:
    """Applies when several dumped members, fewer than half, never enqueued the frontier
    collective: the one furthest behind (no rank when several tie)."""
    lag = v.behind
    if len(lag) < 2 or len(lag) * 2 >= len(v.dumped):
        return []
    g = v.group
    low = min(v.last[r] for r in lag)
    lowest = [r for r in lag if v.last[r] == low]
    furthest = (
        f"rank {lowest[0]} is furthest behind (last #{low})"
        if len(lowest) == 1
        else f"ranks {', '.join(map(str, lowest))} are furthest behind (last #{low})"
    )
    return [
        Suspect(
            "behind",
            lowest[0] if len(lowest) == 1 else None,
            g,
            v.frontier,
            f"ranks {', '.join(map(str, lag))} never enqueued collective #{v.frontier} of group "
            f"{g.name} ({v.front_op}); {furthest}",
            ranks=lag,
            others_op=v.front_op,
            entry=g.entries.get(lowest[0], {}).get(low),
            reports=frozenset({"ranks", "others_op"}),
        )
    ]


def few_ahead(v: GroupView, found: list[Suspect]) -> list[Suspect]:
    """Applies when half or more of the dumped members never enqueued the frontier
    collective: no single rank is behind the rest (the few at the front may have run
    ahead), so no rank is named."""
    if not v.behind or len(v.behind) * 2 < len(v.dumped):
        return []
    front = v.at_front
    return [
        Suspect(
            "behind",
            None,
            v.group,
            v.frontier,
            f"only rank{_s(len(front))} {short_ranks(front)} enqueued collective "
            f"#{v.frontier} of group {v.group.name}; the other {len(v.behind)} stopped earlier, "
            "so no single rank is behind the rest (a rank can run ahead)",
        )
    ]


def _created_at_front(v: GroupView) -> dict[int, int]:
    """When each member at the frontier created its entry there (ns), where the dump says."""
    created: dict[int, int] = {}
    for r in v.at_front:
        ns = v.front_entry(r).created_ns
        if ns is not None:
            created[r] = ns
    return created


def _late_one(v: GroupView, r: int, gap: float, timeout: float) -> Suspect:
    e = v.front_entry(r)
    past = f", past their {timeout:g} s timeout" if timeout and gap > timeout else ""
    return Suspect(
        "late",
        r,
        v.group,
        v.frontier,
        f"rank {r} enqueued collective #{v.frontier} of group {v.group.name} ({e.op}) "
        f"{gap:.1f} s after the last of the others{past}",
        op=e.op,
        entry=e,
        reports=frozenset({"op"}),
    )


def late(v: GroupView, found: list[Suspect]) -> list[Suspect]:
    """Applies when three or more members at the frontier have creation times and one created
    its entry at least ``LATE_MIN_S`` and ``LATE_TIMEOUT_SHARE`` of the timeout after the
    last of the others: every such rank."""
    created = _created_at_front(v)
    if len(created) < 3:
        return []
    timeout = max((v.front_entry(r).timeout_ms or 0) for r in created) / 1000
    limit = max(LATE_MIN_S, LATE_TIMEOUT_SHARE * timeout)
    out = []
    for r, t in sorted(created.items()):
        gap = (t - max(x for q, x in created.items() if q != r)) / 1e9
        if gap >= limit:
            out.append(_late_one(v, r, gap, timeout))
    return out


def no_dump(v: GroupView, found: list[Suspect]) -> list[Suspect]:
    """Applies when no other rule found anything in the group and exactly one member left no
    dump: it probably died or aborted first."""
    g = v.group
    without = [r for r in g.members if r not in v.ds.dumps]
    if len(without) != 1 or found:
        return []
    r = without[0]
    return [
        Suspect(
            "no_dump",
            r,
            g,
            v.frontier,
            f"rank {r} is the only member of group {g.name} that left no dump, and the "
            f"{len(v.dumped)} dumps agree up to collective #{v.frontier} ({v.front_op}): it "
            "probably died or aborted first (its log should say how)",
            others_op=v.front_op,
            reports=frozenset({"others_op"}),
        )
    ]


# ------------------------------------------------------------------------------------------
# the registry
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    """A rule's id, its check (a group's view and what the earlier rules found there ->
    suspects) and whether a suspect from it ends the group's search."""

    id: str
    check: Callable[[GroupView, list[Suspect]], list[Suspect]]
    conclusive: bool = False


RULES: tuple[Rule, ...] = (
    Rule("mismatch", mismatch, conclusive=True),
    Rule("few-ahead", few_ahead),
    Rule("missing", missing),
    Rule("behind", behind),
    Rule("late", late),
    Rule("no-dump", no_dump),
)
"""In order: a later rule sees what the earlier ones found in the same group."""


def group_findings(g: Group, ds: DumpSet) -> tuple[list[Suspect], int | None]:
    """Suspects in one group (in the rules' order) and the group's stuck (frontier) seq."""
    v = view_of(g, ds)
    if v is None:
        return [], None
    found: list[Suspect] = []
    for rule in RULES:
        new = rule.check(v, found)
        found += new
        if new and rule.conclusive:
            break
    return found, v.frontier

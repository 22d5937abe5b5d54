"""The per-rank sequence table: where each member of each group stopped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analyzer.flightrec.groups import Entry, Group, ordered
from analyzer.flightrec.load import Dump, DumpSet, status_int


@dataclass
class RankState:
    """One row of the per-rank sequence table."""

    rank: int
    group: str
    local_rank: int | None
    last_enqueued: int | None
    last_started: int | None
    last_completed: int | None
    op_at_stuck: str | None
    sizes_at_stuck: str | None
    created_offset_s: float | None
    """Seconds after the earliest member created the entry at the stuck seq."""
    dump: str | None

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return dict(self.__dict__)


def _first_created(g: Group, seq: int | None) -> int | None:
    """When the earliest member created its entry ``seq`` (ns), where the dumps say."""
    if seq is None:
        return None
    created = [
        ns for r in g.entries if seq in g.entries[r] and (ns := g.entries[r][seq].created_ns)
    ]
    return min(created) if created else None


def _counters(g: Group, d: Dump | None, rank: int) -> tuple[int | None, int | None, int | None]:
    """The dump's last enqueued, started and completed collective of the group (a negative
    count is none; without the status, enqueued is the rank's last entry)."""
    if d is None:
        return None, None, None
    pid = next(iter(sorted(g.pg_ids)), g.name)
    enq = status_int(d, pid, "last_enqueued_collective")
    started = status_int(d, pid, "last_started_collective")
    done = status_int(d, pid, "last_completed_collective")
    mine = g.entries.get(rank, {})
    if enq is None and mine:
        enq = max(mine)
    return (
        enq,
        started if started is None or started >= 0 else None,
        done if done is None or done >= 0 else None,
    )


def _offset(e: Entry | None, t0: int | None) -> float | None:
    if e is not None and e.created_ns and t0:
        return round((e.created_ns - t0) / 1e9, 3)
    return None


def _rank_state(g: Group, rank: int, seq: int | None, t0: int | None, ds: DumpSet) -> RankState:
    d = ds.dumps.get(rank)
    enq, started, done = _counters(g, d, rank)
    e = g.entries.get(rank, {}).get(seq) if seq is not None else None
    return RankState(
        rank=rank,
        group=g.name,
        local_rank=g.local_rank(rank),
        last_enqueued=enq,
        last_started=started,
        last_completed=done,
        op_at_stuck=e.op if e else None,
        sizes_at_stuck=e.sizes() if e else None,
        created_offset_s=_offset(e, t0),
        dump=d.path if d else None,
    )


def rank_table(
    groups: dict[str, Group], stuck: dict[str, int | None], ds: DumpSet
) -> list[RankState]:
    """One row per member of each group (the default group first), at the group's stuck seq."""
    rows: list[RankState] = []
    for g in ordered(groups.values()):
        s = stuck.get(g.name)
        t0 = _first_created(g, s)
        rows += [_rank_state(g, r, s, t0, ds) for r in g.members]
    return rows

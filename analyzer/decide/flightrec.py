"""Join the Flight Recorder evidence to the logs: event-table rows, the hang culprit, a table.

A row's ``file`` is the dump's path; ``line`` is the culprit entry's ``record_id + 1`` (its
place in the dump), 0 for the per-rank rows.

The dumps found by discovery are read and compared before the diagnosis
(``analyzer.flightrec.analyze.read_finding``, called by ``analyzer.api.analyze``); what they
show becomes ``context`` rows of the event table with ``source = "flight_recorder"`` (one per
rank of the stuck group, one for the culprit). The culprit's row is a ``CulpritEvent``: it
carries the typed finding (``FrFinding``). The decision takes the finding as its one Flight
Recorder input (``ReadSummary.flight_recorder``); the hang reasoning gets the culprit's event
from it (``culprit_event``), never from the row's text captures. Context rows never become a
verdict by themselves: the dumps name the culprit of a hang the logs show.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from analyzer.flightrec.analyze import FrFinding, RankState
from analyzer.model.event import Event, Role

SOURCE = "flight_recorder"
CULPRIT_PREFIX = "flight_recorder.culprit."
"""The culprit row's pattern id is this and the finding's kind (shown in the event table)."""
STATE_PATTERN = "flight_recorder.rank_state"


@dataclass(frozen=True, slots=True)
class CulpritEvent(Event):
    """The event row in which the dumps name a culprit, with the typed finding behind it
    (``finding.rank`` is the row's rank; ``finding.kind``, ``reason`` and ``confidence`` are
    read from it, never parsed back from the row's captures)."""

    finding: FrFinding = field(kw_only=True)


def _where(rows: list[Event], rank: int) -> dict[str, Any]:
    out: dict[str, Any] = {"node": None, "node_index": None, "host": None, "local_rank": None}
    for r in rows:
        if r.rank == rank:
            for k in out:
                if out[k] is None and getattr(r, k) is not None:
                    out[k] = getattr(r, k)
    return out


def _captures(captures: dict[str, str | None]) -> dict[str, str | None]:
    return {"source": SOURCE, **captures}


def _state_row(s: RankState, rows: list[Event]) -> Event:
    """A context row with one rank's place in the stuck group."""
    text = (
        f"Flight Recorder: rank {s.rank} group {s.group}: last enqueued "
        f"{_n(s.last_enqueued)}, started {_n(s.last_started)}, completed "
        f"{_n(s.last_completed)}; at the stuck collective: {s.op_at_stuck or 'nothing'}"
    )
    return Event(
        file=s.dump or "(no dump)",
        line=0,
        pattern_id=STATE_PATTERN,
        category="collective_timeout",
        role=Role.CONTEXT.value,
        text=text,
        **_where(rows, s.rank),
        rank=s.rank,
        title="Flight Recorder rank state",
        message=text,
        captures=_captures(
            {
                "fr_group": s.group,
                "last_enqueued": _s(s.last_enqueued),
                "fr_last_started": _s(s.last_started),
                "fr_last_completed": _s(s.last_completed),
                "op": s.op_at_stuck,
            }
        ),
    )


def _culprit_event(f: FrFinding, rank: int, kind: str, rows: list[Event]) -> CulpritEvent:
    """The context row naming the dumps' culprit ``rank`` (``f.rank``), with its stack."""
    text = f"Flight Recorder: {f.reason}"
    return CulpritEvent(
        file=f.dump_files.get(rank) or next(iter(f.dump_files.values()), "(dumps)"),
        line=f.record_id + 1 if f.record_id is not None else 0,
        pattern_id=CULPRIT_PREFIX + kind,
        category="collective_timeout",
        role=Role.CONTEXT.value,
        text=text,
        **_where(rows, rank),
        rank=rank,
        title=f"Flight Recorder: rank {rank} {kind.replace('_', ' ')}",
        message=text,
        traceback="\n".join(f.stack) or None,
        captures=_captures(
            {
                "fr_kind": kind,
                "fr_reason": f.reason,
                "fr_confidence": f"{f.confidence:.2f}",
                "fr_group": f.group,
                "seq": _s(f.seq),
                "op": f.op,
            }
        ),
        finding=f,
    )


def evidence_rows(f: FrFinding, rows: list[Event]) -> list[Event]:
    """Event-table rows for the dumps' picture and culprit."""
    out: list[Event] = [_state_row(s, rows) for s in f.table]
    culprit = culprit_event(f, rows)
    if culprit is not None:
        out.append(culprit)
    return out


def culprit_event(f: FrFinding | None, rows: list[Event]) -> CulpritEvent | None:
    """The event in which the dumps name a culprit, made from the finding (the event table
    holds the same row); None when they name none. The hang reasoning gets it this way, from
    the one Flight Recorder input of the decision (``ReadSummary.flight_recorder``)."""
    if f is None or f.rank is None or f.kind is None:
        return None
    return _culprit_event(f, f.rank, f.kind, rows)


def culprit_row(rows: list[Event]) -> CulpritEvent | None:
    """The row of the event table in which the dumps name a culprit, if any (for readers of
    the table; the decision takes ``culprit_event`` of the finding)."""
    return next((r for r in rows if isinstance(r, CulpritEvent)), None)


def table_lines(f: FrFinding | None, width: int = 100) -> list[str]:
    """The compact per-rank sequence table and the dumps' verdict, as plain lines."""
    if f is None:
        return []
    head = f"{'rank':>5} {'group':<8} {'enqueued':>8} {'started':>8} {'completed':>9}  at stuck seq"
    if f.seq is not None:
        head += f" (#{f.seq})"
    shown = _shown(f)
    lines = [head, *(_table_line(s, f.rank)[:width] for s in shown)]
    if len(shown) < len(f.table):
        lines.append(f"… {len(f.table) - len(shown)} more rows (see --format json)")
    return lines + _verdict_lines(f)


def _shown(f: FrFinding) -> list[RankState]:
    """The table's rows; in a big job the culprit and the ranks that differ from the majority."""
    if len(f.table) <= 64:
        return f.table
    keep = {f.rank} | {s.rank for s in f.table if s.op_at_stuck is None}
    return [s for s in f.table if s.rank in keep][:64]


def _table_line(s: RankState, culprit: int | None) -> str:
    at = s.op_at_stuck or ("no dump" if s.dump is None else "—")
    if s.op_at_stuck and s.sizes_at_stuck:
        at += f" {s.sizes_at_stuck}"
    if s.created_offset_s:
        at += f" (+{s.created_offset_s:g} s)"
    mark = "  ← culprit" if s.rank == culprit else ""
    return (
        f"{s.rank:>5} {s.group[:8]:<8} {_n(s.last_enqueued):>8} {_n(s.last_started):>8} "
        f"{_n(s.last_completed):>9}  {at}{mark}"
    )


def _verdict_lines(f: FrFinding) -> list[str]:
    """The culprit (or why none), the problems, the notes and the dumps' versions."""
    lines = [
        f"culprit: rank {f.rank} ({f.kind}): {f.reason}"
        if f.rank is not None
        else f"no culprit: {f.reason}"
    ]
    lines += [f"problem: {p}" for p in f.problems]
    lines += [f"note: {n}" for n in f.notes]
    if f.versions:
        lines.append(
            f"dump version {', '.join(f.versions)}; dumps from ranks {_ranks(f.ranks_with_dumps)}"
        )
    return lines


def _n(v: int | None) -> str:
    return "—" if v is None else str(v)


def _s(v: int | None) -> str | None:
    return None if v is None else str(v)


def _ranks(rs: list[int]) -> str:
    if len(rs) <= 12:
        return ", ".join(map(str, rs)) or "none"
    return f"{rs[0]}–{rs[-1]} ({len(rs)})"

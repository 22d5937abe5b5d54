"""Join the Flight Recorder evidence to the logs: event-table rows, the hang culprit, a table.

A row's ``file`` is the dump's path; ``line`` is the culprit entry's ``record_id + 1`` (its
place in the dump), 0 for the per-rank rows.

The dumps found by discovery are read and compared (``analyze_dumps``); what they show becomes
``context`` rows of the event table with ``source = "flight_recorder"`` (one per rank of the
stuck group, one for the culprit), which the hang reasoning reads (``culprit_row``). Context
rows never become a verdict by themselves: the dumps name the culprit of a hang the logs show.
"""

from __future__ import annotations

from typing import Any

from analyzer.flightrec.analyze import FrFinding, analyze_dumps
from analyzer.flightrec.load import load_dumps
from analyzer.model.event import Event

SOURCE = "flight_recorder"
CULPRIT_PREFIX = "flight_recorder.culprit."
STATE_PATTERN = "flight_recorder.rank_state"


def world_of(rows: list[Event], world_size: Any) -> set[int]:
    """Every rank of the job: from the world size when known, else the ranks the logs name."""
    if isinstance(world_size, int) and 0 < world_size <= 1_000_000:
        return set(range(world_size))
    return {r.rank for r in rows if r.rank is not None}


def read_flight_recorder(
    dumps: list[tuple[Any, str]], rows: list[Event], world_size: Any
) -> FrFinding | None:
    """Load and compare the dumps (None when there are none)."""
    if not dumps:
        return None
    return analyze_dumps(load_dumps(dumps), world_of(rows, world_size))


def _where(rows: list[Event], rank: int) -> dict[str, Any]:
    out: dict[str, Any] = {"node": None, "node_index": None, "host": None, "local_rank": None}
    for r in rows:
        if r.rank == rank:
            for k in out:
                if out[k] is None and getattr(r, k) is not None:
                    out[k] = getattr(r, k)
    return out


def _event(where: dict[str, Any], captures: dict[str, str | None], **kw: Any) -> Event:
    """A context event of the dumps (``source = flight_recorder``) at ``where``."""
    return Event(
        line=kw.pop("line", 0),
        category="collective_timeout",
        role="context",
        captures={"source": SOURCE, **captures},
        **where,
        **kw,
    )


def evidence_rows(f: FrFinding, rows: list[Event]) -> list[Event]:
    """Event-table rows for the dumps' picture and culprit."""
    out: list[Event] = []
    for s in f.table:
        text = (
            f"Flight Recorder: rank {s.rank} group {s.group}: last enqueued "
            f"{_n(s.last_enqueued)}, started {_n(s.last_started)}, completed "
            f"{_n(s.last_completed)}; at the stuck collective: {s.op_at_stuck or 'nothing'}"
        )
        out.append(
            _event(
                {**_where(rows, s.rank), "rank": s.rank},
                {
                    "fr_group": s.group,
                    "last_enqueued": _s(s.last_enqueued),
                    "fr_last_started": _s(s.last_started),
                    "fr_last_completed": _s(s.last_completed),
                    "op": s.op_at_stuck,
                },
                file=s.dump or "(no dump)",
                pattern_id=STATE_PATTERN,
                title="Flight Recorder rank state",
                text=text,
                message=text,
            )
        )
    if f.rank is not None and f.kind is not None:
        text = f"Flight Recorder: {f.reason}"
        out.append(
            _event(
                {**_where(rows, f.rank), "rank": f.rank},
                {
                    "fr_kind": f.kind,
                    "fr_reason": f.reason,
                    "fr_confidence": f"{f.confidence:.2f}",
                    "fr_group": f.group,
                    "seq": _s(f.seq),
                    "op": f.op,
                },
                file=f.dump_files.get(f.rank) or next(iter(f.dump_files.values()), "(dumps)"),
                line=f.record_id + 1 if f.record_id is not None else 0,
                pattern_id=CULPRIT_PREFIX + f.kind,
                title=f"Flight Recorder: rank {f.rank} {f.kind.replace('_', ' ')}",
                text=text,
                message=text,
                traceback="\n".join(f.stack) or None,
            )
        )
    return out


def culprit_row(rows: list[Event]) -> Event | None:
    """The row in which the dumps name a culprit, if any."""
    for r in rows:
        if str(r.pattern_id or "").startswith(CULPRIT_PREFIX) and r.rank is not None:
            return r
    return None


def table_lines(f: FrFinding | None, width: int = 100) -> list[str]:
    """The compact per-rank sequence table and the dumps' verdict, as plain lines."""
    if f is None:
        return []
    lines = []
    head = f"{'rank':>5} {'group':<8} {'enqueued':>8} {'started':>8} {'completed':>9}  at stuck seq"
    if f.seq is not None:
        head += f" (#{f.seq})"
    lines.append(head)
    shown = f.table
    if len(shown) > 64:  # a big job: the culprit and the ranks that differ from the majority
        keep = {f.rank} | {s.rank for s in shown if s.op_at_stuck is None}
        shown = [s for s in shown if s.rank in keep][:64]
    for s in shown:
        mark = "  ← culprit" if s.rank == f.rank else ""
        at = s.op_at_stuck or ("no dump" if s.dump is None else "—")
        if s.op_at_stuck and s.sizes_at_stuck:
            at += f" {s.sizes_at_stuck}"
        if s.created_offset_s:
            at += f" (+{s.created_offset_s:g} s)"
        line = (
            f"{s.rank:>5} {s.group[:8]:<8} {_n(s.last_enqueued):>8} {_n(s.last_started):>8} "
            f"{_n(s.last_completed):>9}  {at}{mark}"
        )
        lines.append(line[:width])
    if len(shown) < len(f.table):
        lines.append(f"… {len(f.table) - len(shown)} more rows (see --format json)")
    verdict = (
        f"culprit: rank {f.rank} ({f.kind}): {f.reason}"
        if f.rank is not None
        else f"no culprit: {f.reason}"
    )
    lines.append(verdict)
    for p in f.problems:
        lines.append(f"problem: {p}")
    for n in f.notes:
        lines.append(f"note: {n}")
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

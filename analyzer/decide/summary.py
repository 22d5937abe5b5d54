"""What the diagnosis says beside its verdict: the downstream symptoms, the phase, the ranks."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from analyzer.catalog.vocabulary import Category, info
from analyzer.decide import wording
from analyzer.decide.verdict import RankRow, Verdict
from analyzer.model.event import CONTEXT, ROOT, Event
from analyzer.shape.facts import JobFacts
from analyzer.util.timefmt import iso


def _downstream(rows: Iterable[Event], v: Verdict) -> dict[str, list[Event]]:
    """The events after the verdict's, by category: not context, not the verdict's own line,
    and not the root restated (the same pattern on the same rank, or with no rank — a copy in
    another stream, the job-level twin of a step-level line — or on any rank when the verdict
    names none, every rank having failed the same way)."""
    groups: dict[str, list[Event]] = defaultdict(list)
    ev = v.evidence[0] if v.evidence else None
    for r in rows:
        if r.role == CONTEXT:
            continue
        if ev is not None and r.file == ev.file and r.line == ev.line:
            continue
        if r.pattern_id == v.pattern_id and (v.rank is None or r.rank in (v.rank, None)):
            continue
        groups[r.category].append(r)
    return groups


def _what(rs: list[Event]) -> str:
    """The title of a group of symptoms, with its most common collective."""
    top = rs[0]
    what = top.title or top.pattern_id
    ops = Counter((r.cap("op"), r.cap("seq")) for r in rs if r.cap("op"))
    if ops:
        (op, seq), _n = ops.most_common(1)[0]
        what += f" on {op}" + (f" SeqNum {seq}" if seq else "")
    return what


def _later(rs: list[Event], v: Verdict) -> str:
    """`` 12 s later`` when the group began over a second after the verdict."""
    times = [r.time for r in rs if r.time is not None]
    if times and v.time:
        delta = min(times) - v.time
        if delta.total_seconds() > 1:
            return f" {human(delta)} later"
    return ""


def summarise(rows: Iterable[Event], v: Verdict) -> tuple[dict[str, Any], list[str]]:
    """The symptoms downstream of verdict ``v`` by category (for JSON) and as lines."""
    out: dict[str, Any] = {}
    lines: list[str] = []
    groups = _downstream(rows, v)
    for cat, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        ranks = {r.rank for r in rs if r.rank is not None}
        times = [r.time for r in rs if r.time is not None]
        pats: Counter[str] = Counter()
        for r in rs:
            pats[r.pattern_id] += r.repeats or 1
        n = pats.total()  # matched lines: a kept event stands for its folded repeats too
        out[cat] = {
            "ranks": len(ranks),
            "events": n,
            "first_time": iso(min(times)) if times else None,
            "patterns": dict(pats.most_common(5)),
        }
        lines.append(
            wording.downstream_line(wording.ranks_phrase(len(ranks)), _what(rs), _later(rs, v), n)
        )
    return out, lines


def human(d: timedelta) -> str:
    """A duration as a person says it: ``45 s``, ``12 min``, ``2 h 5 min``."""
    s = int(d.total_seconds())
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min"


def phase(v: Verdict, facts: JobFacts) -> str | None:
    """The phase the job was in when it failed (None when nothing failed)."""
    if v.category == Category.NONE:
        return None
    if facts.checkpoint_saving:
        return "checkpoint save"
    if info(v.category).startup or facts.last_iteration is None:
        return "start-up"
    if facts.last_iteration <= 1:
        return "first iteration"
    return "training"


def logged_order(r: Event) -> tuple[datetime, bool, str, int]:
    """A rank's events in the order ``events --by-rank`` reads them for its first event
    (``shape.events.by_rank``): time (undated last), a root event before a symptom of the same
    time, then file and line; so the grid, the timeline and JSON's ``ranks`` agree with it."""
    return (r.time or datetime.max, r.role != ROOT, r.file, r.line)


def rank_table(rows: Sequence[Event], universe: Iterable[int]) -> dict[int, RankRow]:
    """Each rank's first event (node, role, category, time) for the rank grid, and an empty
    row for every other rank of the job."""
    ranks: dict[int, RankRow] = {}
    for r in sorted((r for r in rows if r.role != CONTEXT), key=logged_order):
        if r.rank is not None and r.rank not in ranks:
            ranks[r.rank] = RankRow(r.node, r.role, r.category, r.time)
    for rk in universe:
        ranks.setdefault(rk, RankRow())
    return ranks

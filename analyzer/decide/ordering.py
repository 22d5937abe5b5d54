"""Which event came first: time with a tolerance for clock skew, then evidence, then stream."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from analyzer.catalog.vocabulary import strength
from analyzer.model.event import Event

SKEW = timedelta(seconds=2)
"""Events this close count as simultaneous (clock skew between hosts, 1 s stamps)."""
_FAR_FUTURE = datetime.max


def key(r: Event) -> tuple[datetime, int, str, int]:
    """Sort key: time (undated last), stronger evidence first, then file and line."""
    return (r.time or _FAR_FUTURE, -strength(r.category), r.file, r.line)


def earliest(rows: Iterable[Event]) -> Event:
    """Earliest by time within the skew tolerance, then strength, then stream order."""
    rows = list(rows)
    timed = [(r.time, r) for r in rows if r.time is not None]
    if not timed:
        return min(rows, key=lambda r: (-strength(r.category), r.file, r.line))
    t0 = min(t for t, _r in timed)
    window = [(t, r) for t, r in timed if t - t0 <= SKEW]
    return min(window, key=lambda tr: (-strength(tr[1].category), tr[0], tr[1].file, tr[1].line))[1]


def first_per_rank(rows: Iterable[Event]) -> list[Event]:
    """Each rank's first event (by ``key``), in order."""
    firsts: dict[int, Event] = {}
    for r in sorted(rows, key=key):
        if r.rank is not None:
            firsts.setdefault(r.rank, r)
    return sorted(firsts.values(), key=key)


def signature(r: Event) -> tuple[str, str]:
    """What makes two events the same failure: the pattern and the exception type."""
    return (r.pattern_id, r.cap("exc_type") or "")


def clearly_first(same: list[Event] | tuple[Event, ...]) -> bool:
    """Whether the first of several copies of one failure came before the second by more than
    the skew tolerance (so the first rank to hit it can be named)."""
    if len(same) < 2:
        return False
    t0, t1 = same[0].time, same[1].time
    return t0 is not None and t1 is not None and t1 - t0 > SKEW

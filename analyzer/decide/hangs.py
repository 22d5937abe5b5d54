"""Find the culprit of a hang when only timeouts were logged.

Evidence, strongest first: a desync report naming lagging ranks; ``monitored_barrier``
naming a rank; a rank whose op type differs at the same sequence number (collective
mismatch); the one rank with the lowest "last enqueued" work; the one rank of the job missing
from every collective report. Without such evidence the culprit stays unnamed.

A finding records the rule that named the culprit (``HangFinding.rule``) and its facts
(``detail``); ``analyzer.decide.wording.hang_reason`` words them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import regex

from analyzer.decide.wording import hang_reason
from analyzer.model.event import Event

if TYPE_CHECKING:
    from analyzer.decide.flightrec import CulpritEvent

_INTS = regex.compile(r"\d+")
_C10D_CALL = regex.compile(r'distributed_c10d\.py", line \d+, in (\w+)')
"""The torch.distributed function a traceback's collective call went through."""


@dataclass
class HangFinding:
    """The culprit (or None), the rule that found it and that rule's facts."""

    rank: int | None
    rule: str
    """One of ``explain.HANG_REASONS``: desync, op-mismatch, call-mismatch, lowest-enqueued,
    missing, dumps (the Flight Recorder), none."""
    confidence: float
    rows: list[Event]
    detail: dict[str, Any]

    @property
    def reason(self) -> str:
        """The finding in words (``explain.hang_reason``)."""
        return hang_reason(self.rule, self.detail)


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def find_culprit(
    timeouts: list[Event], universe: set[int], dump: CulpritEvent | None = None
) -> HangFinding:
    """Compare the ranks' timeout reports; ``universe`` is every rank the job had; ``dump`` is
    the event row in which the Flight Recorder dumps name a culprit (the strongest evidence)."""
    logs = _from_logs(timeouts, universe)
    if dump is None:
        return logs
    return from_dumps(dump, logs)


def from_dumps(dump: CulpritEvent, logs: HangFinding) -> HangFinding:
    """The dumps' culprit (the typed finding ``dump`` carries), with what the logs alone said
    beside it."""
    rank, fr = dump.rank, dump.finding
    detail: dict[str, Any] = {
        "rank": rank,
        "dumps": fr.kind,
        "shown": fr.reason,
        "logs_rank": logs.rank,
        "logs_rule": logs.rule,
        "logs_detail": logs.detail,
    }
    conf = round(fr.confidence, 2)
    if logs.rank == rank:
        conf = min(0.95, conf + 0.05)
    return HangFinding(rank, "dumps", conf, [dump, *logs.rows], detail)


def _from_logs(timeouts: list[Event], universe: set[int]) -> HangFinding:
    """The culprit from the timeout lines alone."""
    reporting = {r.rank for r in timeouts if r.rank is not None}
    # 1. Desync debug / monitored_barrier name the lagging rank(s) directly.
    for r in timeouts:
        lag = r.cap("lagging_ranks")
        if lag:
            ranks = sorted({int(x) for x in _INTS.findall(lag)})
            if len(ranks) == 1:
                return HangFinding(ranks[0], "desync", 0.8, [r], {"rank": ranks[0]})
    # 2. Collective mismatch: same sequence number, different op type.
    by_seq: dict[tuple[str | None, int], dict[int, str]] = defaultdict(dict)
    for r in timeouts:
        seq, op, rk = _int(r.cap("seq")), r.cap("op"), r.rank
        if seq is not None and op and rk is not None:
            by_seq[(r.cap("pg_id"), seq)][rk] = op
    for (_pg, seq), ops in sorted(by_seq.items(), key=lambda kv: kv[0][1]):
        counts = Counter(ops.values())
        if len(counts) > 1 and len(ops) >= 3:
            majority, _n = counts.most_common(1)[0]
            odd = [rk for rk, op in ops.items() if op != majority]
            if len(odd) == 1:
                rk = odd[0]
                rows = [r for r in timeouts if r.rank == rk][:1]
                return HangFinding(
                    rk,
                    "op-mismatch",
                    0.75,
                    rows,
                    {"rank": rk, "seq": seq, "op": ops[rk], "others_op": majority},
                )
    # 2b. Collective mismatch from the tracebacks (gloo): the c10d function each rank's
    # timed-out call went through; only the culprit's names the other collective.
    calls: dict[int, str] = {}
    for r in timeouts:
        found = _C10D_CALL.findall(r.traceback or "")
        if found and r.rank is not None:
            calls.setdefault(r.rank, found[-1])
    counts = Counter(calls.values())
    if len(calls) >= 3 and len(counts) > 1:
        majority, n_major = counts.most_common(1)[0]
        odd = [rk for rk, op in calls.items() if op != majority]
        if len(odd) == 1 and n_major > len(calls) - n_major:
            rk = odd[0]
            return HangFinding(
                rk,
                "call-mismatch",
                0.7,
                [r for r in timeouts if r.rank == rk][:1],
                {"rank": rk, "op": calls[rk], "others": n_major, "others_op": majority},
            )
    # 3. The one rank whose "last enqueued" work is behind everyone else's.
    enq: dict[int, int] = {}
    for r in timeouts:
        v, rk = _int(r.cap("last_enqueued")), r.rank
        if v is not None and rk is not None:
            enq[rk] = min(v, enq.get(rk, v))
    if len(enq) >= 2:
        low = min(enq.values())
        lows = [rk for rk, v in enq.items() if v == low]
        if len(lows) == 1 and any(v > low for v in enq.values()):
            rk = lows[0]
            return HangFinding(
                rk,
                "lowest-enqueued",
                0.7,
                [r for r in timeouts if r.rank == rk][:1],
                {"rank": rk, "last_enqueued": low, "others_reached": max(enq.values())},
            )
    # 4. The rank missing from the reports.
    missing = sorted(universe - reporting)
    if universe and len(missing) == 1 and len(reporting) >= 2:
        rk = missing[0]
        return HangFinding(rk, "missing", 0.65, [], {"rank": rk, "world": len(universe)})
    # 5. The rank whose watchdog raised the dump signal first (a weak pointer).
    srcs = Counter(_int(r.cap("src_rank")) for r in timeouts if r.cap("src_rank"))
    srcs.pop(None, None)
    detail: dict[str, Any] = {"missing": missing, "world_known": bool(universe)}
    if len(srcs) == 1:
        (detail["first_watchdog"],) = srcs
    return HangFinding(None, "none", 0.5, [], detail)

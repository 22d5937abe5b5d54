"""Find the culprit of a hang when only timeouts were logged.

Evidence, strongest first: a desync report naming lagging ranks; ``monitored_barrier``
naming a rank; a rank whose op type differs at the same sequence number (collective
mismatch); the one rank with the lowest "last enqueued" work; the one rank of the job missing
from every collective report. Without such evidence the culprit stays unnamed.

Each strategy is one ``Strategy`` object that declares all of itself: its id (a ``HangId``),
its confidence, its words (a template filled with the finding's facts, or a builder from
``analyzer.decide.wording``) and its function. A finding records the strategy that made it
(``HangFinding.rule``) and its facts (``detail``); ``hang_reason`` words them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import regex

from analyzer.decide import wording
from analyzer.decide.ids import HangId
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
    rule: HangId
    """The strategy that made it (``STRATEGIES``), or ``dumps`` (the Flight Recorder)."""
    confidence: float
    rows: list[Event]
    detail: dict[str, Any]

    @property
    def reason(self) -> str:
        """The finding in words (``hang_reason``)."""
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
    return HangFinding(rank, HangId.DUMPS, conf, [dump, *logs.rows], detail)


def _first_of(timeouts: list[Event], rank: int) -> list[Event]:
    return [r for r in timeouts if r.rank == rank][:1]


def desync(timeouts: list[Event], universe: set[int]) -> HangFinding | None:
    """A desync report (or ``monitored_barrier``) names exactly one lagging rank: PyTorch
    compared the ranks itself. When the rank a report names has a report of its own that names
    another rank, its own line about itself outweighs its peers': the culprit is the rank it
    names (gloo: rank 1 is told to "check rank 0 logs", and rank 0's own line says rank 3
    failed to pass the barrier)."""
    named: list[tuple[Event, int]] = []
    for r in timeouts:
        lag = r.cap("lagging_ranks")
        if lag:
            ranks = sorted({int(x) for x in _INTS.findall(lag)})
            if len(ranks) == 1:
                named.append((r, ranks[0]))
    if not named:
        return None
    own = {r.rank: (r, rk) for r, rk in reversed(named) if r.rank is not None and r.rank != rk}
    row, rank = named[0]
    rows, seen = [row], {rank}
    while rank in own:  # the accused rank's own report names another: follow it
        row, rank = own[rank]
        if rank in seen:
            return None  # they accuse each other: nothing singles one out
        rows.insert(0, row)
        seen.add(rank)
    return _found(HangId.DESYNC, rank, rows, {"rank": rank})


def op_mismatch(timeouts: list[Event], universe: set[int]) -> HangFinding | None:
    """At one sequence number of one process group (three ranks or more report it), one rank
    ran another collective than all the others: a collective mismatch, and that rank is its
    cause."""
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
                detail = {"rank": rk, "seq": seq, "op": ops[rk], "others_op": majority}
                return _found(HangId.OP_MISMATCH, rk, _first_of(timeouts, rk), detail)
    return None


def call_mismatch(timeouts: list[Event], universe: set[int]) -> HangFinding | None:
    """In gloo tracebacks (three ranks or more), the torch.distributed function each rank's
    timed-out call went through: one rank's differs from a majority's, so it is waiting in
    another collective."""
    calls: dict[int, str] = {}
    for r in timeouts:
        found = _C10D_CALL.findall(r.traceback or "")
        if found and r.rank is not None:
            calls.setdefault(r.rank, found[-1])
    counts = Counter(calls.values())
    if len(calls) < 3 or len(counts) < 2:
        return None
    majority, n_major = counts.most_common(1)[0]
    odd = [rk for rk, op in calls.items() if op != majority]
    if len(odd) != 1 or n_major <= len(calls) - n_major:
        return None
    rk = odd[0]
    detail = {"rank": rk, "op": calls[rk], "others": n_major, "others_op": majority}
    return _found(HangId.CALL_MISMATCH, rk, _first_of(timeouts, rk), detail)


def _lowest(timeouts: list[Event], field: str) -> tuple[int, int, int] | None:
    """(rank, its value, the highest value) when exactly one rank's ``field`` is below every
    other rank's (each rank's lowest report counts)."""
    low_of: dict[int, int] = {}
    for r in timeouts:
        v, rk = _int(r.cap(field)), r.rank
        if v is not None and rk is not None:
            low_of[rk] = min(v, low_of.get(rk, v))
    if len(low_of) < 2:
        return None
    low = min(low_of.values())
    lows = [rk for rk, v in low_of.items() if v == low]
    if len(lows) != 1 or not any(v > low for v in low_of.values()):
        return None
    return lows[0], low, max(low_of.values())


def lowest_enqueued(timeouts: list[Event], universe: set[int]) -> HangFinding | None:
    """One rank's "last enqueued" work is behind every other rank's: it never issued the
    collective the others wait in."""
    got = _lowest(timeouts, "last_enqueued")
    if got is None:
        return None
    rk, low, high = got
    detail = {"rank": rk, "last_enqueued": low, "others_reached": high}
    return _found(HangId.LOWEST_ENQUEUED, rk, _first_of(timeouts, rk), detail)


def lowest_completed(timeouts: list[Event], universe: set[int]) -> HangFinding | None:
    """Every rank enqueued alike, but one rank's "last completed" work is behind every other
    rank's: the others finished a collective it never finished (it is stuck inside it)."""
    got = _lowest(timeouts, "last_completed")
    if got is None:
        return None
    rk, low, high = got
    detail = {"rank": rk, "last_completed": low, "others_reached": high}
    return _found(HangId.LOWEST_COMPLETED, rk, _first_of(timeouts, rk), detail)


def missing(timeouts: list[Event], universe: set[int]) -> HangFinding | None:
    """Every rank of a known world but one reported a timeout (two or more did): the others
    were waiting for the one that did not."""
    reporting = {r.rank for r in timeouts if r.rank is not None}
    absent = sorted(universe - reporting)
    if not universe or len(absent) != 1 or len(reporting) < 2:
        return None
    rk = absent[0]
    return _found(HangId.MISSING, rk, [], {"rank": rk, "world": len(universe)})


def none(timeouts: list[Event], universe: set[int]) -> HangFinding | None:
    """Nothing singles out one rank: no culprit, with the ranks missing from the reports (or
    that the world size is unknown) and the rank whose watchdog fired first, mentioned and
    never blamed."""
    reporting = {r.rank for r in timeouts if r.rank is not None}
    srcs = Counter(_int(r.cap("src_rank")) for r in timeouts if r.cap("src_rank"))
    srcs.pop(None, None)
    detail: dict[str, Any] = {
        "missing": sorted(universe - reporting),
        "world_known": bool(universe),
    }
    if len(srcs) == 1:
        (detail["first_watchdog"],) = srcs
    return _found(HangId.NONE, None, [], detail)


def _found(
    rule: HangId, rank: int | None, rows: list[Event], detail: dict[str, Any]
) -> HangFinding:
    return HangFinding(rank, rule, BY_ID[rule].confidence or 0.0, rows, detail)


Finder = Callable[[list[Event], set[int]], HangFinding | None]


@dataclass(frozen=True)
class Strategy:
    """One way to find a hang's culprit, all of it: id, confidence, words and function."""

    id: HangId
    find: Finder | None
    """The strategy; None for the Flight Recorder's finding, made from the dumps."""
    confidence: float | None
    """The finding's confidence; None: the Flight Recorder's own comes with its finding."""
    words: str | Callable[[dict[str, Any]], str]
    """Why it named the culprit (or none): a template of the finding's facts, or a builder."""

    @property
    def doc(self) -> str:
        """When the strategy applies, and why."""
        return " ".join((self.find.__doc__ or "").split()) if self.find else ""

    def reason(self, detail: dict[str, Any]) -> str:
        """The finding's facts in words."""
        return self.words.format(**detail) if isinstance(self.words, str) else self.words(detail)


def _dumps_words(detail: dict[str, Any]) -> str:
    """The dumps' reason, then whether the logs alone named no rank, agreed, or pointed at
    another rank (with that rule's reason)."""
    logs_rank = detail.get("logs_rank")
    logs_why = (
        hang_reason(detail["logs_rule"], detail["logs_detail"])
        if logs_rank is not None and logs_rank != detail["rank"]
        else None
    )
    return wording.dumps_reason(detail["shown"], detail["rank"], logs_rank, logs_why)


STRATEGIES: tuple[Strategy, ...] = (
    Strategy(
        HangId.DESYNC, desync, 0.8,
        "PyTorch's own report (a desync report, monitored_barrier) names rank {rank} as the one "
        "the others waited for",
    ),
    Strategy(
        HangId.OP_MISMATCH, op_mismatch, 0.75,
        "collective mismatch at SeqNum {seq}: rank {rank} ran {op} while the others ran "
        "{others_op}",
    ),
    Strategy(
        HangId.CALL_MISMATCH, call_mismatch, 0.7,
        "rank {rank} timed out in {op} while the other {others} timed out in {others_op} (their "
        "tracebacks): a collective mismatch",
    ),
    Strategy(
        HangId.LOWEST_ENQUEUED, lowest_enqueued, 0.7,
        "rank {rank} last enqueued work {last_enqueued} while the others reached "
        "{others_reached}: it never issued the collective the others wait in",
    ),
    Strategy(
        HangId.LOWEST_COMPLETED, lowest_completed, 0.6,
        "rank {rank} last completed work {last_completed} while the others completed "
        "{others_reached}: it is stuck in a collective the others finished",
    ),
    Strategy(
        HangId.MISSING, missing, 0.65,
        "rank {rank} is the only rank of {world} that reported no collective timeout: the "
        "others were waiting for it",
    ),
    Strategy(HangId.NONE, none, 0.5, wording.no_culprit_reason),
)
"""The strategies, strongest evidence first; the first that finds something decides."""

FROM_DUMPS = Strategy(HangId.DUMPS, None, None, _dumps_words)
"""The Flight Recorder's culprit (``from_dumps``), with what the logs alone said beside it."""

BY_ID: dict[str, Strategy] = {s.id: s for s in (*STRATEGIES, FROM_DUMPS)}
"""Every strategy by its id."""


def hang_reason(rule: str, detail: dict[str, Any]) -> str:
    """Why the hang analysis named its culprit (or none), from its rule and facts."""
    return BY_ID[rule].reason(detail)


def _from_logs(timeouts: list[Event], universe: set[int]) -> HangFinding:
    """The culprit from the timeout lines alone: the first strategy that applies."""
    for s in STRATEGIES:
        found = s.find(timeouts, universe) if s.find else None
        if found is not None:
            return found
    raise AssertionError("the none strategy always applies")

"""What a rank rule is: the decision it passes on (``RankDecision``), the outcomes it may
record (``Outcome``: id, note, certainty) and the rule itself (``RankRule``).

The rules live in their families (``rank_hang``, ``rank_same``, ``rank_lines``,
``rank_launcher``); ``analyzer.decide.rank_decision`` orders them and applies them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from analyzer.decide.ids import Certainty, RankId, VerdictId
from analyzer.decide.jobview import JobView
from analyzer.model.event import Event

if TYPE_CHECKING:
    from analyzer.decide.proposal import Proposal


@dataclass(frozen=True)
class RankDecision:
    """The rank the verdict names (or None), where it ran, and the rule that settled it."""

    rank: int | None = None
    local_rank: int | None = None
    node: str | None = None
    node_index: int | None = None
    rule: RankId | None = None
    """The rank rule's outcome that settled it; None: the proposed line's own rank."""
    facts: dict[str, Any] = field(default_factory=dict)
    """What the rule used (file, line, ranks ...), for the rank note."""
    evidence: tuple[Event, ...] = ()
    """Lines the rule rests on, shown after the verdict's own line."""

    @classmethod
    def of_event(cls, e: Event | None) -> RankDecision:
        """The rank an event carries (none for no event)."""
        if e is None:
            return cls()
        return cls(e.rank, e.local_rank, e.node, e.node_index)

    def why(self, rule: RankId, **facts: Any) -> RankDecision:
        """The same place, settled by ``rule`` with ``facts``."""
        return replace(self, rule=rule, facts=facts)

    def unnamed(self, rule: RankId, **facts: Any) -> RankDecision:
        """No rank is named, by ``rule`` (the node stays)."""
        return replace(self, rank=None, local_rank=None, rule=rule, facts=facts)

    def taken_from(self, r: Event, rule: RankId) -> RankDecision:
        """Rank, local rank and node taken from event ``r``, which the note names."""
        return RankDecision(
            r.rank,
            r.local_rank,
            r.node or self.node,
            r.node_index,
            rule,
            {"file": r.file, "line": r.line},
            (*self.evidence, r),
        )


@dataclass(frozen=True)
class Outcome:
    """One thing a rank rule may record (``Verdict.rank_rule``): its id, its note (a template
    of the rule's facts) and how sure a rank it names is."""

    id: RankId
    note: str
    certainty: Certainty = Certainty.LIKELY
    names_rank: bool = True
    """False: the outcome never names a rank (its certainty is never read)."""
    certain_when: Callable[[Mapping[str, Any]], bool] | None = None
    """Facts that make a named rank ``certain`` (the Flight Recorder confirming a culprit)."""
    possible_when: Callable[[Mapping[str, Any]], bool] | None = None
    """Facts that leave a named rank only ``possible`` (a culprit no line of its own shows)."""

    def words(self, facts: Mapping[str, Any]) -> str:
        """The note, filled with the rule's facts."""
        return self.note.format(**facts)

    def sureness(self, facts: Mapping[str, Any]) -> Certainty:
        """How sure a rank named by this outcome is, given the rule's facts."""
        if self.certain_when is not None and self.certain_when(facts):
            return Certainty.CERTAIN
        if self.possible_when is not None and self.possible_when(facts):
            return Certainty.POSSIBLE
        return self.certainty


RankApply = Callable[[JobView, "Proposal", RankDecision], "RankDecision | None"]


@dataclass(frozen=True)
class RankRule:
    """One rank rule, all of it: its outcomes (the first is its id), the verdict rules it
    applies to, and its function."""

    outcomes: tuple[Outcome, ...]
    verdicts: frozenset[str]
    apply: RankApply
    job_level: bool = False
    """Applies to the whole job's verdict only (not to one attempt's)."""

    @property
    def id(self) -> RankId:
        """The rule's id: its first outcome's."""
        return self.outcomes[0].id

    @property
    def doc(self) -> str:
        """When the rule applies, and why."""
        return " ".join((self.apply.__doc__ or "").split())


def one(outcome: RankId, note: str, certainty: Certainty = Certainty.LIKELY) -> tuple[Outcome]:
    """The single outcome of a rule that names a rank (``certainty``: how sure)."""
    return (Outcome(outcome, note, certainty),)


def unnamed(outcome: RankId, note: str) -> tuple[Outcome]:
    """The single outcome of a rule that names no rank."""
    return (Outcome(outcome, note, names_rank=False),)


ROOTS: frozenset[str] = frozenset({VerdictId.ROOT})
"""A root verdict."""
DEATHS: frozenset[str] = frozenset({VerdictId.DEATH_RECORD, VerdictId.DEAD_WORKER})
"""A verdict made from workers' death records or exits."""
HANGS: frozenset[str] = frozenset({VerdictId.HANG, VerdictId.END_AFTER_SYMPTOMS})
"""A hang verdict (or symptoms a SLURM end only confirmed, a hang among them)."""
FAILED: frozenset[str] = frozenset(
    {
        VerdictId.ROOT, VerdictId.END_AFTER_SYMPTOMS, VerdictId.SLURM_END,
        VerdictId.DEATH_RECORD, VerdictId.CUT_TRACEBACK, VerdictId.HANG, VerdictId.SYMPTOMS,
        VerdictId.UNKNOWN, VerdictId.DEAD_WORKER,
    }
)
"""Every verdict of a job that failed of a cause in its logs."""


def alone(p: Proposal) -> bool:
    """The proposed failure shows on fewer than two ranks."""
    return len(p.same) < 2


NEAR_LINES = 2
"""A line this close below another is its neighbour: an srun exit below an unlabelled root
line is that line's task's exit; a traceback below it, that rank's."""


def unsettled(p: Proposal, d: RankDecision) -> Event | None:
    """The proposed event, when it shows on one rank at most and no rank nor rule has
    settled it yet (the line carries no rank)."""
    e = p.event
    if e is None or not alone(p) or d.rank is not None or d.rule is not None:
        return None
    return e

"""What a verdict rule is (``VerdictRule``: id, summary, confidence, words, function) and what
it proposes (``Proposal``: the event the verdict is made from, and why). The rules themselves
are in ``analyzer.decide.rules``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from analyzer.decide.hangs import HangFinding
from analyzer.decide.ids import VerdictId
from analyzer.decide.jobview import JobView
from analyzer.model.event import Event


@dataclass(frozen=True)
class Proposal:
    """What a verdict rule proposes: the event the verdict is made from, and why."""

    rule: VerdictId
    """The verdict rule's id."""
    event: Event | None
    """The event the verdict's cause, fix, time and evidence come from (None: no failure)."""
    confidence: float
    status: str = "failed"
    category: str | None = None
    """The verdict's category when it is not the event's (a hang, an unknown failure)."""
    same: tuple[Event, ...] = ()
    """Each rank's first copy of the same failure (a root verdict), in time order."""
    hang: HangFinding | None = None
    """The hang analysis (a hang verdict)."""
    timeouts: tuple[Event, ...] = ()
    """The timeouts the hang analysis compared."""
    end: Event | None = None
    """The SLURM end that only confirmed the failure (``end-after-symptoms``)."""
    alternatives: tuple[Proposal, ...] = ()


Texts = Callable[[Proposal, JobView], tuple[str, str, str]]
"""Title, cause and fix of a verdict whose words are the rule's own, not its pattern's."""


@dataclass(frozen=True)
class VerdictRule:
    """One verdict rule, all of it: id, summary, confidence, words and function."""

    id: VerdictId
    summary: str
    """The rule in a few words (the JSON Schema's and ``docs/decisions.md``'s)."""
    propose: Callable[[JobView], Proposal | None] | None = None
    """The rule; None for a verdict made outside the ordered rules (``inferred``,
    ``alternative``)."""
    confidence: float | None = None
    """The verdict's confidence; None when it comes from elsewhere (a catalogued root's
    category, a hang strategy)."""
    variants: tuple[tuple[str, float], ...] = ()
    """Confidences of the rule's own special cases, by name."""
    texts: Texts | None = None
    """How its title, cause and fix are written; None: from the event's pattern."""

    @property
    def doc(self) -> str:
        """When the rule applies, and why."""
        return " ".join((self.propose.__doc__ or "").split()) if self.propose else ""

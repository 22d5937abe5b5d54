"""How sure a named rank is, by the rank rule's outcome that settled it (declared with the
rule: ``Outcome.certainty``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analyzer.decide.ids import Certainty
from analyzer.decide.rank_decision import OUTCOMES

OWN_LINE = Certainty.CERTAIN
"""A rank the verdict's own line carries (no rank rule changed it)."""


def certainty(
    rank: int | None, rule: str | None, assumed: bool, facts: Mapping[str, Any] | None = None
) -> str:
    """``certain``, ``likely``, ``possible``, ``assumed`` (a local rank taken as global on what
    looks like one node; a ``possible`` rank stays ``possible``) or ``unknown`` (no rank
    named). A hang's culprit is ``likely`` from the logs alone and ``certain`` when the Flight
    Recorder dumps show it (``facts["hang_rule"]``)."""
    if rank is None:
        return Certainty.UNKNOWN.value
    if rule is None:
        return (Certainty.ASSUMED if assumed else OWN_LINE).value
    outcome = OUTCOMES.get(rule)
    sure = outcome.sureness(facts or {}) if outcome else Certainty.LIKELY
    # The weaker of the two grounds: a rank only *possible* from its evidence stays possible
    # when its number is also a local rank taken as global.
    return (Certainty.ASSUMED if assumed and sure is not Certainty.POSSIBLE else sure).value

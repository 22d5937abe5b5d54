"""The rank decision: which rank (and node) the verdict names, how sure, and by which rule.

A ``RankDecision`` starts from the proposed event's own rank and passes through the rank rules
in order; each rule applies to the verdict rules it lists, and returns a new decision or None
(no change). The decision is made once, before the verdict is built, and never edited
afterwards. Each rule is one ``RankRule`` object in its family's module (``rank_hang``,
``rank_same``, ``rank_lines``, ``rank_launcher``) that declares its outcomes (id, note,
certainty), the verdict rules it applies to and its function; this module only orders them,
as ``analyzer.decide.ids.RankId`` declares their ids.
``docs/decisions.md`` and the JSON Schema's ``rank_rule`` enum are generated from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analyzer.decide import rank_hang, rank_launcher, rank_lines, rank_same
from analyzer.decide.ids import RankId
from analyzer.decide.jobview import JobView
from analyzer.decide.rank_model import Outcome, RankDecision, RankRule
from analyzer.decide.rules import Proposal

_ORDER = {rid: i for i, rid in enumerate(RankId)}

RANK_RULES: tuple[RankRule, ...] = tuple(
    sorted(
        (*rank_launcher.RULES, *rank_hang.RULES, *rank_same.RULES, *rank_lines.RULES),
        key=lambda r: _ORDER[r.id],
    )
)
"""The rank rules in the order they apply to a proposal (the order ``RankId`` declares their
ids in); each sees the decision so far."""

INFERRED = Outcome(RankId.INFERRED, "inferred: the first unknown error line, {spread}{new}")
"""The rank of a verdict inferred from a line no pattern knows (``analyzer.decide.unknown``),
not settled by a rank rule."""

OUTCOMES: dict[str, Outcome] = {
    o.id: o for o in (*(o for r in RANK_RULES for o in r.outcomes), INFERRED)
}
"""Every outcome a verdict's ``rank_rule`` can record, by id."""


def rank_note(rule: str, facts: Mapping[str, Any]) -> str:
    """The note for a rank settled by ``rule`` with ``facts``."""
    return OUTCOMES[rule].words(facts)


def decide_rank(job: JobView, p: Proposal, whole_job: bool = False) -> RankDecision:
    """The rank decision for proposal ``p``: its event's rank passed through every rank rule
    that applies to ``p``'s verdict rule (the job-level ones only when ``whole_job``)."""
    d = RankDecision.of_event(p.event)
    for rule in RANK_RULES:
        if p.rule not in rule.verdicts or (rule.job_level and not whole_job):
            continue
        d = rule.apply(job, p, d) or d
    return d

"""Build a ``Verdict`` from what was decided: the proposal and the rank decision.

Pattern text is rendered with the event's captures and the job's facts; every sentence of the
reasoning's own comes from ``wording``. Nothing here decides anything.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import regex

from analyzer.catalog.model import fill_template
from analyzer.catalog.vocabulary import Category
from analyzer.decide import wording
from analyzer.decide.fixes import tailor_fix
from analyzer.decide.fixsteps import without
from analyzer.decide.ids import RankId
from analyzer.decide.jobview import JobView
from analyzer.decide.rank_decision import rank_note
from analyzer.decide.rank_model import RankDecision
from analyzer.decide.rank_rules import reporting_ranks
from analyzer.decide.rankbasis import rank_basis
from analyzer.decide.rules import BY_ID, Proposal
from analyzer.decide.verdict import Evidence, Verdict
from analyzer.model.event import Event
from analyzer.shape.facts import JobFacts

_UNKNOWN_SUBJECT = regex.compile(r"\b(?P<w>[Rr]ank|[Nn]ode) \?(?=[\s,.:;)]|$)")
_UNKNOWN_SIZE = regex.compile(r"(?<=\b(?:size|count|number)) \?(?=[\s,.:;)]|$)")
"""``the model-parallel size ?``: a size the line did not give is left out, not shown as ``?``."""


def evidence(r: Event) -> Evidence:
    """An event as a verdict's evidence (a traceback as its collapsed context)."""
    ctx = (r.traceback or "").splitlines()
    return Evidence(r.file, r.line, r.text, r.rank, r.node, r.time, ctx)


def _values(r: Event, facts: JobFacts) -> dict[str, Any]:
    v: dict[str, Any] = {**facts.values, **r.values()}
    v["rank"] = r.rank if r.rank is not None else "?"
    return v


def _unknowns(text: str) -> str:
    """``Rank ? raised`` reads badly: say "a rank" where the logs name none, and leave out a
    size the logs did not give (``the model-parallel size ?``)."""
    text = _UNKNOWN_SUBJECT.sub(
        lambda m: ("A " if m["w"][0].isupper() else "a ") + m["w"].lower(), text
    )
    return _UNKNOWN_SIZE.sub("", text)


def failure_key(r: Event) -> dict[str, str]:
    """Structured identity of the event: exception type, innermost frame, message, op."""
    key = {
        "exc_type": r.cap("exc_type") or "",
        "frame": r.cap("frame") or "",
        "message": r.cap("exc_msg") or r.message or r.text or "",
    }
    op = r.cap("op")
    if op:
        key["op"] = str(op)
    return {k: v for k, v in key.items() if v}


def _pattern_texts(r: Event, job: JobView) -> tuple[str, str]:
    """The event's cause and fix, rendered, the fix fitted to the job."""
    vals = _values(r, job.facts)
    cause = _unknowns(fill_template(r.cause or r.title or "", vals))
    fix = fill_template(r.fix or "", vals)
    if not r.fix_exact:  # a reasoning rule's own fix is already specific
        fix = tailor_fix(r, fix, job.facts, job.geo, job.rows)
    return cause, _unknowns(fix)


def _hang_texts(p: Proposal, job: JobView, d: RankDecision) -> tuple[str, str]:
    """A hang's cause (how many ranks timed out in what, and the culprit or why none) and
    the timeout's fix fitted to a hang; a culprit named by a rank rule (``still-working``)
    with that rule's note as the reason."""
    first, finding = p.event, p.hang
    assert first is not None and finding is not None
    ranks = len(reporting_ranks(p.timeouts))
    what = wording.collective(first.cap("op"), first.cap("seq"))
    if d.rule in (RankId.STILL_WORKING, RankId.SILENT_RANK):
        reason = rank_note(d.rule, d.facts)
        cause = wording.hang_cause(ranks, what, d.rank, reason, d.rule == RankId.SILENT_RANK)
    else:
        cause = wording.hang_cause(ranks, what, finding.rank, finding.reason)
    base = fill_template(first.fix or "", _values(first, job.facts))
    if d.rank is not None:  # a culprit is named: the fix does not send the user to find one
        base = without(base, "find-culprit")
    fix = tailor_fix(replace(first, category=Category.COLLECTIVE_TIMEOUT), base, job.facts, job.geo,
                     job.rows)
    if d.rank is not None:
        fix = fix.replace("the culprit rank's own log", f"rank {d.rank}'s own log")
    return cause, fix


def _texts(p: Proposal, job: JobView, d: RankDecision) -> tuple[str, str, str]:
    """Title, cause and fix of the verdict."""
    e = p.event
    assert e is not None
    title = e.title or ""
    words = BY_ID[p.rule].texts
    if p.hang is not None:
        cause, fix = _hang_texts(p, job, d)
    elif words is not None:
        title, cause, fix = words(p, job)
    else:
        cause, fix = _pattern_texts(e, job)
    if p.end is not None:
        cause += wording.then_slurm_ended(p.end.title or p.end.category)
    return title, cause, fix


def _evidence_of(p: Proposal, d: RankDecision) -> list[Evidence]:
    """The proposed line, then what the rank rule rests on; a hang's culprit lines first."""
    assert p.event is not None
    if p.hang is not None and p.hang.rank is not None:
        return [evidence(r) for r in p.hang.rows] + [evidence(p.event)]
    return [evidence(p.event)] + [evidence(r) for r in d.evidence]


def build_verdict(job: JobView, p: Proposal, d: RankDecision) -> Verdict:
    """The verdict of proposal ``p`` with rank decision ``d``."""
    e = p.event
    if e is None:
        return Verdict(
            category=p.category or Category.NONE,
            cause=wording.NONE_CAUSE,
            fix=wording.NONE_FIX,
            confidence=p.confidence,
            title=wording.NONE_TITLE,
            rule=p.rule,
        )
    title, cause, fix = _texts(p, job, d)
    return Verdict(
        category=p.category or e.category,
        cause=cause,
        fix=fix,
        confidence=p.confidence,
        pattern_id=e.pattern_id,
        rank=d.rank,
        local_rank=d.local_rank,
        node=d.node,
        node_index=d.node_index,
        time=e.time,
        title=title,
        evidence=_evidence_of(p, d),
        attempt=e.attempt,
        key=failure_key(e),
        rule=p.rule,
        rank_rule=d.rule,
        rank_facts=d.facts,
        rank_basis=rank_basis(e, d.rank, d.rule),
    )

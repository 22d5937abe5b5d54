"""Rank rules that read a rank from the lines around the verdict's line: a neighbour that
names it, a traceback right below, the one rank failing alike nearby; or that decline to name
the rank of a line that only shows a symptom."""

from __future__ import annotations

from datetime import timedelta

from analyzer.catalog.vocabulary import info
from analyzer.decide.ids import Certainty, RankId, VerdictId
from analyzer.decide.jobview import JobView
from analyzer.decide.rank_model import (
    NEAR_LINES,
    ROOTS,
    RankDecision,
    RankRule,
    one,
    unnamed,
    unsettled,
)
from analyzer.decide.rules import Proposal
from analyzer.model.event import Event

NEAR_KIN = timedelta(minutes=2)
"""A same-category event this close to an unranked root may lend it its rank."""


def from_line(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """An unranked root (a scheduler line) takes the rank of the one rank whose events of the
    same category (or its kin) are within two minutes of it."""
    e = unsettled(p, d)
    if e is None:
        return None
    kin = {e.category, *info(e.category).kin}
    near = [
        r
        for r in job.active
        if r.category in kin
        and r.rank is not None
        and (e.time is None or r.time is None or abs(r.time - e.time) <= NEAR_KIN)
    ]
    if any(r.pattern_id == e.pattern_id and (r.file, r.line) != (e.file, e.line) for r in near):
        return None  # another process's copy of the same failure: nothing singles one out
    if len({r.rank for r in near}) != 1:
        return None
    return d.taken_from(near[0], RankId.FROM_LINE)


def traceback_below(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """An unranked root line followed at once (within two lines, or past empty lines only:
    ``_near``; same file) by one rank's traceback takes that rank: a message the runtime
    writes past the launcher's rank prefix (CUDA's device-side assert, a C++ abort) and the
    Python traceback it raises in that rank."""
    e = unsettled(p, d)
    if e is None:
        return None
    below = [
        r
        for r in job.active
        if _near(e, r) and r.rank is not None and r.traceback is not None
    ]
    if len({r.rank for r in below}) != 1:
        return None
    return d.taken_from(below[0], RankId.TRACEBACK_BELOW)


def _near(upper: Event, lower: Event) -> bool:
    """Whether ``lower`` starts right below ``upper`` in the same file: within ``NEAR_LINES``
    lines, or with only empty lines between them (their byte offsets say so: an unwrapped
    hard-wrapped line leaves one empty line for each piece it joined)."""
    if upper.file != lower.file or lower.line <= upper.line:
        return False
    if lower.line <= upper.line + NEAR_LINES:
        return True
    if upper.offset is None or lower.offset is None:
        return False
    gap = lower.offset - upper.offset - len(upper.text.encode())
    return gap == lower.line - upper.line  # nothing but the newlines between them


def named_above(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """An unranked root line right below (within two lines, or past empty lines only; same
    file) a line that names the rank the exception came from (tag ``failing-rank``: torch
    RPC's ``On WorkerInfo(id=14, …):`` header) takes that rank."""
    e = unsettled(p, d)
    if e is None:
        return None
    above = [
        r for r in job.rows if _near(r, e) and r.rank is not None and r.tagged("failing-rank")
    ]
    if len({r.rank for r in above}) != 1:
        return None
    return d.taken_from(above[0], RankId.NAMED_ABOVE)


def own_traceback(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A verdict made from a rank's traceback cut before its exception line (a paste that
    ends inside it): the frames are that rank's own code raising, not a sign of another
    rank's failure, so the rank is named (likely: the exception itself is not shown)."""
    e = p.event
    if e is None or d.rank is None or d.rule is not None or not e.tagged("uncatalogued"):
        return None
    return d.why(RankId.OWN_TRACEBACK, rank=d.rank)


def link_end(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A rank whose own line says it could not connect to a peer (a refused or unreachable
    connection: tag ``link-end``) is one end of a link: the peer that did not answer, or the
    link, is as likely at fault, so the line names its rank only as *possible*. Seen with
    NCCL's bootstrap refused on a 2-node SLURM job's rank 1 and gloo's refused connect on a
    GCN example's rank 1 (labels: no rank), and a streaming-dataset run whose rank 1 is the
    one refused (label: rank 1)."""
    e = p.event
    if e is None or d.rank is None or d.rule is not None or not e.tagged("link-end"):
        return None
    return d.why(RankId.LINK_END, rank=d.rank)


def victim(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A verdict made from a symptom does not name the symptom's rank (unless the line
    records that rank's own death): the rank is where the failure showed, not where it
    began."""
    e = p.event
    if e is None or d.rank is None or d.rule is not None or e.tagged("death"):
        return None
    return d.unnamed(RankId.VICTIM, rank=d.rank)


FROM_LINE = RankRule(one(RankId.FROM_LINE, "rank from {file}:{line}"), ROOTS, from_line)
TRACEBACK_BELOW = RankRule(
    one(RankId.TRACEBACK_BELOW, "rank from the traceback right below the line ({file}:{line})"),
    ROOTS,
    traceback_below,
)
NAMED_ABOVE = RankRule(
    one(
        RankId.NAMED_ABOVE,
        "rank from the line above that names where the exception came from ({file}:{line})",
    ),
    ROOTS,
    named_above,
)
OWN_TRACEBACK = RankRule(
    one(
        RankId.OWN_TRACEBACK,
        "rank {rank}'s own traceback, cut before its exception line: the only rank whose "
        "failure the logs show",
    ),
    frozenset({VerdictId.SYMPTOMS, VerdictId.UNKNOWN, VerdictId.CUT_TRACEBACK}),
    own_traceback,
)
LINK_END = RankRule(
    one(
        RankId.LINK_END,
        "rank {rank} could not connect to a peer: one end of the link, the peer or the link "
        "as likely at fault",
        Certainty.POSSIBLE,
    ),
    ROOTS,
    link_end,
)
VICTIM = RankRule(
    unnamed(RankId.VICTIM, "rank {rank} only showed a symptom; no rank is named"),
    frozenset({VerdictId.SYMPTOMS, VerdictId.UNKNOWN}),
    victim,
)

RULES: tuple[RankRule, ...] = (
    FROM_LINE,
    TRACEBACK_BELOW,
    NAMED_ABOVE,
    OWN_TRACEBACK,
    LINK_END,
    VICTIM,
)
"""This family's rules (``rank_decision`` orders them as ``RankId`` declares them)."""

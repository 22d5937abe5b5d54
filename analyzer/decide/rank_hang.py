"""Rank rules of a hang: the culprit the hang analysis names, or the rank still working while
the others waited."""

from __future__ import annotations

from dataclasses import replace

from analyzer.decide.ids import HangId, RankId
from analyzer.decide.jobview import JobView
from analyzer.decide.rank_model import HANGS, Certainty, Outcome, RankDecision, RankRule, one
from analyzer.decide.rank_rules import bar_went_on, reporting_ranks
from analyzer.decide.rules import Proposal


def culprit(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A hang: the rank the hang analysis names as its culprit, with the node it ran on (from
    its own lines, else from the processes per node), or none and the reason why."""
    f = p.hang
    if f is None:
        return None
    if f.rank is None:
        return RankDecision(rule=RankId.CULPRIT, facts={"reason": f.reason})
    local, node, index = _where(job, f.rank)
    facts: dict[str, object] = {"reason": f.reason, "hang_rule": f.rule}
    if f.rule == HangId.DESYNC and not any(r.rank == f.rank for r in job.rows):
        # gloo's monitoredBarrier tells each waiting rank to "check rank 0 logs for faulty
        # rank": rank 0 coordinates, and may only have been waiting for another rank itself.
        # With no line of its own in view it is only possible (CosyVoice2's 8 GPUs, part P;
        # xtuner's rank 0, seen building its dataset, stays likely, part G).
        facts["reason"] = f"{f.reason}; no line of rank {f.rank}'s own is in view"
        facts["unseen"] = True
    return RankDecision(f.rank, local, node, index, RankId.CULPRIT, facts)


def _where(job: JobView, rank: int) -> tuple[int | None, str | None, int | None]:
    """Local rank, node and node index of ``rank``: from its own lines, else the node from
    the processes per node."""
    mine = [r for r in job.rows if r.rank == rank]
    node = next((r.node for r in mine if r.node), None)
    local = next((r.local_rank for r in mine if r.local_rank is not None), None)
    index = next((r.node_index for r in mine if r.node_index is not None), None)
    geo = job.geo
    if node is None and geo.nproc_per_node:
        index = rank // geo.nproc_per_node
        hosts = {r.host for r in job.rows if r.node_index == index and r.host}
        node = geo.node_label(hosts.pop() if len(hosts) == 1 else None, index)
    return local, node, index


def still_working(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A hang whose timeouts name no culprit, but a progress bar in the same log goes on
    counting after the first timeout: some rank was still working in another phase
    (evaluation, data preparation) while the others waited in the collective, blocked. When
    exactly one rank of the job (the world size, else every rank up to the highest that
    reports) is absent from the reports (two or more), that rank kept the others waiting
    (likely, from the logs alone)."""
    silent = _sole_silent(job, p)
    if silent is None or p.event is None:
        return None
    rank, reports = silent
    went_on = bar_went_on(job.rows, p.event)
    if went_on is None or went_on.rank not in (None, rank):
        return None
    out = d.taken_from(went_on, RankId.STILL_WORKING)
    return replace(out, rank=rank, local_rank=None,
                   facts={"file": went_on.file, "line": went_on.line, "rank": rank,
                          "reporting": reports})


def silent_rank(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A hang whose timeouts name no culprit, where exactly one rank of the job (every rank up
    to the highest that reports, with the world size or a communicator's when known) reports
    no timeout while two or more do: possibly the rank the others waited for (it finished
    early, or was busy elsewhere with no progress bar to show it). Only possible: an excerpt
    may leave out higher ranks, and a silent rank may have timed out unseen. Seen: a
    LatentWire ablation whose rank 0 stopped early while ranks 1-3 timed out in ALLREDUCE
    (part Q), and an xtuner LLaVA run whose rank 0 mapped the dataset alone (part N)."""
    silent = _sole_silent(job, p)
    if silent is None or d.rank is not None:
        return None  # a rule before it (still-working) named the rank on firmer ground
    rank, reports = silent
    local, node, index = _where(job, rank)
    facts = {"rank": rank, "reporting": reports}
    return RankDecision(rank, local, node, index, RankId.SILENT_RANK, facts)


def _sole_silent(job: JobView, p: Proposal) -> tuple[int, str] | None:
    """For a hang whose analysis named no culprit and whose timeouts two or more ranks
    report: the one rank of the job (every rank up to the highest that reports, with the world
    size or a communicator's when known) that reports none, and the reporting ranks as words;
    None when no rank or several are silent."""
    if p.hang is None or p.hang.rank is not None:
        return None
    reporting = reporting_ranks(p.timeouts)
    if len(reporting) < 2:
        return None
    absent = (set(job.universe) | set(range(max(reporting) + 1))) - reporting
    if len(absent) != 1:
        return None
    return absent.pop(), ", ".join(str(r) for r in sorted(reporting))


CULPRIT = RankRule(
    (
        Outcome(
            RankId.CULPRIT,
            "{reason}",
            certain_when=lambda facts: facts.get("hang_rule") == HangId.DUMPS,
            possible_when=lambda facts: bool(facts.get("unseen")),
        ),
    ),
    HANGS,
    culprit,
)
STILL_WORKING = RankRule(
    one(
        RankId.STILL_WORKING,
        "ranks {reporting} timed out while a progress bar went on counting ({file}:{line}): "
        "rank {rank}, the only rank not among them, was still working in another phase",
    ),
    HANGS,
    still_working,
)

SILENT_RANK = RankRule(
    one(
        RankId.SILENT_RANK,
        "ranks {reporting} timed out and rank {rank}, the only rank up to the highest of them "
        "that did not, may be the one they waited for",
        Certainty.POSSIBLE,
    ),
    HANGS,
    silent_rank,
)

RULES: tuple[RankRule, ...] = (
    CULPRIT,
    STILL_WORKING,
    SILENT_RANK,
)
"""This family's rules (``rank_decision`` orders them as ``RankId`` declares them)."""

"""The rank decision: which rank (and node) the verdict names, how sure, and by which rule.

A ``RankDecision`` starts from the proposed event's own rank and passes through the rank rules
in order; each rule applies to the verdict rules it lists, and returns a new decision or None
(no change). The decision is made once, before the verdict is built, and never edited
afterwards. Every rule id is worded in ``wording.RANK_NOTES``; ``docs/decisions.md`` explains
each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from analyzer.catalog.vocabulary import Category, info
from analyzer.decide.job import JobView
from analyzer.decide.ordering import SKEW, clearly_first, signature
from analyzer.decide.rank_rules import (
    bar_went_on,
    headless,
    reporting_ranks,
    uniform_by_detail,
)
from analyzer.decide.rules import KILLED_BY_LAUNCHER, Proposal
from analyzer.model.event import Event

NEAR_KIN = timedelta(minutes=2)
"""A same-category event this close to an unranked root may lend it its rank."""
NEAR_LINES = 2
"""An srun exit this close below an unlabelled root line is that line's task's exit."""


@dataclass(frozen=True)
class RankDecision:
    """The rank the verdict names (or None), where it ran, and the rule that settled it."""

    rank: int | None = None
    local_rank: int | None = None
    node: str | None = None
    node_index: int | None = None
    rule: str | None = None
    """The rank rule that settled it; None: the proposed line's own rank."""
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

    def why(self, rule: str, **facts: Any) -> RankDecision:
        """The same place, settled by ``rule`` with ``facts``."""
        return replace(self, rule=rule, facts=facts)

    def unnamed(self, rule: str, **facts: Any) -> RankDecision:
        """No rank is named, by ``rule`` (the node stays)."""
        return replace(self, rank=None, local_rank=None, rule=rule, facts=facts)

    def taken_from(self, r: Event, rule: str) -> RankDecision:
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


RankApply = Callable[[JobView, Proposal, RankDecision], "RankDecision | None"]


@dataclass(frozen=True)
class RankRule:
    """One rank rule: its id, the verdict rules it applies to, and its function."""

    id: str
    verdicts: frozenset[str]
    apply: RankApply
    job_level: bool = False
    """Applies to the whole job's verdict only (not to one attempt's)."""

    @property
    def doc(self) -> str:
        """When the rule applies, and why."""
        return " ".join((self.apply.__doc__ or "").split())


def slurm_end(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """SLURM ended every task of the job: no rank is named (the node the line names stays)."""
    return d.unnamed("slurm-end")


def culprit(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A hang: the rank the hang analysis names as its culprit, with the node it ran on (from
    its own lines, else from the processes per node), or none and the reason why."""
    f = p.hang
    if f is None:
        return None
    if f.rank is None:
        return RankDecision(rule="culprit", facts={"reason": f.reason})
    mine = [r for r in job.rows if r.rank == f.rank]
    node = next((r.node for r in mine if r.node), None)
    local = next((r.local_rank for r in mine if r.local_rank is not None), None)
    index = next((r.node_index for r in mine if r.node_index is not None), None)
    geo = job.geo
    if node is None and geo.nproc_per_node:
        index = f.rank // geo.nproc_per_node
        hosts = {r.host for r in job.rows if r.node_index == index and r.host}
        node = geo.node_label(hosts.pop() if len(hosts) == 1 else None, index)
    facts = {"reason": f.reason, "hang_rule": f.rule}
    return RankDecision(f.rank, local, node, index, "culprit", facts)


def still_working(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A hang whose timeouts name no culprit, but a progress bar in the same log goes on
    counting after the first timeout: some rank was still working in another phase
    (evaluation, data preparation) while the others waited in the collective, blocked. When
    exactly one rank of the job (the world size, else every rank up to the highest that
    reports) is absent from the reports (two or more), that rank kept the others waiting
    (likely, from the logs alone)."""
    f = p.hang
    if f is None or f.rank is not None or p.event is None:
        return None
    reporting = reporting_ranks(p.timeouts)
    if len(reporting) < 2:
        return None
    universe = set(job.universe) | set(range(max(reporting) + 1))
    absent = universe - reporting
    if len(absent) != 1:
        return None
    went_on = bar_went_on(job.rows, p.event)
    (rank,) = absent
    if went_on is None or went_on.rank not in (None, rank):
        return None
    reports = ", ".join(str(r) for r in sorted(reporting))
    out = d.taken_from(went_on, "still-working")
    return replace(out, rank=rank, local_rank=None,
                   facts={"file": went_on.file, "line": went_on.line, "rank": rank,
                          "reporting": reports})


def _who(job: JobView, same: tuple[Event, ...]) -> tuple[str, bool]:
    every = bool(job.universe) and {r.rank for r in same} >= job.universe
    who = f"all {len(same)} ranks" if every else "ranks " + ", ".join(
        str(r.rank) for r in same[:8]
    )
    return who, every


def same_way_first(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """Several ranks failed the same way (pattern and exception type) and one was clearly
    first (by more than the clock-skew tolerance): that rank."""
    if not clearly_first(p.same):
        return None
    who, _every = _who(job, p.same)
    first = p.same[0]
    return replace(d.why("same-way-first", who=who, rank=first.rank), evidence=p.same[1:3])


def same_way_together(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """Several ranks failed the same way at the same time: no single rank to blame (nor a
    node, when every rank did)."""
    if len(p.same) < 2 or clearly_first(p.same):
        return None
    who, every = _who(job, p.same)
    out = d.unnamed("same-way-together", who=who)
    if every:
        out = replace(out, node=None, node_index=None)
    return replace(out, evidence=p.same[1:3])


def same_way_unranked(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """Copies of the same root that name no rank (processes sharing one stream, each printing
    the same error) while the launcher reports two ranks or more dead on their own (a
    non-zero exit it did not cause): the ranks failed alike, and no rank is taken from a
    line near one copy."""
    e = p.event
    if e is None or d.rank is not None or d.rule is not None:
        return None
    sig = signature(e)
    copies = [r for r in job.roots if r.rank is None and signature(r) == sig]
    if len(copies) < 2:
        return None
    dead = _dead_on_their_own(job)
    if len(dead) < 2:
        return None
    return d.unnamed("same-way-unranked", copies=len(copies), ranks=len(dead))


def another_died(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """The root's rank is known, but the launcher reports only other ranks dead on their own
    (a non-zero exit it did not cause) and never this one: two ranks failed, and nothing
    orders the error shown against the exit reported, so none is named."""
    e = p.event
    if e is None or d.rank is None or not _alone(p):
        return None
    dead = _dead_on_their_own(job)
    if not dead or d.rank in dead:
        return None
    if any(r.rank == d.rank and (r.tagged("death") or r.tagged("childfailed-field"))
           for r in job.rows):
        return None  # the launcher reports this rank too (stopped by it, or its own record)
    return d.unnamed("another-died", rank=d.rank, others=", ".join(map(str, sorted(dead))))


def _dead_on_their_own(job: JobView) -> set[int]:
    """Ranks the launcher reports dead with a non-zero exit code it did not cause itself (its
    exit lines, the exit codes of a ChildFailedError table)."""
    return {
        r.rank
        for r in job.rows
        if (r.tagged("death") or r.tagged("childfailed-field"))
        and r.rank is not None
        and r.role_of("exit_code") not in (None, "0", *KILLED_BY_LAUNCHER)
        and r.role_of("signal") not in KILLED_BY_LAUNCHER
    }


def _alone(p: Proposal) -> bool:
    """The proposed failure shows on fewer than two ranks."""
    return len(p.same) < 2


def peer_died_first(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """An unranked link error after a worker died: the error is the death's echo, so the
    reporting rank is not blamed."""
    e = p.event
    if e is None or not _alone(p) or d.rank is not None or d.rule is not None:
        return None
    if e.category != Category.NETWORK or e.time is None:
        return None
    died = [
        r for r in job.active if r.tagged("death") and r.time is not None and r.time < e.time - SKEW
    ]
    if not died:
        return None
    return d.why("peer-died-first", file=died[0].file, line=died[0].line)


def from_line(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """An unranked root (a scheduler line) takes the rank of the one rank whose events of the
    same category (or its kin) are within two minutes of it."""
    e = p.event
    if e is None or not _alone(p) or d.rank is not None or d.rule is not None:
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
    return d.taken_from(near[0], "from-line")


def traceback_below(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """An unranked root line followed at once (within two lines, or past empty lines only:
    ``_near``; same file) by one rank's traceback takes that rank: a message the runtime
    writes past the launcher's rank prefix (CUDA's device-side assert, a C++ abort) and the
    Python traceback it raises in that rank."""
    e = p.event
    if e is None or not _alone(p) or d.rank is not None or d.rule is not None:
        return None
    below = [
        r
        for r in job.active
        if _near(e, r) and r.rank is not None and r.traceback is not None
    ]
    if len({r.rank for r in below}) != 1:
        return None
    return d.taken_from(below[0], "traceback-below")


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
    e = p.event
    if e is None or not _alone(p) or d.rank is not None or d.rule is not None:
        return None
    above = [
        r for r in job.rows if _near(r, e) and r.rank is not None and r.tagged("failing-rank")
    ]
    if len({r.rank for r in above}) != 1:
        return None
    return d.taken_from(above[0], "named-above")


def own_traceback(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A verdict made from a rank's traceback cut before its exception line (a paste that
    ends inside it): the frames are that rank's own code raising, not a sign of another
    rank's failure, so the rank is named (likely: the exception itself is not shown)."""
    e = p.event
    if e is None or d.rank is None or d.rule is not None or not e.tagged("uncatalogued"):
        return None
    return d.why("own-traceback", rank=d.rank)


def victim(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A verdict made from a symptom does not name the symptom's rank (unless the line
    records that rank's own death): the rank is where the failure showed, not where it
    began."""
    e = p.event
    if e is None or d.rank is None or d.rule is not None or e.tagged("death"):
        return None
    return d.unnamed("victim", rank=d.rank)


def only_death(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """An unranked verdict takes the rank of the one worker the launcher reports dead, when
    exactly one is (torchrun's ``failed (exitcode: 1) local_rank: 0``, mp.spawn's process
    exits): the line came from the process that died. Workers it SIGTERMed do not count."""
    if d.rank is not None or d.rule not in (None, "victim"):
        return None
    dead: dict[int, Event] = {}
    for r in job.rows:
        if r.rank is None or not r.tagged("death"):
            continue
        if r.role_of("exit_code") in KILLED_BY_LAUNCHER or r.role_of("signal") in (
            KILLED_BY_LAUNCHER
        ):
            continue
        dead.setdefault(r.rank, r)
    if len(dead) != 1:
        return None
    (r,) = dead.values()
    return d.taken_from(r, "only-death")


def srun_exit(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """An unprefixed root line takes its node from srun's task exits, when they single one
    out: a task that exits on its own (an exit code, not a SIGTERM/SIGKILL from srun) right
    below the line, or the only task that exits on its own. The first task to exit is not
    enough by itself: in a two-node job the healthy node's agent often exits first."""
    e = p.event
    if e is None or d.node is not None or d.rank is not None or d.rule is not None:
        return None
    exits = [
        r
        for r in job.rows
        if r.tagged("task-exit")
        and r.role_of("exit_code") is not None
        and (r.role_of("task") or "").isdecimal()
    ]
    tasks = {int(r.role_of("task") or 0) for r in exits}
    if not tasks:
        return None
    last = e.line  # an assembled traceback's line is its closing exception line
    below = [r for r in exits if r.file == e.file and last < r.line <= last + NEAR_LINES]
    if len(tasks) == 1:
        first = exits[0]
    elif below:
        first = min(below, key=lambda r: r.line)
    else:
        return d.why("srun-exits-many", tasks=len(tasks))
    task = int(first.role_of("task") or 0)
    node = job.geo.node_label(job.geo.task_hosts.get(task), task)
    out = d.why("srun-exit", task=task, file=first.file, line=first.line)
    return replace(out, node=node, node_index=task)


def uniform(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A start-up error every rank raises alike (a bad argument, a missing module) names no
    rank when the logs show no other rank: the launcher reported the first copy it saw. Other
    ranks seen without it (a node with a broken environment), or a launcher that reports this
    rank as the only one that died on its own and stopped the others, keep the rank."""
    e = p.event
    if e is None or not _alone(p) or d.rank is None:
        return None
    if not (info(e.category).uniform or e.tagged("uniform") or uniform_by_detail(e, job.rows)):
        return None
    if _launcher_singled_out(job, d.rank):
        return None
    sig = signature(e)
    others = any(
        r.rank is not None and r.rank != d.rank and r.role != "context" and signature(r) != sig
        for r in job.rows
    )
    return None if others else d.unnamed("uniform", rank=d.rank)


def _launcher_singled_out(job: JobView, rank: int) -> bool:
    """The launcher reports ``rank`` as the only worker that died on its own (an exit record
    of its own) and stopped the others itself (SIGTERM): the failure was not every rank's."""
    own: set[int] = set()
    stopped = False
    for r in job.rows:
        code, sig = r.role_of("exit_code"), r.role_of("signal")
        if code in KILLED_BY_LAUNCHER or sig in KILLED_BY_LAUNCHER:
            stopped = True
        elif r.tagged("death") and r.rank is not None and code not in (None, "0"):
            own.add(r.rank)
    return stopped and own == {rank}


def paste_cut(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """The log begins inside the rank's traceback (a paste cut at the top): what came before
    is missing, so the log cannot show that this rank failed first, unless the launcher reports
    it as the only worker that died on its own (and stopped the others)."""
    e = p.event
    if e is None or not _alone(p) or d.rank is None or not headless(e):
        return None
    if job.geo.world_size == 1 or _launcher_singled_out(job, d.rank):
        return None
    return d.unnamed("paste-cut", rank=d.rank)


def not_joined(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A job that never formed (``stalled-start``): the rank on the last announcement only
    announced itself; the culprits are the ranks that never joined, and they left no line, so
    no rank is named."""
    if d.rank is None:
        return None
    return d.unnamed("not-joined", rank=d.rank)


def only_rank(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A job of one process failed on its only rank, 0 (unless a rule already said why no
    rank is named)."""
    if d.rank is not None or d.rule is not None or job.geo.world_size != 1:
        return None
    return replace(d.why("only-rank"), rank=0, local_rank=0)


_ROOT = frozenset({"root"})
_DEATHS = frozenset({"death-record", "dead-worker"})
_FAILED = frozenset(
    {
        "root", "end-after-symptoms", "slurm-end", "death-record", "cut-traceback", "hang",
        "symptoms", "unknown", "dead-worker",
    }
)

RANK_RULES: tuple[RankRule, ...] = (
    RankRule("slurm-end", frozenset({"slurm-end"}), slurm_end),
    RankRule("culprit", frozenset({"hang", "end-after-symptoms"}), culprit),
    RankRule("still-working", frozenset({"hang", "end-after-symptoms"}), still_working),
    RankRule("same-way-first", _ROOT | _DEATHS, same_way_first),
    RankRule("same-way-together", _ROOT | _DEATHS, same_way_together),
    RankRule("same-way-unranked", _ROOT, same_way_unranked),
    RankRule("peer-died-first", _ROOT, peer_died_first),
    RankRule("from-line", _ROOT, from_line),
    RankRule("traceback-below", _ROOT, traceback_below),
    RankRule("named-above", _ROOT, named_above),
    RankRule("own-traceback", frozenset({"symptoms", "unknown", "cut-traceback"}), own_traceback),
    RankRule("victim", frozenset({"symptoms", "unknown"}), victim),
    RankRule("only-death", frozenset({"root", "unknown", "dead-worker"}), only_death),
    RankRule("srun-exit", _ROOT, srun_exit),
    RankRule("uniform", _ROOT, uniform),
    RankRule("another-died", _ROOT, another_died),
    RankRule("paste-cut", _ROOT, paste_cut),
    RankRule("not-joined", frozenset({"stalled-start"}), not_joined),
    RankRule("only-rank", _FAILED, only_rank, job_level=True),
)
"""The rank rules in the order they apply to a proposal; each sees the decision so far."""


def decide_rank(job: JobView, p: Proposal, whole_job: bool = False) -> RankDecision:
    """The rank decision for proposal ``p``: its event's rank passed through every rank rule
    that applies to ``p``'s verdict rule (the job-level ones only when ``whole_job``)."""
    d = RankDecision.of_event(p.event)
    for rule in RANK_RULES:
        if p.rule not in rule.verdicts or (rule.job_level and not whole_job):
            continue
        d = rule.apply(job, p, d) or d
    return d

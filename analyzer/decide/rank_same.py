"""Rank rules of a failure several ranks share, or every rank would: the first of the ranks that
failed alike, none when they failed together, alike, or a paste hides what came first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from analyzer.catalog.vocabulary import Category, info
from analyzer.decide.ids import Certainty, RankId, VerdictId
from analyzer.decide.jobview import JobView
from analyzer.decide.ordering import SKEW, clearly_first, signature
from analyzer.decide.predicates import (
    dead_first_seen,
    dead_on_their_own,
    death_times,
    exit_record,
    killed_by_launcher,
    launcher_singled_out,
    stopped_the_rest_silently,
)
from analyzer.decide.rank_model import (
    DEATHS,
    ROOTS,
    RankDecision,
    RankRule,
    alone,
    one,
    unnamed,
)
from analyzer.decide.rank_rules import HEADS, headless, uniform_by_detail
from analyzer.decide.rules import Proposal
from analyzer.model.event import CONTEXT, Event


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
    out = d.why(RankId.SAME_WAY_FIRST, who=who, rank=first.rank)
    return replace(out, evidence=p.same[1:3])


def same_way_together(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """Several ranks failed the same way at the same time: no single rank to blame (nor a
    node, when every rank did)."""
    if len(p.same) < 2 or clearly_first(p.same):
        return None
    who, every = _who(job, p.same)
    out = d.unnamed(RankId.SAME_WAY_TOGETHER, who=who)
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
    dead = dead_first_seen(job.rows)
    copies = [r for r in job.roots if r.rank is None and signature(r) == sig]
    if len(copies) < 2 or len(dead) < 2:
        copies = [r for r in job.roots if r.rank is None and _alike(signature(r), sig)]
        if len(copies) < 2 or not _stopped_alike(job, copies, dead):
            return None
    return d.unnamed(RankId.SAME_WAY_UNRANKED, copies=len(copies), ranks=len(dead))


def _stopped_alike(job: JobView, copies: list[Event], dead: set[int]) -> bool:
    """The launcher reports one rank dead and stopped the others (SIGTERM, by rank or by pid),
    and three copies or more, all printed within the clock skew (undated: all above the
    launcher's first stop, ``_before_the_stop``), are no more than those ranks (or it stops
    the others silently): each copy is a different process failing alike (torchrun kills the
    rest as soon as the first one exits, so it reports only one death). Two copies may be one
    process printing its error twice (the handler that logs it, then the exception): they keep
    the rank, unless each is a whole traceback of its own (``_whole``)."""
    times = [r.time for r in copies if r.time is not None]
    if not dead or len(copies) < (2 if _whole(copies) else 3):
        return False
    silent = _silent_records(job)
    named = _named_workers(job, dead)
    if named < len(copies) and not silent:  # past the check above: whole copies, or three
        return False
    if len(times) == len(copies):
        return max(times) - min(times) <= SKEW
    return _before_the_stop(job, copies, silent)


def _named_workers(job: JobView, dead: set[int]) -> int:
    """Workers the launcher names: dead on their own, stopped by rank or by pid only (torchrun's
    "Sending process 143 closing signal SIGTERM")."""
    stopped = {r.rank for r in job.rows if r.rank is not None and killed_by_launcher(r)}
    signalled = {
        r.role_of("pid") for r in job.rows if r.rank is None and killed_by_launcher(r)
    } - {None}
    return len(dead | stopped) + len(signalled)


def _silent_records(job: JobView) -> list[Event]:
    """The death records of a launcher that stops the other workers without a line (tag
    ``stops-silently``: mp.spawn's ``process N terminated with exit code 1``, mpirun's first
    non-zero exit). Its record names only the first death it saw, and the workers it stopped
    are not in view, so copies of one error above it are each a worker's own, however many it
    names: the PyTorch DDP tutorial in a notebook (four children's ``Can't get attribute
    'demo_basic'``; part M), PaddlePaddle/Paddle#44261 (eight children's copies)."""
    return [r for r in job.rows if stopped_the_rest_silently(r)]


def _whole(copies: list[Event]) -> bool:
    """Each copy is a traceback from its first line (``Traceback (most recent call last):``),
    in a file of its own or apart from the others: two whole tracebacks of one error above
    the launcher's stop are two processes (a handler that logs an error prints a line or its
    own traceback with another exception type, and ``same_way_unranked`` compares types). Seen
    in F5-TTS's Kaggle notebook (two ranks' Triton ``OutOfResources``, torchrun's record of
    the one it saw exit first; part L), an accelerate FSDP run's two ranks' ``RuntimeError``
    (part J) and GLM-130B's eight ranks (part L)."""
    return all(c.traceback is not None and not headless(c) for c in copies)


def _before_the_stop(
    job: JobView, copies: list[Event], silent: Sequence[Event] = ()
) -> bool:
    """Undated copies, all in one file above the launcher's first stop of a worker there: each
    was printed before the launcher reacted to the first exit, so none came after another's
    death. Seen once in the corpus (GLM-130B's eight ranks' AssertionError above torchrun's
    SIGTERMs, part L); the shape is any torchrun stream without times, where the agent stops
    the other workers right after the first exit."""
    files = {c.file for c in copies}
    if len(files) != 1:
        return False
    (f,) = files
    stops = [r.line for r in job.rows if r.file == f and killed_by_launcher(r)]
    stops += [r.line for r in silent if r.file == f]  # the silent launcher's record is its stop
    return bool(stops) and max(c.line for c in copies) < min(stops)


def _alike(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Two signatures of one error: the same pattern, and the same exception type where both
    lines name one (a traceback's line names it, the same message printed bare does not)."""
    return a[0] == b[0] and (a[1] == b[1] or not a[1] or not b[1])


def another_died(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """The root's rank is known, but the launcher reports only other ranks dead on their own
    (a non-zero exit it did not cause) and never this one: two ranks failed, and nothing
    orders the error shown against the exit reported, so none is named."""
    e = p.event
    if e is None or d.rank is None or not alone(p):
        return None
    dead = dead_on_their_own(job.rows) - _waited(job)
    if any(r.rank == d.rank and exit_record(r) for r in job.rows):
        return None  # the launcher reports this rank too (stopped by it, or its own record)
    if dead and d.rank not in dead:
        others = ", ".join(map(str, sorted(dead)))
    elif not dead and (local := _other_local_death(job, d.rank)) is not None:
        others = f"local rank {local} of {e.file}'s launcher"
    else:
        return None
    return d.unnamed(RankId.ANOTHER_DIED, rank=d.rank, others=others)


def _other_local_death(job: JobView, rank: int) -> int | None:
    """The local rank of a worker that an agent reports dead on its own by local rank only
    (torchrun's ``failed (exitcode: 1) local_rank: 1 (pid: 155027)``, no global rank), when
    that worker cannot be ``rank``: the agent names more workers (pids it stopped or saw die)
    than ``rank``, so ``rank`` would be its local rank on this agent's node, and it is another.
    On any other node the record is another process anyway. Seen in two projects' issues
    (part L): Vad-R1 (``[rank2]:`` OOM, the agent's record of local rank 1 among 4 workers) and
    StepVideo (``[rank3]:`` OOM, local rank 2's record; three pids in view, so rank 3 is not
    settled by it and stays ``possible`` from the cut paste)."""
    for r in job.rows:
        local = r.local_rank
        if r.rank is not None or local is None or not r.tagged("death"):
            continue
        if killed_by_launcher(r) or r.role_of("exit_code") in (None, "0"):
            continue
        pids = {
            x.role_of("pid")
            for x in job.rows
            if x.file == r.file and (killed_by_launcher(x) or x is r)
        } - {None}
        if rank < len(pids) and rank != local:
            return local
    return None


def _waited(job: JobView) -> set[int]:
    """Ranks whose own lines report a collective that timed out: their death (the watchdog's
    SIGABRT, torch's teardown) is the wait's end, not a failure of their own. Seen in the wild
    corpus: a ring-attention benchmark whose rank 1 aborted 600 s after rank 0's CUDA OOM
    (torchrun's Root Cause names rank 1), and the Xid 48 job whose rank 0 timed out after
    rank 1's ECC abort."""
    return {
        r.rank
        for r in job.symptoms
        if r.rank is not None and r.category == Category.COLLECTIVE_TIMEOUT
    }


def died_together(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A failure of unknown cause shown through the launcher's records, when one kind of
    record (a ChildFailedError table's exit codes, with a Root Cause entry cut before its own;
    the launcher's exit lines) reports two ranks or more dead on their own within the clock
    skew of each other, this rank among them: the ranks failed together, and the record names
    no culprit (its "Root Cause" is only the first it observed). Times are compared within one
    kind of record, which all take their time from the same place."""
    if d.rank is None:
        return None
    for ranks in death_times(job.rows).values():
        times = [t for t in ranks.values() if t is not None]
        if len(ranks) < 2 or d.rank not in ranks or len(times) < len(ranks):
            continue
        if max(times) - min(times) <= SKEW:
            return d.unnamed(RankId.DIED_TOGETHER, rank=d.rank, ranks=len(ranks))
    return None


def uniform(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A start-up error every rank raises alike (a bad argument, a missing module) names no
    rank when the logs show no other rank: the launcher reported the first copy it saw. Other
    ranks seen without it (a node with a broken environment), or a launcher that reports this
    rank as the only one that died on its own and stopped the others, keep the rank; so does
    a rank taken from its own traceback beside the line (SimpleTuner's collective-mismatch
    report next to rank 7's traceback, part J): it is shown failing its own way."""
    e = p.event
    if e is None or not alone(p) or d.rank is None:
        return None
    if not (info(e.category).uniform or e.tagged("uniform") or uniform_by_detail(e, job.rows)):
        return None
    if _from_own_traceback(d) or launcher_singled_out(job.rows, d.rank):
        return None
    if _seen_without(job, d.rank, signature(e)):
        return None
    return d.unnamed(RankId.UNIFORM, rank=d.rank)


def _from_own_traceback(d: RankDecision) -> bool:
    """The rank was taken from its own traceback beside the line: it failed its own way."""
    return any(x.traceback is not None and x.rank == d.rank for x in d.evidence)


def _seen_without(job: JobView, rank: int, sig: tuple[str, str]) -> bool:
    """Another rank is seen without the error: a line of its own with another signature. A
    launcher's line about another rank (its exit record, its stop) is no such sight: its death
    fits the same error (torchtitan's 8 ranks on a bad option: torchrun shows rank 0's parser
    box, records rank 4's exit 2 first and stops the rest; part M)."""
    return any(
        r.rank is not None
        and r.rank != rank
        and r.role != CONTEXT
        and signature(r) != sig
        and not exit_record(r)
        and not killed_by_launcher(r)
        for r in job.rows
    )


def paste_cut(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """The log begins inside the rank's traceback (a paste cut at the top): what came before
    is missing, so the log cannot show that this rank failed first; it is the only failing
    rank in view, named as *possible* (a failure one rank has on its own: an error every rank
    raises alike is settled before, by ``uniform``). The launcher reporting it as the only
    worker that died on its own (and stopped the others) keeps it certain."""
    e = p.event
    if e is None or not alone(p) or d.rank is None or not headless(e):
        return None
    if job.geo.world_size == 1 or launcher_singled_out(job.rows, d.rank):
        return None
    return d.why(RankId.PASTE_CUT, rank=d.rank)


def earlier_traceback(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """Another rank's traceback begins above the named rank's error in the same log, and its
    own error line is not in view (a paste cut inside it): that rank failed too, perhaps
    first, so the named rank is only *possible*. A traceback dated after the error, or one in
    another file, orders nothing. Shapes: torchtune's ``[rank0]: Traceback`` cut above rank 1's
    watchdog CUDA error (part K); an issue paste that keeps one rank's frames and another's
    error. The class is one of evidence, not of a project: any merged stream where a rank's
    failure is shown without its error line."""
    e = p.event
    if e is None or d.rank is None or e.rank != d.rank:
        return None
    for r in job.rows:
        if r.file != e.file or r.line >= e.line or r.rank is None or r.rank == d.rank:
            continue
        if r.traceback is None or not r.message.startswith(HEADS):
            continue  # not a traceback, or one whose error line was read
        if r.time is not None and e.time is not None and r.time > e.time:
            continue
        return d.why(RankId.EARLIER_TRACEBACK, rank=d.rank, other=r.rank)
    return None


SAME_WAY_FIRST = RankRule(
    one(
        RankId.SAME_WAY_FIRST,
        "{who} failed the same way; rank {rank} was first",
        Certainty.CERTAIN,
    ),
    ROOTS | DEATHS,
    same_way_first,
)
SAME_WAY_TOGETHER = RankRule(
    unnamed(
        RankId.SAME_WAY_TOGETHER,
        "{who} failed the same way at the same time: no single rank to blame",
    ),
    ROOTS | DEATHS,
    same_way_together,
)
SAME_WAY_UNRANKED = RankRule(
    unnamed(
        RankId.SAME_WAY_UNRANKED,
        "{copies} unlabelled copies of this error, and the launcher reports {ranks} ranks dead "
        "on their own: the ranks failed alike, no single rank to blame",
    ),
    ROOTS,
    same_way_unranked,
)
DIED_TOGETHER = RankRule(
    unnamed(
        RankId.DIED_TOGETHER,
        "the launcher reports {ranks} ranks dead on their own in the same second: they failed "
        "together, and rank {rank}'s record is only the first it observed",
    ),
    frozenset({VerdictId.UNKNOWN, VerdictId.DEAD_WORKER}),
    died_together,
)
UNIFORM = RankRule(
    unnamed(
        RankId.UNIFORM,
        "every rank raises this alike at start-up; the logs show it on rank {rank} only, which "
        "names no culprit",
    ),
    ROOTS,
    uniform,
)
ANOTHER_DIED = RankRule(
    unnamed(
        RankId.ANOTHER_DIED,
        "rank {rank} shows the error, but the launcher reports rank(s) {others} dead on their "
        "own and not rank {rank}: nothing orders the two, no single rank to blame",
    ),
    ROOTS,
    another_died,
)
PASTE_CUT = RankRule(
    one(
        RankId.PASTE_CUT,
        "the only failing rank in view; the log begins inside rank {rank}'s traceback, so what "
        "came before was cut off and it cannot show that this rank failed first",
        Certainty.POSSIBLE,
    ),
    ROOTS,
    paste_cut,
)
EARLIER_TRACEBACK = RankRule(
    one(
        RankId.EARLIER_TRACEBACK,
        "rank {other}'s traceback begins above rank {rank}'s error and its own error line is not "
        "in view: rank {other} failed too, perhaps first",
        Certainty.POSSIBLE,
    ),
    ROOTS,
    earlier_traceback,
)

RULES: tuple[RankRule, ...] = (
    SAME_WAY_FIRST,
    SAME_WAY_TOGETHER,
    SAME_WAY_UNRANKED,
    DIED_TOGETHER,
    UNIFORM,
    ANOTHER_DIED,
    PASTE_CUT,
    EARLIER_TRACEBACK,
)
"""This family's rules (``rank_decision`` orders them as ``RankId`` declares them)."""

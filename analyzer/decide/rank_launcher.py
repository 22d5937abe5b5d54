"""Rank rules that read what the launcher and the scheduler report: SLURM's end, the workers
the launcher reports dead, srun's task exits, a job that never formed, a job of one process."""

from __future__ import annotations

from dataclasses import replace

from analyzer.catalog.vocabulary import Category
from analyzer.decide.ids import Certainty, RankId, VerdictId
from analyzer.decide.jobview import JobView
from analyzer.decide.ordering import SKEW
from analyzer.decide.predicates import (
    aborted,
    dead_not_stopped,
    died_on_its_own,
    exit_record,
    launcher_singled_out,
    own_task_exit,
)
from analyzer.decide.rank_model import (
    FAILED,
    NEAR_LINES,
    ROOTS,
    Outcome,
    RankDecision,
    RankRule,
    one,
    unnamed,
    unsettled,
)
from analyzer.decide.rules import Proposal
from analyzer.model.event import ROOT, Event


def slurm_end(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """SLURM ended every task of the job: no rank is named (the node the line names stays)."""
    return d.unnamed(RankId.SLURM_END)


def peer_died_first(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """An unranked link error after a worker died: the error is the death's echo, so the
    reporting rank is not blamed."""
    e = unsettled(p, d)
    if e is None or e.category != Category.NETWORK or e.time is None:
        return None
    died = [
        r for r in job.active if r.tagged("death") and r.time is not None and r.time < e.time - SKEW
    ]
    if not died:
        return None
    return d.why(RankId.PEER_DIED_FIRST, file=died[0].file, line=died[0].line)


def only_death(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """An unranked verdict takes the rank of the one worker the launcher reports dead, when
    exactly one is (torchrun's ``failed (exitcode: 1) local_rank: 0``, mp.spawn's process
    exits, a ChildFailedError table's one exit code: a native stack above ``Root Cause … rank
    : 1 … exitcode : -6``): the line came from the process that died. Workers it SIGTERMed do
    not count."""
    if d.rank is not None or d.rule not in (None, RankId.VICTIM):
        return None
    dead: dict[int, Event] = {}
    for r in job.rows:
        if (dead_not_stopped(r) or died_on_its_own(r)) and r.rank is not None:
            dead.setdefault(r.rank, r)
    if len(dead) != 1:
        return None
    (r,) = dead.values()
    return d.taken_from(r, RankId.ONLY_DEATH)


def first_observed(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A failure known only from the launcher's record of one worker's exit by its local rank
    (taken as global on what looks like one node; no line of the worker's own says anything),
    when the launcher did not stop the others after it: the record names the first exit it
    observed, the only failing rank in view, so *possible*.
    Seen in part N (a torchrun agent of a multi-node job naming local rank 0 on a node the log
    does not place: a wrong accusation before) and in pastes of that record alone
    (showlab/EgoVLP#21, Facico/Chinese-Vicuna#113); hiyouga/LlamaFactory#701's table shows why
    the first record is no culprit: ranks 1, 2 and 3 exited 1 alike. A launcher that stopped
    the other workers after this exit (``launcher_singled_out``) keeps the rank.
    A record by global rank (a ChildFailedError table) is read the same way when its worker
    died of SIGABRT: ProcessGroupNCCL's watchdog aborts a rank that timed out *waiting*, so the
    first abort the launcher saw may be a waiter's (bghira/SimpleTuner's validation hang, part N;
    an accelerate validation broadcast and DiscoScene's rank 7 in the wild corpus)."""
    e = p.event
    if e is None or d.rank is None or d.rule is not None or not exit_record(e):
        return None
    if not ((e.tagged("death") and e.rank_assumed) or aborted(e)):
        return None  # a record with the global rank and a cause of the worker's own
    if launcher_singled_out(job.rows, d.rank):
        return None
    return d.why(RankId.FIRST_OBSERVED, rank=d.rank)


_TASK_DEATHS = frozenset({Category.HOST_OOM, Category.NATIVE_CRASH})
"""The causes srun's own task records name (``task N: Out Of Memory``, ``task N: Segmentation
fault``)."""


def srun_task(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """An unranked host-OOM or native-crash verdict takes the task srun names dead of that
    cause, when it names exactly one and nothing maps srun's tasks to ranks or to nodes running a
    launcher (no processes-per-node count above one): srun then ran one process per task, so the
    task id is the rank, but that is read from srun's record alone (``possible``). Seen with
    Megatron-DeepSpeed on Perlmutter (task 2 OOM-killed), a pyxis container import (task 0) and
    a plain PyTorch srun job (task 0) in the wild corpus. A verdict made from srun's record of
    one task's exit (no line says why) takes that task the same way (facebookresearch/deit under
    submitit: ``task 5: Exited with exit code 1``, the step then torn down)."""
    e = p.event
    if e is None or d.rank is not None or d.rule not in (None, RankId.VICTIM):
        return None
    if (job.geo.nproc_per_node or 1) > 1:
        return None
    named = _named_tasks(job, e)
    if len(named) != 1:
        return None
    task = int(named.pop() or 0)
    return replace(d.why(RankId.SRUN_TASK, task=task), rank=task)


def _named_tasks(job: JobView, e: Event) -> set[str | None]:
    """The tasks srun names dead of ``e``'s cause, or ``e``'s own task when the verdict is
    srun's record itself (no line says why), or, for another cause, the task that exited on
    its own on the verdict line's node (nccl-tests on Alps: task 159's ECC error, the only
    task to exit with a code while srun terminated the other 511)."""
    if e.tagged("task-exit"):
        return {e.role_of("task")} if (e.role_of("task") or "").isdecimal() else set()
    if e.category not in _TASK_DEATHS:
        return _own_exit_on(job, e.node or e.host)
    named = [
        r for r in job.rows if r.category == e.category and (r.role_of("task") or "").isdecimal()
    ]
    # srun's record that says why (``task 25: Out Of Memory``, a root) outweighs its bare
    # ``Killed`` records, which are also its teardown of a cancelled step (Leonardo's 100-task
    # MPI job, part N; the MLPerf runs' ``task 5: Out Of Memory``)
    roots = [r for r in named if r.role == ROOT]
    return {r.role_of("task") for r in roots or named}


def _own_exit_on(job: JobView, host: str | None) -> set[str | None]:
    """The task srun reports exiting on its own (an exit code, not srun's or SLURM's stop),
    when it is the only one in the job, srun reports the other tasks stopped (``Terminated``)
    and it ran on ``host``, the verdict line's node: the task that failed where the error was
    printed. Two tasks or more that exited alike name none."""
    own = [r for r in job.rows if _task_exit(r) and own_task_exit(r)]
    if host is None or len({r.role_of("task") for r in own}) != 1:
        return set()
    if not any(r.tagged("task-exit") and not own_task_exit(r) for r in job.rows):
        return set()  # one task in view: nothing shows the others were stopped after it
    return {r.role_of("task") for r in own if r.role_of("host") == host}


def srun_exit(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """An unprefixed root line takes its node from srun's task exits, when they single one
    out: a task that exits on its own (an exit code, not a SIGTERM/SIGKILL from srun) right
    below the line, or the only task that exits on its own. The first task to exit is not
    enough by itself: in a two-node job the healthy node's agent often exits first."""
    e = p.event
    if e is None or d.node is not None or d.rank is not None or d.rule is not None:
        return None
    exits = [r for r in job.rows if _task_exit(r)]
    tasks = {int(r.role_of("task") or 0) for r in exits}
    if not tasks:
        return None
    first = _exit_of(e, exits, len(tasks))
    if first is None:
        return d.why(RankId.SRUN_EXITS_MANY, tasks=len(tasks))
    task = int(first.role_of("task") or 0)
    node = job.geo.node_label(job.geo.task_hosts.get(task), task)
    out = d.why(RankId.SRUN_EXIT, task=task, file=first.file, line=first.line)
    return replace(out, node=node, node_index=task)


def _exit_of(e: Event, exits: list[Event], tasks: int) -> Event | None:
    """The task exit that singles out ``e``'s task: the only task's, or the first right below
    ``e`` (an assembled traceback's line is its closing exception line); None: neither."""
    if tasks == 1:
        return exits[0]
    below = [r for r in exits if r.file == e.file and e.line < r.line <= e.line + NEAR_LINES]
    return min(below, key=lambda r: r.line) if below else None


def _task_exit(r: Event) -> bool:
    """An srun task's exit line with an exit code and a task number."""
    return (
        r.tagged("task-exit")
        and r.role_of("exit_code") is not None
        and (r.role_of("task") or "").isdecimal()
    )


def not_joined(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A job that never formed (``stalled-start``): the rank on the last announcement only
    announced itself; the culprits are the ranks that never joined, and they left no line, so
    no rank is named."""
    if d.rank is None:
        return None
    return d.unnamed(RankId.NOT_JOINED, rank=d.rank)


def only_rank(job: JobView, p: Proposal, d: RankDecision) -> RankDecision | None:
    """A job of one process failed on its only rank, 0 (unless a rule already said why no
    rank is named)."""
    if d.rank is not None or d.rule is not None or job.geo.world_size != 1:
        return None
    return replace(d.why(RankId.ONLY_RANK), rank=0, local_rank=0)


SLURM_END = RankRule(
    unnamed(RankId.SLURM_END, "SLURM ended every task of the job"),
    frozenset({VerdictId.SLURM_END}),
    slurm_end,
)
PEER_DIED_FIRST = RankRule(
    unnamed(
        RankId.PEER_DIED_FIRST,
        "a worker died before this link error ({file}:{line}); the reporting rank is not blamed",
    ),
    ROOTS,
    peer_died_first,
)
ONLY_DEATH = RankRule(
    one(
        RankId.ONLY_DEATH,
        "the only worker the launcher reports dead ({file}:{line})",
        Certainty.CERTAIN,
    ),
    frozenset({VerdictId.ROOT, VerdictId.UNKNOWN, VerdictId.DEAD_WORKER}),
    only_death,
)
FIRST_OBSERVED = RankRule(
    one(
        RankId.FIRST_OBSERVED,
        "only the launcher's record of rank {rank}'s exit is in view: the first exit it "
        "observed, the only failing rank in view",
        Certainty.POSSIBLE,
    ),
    frozenset({VerdictId.DEAD_WORKER, VerdictId.UNKNOWN, VerdictId.DEATH_RECORD}),
    first_observed,
)
SRUN_TASK = RankRule(
    one(
        RankId.SRUN_TASK,
        "srun names task {task} dead of this cause, and nothing shows a launcher inside srun: "
        "the task id taken as the rank",
        Certainty.POSSIBLE,
    ),
    frozenset({VerdictId.ROOT, VerdictId.DEAD_WORKER, VerdictId.UNKNOWN}),
    srun_task,
)
SRUN_EXIT = RankRule(
    (
        Outcome(
            RankId.SRUN_EXIT,
            "node from srun's exit of task {task} ({file}:{line})",
            names_rank=False,
        ),
        Outcome(
            RankId.SRUN_EXITS_MANY,
            "the line carries no node label, and {tasks} srun tasks exited on their own: no "
            "node is named",
            names_rank=False,
        ),
    ),
    ROOTS,
    srun_exit,
)
NOT_JOINED = RankRule(
    unnamed(
        RankId.NOT_JOINED,
        "rank {rank} only announced itself; the ranks that never joined left no line, so none "
        "is named",
    ),
    frozenset({VerdictId.STALLED_START}),
    not_joined,
)
ONLY_RANK = RankRule(
    one(RankId.ONLY_RANK, "the job ran a single process: rank 0", Certainty.CERTAIN),
    FAILED,
    only_rank,
    job_level=True,
)

RULES: tuple[RankRule, ...] = (
    SLURM_END,
    PEER_DIED_FIRST,
    ONLY_DEATH,
    FIRST_OBSERVED,
    SRUN_TASK,
    SRUN_EXIT,
    NOT_JOINED,
    ONLY_RANK,
)
"""This family's rules (``rank_decision`` orders them as ``RankId`` declares them)."""

"""Promotions: lines whose meaning depends on other lines change role (a rendezvous root, a
survived error).

Each promotion is a small rule (an id, a docstring that says when it applies and why) from the
rows to the rows with some events replaced; ``promote`` applies them in order. They never
change the rows they are given.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import regex

from analyzer.catalog.vocabulary import SLURM_END_CATEGORIES, Category
from analyzer.decide import wording
from analyzer.decide.predicates import carried_on, exit_code, exit_code_stopped, own_task_exit
from analyzer.decide.promote_end import (
    died_then_finished,
    escalated_kill,
    finished_then_exited,
    interrupted,
    relaunched,
    restarted_and_finished,
)
from analyzer.decide.rowmemo import per_rows
from analyzer.model.event import CONTEXT, ROOT, SYMPTOM, Event


def over_joined(rows: Sequence[Event]) -> list[Event]:
    """A line saying more workers joined than the world holds (a capture with role ``joined``
    above the one with role ``world_size``) is a rendezvous root whatever its own role: two
    jobs, or a stale ``file://`` store, share one store."""
    return [_over_joined(r) or r for r in rows]


def _over_joined(r: Event) -> Event | None:
    if "joined" not in r.role_names:
        return None  # most lines: no such capture to compare
    joined, world = r.role_of("joined") or "", r.role_of("world_size") or ""
    if not (joined.isdecimal() and world.isdecimal() and int(joined) > int(world) > 0):
        return None
    return replace(
        r,
        role=ROOT,
        category=Category.RENDEZVOUS,
        title=wording.OVER_JOINED_TITLE,
        cause=wording.over_joined_cause(joined, world),
        fix=wording.OVER_JOINED_FIX,
        fix_exact=True,
    )


def claimed_twice(rows: Sequence[Event]) -> list[Event]:
    """The second claim of one global rank in one file and attempt (tag ``rank-claim``)
    becomes a rendezvous root: two launchers handed out the same ranks (Lightning started by
    srun without one task per GPU, two agents per node), so the world can never form. Training
    after the first claim (any rank's progress in that file and attempt) shows the world
    formed: the processes announced their ranks again (Lightning's line, once per strategy
    set-up: training, then an evaluation phase, in MLPerf stable-diffusion runs of two
    submitters, wild corpus part M)."""
    first: dict[tuple[str, int | None, int], Event] = {}
    promoted: dict[int, Event] = {}
    progress: dict[tuple[str, int | None], int] = {}
    for r in rows:
        if carried_on(r):
            key = (r.file, r.attempt)
            progress[key] = max(progress.get(key, 0), r.line)
    for i, r in enumerate(rows):  # rows are in file and line order
        rank = r.rank
        if rank is None or not r.tagged("rank-claim"):
            continue
        earlier = first.setdefault((r.file, r.attempt, rank), r)
        if earlier is not r and progress.get((r.file, r.attempt), 0) <= earlier.line:
            promoted[i] = replace(
                r,
                role=ROOT,
                category=Category.RENDEZVOUS,
                title=wording.CLAIMED_TWICE_TITLE,
                cause=wording.claimed_twice_cause(rank, r.file, earlier.line, r.line),
                fix=wording.CLAIMED_TWICE_FIX,
                fix_exact=True,
            )
    return [promoted.get(i, r) for i, r in enumerate(rows)]


def survived(rows: Sequence[Event]) -> list[Event]:
    """A root after which its writer kept training (an iteration line or a finished
    checkpoint save later in the same file and attempt, from the same rank, or from any rank
    when the root's own line names none) is a survived error, not the cause: it becomes
    context tagged ``survived`` (the report lists it as a note). A death or a SLURM end never
    survives, and a line's level decides nothing: what followed it does. Training printed
    below a later launch's start-up line (tag ``launch-start``) is that launch's: a file the
    job was launched again into (PaddlePaddle's ``workerlog.N``, opened in append mode) shows
    nothing of the earlier run going on."""
    last: dict[tuple[str, int | None], list[Event]] = {}
    starts: dict[str, list[int]] = {}
    for r in rows:
        if carried_on(r):
            last.setdefault((r.file, r.attempt), []).append(r)
        elif r.tagged("launch-start"):
            starts.setdefault(r.file, []).append(r.line)
    if not last:
        return list(rows)
    for lines in starts.values():
        lines.sort()
    return [
        _survived(r, last.get((r.file, r.attempt), ()), starts.get(r.file, ())) or r
        for r in rows
    ]


def _survived(r: Event, later: Sequence[Event], starts: Sequence[int]) -> Event | None:
    if r.role != ROOT or r.tagged("death") or r.category in SLURM_END_CATEGORIES:
        return None
    went_on = next((p for p in later if _went_on_after(r, p, starts)), None)
    if went_on is None:
        return None
    return replace(
        r,
        role=CONTEXT,
        tags=r.tags | {"survived"},
        cause=wording.survived_note(r.title or r.category, r.file, r.line, went_on.line),
    )


def _went_on_after(r: Event, p: Event, starts: Sequence[int]) -> bool:
    """Whether progress line ``p`` shows ``r``'s writer training on after ``r``: below it with
    no launch started between, from its rank (or any, when ``r`` names none and did not end its
    program), and not earlier in time."""
    return (
        p.line > r.line
        and not _started_between(starts, r.line, p.line)
        and (r.rank is None or p.rank == r.rank or (p.rank is None and not _uncaught(r)))
        and (r.time is None or p.time is None or p.time >= r.time)
    )


def _started_between(starts: Sequence[int], a: int, b: int) -> bool:
    """Whether a launch started on a line strictly between ``a`` and ``b`` (``starts``: the
    file's start-up lines, in order)."""
    i = bisect_right(starts, a)
    return i < len(starts) and starts[i] < b


_TOP_FRAME = regex.compile(r'File "[^"]*", line \d+, in <module>')


def _uncaught(r: Event) -> bool:
    """Whether ranked root ``r`` is an exception that reached the top of its program (its
    traceback starts in ``<module>``): its process ended there, so an unranked progress line
    after it is another rank's (Megatron prints the iteration line on the last rank alone;
    torchrun's ``--tee`` may write it after the exception that stopped this rank). A traceback
    a handler logged starts in the frame that caught it, and its process may go on."""
    tb = r.traceback or ""
    m = _TOP_FRAME.search(tb, 0, 2000)
    return m is not None and tb[: m.start()].count('File "') == 0


def wrapped(rows: Sequence[Event]) -> list[Event]:
    """A wrapper root whose header names the exception it wraps (its ``exc_type`` in
    parentheses after the wrapper's class, as in Ray's ``RayTaskError(OutOfMemoryError)``)
    becomes a symptom when a later root of the same file and attempt is that exception's own
    line (its ``exc_type`` is the same class name, with or without a module) or a wrapper
    nested in it: the innermost wrapper, and the wrapped exception's own message when the log
    holds it, decide (Ray's memory-monitor kill is a host OOM, whatever the wrapper's class
    name suggests; torch's OOM line names the GPU)."""
    out = list(rows)
    for i, r in enumerate(rows):
        name = r.cap("exc_type") if r.role == ROOT else None
        if name and f"({name})" in r.message and any(_wraps(r, w, name) for w in rows[i + 1 :]):
            out[i] = replace(r, role=SYMPTOM)
    return out


def _wraps(r: Event, w: Event, name: str) -> bool:
    own = w.cap("exc_type") or ""
    return (
        w.role == ROOT
        and w.file == r.file
        and w.attempt == r.attempt
        and own.rsplit(".", 1)[-1] == name
    )


def interrupt_after_stop(rows: Sequence[Event]) -> list[Event]:
    """The launcher's interrupt (SIGINT or SIGHUP, tag ``launcher-interrupt``: a person's stop)
    below its own earlier stop on another signal in the same file (tag ``launcher-stop``:
    torchrun's ``Received 15 death signal``) belongs to that shutdown: the SIGTERM came first,
    so the interrupt is no cause (an OLMo run on 8 GPUs, part P: SIGTERM, then ``got signal:
    1`` while its workers shut down)."""
    stop: dict[str, int] = {}
    for r in rows:
        if r.tagged("launcher-stop"):
            stop.setdefault(r.file, r.line)
    return [
        replace(r, role=SYMPTOM)
        if r.role == ROOT and r.tagged("launcher-interrupt") and stop.get(r.file, r.line) < r.line
        else r
        for r in rows
    ]


def node_failed(rows: Sequence[Event]) -> list[Event]:
    """``CUDA error: unknown error`` (cudaErrorUnknown, which names no cause of its own) in a
    job that SLURM reports a node failure for is that node going down, not a CUDA fault of the
    program: the error becomes a symptom and the node failure is the verdict. Seen on Jean Zay
    in the wild corpus (BigScience's BLOOM and Hugging Face's m4 runs: a node's GPUs fail with
    "unknown error", then ``srun: error: Node failure on …``)."""
    if not any(r.category == Category.SLURM_NODE_FAIL and r.role == ROOT for r in rows):
        return list(rows)
    return [
        replace(r, role=SYMPTOM)
        if r.role == ROOT
        and r.category == Category.CUDA_ERROR
        and (r.cap("exc_msg") or "").startswith("unknown error")
        else r
        for r in rows
    ]


def srun_teardown(rows: Sequence[Event]) -> list[Event]:
    """A cancellation banner that gives no reason (``*** STEP 123.0 ON node CANCELLED AT …
    ***``, tag ``reasonless-cancel``) below an srun task's exit of its own in the same file
    (an exit code, a fatal signal, a kill: not ``Terminated``) is srun tearing the step down
    after that task failed, not a person's ``scancel``: it stays the job's end (the failures above
    it still explain it) but is tagged ``srun-teardown``, so it is never the verdict by itself;
    the tasks srun then kills (``task 3: Killed`` below it) become context, and the task's exit
    decides when nothing says more. So do the tasks srun terminates below a task's own exit,
    banner or not (``tasks 0-2: Terminated`` after ``task 3: Exited with exit code 255`` and
    ``Terminating job step``: a TensorFlow Mesh job at IDRIS, part R; in the wild corpus
    nccl-tests on Alps (task 159), a Megatron job on two nodes (task 1) and a UCX test at NERSC
    (task 0's segfault)): the ``Terminated`` record is srun's SIGTERM, not a cancellation
    that outranks the exit. srun prints the same three lines whatever the
    program: ``task N: Exited with exit code 1`` / ``_step_signal: Terminating StepId=…`` /
    the banner, as in facebookresearch/deit under submitit (task 5), a Megatron-LM job on
    Alps (task 1), a plain PyTorch DDP job on Perlmutter (task 7) and a two-node NCCL job
    (task 1) in the wild corpus; a user's scancel prints the banner first and the task exits
    after it."""
    exits: dict[str, int] = {}
    for r in rows:
        if own_task_exit(r):
            exits.setdefault(r.file, r.line)
    if not exits:
        return list(rows)
    out = list(rows)
    banner: dict[str, int] = {}
    for i, r in enumerate(rows):  # rows are in file and line order
        if r.role == ROOT and r.tagged("reasonless-cancel") and exits.get(r.file, r.line) < r.line:
            banner.setdefault(r.file, r.line)
            out[i] = replace(
                r,
                tags=r.tags | {"srun-teardown"},
                title=wording.SRUN_TEARDOWN_TITLE,
                cause=wording.srun_teardown_cause(r.file, exits[r.file]),
            )
        elif r.file in banner and r.tagged("task-exit") and r.category == Category.HOST_OOM:
            # "task 3: Killed" below the banner: srun's SIGKILL of the step, not the OOM killer
            out[i] = replace(r, role=CONTEXT, cause=wording.SRUN_TEARDOWN_KILL)
        elif (
            r.tagged("task-exit")
            and r.category == Category.SLURM_CANCELLED
            and exits.get(r.file, r.line) < r.line
        ):
            # "tasks 0-2: Terminated" below another task's own exit: srun's SIGTERM of the rest
            out[i] = replace(r, role=CONTEXT, cause=wording.SRUN_TEARDOWN_TERM)
    return out


def store_lost_after_death(rows: Sequence[Event]) -> list[Event]:
    """An agent's lost rendezvous store (``RendezvousConnectionError: The connection to the
    C10d store has failed``, tag ``store-lost``) after a worker died on its own (torchrun's
    ``failed (exitcode: -7) local_rank: 1``, dated before it, or above it in the same file) is
    the teardown: the node hosting the store exited when its worker failed, and the other
    nodes' agents lost it. It becomes a symptom; the death decides. Seen in two-node and
    sixteen-node torchrun jobs under srun (DeepSpeed Ulysses experiments: a SIGBUS; NeMo on
    Perlmutter: a Hydra argument error) in the wild corpus."""
    deaths = [r for r in rows if r.tagged("death") and exit_code(r) and not exit_code_stopped(r)]
    if not deaths:
        return list(rows)
    return [
        replace(r, role=SYMPTOM)
        if r.role == ROOT and r.tagged("store-lost") and any(_before(d, r) for d in deaths)
        else r
        for r in rows
    ]


def _before(a: Event, b: Event) -> bool:
    """``a`` came before ``b``: by their times when both are dated, else by line in one file."""
    if a.time is not None and b.time is not None:
        return a.time < b.time
    return a.file == b.file and a.line < b.line


_TRACEBACK_LINES = 200
"""How far below its header an ignored exception's own line may be (its traceback between)."""


def ignored_exception(rows: Sequence[Event]) -> list[Event]:
    """The first root below CPython's ``Exception ignored in …`` header (tag
    ``exception-ignored``) in the same file, from the same rank, within a traceback's length, is an
    exception Python printed and ignored (a finalizer's, an atexit callback's): it becomes
    context tagged ``survived``. Seen with DeepSpeed's CPU Adam finalizer after a failed build,
    DeepSpeed's triton autotune cache written at exit (the run's own error came later) and
    mp.spawn's exit function interrupted (wild corpus)."""
    out = list(rows)
    pending: dict[tuple[str, int | None], Event] = {}
    for i, r in enumerate(rows):  # rows are in file and line order
        who = (r.file, r.rank)
        if r.tagged("exception-ignored"):
            pending[who] = r
        elif r.role == ROOT and who in pending and r.line - pending[who].line <= _TRACEBACK_LINES:
            mark = pending.pop(who)
            out[i] = replace(
                r,
                role=CONTEXT,
                tags=r.tags | {"survived"},
                cause=wording.ignored_note(r.title or r.category, r.file, r.line, mark.line),
            )
    return out


@dataclass(frozen=True)
class Promotion:
    """One promotion rule."""

    id: str
    apply: Callable[[Sequence[Event]], list[Event]]

    @property
    def doc(self) -> str:
        """When the promotion applies, and why."""
        return (self.apply.__doc__ or "").strip()


PROMOTIONS: tuple[Promotion, ...] = (
    Promotion("over-joined", over_joined),
    Promotion("claimed-twice", claimed_twice),
    Promotion("relaunched", relaunched),
    Promotion("escalated-kill", escalated_kill),
    Promotion("restarted-and-finished", restarted_and_finished),
    Promotion("survived", survived),
    Promotion("finished-then-exited", finished_then_exited),
    Promotion("interrupted", interrupted),
    Promotion("died-then-finished", died_then_finished),
    Promotion("ignored-exception", ignored_exception),
    Promotion("wrapped", wrapped),
    Promotion("interrupt-after-stop", interrupt_after_stop),
    Promotion("node-failed", node_failed),
    Promotion("srun-teardown", srun_teardown),
    Promotion("store-lost-after-death", store_lost_after_death),
)
"""The promotions, in the order they apply."""


def survived_notes(rows: Sequence[Event]) -> list[str]:
    """One note per failure a promotion found the job got past (tag ``survived``: an error its
    writer survived, an attempt the launcher restarted from, a crash at exit after training
    finished, a worker's exit above the job's finish, an exception Python ignored), in row
    order; the promotions are the decision's, in its order. The failures of earlier runs of
    one file (tag ``earlier-run``: a file a job was launched again into ten times holds
    hundreds) are one note, the first's, with their number."""
    notes: list[str] = []
    earlier: dict[str, tuple[int, int]] = {}
    """Per file, the index of its first earlier-run note and how many it stands for."""
    for r in promote(rows):
        if not r.tagged("survived") or r.cause is None:
            continue
        if r.tagged("earlier-run"):
            if r.file in earlier:
                at, n = earlier[r.file]
                earlier[r.file] = (at, n + 1)
                continue
            earlier[r.file] = (len(notes), 1)
        notes.append(r.cause)
    for file, (at, n) in earlier.items():
        if n > 1:
            notes[at] = wording.earlier_runs_note(notes[at], n - 1, file)
    return notes


@per_rows
def promote(rows: Sequence[Event]) -> list[Event]:
    """``rows`` with every promotion applied (a new list; the same one again for the same rows
    object: the decision and its notes both ask, 50 ms at 1,024 ranks)."""
    out = list(rows)
    for p in PROMOTIONS:
        out = p.apply(out)
    return out

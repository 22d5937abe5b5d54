"""What one event says about a worker, named once and used by every rule that asks.

Each predicate tests one line; the rules (verdict rules, rank rules, promotions) combine
them. Where two rules ask close but different questions (a death record that may carry no exit
code, an exit code as a number), each question has its own name here.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from analyzer.catalog.vocabulary import Category
from analyzer.model.event import Event

KILLED_BY_LAUNCHER = frozenset({"-15", "15", "SIGTERM", "-2", "SIGINT"})
"""Exit codes and signals of workers the launcher stopped itself: never the one that failed."""

CARRIED_ON = frozenset(["progress", "checkpoint-save-end", "training-done", "group-succeeded"])
"""Tags of the lines that show a rank still training: an iteration line, a finished save, the
end of the training loop, the launcher's agent reporting its workers finished."""

WENT_ON = frozenset([*CARRIED_ON, "checkpoint-save-begin"])
"""Tags of lines that show a job past its start-up: an iteration line, a checkpoint save
begun or finished."""


def killed_by_launcher(e: Event) -> bool:
    """The line records a worker the launcher stopped itself (its exit code or signal is a
    SIGTERM/SIGINT)."""
    return e.role_of("exit_code") in KILLED_BY_LAUNCHER or e.role_of("signal") in KILLED_BY_LAUNCHER


def exit_record(e: Event) -> bool:
    """The line is the launcher's record of a worker's exit: an exit line (tag ``death``) or
    an exit code of a ChildFailedError table (tag ``childfailed-field``)."""
    return e.tagged("death") or e.tagged("childfailed-field")


def died_on_its_own(e: Event) -> bool:
    """The launcher records a rank's exit with a non-zero exit code, or a signal, it did not
    cause itself (not a SIGTERM/SIGINT it sent): mpirun's "process rank 1 … exited on signal
    11" names a signal and no code."""
    return (
        exit_record(e)
        and e.rank is not None
        and (e.role_of("exit_code") not in (None, "0") or e.role_of("signal") is not None)
        and not killed_by_launcher(e)
    )


def dead_not_stopped(e: Event) -> bool:
    """A rank's death line (tag ``death``, with or without an exit code) that the launcher
    did not cause itself: the process died, whatever its code says."""
    return e.rank is not None and e.tagged("death") and not killed_by_launcher(e)


def exit_code(e: Event) -> int | None:
    """The non-zero exit code (or negative signal) a line records, if any."""
    code = e.role_of("exit_code")
    try:
        n = int(code) if code is not None else 0
    except ValueError:
        return None
    return n or None


_SIGABRT = frozenset({"6", "SIGABRT", "Aborted"})
"""SIGABRT as a signal capture names it: by number (mpirun's ``exited on signal 6 (Aborted)``)
or by name. It is also how ProcessGroupNCCL's watchdog ends a rank that timed out waiting in a
collective (std::terminate after the watchdog's exception)."""


def aborted(e: Event) -> bool:
    """The line records a worker's exit by SIGABRT (exit code -6, or 134 from a shell, or the
    signal)."""
    return exit_code(e) in (-6, 134) or e.role_of("signal") in _SIGABRT


def exit_code_stopped(e: Event) -> bool:
    """The line's exit code, read as a number, is one the launcher's own SIGTERM/SIGINT
    gives (its signal is not looked at)."""
    return str(exit_code(e)) in KILLED_BY_LAUNCHER


def own_task_exit(e: Event) -> bool:
    """srun's record of a task that ended on its own (tag ``task-exit``: an exit code, a fatal
    signal, a kill), not one srun or SLURM stopped (``Terminated``, a SIGTERM/SIGINT code)."""
    return e.tagged("task-exit") and e.category != Category.SLURM_CANCELLED and not (
        exit_code_stopped(e)
    )


def carried_on(e: Event) -> bool:
    """The line shows its writer still training (an iteration line, a finished save)."""
    return not CARRIED_ON.isdisjoint(e.tags)


def went_on(e: Event) -> bool:
    """The line shows the job past its start-up (an iteration line, a save begun or done)."""
    return not WENT_ON.isdisjoint(e.tags)


def dead_on_their_own(rows: Iterable[Event]) -> set[int]:
    """Ranks the launcher reports dead on their own (``died_on_its_own``): its exit lines,
    the exit codes of a ChildFailedError table."""
    return {r.rank for r in rows if died_on_its_own(r) and r.rank is not None}


def stopped_the_rest_silently(e: Event) -> bool:
    """The line is the death record of a launcher that then stops the other workers without a
    line (tag ``stops-silently``: mp.spawn's ``process N terminated``, mpirun's first non-zero
    exit), with or without an exit code on the record's line."""
    return e.tagged("stops-silently") and dead_not_stopped(e)


def dead_first_seen(rows: Iterable[Event]) -> set[int]:
    """``dead_on_their_own``, and the ranks such a launcher records dead
    (``stopped_the_rest_silently``)."""
    seen = list(rows)
    silent = {r.rank for r in seen if stopped_the_rest_silently(r)}
    return dead_on_their_own(seen) | {rk for rk in silent if rk is not None}


def launcher_singled_out(rows: Iterable[Event], rank: int) -> bool:
    """The launcher reports ``rank`` as the only worker that died on its own (an exit line of
    its own) and stopped the others itself (SIGTERM): the failure was not every rank's.
    It must have stopped all the others: a launcher signals every worker still alive, so
    fewer signals than the workers its records show, less one, mean others had exited
    before it looked (``_exits_unseen``)."""
    seen = list(rows)
    stopped = {r.role_of("pid") or (r.rank, r.line) for r in seen if killed_by_launcher(r)}
    own = {r.rank for r in seen if r.tagged("death") and died_on_its_own(r)}
    return bool(stopped) and own == {rank} and not _exits_unseen(seen, len(stopped))


def _exits_unseen(seen: list[Event], stopped: int) -> bool:
    """Whether the launcher signalled fewer workers than were left: a local rank in its
    records shows at least that many workers on a node. torchrun sent one SIGTERM, then
    recorded local rank 5's exit (modded-nanogpt on 8 AMD GPUs, part N) or local rank 2's
    (Salience-DETR under accelerate, part O): the other workers had already exited, so the
    record is the first exit it observed of several."""
    workers = max((r.local_rank for r in seen if r.local_rank is not None), default=-1) + 1
    return stopped + 1 < workers


SIGNAL_CATEGORY: dict[int, str] = {
    -6: Category.NATIVE_CRASH,
    -11: Category.NATIVE_CRASH,
    -7: Category.NATIVE_CRASH,
    -4: Category.NATIVE_CRASH,
    -8: Category.NATIVE_CRASH,
    -9: Category.HOST_OOM,
}
"""What a worker's death by a signal (a negative exit code) says when no line says more:
SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE a native crash; SIGKILL the OOM killer."""


def cut_root_entries(rows: Iterable[Event]) -> dict[int, Event]:
    """The rank of each ChildFailedError "Root Cause" entry cut before its exit code (a paste
    or a log that ends inside the table), with the entry's first line: torchrun lists a rank
    there only when it failed on its own, so the entry records a death even without its
    ``exitcode`` line. A speculators run on NPUs (tests/wild part O) lost rank 1's exit code
    this way, and the table's other row, rank 3 exiting 1 in the same second, was taken as the
    only death."""
    seen = list(rows)
    roots = {(r.file, r.line) for r in seen if r.tagged("childfailed-rootcause")}
    dead = {(r.file, r.rank) for r in seen if r.role_of("exit_code") or r.role_of("signal")}
    return {
        r.rank: r
        for r in seen
        if r.rank is not None
        and r.tagged("childfailed-start")
        and ((r.file, r.line - 1) in roots or (r.file, r.line - 2) in roots)
        and (r.file, r.rank) not in dead
    }


def death_times(rows: Iterable[Event]) -> dict[str, dict[int, datetime | None]]:
    """The ranks each kind of launcher record (a pattern) reports dead on their own, with the
    record's time; a ChildFailedError Root Cause entry cut before its exit code
    (``cut_root_entries``) counts with the table's exit codes."""
    seen = list(rows)
    groups: dict[str, dict[int, datetime | None]] = {}
    for r in seen:
        if died_on_its_own(r) and r.rank is not None:
            groups.setdefault(r.pattern_id, {}).setdefault(r.rank, r.time)
    cut = cut_root_entries(seen) if groups else {}
    for pid, ranks in groups.items():
        if pid.startswith("torchelastic.childfailed."):
            for rank, entry in cut.items():
                ranks.setdefault(rank, entry.time)
    return groups


def cut_own_traceback(e: Event, symptoms: Iterable[Event]) -> bool:
    """Whether ``e`` is a rank's own traceback cut before its exception line (a paste that
    ends inside it): that rank raised an uncaught Python exception whose type the log lost.
    Its owner is its rank, or its local rank where only that is known (mp.spawn's
    ``-- Process 0 terminated with the following error:`` above it: a DIAMOND world-model run,
    part Q, whose peers' store errors followed).
    Left alone, as a collective's unwinding rather than the rank's own failure: a traceback
    through torch/distributed/ (a cut may drop distributed_c10d.py below c10d_logger's
    ``wrapper``: CosyVoice2, part P), and one its rank printed after reporting a collective
    timeout of its own among ``symptoms``: a rank that timed out waiting is a waiter by what
    it said, whatever the frames of its stack (one project seen, a Stable Audio run cut inside
    accelerate's ``prepare``, part Q; the class is the timeout's, not the framework's)."""
    owner = e.rank if e.rank is not None else e.local_rank
    if not (e.tagged("uncatalogued") and owner is not None and not e.cap("exc_type")):
        return False
    if "torch/distributed/" in (e.traceback or "").replace("\\", "/"):
        return False
    return not any(
        t.category == Category.COLLECTIVE_TIMEOUT and t.rank == owner and t.file == e.file
        and t.line < e.line
        for t in symptoms
    )

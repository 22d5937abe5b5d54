"""Promotions by how a job ended: a worker group the launcher restarted and that then
finished, a crash as the processes exit after training finished, a worker's exit above the
job's own finish. Each turns failures the job got past into context (listed as notes), so the
verdict rests on what ended the job."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from analyzer.catalog.vocabulary import SLURM_END_CATEGORIES, Category
from analyzer.decide import wording
from analyzer.decide.predicates import (
    KILLED_BY_LAUNCHER,
    carried_on,
    exit_code,
    killed_by_launcher,
)
from analyzer.model.event import CONTEXT, EMPTY, ROOT, SYMPTOM, Event


def restarted_and_finished(rows: Sequence[Event]) -> list[Event]:
    """The launcher restarted the worker group and an agent then reports it finished
    successfully (a ``group-succeeded`` line of attempt N >= 1): every failure of the attempts
    before N was survived, whoever raised it. Its roots, cut tracebacks and death records become
    context tagged ``survived`` (listed as notes); its other symptoms (the SIGTERMs the agent
    sent) become context. torch elastic, NVIDIA's ft_launcher and DLRover restart this way."""
    done = [r.attempt for r in rows if r.attempt and r.tagged("group-succeeded")]
    if not done:
        return list(rows)
    first_ok = min(done)
    return [_before_restart(r, first_ok) for r in rows]


def relaunched(rows: Sequence[Event]) -> list[Event]:
    """A file that holds several launches, one appended below the other (a shell's ``>>``,
    ``nohup``, a terminal transcript): the same writer prints a launcher's start-up line (tag
    ``launch-start``) again below an earlier one, later in time. When the last run failed on
    its own or went on training, every failure above its start was an earlier run's, which the
    user then launched again: its roots and death records become context listed as notes, and
    the verdict rests on the last run (a DeepSpeed LLaVA run that failed to bind its port, then
    ran and was killed, part N; mmsegmentation's attempts and an accelerate nohup file, part O).
    A last run that shows neither (a sweep cut as its next launch starts, a run a person
    interrupted) leaves the earlier failure the verdict. Starts by different writers (srun's
    task labels, pdsh's hosts) are the nodes of one launch, not a relaunch."""
    starts = _launch_starts(rows)
    last = _last_shared(starts, _last_starts(starts))
    counted = _Launches(_runs_that_count(rows, last))
    last = {f: s for f, s in last.items() if counted.near(s, other_file=False)}
    if not last:
        return list(rows)
    return [_before_relaunch(r, last[r.file]) if r.file in last else r for r in rows]


_Starts = dict[tuple[str, int | None, str | None], list[Event]]
"""Launch start-up lines by writer (file, node, host), one per launch, in row order."""


def _launch_starts(rows: Sequence[Event]) -> _Starts:
    """Each writer's launch start-up lines, those printed together (within ``_ONE_LAUNCH_S``
    and ``_ONE_LAUNCH_LINES``, with no failure between them: a log whose every line carries
    one collector's time is still read by its lines) counted once."""
    starts: _Starts = {}
    failed: set[str] = set()
    """Files with a failure below their writers' last start."""
    for r in rows:
        if r.tagged("launch-start"):
            seen = starts.setdefault((r.file, r.node_index, r.host), [])
            if not (
                seen and r.file not in failed and r.line - seen[-1].line <= _ONE_LAUNCH_LINES
                and _one_start(seen[-1], r)
            ):
                seen.append(r)
            failed.discard(r.file)
        elif r.role == ROOT or r.tagged("death") or r.traceback is not None:
            failed.add(r.file)
    return starts


def _last_starts(starts: _Starts) -> dict[str, Event]:
    """Per file that a writer launched into more than once, its last launch's start."""
    last: dict[str, Event] = {}
    for (file, _node, _host), seen in starts.items():
        if len(seen) > 1 and (file not in last or seen[-1].line > last[file].line):
            last[file] = seen[-1]
    return last


def _last_shared(starts: _Starts, last: dict[str, Event]) -> dict[str, Event]:
    """Each file's start of the job's last launch where the files of one launcher share it.

    A launcher that writes each worker's output to a file of its own (PaddlePaddle's
    ``workerlog.N``, detectron2's ``log.txt.rankN``) prints their start-up lines together; a
    later start in one file alone is a single process run into the same log folder (a one-GPU
    debugging run: PaddleDetection's committed log/, tests/wild part P), not a relaunch of the
    job. So a file's last launch is the latest start it shares with another file, when it
    shares any; a file whose shared start is its first has no earlier run to set aside."""
    by_file: dict[str, list[Event]] = {}
    for (file, _node, _host), seen in starts.items():
        by_file.setdefault(file, []).extend(seen)
    if len(by_file) < 2:
        return last
    every = _Launches(s for seen in by_file.values() for s in seen)
    out: dict[str, Event] = {}
    for file, seen in by_file.items():
        shared = [s for s in seen if every.near(s, other_file=True)]
        if not shared:
            if file in last:
                out[file] = last[file]
        elif shared[-1] is not seen[0]:
            out[file] = shared[-1]
    return out


_ONE_LAUNCH_S = 10
"""How far apart the start-up lines of one launch's processes are printed (seconds)."""
_ONE_LAUNCH_LINES = 50
"""... and, in one file, how many lines apart (two trainers' lines, one per ring: adjacent)."""


def _one_start(a: Event, b: Event) -> bool:
    """Whether two start-up lines are one launch's: printed within ``_ONE_LAUNCH_S`` of each
    other (two trainers' lines in one file; one process's line per ring)."""
    return (
        a.time is not None and b.time is not None
        and abs((b.time - a.time).total_seconds()) <= _ONE_LAUNCH_S
    )


class _Launches:
    """Start-up lines, looked up by pattern and time: those a start was printed with
    (``_one_start``). A launcher that appends each worker's output to a file of its own
    (PaddlePaddle's ``workerlog.N``, opened in append mode; detectron2's ``log.txt.rankN``)
    starts every worker's run together: a run that is the last in one file is the last in
    every file, though only the worker that failed or went on shows so in its own. Sorted by
    time, so a job of thousands of per-rank files is not compared file against file."""

    def __init__(self, starts: Iterable[Event]) -> None:
        timed: dict[str, list[tuple[datetime, str]]] = {}
        self._untimed: set[tuple[str, int]] = set()
        for s in starts:
            if s.time is None:
                self._untimed.add((s.file, s.line))
            else:
                timed.setdefault(s.pattern_id, []).append((s.time, s.file))
        self._times = {pid: [t for t, _f in sorted(v)] for pid, v in timed.items()}
        self._files = {pid: [f for _t, f in sorted(v)] for pid, v in timed.items()}

    def near(self, start: Event, *, other_file: bool) -> bool:
        """Whether one of these was printed with ``start`` (itself included, unless
        ``other_file``: then one in another file)."""
        if start.time is None:
            return not other_file and (start.file, start.line) in self._untimed
        times = self._times.get(start.pattern_id, [])
        window = timedelta(seconds=_ONE_LAUNCH_S)
        lo = bisect_left(times, start.time - window)
        hi = bisect_right(times, start.time + window)
        files = self._files[start.pattern_id][lo:hi] if hi > lo else []
        return any(f != start.file for f in files) if other_file else bool(files)


def _runs_that_count(rows: Sequence[Event], last: dict[str, Event]) -> list[Event]:
    """The starts among ``last`` (one per file) whose run failed on its own (not a person's
    cancel) or went on: one pass over the rows, whatever the number of files."""
    counts: set[str] = set()
    for r in rows:
        start = last.get(r.file)
        if (
            start is not None and r.file not in counts and r.line > start.line
            and (carried_on(r) or _own_failure(r))
        ):
            counts.add(r.file)
    return [s for f, s in last.items() if f in counts]


def _own_failure(r: Event) -> bool:
    """A failure of the run's own (a root or a worker's death; not a person's cancel, nor a
    worker the launcher stopped): symptoms alone may be the teardown of an interrupt."""
    failed = r.role == ROOT or r.tagged("death")
    return failed and r.category != Category.SLURM_CANCELLED and not killed_by_launcher(r)


def _before_relaunch(r: Event, start: Event) -> Event:
    if r.line >= start.line or (r.time and start.time and r.time > start.time):
        return r  # below the last start, or printed after it (another node's block)
    out = _set_aside(
        r, _OF_A_RUN, lambda what: wording.relaunched_note(what, r.file, r.line, start.line)
    )
    return replace(out, tags=out.tags | {"earlier-run"}) if out.tagged("survived") else out


def escalated_kill(rows: Sequence[Event]) -> list[Event]:
    """A SIGKILL in torchrun's ChildFailedError table at the very second other workers it
    SIGTERMed exited, after a worker failed on its own: torchrun stops the rest with SIGTERM and
    kills, 30 s later, those still alive (``PContext.close``: death signal, wait, SIGKILL), so
    that SIGKILL is the launcher's, not a host OOM. Narrow by its source: torchrun's own close
    sequence (a speculators run on NPUs, part O: ranks 3 and 1 exit 1, rank 0 SIGKILL and rank 2
    SIGTERM 31 s later). Times are the table's own (``time :`` of each entry), not the lines'.
    The record becomes context; the verdict rests on the first failure."""
    when = _entry_times(rows)
    stopped = {(r.file, t) for r, t in when if r.role_of("exit_code") == "-15"}
    own = [(r.file, t) for r, t in when if (exit_code(r) or 0) > 0]
    killed = {
        id(r) for r, t in when
        if _sigkill(r) and (r.file, t) in stopped and any(f == r.file and o < t for f, o in own)
    }
    if not killed:
        return list(rows)
    return [_escalated(r) if id(r) in killed else r for r in rows]


def _entry_times(rows: Sequence[Event]) -> list[tuple[Event, str]]:
    """Each field of a ChildFailedError table with its entry's ``time :`` (as printed: one
    format, so the strings order as the times do)."""
    at: dict[tuple[str, int | None], str] = {}
    when: list[tuple[Event, str]] = []
    for r in rows:
        stamp = r.role_of("time") if r.tagged("childfailed-start") else None
        if stamp:
            at[(r.file, r.rank)] = stamp
        elif r.tagged("childfailed-field") and (r.file, r.rank) in at:
            when.append((r, at[(r.file, r.rank)]))
    return when


def _sigkill(r: Event) -> bool:
    return r.role_of("exit_code") == "-9" or r.role_of("signal") == "SIGKILL"


def _escalated(r: Event) -> Event:
    return replace(_quiet(r), cause=wording.escalated_note(r.rank, r.file, r.line))


_OF_A_DEATH = frozenset({"death", "death-record", "childfailed-field", "task-exit"})
"""Tags by which the decision reads a line as a worker's exit (with its ``exit_code`` role)."""
_OF_A_RUN = _OF_A_DEATH | {"failed-report"}
"""With the launcher's report that workers failed: what an earlier run's lines must lose."""


def _quiet(r: Event) -> Event:
    """``r`` as context whose exit record no longer reads as one (its roles and death tags
    dropped): the job got past the worker it records."""
    return replace(r, role=CONTEXT, role_names=EMPTY, tags=r.tags - _OF_A_DEATH)


def _noted(quiet: Event, cause: str) -> Event:
    """A quieted failure listed as a note (tag ``survived``, ``cause`` its words)."""
    return replace(quiet, tags=quiet.tags | {"survived"}, cause=cause)


def _before_restart(r: Event, first_ok: int) -> Event:
    if r.attempt is None or r.attempt >= first_ok or r.category in SLURM_END_CATEGORIES:
        return r  # the scheduler's end is the job's, not an attempt's
    attempt = r.attempt
    return _set_aside(
        r, _OF_A_DEATH,
        lambda what: wording.restarted_note(what, r.file, r.line, attempt, first_ok),
    )


def _set_aside(r: Event, lose: frozenset[str], note: Callable[[str], str]) -> Event:
    """``r``, a line of a run or attempt the job got past, as context without the tags
    ``lose`` (by which the decision would read it as a failure); a root, a traceback or a
    worker's death is also listed as a note (``note(what it was)``)."""
    if r.role == CONTEXT and lose.isdisjoint(r.tags):
        return r
    quiet = replace(r, role=CONTEXT, role_names=EMPTY, tags=r.tags - lose)
    if not (r.role == ROOT or r.traceback is not None or r.tagged("death")):
        return quiet
    return _noted(quiet, note(r.title or r.category))


_AT_EXIT = frozenset({Category.NATIVE_CRASH, Category.NCCL_ERROR})
"""What a process that finished its work prints as it exits: an abort or segfault in a
destructor, NCCL's warnings as communicators are torn down."""


def finished_then_exited(rows: Sequence[Event]) -> list[Event]:
    """Below a framework's statement that training finished (tag ``training-done``) in the same
    file, an abort, a segfault or NCCL's errors as the processes exit (``_AT_EXIT``), a worker's
    death by a crash signal, and the launcher's symptoms are the job's exit, not its failure:
    they become context, the crashes listed as notes. Other roots below it (a full disk on the
    final save, an exception after training) still fail the job. Seen: torchtitan's abort while
    the process group is destroyed after `Training completed`; NCCL's proxy warnings after an
    MLPerf `run_stop` with `"status": "success"` (tests/wild j-, k-)."""
    done: dict[str, Event] = {}
    for r in rows:
        if r.tagged("training-done"):
            done.setdefault(r.file, r)
    if not done:
        return list(rows)
    return [_at_exit(r, done[r.file]) if r.file in done else r for r in rows]


def _below(r: Event, done: Event) -> bool:
    """``r`` is below the statement that training finished in their file: a stream is written
    in order, and a collector's time on one of them only would reorder them."""
    return r.line > done.line


def _at_exit(r: Event, done: Event) -> Event:
    if not _below(r, done) or (r.role == CONTEXT and _OF_A_DEATH.isdisjoint(r.tags)):
        return r
    code = exit_code(r) or 0
    stopping = r.role == SYMPTOM and r.role_of("signal") in KILLED_BY_LAUNCHER
    if not (r.category in _AT_EXIT or (code < 0 and code != -9) or stopping):
        return r  # not a crash at exit: an error code, a full disk on the final save, ...
    quiet = _quiet(r)
    if stopping or (r.role == SYMPTOM and r.category == Category.NCCL_ERROR):
        return quiet  # the launcher stopping the others, NCCL's warnings at exit: no note
    return _noted(quiet, wording.at_exit_note(r.title or r.category, r.file, r.line, done.line))


_JOB_DONE = frozenset({"training-done", "group-succeeded"})
"""Tags of a line that says the whole job finished: the training loop returned (Megatron's
``[after training is done]`` follows a barrier of every rank), the agent's group succeeded, Ray's
job succeeded."""


def died_then_finished(rows: Sequence[Event]) -> list[Event]:
    """A worker's exit record (srun's task exit, a launcher's death line) above the job's own
    statement that it finished (``_JOB_DONE``) in the same file was not the job's end: another
    step's task (an MLPerf run's helper ``srun``), or a worker the job went on without. It
    becomes context, listed as a note; a root above it is ``survived``'s to judge."""
    done: dict[str, Event] = {}
    for r in rows:
        if not _JOB_DONE.isdisjoint(r.tags):
            done[r.file] = r  # the last one: everything above it came before the end
    if not done:
        return list(rows)
    return [_died_before(r, done[r.file]) if r.file in done else r for r in rows]


def _died_before(r: Event, done: Event) -> Event:
    if _OF_A_DEATH.isdisjoint(r.tags) or r.line >= done.line or r.role == ROOT:
        return r
    what = r.title or r.category
    return _noted(_quiet(r), wording.survived_note(what, r.file, r.line, done.line))



def interrupted(rows: Sequence[Event]) -> list[Event]:
    """Below a person's interrupt in the same file (a ``slurm_cancelled`` root: a bare
    ``KeyboardInterrupt``, SLURM's reasonless cancel), the errors the stopping processes print
    are the stop, not a failure: a DataLoader pin-memory thread's ``ConnectionResetError`` once
    its main process is gone (a 3-GPU torchrun run interrupted in a notebook, part P), torchrun's
    ``SignalException … got signal: 2`` (a sign-language DDP run stopped with Ctrl-C, part M).
    They become context listed as notes; an error above the interrupt still wins."""
    stop: dict[str, Event] = {}
    for r in rows:
        first = r.file not in stop or r.line < stop[r.file].line
        if r.role == ROOT and r.category == Category.SLURM_CANCELLED and first:
            stop[r.file] = r
    if not stop:
        return list(rows)
    return [_after_stop(r, stop[r.file]) if r.file in stop else r for r in rows]


def _after_stop(r: Event, stop: Event) -> Event:
    if r.line <= stop.line or r.role != ROOT or r.category in SLURM_END_CATEGORIES:
        return r
    what = r.title or r.category
    return _noted(_quiet(r), wording.interrupted_note(what, r.file, r.line, stop.line))

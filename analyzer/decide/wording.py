"""English for the decisions: the one place that turns what the reasoning decided into words.

The reasoning (``analyzer.decide.reason``) records *what* it decided on each verdict — the rule that
chose it (``Verdict.rule``) and how the rank was settled (``Verdict.rank_rule`` with the facts
behind it in ``Verdict.rank_facts``) — and never writes a sentence itself. The functions here
write the sentences of causes, fixes and the builders some rules name; each rule's own short
words (its summary, a rank note's template, a hang reason's template) are declared with the
rule (``analyzer.decide.rules``, ``analyzer.decide.rank_decision``, ``analyzer.decide.hangs``),
and ``analyzer.decide.notes.finish`` renders a verdict's rank note. Pattern text (a catalog
``cause``/``fix`` filled with captures) is rendered by ``analyzer.catalog.model.fill_template``;
fixes tailored to the job by ``analyzer.decide.fixes``.
"""

from __future__ import annotations

import signal
from typing import Any

ASSUMED = "assumed global rank = local rank: the logs show a single node"


def hang_cause(
    ranks: int, what: str, culprit: int | None, reason: str, possible: bool = False
) -> str:
    """The cause of a hang verdict (``possible``: the culprit is only a candidate)."""
    if culprit is not None and possible:
        return f"The job hung: {ranks} rank(s) timed out in {what}; {reason}."
    if culprit is not None:
        return (
            f"The job hung: {ranks} rank(s) timed out in {what}; the culprit is rank "
            f"{culprit}: {reason}."
        )
    return (
        f"The job hung: {ranks} rank(s) timed out in {what}, and {reason}, so no rank is accused."
    )


def _short(ranks: list[int]) -> str:
    if len(ranks) <= 8:
        return ", ".join(map(str, ranks))
    return ", ".join(map(str, ranks[:8])) + f", … ({len(ranks)} in all)"


def dumps_reason(shown: str, rank: int, logs_rank: int | None, logs_why: str | None) -> str:
    """Why the Flight Recorder dumps name rank ``rank``, and what the logs alone said
    (``logs_why``: their reason, when they pointed at another rank)."""
    why = f"the Flight Recorder dumps show it: {shown}"
    if logs_rank is None:
        return why + " (the logs alone name no rank)"
    if logs_rank != rank:
        return why + f" (the logs alone pointed at rank {logs_rank}: {logs_why})"
    return why + " (the logs agree)"


def no_culprit_reason(detail: dict[str, Any]) -> str:
    """Why the hang analysis names no culprit: the ranks missing from the reports (or that
    the world size is unknown), and the rank whose watchdog fired first."""
    missing = detail.get("missing") or []
    why = "the timeout reports do not single out one rank"
    if len(missing) > 1:
        why += f" ({len(missing)} ranks are missing from them: {_short(missing)})"
    elif not detail.get("world_known"):
        why += " and the job's world size is not in the logs"
    if detail.get("first_watchdog") is not None:
        why += f"; the first watchdog to fire was on rank {detail['first_watchdog']}"
    return why


def collective(op: str | None, seq: str | None) -> str:
    """A collective as a hang cause names it."""
    return f"{op} SeqNum {seq}" if op and seq else "a collective"


def then_slurm_ended(what: str) -> str:
    """Appended to a cause that a SLURM end only confirmed."""
    return f" SLURM then ended the job ({what})."


def attempt_suffix(attempt: int | None, attempts: int) -> str:
    """Appended to the cause of a job that restarted."""
    return f" (attempt {attempt} of {attempts}; see the per-attempt verdicts)"


UNKNOWN_TITLE = "Failure with no named cause"
UNKNOWN_FIX = (
    "Look at the evidence below; if the cause is in a line no pattern knows, add a pattern "
    "with --patterns DIR."
)


DEAD_WORKER_FIX = (
    "The dead worker's own output (its traceback or error) is not in these logs: find it where "
    "the launcher wrote the workers' output (torchrun --log-dir / --tee / --redirects, a "
    "node-local file), or rerun with the workers' output kept on shared storage."
)


STALLED_START_TITLE = "The job never formed: the logs end before every rank joined"
STALLED_START_FIX = (
    "Find why the ranks that never announced themselves did not start or could not reach the "
    "rendezvous (their node's output, MASTER_ADDR/MASTER_PORT, a stale file:// init file, a "
    "launcher that started fewer processes than the world size); if the job is still running, "
    "it is hung in initialisation: set a rendezvous/init timeout so it fails with a message."
)


def stalled_start_cause(claimed: int, world: int, file: str, line: int) -> str:
    """The cause of a job whose logs end during start-up (``rules.stalled_start``)."""
    return (
        f"The logs end during start-up: {claimed} of {world} ranks announced themselves (the "
        f"last at {file}:{line}) and nothing after it shows the job running; the other ranks "
        "never joined, so the job could not form (or the logs were cut there)."
    )


def srun_teardown_cause(file: str, exit_line: int) -> str:
    """The cause of a cancellation banner srun printed tearing a step down
    (``promote.srun_teardown``)."""
    return (
        f"srun cancelled the step after a task exited on its own ({file}:{exit_line}): "
        "its teardown, not a person's scancel"
    )


SRUN_TEARDOWN_TITLE = "srun cancelled the step after a task failed"
SRUN_TEARDOWN_KILL = "killed by srun tearing the step down after another task failed: a victim"
SRUN_TEARDOWN_TERM = (
    "terminated by srun tearing the step down after another task exited on its own: a victim"
)


def ignored_note(what: str, file: str, line: int, header: int) -> str:
    """The note of an exception Python printed and ignored (``promote.ignored_exception``)."""
    return (
        f"ignored error, not the cause: {what} at {file}:{line}, under Python's "
        f"'Exception ignored in' at line {header}"
    )


def survived_note(what: str, file: str, line: int, went_on: int) -> str:
    """The note of an error its rank survived (``promote.survived``)."""
    return (
        f"survived error, not the cause: {what} at {file}:{line}, and training went on "
        f"({file}:{went_on})"
    )


def escalated_note(rank: int | None, file: str, line: int) -> str:
    """What a SIGKILL torchrun sent after its SIGTERMs records (``promote_end.escalated_kill``)."""
    return f"rank {rank} was killed by torchrun after its SIGTERM went unanswered ({file}:{line})"


def relaunched_note(what: str, file: str, line: int, later: int) -> str:
    """The note of a failure of an earlier launch in a file a later launch was appended to
    (``promote_end.relaunched``)."""
    return (
        f"an earlier run's failure, not the cause: {what} at {file}:{line}, and the job was "
        f"launched again below it ({file}:{later})"
    )


def earlier_runs_note(first: str, more: int, file: str) -> str:
    """``first``, the note of a file's first earlier-run failure, standing for ``more`` others
    of the same file (``promote.survived_notes``)."""
    runs = "failure" if more == 1 else "failures"
    return f"{first}; {more} more earlier-run {runs} in {file} set aside likewise"


def restarted_note(what: str, file: str, line: int, attempt: int, ok: int) -> str:
    """The note of a failure the launcher restarted from (``promote.restarted_and_finished``)."""
    return (
        f"survived error, not the cause: {what} at {file}:{line} (attempt {attempt}); the "
        f"launcher restarted the workers and attempt {ok} finished successfully"
    )


def interrupted_note(what: str, file: str, line: int, stop: int) -> str:
    """The note of an error printed as the processes stopped after a person interrupted the
    job (``promote_end.interrupted``)."""
    return (
        f"as the processes stopped, not the cause: {what} at {file}:{line}, after the job was "
        f"interrupted ({file}:{stop})"
    )


def at_exit_note(what: str, file: str, line: int, done: int) -> str:
    """The note of a crash as the processes exited after training finished
    (``promote.finished_then_exited``)."""
    return (
        f"at exit, not the cause: {what} at {file}:{line}, after training finished "
        f"({file}:{done})"
    )


def _signal(code: str | None) -> str | None:
    """The signal a negative exit code stands for (``-6`` → ``SIGABRT``), or None."""
    if not code or not code.startswith("-") or not code[1:].isdecimal():
        return None
    try:
        return signal.Signals(int(code[1:])).name
    except ValueError:
        return None


def dead_worker_title(code: str | None) -> str:
    """The title of a failure known only from a worker's exit record."""
    name = _signal(code)
    return f"A worker died of {name}, no line says why" if name else UNKNOWN_TITLE


def dead_worker_cause(code: str | None, rank: int | None, alike: int = 1) -> str:
    """The cause of a failure known only from a worker's exit record (``alike`` workers
    exited with the same code)."""
    if code is None:  # the launcher's report that workers failed, its table cut off
        return (
            "The job failed: the launcher reports failed workers, and no line in its logs says how."
        )
    who = f"rank {rank}" if rank is not None else "a worker"
    if alike > 1:
        who = f"{alike} workers"
    name = _signal(code)
    sig = f" ({name})" if name else ""
    return f"The job failed: {who} exited with code {code}{sig}, and no line in its logs says why."


CUT_TRACEBACK_FIX = (
    "Find the end of that rank's traceback in its full log (the exception line says what was "
    "raised), then fix the code or input that raised it."
)


def cut_traceback_cause(rank: int | None, frame: str | None, under: str | None) -> str:
    """The cause of a failure known from a rank's traceback cut before its exception line
    (``under``: what its frames say, e.g. ``while saving a checkpoint``)."""
    who = f"Rank {rank}" if rank is not None else "A worker"
    where = "".join(f" {x}" for x in (under, f"at {frame}" if frame else None) if x)
    return (
        f"{who} raised an uncaught exception{where}; the log is cut before its exception line, "
        "so its type and message are missing."
    )


def unknown_cause(first_sign: str) -> str:
    """The cause of a failure whose logs name none."""
    return (
        "The job failed, but no line in its logs names a cause: the earliest sign is "
        f"“{first_sign}”."
    )


INFERRED_TITLE = "Failure no pattern knows (inferred from one rank's line)"
NEW_SINCE_GOOD_RUN = ", new since the good run"


def spread(ranks: int, world: int | None) -> str:
    """``on 1 of 8 ranks``: how many ranks printed an unknown line."""
    return f"on {ranks} of {world} ranks" if world else f"on {ranks} rank(s)"


def inferred_cause(
    rank: int | None, line: str, near_death: bool, spread: str, new: str, cascade: str
) -> str:
    """The cause of a verdict inferred from a line no pattern knows
    (``analyzer.decide.unknown``)."""
    short = line if len(line) <= 200 else line[:197] + "…"
    death = " just before that rank died" if near_death else ""
    return (
        f"Rank {rank} printed “{short}”{death}; no catalog pattern knows this line, and it "
        f"came first ({spread}{new}), so it is inferred to be the cause of what followed "
        f"({cascade}, kept as an alternative)."
    )


def inferred_fix(rank: int | None, node: str | None) -> str:
    """What to do about a line no pattern knows, on the rank (and node) that printed it."""
    where = f"rank {rank}" + (f" (node {node})" if node is not None else "")
    return (
        f"Look at what printed this line on {where}: the component it names (a data loader, "
        "a storage client, a native library) and its input at that moment. If it is the "
        "cause, turn it into a pattern: `mcore-diagnose patterns suggest JOB_DIR -o DIR`, "
        "then diagnose with `--patterns DIR`."
    )


NONE_TITLE = "No failure"
NONE_CAUSE = "No failure was found in the logs."
NONE_FIX = "Nothing to fix."

OVER_JOINED_TITLE = "More workers joined than the world size"
OVER_JOINED_FIX = (
    "Give each job its own MASTER_PORT (or a fresh init file for file://, deleted before the "
    "run); make sure no earlier run of the job is still alive."
)


def over_joined_cause(joined: str, world: str) -> str:
    """More workers registered in a store than the world holds."""
    return (
        f"{joined} workers registered in a store meant for a world of {world}: another job (or "
        "an earlier run's file:// store) shares this store, so the process group can never form."
    )


CLAIMED_TWICE_TITLE = "The same global rank claimed twice"
CLAIMED_TWICE_FIX = (
    "Start exactly one process per rank: with Lightning under SLURM set --ntasks-per-node to "
    "the GPUs per node (srun starts the processes, Lightning does not spawn); with torchrun, "
    "one srun task per node."
)


def claimed_twice_cause(rank: int, file: str, first_line: int, line: int) -> str:
    """One global rank claimed by two processes."""
    return (
        f"Global rank {rank} was claimed twice ({file} lines {first_line} and {line}): two "
        "launchers assign the same ranks, so the process group can never form and the job hangs "
        "at start-up."
    )


def downstream_line(who: str, what: str, when: str, lines: int) -> str:
    """One line of the downstream-symptom summary."""
    return f"{who} then hit “{what}”{when} ({lines:,} line{'s' if lines != 1 else ''})"


def ranks_phrase(n: int) -> str:
    """``1 rank`` / ``1,024 ranks``, or ``the job`` when no rank is known."""
    return f"{n:,} rank{'s' if n != 1 else ''}" if n else "the job"

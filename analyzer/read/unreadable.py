"""Why nothing of a job could be read: what went wrong, and a next step that fits what was given
(a directory, log files, standard input)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from analyzer.read.readjob import ReadResult

STDIN_NAME = "(stdin)"
"""The name standard input (``-``) is read under: the command line copies it into a file of
this name in a directory of its own, so reports and messages never name a temporary file."""

LOG_DIR_HINT = "Give the job's log directory (where slurm-<jobid>.out is written)."
STDIN_HINT = (
    "Pipe the job's log into it (`mcore-diagnose - < slurm-1234.out`), or give the job's log "
    "directory."
)
FILES_HINT = (
    "Give a log holding the job's output, or the job's log directory (where slurm-<jobid>.out "
    "is written)."
)
BY_NAME_HINT = (
    "Name a file on the command line to read it whatever its name, or give the directory the "
    "job's output went to (where slurm-<jobid>.out is written)."
)
PROBLEM_HINT = "Give an intact, readable copy of the job's logs."


def shown_name(name: str) -> str:
    """``name`` (a path as given, or a file's name in the job) as a message says it:
    standard input for ``-`` and for its copy."""
    return "standard input" if name in ("-", STDIN_NAME) else name


def why_unreadable(read: ReadResult, paths: Sequence[str | Path]) -> tuple[str, str] | None:
    """(what could not be read, what to do next), each one line; None when something was."""
    if read.readable:
        return None
    given = [str(p) for p in paths]
    names = ", ".join(shown_name(p) for p in given)
    if read.problems:
        first = read.problems[0]
        return first, LOG_DIR_HINT if first.endswith("no such file or directory") else PROBLEM_HINT
    skipped = read.discovery.skipped
    if not skipped:
        return f"{names}: {_nothing_found(read)}", LOG_DIR_HINT
    rel, why = skipped[0]
    if given == ["-"]:
        what = "is empty" if why == "empty file" else f"holds no log ({why})"
        return f"standard input {what}", STDIN_HINT
    if all(p == "-" or not Path(p).is_dir() for p in given):  # files named on the command line
        if len(skipped) == 1:
            return f"{shown_name(rel)}: {why}, nothing to read", FILES_HINT
        return f"nothing to read in {names}: {_skipped(skipped)}", FILES_HINT
    by_name = any(w.startswith("not a log file name") for _, w in skipped)
    hint = BY_NAME_HINT if by_name else LOG_DIR_HINT
    return f"no log files in {names}: {_skipped(skipped)}", hint


def _skipped(skipped: list[tuple[str, str]]) -> str:
    """``3 files skipped (e.g. a.out: empty file)``."""
    rel, why = skipped[0]
    n = len(skipped)
    if n == 1:
        return f"1 file skipped ({shown_name(rel)}: {why})"
    return f"{n} files skipped (e.g. {shown_name(rel)}: {why})"


def _nothing_found(read: ReadResult) -> str:
    """Why a job with no problem and nothing skipped gave nothing."""
    found = read.discovery
    if found.files:
        return "its log files were emptied while being read"
    if found.fr_dumps:
        return "only Flight Recorder dumps, no log files to read"
    return "empty directory, no log files to read"

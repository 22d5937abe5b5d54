"""Issue 42, items 9 and 13: every command that writes to standard output ends the same way
when it cannot: a closed pipe (``| head -1``) quietly with status 0, a full disk (``> /dev/full``)
with one line and the status of ``-o /dev/full``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.cli.output import EXIT_CANNOT_WRITE
from tests.helpers import REAL

JOB = REAL / "exception-cascade"

COMMANDS = {
    "diagnose": ["diagnose", str(JOB)],
    "diagnose json": ["diagnose", str(JOB), "-f", "json"],
    "events": ["events", str(JOB)],
    "events csv": ["events", str(JOB), "-f", "csv"],
    "patterns list": ["patterns", "list"],
    "patterns show": ["patterns", "show", "python.traceback"],
    "patterns test": ["patterns", "test"],
    "patterns explain": ["patterns", "explain", str(JOB)],
    "lint": ["lint", str(JOB / "train.sbatch")],
    "triage": ["triage", "run", str(REAL / "clean-success")],
    "--version": ["--version"],
    "--help": ["diagnose", "--help"],
}


def run_into(stdout: int, args: list[str]) -> subprocess.CompletedProcess[str]:
    """``mcore-diagnose ARGS`` in a child process writing into the file descriptor ``stdout``."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "CLICOLOR_FORCE")}
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        check=False,
    )


@pytest.mark.parametrize("command", list(COMMANDS))
def test_closed_pipe_exits_quietly_with_status_0(command: str) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write: every write fails
    try:
        r = run_into(write_end, COMMANDS[command])
    finally:
        os.close(write_end)

    assert r.returncode == 0, r.stderr
    said = [line for line in r.stderr.splitlines() if not line.startswith("triage: ")]
    assert said == []  # triage's own progress line aside, nothing


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("command", list(COMMANDS))
def test_full_disk_on_standard_output_is_one_line(command: str) -> None:
    with open("/dev/full", "wb") as full:
        r = run_into(full.fileno(), COMMANDS[command])

    assert r.returncode == EXIT_CANNOT_WRITE
    last = r.stderr.splitlines()[-1]
    assert last == "mcore-diagnose: cannot write standard output: No space left on device"
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    said = [line for line in r.stderr.splitlines() if not line.startswith("triage: ")]
    assert len(said) == 1, r.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_full_disk_through_o_has_the_same_status() -> None:
    with open("/dev/full", "wb") as full:
        r = run_into(full.fileno(), ["events", str(JOB), "-f", "csv", "-o", "/dev/full"])

    assert r.returncode == EXIT_CANNOT_WRITE
    assert r.stderr == "mcore-diagnose: cannot write /dev/full: No space left on device\n"

"""Issue 41: a launch mistake leads the verdict. A job that ran but broke a launch rule says so
in its headline with the rule's fix (status ok, ``launch_mistake``, exit code 5), and a failed
job's explaining advisory opens its cause and fix. Real recordings of the local SLURM cluster
(sample_logs/real)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.decide.verdict import EXIT_LAUNCH_MISTAKE, EXIT_NO_FAILURE, Diagnosis


def diagnose(job: Path) -> Diagnosis:
    return analyze([job]).diagnosis


@pytest.mark.parametrize("name", ["standalone-independent-worlds", "standalone-worlds-unlabelled"])
def test_a_job_that_ran_with_independent_worlds_says_so(sample_logs: Path, name: str) -> None:
    d = diagnose(sample_logs / "real" / name)
    v = d.verdict
    assert (d.status, d.launch_mistake, d.exit_code) == ("ok", True, EXIT_LAUNCH_MISTAKE)
    assert v.category == "none" and "launch mistake [worker-group]" in v.title
    assert "independent worlds" in v.cause or "2 times" in v.cause
    assert "Nothing to fix" not in v.fix and "--nnodes" in v.fix
    assert d.as_dict()["launch_mistake"] is True


def test_a_clean_job_has_no_launch_mistake(sample_logs: Path) -> None:
    d = diagnose(sample_logs / "real" / "clean-success")
    assert (d.status, d.launch_mistake, d.exit_code) == ("ok", False, EXIT_NO_FAILURE)


def test_the_explaining_advisory_opens_the_cause_even_when_its_evidence_is_the_verdicts_line(
    sample_logs: Path,
) -> None:
    """Two launchers per node: the store's EADDRINUSE is the verdict's line and the advisory's
    evidence; the cause starts with the launch mistake and keeps the line's first sentence
    only."""
    v = diagnose(sample_logs / "real" / "two-agents-per-node").verdict
    assert v.cause.startswith("Launch mistake: srun tasks 0, 1 ran on the same host")
    assert "EADDRINUSE" in v.cause and v.fix.startswith("Run one srun task (one launcher) per node")

"""Rules written for issue 40's third final batch, before it was seen: each for a class shown by
real logs of different projects (the verdict before the rule is in the comment)."""

from __future__ import annotations

import pytest

from analyzer.api import Analysis, analyze
from tests.helpers import ROOT


def _diagnosis(job: str) -> Analysis:
    root = ROOT / job
    return analyze([p for p in root.rglob("*") if p.is_file() and p.name != "expected.toml"])


def test_srun_teardown_after_a_task_exit_is_not_a_users_scancel() -> None:
    """srun's record of task 5's exit, then its own teardown banner and the kills of the other
    tasks (facebookresearch/deit under submitit): the task failed, the cause is not shown (was
    slurm_cancelled with no rank, and the kills read as host OOM)."""
    d = _diagnosis("tests/wild/j-srun-submitit-deit-2node-task5-exit1-others-killed")
    v = d.diagnosis.verdict
    assert (v.category, v.rank, v.rank_certainty) == ("unknown", 5, "possible")
    assert v.pattern_id == "slurm.task.exit_code"


def test_a_users_scancel_stays_a_cancellation() -> None:
    """A real scancel on the local SLURM cluster prints the banner first and the tasks' exits
    after it: the banner is the verdict."""
    v = _diagnosis("sample_logs/real/user-scancel").diagnosis.verdict
    assert v.category == "slurm_cancelled"


@pytest.mark.parametrize(
    "job",
    [
        "tests/wild/h-srun-mpi-ucx-rndv-fatal-abort-task0",
        "tests/wild/i-srun-2node-rank1-nccl-bootstrap-connection-refused",
    ],
)
def test_the_teardown_is_not_offered_as_an_alternative(job: str) -> None:
    """Where a failure above explains the step's end, srun's teardown banner is not listed as a
    user's cancellation beside it."""
    d = _diagnosis(job).diagnosis
    assert d.verdict.category != "slurm_cancelled"
    assert all(a.category != "slurm_cancelled" for a in d.alternatives)


def test_a_collectors_time_with_a_colon_is_peeled_before_the_rank_tag() -> None:
    """A stored cloud log puts ``<RFC 3339 time>: `` before Open MPI's ``[1,0]<stderr>:`` tag
    (facebookresearch/deit under mpirun): the tag's rank is read and the line dated (was no
    rank, and the DataLoader re-raise of rank 0 read as an unknown failure)."""
    from analyzer.lines.prefixes import split_prefixes

    p = split_prefixes("2021-03-10T13:22:37.443Z: [1,0]<stderr>:OSError: Caught OSError in x")
    assert (p.rank, p.message) == (0, "OSError: Caught OSError in x")
    assert p.stamp is not None and p.stamp.second == 37
    v = _diagnosis("tests/wild/j-mpirun-deit-rank0-dataloader-corrupt-jpeg-oserror").diagnosis
    assert (v.verdict.category, v.verdict.rank) == ("python_exception", 0)


def test_a_loss_scale_below_one_is_a_diverging_run() -> None:
    """fairseq halves its loss scale to 0.0001 step after step, then the log ends in a cut
    traceback: the run diverged (was unknown)."""
    v = _diagnosis("tests/wild/i-unknown-fairseq-scaling-nmt-loss-scale-collapse").diagnosis
    assert v.verdict.category == "nan_loss"
    assert v.verdict.pattern_id == "training.loss_scale.below_one"

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


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        # After the first run of the third final batch (tests/wild/README-k.md), one test per
        # rule; the verdict of the frozen rules is in the comment.
        # The store lost by the other nodes' agents after a worker's SIGBUS (was rendezvous).
        ("k-srun-torchrun-2node-rank1-sigbus-ulysses", ("native_crash", 1)),
        # Hydra's override error on every rank; the agents then lose the store (was rendezvous,
        # rank 36 certain).
        ("k-srun-torchrun-nemo-16node-hydra-ambiguous-arg-all-ranks", ("config", None)),
        # NCCL could not calloc 4 bytes: the GPU was full (was nccl_error).
        ("k-deepspeed-pdsh-2node-8rank-rank0-nccl-cuda-calloc-init", ("cuda_oom", 0)),
        # accelerate's version check, every rank alike (was python_exception, rank 0 likely).
        ("k-srun-accelerate-fsdp-all-ranks-torch-too-old", ("import_error", None)),
        # DALI cannot open the data file; not a cut checkpoint path (was checkpoint).
        ("k-srun-mlperf-resnet-8task-dali-train-rec-missing-all-ranks", ("storage", None)),
        # nccl-tests' remote error between two nodes, no process crashed (was none).
        (
            "k-srun-nccltests-2node-8rank-alltoall-remote-process-exited-network-error",
            ("network", None),
        ),
        # The only srun task that exited with a code, on the node of the error (was no rank).
        ("k-srun-nccltests-512rank-task159-uncorrectable-ecc", ("hardware", 159)),
        # An exception Python ignored at exit is not the failure (was storage).
        ("k-srun-torchrun-2node-rank0-valueerror-empty-summary-ulysses", ("python_exception", 0)),
        # Eight copies of one error and eight workers (one dead, seven SIGTERMed by pid): no
        # rank (was rank 4 certain).
        ("k-torchrun-maskrcnn-8gpu-all-ranks-missing-preprocessed-coco-file", ("storage", None)),
        # Megatron's "[after training is done]": the UCX errors before it were survived (was
        # storage).
        ("k-torchrun-megatron-8gpu-ucx-inotify-enospc-survived", ("none", None)),
    ],
)
def test_rules_after_the_third_batch(case: str, expected: tuple[str, int | None]) -> None:
    v = _diagnosis(f"tests/wild/{case}").diagnosis.verdict
    assert (v.category, v.rank) == expected


def test_two_tasks_exiting_alike_name_no_task() -> None:
    """Every rank of a podman nccl-tests job hit the same OFI error and two srun tasks exited
    with the same code: the task on the error's node is not named (the rule that names task 159
    above needs one task alone to exit on its own)."""
    v = _diagnosis("tests/wild/k-srun-podman-nccl-tests-2node-ofi-cxil-map-register-mr-failed")
    assert v.diagnosis.verdict.rank is None


def test_a_needle_ending_a_message_is_no_near_miss() -> None:
    """A message that ends with a pattern's needle holds nothing of what the pattern adds: it is
    not a cut line of that pattern."""
    from analyzer.catalog.load import load_catalog

    cat = load_catalog([])
    (p,) = [p for p in cat.patterns if p.id == "megatron.ckpt.missing_file"]
    assert p.near("Could not open file /data/train.rec: No such file or directory") is None
    assert p.near("FileNotFoundError: No such file or directory: '/ckpt/iter_00") is not None


def test_an_ignored_exception_is_listed_as_a_note() -> None:
    """The exception Python printed under "Exception ignored in" is no verdict, and the report
    still says where it was and why it was set aside (DeepSpeed's CPU Adam finalizer)."""
    d = _diagnosis("tests/wild/b-deepspeed-cpu-adam-so-missing").diagnosis
    assert d.verdict.category == "import_error"
    notes = [p for p in d.problems if p.startswith("ignored error, not the cause")]
    assert len(notes) == 2 and "'Exception ignored in' at line 7" in notes[0]

"""Rules written for issue 40 before its sixth final batch (the verdict before each rule is in
its docstring). Logs are the corpus's own, cut where a test needs a shorter one; no line is
written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.read.tracebacks import opens
from tests.helpers import FORMATS, WILD, wild_analysis

MONARCH = "l-monarch-torchforge-titantrainer1-checkpoint-save-write-failure"
ACCEL_STDERR = "l-accelerate-docker-localrank1-sigbus-accelerate-test"


def _line(case: str, needle: str) -> str:
    """The first line of the case's log that holds ``needle``, as stored."""
    text = (WILD / case / "output.log").read_text(encoding="utf-8")
    return next(ln for ln in text.splitlines() if needle in ln)


def test_a_header_after_a_programs_preface_opens_a_traceback() -> None:
    """Monarch's actor mesh prints ``… processing error: Traceback (most recent call last):``
    on one line, then the frames; the job was called ``none`` (no traceback read)."""
    assert opens(_line(MONARCH, "processing error: Traceback"))
    v = wild_analysis(MONARCH).diagnosis.verdict
    assert v.category != "none"
    assert v.pattern_id == "python.traceback"
    # the frames under the preface are read: torchtitan's checkpointer's save
    assert "saving a checkpoint" in v.cause


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        (ACCEL_STDERR, "stderr: Traceback"),
        ("l-torchrun-llama-megatron-4gpu-rootcause-rank1-optimizer-setup-oom",
         "traceback : Traceback"),
    ],
)
def test_a_field_or_stream_name_before_the_header_is_no_preface(case: str, needle: str) -> None:
    """``stderr:`` (accelerate's test runner) and ``traceback :`` (torchelastic's summary)
    are names, read by their own readers: the launcher's traceback stays the launcher's."""
    assert not opens(_line(case, needle))


def test_the_launchers_traceback_behind_a_stream_name_keeps_its_verdict() -> None:
    v = wild_analysis(ACCEL_STDERR).diagnosis.verdict
    assert (v.category, v.rank) == ("native_crash", 1)


def test_text_after_the_header_opens_nothing() -> None:
    assert not opens("ValueError: Traceback (most recent call last): was in the message")
    assert opens("Traceback (most recent call last):")


def test_a_job_cut_in_that_traceback_is_failed(tmp_path: Path) -> None:
    """Cut after the torchtitan frame: still failed, never ``none``."""
    lines = (WILD / MONARCH / "output.log").read_bytes().split(b"\n")[:24]
    job = tmp_path / "job"
    job.mkdir()
    (job / "output.log").write_bytes(b"\n".join(lines))
    a = analyze([job / "output.log"])
    assert a.diagnosis.verdict.category != "none"


BRIDGE = "l-torchrun-bridge-llm-sft-rank1-sigabrt-cuda-check-host-allocator"


def test_a_failed_cuda_check_in_a_native_stack_is_a_cuda_error() -> None:
    """A native stack through ``c10_cuda_check_implementation`` (the error's text cut above
    it) above torchrun's table naming one worker dead of SIGABRT: was ``native_crash``."""
    v = wild_analysis(BRIDGE).diagnosis.verdict
    assert (v.category, v.pattern_id) == ("cuda_error", "cuda.error.check_frame")


def test_the_tables_one_exit_code_names_the_unranked_roots_rank() -> None:
    """ChildFailedError's table with one failure (``exitcode : -6``) is the one worker the
    launcher reports dead: the unprefixed stack above it is that worker's (was no rank)."""
    v = wild_analysis(BRIDGE).diagnosis.verdict
    assert (v.rank, v.rank_rule) == (1, "only-death")


def test_a_stack_under_a_named_cuda_error_keeps_that_error() -> None:
    """The frame is a fallback: the CUDA error line above the stack (the bundled
    illegal-memory-access sample) stays the verdict."""
    job = FORMATS / "illegal-memory-access"
    v = analyze([job]).diagnosis.verdict
    assert v.pattern_id == "cuda.error.illegal_address"


# ---- after the sixth batch's first run (tests/wild/README-m.md) -----------------------------


def test_a_line_that_states_its_fallback_is_no_root() -> None:
    """torchtitan's ``Error running lspci: [Errno 2] No such file or directory: 'lspci',
    fallback to use device_name`` at start-up was the verdict (storage) of three runs that died
    hours later of a CUDA error or an OOM on one rank."""
    v = wild_analysis("m-torchrun-torchtitan-pp8-rtx5090-rank7-last-stage-cuda-oom-stale-process-"
                  "others-sigterm").diagnosis.verdict
    assert (v.category, v.rank) == ("cuda_oom", 7)


@pytest.mark.parametrize(
    ("case", "want"),
    [
        ("m-srun-mlperf-stable-diffusion-4node-32rank-success-then-rank30-nccl-system-error-"
         "at-exit", "none"),
        ("m-srun-mlperf-stable-diffusion-16node-64rank-fid-eval-valueerror-imaginary-component-"
         "all-ranks", "python_exception"),
    ],
)
def test_ranks_announced_again_after_training_are_no_collision(case: str, want: str) -> None:
    """Lightning announces every rank again for the evaluation phase; training had run
    between: the world formed, so the second announcement is no second launcher (was
    rendezvous)."""
    assert wild_analysis(case).diagnosis.verdict.category == want


@pytest.mark.parametrize(
    "case",
    [
        "m-mpirun-sagemaker-smddp-2node-16rank-mnist-ofi-ncclgetversion-warn-finished",
        "m-torchrun-sagemaker-fsdp-falcon7b-2node-16rank-eval-loss-nan-finished",
    ],
)
def test_sagemakers_training_success_ends_the_job(case: str) -> None:
    """The training toolkit's ``Reporting training SUCCESS`` after NET/OFI warnings on every
    rank: a finished job (was network)."""
    a = wild_analysis(case)
    assert (a.diagnosis.verdict.category, a.diagnosis.status) == ("none", "ok")


def test_a_proxys_rank_is_not_a_global_rank() -> None:
    """``[Proxy Service 4] Failed to execute operation Connect from rank 4`` in a TP group of
    a 48-rank Megatron-DeepSpeed job: the communicator's rank 4, not global rank 4 (was named,
    ``likely``)."""
    v = wild_analysis("m-other-jsrun-megatron-ds-summit-48rank-nccl-proxy-connect-unhandled-cuda-"
                  "error").diagnosis.verdict
    assert (v.category, v.rank) == ("nccl_error", None)

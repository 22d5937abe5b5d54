"""Rules written for issue 40 before its eighth final batch, from part N's open classes (the
verdict before each rule is in its test's docstring). Logs are the corpus's own, cut where a
test needs a shorter one; no line is written here."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import WILD, MakeJob, wild_analysis

SIMPLETUNER_HANG = "n-accelerate-deepspeed-simpletuner-validation"
QWEN3 = "k-torchrun-torchtitan-qwen3-14b-8gpu-rank6-sigabrt-near-oom-others-sigterm"
MINDSPEED = "m-unknown-mindspeed-mm-npu-rank0-tokenizing-rank5-rank7-hccl-allreduce-timeout"
TPU = "n-ray-verl-tpu-ppo-single-worker"


def test_a_sigabrt_record_alone_is_a_possible_rank() -> None:
    """torchrun's table names rank 1, exit -6, no other failure and no line of the worker's:
    was rank 1 (`certain`), a waiter the watchdog aborted after a validation hang."""
    v = wild_analysis(SIMPLETUNER_HANG).diagnosis.verdict
    assert (v.rank, v.rank_rule, v.rank_certainty) == (1, "first-observed", "possible")


def test_a_sigabrt_the_launcher_singled_out_keeps_its_rank() -> None:
    """torchtitan: rank 6 aborts and torchrun SIGTERMs the others: singled out, so the rank
    is not lowered to `possible`."""
    v = wild_analysis(QWEN3).diagnosis.verdict
    assert v.rank == 6
    assert v.rank_certainty != "possible"


def test_a_sigabrt_record_cut_from_its_launcher_lines(make_job: MakeJob, tmp_path: Path) -> None:
    """The same table with another exit code (-6 replaced by 1, the line otherwise as printed)
    keeps the rank the launcher reports: the rule is about SIGABRT, not about every table."""
    text = (WILD / SIMPLETUNER_HANG / "output.log").read_text(encoding="utf-8")
    text = text.replace("exitcode  : -6 (pid: 540118)", "exitcode  : 1 (pid: 540118)")
    text = text.replace("traceback : Signal 6 (SIGABRT) received by PID 540118",
                        "traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
    job = make_job({"output.log": text})
    from analyzer.api import analyze

    v = analyze([job / "output.log"]).diagnosis.verdict
    assert v.rank == 1
    assert v.rank_certainty != "possible"


def test_hccl_watchdog_timeouts_are_collective_timeouts() -> None:
    """torch_npu's watchdog prints NCCL's line with ``WorkHCCL``: was `nccl_error` from the
    teardown line that follows it."""
    v = wild_analysis(MINDSPEED).diagnosis.verdict
    assert (v.category, v.pattern_id) == ("collective_timeout", "nccl.watchdog.timeout")


def test_xla_hbm_exhaustion_is_device_oom() -> None:
    """A TPU critic update under Ray fails with XLA's ``Ran out of memory in memory space
    hbm``: was a plain Python exception."""
    v = wild_analysis(TPU).diagnosis.verdict
    assert (v.category, v.pattern_id) == ("cuda_oom", "memory.xla.hbm_oom")

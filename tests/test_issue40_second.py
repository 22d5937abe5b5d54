"""Rules written from the misses of issue 40's second final batch (tests/wild/README-j.md), each
checked on the real log that showed the class (the verdict before the rule is in the comment)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from analyzer.api import analyze
from analyzer.decide.promote import node_failed
from tests.helpers import WILD
from tests.test_decision_rules import ev


def _verdict(case: str) -> tuple[str, int | None]:
    v = analyze([p for p in (WILD / case).iterdir() if p.name != "expected.toml"]).diagnosis
    return v.verdict.category, v.verdict.rank


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        # An Ascend NPU's stream-sync timeout is a waiter's, not an exception of its own
        # (was python_exception, rank 7 certain).
        ("j-llamafactory-npu-rank7-barrier-sync-timeout-507046", ("collective_timeout", None)),
        # Rank 1 died of its own watchdog timeout: it waited; rank 0's OOM is named (was null).
        (
            "j-torchrun-2gpu-ring-attention-rank0-cuda-oom-rank1-watchdog-timeout-sigabrt-root-cause",
            ("cuda_oom", 0),
        ),
        # Horovod's stall inspector: a collective some ranks never submitted (was unknown, rank 1
        # certain: the victim's "Horovod has been shut down").
        ("j-mpirun-horovod-tf-amp-nan-rank0-skips-allreduce-stall", ("collective_timeout", None)),
        # Horovod's launcher says a process exited non-zero: a failure (was none).
        ("j-horovod-determined-first-process-1-exit1", ("unknown", None)),
        # A saver named for what it saves (save_peft_checkpoint) is a checkpoint save (was
        # python_exception).
        ("j-srun-torchrun-leonardo-fsdp-qlora-ckpt-save-params4bit-absmax", ("checkpoint", None)),
        # CUDA error 802: the NVSwitch fabric was not ready (was python_exception).
        ("j-ray-verl-16rank-rank0-worker-cuda-error-802-not-initialized", ("cuda_error", None)),
        # A node failure explains the "unknown error" CUDA errors and crashes before it (was
        # cuda_error).
        ("j-srun-jz-m4-cuda-unknown-error-node-failure-iam49", ("slurm_node_fail", None)),
    ],
)
def test_second_batch_rules(case: str, expected: tuple[str, int | None]) -> None:
    assert _verdict(case) == expected


def test_node_failed_leaves_other_cuda_errors_and_jobs_without_a_node_failure() -> None:
    unknown = replace(ev("cuda_error"), captures={"exc_msg": "unknown error"})
    illegal = replace(ev("cuda_error", line=2), captures={"exc_msg": "an illegal memory access"})
    node = ev("slurm_node_fail", line=3)
    out = node_failed([unknown, illegal, node])
    assert [r.role for r in out] == ["symptom", "root", "root"]
    assert [r.role for r in node_failed([unknown, illegal])] == ["root", "root"]

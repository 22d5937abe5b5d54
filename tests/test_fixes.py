"""Fixes fit the job: the rule table and the job's own numbers, never generic text."""

from __future__ import annotations

from analyzer.decide.fixes import tailor_fix
from analyzer.model.event import from_flat
from analyzer.shape.attribute import Geometry
from analyzer.shape.facts import JobFacts, gpu_generation

MAXCONN = (
    "Using tensor model parallelism or context parallelism require setting the environment "
    "variable CUDA_DEVICE_MAX_CONNECTIONS to 1"
)


CATALOG_TP_CP = (
    "Export CUDA_DEVICE_MAX_CONNECTIONS=1 in the job script before torchrun for this TP/CP run "
    "(on Hopper/Ampere). Megatron core 0.12.x also asserts with TP>1 on Blackwell "
    "(operator-precedence bug, fixed in 0.13): upgrade or set the variable."
)  # the catalog's fix of megatron.maxconn.tp_cp


def _fix(row: dict, **facts: object) -> str:
    return tailor_fix(from_flat(row), "base fix", JobFacts(values=dict(facts)), Geometry())


def test_max_connections_hopper_tp_gives_the_export_line() -> None:
    fix = _fix(
        {"category": "cuda_device_max_connections", "message": MAXCONN},
        gpu_generation="Hopper",
        tp=4,
        cp=1,
    )
    assert "export CUDA_DEVICE_MAX_CONNECTIONS=1" in fix and "Hopper" in fix and "TP=4" in fix


def test_max_connections_fsdp_says_delete_the_line() -> None:
    fix = _fix(
        {
            "category": "cuda_device_max_connections",
            "message": "FSDP always requires CUDA_DEVICE_MAX_CONNECTIONS value large than one",
        }
    )
    assert "delete the line `export CUDA_DEVICE_MAX_CONNECTIONS=1`" in fix


def test_max_connections_on_blackwell_names_the_precedence_bug() -> None:
    fix = _fix(
        {"category": "cuda_device_max_connections", "message": MAXCONN},
        gpu_generation="Blackwell",
        sm=100,
        tp=2,
        megatron_version="0.12.1",
    )
    assert "no effect" in fix and "upgrade megatron-core to ≥ 0.13" in fix
    assert fix.count("0.12") == 2  # the bug once, the version the logs show once


def test_max_connections_on_blackwell_upgrade_only_for_a_version_it_fixes() -> None:
    """A newer megatron-core (a YAML-config path of current main) or none in the logs: an
    upgrade would not help, so the fix does not say upgrade."""
    for version in ("0.16.1", None):
        facts = {"gpu_generation": "Blackwell", "sm": 100, "tp": 2}
        if version:
            facts["megatron_version"] = version
        fix = tailor_fix(from_flat({"category": "cuda_device_max_connections",
                                    "message": MAXCONN}), CATALOG_TP_CP,
                         JobFacts(values=facts), Geometry())
        assert "upgrade megatron-core" not in fix and "0.13" not in fix, fix
        assert "export CUDA_DEVICE_MAX_CONNECTIONS=1" in fix


def test_hopper_tp_fix_has_no_blackwell_note_and_no_repeat() -> None:
    fix = tailor_fix(from_flat({"category": "cuda_device_max_connections", "message": MAXCONN}),
                     CATALOG_TP_CP, JobFacts(values={"gpu_generation": "Hopper", "tp": 2}),
                     Geometry())
    assert "Blackwell" not in fix.replace("pre-Blackwell", "") and "0.12" not in fix
    assert fix.count("CUDA_DEVICE_MAX_CONNECTIONS=1") == 1, fix


def test_max_connections_moe_overlap_wants_32() -> None:
    fix = _fix({"category": "cuda_device_max_connections", "message": MAXCONN}, moe_overlap=True)
    assert "CUDA_DEVICE_MAX_CONNECTIONS=32" in fix


def test_world_size_divisibility_lists_valid_tp_values() -> None:
    fix = _fix(
        {
            "category": "config",
            "message": "world_size (4) is not divisible by 3",
            "world_size": "4",
            "tp": "3",
        }
    )
    assert "World size 4" in fix and "[1, 2, 4]" in fix


def test_heads_divisibility_lists_valid_tp_values() -> None:
    fix = _fix(
        {
            "category": "config",
            "heads": "6",
            "tp": "4",
            "message": "num_attention_heads (6) must be a multiple of "
            "tensor_model_parallel_size (4).",
        },
        world_size=4,
    )
    assert "num_attention_heads=6" in fix and "[1, 2]" in fix


def test_oom_fix_uses_parallelism_not_the_figures() -> None:
    fix = _fix(
        {
            "category": "cuda_oom",
            "rank": 5,
            "tried": "2.00 GiB",
            "free": "1.21 GiB",
            "total": "79.10 GiB",
        },
        tp=2,
        pp=1,
        micro_batch=4,
    )
    assert fix.startswith("With TP=2, PP=1: ") and "from 4 to 2" in fix and "TP 2→4" in fix
    assert "2.00 GiB" not in fix  # the cause gives the figures; the fix does not repeat them


def test_gpu_generation_from_names_and_sm() -> None:
    assert gpu_generation("NVIDIA H100 80GB HBM3")[0] == "Hopper"
    assert gpu_generation("NVIDIA B200")[0] == "Blackwell"
    assert gpu_generation("NVIDIA A100-SXM4-80GB")[0] == "Ampere"
    assert gpu_generation(None, 100)[0] == "Blackwell"

"""Fix assembly (analyzer.decide.fixsteps): steps de-duplicated, condition-checked, most
specific first; on the bundled jobs whose fixes used to repeat or contradict themselves."""

from __future__ import annotations

from analyzer.api import analyze
from analyzer.decide.fixsteps import (
    PRE_BLACKWELL,
    When,
    assemble,
    catalog_steps,
    contradicted,
    sentences,
    step,
)
from tests.helpers import FORMATS, REAL


def test_a_step_whose_topic_is_covered_is_dropped() -> None:
    fix = assemble([
        step("Lower --micro-batch-size from 4 to 2; recompute (--recompute-granularity "
             "selective).", "micro-batch", "recompute"),
        *catalog_steps("Reduce memory per GPU: lower --micro-batch-size, enable "
                       "--recompute-granularity full. If another process shows memory in use "
                       "on the same GPU, two jobs share the GPU."),
    ], {})
    assert "full" not in fix and fix.count("micro-batch") == 1
    assert "two jobs share the GPU" in fix  # a new topic is kept


def test_a_step_the_facts_contradict_is_dropped() -> None:
    hopper = {"gpu_generation": "Hopper"}
    assert contradicted(When(gpu=frozenset({"Blackwell"})), hopper)
    assert not contradicted(When(gpu=PRE_BLACKWELL), hopper)
    assert not contradicted(When(gpu=frozenset({"Blackwell"})), {})  # unknown never contradicts
    assert contradicted(When(uv=True), {"python_env": "conda"})
    assert contradicted(When(tp_or_cp=True), {"tp": 1, "cp": 1})
    assert contradicted(When(megatron_at_most=(0, 12)), {"megatron_version": "0.13.0"})
    assert contradicted(When(megatron_at_most=(0, 12), version_known=True), {})


def test_sentences_keep_versions_and_abbreviations_whole() -> None:
    assert sentences("Upgrade to 0.13 (e.g. core_v0.13.0). Then rerun.") == [
        "Upgrade to 0.13 (e.g. core_v0.13.0).", "Then rerun."]


def test_oom_fix_gives_the_generic_advice_once() -> None:
    """issue 30 item 9: the job-specific steps, then not the catalog's generic ones again."""
    fix = analyze(FORMATS / "cuda-oom-cascade", workers=1).diagnosis.verdict.fix
    assert fix.count("--micro-batch-size") == 1
    assert "--recompute-granularity selective" in fix and "granularity full" not in fix
    assert "TP 2→4" in fix and "--use-distributed-optimizer" in fix


def test_hang_from_flight_recorder_dumps_does_not_ask_for_them_again() -> None:
    """issue 30 item 9: dumps read, so no "rerun with the dump variables"; a hang without
    dumps still gets that advice."""
    fr = analyze(REAL / "fr-rank-stops", workers=1).diagnosis.verdict.fix
    assert "TORCH_NCCL_DUMP_ON_TIMEOUT" not in fr and "Flight Recorder dumps show" in fr
    plain = analyze(REAL / "hang-before-collective", workers=1).diagnosis.verdict.fix
    assert "TORCH_NCCL_DUMP_ON_TIMEOUT=1" in plain


def test_hopper_tp_fix_has_no_blackwell_note() -> None:
    fix = analyze(FORMATS / "max-connections-hopper-tp", workers=1).diagnosis.verdict.fix
    assert "export CUDA_DEVICE_MAX_CONNECTIONS=1" in fix and "0.12" not in fix


def test_master_addr_advice_is_given_once() -> None:
    fix = analyze(REAL / "master-addr-nodelist", workers=1).diagnosis.verdict.fix
    assert fix.count("scontrol show hostnames") == 1


def test_blackwell_max_connections_without_an_affected_version_is_not_told_to_upgrade(
    tmp_path,
) -> None:
    """The format-built Hopper fixture (it follows core_v0.14.0) with its nvidia-smi query lines
    (``--query-gpu=index,name,compute_cap --format=csv,noheader``) naming a B200 (sm_100): its
    world-size line has 0.13+'s format, so the assertion is not 0.12's precedence bug and an
    upgrade would not help (a YAML-config path of current Megatron asserts too); the variable's
    workaround is the fix. Without any version hint, no upgrade either."""
    src = FORMATS / "max-connections-hopper-tp" / "slurm-90017.out"
    text = src.read_text().replace("NVIDIA H100 80GB HBM3, 9.0", "NVIDIA B200, 10.0")
    assert "NVIDIA B200, 10.0" in text
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / src.name).write_text(text)
    a = analyze(tmp_path / "a", workers=1)
    v = a.diagnosis.verdict
    assert a.facts.get("gpu_generation") == "Blackwell"
    assert a.facts.get("megatron_series") == "0.13+"
    assert v.category == "cuda_device_max_connections"
    assert "upgrade megatron-core" not in v.fix and "past 0.12's precedence bug" in v.fix
    assert "export CUDA_DEVICE_MAX_CONNECTIONS=1" in v.fix
    no_version = "\n".join(line for line in text.splitlines() if "using world size" not in line)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / src.name).write_text(no_version)
    fix = analyze(tmp_path / "b", workers=1).diagnosis.verdict.fix
    assert "upgrade megatron-core" not in fix and "0.13" not in fix and "no megatron-core" in fix


def test_blackwell_max_connections_on_core_0_12_is_told_to_upgrade(tmp_path) -> None:
    """The same job with Megatron's world-size line in core 0.12's format (no ", " before
    "tensor-model-parallel size", megatron/training/arguments.py at core_v0.12.1; 0.13 adds
    it): the assertion is 0.12's precedence bug, which the upgrade fixes."""
    src = FORMATS / "max-connections-hopper-tp" / "slurm-90017.out"
    text = src.read_text().replace("NVIDIA H100 80GB HBM3, 9.0", "NVIDIA B200, 10.0")
    old = "hierarchical context-parallel sizes: None, tensor-model-parallel size"
    assert old in text
    (tmp_path / src.name).write_text(
        text.replace(old, "hierarchical context-parallel sizes: Nonetensor-model-parallel size"))
    a = analyze(tmp_path, workers=1)
    assert a.facts.get("megatron_series") == "0.10-0.12"
    fix = a.diagnosis.verdict.fix
    assert fix.startswith("This assertion is megatron-core 0.12's operator-precedence bug")
    assert "upgrade megatron-core to ≥ 0.13" in fix and fix.count("upgrade") == 1

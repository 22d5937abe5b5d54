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


# --- issue 41: each step states its condition and is checked against the launch facts ---


def _verdict(job) -> tuple[str, list]:
    a = analyze(job, workers=1)
    return a.diagnosis.verdict.fix, list(a.diagnosis.advisories)


def test_no_master_port_sentence_when_the_nodes_ports_agree() -> None:
    """Both nodes' torchrun print the same rdzv_endpoint port (29762; 43253): nothing to say
    about MASTER_PORT agreeing. The port that was busy is still checked on the master."""
    fix, _ = _verdict(REAL / "master-addr-per-node")
    assert "MASTER_PORT" not in fix
    fix, _ = _verdict(REAL / "master-port-in-use")
    assert "same MASTER_PORT" not in fix and "matches everywhere" not in fix
    assert "port 43253 is free on the master host" in fix
    assert "MASTER_ADDR must be" not in fix  # the store failed to listen on its own host


def test_no_port_check_on_a_node_that_is_not_the_master() -> None:
    """Node 1 reached for the loopback address with its own port (MASTER_PORT + 1): a port
    check there is advice about a node that runs no store; the ports are what to fix."""
    fix, _ = _verdict(REAL / "wrong-master-port")
    assert "is free" not in fix and "ss -ltnp" not in fix
    assert "same MASTER_PORT" in fix


def test_no_port_check_on_a_host_outside_the_allocation() -> None:
    """Synthetic events (the catalog's client-timeout format): the job ran on node001/node002
    and a rank reached for login-01, which is not one of them; on the master it is kept."""
    from analyzer.decide.fixes import tailor_fix
    from analyzer.model.event import from_flat
    from analyzer.shape.attribute import Geometry
    from analyzer.shape.facts import JobFacts

    def rows(store: str) -> list:
        text = (f"The client socket has timed out after 600000ms while trying to connect to "
                f"({store}, 29500).")
        return [from_flat({"file": "slurm-1.out", "line": 1, "node_index": 1, "node": "node002",
                           "host": "node002", "category": "rendezvous", "role": "root",
                           "store_host": store, "port": "29500", "text": text}),
                from_flat({"file": "slurm-1.out", "line": 2, "node_index": 0, "node": "node001",
                           "host": "node001", "text": "srun: error: node001: task 0"})]

    geo = Geometry(task_hosts={0: "node001", 1: "node002"})
    for store, kept in (("login-01", False), ("node002", False), ("node001", True)):
        r = rows(store)
        fix = tailor_fix(r[0], "-", JobFacts(values={}), geo, r)
        assert ("is free" in fix) is kept, (store, fix)
        assert ("login-01" in fix) is False


def test_fsdp_fix_does_not_restate_its_rule() -> None:
    fix, _ = _verdict(FORMATS / "fsdp-max-connections-one")
    assert fix.count("conditionally") == 1 and len(sentences(fix)) == 1


def test_moe_overlap_warning_gets_the_guides_32(tmp_path) -> None:
    """Megatron's own warning (the catalog's example line of megatron.ctx.maxconn_warning)
    under TP with MoE overlap: the guide says 32, not a value to pick."""
    line = ("For Hopper and before, try not to use tensor model parallelism or context "
            "parallelism with overlap_moe_expert_parallel_comm. Using tensor/context model "
            "parallelism requires setting the environment variable CUDA_DEVICE_MAX_CONNECTIONS "
            "to 1 to maximize the performance. While overlap_moe_expert_parallel_comm requires "
            "setting a larger CUDA_DEVICE_MAX_CONNECTIONS for better parallelization. If you "
            "want to use both, you can set CUDA_DEVICE_MAX_CONNECTIONS to 1 or 32, which "
            "depends on which parallelization you want to prioritize.")
    (tmp_path / "slurm-1.out").write_text(line + "\n")
    _, advisories = _verdict(tmp_path)
    [adv] = [a for a in advisories if a.rule == "max-connections"]
    assert "CUDA_DEVICE_MAX_CONNECTIONS=32" in adv.fix and "favour" not in adv.fix


def test_uv_missing_gets_container_advice_not_uv_run(tmp_path) -> None:
    """The catalog's example line of python.env.command_not_found: `uv` itself is missing."""
    (tmp_path / "slurm-1.out").write_text("bash: uv: command not found\n")
    fix, _ = _verdict(tmp_path)
    assert "install uv in the image" in fix
    assert "`uv run python" not in fix and "uv sync" not in fix


def test_no_resubmit_from_a_checkpoint_that_stayed_on_the_nodes(tmp_path) -> None:
    """The time-limit job of test_advisories_content (Megatron's and slurmstepd's formats):
    --load/--save under /tmp, so there is no checkpoint to resubmit from."""
    log = (
        " loading distributed checkpoint from /tmp/ckpt at iteration 0\n"
        "WARNING: could not find the metadata file /tmp/ckpt/latest_checkpointed_iteration.txt\n"
        "    will not load any checkpoints and will start from random\n"
        " [2026-12-02 17:10:00] iteration        1/    1000 | consumed samples:          256 |"
        " lm loss: 1.050000E+01 |\n"
        "slurmstepd: error: *** JOB 41 ON node001 CANCELLED AT 2026-12-02T19:10:52 DUE TO "
        "TIME LIMIT ***\n"
    )
    (tmp_path / "slurm-41.out").write_text(log)
    fix, _ = _verdict(tmp_path)
    assert "resubmit from the last" not in fix and "--time" in fix
    fix, _ = _verdict(REAL / "slurm-time-limit")  # checkpoints not node-local: kept
    assert "resubmit from the last one" in fix


def test_invalid_ordinal_fix_gives_the_value_the_logs_show() -> None:
    """Synthetic event (the catalog's invalid-ordinal message): the launcher's --nproc-per-node
    and, when the logs show them, the GPUs per node."""
    from analyzer.decide.fixes import tailor_fix
    from analyzer.model.event import from_flat
    from analyzer.shape.attribute import Geometry
    from analyzer.shape.facts import JobFacts

    row = from_flat({"category": "cuda_error", "text": "CUDA error: invalid device ordinal"})
    base = ("Make --nproc-per-node equal the number of GPUs visible per node. Do not narrow "
            "CUDA_VISIBLE_DEVICES per task.")
    fix = tailor_fix(row, base, JobFacts(values={"gpus_per_node": 4}), Geometry(nproc_per_node=8))
    assert fix.startswith("Set --nproc-per-node 4 (the GPUs per node the logs show), not 8")
    assert "Make --nproc-per-node equal" not in fix and "CUDA_VISIBLE_DEVICES" in fix
    fix = tailor_fix(row, base, JobFacts(values={}), Geometry(nproc_per_node=8))
    assert fix.startswith("--nproc-per-node is 8 here")


def test_invalid_ordinal_fix_counts_the_gpus_nvidia_smi_lists(tmp_path) -> None:
    """The format-built Hopper fixture's nvidia-smi query lines cut to GPUs 0-3 (a node with 4
    GPUs) and a synthetic invalid-ordinal event of a launcher started with 8 per node."""
    from analyzer.decide.fixes import tailor_fix
    from analyzer.model.event import from_flat
    from analyzer.shape.attribute import Geometry

    src = FORMATS / "max-connections-hopper-tp" / "slurm-90017.out"
    kept = [line for line in src.read_text().splitlines()
            if not any(line.startswith(f"{i}, NVIDIA") for i in range(4, 8))]
    (tmp_path / src.name).write_text("\n".join(kept) + "\n")
    a = analyze(tmp_path, workers=1)
    row = from_flat({"category": "cuda_error", "text": "CUDA error: invalid device ordinal"})
    base = "Make --nproc-per-node equal the number of GPUs visible per node."
    fix = tailor_fix(row, base, a.facts, Geometry(nproc_per_node=8), a.rows)
    assert fix == "Set --nproc-per-node 4 (the GPUs per node the logs show), not 8: a process " \
                  "per GPU, no more."


def test_worktree_fix_says_it_once() -> None:
    """The advisory's "cd into a worktree on shared storage" and the catalog's "put the
    worktree on storage every node sees" are one step."""
    fix, _ = _verdict(REAL / "worktree-not-shared")
    assert fix.lower().count("worktree") == 1 and "mcore-diagnose lint" in fix


def test_raw_nodelist_endpoint_shows_the_ports_agree() -> None:
    """Both nodes' ValueError names the endpoint node[001-002]:57855: the same port."""
    fix, _ = _verdict(REAL / "master-addr-nodelist")
    assert "MASTER_PORT" not in fix

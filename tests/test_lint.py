"""``mcore-diagnose lint``: each launch rule with a script that breaks it and one that keeps it.

The scripts are the guide's skeleton (``recipes/train-megatron.sbatch``, which must lint clean)
with one line changed, so each test shows exactly which edit breaks which rule.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.lint import lint_text
from analyzer.lint.config import ConfigError, LintConfig, load_config
from analyzer.lint.launchplan import read_job
from analyzer.lint.rules import RULE_IDS, Finding
from analyzer.lint.script import parse_script
from tests.helpers import ROOT

SKELETON_PATH = ROOT / "recipes" / "train-megatron.sbatch"
SKELETON = SKELETON_PATH.read_text()
LAUNCH = "uv run --no-sync python -m torch.distributed.run"


def edit(old: str, new: str, text: str = SKELETON) -> str:
    """The skeleton with ``old`` replaced by ``new`` (which must be there)."""
    assert old in text, old
    return text.replace(old, new, 1)


def lint(text: str, cfg: LintConfig | None = None) -> list[Finding]:
    return lint_text(text, "train.sbatch", cfg)


def only(found: list[Finding], rule: str) -> list[Finding]:
    return [f for f in found if f.rule == rule]


def line_of(text: str, needle: str) -> int:
    return next(n for n, ln in enumerate(text.splitlines(), 1) if needle in ln)


LAUNCH_LINE = line_of(SKELETON, "uv run --no-sync")
RANK_LINE = line_of(SKELETON, '--nnodes "$NNODES"')


def test_the_guide_skeleton_lints_clean() -> None:
    assert lint(SKELETON) == []


def test_every_rule_has_a_reason_and_every_finding_a_fix() -> None:
    broken = edit("--ntasks-per-node=1", "--ntasks-per-node=8")
    broken = edit("export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | "
                  "head -n1)", "export MASTER_ADDR=$SLURM_JOB_NODELIST", broken)
    found = lint(broken)
    assert {f.rule for f in found} == {"tasks-per-node", "master-addr"}
    for f in found:
        assert f.fix and f.reason and f.severity in ("error", "warning", "note")


# --- tasks-per-node ----------------------------------------------------------------------------


def test_tasks_per_node_above_one_is_an_error_on_the_srun_that_inherits_it() -> None:
    text = edit("--ntasks-per-node=1", "--ntasks-per-node=8")
    [f] = lint(text)
    assert (f.rule, f.severity, f.line) == ("tasks-per-node", "error", LAUNCH_LINE - 1)
    assert f.fix == "srun --ntasks=\"$SLURM_NNODES\" --ntasks-per-node=1 --label bash -c '"


def test_ntasks_above_nodes_breaks_and_ntasks_equal_to_nodes_keeps() -> None:
    many = edit("#SBATCH --ntasks-per-node=1", "#SBATCH --ntasks=16")
    [f] = only(lint(many), "tasks-per-node")
    assert f.line == LAUNCH_LINE - 1 and "#SBATCH --ntasks=16 (line 7)" in f.message
    assert only(lint(edit("#SBATCH --ntasks-per-node=1", "#SBATCH -n 2")), "tasks-per-node") == []
    srun_own = edit("srun --label", "srun --ntasks=16 --label", many)
    [f] = only(lint(srun_own), "tasks-per-node")
    assert f.line == LAUNCH_LINE - 1 and "16 tasks on 2 node(s)" in f.message


def test_srun_option_overrides_the_header() -> None:
    text = edit("srun --label bash", "srun --ntasks-per-node=8 --label bash")
    [f] = only(lint(text), "tasks-per-node")
    assert f.line == line_of(text, "srun --ntasks-per-node=8")
    assert f.fix.startswith("srun --ntasks-per-node=1 --label")


def test_launcher_without_srun_on_several_nodes() -> None:
    text = edit("srun --label bash -c '", "bash -c '")
    [f] = only(lint(text), "tasks-per-node")
    assert "not started by srun" in f.message
    one_node = edit("--nodes=2", "--nodes=1", text)
    assert only(lint(one_node), "tasks-per-node") == []


# --- launcher -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("launcher", "words"),
    [
        ("torchrun", "bare torchrun"),
        ("python -m torch.distributed.launch", "deprecated"),
        ("python3 -u -m torch.distributed.run", "outside uv"),
    ],
)
def test_launchers_other_than_uv_run_python_m_torch_distributed_run(launcher: str,
                                                                    words: str) -> None:
    text = edit(LAUNCH, launcher)
    [f] = lint(text)
    assert (f.rule, f.severity, f.line) == ("launcher", "warning", LAUNCH_LINE)
    assert words in f.message
    assert f.fix.startswith("uv run python -m torch.distributed.run --nnodes") or \
        f.fix.startswith("uv run python -m torch.distributed.run \\")


@pytest.mark.parametrize("launcher", ["uv run --no-sync torchrun",
                                      "/shared/me/Megatron-LM/.venv/bin/python -m "
                                      "torch.distributed.run"])
def test_launchers_that_see_the_venv_are_kept(launcher: str) -> None:
    assert only(lint(edit(LAUNCH, launcher)), "launcher") == []


# --- worker-group -------------------------------------------------------------------------------


def test_standalone_on_several_nodes_trains_independent_models() -> None:
    text = edit('--nnodes "$NNODES" --nproc-per-node', "--standalone --nproc-per-node")
    text = edit('--node-rank "$SLURM_NODEID"', "", text)
    text = edit('--master-addr "$MASTER_ADDR" --master-port "$MASTER_PORT"', "", text)
    [f] = only(lint(text), "worker-group")
    assert f.severity == "warning" and f.line == RANK_LINE and "--nnodes \"$NNODES\"" in f.fix
    assert only(lint(edit("--nodes=2", "--nodes=1", text)), "worker-group") == []


def test_nnodes_one_on_two_nodes_is_independent_single_node_jobs() -> None:
    text = edit('--nnodes "$NNODES"', "--nnodes=1")
    [f] = lint(text)
    assert (f.rule, f.severity, f.line) == ("worker-group", "error", RANK_LINE)
    assert "independent single-node jobs" in f.message
    assert '--nnodes "$SLURM_NNODES"' in f.fix


def test_nnodes_one_with_a_node_rank_when_the_node_count_is_unknown() -> None:
    text = edit("#SBATCH --nodes=2\n", "", edit('--nnodes "$NNODES"', "--nnodes 1"))
    assert [f.rule for f in lint(text)] == ["worker-group"]


def test_node_rank_expanded_by_the_batch_shell() -> None:
    text = edit("srun --label bash -c '\n  uv run", "srun --label uv run")
    text = edit("\n' bash \"${MEGATRON_ARGS[@]}\"", ' "${MEGATRON_ARGS[@]}"', text)
    text = edit('pretrain_gpt.py "$@"', "pretrain_gpt.py", text)
    [f] = lint(text)
    assert f.rule == "worker-group" and "expanded once by the batch shell" in f.message


def test_missing_node_rank_and_missing_nnodes() -> None:
    no_rank = edit('--node-rank "$SLURM_NODEID"', "")
    assert [f.rule for f in lint(no_rank)] == ["worker-group"]
    c10d = edit('--node-rank "$SLURM_NODEID"', "--rdzv-backend c10d")
    assert lint(c10d) == []
    no_nnodes = edit('--nnodes "$NNODES"', "")
    assert "no --nnodes" in lint(no_nnodes)[0].message


# --- master-addr --------------------------------------------------------------------------------

MASTER = 'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)'


@pytest.mark.parametrize(
    ("value", "severity", "words"),
    [
        ("$SLURM_JOB_NODELIST", "error", "raw node list"),
        ("${SLURM_NODELIST}", "error", "raw node list"),
        ("'node[001-002]'", "error", "raw node list"),
        ("gpu-a,gpu-b", "error", "raw node list"),
        ("$(hostname)", "warning", "batch host"),
        ("127.0.0.1", "error", "loopback"),
        ("gpu-node-017", "warning", "fixed host"),
    ],
)
def test_master_addr_not_from_scontrol(value: str, severity: str, words: str) -> None:
    text = edit(MASTER, f"export MASTER_ADDR={value}")
    [f] = lint(text)
    assert (f.rule, f.severity, f.line) == ("master-addr", severity, 18)
    assert words in f.message
    assert f.fix == MASTER


def test_master_addr_from_hostname_inside_the_task_is_an_error() -> None:
    text = edit('--master-addr "$MASTER_ADDR"', "--master-addr $(hostname)")
    [f] = lint(text)
    assert (f.rule, f.severity, f.line) == ("master-addr", "error", RANK_LINE + 1)
    assert "inside the srun task" in f.message


def test_master_addr_kept_with_other_scontrol_spellings_and_on_one_node() -> None:
    alt = edit(MASTER, "export MASTER_ADDR=`scontrol show hostname $SLURM_NODELIST | head -1`")
    assert lint(alt) == []
    one = edit("--nodes=2", "--nodes=1", edit(MASTER, "export MASTER_ADDR=$(hostname)"))
    assert only(lint(one), "master-addr") == []


def test_master_addr_never_set() -> None:
    text = edit(MASTER + "\n", "")
    [f] = lint(text)
    assert f.rule == "master-addr" and "never sets" in f.message


# --- allocation ---------------------------------------------------------------------------------


def test_nnodes_hard_coded_apart_from_the_allocation() -> None:
    text = edit("export NNODES=$SLURM_NNODES", "export NNODES=4")
    [f] = lint(text)
    assert (f.rule, f.severity, f.line) == ("allocation", "error", 20)
    assert f.fix == "export NNODES=$SLURM_NNODES"
    assert lint(edit("export NNODES=$SLURM_NNODES", "export NNODES=2")) == []


@pytest.mark.parametrize(("n", "severity"), [(16, "error"), (4, "warning")])
def test_gpus_per_node_against_the_allocation(n: int, severity: str) -> None:
    text = edit("export GPUS_PER_NODE=8", f"export GPUS_PER_NODE={n}")
    [f] = lint(text)
    assert (f.rule, f.severity, f.line) == ("allocation", severity, 21)
    assert f.fix == "export GPUS_PER_NODE=8"


def test_gpus_per_node_from_gres_and_world_size() -> None:
    gres = edit("--gpus-per-node=h100:8", "--gres=gpu:h100:4")
    [f] = lint(gres)
    assert f.rule == "allocation" and "4 GPUs per node" in f.message
    ws = edit("export WORLD_SIZE=$((NNODES * GPUS_PER_NODE))", "export WORLD_SIZE=32")
    [f] = lint(ws)
    assert f.rule == "allocation" and "2 × 8 = 16" in f.message


def test_world_size_arithmetic_on_literals_is_evaluated() -> None:
    text = edit("export NNODES=$SLURM_NNODES", "export NNODES=2")
    assert lint(text) == []
    job = read_job(parse_script(text))
    assert job.steps[-1].env.get("WORLD_SIZE").value == "16"  # type: ignore[union-attr]


# --- max-connections ----------------------------------------------------------------------------

IF_BLOCK = "if (( ${CC%%.*} < 10 )); then\n    export CUDA_DEVICE_MAX_CONNECTIONS=1\nfi\n"


def test_tp_on_hopper_without_max_connections_is_an_error() -> None:
    text = edit(IF_BLOCK, "")
    [f] = lint(text)
    assert (f.rule, f.severity) == ("max-connections", "error")
    assert "--gpus-per-node h100" in f.message and f.fix == "export CUDA_DEVICE_MAX_CONNECTIONS=1"
    assert f.line == line_of(text, "uv run")


def test_unknown_gpu_type_warns_and_the_partition_map_decides(tmp_path: Path) -> None:
    text = edit(IF_BLOCK, "", edit("--gpus-per-node=h100:8", "--gpus-per-node=8\n"
                                   "#SBATCH --partition=batch"))
    [f] = lint(text)
    assert (f.rule, f.severity) == ("max-connections", "warning")
    cfg_file = tmp_path / "config.toml"
    cfg_file.write_text('[lint.partitions]\nbatch = "H100-SXM"\n')
    [f] = lint(text, load_config(cfg_file))
    assert f.severity == "error" and "partition batch = H100-SXM" in f.message
    cfg_file.write_text('[lint.partitions]\nbatch = "GB200"\n')
    assert lint(text, load_config(cfg_file)) == []


def test_unconditional_export_on_blackwell_is_a_note() -> None:
    text = edit(IF_BLOCK, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n",
                edit("--gpus-per-node=h100:8", "--gpus-per-node=b200:8"))
    [f] = lint(text)
    assert (f.rule, f.severity) == ("max-connections", "note") and "Blackwell" in f.message
    hopper = edit(IF_BLOCK, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n")
    assert lint(hopper) == []


def test_fsdp_with_max_connections_one_is_an_error() -> None:
    text = edit(IF_BLOCK, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n",
                edit("    --bf16\n", "    --bf16\n    --use-torch-fsdp2\n"))
    [f] = lint(text)
    assert (f.rule, f.severity, f.line) == ("max-connections", "error",
                                            line_of(text, "CUDA_DEVICE_MAX_CONNECTIONS=1"))
    assert "use-torch-fsdp2" in f.message
    kept = edit(IF_BLOCK, "", edit("    --bf16\n", "    --bf16\n    --use-megatron-fsdp\n"))
    assert lint(kept) == []


def test_moe_overlap_wants_32() -> None:
    text = edit("TP=2", "TP=1", edit("    --bf16\n",
                                     "    --bf16\n    --overlap-moe-expert-parallel-comm\n"))
    [f] = lint(text)
    assert (f.rule, f.severity) == ("max-connections", "warning")
    assert f.fix == "export CUDA_DEVICE_MAX_CONNECTIONS=32"
    kept = edit(IF_BLOCK, "export CUDA_DEVICE_MAX_CONNECTIONS=32\n", text)
    assert lint(kept) == []


def test_exported_where_nothing_needs_it() -> None:
    text = edit("TP=2", "TP=1", edit(IF_BLOCK, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"))
    [f] = lint(text)
    assert (f.rule, f.severity) == ("max-connections", "note")
    assert lint(edit("TP=2", "TP=1")) == []


# --- node-local-path ----------------------------------------------------------------------------


def test_worktree_on_node_local_disk() -> None:
    text = edit("WORKTREE=/shared/$USER/Megatron-LM", "WORKTREE=/tmp/$USER/Megatron-LM")
    found = only(lint(text), "node-local-path")
    assert next((f.severity, f.line) for f in found) == ("error", 15)
    # the checkpoints and logs under the worktree are node-local too
    assert {f.line for f in found} >= {15, line_of(text, "--save")}


@pytest.mark.parametrize("path", ["/local/ckpt", "$TMPDIR/ckpt", "${TMPDIR}/ckpt",
                                  "/dev/shm/ckpt"])
def test_checkpoints_on_node_local_disk(path: str) -> None:
    text = edit('--save "$WORKTREE/checkpoints/gpt"', f'--save "{path}"')
    [f] = lint(text)
    assert (f.rule, f.severity, f.line) == ("node-local-path", "warning", line_of(text, "--save"))
    assert "/shared/$USER/Megatron-LM" in f.fix


def test_node_local_prefixes_are_configurable(tmp_path: Path) -> None:
    text = edit('--save "$WORKTREE/checkpoints/gpt"', '--save "/fast/ckpt"')
    assert lint(text) == []
    cfg = tmp_path / "c.toml"
    cfg.write_text('[lint]\nnode_local_paths = ["/fast"]\nshared_paths = ["/local/proj"]\n')
    c = load_config(cfg)
    assert [f.rule for f in lint(text, c)] == ["node-local-path"]
    shared_local = edit('--save "$WORKTREE/checkpoints/gpt"', '--save "/local/proj/ckpt"')
    assert lint(shared_local, c) == []


def test_sbatch_output_on_node_local_disk() -> None:
    text = edit("--output=logs/%x-%j.out", "--output=/tmp/%x-%j.out")
    [f] = lint(text)
    assert (f.rule, f.line) == ("node-local-path", 10)


# --- container-mounts ---------------------------------------------------------------------------


def test_container_without_the_worktree_mounted() -> None:
    text = edit("srun --label", "srun --container-image=nvcr.io/nvidia/pytorch:25.01-py3 --label")
    [f] = lint(text)
    assert (f.rule, f.severity) == ("container-mounts", "error")
    assert "--container-mounts=/shared/$USER/Megatron-LM:/shared/$USER/Megatron-LM" in f.fix
    mounted = edit("srun --label", "srun --container-image=nvcr.io/nvidia/pytorch:25.01-py3 "
                   "--container-mounts=/shared:/shared --label")
    assert lint(mounted) == []


# --- uv-sync ------------------------------------------------------------------------------------


def test_uv_run_without_no_sync_is_a_note_only_where_logs_can_settle_it() -> None:
    text = edit(LAUNCH, "uv run python -m torch.distributed.run")
    assert lint(text) == []  # lint has no logs: whether `uv sync` ran before is for them to tell
    logs = LintConfig(log_checks=True)  # the post-mortem's
    [f] = lint(text, logs)
    assert (f.rule, f.severity, f.line) == ("uv-sync", "note", LAUNCH_LINE)
    assert f.fix.startswith("uv run --no-sync python -m torch.distributed.run")
    synced = edit("cd \"$WORKTREE\"\n", "cd \"$WORKTREE\"\nuv sync --frozen\n", text)
    assert lint(synced, logs) == []


def test_uv_sync_inside_srun() -> None:
    text = edit("  uv run --no-sync", "  uv sync && uv run --no-sync")
    [f] = lint(text)
    assert (f.rule, f.line) == ("uv-sync", LAUNCH_LINE) and "inside srun" in f.message


# --- inline disable, parser ---------------------------------------------------------------------


def test_inline_disable_silences_one_rule_on_one_line() -> None:
    text = edit(MASTER, "export MASTER_ADDR=$SLURM_JOB_NODELIST  "
                "# mcore-diagnose: disable=master-addr")
    assert lint(text) == []
    other = edit(MASTER, "export MASTER_ADDR=$SLURM_JOB_NODELIST  "
                 "# mcore-diagnose: disable=launcher")
    assert [f.rule for f in lint(other)] == ["master-addr"]


def test_rule_ids_are_documented() -> None:
    doc = (ROOT / "docs" / "lint.md").read_text()
    for rid in RULE_IDS:
        assert f"`{rid}`" in doc


def test_parser_follows_continuations_strings_and_defaults() -> None:
    text = (
        "#!/bin/bash\n#SBATCH -N 4\n#SBATCH --gres=gpu:a100:4\necho hi\n#SBATCH --nodes=9\n"
        'BASE=${BASE:-/lustre/me}\nARGS="--tensor-model-parallel-size 2 \\\n'
        '  --save $BASE/ckpt"\n'
        "srun --ntasks-per-node=1 \\\n  uv run --no-sync python -m torch.distributed.run \\\n"
        "  --nnodes $SLURM_NNODES --nproc-per-node 4 \\\n  pretrain_gpt.py $ARGS\n"
    )
    s = parse_script(text)
    assert [(d.name, d.value, d.line) for d in s.directives] == [
        ("nodes", "4", 2), ("gres", "gpu:a100:4", 3)]  # #SBATCH after a command is ignored
    job = read_job(s)
    assert job.nodes == (4, 2) and job.gpus_per_node() == (4, 3)
    [lz] = job.launchers
    assert lz.opts["nproc-per-node"].value == "4" and lz.opts["nnodes"].symbolic
    assert lz.args["tensor-model-parallel-size"].value == "2"
    assert lz.args["save"].value == "/lustre/me/ckpt"
    assert lz.first.at == 10 and lz.script is not None and lz.script.value == "pretrain_gpt.py"


# --- config and command line --------------------------------------------------------------------


def test_bad_config_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text("[lint\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
    bad.write_text("[lint]\nnode_local_paths = 3\n")
    with pytest.raises(ConfigError, match="list of strings"):
        load_config(bad)
    with pytest.raises(ConfigError, match="no such config"):
        load_config(tmp_path / "absent.toml")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = {**os.environ, "XDG_CONFIG_HOME": "/nonexistent-config-home"}
    e.pop("MCORE_DIAGNOSE_CONFIG", None)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "analyzer", "lint", *args],
                          capture_output=True, text=True, env=e, timeout=120)


def test_cli_exit_codes_and_json(tmp_path: Path) -> None:
    r = run(str(SKELETON_PATH))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no findings" in r.stdout
    bad = tmp_path / "bad.sbatch"
    bad.write_text(edit(MASTER, "export MASTER_ADDR=$SLURM_JOB_NODELIST"))
    r = run(str(bad), "-f", "json")
    assert r.returncode == 1
    [f] = json.loads(r.stdout)["findings"]
    assert {k: f[k] for k in ("rule", "severity", "line")} == {
        "rule": "master-addr", "severity": "error", "line": 18}
    assert set(f) >= {"rule", "severity", "line", "message", "fix"}
    r = run(str(bad))
    assert r.returncode == 1 and "\x1b" not in r.stdout
    assert "  18 | export MASTER_ADDR=$SLURM_JOB_NODELIST" in r.stdout


def test_cli_note_only_exits_0(tmp_path: Path) -> None:
    p = tmp_path / "note.sbatch"
    p.write_text(edit("TP=2", "TP=1", edit(IF_BLOCK, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n")))
    r = run(str(p))
    assert r.returncode == 0 and "note" in r.stdout


def test_cli_missing_or_unreadable_script_exits_3(tmp_path: Path) -> None:
    r = run(str(tmp_path / "absent.sbatch"))
    assert r.returncode == 3 and r.stderr.count("\n") == 1 and "cannot read" in r.stderr
    r = run(str(tmp_path))
    assert r.returncode == 3 and "directory" in r.stderr


def test_cli_config_option(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[lint.partitions\n")
    r = run(str(SKELETON_PATH), "--config", str(cfg))
    assert r.returncode == 64 and "cannot load config" in r.stderr
    cfg.write_text('[lint]\nnode_local_paths = ["/shared"]\n')
    r = run(str(SKELETON_PATH), "--config", str(cfg))
    assert r.returncode == 1 and "node-local-path" in r.stdout
    r = run(str(SKELETON_PATH), env={"MCORE_DIAGNOSE_CONFIG": str(cfg)})
    assert r.returncode == 1


def test_script_text_is_not_markup(tmp_path: Path) -> None:
    p = tmp_path / "m.sbatch"
    p.write_text(edit(MASTER, "export MASTER_ADDR=$SLURM_JOB_NODELIST  # [bold red]x[/]"))
    r = run(str(p))
    assert "# [bold red]x[/]" in r.stdout


def test_a_long_script_lints_in_linear_time() -> None:
    """16 times the lines cost about 16 times the work (17 measured), not 256 times as for a
    rule that rescans the script for each line (a rescan as costly as the rest measures 60).
    Work is this thread's CPU time, compared within this run: a slow or busy machine changes
    nothing."""
    import time

    def script(n: int) -> str:
        body = "".join(f"export V{i}=value{i}\necho $V{i}\n" for i in range(n))
        return edit("set -euo pipefail\n", "set -euo pipefail\n" + body)

    def cost(text: str) -> float:
        best = float("inf")
        for _ in range(3):
            start = time.thread_time()
            assert lint(text) == []
            best = min(best, time.thread_time() - start)
        return best

    growth = cost(script(4000)) / cost(script(250))
    assert growth < 40, f"16 times the lines cost {growth:.0f} times the work: not linear"


def test_random_text_never_raises() -> None:
    import random

    rnd = random.Random(7)
    chars = [*list("ab $(){}[]'\"\\\n#=;&|`-1"), "srun ", "torchrun ", "uv run ", "--nnodes "]
    for _ in range(500):
        lint("".join(rnd.choice(chars) for _ in range(rnd.randint(0, 300))))


def test_cli_warns_when_the_file_is_not_a_script(tmp_path: Path) -> None:
    p = tmp_path / "notes.txt"
    p.write_bytes(b"\x00\x01binary\xff")
    r = run(str(p))
    assert r.returncode == 0 and "is it an sbatch script?" in r.stderr


def test_double_quoted_srun_body_with_escaped_dollars() -> None:
    text = (
        "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=b200:8\n"
        "export CUDA_DEVICE_MAX_CONNECTIONS=1\ncd /lustre/me/Megatron-LM\n"
        'srun bash -c "python -m torch.distributed.run --nnodes 2 --nproc-per-node 8 '
        "--node-rank \\$SLURM_NODEID --master-addr \\$(scontrol show hostnames "
        '\\$SLURM_JOB_NODELIST | head -n1) pretrain_gpt.py --tensor-model-parallel-size 2"\n'
    )
    [lz] = read_job(parse_script(text)).launchers
    assert lz.opts["node-rank"].value == "$SLURM_NODEID"
    assert lz.opts["master-addr"].value.startswith("$(scontrol show hostnames")
    assert lz.args["tensor-model-parallel-size"].value == "2"
    found = {f.rule: f for f in lint(text)}
    assert set(found) == {"launcher", "max-connections"}
    assert found["max-connections"].severity == "note"  # Blackwell: not needed
    assert found["launcher"].fix.startswith('srun bash -c "uv run python -m torch.distributed.run')


def test_srun_running_the_training_script_without_a_launcher() -> None:
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n"
            "srun python pretrain_gpt.py --tensor-model-parallel-size 1\n")
    [f] = lint(text)
    assert (f.rule, f.severity, f.line) == ("launcher", "warning", 4)
    assert "no torch.distributed.run" in f.message
    assert lint("#!/bin/bash\n#SBATCH --nodes=2\nsrun hostname\n") == []


def test_uv_run_options_before_the_interpreter() -> None:
    text = edit(LAUNCH, 'uv run --no-sync --project "$WORKTREE" python -m torch.distributed.run')
    assert lint(text) == []
    [lz] = read_job(parse_script(text)).launchers
    # WORKTREE is not exported: the srun task's shell, which expands the body, does not have it
    assert lz.uv and lz.uv_opts == ["--no-sync", "--project", "$WORKTREE"]
    exported = edit("WORKTREE=/shared", "export WORKTREE=/shared", text)
    [lz] = read_job(parse_script(exported)).launchers
    assert lz.uv_opts == ["--no-sync", "--project", "/shared/$USER/Megatron-LM"]
    not_uv = edit(LAUNCH, "uv pip list; python -m torch.distributed.run")
    assert [f.rule for f in lint(not_uv)] == ["launcher"]

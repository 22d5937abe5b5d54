"""``mcore-diagnose lint`` against the launch guide itself (issue 29): the guide's own skeleton
lints clean (no finding at all, issue 41); MASTER_ADDR is reported where it is set, through
``export``, ``${VAR:-...}`` and ``bash -c '...'`` quoting; MoE overlap wants
``CUDA_DEVICE_MAX_CONNECTIONS=32``; an srun that inherits several tasks per node is flagged on
its own line; ``--save`` and ``--load`` on node-local disk are fixed together; ``#SBATCH
--output`` never gets a ``$VAR``.

Scripts are the repository skeleton (``recipes/train-megatron.sbatch``) with one edit, or the
guide's skeleton as written (``tests/lint_scripts/guide-skeleton.sbatch``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.lint import LintConfig, lint_text
from analyzer.lint.launchplan import read_job
from analyzer.lint.rules import Finding
from analyzer.lint.script import parse_script
from tests.helpers import ROOT

GUIDE_PATH = ROOT / "tests" / "lint_scripts" / "guide-skeleton.sbatch"
GUIDE = GUIDE_PATH.read_text()
SKELETON = (ROOT / "recipes" / "train-megatron.sbatch").read_text()
MASTER = 'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)'
NODELIST = "export MASTER_ADDR=$SLURM_JOB_NODELIST"
FIRST_HOST = '"$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)"'
IF_BLOCK = "if (( ${CC%%.*} < 10 )); then\n    export CUDA_DEVICE_MAX_CONNECTIONS=1\nfi\n"
MOE = "    --bf16\n    --overlap-moe-expert-parallel-comm\n"


def edit(old: str, new: str, text: str = SKELETON) -> str:
    """``text`` with ``old`` replaced by ``new`` (which must be there)."""
    assert old in text, old
    return text.replace(old, new, 1)


def lint(text: str) -> list[Finding]:
    return lint_text(text, "train.sbatch")


def only(found: list[Finding], rule: str) -> list[Finding]:
    return [f for f in found if f.rule == rule]


def line_of(text: str, needle: str) -> int:
    return next(n for n, ln in enumerate(text.splitlines(), 1) if needle in ln)


def cli(path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": "/nonexistent-config-home"}
    env.pop("MCORE_DIAGNOSE_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "analyzer", "lint", "-f", "json", str(path)],
                          capture_output=True, text=True, env=env, timeout=120)


# --- the guide's skeleton, and uv-sync ----------------------------------------------------------


def test_the_guides_own_skeleton_lints_clean_with_exit_0() -> None:
    """No finding at all, not even a note (issue 41): whether ``uv sync`` ran before submission
    is for the logs to tell."""
    r = cli(GUIDE_PATH)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["findings"] == []


def test_guide_skeleton_is_read_as_the_guide_means_it() -> None:
    """The '"${VAR}"' splices are expanded by the batch shell, ${NODE_RANK} by the task's."""
    [lz] = read_job(parse_script(GUIDE)).launchers
    assert lz.uv and lz.kind == "run" and lz.uv_opts == []
    assert lz.opts["node-rank"].value == "$SLURM_NODEID"
    assert lz.opts["master-addr"].value.startswith("$(scontrol show hostnames")
    assert lz.opts["master-port"].value == "29500"
    assert lz.args["save"].value == "/lustre/project/Megatron-LM/checkpoints/gpt"


def test_uv_run_under_srun_is_for_the_logs_and_uv_sync_inside_srun_a_warning() -> None:
    text = edit("uv run --no-sync", "uv run")
    assert lint(text) == []
    [f] = lint_text(text, "train.sbatch", LintConfig(log_checks=True))  # the post-mortem's
    assert (f.rule, f.severity) == ("uv-sync", "note")
    assert f.fix.startswith("uv run --no-sync python -m torch.distributed.run")
    inside = edit("  uv run --no-sync", "  uv sync && uv run")
    assert [(f.rule, f.severity) for f in lint(inside)] == [("uv-sync", "warning")]


@pytest.mark.parametrize("venv", ["/tmp/venv", "$TMPDIR/venv"])
def test_venv_on_node_local_disk_is_a_warning_not_a_note(venv: str) -> None:
    venv_line = f"export MASTER_PORT=29500\nexport UV_PROJECT_ENVIRONMENT={venv}"
    text = edit("uv run --no-sync", "uv run", edit("export MASTER_PORT=29500", venv_line))
    found = lint(text)
    assert [(f.rule, f.severity) for f in found] == [("node-local-path", "warning")]
    assert found[0].line == line_of(text, "UV_PROJECT_ENVIRONMENT")
    assert "every node builds its own venv" in found[0].message


# --- master-addr: where it is set ---------------------------------------------------------------

SPLICED = "--master-addr='\"${MASTER_ADDR}\"'"


@pytest.mark.parametrize(
    ("assignment", "use"),
    [
        (NODELIST, SPLICED),  # the guide's quoting: the batch shell expands it
        (NODELIST, "--master-addr=${MASTER_ADDR:-localhost}"),  # a default, in the task's shell
        ("export MASTER_ADDR=${MASTER_ADDR:-$SLURM_JOB_NODELIST}", '--master-addr "$MASTER_ADDR"'),
        ("MASTER_ADDR=$SLURM_NODELIST\nexport MASTER_ADDR", '--master-addr "$MASTER_ADDR"'),
    ],
)
def test_raw_node_list_is_reported_where_master_addr_is_set(assignment: str, use: str) -> None:
    text = edit('--master-addr "$MASTER_ADDR"', use, edit(MASTER, assignment))
    [f] = lint(text)
    assert (f.rule, f.severity) == ("master-addr", "error") and "raw node list" in f.message
    assert f.line == line_of(text, "MASTER_ADDR=")
    assert f.fix.endswith(MASTER.removeprefix("export "))  # the corrected line


def test_raw_node_list_is_reported_when_the_launcher_passes_no_master_addr() -> None:
    text = edit('--master-addr "$MASTER_ADDR" ', "", edit(MASTER, NODELIST))
    found = only(lint(text), "master-addr")
    assert [f.line for f in found] == [18, line_of(text, "uv run")]
    assert "raw node list" in found[0].message and "no --master-addr" in found[1].message
    assert '--master-addr "$MASTER_ADDR"' not in found[1].fix and FIRST_HOST in found[1].fix


def test_standalone_fix_never_passes_a_raw_node_list_as_master_addr() -> None:
    text = edit('--nnodes "$NNODES" --nproc-per-node', "--standalone --nproc-per-node",
                edit(MASTER, NODELIST))
    found = lint(text)
    assert [(f.rule, f.line) for f in found] == [("master-addr", 18),
                                                 ("worker-group", line_of(text, "--standalone"))]
    group = found[1].fix
    assert '"$MASTER_ADDR"' not in group and f"--master-addr {FIRST_HOST}" in group
    kept = edit('--nnodes "$NNODES" --nproc-per-node', "--standalone --nproc-per-node")
    [f] = lint(kept)
    assert f.rule == "worker-group" and '--master-addr "$MASTER_ADDR"' in f.fix


def test_master_addr_set_but_not_exported_is_empty_in_the_srun_task() -> None:
    text = edit(MASTER, MASTER.removeprefix("export "))
    [f] = lint(text)
    assert (f.rule, f.severity, f.line) == ("master-addr", "error", 18)
    assert "not exported" in f.message and f.fix == MASTER
    spliced = edit('--master-addr "$MASTER_ADDR"', SPLICED, text)  # the batch shell expands it
    assert lint(spliced) == []
    allexport = edit("set -euo pipefail", "set -euo pipefail\nset -a", text)
    assert lint(allexport) == []


def test_master_addr_rightly_set_late_is_kept() -> None:
    text = edit(MASTER, "MASTER_ADDR=$SLURM_JOB_NODELIST\n"
                'MASTER_ADDR=$(scontrol show hostnames "$MASTER_ADDR" | head -n1)\n'
                "export MASTER_ADDR")
    assert lint(text) == []


def test_hostname_spliced_by_the_batch_shell_is_the_batch_hosts() -> None:
    hostname = edit(MASTER, "export MASTER_ADDR=$(hostname)")
    text = edit('--master-addr "$MASTER_ADDR"', SPLICED, hostname)
    [f] = lint(text)
    assert (f.rule, f.severity, f.line) == ("master-addr", "warning", 18)
    assert "batch host" in f.message


# --- max-connections with MoE overlap -----------------------------------------------------------


@pytest.mark.parametrize("gpus", ["h100:8", "a100:8", "8"])
def test_moe_overlap_with_one_is_a_warning_at_the_export_whatever_tp(gpus: str) -> None:
    text = edit("--gpus-per-node=h100:8", f"--gpus-per-node={gpus}",
                edit("    --bf16\n", MOE))  # TP=2, the if-block exports 1 on pre-Blackwell
    [f] = lint(text)
    assert (f.rule, f.severity) == ("max-connections", "warning")
    assert f.line == line_of(text, "CUDA_DEVICE_MAX_CONNECTIONS=1")
    assert f.fix == "export CUDA_DEVICE_MAX_CONNECTIONS=32"
    assert lint(edit("CUDA_DEVICE_MAX_CONNECTIONS=1", "CUDA_DEVICE_MAX_CONNECTIONS=32", text)) == []


def test_moe_overlap_export_through_a_variable_is_reported_at_the_export() -> None:
    text = edit(IF_BLOCK, "MC=1\nexport CUDA_DEVICE_MAX_CONNECTIONS=$MC\n",
                edit("    --bf16\n", MOE))
    [f] = lint(text)
    assert f.line == line_of(text, "export CUDA_DEVICE_MAX_CONNECTIONS") and "=32" in f.fix


# --- tasks-per-node on the srun line ------------------------------------------------------------


@pytest.mark.parametrize(("header", "says"), [("--ntasks-per-node=8", "--ntasks-per-node=8"),
                                              ("--ntasks=16", "--ntasks=16")])
def test_srun_without_task_options_under_many_tasks_is_flagged_on_the_srun_line(
        header: str, says: str) -> None:
    text = edit("#SBATCH --ntasks-per-node=1", f"#SBATCH {header}")
    [f] = only(lint(text), "tasks-per-node")
    assert (f.severity, f.line) == ("error", line_of(text, "srun --label bash -c"))
    assert f"#SBATCH {says} (line 7)" in f.message
    assert f.fix == "srun --ntasks=\"$SLURM_NNODES\" --ntasks-per-node=1 --label bash -c '"
    fixed = edit("srun --label", 'srun --ntasks="$SLURM_NNODES" --ntasks-per-node=1 --label', text)
    assert only(lint(fixed), "tasks-per-node") == []


# --- node-local checkpoints: --save and --load together -----------------------------------------


def test_load_on_tmp_is_flagged_and_moved_with_save_on_one_line() -> None:
    text = edit('    --save "$WORKTREE/checkpoints/gpt"\n    --load "$WORKTREE/checkpoints/gpt"\n',
                "    --save /tmp/ckpt --load /tmp/ckpt\n")
    [f] = lint(text)
    assert (f.rule, f.line) == ("node-local-path", line_of(text, "--save /tmp"))
    assert "--save /tmp/ckpt" in f.message and "--load /tmp/ckpt" in f.message
    assert "/tmp" not in f.fix and f.fix.count("/shared/$USER/Megatron-LM/ckpt") == 2


def test_load_alone_on_node_local_disk() -> None:
    text = edit('--load "$WORKTREE/checkpoints/gpt"', '--load "${TMPDIR}/ckpt"')
    [f] = lint(text)
    assert (f.rule, f.severity) == ("node-local-path", "warning") and "--load" in f.message
    assert "TMPDIR" not in f.fix


# --- #SBATCH --output / --error: sbatch's % symbols, never $VAR ---------------------------------


@pytest.mark.parametrize(
    ("value", "fixed"),
    [
        ("$HOME/logs/%x-%j.out", "#SBATCH --output=logs/%x-%j.out   # relative"),
        ("/shared/$USER/logs/$SLURM_JOB_ID.out", "#SBATCH --output=/shared/%u/logs/%j.out"),
        ("logs/${SLURM_JOB_NAME}-${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.out",
         "#SBATCH --output=logs/%x-%A_%a.out"),
    ],
)
def test_variables_in_sbatch_output_are_a_warning_with_the_percent_form(value: str,
                                                                      fixed: str) -> None:
    text = edit("--output=logs/%x-%j.out", f"--output={value}")
    [f] = lint(text)
    assert (f.rule, f.severity, f.line) == ("sbatch-output", "warning", 10)
    assert f.fix.startswith(fixed) and "$" not in f.fix.split("#", 2)[1]


def test_sbatch_error_with_tmpdir_is_the_variable_rule_not_node_local() -> None:
    text = edit("#SBATCH --output=logs/%x-%j.out", "#SBATCH --output=logs/%x-%j.out\n"
                "#SBATCH --error=$TMPDIR/%j.err")
    [f] = lint(text)
    assert (f.rule, f.line) == ("sbatch-output", 11)


def test_node_local_output_fix_uses_percent_symbols_not_variables() -> None:
    text = edit("--output=logs/%x-%j.out", "--output=/tmp/%x-%j.out")
    [f] = lint(text)
    assert f.rule == "node-local-path"
    assert f.fix == "#SBATCH --output=/shared/%u/Megatron-LM/%x-%j.out"
    home = edit("WORKTREE=/shared/$USER/Megatron-LM", "WORKTREE=$HOME/Megatron-LM", text)
    [f] = only(lint(home), "node-local-path")
    assert f.fix.startswith("#SBATCH --output=%x-%j.out") and "$HOME" not in f.fix


def test_sbatch_path_symbols() -> None:
    from analyzer.lint.rules.storage import sbatch_path

    assert sbatch_path("$HOME/x/%j.out") == ("x/%j.out", True)
    assert sbatch_path("/p/$USER/${SLURM_JOB_ID}.out") == ("/p/%u/%j.out", False)
    assert sbatch_path("/p/$PROJECT/%j.out") == ("/p/<PROJECT>/%j.out", False)


def test_max_connections_set_without_export_does_not_reach_the_launcher() -> None:
    text = edit(IF_BLOCK, "CUDA_DEVICE_MAX_CONNECTIONS=1\n")
    [f] = lint(text)
    assert (f.rule, f.severity) == ("max-connections", "error")
    assert "set without export" in f.message
    assert f.line == line_of(text, "CUDA_DEVICE_MAX_CONNECTIONS=1")
    assert f.fix == "export CUDA_DEVICE_MAX_CONNECTIONS=1"


def test_raw_node_list_set_without_export_is_one_finding_with_one_fix() -> None:
    text = edit(MASTER, NODELIST.removeprefix("export "))
    [f] = lint(text)
    assert (f.rule, f.line) == ("master-addr", 18) and "raw node list" in f.message
    assert f.fix == MASTER


def test_raw_node_list_spliced_without_export_is_one_finding() -> None:
    text = edit('--master-addr "$MASTER_ADDR"', SPLICED,
                edit(MASTER, NODELIST.removeprefix("export ")))
    [f] = lint(text)
    assert (f.rule, f.line, f.fix) == ("master-addr", 18, MASTER)

"""Issue 41, item 4 ("Lint composes") and the lint defects it lists: the guide's own skeleton
gets no finding at all (whether ``uv sync`` ran before submission is for the logs to tell, not
the script); several findings on one line give one corrected line that fixes them all; logs on a
node-local path (``--log-dir``, ``tee`` and ``>`` targets, ``--output``/``-o``) are flagged.

The scripts are sbatch scripts (not logs): the guide's skeleton
(``tests/lint_scripts/guide-skeleton.sbatch``) and the repository skeleton
(``recipes/train-megatron.sbatch``), each with the edits a test names.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from analyzer.lint import LintConfig, lint_text
from analyzer.lint.compose import compose
from analyzer.lint.rules import Finding
from tests.helpers import ROOT

GUIDE_PATH = ROOT / "tests" / "lint_scripts" / "guide-skeleton.sbatch"
GUIDE = GUIDE_PATH.read_text()
FOUR_PATH = ROOT / "tests" / "lint_scripts" / "four-mistakes.sbatch"
SKELETON = (ROOT / "recipes" / "train-megatron.sbatch").read_text()
SRUN = """srun --label bash -c '
  uv run --no-sync python -m torch.distributed.run \\
    --nnodes "$NNODES" --nproc-per-node "$GPUS_PER_NODE" --node-rank "$SLURM_NODEID" \\
    --master-addr "$MASTER_ADDR" --master-port "$MASTER_PORT" \\
    pretrain_gpt.py "$@"
' bash "${MEGATRON_ARGS[@]}"
"""
FOUR = ("srun --ntasks-per-node=8 bash -c 'torchrun --nnodes 1 --nproc-per-node "
        '"$GPUS_PER_NODE" --node-rank "$SLURM_NODEID" --master-addr localhost --master-port '
        '"$MASTER_PORT" pretrain_gpt.py "$@"\' bash "${MEGATRON_ARGS[@]}"\n')
"""One srun line with four mistakes: 8 tasks per node, bare torchrun, ``--nnodes 1`` on the
skeleton's 2 nodes, ``--master-addr localhost``."""


def edit(old: str, new: str, text: str = SKELETON) -> str:
    """``text`` with ``old`` replaced by ``new`` (which must be there)."""
    assert old in text, old
    return text.replace(old, new, 1)


def lint(text: str, cfg: LintConfig | None = None) -> list[Finding]:
    return lint_text(text, "train.sbatch", cfg)


def line_of(text: str, needle: str) -> int:
    return next(n for n, ln in enumerate(text.splitlines(), 1) if needle in ln)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": "/nonexistent-config-home", "NO_COLOR": "1"}
    env.pop("MCORE_DIAGNOSE_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "analyzer", "lint", *args],
                          capture_output=True, text=True, env=env, timeout=120)


# --- 1. the guide's skeleton: no finding at all -------------------------------------------------


def test_the_guides_skeleton_gets_no_finding_of_any_severity() -> None:
    assert lint(GUIDE) == []
    r = cli("-f", "json", str(GUIDE_PATH))
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["findings"] == []
    text = cli("-f", "text", str(GUIDE_PATH))
    assert "[uv-sync]" not in text.stdout and "no findings" in text.stdout


def test_the_post_mortem_still_gets_the_uv_run_line_for_the_logs_to_confirm() -> None:
    """The post-mortem lints with ``log_checks``: when the logs show every node building the
    venv, the script's ``uv run`` line and its ``--no-sync`` fix are its evidence."""
    [f] = lint(GUIDE, LintConfig(log_checks=True))
    assert (f.rule, f.severity) == ("uv-sync", "note")
    assert f.line == line_of(GUIDE, "uv run python")
    assert f.fix.startswith("uv run --no-sync python -m torch.distributed.run")


def test_what_a_script_does_show_about_uv_sync_is_still_a_warning() -> None:
    inside = edit("  uv run python", "  uv sync && uv run python", GUIDE)
    assert [(f.rule, f.severity) for f in lint(inside)] == [("uv-sync", "warning")]


# --- 3. logs on a node-local path ---------------------------------------------------------------


@pytest.mark.parametrize("target", ["| tee /tmp/train.log", "| tee -a $TMPDIR/train.log",
                                    "> /dev/shm/train.log", ">> /scratch/local/train.log",
                                    "&> /local/train.log"])
def test_worker_output_teed_or_redirected_to_node_local_disk_is_flagged(target: str) -> None:
    text = edit('pretrain_gpt.py "$@"\n', f'pretrain_gpt.py "$@" 2>&1 {target}\n')
    [f] = lint(text)
    assert (f.rule, f.severity) == ("node-local-path", "warning")
    assert f.line == line_of(text, "pretrain_gpt.py")
    assert "vanish" in f.message
    path = target.split()[-1]
    assert path in f.message and path not in f.fix
    assert "/shared/$USER/Megatron-LM/train.log" in f.fix  # under the worktree


def test_redirect_of_the_srun_itself_on_the_batch_host_is_flagged() -> None:
    text = edit("' bash \"${MEGATRON_ARGS[@]}\"\n",
                "' bash \"${MEGATRON_ARGS[@]}\" > $TMPDIR/srun.log 2>&1\n")
    [f] = lint(text)
    assert f.rule == "node-local-path" and "$TMPDIR/srun.log" in f.message
    assert "TMPDIR" not in f.fix


@pytest.mark.parametrize("logdir", ["--log-dir /tmp/torchrun", '--log-dir="$TMPDIR/torchrun"',
                                    "--log_dir ${TMPDIR}/torchrun"])
def test_torchrun_log_dir_on_node_local_disk_in_the_guides_skeleton(logdir: str) -> None:
    text = edit("    --master-port='\"${MASTER_PORT}\"' \\\n",
                f"    --master-port='\"${{MASTER_PORT}}\"' {logdir} \\\n", GUIDE)
    [f] = lint(text)
    assert (f.rule, f.line) == ("node-local-path", line_of(text, "--log"))
    assert "--log-dir" in f.message and "worker logs vanish" in f.message
    assert "/lustre/project/Megatron-LM/torchrun" in f.fix and "TMPDIR" not in f.fix


@pytest.mark.parametrize("opt", ["-o /tmp/%j-%t.out", "--output=$TMPDIR/%j.out",
                                 "--error /dev/shm/%j.err"])
def test_srun_output_on_node_local_disk(opt: str) -> None:
    text = edit("srun --label", f"srun --label {opt}")
    [f] = lint(text)
    assert f.rule == "node-local-path" and "log vanishes" in f.message
    assert "/shared/$USER/Megatron-LM/%j" in f.fix


def test_output_of_a_shared_path_is_not_flagged() -> None:
    text = edit('pretrain_gpt.py "$@"\n',
                'pretrain_gpt.py "$@" 2>&1 | tee logs/train-$SLURM_NODEID.log\n')
    assert lint(text) == []
    text = edit('pretrain_gpt.py "$@"\n', 'pretrain_gpt.py "$@" > /dev/null 2>&1\n')
    assert lint(text) == []


def test_without_a_worktree_the_fix_puts_logs_under_the_submission_directory() -> None:
    text = edit('WORKTREE=/shared/$USER/Megatron-LM\ncd "$WORKTREE"\n', "",
                edit('pretrain_gpt.py "$@"\n', 'pretrain_gpt.py "$@" > /tmp/train.log\n'))
    [f] = [f for f in lint(text) if f.rule == "node-local-path"]
    assert "> $SLURM_SUBMIT_DIR/train.log" in f.fix


# --- 2. several findings on one line: one corrected line ----------------------------------------

FOUR_MISTAKES = ("--ntasks-per-node=8", "torchrun", "--nnodes 1", "localhost")


def four() -> str:
    return edit(SRUN, FOUR)


def test_four_mistakes_on_one_srun_line_give_one_line_that_fixes_them_all() -> None:
    text = four()
    found = lint(text)
    at = line_of(text, "torchrun")
    assert {f.rule for f in found} == {"tasks-per-node", "launcher", "worker-group",
                                       "master-addr"}
    assert all(f.line == at for f in found)  # and each is still listed with its own fix
    [c] = compose(found, text.splitlines())
    assert c.line == at and sorted(c.rules) == sorted(f.rule for f in found)
    assert c.conflicts == () and c.separate == ()
    for mistake in FOUR_MISTAKES:
        assert mistake not in c.fix, mistake
    assert c.fix.startswith("srun --ntasks-per-node=1 bash -c 'uv run python -m "
                            'torch.distributed.run --nnodes "$SLURM_NNODES"')
    assert '--master-addr "$MASTER_ADDR"' in c.fix
    fixed = text.replace(text.splitlines()[at - 1], c.fix)
    assert lint(fixed) == []  # the corrected line lints clean


def test_each_single_fix_on_that_line_keeps_the_other_mistakes() -> None:
    """Why the composed line is needed: every finding's own fix corrects only its mistake."""
    for f in lint(four()):
        assert sum(m in f.fix for m in FOUR_MISTAKES) == 3, (f.rule, f.fix)


def test_the_bundled_four_mistakes_script_is_the_skeleton_with_that_line() -> None:
    body = FOUR_PATH.read_text()
    assert FOUR in body and body.split("#SBATCH", 1)[1] == four().split("#SBATCH", 1)[1]


def test_the_text_report_shows_the_composed_line_after_the_findings() -> None:
    r = cli("-f", "text", "--no-reasons", str(FOUR_PATH))
    assert r.returncode == 1
    out = r.stdout
    assert out.count("  fix: ") == 4
    head = out.index("all 4 fixes")
    assert head > out.rindex("  fix: ")  # after the last of the line's findings
    block = out[head:out.index("1 script:")]
    assert "tasks-per-node, launcher, worker-group, master-addr" in " ".join(block.split())
    fixed = " ".join(block.split("  fixed: ", 1)[1].split())  # unwrapped
    for mistake in FOUR_MISTAKES:
        assert mistake not in fixed, mistake
    assert "torch.distributed.run" in fixed
    assert out.rstrip().splitlines()[-1] == "1 script: 3 errors, 1 warning"  # the summary last


def test_the_json_report_has_a_composed_list() -> None:
    script, text = FOUR_PATH, FOUR_PATH.read_text()
    r = cli("-f", "json", str(script))
    data = json.loads(r.stdout)
    assert len(data["findings"]) == 4
    [c] = data["composed"]
    assert (c["file"], c["line"]) == (str(script), line_of(text, "bash -c 'torchrun"))
    assert c["rules"] == ["tasks-per-node", "launcher", "worker-group", "master-addr"]
    assert c["conflicts"] == [] and c["separate"] == []
    assert not any(m in c["fix"] for m in FOUR_MISTAKES)
    clean = cli("-f", "json", str(GUIDE_PATH))
    assert json.loads(clean.stdout) == {"findings": [], "composed": []}


def test_one_finding_on_a_line_composes_nothing() -> None:
    text = edit("srun --label", "srun --ntasks-per-node=8 --label")
    found = lint(text)
    assert len(found) == 1 and compose(found, text.splitlines()) == []


def test_rewrites_that_change_the_same_words_are_a_conflict_showing_both() -> None:
    """A mechanism test with synthetic findings (no rule gives such a pair today): two fixes
    that rewrite the same word cannot both apply; the first in rule order is kept."""
    line = "srun --ntasks-per-node=8 torchrun --nnodes 1 train.py"
    a = Finding("tasks-per-node", "error", 1, "m", line.replace("=8", "=1"), "r", "s")
    b = Finding("launcher", "warning", 1, "m", line.replace("torchrun", "uvx-torchrun"), "r",
                "s")
    c = replace(b, rule="worker-group", fix=line.replace("torchrun", "python -m x"))
    [got] = compose([c, b, a], [line])
    assert got.rules == ("tasks-per-node", "launcher")
    assert got.fix == "srun --ntasks-per-node=1 uvx-torchrun --nnodes 1 train.py"
    [(pair, fixes)] = got.conflicts
    assert pair == ("launcher", "worker-group") and fixes == (b.fix, c.fix)


def test_a_fix_that_is_not_a_corrected_line_is_kept_apart() -> None:
    line = "srun --ntasks-per-node=8 torchrun --nnodes 1 train.py"
    a = Finding("tasks-per-node", "error", 1, "m", line.replace("=8", "=1"), "r", "s")
    b = Finding("worker-group", "error", 1, "m", line.replace("--nnodes 1", "--nnodes 2"), "r",
                "s")
    c = Finding("master-addr", "error", 1, "m", "export MASTER_ADDR=somewhere", "r", "s")
    [got] = compose([a, b, c], [line])  # synthetic findings: the mechanism
    assert got.fix == "srun --ntasks-per-node=1 torchrun --nnodes 2 train.py"
    assert got.separate == ("master-addr",)


def test_the_json_with_a_composed_line_and_a_conflict_meets_its_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the test extras")
    from analyzer.report.schemas import load_schema

    schema = load_schema("lint")
    data = json.loads(cli("-f", "json", str(FOUR_PATH)).stdout)
    jsonschema.validate(data, schema)
    conflict = {"file": "s", "line": 1, "rules": ["launcher", "worker-group"], "fix": "x",
                "conflicts": [{"rules": ["launcher", "worker-group"], "fixes": ["a", "b"]}],
                "separate": ["master-addr"]}
    jsonschema.validate({"findings": [], "composed": [conflict]}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"findings": []}, schema)  # composed is always there


def test_nproc_per_node_with_underscores_is_fixed_on_its_own_option() -> None:
    """The allocation fix for ``--nproc_per_node=16`` rewrote the first ``=`` on the line (the
    srun's ``--ntasks-per-node``), so composing it broke the task count."""
    line = ("srun --ntasks-per-node=1 bash -c 'uv run --no-sync python -m torch.distributed.run "
            '--nnodes "$NNODES" --nproc_per_node=16 --node-rank "$SLURM_NODEID" '
            '--master-addr "$MASTER_ADDR" --master-port "$MASTER_PORT" pretrain_gpt.py "$@"\' '
            'bash "${MEGATRON_ARGS[@]}"\n')
    [f] = lint(edit(SRUN, line))
    assert f.rule == "allocation"
    assert "--ntasks-per-node=1 " in f.fix and "--nproc_per_node=8 " in f.fix


@pytest.mark.parametrize("use", ["--log-dir=${LOG_DIR}", "--log-dir='\"${LOG_DIR}\"'"])
def test_log_dir_through_a_variable_is_reported_where_it_is_set(use: str) -> None:
    text = edit("export GPUS_PER_NODE=8\n", "export GPUS_PER_NODE=8\nexport LOG_DIR=/tmp/tr\n",
                edit("    --master-port='\"${MASTER_PORT}\"' \\\n",
                     f"    --master-port='\"${{MASTER_PORT}}\"' {use} \\\n", GUIDE))
    [f] = lint(text)
    assert (f.rule, f.line) == ("node-local-path", line_of(text, "export LOG_DIR"))
    assert f.fix == "export LOG_DIR=/lustre/project/Megatron-LM/tr"


def test_the_text_report_shows_both_fixes_of_a_conflict() -> None:
    """Synthetic findings (the mechanism of the listing, not a rule's words)."""
    from analyzer.lint.report import render_findings

    line = "srun --ntasks-per-node=8 torchrun --nnodes 1 train.py"
    a = Finding("tasks-per-node", "error", 1, "m", line.replace("=8", "=1"), "r", "s")
    b = Finding("launcher", "warning", 1, "m", line.replace("torchrun", "uvx-torchrun"), "r", "s")
    c = replace(b, rule="worker-group", fix=line.replace("torchrun", "python -m x"))
    d = replace(a, rule="master-addr", fix="export MASTER_ADDR=somewhere")
    out = render_findings([("s", [a, d, b, c])], {"s": [line]}, color=False, width=200)
    block = out[out.index("all 2 fixes"):]
    assert "  fixed: srun --ntasks-per-node=1 uvx-torchrun --nnodes 1 train.py" in block
    assert "[launcher] and [worker-group] change the same words" in block
    assert f"    [launcher] {b.fix}" in block and f"    [worker-group] {c.fix}" in block
    assert "  apart: [master-addr]: its fix is not this line corrected" in block

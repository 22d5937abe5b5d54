"""``recipes/triage-array.sbatch`` as a 3-task SLURM job array plus the dependent
``recipes/triage-merge.sbatch``, on the private cluster: the merged table must equal the table of
an unsharded single-machine run over the same root."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from analyzer.triage.run import COLUMNS
from harness.cluster import FINAL_STATES, Cluster

REPO = Path(__file__).resolve().parents[2]
RECIPES = REPO / "recipes"
SAMPLES = sorted(p.parent for p in REPO.glob("sample_logs/*/*/expected.toml"))
SHARDS = 3

pytestmark = pytest.mark.slurm


def _failing_job(root: Path, name: str, jobid: int, host: str, rank: int, exc: str) -> None:
    d = root / name
    tb = [
        f"[rank{rank}]: Traceback (most recent call last):",
        f'[rank{rank}]:   File "/lustre/u{jobid}/pretrain_gpt.py", line {jobid % 97}, in <module>',
        f"[rank{rank}]: {exc}",
    ]
    rank_dir = d / "torchrun-logs" / host / f"{jobid}_ab12" / "attempt_0" / "0"
    rank_dir.mkdir(parents=True)
    (rank_dir / "stderr.log").write_text("\n".join(tb) + "\n")
    (d / f"slurm-{jobid}.out").write_text(
        "\n".join(f"1: {t}" for t in tb) + f"\nsrun: error: {host}: task 1: Exited with exit "
        "code 1\n"
    )


def _copy_sample(src: Path, dst: Path, new_id: int) -> None:
    shutil.copytree(src, dst, symlinks=True)
    for f in list(dst.iterdir()):
        name = re.sub(
            r"(slurm-|[-_.])\d+(?=(?:_\d+)?\.(?:out|err)(?:\.gz)?$)", rf"\g<1>{new_id}", f.name
        )
        if name != f.name:
            f.rename(dst / name)


def _build_root(root: Path) -> int:
    """Every sample job twice (the second under another job id) and three jobs failing on
    gpu-node-017; returns the number of jobs."""
    n = 0
    for k, src in enumerate(SAMPLES):
        shutil.copytree(src, root / "samples" / src.name, symlinks=True)
        _copy_sample(src, root / "rerun" / src.name, 770000 + k)
        n += 2
    for k, exc in enumerate(
        ("IndexError: index 4096 is out of bounds", "KeyError: 'labels'", "IndexError: index 7")
    ):
        _failing_job(root / "bad-node", f"job-{k}", 660000 + k, "gpu-node-017", k, exc)
        n += 1
    return n


def _wait(cluster: Cluster, merge_id: int, array_id: int, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    state = "UNKNOWN"
    while time.monotonic() < deadline:
        info = cluster.job_info(merge_id)
        state = info.get("JobState") or cluster.job_state(merge_id)
        if state in FINAL_STATES:
            return state
        if info.get("Reason") == "DependencyNeverSatisfied":
            return f"never ran: an array task of {array_id} failed"
        time.sleep(1)
    raise TimeoutError(f"merge job {merge_id} still {state} after {timeout:.0f}s")


def test_array_and_merge_match_single_machine(slurm_cluster: Cluster, tmp_path: Path) -> None:
    root = tmp_path / "nightly"
    work = tmp_path / "work"  # the submission directory: task outputs and parts go here
    work.mkdir()
    n_jobs = _build_root(root)
    env = {
        "MCORE_DIAGNOSE": f"{sys.executable} -m analyzer",
        "TRIAGE_ROOTS": str(root),
        "TRIAGE_PARTS": str(work / "parts"),
        "TRIAGE_OUT": str(work / "triage.parquet"),
        "TRIAGE_TIMEOUT": "120",
    }
    array_id = slurm_cluster.sbatch(
        RECIPES / "triage-array.sbatch",
        cwd=work,
        env=env,
        args=[f"--array=0-{SHARDS - 1}", "--cpus-per-task=2"],
    )
    merge_id = slurm_cluster.sbatch(
        RECIPES / "triage-merge.sbatch",
        cwd=work,
        env=env,
        args=[f"--dependency=afterok:{array_id}"],
    )
    # meanwhile, the single-machine run over the same root
    single = tmp_path / "single.parquet"
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "triage", str(root), "-o", str(single), "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    # A guard against waiting forever on a stuck cluster, not a speed check: it returns as
    # soon as the merge job ends (about a minute on a 2-core machine).
    state = _wait(slurm_cluster, merge_id, array_id, timeout=600)
    outputs = "\n".join(
        f"--- {p.name}\n{p.read_text(errors='replace')}" for p in sorted(work.glob("triage-*.out"))
    )
    assert state == "COMPLETED", f"merge job: {state}\n{outputs}"

    parts = sorted((work / "parts").glob("part-*.parquet"))
    assert [p.name for p in parts] == [f"part-{i}-of-{SHARDS}.parquet" for i in range(SHARDS)]
    assert all(pl.read_parquet(p).height > 0 for p in parts), "an empty shard: bad partition"
    merged = pl.read_parquet(work / "triage.parquet")
    alone = pl.read_parquet(single)
    assert merged.height == alone.height == n_jobs
    cols = list(COLUMNS)
    assert merged.select(cols).sort("path").equals(alone.select(cols).sort("path"))
    # the merge job wrote the summaries and printed the terminal one
    assert (work / "triage.md").read_text().startswith("# Triage summary")
    assert "<!DOCTYPE html>" in (work / "triage.html").read_text()
    merge_out = (work / f"triage-merge-{merge_id}.out").read_text()
    # no merge warning (a missing shard or part); causes may themselves say "missing"
    assert "Causes by count" in merge_out
    assert "missing: " not in merge_out and "no such part" not in merge_out
    assert "gpu-node-017" in merge_out

"""What a job is, decided once for every command (issue 42, items 2, 5 and 16).

A folder of job directories is diagnosed job by job whatever the logs are named; a folder that
holds several SLURM jobs' output files is diagnosed one job id at a time (``--job ID`` picks
one); a job's per-rank or per-node folders stay one job; only regular files name a job id.
The logs are the bundled sample jobs' and the wild corpus's, copied under new names.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.triage.find import find_jobs
from tests.helpers import FORMATS, REAL, WILD

OOM = FORMATS / "cuda-oom-cascade" / "slurm-48213.out"
"""A CUDA OOM of rank 5."""
INDEX = REAL / "exception-cascade" / "slurm-7.out"
"""An uncaught IndexError of rank 2."""
OK = REAL / "clean-success" / "slurm-13.out"
"""A job that succeeded."""


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        cwd=cwd,
    )


def json_lines(r: subprocess.CompletedProcess[str]) -> list[dict]:
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


# -- item 2: job directories without SLURM file names -------------------------------------


def test_job_directories_without_slurm_names_are_diagnosed_one_by_one(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    copy(OOM, runs / "run-a" / "train.log")
    copy(INDEX, runs / "run-b" / "train.log")
    r = run(str(runs), "-f", "json")
    got = {Path(o["job"]).name: o["verdict"]["category"] for o in json_lines(r)}
    assert got == {"run-a": "cuda_oom", "run-b": "python_exception"}, r.stderr
    assert "holds 2 job directories" in r.stderr
    ev = run("events", str(runs), "-f", "json")
    assert ev.returncode == 0, ev.stderr
    assert {row["job"] for row in json.loads(ev.stdout)} == {
        str(runs / "run-a"), str(runs / "run-b")
    }


def test_wild_jobs_side_by_side_are_separate_jobs(tmp_path: Path) -> None:
    names = sorted(p.name for p in WILD.iterdir() if (p / "output.log").is_file())[:3]
    for n in names:
        copy(WILD / n / "output.log", tmp_path / "wild" / n / "output.log")
    shutil.copyfile(WILD / "README-a.md", tmp_path / "wild" / "README-a.md")
    r = run(str(tmp_path / "wild"), "-q")
    assert len(r.stdout.splitlines()) == 3, r.stdout + r.stderr
    assert [len(find_jobs([tmp_path / "wild"]))] == [3]


@pytest.mark.parametrize("sub", ["rank{}", "node{:03d}", "gpu-node-{:03d}", "worker_{}"])
def test_a_job_with_per_rank_or_per_node_folders_is_one_job(tmp_path: Path, sub: str) -> None:
    job = tmp_path / "job"
    for i in range(2):
        copy(INDEX, job / sub.format(i) / "stdout.log")
    assert [j.path for j in find_jobs([job])] == [str(job)]
    assert [j.path for j in find_jobs([tmp_path])] == [str(job)]
    r = run(str(job), "-f", "json")
    assert len(json_lines(r)) == 1 and "job directories" not in r.stderr


# -- item 5: a folder holding several jobs' output files -----------------------------------


@pytest.mark.parametrize(
    ("name", "job_id"),
    [
        ("gpt-train-7.out", "7"),
        ("7.out", "7"),
        ("slurm-7_3.out", "7_3"),
        ("train-7.err", "7"),
        ("slurm-48213.out.gz", "48213"),
        ("fsdp-max-connections-90518.err", "90518"),
        ("task-0.out", None),  # srun's %t: a task, not a job
        ("gpu-node-017.out", None),  # srun's %N: a node
        ("rank-3.err", None),
        ("train-1234-3.out", None),  # two numbers: which one is the job is not told
        ("train.log", None),
        ("output-7.log", None),
    ],
)
def test_a_job_id_in_any_slurm_style_file_name(name: str, job_id: str | None) -> None:
    from analyzer.triage.find import job_id_of

    assert job_id_of(name) == job_id


def test_a_folder_of_several_jobs_outputs_is_diagnosed_job_by_job(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    copy(INDEX, logs / "gpt-train-7.out")
    copy(OK, logs / "gpt-train-9.out")
    r = run(str(logs), "-f", "json")
    got = {o["job"]: o["status"] for o in json_lines(r)}
    assert got == {str(logs / "gpt-train-7.out"): "failed", str(logs / "gpt-train-9.out"): "ok"}
    assert "independent" not in r.stderr and "holds the output of 2 SLURM jobs" in r.stderr
    by_job = {o["job"]: o for o in json_lines(r)}
    assert by_job[str(logs / "gpt-train-7.out")]["verdict"]["rank"] == 2


def test_job_option_restricts_a_folder_to_one_job(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    copy(INDEX, logs / "gpt-train-7.out")
    copy(OK, logs / "gpt-train-9.out")
    r = run(str(logs), "--job", "7", "-f", "json")
    assert r.returncode == 0, r.stderr
    (obj,) = json_lines(r)
    assert obj["job"] == str(logs / "gpt-train-7.out") and obj["status"] == "failed"
    assert "SLURM jobs" not in r.stderr
    # a job directory found below the folder, named by its SLURM output
    copy(OOM, tmp_path / "night" / "a" / "slurm-48213.out")
    copy(INDEX, tmp_path / "night" / "b" / "slurm-7.out")
    r = run(str(tmp_path / "night"), "--job", "48213", "-q")
    assert r.returncode == 0 and r.stdout.startswith("cuda_oom"), r.stdout + r.stderr
    # no such job: one line naming the ids there are, nothing read
    r = run(str(logs), "--job", "8", "-q")
    assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr
    assert "7, 9" in r.stderr and not r.stdout


def test_job_option_is_a_usage_error_when_not_a_job_id(tmp_path: Path) -> None:
    r = run(str(tmp_path), "--job", "abc")
    assert r.returncode == 64 and r.stderr.count("\n") == 1 and "--job" in r.stderr


# -- item 16: only files discovery would read name a job -----------------------------------


def test_a_fifo_or_an_outside_symlink_is_not_a_job(tmp_path: Path) -> None:
    job = tmp_path / "job"
    copy(INDEX, job / "slurm-7.out")
    os.mkfifo(job / "slurm-8.out")
    (job / "slurm-9.out").symlink_to("/etc/passwd")
    r = run(str(job), "-q")
    assert r.returncode == 0 and r.stdout.startswith("python_exception"), r.stderr
    assert "SLURM jobs" not in r.stderr
    assert [j.job_id for j in find_jobs([job])] == ["7"]

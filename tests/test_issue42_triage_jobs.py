"""``triage`` decides what a job is as ``diagnose`` does (issue 42, items 2 and 5).

A folder holding nothing but several SLURM jobs' output files is one job per job id: one row
each, read from that id's files only, keyed by its output file. The logs are bundled real
sample jobs' output files, copied into one folder under sbatch-style names.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from analyzer.triage.find import Job, find_jobs, jobs_under
from analyzer.triage.run import run_jobs
from analyzer.triage.table import problem_row
from tests.helpers import REAL

INDEX = REAL / "exception-cascade" / "slurm-7.out"
"""An uncaught IndexError of rank 2 (job 7)."""
CANCEL = REAL / "user-scancel"
"""Job 12, cancelled with scancel: only its ``.err`` says CANCELLED."""


def two_jobs(logs: Path) -> Path:
    """``logs`` holding job 7's output and job 12's ``.out`` and ``.err`` (``%x-%j``)."""
    logs.mkdir(parents=True)
    shutil.copyfile(INDEX, logs / "gpt-train-7.out")
    for ext in ("out", "err"):
        shutil.copyfile(CANCEL / f"user-scancel-12.{ext}", logs / f"gpt-train-12.{ext}")
    return logs


def mcore(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "FORCE_COLOR"}
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        capture_output=True,
        text=True,
        env={**env, "NO_COLOR": "1"},
    )


def rows_of(table: Path) -> dict[str, dict]:
    return {r["job_id"]: r for r in json.loads(table.read_text())}


def test_triage_gives_each_job_of_a_folder_its_own_row(tmp_path: Path) -> None:
    logs = two_jobs(tmp_path / "logs")
    out = tmp_path / "t.json"
    r = mcore("triage", str(logs), "-o", str(out), "-q", "-j", "1")
    assert r.returncode == 0, r.stderr
    rows = rows_of(out)
    got = {j: (row["category"], row["path"]) for j, row in rows.items()}
    assert got == {
        "7": ("python_exception", str(logs / "gpt-train-7.out")),
        "12": ("slurm_cancelled", str(logs / "gpt-train-12.out")),
    }
    assert rows["7"]["rank"] == 2 and rows["12"]["status"] == "failed"
    # diagnose sees the same jobs, with the same verdicts
    d = mcore(str(logs), "-f", "json")
    verdicts = sorted(json.loads(line)["verdict"]["category"] for line in d.stdout.splitlines())
    assert verdicts == sorted(row["category"] for row in rows.values()), d.stderr


def test_the_jobs_of_a_folder_listed_in_jobs_from_are_split_too(tmp_path: Path) -> None:
    logs = two_jobs(tmp_path / "logs")
    listing = tmp_path / "jobs.txt"
    listing.write_text("logs\n")
    out = tmp_path / "t.json"
    r = mcore("triage", "--jobs-from", str(listing), "-o", str(out), "-q", "-j", "0")
    assert r.returncode == 0, r.stderr
    assert {j: row["category"] for j, row in rows_of(out).items()} == {
        "7": "python_exception",
        "12": "slurm_cancelled",
    }
    # a root and a listed folder naming the same jobs: each job once
    r = mcore("triage", str(logs), "--jobs-from", str(listing), "-o", str(out), "-q", "-j", "0")
    assert r.returncode == 0 and sorted(rows_of(out)) == ["12", "7"], r.stderr


def test_split_jobs_agree_with_diagnose_and_have_their_own_keys(tmp_path: Path) -> None:
    from analyzer.triage.find import split_jobs

    logs = two_jobs(tmp_path / "logs")
    (found,) = find_jobs([logs])  # the directory, as the job-directory rule finds it
    jobs = split_jobs([found])
    assert jobs == jobs_under(logs)
    assert [(j.job_id, j.files, j.key) for j in jobs] == [
        ("7", ("gpt-train-7.out",), str(logs / "gpt-train-7.out")),
        ("12", ("gpt-train-12.err", "gpt-train-12.out"), str(logs / "gpt-train-12.out")),
    ]
    # a folder that also holds other logs stays one job (its largest id), as diagnose reads it
    shutil.copyfile(INDEX, logs / "notes.log")
    assert [(j.job_id, j.files, j.key) for j in split_jobs(find_jobs([logs]))] == [
        ("12", (), str(logs))
    ]


def echo_files(path: str, job_id: str, files: tuple[str, ...] = ()) -> dict:
    """Stand-in for the diagnosis (in a worker process): the files it was given, in ``note``."""
    row = problem_row(Job(path, job_id, files), "ok", ",".join(files))
    return row


def test_a_job_s_files_reach_the_worker(tmp_path: Path) -> None:
    jobs = [Job(str(tmp_path), "7", ("a-7.out",)), Job(str(tmp_path), "9", ("a-9.err", "a-9.out"))]
    for workers in (0, 1):
        rows = run_jobs(jobs, workers=workers, func=echo_files)
        assert [(r["job_id"], r["path"], r["note"]) for r in rows] == [
            ("7", str(tmp_path / "a-7.out"), "a-7.out"),
            ("9", str(tmp_path / "a-9.out"), "a-9.err,a-9.out"),
        ], workers


def test_a_job_s_output_file_given_alone_has_the_same_row_identity(tmp_path: Path) -> None:
    from analyzer.triage.find import read_job_list, split_jobs

    logs = two_jobs(tmp_path / "logs")
    f = logs / "gpt-train-7.out"
    from_folder = [(j.job_id, j.key) for j in split_jobs(find_jobs([logs])) if j.job_id == "7"]
    assert from_folder == [("7", str(f))]
    assert [(j.job_id, j.key) for j in find_jobs([f])] == from_folder
    assert [(j.job_id, j.key) for j in read_job_list(f"{f}\n")] == from_folder
    # a file whose name carries no job id keeps its name as the id
    assert [j.job_id for j in find_jobs([INDEX.parent / "train.sbatch"])] == ["train.sbatch"]


def test_a_folder_of_several_jobs_output_and_other_logs_is_one_row_with_a_warning(
    tmp_path: Path,
) -> None:
    logs = two_jobs(tmp_path / "logs")
    shutil.copyfile(INDEX, logs / "train.log")
    out = tmp_path / "t.json"
    r = mcore("triage", str(logs), "-o", str(out), "-q", "-j", "0")
    assert r.returncode == 0, r.stderr
    assert [(row["job_id"], row["path"]) for row in rows_of(out).values()] == [("12", str(logs))]
    (warning,) = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    assert f"{logs} holds the output of 2 SLURM jobs (7, 12) and other logs" in warning
    # diagnose reads it the same way, and says so
    d = mcore(str(logs), "-q")
    assert len(d.stdout.splitlines()) == 1 and "2 SLURM jobs (7, 12) and other logs" in d.stderr


def test_one_job_is_counted_in_the_singular(tmp_path: Path) -> None:
    """The summary and the stderr line say "1 job", never "1 jobs"."""
    table, summary = tmp_path / "t.csv", tmp_path / "t.txt"
    r = mcore("triage", str(REAL / "exception-cascade"), "-o", str(table), "--summary",
              str(summary))
    assert r.returncode == 0, r.stderr
    text = summary.read_text(encoding="utf-8") + r.stderr
    assert "Triage: 1 job: 1 failed" in text and "of 1 job (" in text, text
    assert "(1 job)" in r.stderr and "1 jobs" not in text, text

"""The tool never writes into what it reads, nor reads what it wrote (issue 42, items 3 and 7).

Every command refuses an output that is one of its inputs or lies inside a directory it reads
(a log file's directory included, and a job id's StdOut/StdErr and their directory), refuses
several ``-o`` where it writes one file and a ``--format`` that the file's suffix contradicts,
and discovery skips the tool's own reports. The log is a bundled sample job's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REAL, ROOT
from tests.test_slurmjob import fake_slurm  # noqa: F401  (the stand-in scontrol, a fixture)
from tests.test_slurmjob import run as run_with

JOB = REAL / "exception-cascade"
SCRIPT = ROOT / "recipes" / "train-megatron.sbatch"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )


def refused(r: subprocess.CompletedProcess[str]) -> bool:
    return r.returncode == 64 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


@pytest.fixture
def job(tmp_path: Path) -> Path:
    d = tmp_path / "job"
    shutil.copytree(JOB, d)
    return d


# -- item 3: never write into what is read ------------------------------------------------


def test_output_onto_a_job_ids_log_or_into_its_directory_is_refused(
    fake_slurm: dict[str, str],  # noqa: F811
) -> None:
    log = Path(fake_slurm["FAKE_DIR"]) / "slurm-77.out"
    before = log.read_bytes()
    r = run_with(fake_slurm, "77", "-o", str(log), "-f", "text")
    assert refused(r) and "one of the logs" in r.stderr, r.stderr
    r = run_with(fake_slurm, "77", "-o", str(log.parent / "report.txt"))
    assert refused(r) and "job 77" in r.stderr, r.stderr
    assert log.read_bytes() == before and not (log.parent / "report.txt").exists()


def test_output_next_to_a_named_log_file_is_refused(job: Path) -> None:
    r = run(str(job / "slurm-7.out"), "-o", str(job / "r.txt"))
    assert refused(r) and "directory of" in r.stderr, r.stderr
    assert not (job / "r.txt").exists()


@pytest.mark.parametrize("option", ["--fr", "--baseline"])
def test_output_inside_another_directory_read_is_refused(
    job: Path, tmp_path: Path, option: str
) -> None:
    other = tmp_path / "other"
    shutil.copytree(REAL / "clean-success", other)
    r = run(str(job), option, str(other), "-o", str(other / "r.json"))
    assert refused(r) and not (other / "r.json").exists(), r.stderr


def test_lint_refuses_to_overwrite_its_script(tmp_path: Path) -> None:
    script = tmp_path / "train.sbatch"
    shutil.copyfile(SCRIPT, script)
    r = run("lint", str(script), "-o", str(script), "-f", "text")
    assert refused(r) and script.read_bytes() == SCRIPT.read_bytes(), r.stderr


def test_triage_refuses_an_output_inside_a_root(job: Path) -> None:
    r = run("triage", str(job.parent), "-q", "-o", str(job.parent / "t.csv"))
    assert refused(r) and not (job.parent / "t.csv").exists(), r.stderr


@pytest.mark.slow  # about 10 s on 2 cores
def test_the_tools_own_reports_are_never_read_as_logs(job: Path, tmp_path: Path) -> None:
    plain = json.loads(run(str(job), "-f", "json").stdout)
    written = []
    for args in (["-f", "text"], ["-f", "markdown"], ["-f", "json"], ["-q", "-f", "text"]):
        out = tmp_path / f"r{len(written)}.log"
        assert run(str(job), *args, "-o", str(out)).returncode == 0
        written.append(out)
    out = tmp_path / f"r{len(written)}.log"
    assert run("events", str(job), "-f", "table", "-o", str(out)).returncode == 0
    written.append(out)
    for out in written:
        shutil.move(out, job / out.name)
    again = json.loads(run(str(job), "-f", "json").stdout)
    assert again["verdict"] == plain["verdict"] and again["files_read"] == plain["files_read"]
    r = run(str(job), "-v")
    for out in written:
        assert f"skipped {out.name}: an mcore-diagnose report" in r.stderr, r.stderr


# -- item 7: one output where one is written, and formats that agree ----------------------


@pytest.mark.parametrize(
    "args",
    [
        ["lint", str(SCRIPT), "-o", "{d}/a.json", "-o", "{d}/b.json"],
        ["triage", str(JOB), "-q", "-o", "{d}/a.csv", "-o", "{d}/b.csv"],
        [str(JOB), "-o", "{d}/r.json", "-f", "markdown"],
        ["events", str(JOB), "-o", "{d}/x.parquet", "-f", "csv"],
        ["lint", str(SCRIPT), "-o", "{d}/f.json", "-f", "text"],
    ],
    ids=["lint -o -o", "triage -o -o", "diagnose -f", "events -f", "lint -f"],
)
def test_conflicting_outputs_are_refused(tmp_path: Path, args: list[str]) -> None:
    r = run(*[a.format(d=tmp_path) for a in args])
    assert refused(r), r.stderr
    assert not list(tmp_path.iterdir())

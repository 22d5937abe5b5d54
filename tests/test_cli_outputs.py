"""One output layer for every command: the suffix picks the format, every -o is written,
-o - is standard output, and nothing is ever written into the job directory (issue 30)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from analyzer.report.outputs import (
    TABLE_SUFFIX_FORMAT,
    OutputError,
    Target,
    plan_outputs,
    refuse_inside,
)
from tests.helpers import REAL

JOB = REAL / "exception-cascade"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )


def test_events_files_take_their_format_from_the_suffix(tmp_path: Path) -> None:
    outs = [tmp_path / "e.parquet", tmp_path / "e.csv", tmp_path / "e.json", tmp_path / "e.txt"]
    r = run("events", str(JOB), *[a for o in outs for a in ("-o", str(o))])
    assert r.returncode == 0, r.stderr
    table = pl.read_parquet(outs[0])
    assert len(table) > 0
    assert pl.read_csv(outs[1]).shape[0] == len(table)
    assert len(json.loads(outs[2].read_text())) == len(table)
    assert outs[3].read_text().startswith("|")


def test_events_dash_is_standard_output_and_never_a_file(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "events", str(JOB), "-o", "-", "-f", "csv"],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert r.returncode == 0 and "," in r.stdout.splitlines()[0]
    assert not (tmp_path / "-").exists()


def test_diagnose_dash_with_a_file(tmp_path: Path) -> None:
    r = run(str(JOB), "-o", "-", "-o", str(tmp_path / "r.json"))
    assert "python_exception" in r.stdout
    assert json.loads((tmp_path / "r.json").read_text())["verdict"]["rank"] == 2


@pytest.mark.parametrize("command", [[], ["events"]], ids=["diagnose", "events"])
def test_unknown_suffix_is_a_usage_error(tmp_path: Path, command: list[str]) -> None:
    r = run(*command, str(JOB), "-o", str(tmp_path / "x.pdf"))
    assert r.returncode == 64 and r.stderr.count("\n") == 1 and ".pdf" in r.stderr
    assert not (tmp_path / "x.pdf").exists()


@pytest.mark.parametrize("command", [[], ["events"]], ids=["diagnose", "events"])
def test_output_inside_the_job_directory_is_refused(tmp_path: Path, command: list[str]) -> None:
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    before = sorted(p.name for p in job.rglob("*"))
    target = job / "report.json"
    r = run(*command, str(job), "-o", str(target))
    assert r.returncode == 64 and "inside the job directory" in r.stderr
    assert r.stderr.count("\n") == 1
    assert sorted(p.name for p in job.rglob("*")) == before


def test_plan_and_refuse_in_process(tmp_path: Path) -> None:
    t = plan_outputs([Path("a.parquet"), Path("-")], None, suffixes=TABLE_SUFFIX_FORMAT,
                     default="table", plain={})
    assert t == [Target(Path("a.parquet"), "parquet"), Target(None, "table")]
    with pytest.raises(OutputError):
        plan_outputs([Path("-"), Path("-")], None)
    log = tmp_path / "slurm-1.out"
    log.write_text("x\n")
    with pytest.raises(OutputError, match="one of the logs"):
        refuse_inside([log], [str(log)])
    refuse_inside([tmp_path.parent / "elsewhere.txt", None], [str(log)])


SCRIPT = Path(__file__).resolve().parents[1] / "recipes" / "diagnose-on-failure.sbatch"


@pytest.mark.parametrize(
    "args",
    [["lint", str(SCRIPT)], ["triage", str(JOB.parent)]],
    ids=["lint", "triage"],
)
def test_unknown_suffix_is_a_usage_error_on_lint_and_triage(
    tmp_path: Path, args: list[str]
) -> None:
    r = run(*args, "-q" if args[0] == "triage" else "--no-reasons", "-o", str(tmp_path / "x.pdf"))
    assert r.returncode == 64 and r.stderr.count("\n") == 1 and ".pdf" in r.stderr
    assert not (tmp_path / "x.pdf").exists()


def test_lint_takes_the_format_from_the_suffix_and_dash_is_stdout(tmp_path: Path) -> None:
    r = run("lint", str(SCRIPT), "-o", str(tmp_path / "f.json"))
    assert r.returncode in (0, 1) and "findings" in json.loads((tmp_path / "f.json").read_text())
    r = run("lint", str(SCRIPT), "-f", "json", "-o", "-")
    assert "findings" in json.loads(r.stdout) and not Path("-").exists()


def test_triage_output_inside_a_job_directory_is_refused(tmp_path: Path) -> None:
    job = tmp_path / "night" / "job-a"
    shutil.copytree(JOB, job)
    before = sorted(p.name for p in job.rglob("*"))
    r = run("triage", str(tmp_path / "night"), "-q", "-o", str(job / "t.csv"))
    assert r.returncode == 64 and "inside the job directory" in r.stderr
    assert r.stderr.count("\n") == 1
    assert sorted(p.name for p in job.rglob("*")) == before
    # the root is read too (issue 42 item 3): a summary there could swallow its jobs
    r = run("triage", str(tmp_path / "night"), "-q", "-o", str(tmp_path / "night" / "t.csv"))
    assert r.returncode == 64 and "inside the directory" in r.stderr, r.stderr

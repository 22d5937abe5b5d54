"""A job id as input, against a stand-in ``scontrol`` on PATH (the real one: tests/e2e)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.read.slurmjob import is_job_id
from tests.helpers import ROOT

FAKE = """#!/bin/bash
if [[ "$1 $2 $3" == "-o show job" ]]; then
  if [[ "$4" == "77" ]]; then
    echo "JobId=77 JobName=train UserId=me(1000) JobState=FAILED Reason=NonZeroExitCode \\
ExitCode=1:0 NodeList=node[001-002] NumNodes=2 WorkDir=$FAKE_DIR \\
StdErr=$FAKE_DIR/slurm-77.out StdOut=$FAKE_DIR/slurm-77.out"
    exit 0
  fi
  if [[ "$4" == "79" ]]; then
    echo "scontrol: error: Unable to contact slurm controller (connect failure)" >&2; exit 1
  fi
  echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1
fi
if [[ "$1 $2" == "write batch_script" ]]; then cat "$FAKE_DIR/train.sbatch"; exit 0; fi
exit 1
"""


@pytest.fixture
def fake_slurm(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(FAKE)
    (bin_dir / "scontrol").chmod(0o755)
    job = tmp_path / "job"
    job.mkdir()
    (job / "slurm-77.out").write_text(
        (ROOT / "sample_logs/real/worktree-not-shared/slurm-1.out").read_text()
    )
    (job / "train.sbatch").write_text(
        (ROOT / "recipes/train-megatron.sbatch")
        .read_text()
        .replace("--ntasks-per-node=1", "--ntasks-per-node=8")
    )
    return {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "FAKE_DIR": str(job),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
    }


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    e = {**os.environ, **env}
    e.pop("SLURM_CONF", None)
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        capture_output=True,
        text=True,
        env=e,
        timeout=120,
        cwd=ROOT,
    )


def test_job_id_finds_logs_script_and_facts(fake_slurm: dict[str, str]) -> None:
    r = run(fake_slurm, "77", "-f", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["verdict"]["category"] == "storage"
    assert d["facts"]["slurm_state"] == "FAILED" and d["facts"]["slurm_exit_code"] == "1:0"
    assert d["facts"]["slurm_nodelist"] == "node[001-002]"
    assert d["batch_script"] == "scontrol write batch_script 77"
    assert "tasks-per-node" in [a["rule"] for a in d["advisories"]]
    # SLURM's copy of the script lives in a temporary directory: evidence names it by its file
    # name, so the same job gives the same report run after run
    shown = [e for a in d["advisories"] for e in a["evidence"] if ".sh:" in e]
    assert shown and all(e.startswith("slurm-77.sh:") for e in shown), shown
    text = run(fake_slurm, "77", "-f", "text").stdout
    assert "SLURM job   77 FAILED exit 1:0 on node[001-002]" in text


def test_unknown_job_and_unreachable_slurm_are_clear(fake_slurm: dict[str, str]) -> None:
    r = run(fake_slurm, "78")
    assert r.returncode == 3 and "job 78 is unknown to SLURM" in r.stderr
    assert r.stderr.count("\n") == 1
    r = run(fake_slurm, "79")
    assert r.returncode == 3 and "Unable to contact slurm controller" in r.stderr
    assert "scontrol: scontrol:" not in r.stderr and "scontrol: error: Unable" in r.stderr


def test_no_scontrol(tmp_path: Path) -> None:
    r = run({"PATH": str(tmp_path)}, "12345")
    assert r.returncode == 3 and "scontrol is not installed" in r.stderr


def test_an_existing_path_that_looks_like_a_job_id_is_a_path(tmp_path: Path) -> None:
    (tmp_path / "4321").mkdir()
    old = os.getcwd()
    try:
        os.chdir(tmp_path)
        assert not is_job_id("4321") and is_job_id("4322") and is_job_id("12_3")
        assert not is_job_id("logs/4322")
    finally:
        os.chdir(old)


def test_job_ids_join_the_multi_job_run(fake_slurm: dict[str, str], tmp_path: Path) -> None:
    """A job id is a job of its own, like a directory: one JSON line each, in the order given;
    a job id SLURM does not know costs only its own line (exit 3 wins)."""
    sample = ROOT / "sample_logs/real/exception-cascade"
    tmp = tmp_path / "tmp"  # this run's own temporary directory: parallel tests use the shared one
    tmp.mkdir()
    r = run({**fake_slurm, "TMPDIR": str(tmp)}, str(sample), "77", "78", "-f", "json")
    assert r.returncode == 3, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["job"] for x in lines] == [str(sample), "77", "78"]
    assert lines[0]["verdict"]["category"] == "python_exception"
    assert lines[0]["batch_script"] == str(sample / "train.sbatch")
    assert "slurm_job_id" not in lines[0]["facts"]
    assert lines[1]["facts"]["slurm_job_id"] == "77"
    assert lines[1]["batch_script"] == "scontrol write batch_script 77"
    assert lines[2]["status"] == "unknown" and "job 78 is unknown to SLURM" in lines[2]["error"]
    assert "job 78 is unknown to SLURM" in r.stderr
    # the temporary copy of the batch script is gone once the run ends
    assert not list(tmp.glob("mcore-diagnose-script-*/slurm-77.sh"))
    r = run(fake_slurm, "77", "-q")
    assert r.returncode == 0 and r.stdout.startswith("storage"), r.stdout


def test_output_not_written_yet(
    fake_slurm: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job that has not started has no output file: the post-mortem says so (naming the
    file once), while ``watch`` (``pending_ok``) follows the path it will be written to."""
    from analyzer.read.slurmjob import SlurmJobError, lookup

    out = Path(fake_slurm["FAKE_DIR"]) / "slurm-77.out"
    out.unlink()
    r = run(fake_slurm, "77")
    assert r.returncode == 3 and r.stderr.count(str(out)) == 1, r.stderr
    monkeypatch.setenv("PATH", fake_slurm["PATH"])
    monkeypatch.setenv("FAKE_DIR", fake_slurm["FAKE_DIR"])
    with pytest.raises(SlurmJobError):
        lookup("77")
    job = lookup("77", pending_ok=True)
    try:
        assert job.logs == [out]
    finally:
        job.cleanup()  # its batch script's temporary copy (other tests look for leftovers)

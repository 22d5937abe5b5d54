"""``mcore-diagnose JOBID`` against the private SLURM cluster: scontrol finds the logs, the
batch script and the job's state."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cluster import Cluster
from harness.jobs import SlurmJobRunner

pytestmark = pytest.mark.slurm
REPO = Path(__file__).resolve().parents[2]

SCRIPT = """#!/bin/bash
#SBATCH --job-name=jobid-input
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --time=00:02:00
#SBATCH --output=slurm-%j.out
echo "starting"
python3 -c "raise KeyError('labels')"
"""


def diagnose(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "analyzer", *args], capture_output=True,
                          text=True, env=cluster.client_env(), timeout=120, cwd=REPO)


def test_job_id_as_input(slurm_cluster: Cluster, slurm_jobs: SlurmJobRunner) -> None:
    job = slurm_jobs.submit(SCRIPT, name="jobid-input")
    assert job.state == "FAILED"
    r = diagnose(slurm_cluster, str(job.job_id), "-f", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["verdict"]["category"] == "python_exception"
    f = d["facts"]
    assert f["slurm_job_id"] == str(job.job_id) and f["slurm_state"] == "FAILED"
    assert f["slurm_exit_code"] == "1:0" and f["slurm_nodelist"]
    assert d["batch_script"] == f"scontrol write batch_script {job.job_id}"
    # the script went to a private temporary file, never into the job's directory
    assert sorted(p.name for p in job.job_dir.iterdir()) == [
        "jobid-input.sbatch", f"slurm-{job.job_id}.out"]


def test_unknown_job_id(slurm_cluster: Cluster) -> None:
    r = diagnose(slurm_cluster, "987654")
    assert r.returncode == 3 and "job 987654 is unknown to SLURM" in r.stderr

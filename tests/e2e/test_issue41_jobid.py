"""Issue 41, the shape "a job id given to the tool": a launch-rule scenario submitted to the
private SLURM cluster, diagnosed as ``mcore-diagnose <JOBID>`` (scontrol finds the logs and the
batch script) and as its directory alone, gives the same launch finding and verdict category
as the recording bundled in ``sample_logs/real``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.cluster import Cluster
from harness.record import Recorder
from harness.scenarios import BY_NAME

pytestmark = pytest.mark.slurm
REPO = Path(__file__).resolve().parents[2]
SCENARIO = "master-addr-nodelist-unlabelled"  # fails at once: every agent rejects the endpoint


def diagnose(cluster: Cluster, target: str) -> dict[str, Any]:
    r = subprocess.run([sys.executable, "-m", "analyzer", target, "-f", "json"],
                       capture_output=True, text=True, env=cluster.client_env(), timeout=120,
                       cwd=REPO)
    assert r.returncode == 0, r.stderr
    d: dict[str, Any] = json.loads(r.stdout)
    return d


def finding(d: dict[str, Any]) -> tuple[str, str | None]:
    """The verdict's category and the launch rule that explains it."""
    lead = next((a["rule"] for a in d.get("advisories", []) if a["explains_verdict"]), None)
    return d["verdict"]["category"], lead


def test_a_job_id_gives_the_launch_finding_of_its_directory(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    recorder = Recorder(cluster=slurm_cluster, work=tmp_path)
    sc = BY_NAME[SCENARIO]
    result = recorder.run(sc)
    assert result.state == sc.expected_state
    by_id = diagnose(slurm_cluster, str(result.job_id))
    assert by_id["facts"]["slurm_job_id"] == str(result.job_id)
    assert by_id["batch_script"] == f"scontrol write batch_script {result.job_id}"
    by_dir = diagnose(slurm_cluster, str(result.job_dir))
    bundled = diagnose(slurm_cluster, str(REPO / "sample_logs" / "real" / SCENARIO))
    assert finding(by_id) == finding(by_dir) == finding(bundled) == (sc.category, "master-addr")

"""Fixtures for the end-to-end tests that run real jobs on a private SLURM cluster.

``slurm_cluster`` (session): a running :class:`harness.cluster.Cluster`. Skips when SLURM or
munge is missing -- but *fails* when the ``CI`` environment variable is set, so CI cannot
silently lose these tests.

``slurm_jobs`` (session): a :class:`SlurmJobRunner` that submits any sbatch script to that
cluster and waits for it (for tests that bring their own jobs: dependent jobs, job arrays).

``scenario_results`` (session): every scenario of ``harness/scenarios.py`` run once, recorded
(neutralised) into a temp dir.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness.cluster import (  # noqa: E402
    Cluster,
    ClusterUnavailable,
    start_cluster,
    unavailable_reason,
)
from harness.jobs import RecordedScenario, SlurmJobRunner  # noqa: E402
from harness.record import Recorder, run_many  # noqa: E402
from harness.scenarios import SCENARIOS  # noqa: E402


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"SLURM e2e tests cannot run on CI: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    reason = unavailable_reason()
    if reason:
        _skip_or_fail(reason)
    state_dir = tmp_path_factory.mktemp("slurm")
    try:
        cluster = start_cluster(state_dir=state_dir)
    except ClusterUnavailable as exc:
        _skip_or_fail(str(exc))
        raise  # unreachable: skip/fail raise
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def slurm_jobs(slurm_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> SlurmJobRunner:
    return SlurmJobRunner(slurm_cluster, tmp_path_factory.mktemp("jobs"))


@pytest.fixture(scope="session")
def scenario_results(
    slurm_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, RecordedScenario]:
    work = tmp_path_factory.mktemp("scenario-work")
    out = tmp_path_factory.mktemp("scenario-recordings")
    recorder = Recorder(cluster=slurm_cluster, work=work)
    jobs = int(os.environ.get("MCORE_E2E_JOBS", "1"))
    results = run_many(recorder, SCENARIOS, jobs=jobs)
    return {r.scenario.name: RecordedScenario(r, recorder.record(r, out)) for r in results}

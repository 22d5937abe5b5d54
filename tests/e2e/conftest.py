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
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
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
from harness.record import Recorder, RunResult, run_many  # noqa: E402
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


@dataclass
class SubmittedJob:
    job_id: int
    job_dir: Path
    script: Path
    state: str | None = None  # final state when waited for

    def output_text(self) -> str:
        """All text files the job wrote into its job dir, concatenated."""
        parts = []
        for path in sorted(self.job_dir.rglob("*")):
            if path.is_file() and path != self.script:
                parts.append(path.read_text(errors="replace"))
        return "\n".join(parts)


class SlurmJobRunner:
    """Submit sbatch scripts to the test cluster. Each job gets its own job dir (the
    submission cwd, so relative ``#SBATCH --output`` paths land there)."""

    def __init__(self, cluster: Cluster, root: Path) -> None:
        self.cluster = cluster
        self.root = root
        self._count = 0

    def new_job_dir(self, name: str) -> Path:
        self._count += 1
        job_dir = self.root / f"{self._count:03d}-{name}"
        job_dir.mkdir(parents=True)
        return job_dir

    def submit(
        self,
        script: str,
        name: str = "job",
        env: Mapping[str, str] | None = None,
        sbatch_args: Sequence[str] = (),
        wait: bool = True,
        timeout: float = 120,
        job_dir: Path | None = None,
    ) -> SubmittedJob:
        job_dir = job_dir or self.new_job_dir(name)
        path = job_dir / f"{name}.sbatch"
        path.write_text(script)
        job_id = self.cluster.sbatch(path, cwd=job_dir, env=env, args=sbatch_args)
        job = SubmittedJob(job_id=job_id, job_dir=job_dir, script=path)
        if wait:
            job.state = self.wait(job, timeout=timeout)
        return job

    def wait(self, job: SubmittedJob | int, timeout: float = 120) -> str:
        job_id = job.job_id if isinstance(job, SubmittedJob) else job
        state = self.cluster.wait_job(job_id, timeout=timeout)
        time.sleep(0.5)  # let slurmstepd flush the output files
        if isinstance(job, SubmittedJob):
            job.state = state
        return state

    def state(self, job_id: int) -> str:
        return self.cluster.job_state(job_id)


@pytest.fixture(scope="session")
def slurm_jobs(
    slurm_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> SlurmJobRunner:
    return SlurmJobRunner(slurm_cluster, tmp_path_factory.mktemp("jobs"))


@dataclass
class RecordedScenario:
    result: RunResult
    recording: Path  # neutralised copy (what sample_logs/real/<name>/ holds)


@pytest.fixture(scope="session")
def scenario_results(
    slurm_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, RecordedScenario]:
    work = tmp_path_factory.mktemp("scenario-work")
    out = tmp_path_factory.mktemp("scenario-recordings")
    recorder = Recorder(cluster=slurm_cluster, work=work)
    jobs = int(os.environ.get("MCORE_E2E_JOBS", "2"))
    results = run_many(recorder, SCENARIOS, jobs=jobs)
    return {r.scenario.name: RecordedScenario(r, recorder.record(r, out)) for r in results}

"""Submitting arbitrary sbatch scripts to a running private cluster (used by the e2e tests;
later tests add dependent "diagnose on failure" jobs and job arrays through it)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.cluster import Cluster
from harness.record import RunResult


@dataclass
class SubmittedJob:
    job_id: int
    job_dir: Path
    script: Path
    state: str | None = None  # final state once waited for

    def output_text(self) -> str:
        """All text files the job wrote into its job dir, concatenated."""
        parts = []
        for path in sorted(self.job_dir.rglob("*")):
            if path.is_file() and path != self.script:
                parts.append(path.read_text(errors="replace"))
        return "\n".join(parts)


class SlurmJobRunner:
    """Submit sbatch scripts to ``cluster``. Each job gets its own job dir (the submission
    cwd, so relative ``#SBATCH --output`` paths land there)."""

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
        """Write ``script`` to ``<job_dir>/<name>.sbatch``, submit it (extra ``sbatch_args``
        such as ``--dependency=afternotok:12`` or ``--array=0-3``), and by default wait for a
        final state."""
        job_dir = job_dir or self.new_job_dir(name)
        path = job_dir / f"{name}.sbatch"
        path.write_text(script)
        job_id = self.cluster.sbatch(path, cwd=job_dir, env=env, args=sbatch_args)
        job = SubmittedJob(job_id=job_id, job_dir=job_dir, script=path)
        if wait:
            self.wait(job, timeout=timeout)
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


@dataclass
class RecordedScenario:
    result: RunResult
    recording: Path  # neutralised copy (what sample_logs/real/<name>/ holds)

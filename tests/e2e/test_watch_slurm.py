"""``mcore-diagnose watch`` beside real jobs on the private SLURM cluster (issue 43).

Four real jobs (CPU torch + gloo, torchrun under srun, harness/train.py), each watched from the
moment it is submitted with ``watch DIR -f json --interval 1 --stall-after 10``:

(a) ``slow-save``: rank 1 goes silent in a "checkpoint save" while the others wait in the next
    all-reduce; (b) ``sigkill``: rank 3 is SIGKILLed; (c) ``exception``: rank 2 raises an
    IndexError; (d) a clean run. The gloo timeout is 180 s, so a hang the watcher names before a
    collective-timeout line exists was named before the timeout fired. Every rank prints its
    iteration line (``--log-all-ranks``) under torchrun's ``[${rank}]:`` line prefix
    (``TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE`` with ``--tee 3``), so the logs say which rank
    stopped. The ``end`` finding's ``diagnosis`` must equal ``mcore-diagnose DIR -f json``.

With gloo a SIGKILLed peer is seen at once (its sockets close: ``Connection closed by peer``),
where NCCL ranks would hang until the watchdog: (b) is named as a failure (or a stall) of
rank 3 before any timeout; either kind is accepted, the rank is not.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.cluster import Cluster, free_port
from harness.record import JOB_ENV_UNSET
from harness.scenarios import LaunchContext, Scenario, render_sbatch

pytestmark = pytest.mark.slurm
REPO = Path(__file__).resolve().parents[2]
GLOO_TIMEOUT_S = 180
STALL_AFTER_S = 10
WATCH_MAX_S = 240
TIMEOUT_LINE = re.compile(r"Timed out waiting \d+ms")
TRACEBACK = "Traceback (most recent call last)"


def _scenario(name: str, fault: str, rank: int, iteration: int, iters: int = 24) -> Scenario:
    return Scenario(
        name=name,
        description=f"watch e2e: {fault} on rank {rank} at iteration {iteration}",
        category="",
        rank=rank,
        node="",
        cause="",
        must_contain=(),
        expected_state="",
        output="combined",
        label=True,
        tee=True,
        train_args=(
            "--distributed-timeout-seconds", str(GLOO_TIMEOUT_S),
            "--train-iters", str(iters), "--iter-sleep", "0.3",
        ),
        env={
            "MCORE_FAULT": fault,
            "MCORE_FAULT_RANK": str(rank),
            "MCORE_FAULT_ITER": str(iteration),
            "MCORE_LOG_ALL_RANKS": "1",
            "MCORE_FAULT_PAUSE": "1",
            "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[${rank}]:",
        },
        time_limit="00:06:00",
    )


@dataclass
class Watched:
    """One job and what its watcher printed, with when the test saw each thing."""

    job_id: int
    job_dir: Path
    findings: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    first_seen: dict[str, float] = field(default_factory=dict)
    """"timeout" / "traceback": when the poller first saw such a line in the logs."""
    seen_at_finding: list[set[str]] = field(default_factory=list)
    """For each finding: which of those lines the logs held when it arrived."""
    rc: int | None = None
    stderr: str = ""

    def kinds(self) -> list[str]:
        return [f["kind"] for _, f in self.findings]

    def first(self, *kinds: str) -> tuple[int, float, dict[str, Any]]:
        for i, (t, f) in enumerate(self.findings):
            if f["kind"] in kinds:
                return i, t, f
        raise AssertionError(f"no {kinds} finding: {self.kinds()} (stderr: {self.stderr})")


def _logs_text(job_dir: Path) -> str:
    parts = []
    for p in sorted(job_dir.rglob("*")):
        if p.is_file() and p.suffix != ".sbatch":
            parts.append(p.read_text(errors="replace"))
    return "\n".join(parts)


def _poll_logs(w: Watched, stop: threading.Event) -> None:
    while not stop.is_set():
        text = _logs_text(w.job_dir)
        now = time.monotonic()
        if "timeout" not in w.first_seen and TIMEOUT_LINE.search(text):
            w.first_seen["timeout"] = now
        if "traceback" not in w.first_seen and TRACEBACK in text:
            w.first_seen["traceback"] = now
        stop.wait(0.2)


def _read_findings(
    w: Watched, proc: subprocess.Popen[str], cluster: Cluster, cancel_on_stall: bool
) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if not line.strip():
            continue
        obj = json.loads(line)
        w.findings.append((time.monotonic(), obj))
        w.seen_at_finding.append(set(w.first_seen))
        if cancel_on_stall and obj["kind"] == "stall":
            cluster.scancel(w.job_id)


def run_watched(
    cluster: Cluster, root: Path, sc: Scenario, *, cancel_on_stall: bool = False,
    by_job_id: bool = False,
) -> Watched:
    """Submit ``sc``, watch its directory (or its job id) until the watcher exits; scancel in
    any case."""
    job_dir = root / sc.name
    job_dir.mkdir(parents=True)
    (root / "tmp").mkdir(exist_ok=True)
    ctx = LaunchContext(repo=REPO, python=Path(sys.executable), bare_python=None,
                        master_port=free_port())
    script = job_dir / "train.sbatch"
    script.write_text(render_sbatch(sc, ctx))
    job_id = cluster.sbatch(script, cwd=job_dir, unset=JOB_ENV_UNSET,
                            env={"TMPDIR": str(root / "tmp"), "PYTHONDONTWRITEBYTECODE": "1"})
    w = Watched(job_id, job_dir)
    stop = threading.Event()
    proc = subprocess.Popen(
        [sys.executable, "-m", "analyzer", "watch", str(job_id) if by_job_id else str(job_dir),
         "-f", "json",
         "--interval", "1", "--stall-after", str(STALL_AFTER_S),
         "--max-seconds", str(WATCH_MAX_S)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env=cluster.client_env(),
    )
    poller = threading.Thread(target=_poll_logs, args=(w, stop), daemon=True)
    reader = threading.Thread(target=_read_findings, args=(w, proc, cluster, cancel_on_stall),
                              daemon=True)
    poller.start()
    reader.start()
    try:
        w.rc = proc.wait(timeout=WATCH_MAX_S + 60)
        reader.join(timeout=10)
        assert proc.stderr is not None
        w.stderr = proc.stderr.read()
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        try:  # a job the watcher saw end ends by itself; one left hanging is cancelled
            cluster.wait_job(job_id, timeout=60)
        except TimeoutError:
            cluster.scancel(job_id)
            cluster.wait_job(job_id, timeout=60)
        time.sleep(1.0)  # let slurmstepd flush the last lines
        # what the watcher printed, beside (never inside) the job's directory, for a failure
        (root / f"{sc.name}.findings.jsonl").write_text(
            "".join(f"{t:.3f} {json.dumps(f)}\n" for t, f in w.findings)
            + f"first_seen {w.first_seen}\nrc {w.rc}\nstderr {w.stderr}\n"
        )
    return w


def postmortem(cluster: Cluster, target: str) -> dict[str, Any]:
    r = subprocess.run([sys.executable, "-m", "analyzer", target, "-f", "json"],
                       capture_output=True, text=True, cwd=REPO, env=cluster.client_env(),
                       timeout=120, check=False)
    assert r.stdout.strip(), r.stderr
    result: dict[str, Any] = json.loads(r.stdout)
    return result


def check_end(cluster: Cluster, w: Watched, target: str | None = None) -> dict[str, Any]:
    """The watcher ended with an ``end`` finding equal to the post-mortem of the same
    ``target`` (default: the job's directory); returns it."""
    assert w.rc in (0, 4), (w.rc, w.stderr)
    assert w.findings and w.findings[-1][1]["kind"] == "end", (w.kinds(), w.stderr)
    after = postmortem(cluster, target or str(w.job_dir))
    assert w.findings[-1][1]["diagnosis"] == after
    return after


@pytest.fixture(scope="module")
def watch_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("watch-jobs")


def test_stuck_rank_named_before_the_timeout(slurm_cluster: Cluster, watch_root: Path) -> None:
    """(a) rank 1 stuck in a long 'checkpoint save'; the others wait in the all-reduce."""
    w = run_watched(slurm_cluster, watch_root, _scenario("watch-slow-save", "slow-save", 1, 6),
                    cancel_on_stall=True)
    i, _, stall = w.first("stall", "failure")
    assert stall["kind"] == "stall", w.findings[i]
    assert "timeout" not in w.seen_at_finding[i], "named only after gloo timed out"
    assert stall["rank"] == 1, stall["cause"]
    assert "saving checkpoint" in stall["last_lines"]["1"]["text"]
    assert stall["silent_for_s"] >= STALL_AFTER_S and stall["threshold_s"] == STALL_AFTER_S
    check_end(slurm_cluster, w)


def test_killed_rank_named_before_the_timeout(slurm_cluster: Cluster, watch_root: Path) -> None:
    """(b) rank 3 SIGKILLed (gloo sees it at once: a failure or a stall, of rank 3)."""
    w = run_watched(slurm_cluster, watch_root, _scenario("watch-sigkill", "sigkill", 3, 6),
                    cancel_on_stall=True)
    i, _, first = w.first("stall", "failure")
    assert "timeout" not in w.seen_at_finding[i], "named only after gloo timed out"
    assert first["rank"] == 3, first["cause"]
    after = check_end(slurm_cluster, w)
    if first["kind"] == "failure":
        assert first["category"] == after["verdict"]["category"]


def test_exception_named_within_seconds(slurm_cluster: Cluster, watch_root: Path) -> None:
    """(c) rank 2 raises mid-training: a failure finding with the post-mortem's verdict."""
    w = run_watched(slurm_cluster, watch_root, _scenario("watch-exception", "exception", 2, 6))
    _, at, failure = w.first("failure", "stall")
    assert failure["kind"] == "failure", failure
    assert "traceback" in w.first_seen
    assert at - w.first_seen["traceback"] < 10.0
    after = check_end(slurm_cluster, w)
    assert (failure["category"], failure["rank"]) == (
        after["verdict"]["category"], after["verdict"]["rank"]) == ("python_exception", 2)


def test_clean_run_has_no_finding(slurm_cluster: Cluster, watch_root: Path) -> None:
    """(d) a clean run: no failure, no stall; the end finding is the post-mortem."""
    w = run_watched(slurm_cluster, watch_root, _scenario("watch-clean", "none", 0, 0))
    assert [k for k in w.kinds() if k in ("failure", "stall")] == [], w.findings
    after = check_end(slurm_cluster, w)
    assert after["status"] != "failed"


def test_job_id_watched_until_it_leaves_the_queue(
    slurm_cluster: Cluster, watch_root: Path
) -> None:
    """(c) again, watched by job id: scontrol gives the paths, the watcher stops once SLURM no
    longer runs the job, and its end equals ``mcore-diagnose JOBID -f json``."""
    w = run_watched(slurm_cluster, watch_root,
                    _scenario("watch-exception-jobid", "exception", 2, 6), by_job_id=True)
    _, _, failure = w.first("failure", "stall")
    assert (failure["kind"], failure["category"], failure["rank"]) == (
        "failure", "python_exception", 2)
    after = check_end(slurm_cluster, w, str(w.job_id))
    assert after["facts"]["slurm_state"] == "FAILED"


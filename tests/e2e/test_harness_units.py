"""Fast checks of the harness that need no SLURM (no ``slurm`` marker); one runs real torchrun
with two CPU workers (about 6 s)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from harness.record import (
    check_recording,
    expected_toml,
    leftover_machine_paths,
    neutral_replacements,
    neutralise_text,
)
from harness.scenarios import SCENARIOS, LaunchContext, Scenario, render_sbatch

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_logs" / "real"
CATEGORIES = {
    "python_exception",
    "native_crash",
    "cuda_oom",
    "host_oom",
    "cuda_error",
    "hardware",
    "network",
    "nccl_error",
    "collective_timeout",
    "cuda_device_max_connections",
    "rendezvous",
    "config",
    "import_error",
    "storage",
    "checkpoint",
    "nan_loss",
    "slurm_time_limit",
    "slurm_preempted",
    "slurm_node_fail",
    "slurm_cancelled",
    "unknown",
    "none",
}


def test_at_least_twelve_distinct_scenarios() -> None:
    names = [s.name for s in SCENARIOS]
    assert len(names) >= 12
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda s: s.name)
def test_scenario_definition(sc: Scenario) -> None:
    assert sc.category in CATEGORIES
    assert sc.rank == -1 or 0 <= sc.rank < 4
    assert sc.node in ("", "0", "1")
    if sc.rank >= 0:
        assert sc.node == str(sc.rank // 2)
    for pattern in sc.must_contain:
        re.compile(pattern)
    data = tomllib.loads(expected_toml(sc))
    assert data["kind"] == "real"
    assert data["must_contain"] == list(sc.must_contain)


@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda s: s.name)
def test_sbatch_script_is_well_formed(sc: Scenario, tmp_path: Path) -> None:
    ctx = LaunchContext(
        repo=tmp_path / "repo",
        python=tmp_path / "venv/bin/python",
        bare_python=tmp_path / "bare/bin/python3",
        master_port=29500,
        uv=tmp_path / "venv/bin/uv",
        uv_project=tmp_path / "uv-project",
    )
    script = render_sbatch(sc, ctx)
    if sc.uv_run:  # the launcher runs through `uv run` against the project without .venv
        assert '"$UV" run --project "$UV_PROJECT" -- "$PYTHON" -m torch.distributed.run' in script
    assert script.startswith("#!/bin/bash\n")
    assert "#SBATCH --ntasks=2" in script
    assert "-m torch.distributed.run" in script
    if sc.standalone:
        assert "--standalone --nproc-per-node $GPUS_PER_NODE" in script
    else:
        assert (f"--nnodes {sc.nnodes_arg} --nproc-per-node $GPUS_PER_NODE "
                f"--node-rank {sc.node_rank}") in script


def test_neutralise_paths_and_host(tmp_path: Path) -> None:
    job = tmp_path / "jobs" / "x"
    repo = tmp_path / "repo"
    reps = neutral_replacements(job_dir=job, scenario="x", repo=repo)
    text = f"cd {repo}\nlog {job}/slurm-1.out\nsrun: error: myhost: task 1: Exited\nmyhostname\n"
    out = neutralise_text(text, reps, ["myhost"])
    assert "/shared/mcore-diagnose" in out
    assert "/shared/jobs/x/slurm-1.out" in out
    assert "srun: error: node001: task 1" in out
    assert "myhostname" in out  # only whole host names are replaced


@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda s: s.name)
def test_committed_sample(sc: Scenario) -> None:
    """The committed recording shows its fault and names no machine path."""
    sample = SAMPLES / sc.name
    if not sample.exists():
        pytest.fail(f"sample_logs/real/{sc.name} missing: python -m harness.record")
    expected = tomllib.loads((sample / "expected.toml").read_text())
    assert expected["category"] == sc.category
    assert expected["rank"] == sc.rank
    assert expected["node"] == sc.node
    assert check_recording(sc, sample, sc.expected_state) == []
    assert leftover_machine_paths(sample) == []


def test_missing_slurm_gives_a_skip_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.cluster as cluster

    monkeypatch.setattr(cluster.shutil, "which", lambda *a, **k: None)
    reason = cluster.unavailable_reason()
    assert reason is not None and "not installed" in reason
    with pytest.raises(cluster.ClusterUnavailable, match="not installed"):
        cluster.start_cluster()


def test_free_ports_stay_out_of_the_ephemeral_range() -> None:
    """A port from bind(0) can be handed to srun's next outgoing connection before the job's
    TCPStore listens on it (EADDRINUSE in CI): the harness picks ports below the range."""
    import socket

    from harness.cluster import _ephemeral_range, free_port

    lo, hi = _ephemeral_range()
    ports = {free_port() for _ in range(20)}
    assert all(not lo <= p <= hi and not lo <= p + 1 <= hi for p in ports), ports
    for p in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", p))  # nothing listens there


@pytest.mark.slow
def test_a_victim_of_a_lost_peer_exits_after_the_faulty_rank(tmp_path: Path) -> None:
    """Gloo tells rank 0 at once that rank 1 died; if it exited at once, torchrun could catch
    both exits in one poll and name local rank 0 (the lowest), not the faulty rank 1. The
    victim prints its error, lingers, and is SIGTERMed by torchrun (real torchrun, two CPU
    workers, no SLURM). Torchrun polls every 1.5 s here, so both would be gone by its first
    look if the victim did not linger (the CI flake, made certain)."""
    import os
    import subprocess
    import sys

    pytest.importorskip("torch")
    from harness.cluster import free_port

    env = dict(os.environ, MCORE_FAULT="loader-fatal", MCORE_FAULT_RANK="1", MCORE_FAULT_ITER="2")
    for name in ("TORCH_FR_DUMP_TEMP_FILE", "MCORE_EXIT_GRACE"):  # the defaults: no dumps, 3 s
        env.pop(name, None)
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
        "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
        "--monitor-interval", "1.5",
        str(REPO / "harness" / "train.py"), "--train-iters", "3", "--iter-sleep", "0",
    ]  # fmt: skip
    run = subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out[-3000:]
    assert "shardio: FATAL: corrupt record header" in out
    # the victim's own error is printed only if it reached its next collective before
    # torchrun's poll (a race: CI once saw SIGTERM first); when printed, it names the lost peer
    victim = re.findall(r"\[rank0\]: RuntimeError: .*", out)
    assert all(re.search(r"(?:closed|reset) by peer", line) for line in victim), victim
    assert re.search(r"failed \(exitcode: 1\) local_rank: 1 \(pid: \d+\)", out), out[-3000:]
    # the victim was still there when torchrun tore the group down
    assert re.search(
        r"rank\s+: 0 \(local_rank: 0\)\n\s+exitcode\s+: -15 \(pid: \d+\)", out
    ), out[-3000:]

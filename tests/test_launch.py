"""Launch advisories in the post-mortem: the batch script plus the evidence, tied to a rule.

Log lines here are built from the exact formats of the real software (checked in its source):
slurmstepd ``couldn't chdir to `%s': %m: going to /tmp instead`` (src/slurmd/slurmstepd/mgr.c),
CPython ``%S: can't open file %R: [Errno %d] %s`` (Modules/main.c), torch's
``parse_rendezvous_endpoint`` ValueError (torch/distributed/elastic/rendezvous/utils.py), uv's
``Creating virtual environment at:`` / ``Installed N packages in``, Megatron's
``could not find the metadata file`` (megatron/training/checkpointing.py). The real recorded runs
are ``sample_logs/real/worktree-not-shared``, ``standalone-independent-worlds``,
``nnodes-one-per-node``, ``master-addr-nodelist`` and ``two-agents-per-node``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.api import Analysis, analyze
from analyzer.read.batchscript import find_script
from tests.helpers import ROOT, write_job

SKELETON = (ROOT / "recipes" / "train-megatron.sbatch").read_text()
MASTER = 'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)'


def job(tmp_path: Path, log: str, script: str | None = SKELETON) -> Path:
    """``job-41/`` with ``slurm-41.out`` holding ``log`` and, unless None, ``train.sbatch``."""
    files = {"slurm-41.out": log} | ({"train.sbatch": script} if script is not None else {})
    return write_job(tmp_path / "job-41", files)


def advisories(d: Path, script: Path | None = None) -> list[dict[str, object]]:
    return advice(analyze(d, script=script))


def advice(a: Analysis) -> list[dict[str, object]]:
    """The diagnosis' advisories in their JSON form."""
    return [x.as_dict() for x in a.diagnosis.advisories]


def test_raw_nodelist_endpoint_is_tied_to_master_addr(tmp_path: Path) -> None:
    log = (
        "0: Traceback (most recent call last):\n"
        "0: ValueError: The hostname of the rendezvous endpoint 'node[001-002]:29500' must be a "
        "dot-separated list of labels, an IPv4 address, or an IPv6 address.\n"
        "1: ValueError: The hostname of the rendezvous endpoint 'node[001-002]:29500' must be a "
        "dot-separated list of labels, an IPv4 address, or an IPv6 address.\n"
    )
    d = job(tmp_path, log, SKELETON.replace(MASTER, "export MASTER_ADDR=$SLURM_JOB_NODELIST"))
    a = analyze(d)
    v = a.diagnosis.verdict
    assert v.category == "rendezvous" and "scontrol show hostnames" in v.fix
    [adv] = advice(a)
    assert adv["rule"] == "master-addr" and adv["explains_verdict"] is True
    assert "raw SLURM node list" in str(adv["message"])
    assert adv["fix"] == MASTER
    assert str(adv["evidence"][0]).endswith(":18: export MASTER_ADDR=$SLURM_JOB_NODELIST")


def test_raw_nodelist_without_a_script_still_names_the_rule(tmp_path: Path) -> None:
    log = ("ValueError: The hostname of the rendezvous endpoint 'gpu-[07,09]:29500' must be a "
           "dot-separated list of labels, an IPv4 address, or an IPv6 address.\n")
    [adv] = advisories(job(tmp_path, log, None))
    assert adv["rule"] == "master-addr" and "scontrol" in str(adv["fix"])


def test_uv_building_the_venv_until_the_time_limit(tmp_path: Path) -> None:
    log = (
        "0: Creating virtual environment at: .venv\n"
        "1: Creating virtual environment at: .venv\n"
        "0: Installed 187 packages in 9m 12s\n"
        "slurmstepd: error: *** JOB 41 ON node001 CANCELLED AT 2026-12-02T17:10:52 DUE TO "
        "TIME LIMIT ***\n"
    )
    script = SKELETON.replace("uv run --no-sync python", "uv run python")
    a = analyze(job(tmp_path, log, script))
    assert a.diagnosis.verdict.category == "slurm_time_limit"
    [adv] = advice(a)
    assert adv["rule"] == "uv-sync" and adv["explains_verdict"] is True
    assert "2 node(s)" in str(adv["message"])
    assert str(adv["fix"]).startswith("uv run --no-sync python -m torch.distributed.run")


def test_checkpoint_on_node_local_disk_started_from_random(tmp_path: Path) -> None:
    log = (
        " loading distributed checkpoint from /local/ckpt at iteration 0\n"
        "WARNING: could not find the metadata file /local/ckpt/latest_checkpointed_iteration.txt\n"
        "    will not load any checkpoints and will start from random\n"
        " [2026-12-02 17:10:00] iteration        1/    1000 | consumed samples:          256 |"
        " lm loss: 1.050000E+01 |\n"
    )
    script = SKELETON.replace('--load "$WORKTREE/checkpoints/gpt"', '--load "/local/ckpt"')
    advs = advisories(job(tmp_path, log, script))
    [adv] = [x for x in advs if "started from random" in str(x["message"])]
    assert adv["rule"] == "node-local-path" and "requeue" in str(adv["message"])
    other = tmp_path / "b"
    other.mkdir()
    no_script = advisories(job(other, log, None))
    assert [x["rule"] for x in no_script] == ["restart-from-scratch"]


def test_clean_script_and_clean_log_have_no_advisories(tmp_path: Path) -> None:
    assert advisories(job(tmp_path, "iteration 1\ntraining done\n")) == []


def test_script_only_findings_are_advisories_even_without_evidence(tmp_path: Path) -> None:
    script = SKELETON.replace("--ntasks-per-node=1", "--ntasks-per-node=8")
    [adv] = advisories(job(tmp_path, "iteration 1\n", script))
    assert adv["rule"] == "tasks-per-node" and adv["severity"] == "error"
    assert adv["explains_verdict"] is False


def test_find_script_needs_sbatch_lines(tmp_path: Path) -> None:
    (tmp_path / "helper.sh").write_text("echo hi\n")
    assert find_script([tmp_path]) is None
    (tmp_path / "slurm-41.sh").write_text("#!/bin/bash\n#SBATCH -N 2\nsrun true\n")
    assert find_script([tmp_path]) == tmp_path / "slurm-41.sh"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": "/nonexistent-config-home"}
    env.pop("MCORE_DIAGNOSE_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "analyzer", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def test_script_option_and_json(tmp_path: Path) -> None:
    d = job(tmp_path, "[rank0]: KeyError: 'labels'\n", None)
    s = tmp_path / "elsewhere.sbatch"
    s.write_text(SKELETON.replace("--ntasks-per-node=1", "--ntasks-per-node=8"))
    r = cli(str(d), "-f", "json", "--script", str(s))
    out = json.loads(r.stdout)
    assert out["batch_script"] == str(s)
    assert [x["rule"] for x in out["advisories"]] == ["tasks-per-node"]
    r = cli(str(d), "--script", str(tmp_path / "missing.sbatch"))
    assert r.returncode == 64 and "no such file" in r.stderr
    r = cli(str(d), "-f", "text", "--script", str(s))
    assert "Launch advisories" in r.stdout and "[tasks-per-node]" in r.stdout


@pytest.mark.parametrize("name", ["worktree-not-shared", "standalone-independent-worlds",
                                  "nnodes-one-per-node", "master-addr-nodelist",
                                  "two-agents-per-node"])
def test_real_recorded_launch_mistakes(name: str) -> None:
    d = ROOT / "sample_logs" / "real" / name
    if not d.is_dir():
        pytest.skip(f"{name} not recorded")
    a = analyze(d)
    rules = [x["rule"] for x in advice(a)]
    if name == "worktree-not-shared":
        assert a.diagnosis.verdict.category == "storage"
        assert rules[0] == "node-local-path" and advice(a)[0]["explains_verdict"]
    elif name == "standalone-independent-worlds":
        assert a.diagnosis.status == "ok"
        [adv] = advice(a)
        assert adv["rule"] == "worker-group" and "2 rank-0 outputs" in str(adv["message"])
    elif name == "two-agents-per-node":
        assert a.diagnosis.verdict.category == "rendezvous"
        [adv] = advice(a)
        assert adv["rule"] == "tasks-per-node" and adv["explains_verdict"] is True
        assert "srun tasks 0, 1 ran on the same host node001" in str(adv["message"])
        # lint reports the srun that inherits #SBATCH --ntasks=2 (line 4), on its own line
        assert str(adv["evidence"][0]).endswith("train.sbatch:24: srun --label bash -c '")
    elif name == "master-addr-nodelist":
        assert a.diagnosis.verdict.category == "rendezvous"
        assert "scontrol show hostnames" in a.diagnosis.verdict.fix
        [adv] = advice(a)
        assert adv["rule"] == "master-addr" and adv["explains_verdict"] is True
        assert "raw SLURM node list (on 2 node(s))" in str(adv["message"])
        assert str(adv["evidence"][0]).endswith("export MASTER_ADDR='node[001-002]'")
    else:
        # node 0 trained a world of 2 alone; node 1 waited in the rendezvous until node 0's
        # store went away: the verdict is the lost store, led by the launch mistake (--nnodes 1
        # on a 2-node allocation) that explains it
        assert a.diagnosis.verdict.category == "rendezvous"
        [adv] = advice(a)
        assert adv["rule"] == "worker-group" and adv["explains_verdict"] is True
        assert "--nnodes 1 on a 2-node allocation" in str(adv["message"])
        assert any("world size 2 (Megatron)" in str(e) for e in adv["evidence"])
        assert a.diagnosis.verdict.cause.startswith("Launch mistake: the launcher was given")


def test_megatron_max_connections_warning_on_a_job_that_ran(tmp_path: Path) -> None:
    log = (
        "Using tensor model parallelism or context parallelism with Megatron-FSDP together. Try "
        "not to using them together since they require different CUDA_MAX_CONNECTIONS settings "
        "for best performance. sequence parallelism requires setting the environment variable "
        "CUDA_DEVICE_MAX_CONNECTIONS to 1 while Megatron-FSDP requires not setting "
        "CUDA_DEVICE_MAX_CONNECTIONS=1 for better parallelization.\n"
        " [2026-12-02 17:10:00] iteration       10/      10 | consumed samples:         2560 |\n"
    )
    a = analyze(job(tmp_path, log, None))
    assert a.diagnosis.status == "ok"
    [adv] = advice(a)
    assert adv["rule"] == "max-connections" and "conflicting" in str(adv["message"])


def test_store_port_in_use_with_several_tasks_per_node(tmp_path: Path) -> None:
    log = (
        "1: torch.distributed.DistNetworkError: The server socket has failed to listen on any "
        "local network address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, "
        "message: address already in use\n"
    )
    script = SKELETON.replace("--ntasks-per-node=1", "--ntasks-per-node=8")
    a = analyze(job(tmp_path, log, script))
    assert a.diagnosis.verdict.category == "rendezvous"
    [adv] = advice(a)
    assert adv["rule"] == "tasks-per-node" and adv["explains_verdict"] is True
    assert any("EADDRINUSE" in str(e) for e in adv["evidence"])  # type: ignore[union-attr]


def test_gpu_model_from_the_logs_decides_max_connections(tmp_path: Path) -> None:
    log = (
        "0: GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-f75045e8-4d87-49d1-2eb9-39ec2baddf9b)\n"
        "0: [rank0]: AssertionError: Using tensor model parallelism or context parallelism "
        "require setting the environment variable CUDA_DEVICE_MAX_CONNECTIONS to 1\n"
    )
    cc_block = SKELETON[SKELETON.index("CC=$(nvidia-smi"):SKELETON.index("MEGATRON_ARGS=(")]
    script = SKELETON.replace(cc_block, "").replace("--gpus-per-node=h100:8",
                                                    "--gpus-per-node=8")
    a = analyze(job(tmp_path, log, script))
    assert a.diagnosis.verdict.category == "cuda_device_max_connections"
    [adv] = advice(a)
    assert adv["rule"] == "max-connections" and adv["severity"] == "error"
    assert "the job's logs show NVIDIA H100 80GB HBM3" in str(adv["message"])
    assert adv["explains_verdict"] is True


def test_two_launchers_on_one_host_without_a_script(tmp_path: Path) -> None:
    log = (
        "1: torch.distributed.DistNetworkError: The server socket has failed to listen on any "
        "local network address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, "
        "message: address already in use\n"
        "srun: error: gpu-node-003: task 1: Exited with exit code 1\n"
        "srun: error: gpu-node-003: task 0: Exited with exit code 1\n"
    )
    a = analyze(job(tmp_path, log, None))
    [adv] = advice(a)
    assert adv["rule"] == "tasks-per-node" and adv["explains_verdict"] is True
    assert "srun tasks 0, 1 ran on the same host gpu-node-003" in str(adv["message"])
    # a stand-in script that disables the rule (the harness samples) keeps it quiet
    other = tmp_path / "b"
    other.mkdir()
    script = SKELETON.replace("--ntasks-per-node=1",
                              "--ntasks-per-node=2  # mcore-diagnose: disable=tasks-per-node")
    assert advice(analyze(job(other, log, script))) == []

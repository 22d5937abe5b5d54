"""Launch mistakes named from the logs' content (issue: the launch guide, finished).

The jobs are real recordings of ``harness/scenarios.py`` (``sample_logs/real/``): independent
worlds without srun labels, ``--nnodes`` below and above the allocation, MASTER_ADDR set per
node, the workers' output kept on a node-local ``--log-dir``. The restart from scratch after a
time limit is built from Megatron's and slurmstepd's exact formats (as in test_launch.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from analyzer.api import analyze
from tests.helpers import REAL, write_job


def _adv(a, rule: str) -> dict:
    [x] = [x.as_dict() for x in a.diagnosis.advisories if x.rule == rule]
    return x


def test_independent_worlds_without_labels_from_the_logs_alone(tmp_path: Path) -> None:
    src = REAL / "standalone-worlds-unlabelled"
    for f in src.glob("slurm-*.out"):
        shutil.copy(f, tmp_path / f.name)  # the logs without the batch script
    a = analyze(tmp_path, workers=1)
    assert a.diagnosis.verdict.category == "none"
    adv = _adv(a, "worker-group")
    assert "2 independent worlds of 2 ranks" in adv["message"]
    assert "every iteration printed 2 times" in adv["message"]
    assert "--standalone" in adv["fix"]


def test_a_single_world_is_no_independent_world() -> None:
    a = analyze(REAL / "clean-success", workers=1)
    assert not [x for x in a.diagnosis.advisories if "independent worlds" in x.message]


def test_nnodes_below_the_allocation_is_the_launch_mistake() -> None:
    a = analyze(REAL / "nnodes-one-per-node", workers=1)
    v = a.diagnosis.verdict
    adv = _adv(a, "worker-group")
    assert "--nnodes 1 on a 2-node allocation" in adv["message"]
    assert "node 0 trained alone (to iteration 10)" in adv["message"]
    assert v.cause.startswith("Launch mistake: the launcher was given --nnodes 1 on a 2-node")
    assert v.fix.startswith('--nnodes "$SLURM_NNODES" (here 2)')
    assert "MASTER_ADDR" not in v.fix and "MASTER_PORT" not in v.fix


def test_nnodes_above_the_allocation_is_the_launch_mistake() -> None:
    a = analyze(REAL / "nnodes-above-allocation", workers=1)
    v = a.diagnosis.verdict
    assert v.category == "rendezvous"
    adv = _adv(a, "worker-group")
    assert "--nnodes 3 on a 2-node allocation" in adv["message"]
    assert "waited for 3 nodes and only 2 came" in adv["message"]
    assert adv["explains_verdict"] and "(here 2)" in v.fix and "MASTER_PORT" not in v.fix


def test_master_addr_set_per_node() -> None:
    a = analyze(REAL / "master-addr-per-node", workers=1)
    v = a.diagnosis.verdict
    adv = _adv(a, "master-addr")
    assert "node 0: 127.0.0.1, node 1: 192.0.2.77" in adv["message"]
    assert "once in the sbatch script, before srun" in v.fix
    assert "is free" not in v.fix  # no "free port N" on a node that is not the store host


def test_worker_output_on_a_node_local_log_dir() -> None:
    a = analyze(REAL / "worker-logs-node-local", workers=1)
    v = a.diagnosis.verdict
    adv = _adv(a, "worker-output")
    assert "--log-dir $TMPDIR/torchrun-logs" in adv["message"]
    assert "node-local" in adv["message"] and adv["explains_verdict"]
    assert v.fix.startswith("Keep the workers' output: add --tee 3")
    assert "add a pattern" not in v.fix


def test_worker_output_advisory_needs_a_redirect() -> None:
    """A worker that exited 1 with its traceback in the log is no missing-output case."""
    a = analyze(REAL / "exception-cascade", workers=1)
    assert not [x for x in a.diagnosis.advisories if x.rule == "worker-output"]


def test_restart_from_scratch_leads_a_time_limit(tmp_path: Path) -> None:
    log = (
        " loading distributed checkpoint from /tmp/ckpt at iteration 0\n"
        "WARNING: could not find the metadata file /tmp/ckpt/latest_checkpointed_iteration.txt\n"
        "    will not load any checkpoints and will start from random\n"
        " [2026-12-02 17:10:00] iteration        1/    1000 | consumed samples:          256 |"
        " lm loss: 1.050000E+01 |\n"
        "slurmstepd: error: *** JOB 41 ON node001 CANCELLED AT 2026-12-02T19:10:52 DUE TO "
        "TIME LIMIT ***\n"
    )
    d = write_job(tmp_path / "job-41", {"slurm-41.out": log})
    v = analyze(d, workers=1).diagnosis.verdict
    assert v.category == "slurm_time_limit"
    assert v.cause.startswith("Launch mistake: Megatron found no checkpoint (/tmp/ckpt")
    assert v.fix.lower().startswith("check --load points at the directory --save wrote")
    assert "--time" in v.fix  # still there, after the advisory


def test_master_addr_a_node_set_to_its_own_host_name() -> None:
    """Node 1 reached for the store on its own host (``MASTER_ADDR=$(hostname)`` inside srun):
    the events as attribution builds them (the client-timeout line's ``store_host``)."""
    from analyzer.decide.launchlogs import master_addr_per_node
    from analyzer.model.event import from_flat

    row = from_flat({"file": "slurm-7.out", "line": 40, "node": "gpu-002", "node_index": 1,
                     "host": "gpu-002", "role": "symptom", "category": "rendezvous",
                     "store_host": "gpu-002", "port": "29500",
                     "text": "The client socket has timed out after 900s while trying to "
                             "connect to (gpu-002, 29500)."})
    found = master_addr_per_node([row])
    assert found is not None and found.rule == "master-addr"
    assert "node 1: gpu-002 (its own host name)" in found.message
    healthy = from_flat({**{k: v for k, v in row.values().items()}, "node_index": 0,
                         "node": "gpu-001", "host": "gpu-001", "store_host": "gpu-001"})
    assert master_addr_per_node([healthy]) is None


def test_two_launchers_per_node_is_one_instruction_without_a_port_check() -> None:
    """The lint's rewrite of the srun line opens a multi-line command (``bash -c '``): the
    advisory shows it as the start of that line, and the port the job's own second launcher
    holds is no port to free."""
    a = analyze(REAL / "two-agents-per-node", workers=1)
    adv = _adv(a, "tasks-per-node")
    assert adv["fix"].startswith("run one srun task (one launcher) per node: `srun ")
    assert adv["fix"].endswith("…`")
    [x] = [x for x in a.diagnosis.advisories if x.rule == "tasks-per-node"]
    assert {"port-free", "free-port"} <= x.drops


def test_a_rewritten_script_line_that_continues_is_shown_as_its_start() -> None:
    """The lint rewrites the torchrun line that ends in ``\\`` (the command goes on): the
    advisory shows it as the start of that line, never as a fix ending in a backslash."""
    a = analyze(REAL / "worker-logs-node-local", workers=1)
    adv = _adv(a, "node-local-path")
    assert adv["fix"].startswith("change the script's line to `--rdzv-id $SLURM_JOB_ID")
    assert adv["fix"].endswith("--redirects 3 …`")

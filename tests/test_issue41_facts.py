"""Issue 41, launch facts from any print: the same launch mistake recorded in another shape
(no srun label, per-task files, an env dump instead of echo lines, no batch script) gives the
same launch finding. The recordings are real jobs of the local SLURM cluster
(``sample_logs/real/<scenario>-<shape>``, ``python -m harness.record``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.decide.nodefacts import assignments, printed_facts
from analyzer.read.discover import discover
from tests.helpers import REAL, MakeJob


def _without_script(tmp_path: Path, name: str) -> Path:
    """A copy of a recorded job without its batch script (a directory alone)."""
    dest = tmp_path / name
    shutil.copytree(REAL / name, dest)
    (dest / "train.sbatch").unlink()
    return dest


def _advice(d: Path) -> dict[str, dict[str, object]]:
    return {str(x["rule"]): x for x in (a.as_dict() for a in analyze(d).diagnosis.advisories)}


def test_assignments_map_the_guides_variables_to_facts() -> None:
    # the line node 1 printed in sample_logs/real/master-addr-per-node-unlabelled
    said = assignments("MASTER_ADDR=192.0.2.77 MASTER_PORT=29353 NODE_RANK=1 NNODES=2 "
                       "GPUS_PER_NODE=2")
    assert said == {"master_addr": "192.0.2.77", "master_port": "29353", "node_rank": "1",
                    "nnodes": "2", "nproc_per_node": "2"}


def test_unlabelled_echo_lines_give_each_node_its_facts() -> None:
    rows = analyze(REAL / "master-addr-per-node-unlabelled").rows
    per = printed_facts(rows).per_node("master_addr")
    assert {n: v for n, (v, _) in per.items()} == {"0": "127.0.0.1", "1": "192.0.2.77"}


@pytest.mark.parametrize("name", ["master-addr-per-node", "master-addr-per-node-unlabelled"])
def test_master_addr_per_node_found_in_both_shapes(name: str) -> None:
    a = analyze(REAL / name)
    adv = _advice(REAL / name)
    assert "master-addr" in adv and adv["master-addr"]["explains_verdict"]
    assert "node 1: 192.0.2.77" in str(adv["master-addr"]["message"])
    assert a.diagnosis.verdict.cause.startswith("Launch mistake: the nodes used different")


def test_master_addr_per_node_unlabelled_without_the_script(tmp_path: Path) -> None:
    d = analyze(_without_script(tmp_path, "master-addr-per-node-unlabelled")).diagnosis
    assert d.verdict.cause.startswith("Launch mistake: the nodes used different MASTER_ADDRs")
    # the ports the nodes printed agree: no MASTER_PORT sentence
    assert "MASTER_PORT" not in (d.verdict.fix or "")


@pytest.mark.parametrize(("name", "told", "alloc"), [
    ("nnodes-one-per-node-unlabelled", 1, 2),
    ("nnodes-above-allocation-quiet", 3, 2),
])
def test_nnodes_against_the_nodes_that_printed_their_rank(
    tmp_path: Path, name: str, told: int, alloc: int
) -> None:
    """No script, no srun label, no torchrun INFO dump: the NNODES each task printed against
    the node ranks the tasks printed."""
    adv = _advice(_without_script(tmp_path, name))
    msg = str(adv["worker-group"]["message"])
    assert msg.startswith(f"the launcher was given --nnodes {told} on a {alloc}-node allocation")


def test_per_task_files_named_slurm_jobid_task_name_the_task(tmp_path: Path) -> None:
    files = discover([REAL / "bare-torchrun-no-torch-per-task"]).files
    tasks = {f.path.name: f.task for f in files}
    assert tasks["slurm-6-0.out"] == 0 and tasks["slurm-6-1.out"] == 1
    assert tasks["slurm-6.out"] is None


def test_per_task_files_give_the_node_of_the_failure() -> None:
    v = analyze(REAL / "bare-torchrun-no-torch-per-task").diagnosis.verdict
    assert v.category == "import_error" and "1" in {v.node, str(v.node_index)}


def test_raw_nodelist_counts_the_nodes_that_printed_it_without_labels() -> None:
    """Both tasks printed MASTER_ADDR=node[001-002]: 2 nodes, as the labelled recording says."""
    for name in ("master-addr-nodelist", "master-addr-nodelist-unlabelled"):
        msg = str(_advice(REAL / name)["master-addr"]["message"])
        assert "is the raw SLURM node list (on 2 node(s))" in msg, name


def test_worktree_missing_in_both_shapes_names_node_0() -> None:
    for name in ("worktree-not-shared", "worktree-not-shared-per-task"):
        msg = str(_advice(REAL / name)["node-local-path"]["message"])
        assert "is missing on node(s) 0:" in msg, name


def test_worktree_missing_without_labels_names_no_unknown_node(make_job: MakeJob) -> None:
    # synthetic: slurmstepd's chdir line as in sample_logs/real/worktree-not-shared, unlabelled
    # and without the host suffix, so that no line names its node
    line = ("slurmstepd: error: couldn't chdir to `/shared/jobs/x/Megatron-LM': No such file or "
            "directory: going to /tmp instead\n")
    msg = str(_advice(make_job({"slurm-7.out": line * 2}))["node-local-path"]["message"])
    assert "?" not in msg and "missing on the nodes (no srun label names them)" in msg


def test_ports_printed_per_node_that_differ_lead_the_verdict(tmp_path: Path) -> None:
    """wrong-master-port-env: each task's env dump shows its own MASTER_PORT."""
    for d in (REAL / "wrong-master-port-env", _without_script(tmp_path, "wrong-master-port-env")):
        v = analyze(d).diagnosis.verdict
        assert v.cause.startswith("Launch mistake: the nodes used different MASTER_PORTs "
                                  "(node 0: 26970, node 1: 26971)"), v.cause
        assert v.fix.startswith("Set MASTER_PORT once for the whole job")
        assert "MASTER_ADDR is the first host" not in v.fix

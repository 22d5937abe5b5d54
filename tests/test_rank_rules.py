"""Rank rules for logs from the wild: a single-node job's local rank is its global rank; an
error every rank raises alike names no rank. Lines are real ones (wild corpus, samples)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.api import analyze
from tests.helpers import write_job

SIGKILL = (
    "E0325 20:57:27.620000 2606 site-packages/torch/distributed/elastic/multiprocessing/api.py:"
    "869] failed (exitcode: -9) local_rank: 5 (pid: 2630) of binary: /root/miniconda3/bin/python"
)
WATCHDOG = (
    "[rank{r}]:[E311 12:06:03.789658919 ProcessGroupNCCL.cpp:713] [Rank {r}] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=18069, OpType=_REDUCE_SCATTER_BASE, "
    "NumelIn=125829120, NumelOut=15728640, Timeout(ms)=600000) ran for 600011 milliseconds "
    "before timing out."
)
NO_NCCL = "[rank{r}]: RuntimeError: Distributed package doesn't have NCCL built in"


def _verdict(tmp_path: Path, *lines: str):  # type: ignore[no-untyped-def]
    job = write_job(tmp_path / "job", {"output.log": "\n".join(lines) + "\n"})
    return analyze(job, workers=1).diagnosis.verdict


def test_single_node_local_rank_is_the_global_rank(tmp_path: Path) -> None:
    v = _verdict(tmp_path, SIGKILL)
    assert (v.category, v.rank, v.local_rank) == ("host_oom", 5, 5)
    assert v.rank_note and "assumed" in v.rank_note  # the verdict says it is an assumption


def test_an_srun_label_means_another_node_may_exist(tmp_path: Path) -> None:
    v = _verdict(tmp_path, "1: " + SIGKILL)
    assert v.rank != 5  # task 1 is node 1: local rank 5 is not global rank 5


def test_a_global_rank_beyond_the_local_ranks_means_several_nodes(tmp_path: Path) -> None:
    v = _verdict(tmp_path, WATCHDOG.format(r=13), SIGKILL)
    assert v.rank is None or v.rank != 5


def test_an_error_every_rank_raises_names_no_rank(tmp_path: Path) -> None:
    v = _verdict(tmp_path, NO_NCCL.format(r=0))
    assert (v.category, v.pattern_id) == ("config", "config.torch.backend_not_built")
    assert v.rank is None and v.rank_note and "alike" in v.rank_note


def test_a_uniform_error_keeps_its_rank_when_other_ranks_did_not_raise_it(
    tmp_path: Path,
) -> None:
    v = _verdict(tmp_path, NO_NCCL.format(r=3), WATCHDOG.format(r=1), WATCHDOG.format(r=2))
    assert (v.category, v.rank) == ("config", 3)


BARRIER = (
    "Waiting in store based barrier to initialize process group for rank: 0, key: "
    "store_based_barrier_key:1 (world_size=4, worker_count={n}, timeout=0:30:00)"
)


def test_more_workers_than_the_world_in_a_barrier_is_a_rendezvous_fault(tmp_path: Path) -> None:
    v = _verdict(tmp_path, BARRIER.format(n=8))
    assert (v.category, v.rank) == ("rendezvous", None)
    assert "8 workers" in v.cause and "MASTER_PORT" in v.fix


def test_a_barrier_still_filling_is_only_context(tmp_path: Path) -> None:
    v = _verdict(tmp_path, BARRIER.format(n=2))
    assert v.category == "none"


_SPAWN = """
import torch.multiprocessing as mp


def work(i):
    if i == 1:
        raise ValueError("shard 17 is corrupt")


if __name__ == "__main__":
    mp.spawn(work, nprocs=2)
"""


@pytest.mark.slow  # about 10 s on 2 cores
def test_mp_spawn_traceback_belongs_to_the_process_it_names(tmp_path: Path) -> None:
    """A real mp.spawn failure: "-- Process 1 terminated with the following error:" owns the
    traceback after it, so the exception is process 1's (rank 1 on a single node)."""
    import subprocess
    import sys

    pytest.importorskip("torch")
    script = tmp_path / "spawn.py"
    script.write_text(_SPAWN)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=180)
    assert "-- Process 1 terminated with the following error:" in out.stderr
    v = _verdict(tmp_path, *out.stderr.splitlines())
    assert (v.category, v.rank) == ("python_exception", 1)
    assert "shard 17 is corrupt" in v.cause


CLAIM = "initializing ddp: GLOBAL_RANK: {r}, MEMBER: {m}/8"


def test_one_global_rank_claimed_twice_is_a_rendezvous_fault(tmp_path: Path) -> None:
    lines = [CLAIM.format(r=r, m=r + 1) for r in range(4)] * 2  # two nodes claim ranks 0-3
    v = _verdict(tmp_path, *lines)
    assert v.category == "rendezvous" and "claimed twice" in v.cause


def test_each_rank_claimed_once_is_only_context(tmp_path: Path) -> None:
    v = _verdict(tmp_path, *[CLAIM.format(r=r, m=r + 1) for r in range(8)])
    assert v.category == "none"


def test_a_claim_repeated_in_another_file_is_not_a_duplicate(tmp_path: Path) -> None:
    """The same output saved twice (a tee'd copy) repeats every line in another file."""
    job = tmp_path / "job"
    job.mkdir()
    text = "\n".join(CLAIM.format(r=r, m=r + 1) for r in range(8)) + "\n"
    (job / "slurm-1.out").write_text(text)
    (job / "train.log").write_text(text)
    assert analyze(job, workers=1).diagnosis.verdict.category == "none"


NOT_FOUND = "FileNotFoundError: [Errno 2] No such file or directory: 'configs/app.yaml'"
FAILED = (
    "E0423 13:04:26.639000 6390 torch/distributed/elastic/multiprocessing/api.py:826] failed "
    "(exitcode: 1) local_rank: {lr} (pid: {pid}) of binary: /usr/bin/python"
)


def test_an_unranked_root_takes_the_rank_of_the_only_dead_worker(tmp_path: Path) -> None:
    v = _verdict(tmp_path, NOT_FOUND, FAILED.format(lr=2, pid=6409))
    assert (v.category, v.rank) == ("storage", 2)
    assert v.rank_note and "only worker" in v.rank_note


def test_two_dead_workers_leave_an_unranked_root_unranked(tmp_path: Path) -> None:
    v = _verdict(tmp_path, NOT_FOUND, FAILED.format(lr=0, pid=6409),
                 FAILED.format(lr=1, pid=6410))
    assert (v.category, v.rank) == ("storage", None)


def test_a_symptom_alone_names_no_rank(tmp_path: Path) -> None:
    """Horovod's shutdown echo on rank 1 (real line): rank 1 is a victim, not the culprit."""
    v = _verdict(tmp_path, "[1,1]<stderr>:RuntimeError: Horovod has been shut down. This was "
                 "caused by an exception on one of the ranks or an attempt to allreduce, "
                 "allgather or broadcast a tensor after one of the ranks finished execution.")
    assert (v.category, v.rank) == ("unknown", None)
    assert v.rank_note and "symptom" in v.rank_note


KILLING = (
    "[2023-07-04 17:31:27,755] [INFO] [launch.py:315:sigkill_handler] Killing subprocess {pid}"
)
OOM = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 978.00 MiB "
    "(GPU 0; 79.15 GiB total capacity; 77.36 GiB already allocated; 97.25 MiB free; 77.94 GiB "
    "reserved in total by PyTorch)"
)


def test_a_launcher_that_started_one_worker_makes_a_one_rank_job(tmp_path: Path) -> None:
    """DeepSpeed's teardown names every worker it started: one pid in all is a one-process
    job, whose failure is rank 0's."""
    v = _verdict(tmp_path, OOM, KILLING.format(pid=953850))
    assert (v.category, v.rank, v.rank_rule) == ("cuda_oom", 0, "only-rank")


def test_a_launcher_that_started_two_workers_names_no_rank_by_itself(tmp_path: Path) -> None:
    v = _verdict(tmp_path, OOM, KILLING.format(pid=27636), KILLING.format(pid=27637))
    assert (v.category, v.rank) == ("cuda_oom", None)

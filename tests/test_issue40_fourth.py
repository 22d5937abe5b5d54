"""Rules written for issue 40 before its fourth final batch, each for a class shown by real
logs of different projects already in the corpus (the verdict before the rule is in the
docstring). The logs are cut or left as they are, never written."""

from __future__ import annotations

from pathlib import Path

from analyzer.decide.certainty import certainty
from analyzer.decide.ids import Certainty, RankId
from tests.helpers import WILD, wild_analysis


def _cut(case: str, tmp_path: Path, keep: slice | None = None, drop: int | None = None) -> Path:
    """The case's log with only lines ``keep`` (a slice of 0-based lines) or without line
    ``drop`` (1-based): a shorter copy of the real log, nothing added."""
    lines = (WILD / case / "output.log").read_bytes().split(b"\n")
    if keep is not None:
        lines = lines[keep]
    if drop is not None:
        del lines[drop - 1]
    job = tmp_path / case
    job.mkdir()
    (job / "output.log").write_bytes(b"\n".join(lines))
    return job


# ---- a rank that is only possible stays possible when its number is also assumed ----------


def test_a_possible_rank_taken_from_a_local_rank_is_still_possible() -> None:
    """The weaker ground decides: lm-evaluation-harness's start-up TypeError behind a cut paste
    names local rank 0 from the agent's record (was ``assumed``, read as a wrong accusation)."""
    assert certainty(0, RankId.PASTE_CUT, assumed=True) == Certainty.POSSIBLE
    assert certainty(0, None, assumed=True) == Certainty.ASSUMED
    assert certainty(3, RankId.OWN_TRACEBACK, assumed=True) == Certainty.ASSUMED
    v = wild_analysis(
        "k-accelerate-lmeval-hflm-abstract-method-typeerror-all-ranks"
    ).diagnosis.verdict
    assert (v.rank, v.rank_certainty) == (0, "possible")


# ---- another rank's traceback above the named rank's error ---------------------------------


def test_a_traceback_of_another_rank_above_the_error_leaves_the_rank_possible() -> None:
    """torchtune: ``[rank0]: Traceback`` cut before its error line, then rank 1's watchdog CUDA
    error. Rank 0 failed too, perhaps first (was rank 1, ``certain``)."""
    v = wild_analysis(
        "k-tune-torchtune-pagedadamw-illegal-memory-access-rank0-rank1"
    ).diagnosis.verdict
    assert (v.category, v.rank, v.rank_certainty) == ("cuda_error", 1, "possible")
    assert v.rank_rule == RankId.EARLIER_TRACEBACK


def test_a_traceback_of_another_rank_below_the_error_orders_nothing() -> None:
    """torchtune's llama-guard run: rank 0's OOM, then rank 3's traceback begins below it:
    rank 0 stays certain."""
    v = wild_analysis("i-torchrun-torchtune-llamaguard-rank0-cuda-oom").diagnosis.verdict
    assert (v.category, v.rank, v.rank_certainty) == ("cuda_oom", 0, "certain")


# ---- a worker group restarted, then finished --------------------------------------------

FT = "k-ftlauncher-nemo-8gpu-simulated-crash-all-ranks-injob-restart-survived"


def test_a_group_restarted_that_then_finished_is_no_failure() -> None:
    """NVIDIA's ft_launcher restarts the group after every rank's injected exception; attempt 1
    finishes (`worker group successfully finished`): no failure, the crash is a note (was
    python_exception)."""
    d = wild_analysis(FT).diagnosis
    assert (d.status, d.verdict.category) == ("ok", "none")
    notes = [p for p in d.problems if "restarted the workers and attempt 1 finished" in p]
    assert any("Simulating a crash" in p or "Uncaught Exception" in p for p in notes)
    assert [a.category for a in d.attempts] == ["python_exception", "none"]


def test_a_group_restarted_that_did_not_finish_still_failed(tmp_path: Path) -> None:
    """The same log cut before the success lines: the restart alone proves nothing."""
    d = wild_analysis(_cut(FT, tmp_path, keep=slice(0, 300))).diagnosis
    assert (d.status, d.verdict.category) == ("failed", "python_exception")


def test_the_agents_success_line_is_read_in_every_form() -> None:
    """torch 1.x prints ``(SUCCEEDED)``, torch 2 and ft_launcher ``(WorkerState.SUCCEEDED)``;
    a restart line is no success."""
    from analyzer.lines.prefixes import split_prefixes
    from tests.helpers import builtin_catalog

    cat = builtin_catalog()
    for line, hit in [
        ("INFO:torch.distributed.elastic.agent.server.api:Local worker group finished "
         "(SUCCEEDED). Waiting 300 seconds for other agents to finish", True),
        ("[default] worker group successfully finished. Waiting 300 seconds for other agents "
         "to finish.", True),
        ("[default] Worker group FAILED. 3/3 attempts left; will restart worker group", False),
    ]:
        ids = [pm.pattern.id for pm in cat.match_all(split_prefixes(line).message)]
        assert ("torchelastic.ctx.group_succeeded" in ids) is hit, line


# ---- a crash as the processes exit after training finished ---------------------------------

TITAN = "j-torchrun-torchtitan-2gpu-abort-at-pg-destroy-after-training-done"
MLPERF = "k-srun-mlperf-llama70b-lora-16node-128rank-nccl-proxy-warns-at-exit-after-success"


def test_an_abort_at_exit_after_training_completed_is_no_failure() -> None:
    """torchtitan logs `Training completed`, then aborts while destroying the process group
    (SIGABRT, torchrun's ChildFailedError): the job did its work (was native_crash rank 1)."""
    d = wild_analysis(TITAN).diagnosis
    assert (d.status, d.verdict.category) == ("ok", "none")
    assert any(p.startswith("at exit, not the cause: terminate called") for p in d.problems)


def test_nccl_warnings_after_an_mlperf_success_are_no_failure() -> None:
    """NCCL's proxy warnings on every node after MLPerf's `run_stop` with `"status":
    "success"` (was nccl_error)."""
    d = wild_analysis(MLPERF).diagnosis
    assert (d.status, d.verdict.category) == ("ok", "none")


def test_without_the_finish_line_the_abort_is_the_failure(tmp_path: Path) -> None:
    """The torchtitan log without its `Training completed` line: the abort fails the job."""
    v = wild_analysis(_cut(TITAN, tmp_path, drop=5)).diagnosis.verdict
    assert (v.category, v.rank) == ("native_crash", 1)


def test_an_error_code_after_a_success_still_fails_the_job() -> None:
    """MXNet's MLPerf ResNet: `run_stop` success, then one process killed by SIGALRM (exit code
    142) and mpirun aborts: an exit with an error code is not a crash at exit."""
    v = wild_analysis(
        "k-mpirun-mxnet-resnet-16gpu-rank9-sigalrm-after-run-success"
    ).diagnosis.verdict
    assert (v.category, v.rank) == ("unknown", 9)


# ---- after the fourth batch's first run (tests/wild/README-l.md, "After the first run") -----


def test_rocm_out_of_memory_is_a_gpu_out_of_memory() -> None:
    """ROCm's torch prints `HIP out of memory. Tried to allocate …` (two AMD GPUs under mpirun,
    every rank alike): cuda_oom, no rank (was python_exception)."""
    v = wild_analysis("l-mpirun-2rank-amd-hip-deepspeed-init-all-ranks-hip-oom").diagnosis.verdict
    assert (v.category, v.rank) == ("cuda_oom", None)


def test_a_vllm_workers_prefix_names_its_rank() -> None:
    """vLLM's multiprocess executor prefixes its workers' lines like a Ray actor, with the rank
    in the name (`(VllmWorker rank=2 pid=10233) `)."""
    from analyzer.lines.prefixes import split_prefixes

    p = split_prefixes("(VllmWorker rank=2 pid=10233) ERROR 06-17 06:11:34 "
                       "[multiproc_executor.py:492] Traceback (most recent call last):")
    assert (p.rank, p.message[:5]) == (2, "ERROR")
    assert split_prefixes("(RayTrainWorker pid=242146) Process ForkServerProcess-2:").rank is None


RAY_OK = "l-ray-nemo-rl-vllm-8workers-inductor-cache-errors-survived"
MLPERF_HELPER = "l-srun-mlperf-nemo-lora-sysjson-step-error-run-succeeded"


def test_errors_before_a_ray_job_that_succeeded_were_survived(tmp_path: Path) -> None:
    """NeMo-RL's vLLM workers print TorchInductor cache errors, then `ray job submit` reports
    `Job '…' succeeded` (was storage, rank 0 certain). Cut before that line, they fail it."""
    d = wild_analysis(RAY_OK).diagnosis
    assert (d.status, d.verdict.category) == ("ok", "none")
    assert d.problems and all("survived error" in p for p in d.problems)
    assert wild_analysis(_cut(RAY_OK, tmp_path, keep=slice(0, 148))).diagnosis.status == "failed"


def test_a_task_exit_above_the_jobs_own_finish_was_not_its_end(tmp_path: Path) -> None:
    """An MLPerf run's helper srun step exits 1, then the training reports `run_stop` with
    `"status": "success"` (was unknown, task 0 possible). Without that line, the exit fails the
    job."""
    d = wild_analysis(MLPERF_HELPER).diagnosis
    assert (d.status, d.verdict.category) == ("ok", "none")
    assert any("task exited with a non-zero code" in p for p in d.problems)
    cut = wild_analysis(_cut(MLPERF_HELPER, tmp_path, drop=108)).diagnosis
    assert cut.status == "failed"


GLM = "l-torchrun-glm130b-8rank-pretokenized-key-assert-rootcause-rank7"


def test_undated_copies_above_the_launchers_stops_failed_alike(tmp_path: Path) -> None:
    """Six undated copies of GLM-130B's AssertionError, all above torchrun's SIGTERMs of seven
    workers, and one death record (rank 7): the ranks failed alike (was rank 7, ``likely``).
    Without the SIGTERM lines nothing says the copies are other workers'."""
    v = wild_analysis(GLM).diagnosis.verdict
    assert (v.category, v.rank, v.rank_rule) == ("python_exception", None, "same-way-unranked")
    lines = (WILD / GLM / "output.log").read_bytes().split(b"\n")
    job = tmp_path / "no-stops"
    job.mkdir()
    kept = [ln for ln in lines if b"closing signal SIGTERM" not in ln]
    (job / "output.log").write_bytes(b"\n".join(kept))
    assert wild_analysis(job).diagnosis.verdict.rank == 7


POLARIS = "l-mpiexec-polaris-aws-ofi-nccl-first-allgather-hang-all-ranks"


def test_an_excerpt_of_a_larger_communicator_names_no_missing_rank(tmp_path: Path) -> None:
    """ALCF's all-gather hang: three of the four ranks in view time out, and NCCL's init lines
    say `nranks 8`: four ranks are not in the excerpt, so rank 7 is not the one the others
    waited for (was rank 7, ``likely``). Without the lines that give the size, the four ranks in
    view are all the log knows, and the missing-rank strategy still names rank 7."""
    v = wild_analysis(POLARIS).diagnosis.verdict
    assert (v.category, v.rank) == ("collective_timeout", None)
    lines = (WILD / POLARIS / "output.log").read_bytes().split(b"\n")
    job = tmp_path / "no-sizes"
    job.mkdir()
    (job / "output.log").write_bytes(
        b"\n".join(ln for ln in lines if b"nranks 8" not in ln and b"nRanks 8" not in ln)
    )
    assert wild_analysis(job).diagnosis.verdict.rank == 7

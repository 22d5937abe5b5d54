"""Rules written for issue 40 after its eleventh final batch's first run (part R), each for a
class the batch's misses showed (the verdict before each rule is in its test's docstring).
Logs are the corpus's own; no line is written here."""

from __future__ import annotations

from analyzer.decide.promote import promote
from tests.helpers import wild_analysis

MESH = "r-srun-4gpu-mesh-tf-nbody-benchmark"
NCCL_TESTS = "k-srun-nccltests-512rank-task159-uncorrectable-ecc"
UIE = "r-other-paddle-2rank-windows-uie-finetune-run"
PRENET = "q-paddle-launch-prenet-2proc-colab-workerlogs"
DOLLY = "r-notstated-dolly-2epoch-finetune"
RAY_TUNE = "r-ray-tune-torchtrainer-fractional-gpu-prepare-model"
SIGINT_ZERO3 = "l-deepspeed-1node-2gpu-zero3-sigint-interrupted"
SIGINT_DPO = "n-deepspeed-6gpu-miniphi3-dpo-zero2"
SIGHUP_INTERNVIT = "r-torchrun-4gpu-pipeline-internvit-run"
SIGTERM_OLMO = "p-torchrun-8gpu-olmo-20m-ddp-train"
RTDETR_SSDD = "r-other-paddle-launch-2gpu-rtdetr-ssdd-workerlogs"
MPICH = "r-srun-2rank-mpich-gpudirect-send-loop"


def test_the_tasks_srun_terminates_after_a_tasks_own_exit_are_its_victims() -> None:
    """`task 3: Exited with exit code 255`, `Terminating job step`, `tasks 0-2: Terminated`:
    the exit is the earliest sign and names task 3 (the Terminated record's stronger category
    made it the evidence, with no rank)."""
    a = wild_analysis(MESH)
    v = a.diagnosis.verdict
    assert (v.category, v.rank, v.rank_certainty) == ("unknown", 3, "possible")
    assert v.pattern_id == "slurm.task.exit_code"
    terminated = [r for r in promote(a.rows) if r.pattern_id == "slurm.task.terminated"]
    assert terminated and all(r.role == "context" for r in terminated)


def test_terminated_records_below_a_tasks_own_exit_leave_its_cause_the_verdict() -> None:
    """In the nccl-tests run on Alps every Terminated record follows task 159's exit: all
    become context, and the verdict keeps task 159's own cause and rank."""
    a = wild_analysis(NCCL_TESTS)
    rows = promote(a.rows)
    exit_line = min(r.line for r in rows if r.pattern_id == "slurm.task.exit_code")
    terminated = [r for r in rows if r.pattern_id == "slurm.task.terminated"]
    assert terminated and all(r.line > exit_line and r.role == "context" for r in terminated)
    assert a.diagnosis.verdict.rank == 159


def test_paddles_unusable_gpu_place_is_a_cuda_error_of_its_rank() -> None:
    """`Invalid CUDAPlace(1), must inside [0, 1)` in rank 1's workerlog (the tool read rank 0's
    AttributeError on NCCLParallelContext as an import error) and `Place CUDAPlace(0) is not
    supported` in PReNet's workerlog.1 (a Python exception)."""
    for case in (UIE, PRENET):
        v = wild_analysis(case).diagnosis.verdict
        assert (v.category, v.rank) == ("cuda_error", 1), case
        assert v.pattern_id == "cuda.paddle.place_unavailable"


def test_a_trainer_checkpoint_file_gone_during_rotation_is_a_checkpoint_failure() -> None:
    """`FileNotFoundError: ... 'rng_state_3.pth'` under `shutil.rmtree(checkpoint)`: a Trainer
    checkpoint's own file (it was read as a missing data file, storage)."""
    v = wild_analysis(DOLLY).diagnosis.verdict
    assert v.category == "checkpoint"
    assert v.pattern_id == "megatron.ckpt.missing_file"


def test_an_nccl_exception_cut_after_its_first_word_is_the_wrapped_failure() -> None:
    """A Ray Tune worker's `RuntimeError: NCCL` (cut) under `RayTaskError(RuntimeError)`
    headers: the wrapped exception is NCCL's, and the wrappers become symptoms (the tool
    read the outer wrapper as a Python exception)."""
    a = wild_analysis(RAY_TUNE)
    v = a.diagnosis.verdict
    assert (v.category, v.pattern_id) == ("nccl_error", "nccl.error.cut_message")
    wrappers = [r for r in promote(a.rows) if r.pattern_id == "ray.task_error.wrapped"]
    assert wrappers and all(r.role == "symptom" for r in wrappers)


def test_a_launcher_interrupted_by_a_person_is_a_cancellation() -> None:
    """DeepSpeed's `Main process received SIGINT, exiting` (two runs) and torchrun's
    `Received 1 death signal` / `got signal: 1` (SIGHUP) with no failure before them: a person
    stopped the job (all three were `unknown`)."""
    for case in (SIGINT_ZERO3, SIGINT_DPO, SIGHUP_INTERNVIT):
        v = wild_analysis(case).diagnosis.verdict
        assert (v.category, v.pattern_id) == (
            "slurm_cancelled",
            "torchelastic.launcher_interrupted",
        ), case


def test_a_hangup_during_a_sigterm_shutdown_is_no_persons_stop() -> None:
    """OLMo's agent got SIGTERM (`Received 15 death signal`) and later `got signal: 1` while
    shutting down: the SIGHUP belongs to that shutdown and stays a symptom (the verdict stays
    `unknown`, as labelled)."""
    a = wild_analysis(SIGTERM_OLMO)
    assert a.diagnosis.verdict.category == "unknown"
    interrupts = [r for r in promote(a.rows) if r.tagged("launcher-interrupt")]
    assert interrupts and all(r.role == "symptom" for r in interrupts)


def test_a_dataloader_worker_stopped_by_sigterm_is_no_cause() -> None:
    """PaddleDetection's last launch: the launcher's SIGTERM, then `DataLoader process ... is
    killed by signal: Terminated` in a traceback through paddle.save (read as a checkpoint
    failure of rank 0, `assumed`; the label names no rank)."""
    v = wild_analysis(RTDETR_SSDD).diagnosis.verdict
    assert v.category == "unknown"
    assert v.rank_certainty in (None, "possible")


def test_the_bare_cuda_code_2_is_an_allocation_failure() -> None:
    """`CUDA error: 2` (cudaErrorMemoryAllocation) in an MPI GPUDirect loop: out of GPU memory
    (it was another CUDA error)."""
    v = wild_analysis(MPICH).diagnosis.verdict
    assert (v.category, v.pattern_id) == ("cuda_oom", "memory.cuda.cuda_error_oom")


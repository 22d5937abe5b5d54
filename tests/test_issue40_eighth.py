"""Rules written for issue 40 before its eighth final batch, from part N's open classes (the
verdict before each rule is in its test's docstring). Logs are the corpus's own, cut where a
test needs a shorter one; no line is written here."""

from __future__ import annotations

from tests.helpers import WILD, MakeJob, edited_verdict, wild_analysis

SIMPLETUNER_HANG = "n-accelerate-deepspeed-simpletuner-validation"
QWEN3 = "k-torchrun-torchtitan-qwen3-14b-8gpu-rank6-sigabrt-near-oom-others-sigterm"
MINDSPEED = "m-unknown-mindspeed-mm-npu-rank0-tokenizing-rank5-rank7-hccl-allreduce-timeout"
TPU = "n-ray-verl-tpu-ppo-single-worker"


def test_a_sigabrt_record_alone_is_a_possible_rank() -> None:
    """torchrun's table names rank 1, exit -6, no other failure and no line of the worker's:
    was rank 1 (`certain`), a waiter the watchdog aborted after a validation hang."""
    v = wild_analysis(SIMPLETUNER_HANG).diagnosis.verdict
    assert (v.rank, v.rank_rule, v.rank_certainty) == (1, "first-observed", "possible")


def test_a_sigabrt_the_launcher_singled_out_keeps_its_rank() -> None:
    """torchtitan: rank 6 aborts and torchrun SIGTERMs the others: singled out, so the rank
    is not lowered to `possible`."""
    v = wild_analysis(QWEN3).diagnosis.verdict
    assert v.rank == 6
    assert v.rank_certainty != "possible"


def test_a_sigabrt_record_cut_from_its_launcher_lines(make_job: MakeJob) -> None:
    """The same table with another exit code (-6 replaced by 1, the line otherwise as printed)
    keeps the rank the launcher reports: the rule is about SIGABRT, not about every table."""
    v = edited_verdict(
        make_job, SIMPLETUNER_HANG,
        ("exitcode  : -6 (pid: 540118)", "exitcode  : 1 (pid: 540118)"),
        ("traceback : Signal 6 (SIGABRT) received by PID 540118",
         "traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"),
    )
    assert v.rank == 1
    assert v.rank_certainty != "possible"


def test_hccl_watchdog_timeouts_are_collective_timeouts() -> None:
    """torch_npu's watchdog prints NCCL's line with ``WorkHCCL``: was `nccl_error` from the
    teardown line that follows it."""
    v = wild_analysis(MINDSPEED).diagnosis.verdict
    assert (v.category, v.pattern_id) == ("collective_timeout", "nccl.watchdog.timeout")


def test_xla_hbm_exhaustion_is_device_oom() -> None:
    """A TPU critic update under Ray fails with XLA's ``Ran out of memory in memory space
    hbm``: was a plain Python exception."""
    v = wild_analysis(TPU).diagnosis.verdict
    assert (v.category, v.pattern_id) == ("cuda_oom", "memory.xla.hbm_oom")


# -- After the eighth final batch's first run (part O, tests/wild/README-o.md) ---------------

FAR_RUN = "o-torchrun-far-t2i-eval-4gpu-run"
FAR_SWEEP = "o-torchrun-far-t2i-eval-4gpu-sweep"
DSCHAT_CTRL_C = "o-deepspeed-dschat-step1-opt-1gpu"
SIGN_CTRL_C = "m-torchrun-2rank-ddp-sign-language-user-ctrl-c-sigint-keyboardinterrupt"
LEONARDO_OOM = "o-mpirun-leonardo-4node-16rank-tracking-inference"
LEONARDO_IB = "o-mpirun-leonardo-4node-16rank-classification"
OPENCLIP = "o-srun-openclip-4node-16task-epoch"


def test_nccls_info_line_about_a_missing_plugin_is_no_failure() -> None:
    """NCCL 2.10's ``NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file …``
    at INFO: was `import_error` (a near miss of the shared-object pattern) over every rank's
    TypeError."""
    v = wild_analysis(FAR_RUN).diagnosis.verdict
    assert v.category == "python_exception"
    assert "libnccl-net.so" not in (v.cause or "")


def test_a_keyboard_interrupt_is_a_person_stopping_the_job() -> None:
    """KeyboardInterrupt tracebacks after the launcher got SIGINT: were a Python exception
    (DeepSpeed-Chat's on rank 0, `certain`)."""
    # Since part R the launcher's own line about the SIGINT it got (DeepSpeed's "Main process
    # received SIGINT", torchrun's "Received 2 death signal") makes the verdict; the workers'
    # KeyboardInterrupt tracebacks are still read as the same stop.
    for case in (DSCHAT_CTRL_C, SIGN_CTRL_C):
        a = wild_analysis(case)
        v = a.diagnosis.verdict
        assert (v.category, v.pattern_id, v.rank) == (
            "slurm_cancelled", "torchelastic.launcher_interrupted", None), case
        interrupts = [r for r in a.rows if r.pattern_id == "python.signal.keyboard_interrupt"]
        assert interrupts and all(r.category == "slurm_cancelled" for r in interrupts), case


def test_an_earlier_failure_outweighs_a_later_interrupt() -> None:
    """A sweep whose first runs fail alike and whose last runs the user stopped with Ctrl-C:
    the failure, not the interrupt."""
    v = wild_analysis(FAR_SWEEP).diagnosis.verdict
    assert v.category == "python_exception"


def test_mpiruns_first_exit_over_copies_of_one_error_names_no_rank() -> None:
    """Sixteen interleaved copies of one OOM and mpirun's ``The first process to do so was``
    rank 8: was rank 8 (`certain`). mpirun names the first exit and stops the rest silently."""
    v = wild_analysis(LEONARDO_OOM).diagnosis.verdict
    assert (v.category, v.rank, v.rank_rule) == ("cuda_oom", None, "same-way-unranked")


def test_mpiruns_record_of_a_sigabrt_alone_is_a_possible_rank() -> None:
    """``exited on signal 6 (Aborted)`` for rank 14 after an IB completion error from a peer:
    was rank 14 (`certain`); the watchdog aborts waiters."""
    v = wild_analysis(LEONARDO_IB).diagnosis.verdict
    assert (v.rank, v.rank_certainty) == (14, "possible")


def test_slurmstepds_chdir_line_under_a_task_label_names_no_rank() -> None:
    """slurmstepd writes its chdir error into one task's stream: the label names the stream,
    so the line is no rank's (as its oom_kill lines)."""
    ev = wild_analysis(OPENCLIP).events
    chdir = ev.filter(ev["pattern_id"] == "launch.slurmstepd.chdir_failed")
    assert chdir.height > 0
    assert chdir["rank"].null_count() == chdir.height


LLAVA = "n-deepspeed-2gpu-llava-qwen2-appended-runs"
RING_SWEEP = "k-torchrun-2gpu-ring-attn-rank0-negative-dim-runtimeerror-rank1-watchdog-sigabrt"
TWO_NODES = "i-torchrun-2node-rank12-invalid-device-ordinal-global-rank"


def test_a_failure_above_a_later_launch_is_an_earlier_runs() -> None:
    """Two DeepSpeed runs appended in one file: the first failed to bind its port, the second
    trained and was killed. Was the first run's EADDRINUSE (rendezvous, rank 0)."""
    a = wild_analysis(LLAVA)
    v = a.diagnosis.verdict
    assert v.category == "host_oom"
    assert any("earlier run" in n for n in a.diagnosis.problems)


def test_the_first_run_alone_keeps_its_failure(make_job: MakeJob) -> None:
    """The same file cut before its second launch: the bind failure is the verdict again."""
    lines = (WILD / LLAVA / "output.log").read_text(encoding="utf-8").splitlines(keepends=True)
    second = [i for i, ln in enumerate(lines) if "WORLD INFO DICT" in ln][1]
    job = make_job({"output.log": "".join(lines[:second - 3])})
    from analyzer.api import analyze

    v = analyze([job / "output.log"]).diagnosis.verdict
    assert v.category == "rendezvous"


def test_a_sweep_cut_as_its_next_launch_starts_keeps_the_failure() -> None:
    """A benchmark script runs torchrun once per configuration; the file ends as the next one
    starts: the last run shows nothing, so the first run's failure stays the verdict."""
    v = wild_analysis(RING_SWEEP).diagnosis.verdict
    assert (v.category, v.rank) == ("python_exception", 0)


def test_two_nodes_blocks_in_one_file_are_no_relaunch() -> None:
    """Two nodes' torchrun output pasted one after the other: the second block's banner is
    earlier in time than the first block's failure, so nothing is an earlier run's."""
    v = wild_analysis(TWO_NODES).diagnosis.verdict
    assert v.category == "cuda_error"


NPU_DOCS = "o-notstated-npu-multicard-allreduce-docs"
SPECULATORS = "o-torchrun-speculators-4npu-dspark-train"


def test_hccls_notify_wait_timeout_is_a_collective_timeout() -> None:
    """CANN's EI0002 on an AllReduce with HCCL's heartbeat-loss report: was `none`, a failed
    log called no failure."""
    v = wild_analysis(NPU_DOCS).diagnosis.verdict
    assert (v.category, v.pattern_id) == ("collective_timeout", "nccl.hccl.notify_wait_timeout")


def test_torchruns_sigkill_after_its_sigterms_is_no_host_oom() -> None:
    """Ranks 3 and 1 exit 1; 31 s later torchrun's table shows rank 2 SIGTERM and rank 0
    SIGKILL at one second: was host OOM on rank 0 (`certain`)."""
    a = wild_analysis(SPECULATORS)
    v = a.diagnosis.verdict
    assert v.category == "unknown"
    assert v.rank != 0


def test_a_sigkill_with_no_sigterm_beside_it_stays_a_kill(make_job: MakeJob) -> None:
    """The same table with rank 2's SIGTERM entry turned into a second SIGKILL (codes only):
    no stop by the launcher at that second, so the kills keep their reading."""
    v = edited_verdict(
        make_job, SPECULATORS,
        ("exitcode  : -15 (pid: 14691)", "exitcode  : -9 (pid: 14691)"),
        ("Signal 15 (SIGTERM) received by PID 14691", "Signal 9 (SIGKILL) received by PID 14691"),
    )
    assert v.category == "host_oom"


BLIP2 = "o-torchrun-slurm-blip2-adalink-t5-rank4-job"


def test_a_jobs_e_stream_is_read_from_its_directory() -> None:
    """``#SBATCH -e test_ada_t5_v2.e`` beside an empty ``.out``: the directory had no log file
    (exit 3, and a many-job ``events`` run stopped on it)."""
    from analyzer.read.discover import discover

    found = [f.rel for f in discover([WILD / BLIP2]).files]
    assert any(rel.endswith("test_ada_t5_v2.e") for rel in found)

"""Rules written for issue 40 before its ninth final batch, from the open classes of the
corpus (the verdict before each rule is in its test's docstring). Logs are the corpus's own,
cut or edited where a test needs another shape; no line is written here."""

from __future__ import annotations

from analyzer.decide.verdict import Verdict
from tests.helpers import WILD, MakeJob, edited_verdict, wild_analysis

XTUNER = "o-torchrun-xtuner-llama3-8b-sft-4090x4"
SPECULATORS = "o-torchrun-speculators-4npu-dspark-train"
NANOGPT_AMD = "n-torchrun-modded-nanogpt-8gpu-amd-run"
SALIENCE = "o-accelerate-multigpu-salience-detr-issue"
BOOTSTRAP_REFUSED = "i-srun-2node-rank1-nccl-bootstrap-connection-refused"
GCN_GLOO = "o-mp-spawn-gcn-4proc-gloo-readme"
DOLLY = "o-accelerate-2gpu-dolly-pythia12b-readme"
LMM_R1 = "o-ray-lmm-r1-ppo-training"
AURORA = "m-other-aurora-ds-to-universal-dp768-checkpoint-narrow-negative-length"


def _rows(case: str) -> list[tuple[int, str, int | None]]:
    """(line, pattern, rank) of a wild case's events."""
    return [(r.line, r.pattern_id, r.rank) for r in wild_analysis(case).rows]


def test_a_cut_traceback_does_not_swallow_torchruns_table() -> None:
    """xtuner's worker traceback is cut inside a frame line, and torchrun's table follows: the
    table's rank-3 row was read as traceback lines, so rank 0's Root Cause entry looked like the
    only death (rank 0, `certain`). Both ranks exited 1 in the same second."""
    rows = _rows(XTUNER)
    assert (23, "torchelastic.childfailed.rank", 3) in rows
    v = wild_analysis(XTUNER).diagnosis.verdict
    assert v.rank is None


def test_a_traceback_ends_at_a_table_field_only() -> None:
    """Lines of the xtuner log: the table's fields end an open traceback; its frames and their
    source lines (a field-like word at four spaces included) belong to it."""
    from analyzer.read.tracebacks import Traceback, belongs

    tb = Traceback((0, None, 3), "Traceback (most recent call last):")  # type: ignore[arg-type]
    lines = (WILD / XTUNER / "output.log").read_text(encoding="utf-8").splitlines()
    assert belongs(tb, lines[15]) is not None  # '  File ".../loops.py", line 32, in __init__'
    assert belongs(tb, lines[16]) is not None  # '    dataloader = runner.build_dataloader('
    assert belongs(tb, "    " + lines[22].lstrip()) is not None
    for field in lines[20:26]:  # '  time      : …' … '  traceback : To enable …'
        assert belongs(tb, field) is None, field


def test_a_root_cause_entry_cut_before_its_exit_code_is_a_death() -> None:
    """The speculators table ends inside its Root Cause entry (rank 1, no exit code line): rank
    3's exit 1 in the same second was the only death in view (rank 3, `certain`)."""
    v = wild_analysis(SPECULATORS).diagnosis.verdict
    assert v.category == "unknown"
    assert (v.rank, v.rank_rule) == (None, "died-together")


def test_a_whole_table_keeps_its_one_death(make_job: MakeJob) -> None:
    """The same table with rank 3's failure given torchrun's SIGTERM code instead: rank 1's
    entry is then the one death, cut or not, and nothing says it died together with another."""
    v = edited_verdict(
        make_job, SPECULATORS, ("exitcode  : 1 (pid: 14692)", "exitcode  : -15 (pid: 14692)")
    )
    assert v.rank_rule != "died-together"


def test_fewer_sigterms_than_workers_is_no_singling_out() -> None:
    """torchrun SIGTERMed one process, then recorded local rank 5's exit, on 8 GPUs: the
    others had exited before it looked (was rank 5, `assumed`)."""
    v = wild_analysis(NANOGPT_AMD).diagnosis.verdict
    assert (v.rank, v.rank_certainty) == (5, "possible")
    v = wild_analysis(SALIENCE).diagnosis.verdict
    assert (v.rank, v.rank_certainty) == (2, "possible")


def test_a_sigterm_for_each_other_worker_still_singles_out(make_job: MakeJob) -> None:
    """Salience-DETR's record is local rank 2 with one SIGTERM: as local rank 1 (two workers,
    one stopped) the launcher stopped every other worker, and the rank is no longer only
    `possible`."""
    v = edited_verdict(
        make_job, SALIENCE, ("local_rank: 2 (pid: 5939)", "local_rank: 1 (pid: 5939)")
    )
    assert v.rank == 1
    assert v.rank_certainty != "possible"


def test_a_refused_connection_names_its_reporter_only_as_possible() -> None:
    """NCCL's bootstrap refused on rank 1 of a 2-node job and gloo's refused connect on rank 1
    (labels: no rank) were `certain` / `assumed`."""
    for case in (BOOTSTRAP_REFUSED, GCN_GLOO):
        v = wild_analysis(case).diagnosis.verdict
        assert (v.rank, v.rank_rule, v.rank_certainty) == (1, "link-end", "possible"), case


def test_bitsandbytes_advice_is_no_cuda_error() -> None:
    """bitsandbytes' start-up advice names `CUDA error: invalid device function`, an error it
    did not hit: the Dolly run's OOM 45 s later was called `cuda_error`."""
    v = wild_analysis(DOLLY).diagnosis.verdict
    assert v.category == "cuda_oom"


def test_vllm_allocator_oom_is_device_oom() -> None:
    """vLLM's sleep-mode allocator prints ``CUDA Error: out of memory at …cumem_allocator.cpp``:
    was a plain Python exception."""
    v = wild_analysis(LMM_R1).diagnosis.verdict
    assert (v.category, v.pattern_id) == ("cuda_oom", "memory.cuda.cuda_error_oom")


def test_deepspeeds_checkpoint_package_frames_are_checkpoint_work() -> None:
    """ds_to_universal's ``narrow(): length must be non-negative`` under deepspeed/checkpoint/
    was a plain Python exception."""
    v = wild_analysis(AURORA).diagnosis.verdict
    assert v.category == "checkpoint"


# -- After the ninth final batch's first run (part P, tests/wild/README-p.md) ----------------

SPECSOT = "p-other-3rank-specsot-zmq-p2p-inference"
QWEN3_RANKS = "p-other-3rank-qwen3-sp-pp-inference-logs"
MESHRCNN = "p-mp-spawn-detectron2-meshrcnn-4gpu-pix3d"
FCCLIP = "p-mp-spawn-detectron2-fcclip-2gpu-landdiscover"
PADDLE_DB = "p-other-paddle-launch-4gpu-ppocr-det-db-train"
RTDETR = "p-other-paddle-launch-4gpu-rtdetr-ppdet-train"
COSYVOICE = "p-notstated-8gpu-cosyvoice2-flow-sft"
CHEM_CTRL_C = "p-torchrun-3gpu-ddp-chem-transformer-epoch39"
ICEFALL = "p-mp-spawn-2gpu-icefall-zipformer-ddp-start"
HOROVOD_BENCH = "p-mpirun-horovod-tf2-8gpu-k8s-synthetic-bench"
ASCEND = "p-other-mindspore-4node-32rank-ascend-run"
ATMOREP = "p-torchrun-atmorep-jureca-4proc-launch"
F5TTS = "p-accelerate-kaggle-2gpu-f5tts-finetune"


def _verdict_of(case: str) -> Verdict:
    return wild_analysis(case).diagnosis.verdict


def test_per_rank_file_names_give_the_rank() -> None:
    """``rank_0.log`` … ``rank_2.log`` (and ``rank0.log`` …): the names of a set of per-rank
    files were read as nothing (no rank named)."""
    v = _verdict_of(SPECSOT)
    assert (v.rank, v.rank_certainty, v.rank_basis) == (
        1, "certain", {"kind": "own-file", "claim": "rank-file-name"}
    )
    assert _verdict_of(QWEN3_RANKS).rank == 0


def test_a_lone_rank_in_a_file_name_is_no_claim(make_job: MakeJob) -> None:
    """The same rank 1 log alone, named ``run_rank1.log`` (a job's name may hold a LoRA rank):
    no set of per-rank files, so its name names no rank."""
    from analyzer.api import analyze

    text = (WILD / SPECSOT / "rank_1.log").read_text(encoding="utf-8")
    job = make_job({"run_rank1.log": text})
    v = analyze([job]).diagnosis.verdict
    assert v.rank_basis != {"kind": "own-file", "claim": "rank-file-name"}


def test_detectron2_rank_logs_are_read_and_named() -> None:
    """detectron2 writes rank N to ``log.txt.rankN`` beside rank 0's ``log.txt``: those files
    were skipped (not a log name), so Mesh R-CNN's NaN loss on rank 2 was `none`; detectron2's
    FloatingPointError is a NaN loss, and its metric line is progress (FC-CLIP's last launch,
    appended to both files, failed on rank 1 alone)."""
    v = _verdict_of(MESHRCNN)
    assert (v.category, v.rank, v.pattern_id) == (
        "nan_loss", 2, "training.loss.detectron2_nonfinite"
    )
    v = _verdict_of(FCCLIP)
    assert (v.category, v.rank) == ("cuda_oom", 1)


def test_paddle_workerlogs_are_read_with_their_local_rank() -> None:
    """PaddlePaddle's ``workerlog.N`` files were skipped: a directory of them had no log."""
    a = wild_analysis(WILD / PADDLE_DB)
    assert [(f.rel, f.local_rank) for f in a.discovery.files] == [
        (f"workerlog.{n}", n) for n in range(4)
    ]


def test_paddles_stop_report_is_no_exception_and_its_abort_follows_an_error() -> None:
    """PaddlePaddle's ``FatalError: `Termination signal` …`` (a SIGTERM from the launcher) was
    read as an uncaught exception on every rank; its ``Process abort signal`` after a CUDA error
    is that error's end."""
    v = _verdict_of(RTDETR)
    assert (v.category, v.rank) == ("cuda_error", 0)


def test_peers_naming_the_monitored_barriers_coordinator_unseen_is_possible() -> None:
    """gloo's waiting ranks all "check rank 0 logs": with no line of rank 0 in view, rank 0
    is only possible (was a cut traceback of rank 1 in ``dist.barrier()``, `likely`)."""
    v = _verdict_of(COSYVOICE)
    assert (v.category, v.rank, v.rank_certainty) == ("collective_timeout", 0, "possible")


def test_errors_after_an_interrupt_are_its_teardown() -> None:
    """Every rank's KeyboardInterrupt, then rank 0's pin-memory thread's ConnectionResetError:
    was that error, rank 0, `certain`."""
    v = _verdict_of(CHEM_CTRL_C)
    assert (v.category, v.rank) == ("slurm_cancelled", None)


def test_a_cut_process_exited_record_is_a_death_of_unknown_cause() -> None:
    """``ProcessExitedException: process 1 terminated with`` (cut): was a plain Python
    exception with no rank."""
    v = _verdict_of(ICEFALL)
    assert (v.category, v.rank, v.rank_certainty) == ("unknown", 1, "possible")


def test_optional_libraries_and_ib_probes_are_not_failures() -> None:
    """TensorFlow's W-level ``Could not load dynamic library 'libnvinfer.so.6'`` and NCCL's
    ``Call to ibv_open_device failed`` before its socket fallback: the benchmark finished."""
    assert _verdict_of(HOROVOD_BENCH).category == "none"


def test_ascends_event_wait_timeout_is_a_collective_timeout() -> None:
    """A forum excerpt of Ascend's EE9999 event wait timeouts was called `none`."""
    assert _verdict_of(ASCEND).category == "collective_timeout"


def test_the_containers_compat_cleanup_on_a_read_only_image_is_no_storage_fault() -> None:
    """NVIDIA's container entrypoint failing to remove /usr/local/cuda/compat/lib on a read-only
    image was the verdict (`storage`); the launch's missing script is the failure."""
    v = _verdict_of(ATMOREP)
    assert v.pattern_id == "launch.python.cant_open_file"


def test_kaggles_log_columns_are_peeled() -> None:
    """Kaggle's export puts ``704.7s\\t1290\\t`` before each line: rank 0's ``[rank0]:``
    prefix then stayed inside the message."""
    rows = wild_analysis(F5TTS).rows
    assert any(
        r.pattern_id == "storage.torch_save_write_failed" and r.rank == 0 for r in rows
    )


def test_a_ray_workers_unexplained_exit_is_a_failure() -> None:
    """Ray's ``Worker exits unexpectedly. Worker exits with an exit code None`` for a Ray Train
    actor: the failed job was called `none`."""
    v = _verdict_of("p-ray-train-worker-efa-actor-died")
    assert (v.category, v.pattern_id) == ("unknown", "ray.worker.died_exit_code")

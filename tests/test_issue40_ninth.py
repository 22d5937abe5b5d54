"""Rules written for issue 40 before its ninth final batch, from the open classes of the
corpus (the verdict before each rule is in its test's docstring). Logs are the corpus's own,
cut or edited where a test needs another shape; no line is written here."""

from __future__ import annotations

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

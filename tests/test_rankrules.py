"""Rank rules of ``analyzer/decide/rank_rules.py`` and the patterns they read, on real lines.

The end-to-end tests go through ``decide/reason.py``, which calls these rules."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from analyzer.api import analyze
from analyzer.decide.rank_rules import (
    bar_of,
    bar_went_on,
    detail_rows,
    headless,
    reporting_ranks,
    uniform_by_detail,
)
from analyzer.model.event import Event

NCCL_ENV = [  # tests/wild/b-lightning-slurm-rocm-invalid-device-pointer (RCCL under Lightning)
    "[rank7]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled cuda error, NCCL version 2.17.1",  # noqa: E501
    "[rank7]: ncclUnhandledCudaError: Call to CUDA function failed.",
    "[rank7]: Last error:",
    "[rank7]: Cuda failure 'invalid device pointer' ",
]

HOROVOD = [  # tests/wild/b-horovod-uniter-shutdown-after-oom (horovodrun -np 2 over mpirun)
    "[1,1]<stderr>:RuntimeError: Horovod has been shut down. This was caused by an exception on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor after one of the ranks finished execution. If the shutdown was caused by an exception, you should see the exception in the log before the first shutdown message.",  # noqa: E501
    "--------------------------------------------------------------------------",
    "Primary job  terminated normally, but 1 process returned",
    "a non-zero exit code. Per user-direction, the job has been aborted.",
    "--------------------------------------------------------------------------",
    "--------------------------------------------------------------------------",
    "mpirun detected that one or more processes exited with non-zero status, thus causing",
    "the job to be terminated. The first process to do so was:",
    "",
    "  Process name: [[50371,1],0]",
    "  Exit code:    1",
    "--------------------------------------------------------------------------",
]


def _analyze(tmp_path: Path, lines: list[str]) -> Any:
    log = tmp_path / "output.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return analyze([log])


def _row(line: int, role: str = "root", rank: int | None = 7, **kw: Any) -> Event:
    return Event(
        file="output.log",
        line=line,
        pattern_id="p",
        category="nccl_error",
        role=role,
        text="",
        rank=rank,
        **kw,
    )


def test_detail_rows_are_the_roots_a_few_lines_below_on_the_same_rank() -> None:
    chosen = _row(1)
    below = _row(4, tags=frozenset({"uniform"}))
    rows = [
        chosen,
        _row(2, role="context"),
        below,
        _row(4, rank=3),  # another rank's line
        _row(9),  # too far
        replace(_row(3), file="other.log"),
    ]
    assert detail_rows(chosen, rows) == [below]
    assert uniform_by_detail(chosen, rows)
    assert not uniform_by_detail(chosen, [chosen, _row(4)])
    assert not uniform_by_detail(chosen, [chosen, _row(0, tags=frozenset({"uniform"}))])


def test_the_nccl_setup_failure_is_tagged_uniform(tmp_path: Path) -> None:
    rows = _analyze(tmp_path, NCCL_ENV).events.to_dicts()
    pats = [(r["line"], r["pattern_id"]) for r in rows if r["role"] == "root"]
    assert pats == [(1, "nccl.error.unhandled_cuda"), (4, "nccl.warn.cuda_failure_setup")]


def test_a_setup_failure_under_a_generic_nccl_error_names_no_rank(tmp_path: Path) -> None:
    v = _analyze(tmp_path, NCCL_ENV).diagnosis.verdict
    assert (v.category, v.rank, v.rank_rule) == ("nccl_error", None, "uniform")


def test_mpirun_names_the_first_process_to_exit(tmp_path: Path) -> None:
    rows = _analyze(tmp_path, HOROVOD).events.to_dicts()
    first = [r for r in rows if r["pattern_id"] == "mpi.ompi.first_nonzero_exit"]
    assert [(r["rank"], r["line"]) for r in first] == [(0, 10)]


def test_a_victims_echo_takes_the_rank_of_the_only_process_reported_dead(tmp_path: Path) -> None:
    v = _analyze(tmp_path, HOROVOD).diagnosis.verdict
    assert (v.rank, v.rank_rule) == (0, "only-death")


def test_a_traceback_that_begins_with_a_frame_is_headless() -> None:
    whole = 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\nE: x'
    cut = '  File "optimizer.py", line 86, in make_sharded_optimizer_tensor\nAttributeError: x'
    assert headless(_row(5, traceback=cut))
    assert not headless(_row(5, traceback=whole))
    assert not headless(_row(5))
    source_first = (
        "    self._optimizer_step(sub_group_id)\n  File \"stage3.py\", line 1070\nKeyError: 'x'"
    )
    assert headless(_row(5, traceback=source_first))


CUT_PASTE = [  # tests/wild/a-megatron-save-ckpt-nonetype-shape: the paste starts inside rank 0's
    "[rank0]:   File \"/scratch/qualis/test/Megatron-LM/megatron/core/dist_checkpointing/optimizer.py\", line 123, in optim_state_to_sharding_state",  # noqa: E501
    "[rank0]:     sharded_state[param_id][state_key] = make_sharded_optimizer_tensor(",
    "[rank0]:   File \"/scratch/qualis/test/Megatron-LM/megatron/core/dist_checkpointing/optimizer.py\", line 86, in make_sharded_optimizer_tensor",  # noqa: E501
    "[rank0]:     tuple(optim_param.shape) == model_param.local_shape",
    "[rank0]: AttributeError: 'NoneType' object has no attribute 'shape'",
]


def test_a_paste_that_begins_inside_a_traceback_names_its_rank_as_possible(
    tmp_path: Path,
) -> None:
    """The frames above the exception line are read as its traceback (so the checkpoint frames
    count), and the rank is named as *possible* only: it is the only failing rank in view, but
    the paste does not show what came before."""
    a = _analyze(tmp_path, ["", *CUT_PASTE])
    (root,) = [r for r in a.rows if r.role == "root"]
    assert root.traceback is not None and root.traceback.lstrip().startswith('File "')
    assert (root.line, root.rank, root.cap("exc_type")) == (6, 0, "AttributeError")
    v = a.diagnosis.verdict
    assert (v.category, v.rank, v.rank_rule) == ("checkpoint", 0, "paste-cut")
    assert v.rank_certainty == "possible"
    assert v.rank_note and "only failing rank in view" in v.rank_note


def test_a_whole_traceback_keeps_its_rank(tmp_path: Path) -> None:
    head = "[rank0]: Traceback (most recent call last):"
    v = _analyze(tmp_path, ["[rank1]: step 1", head, *CUT_PASTE]).diagnosis.verdict
    assert v.category == "checkpoint" and v.rank == 0 and v.rank_rule != "paste-cut"


YOLO_EVAL = (Path(__file__).parent / "wild" / "c-yolov5-rank0-still-validating-broadcast-timeout"
             / "output.log").read_text(encoding="utf-8").splitlines()
"""YOLOv5 DDP: rank 0's validation bar keeps counting while ranks 1-3 time out in BROADCAST."""


def test_a_progress_bar_is_read_from_its_last_refresh() -> None:
    assert bar_of(YOLO_EVAL[0]) == (23, 32)
    assert bar_of(YOLO_EVAL[1]) == (24, 32)  # the bar, then the watchdog line glued to it
    # tqdm's default format (tests/wild/b-deepspeed-fp16-loss-scale-collapse)
    assert bar_of(" 14%|█▍        | 377/2724 [13:55:57<86:19:20, 132.41s/it]") == (377, 2724)
    assert bar_of("[E ProcessGroupNCCL.cpp:566] [Rank 2] Watchdog caught collective operation "
                  "timeout: WorkNCCL(OpType=BROADCAST, Timeout(ms)=60000)") is None


def test_a_bar_went_on_only_when_it_counts_further_after_the_line() -> None:
    def at(line: int, text: str) -> Event:
        return Event(file="o.log", line=line, pattern_id="x", category="collective_timeout",
                     role="symptom", text=text)

    first, later = at(2, YOLO_EVAL[1]), at(6, YOLO_EVAL[5])
    assert bar_went_on([first, later], first) is later
    assert bar_went_on([first], first) is None
    assert bar_went_on([first, replace(later, text=YOLO_EVAL[1])], first) is None  # same count
    assert bar_went_on([first, replace(later, file="other.log")], first) is None


def test_the_watchdog_names_the_ranks_when_no_prefix_does() -> None:
    def to(rank: int | None, pg: str | None) -> Event:
        return Event(file="o.log", line=1, pattern_id="x", category="collective_timeout",
                     role="symptom", text="", rank=rank, captures={"pg_rank": pg})

    assert reporting_ranks([to(None, "1"), to(None, "2")]) == {1, 2}
    assert reporting_ranks([to(4, "1"), to(None, "2")]) == {4}  # a global rank wins
    assert reporting_ranks([to(None, "1"), to(None, None)]) == set()  # one line names none


def test_the_rank_still_working_while_the_others_time_out_is_named(tmp_path: Path) -> None:
    v = _analyze(tmp_path, YOLO_EVAL).diagnosis.verdict
    assert (v.category, v.rank, v.rank_rule, v.rank_certainty) == (
        "collective_timeout", 0, "still-working", "likely")
    assert "3 rank(s) timed out" in v.cause and "rank 0" in v.cause


def test_the_bar_stopping_leaves_a_possible_rank_and_two_absent_ranks_none(tmp_path: Path) -> None:
    stopped = YOLO_EVAL[:4]  # no bar after the timeouts: rank 0 is only the silent one
    v = _analyze(tmp_path, stopped).diagnosis.verdict
    assert (v.rank, v.rank_rule, v.rank_certainty) == (0, "silent-rank", "possible")
    two_absent = [YOLO_EVAL[0], YOLO_EVAL[1], YOLO_EVAL[3], *YOLO_EVAL[4:]]  # rank 2 not shown
    v = _analyze(tmp_path, two_absent).diagnosis.verdict
    assert (v.category, v.rank) == ("collective_timeout", None)


LIGHTNING_INIT = (Path(__file__).parent / "wild" / "c-lightning-init-stuck-1-of-5-members"
                  / "output.log").read_text(encoding="utf-8").splitlines()
"""Lightning: rank 0 of 5 announces itself and the log ends (the job never formed)."""


def test_logs_that_end_before_the_world_formed_are_a_rendezvous_failure(tmp_path: Path) -> None:
    d = _analyze(tmp_path, LIGHTNING_INIT).diagnosis
    v = d.verdict
    assert (d.status, v.category, v.rank, v.rule, v.rank_rule) == (
        "failed", "rendezvous", None, "stalled-start", "not-joined")
    assert v.evidence[0].text == LIGHTNING_INIT[1]


def test_a_job_that_went_on_after_start_up_is_not_stalled(tmp_path: Path) -> None:
    # The same announcement followed by a line the catalog knows (torchrun's banner, a real
    # line from tests/wild/a-distlaunch-store-barrier-stale-file): not the last word of the log.
    banner = [ln for ln in (Path(__file__).parent / "wild" / "a-distlaunch-store-barrier-stale-"
                            "file" / "output.log").read_text(encoding="utf-8").splitlines()
              if ln.startswith("Setting OMP_NUM_THREADS")]
    assert banner
    d = _analyze(tmp_path, [*LIGHTNING_INIT, *banner]).diagnosis
    assert (d.status, d.verdict.rule) == ("ok", "none")
    d = _analyze(tmp_path, [*banner, *LIGHTNING_INIT]).diagnosis  # before it: still stalled
    assert d.verdict.rule == "stalled-start"


FATAL_ABORT = [  # tests/wild/g-swift-fatal-none-dealloc-exit6-local3 (torchrun, one node)
    "Fatal Python error: none_dealloc: deallocating None",
    "Python runtime state: initialized",
    "W0526 03:33:34.518000 115160 site-packages/torch/distributed/elastic/multiprocessing/api.py:897] Sending process 115225 closing signal SIGTERM",  # noqa: E501
    "W0526 03:33:34.521000 115160 site-packages/torch/distributed/elastic/multiprocessing/api.py:897] Sending process 115226 closing signal SIGTERM",  # noqa: E501
    "W0526 03:33:34.523000 115160 site-packages/torch/distributed/elastic/multiprocessing/api.py:897] Sending process 115227 closing signal SIGTERM",  # noqa: E501
    "E0526 03:33:41.170000 115160 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -6) local_rank: 3 (pid: 115228) of binary: /root/miniforge3/envs/swift/bin/python",  # noqa: E501
]


def test_an_abort_the_launcher_reports_is_a_workers_own_death(tmp_path: Path) -> None:
    """The agent SIGTERMed three workers and reports the fourth aborted (exit -6): that worker
    died on its own, so the unlabelled fatal error is its line (one node: rank 3 assumed)."""
    v = _analyze(tmp_path, FATAL_ABORT).diagnosis.verdict
    assert (v.category, v.rank, v.rank_rule, v.rank_certainty) == (
        "native_crash", 3, "only-death", "assumed")

"""Rules written for issue 40 after its tenth final batch's first run (part Q), each for a
class the batch's misses showed (the verdict before each rule is in its test's docstring).
Logs are the corpus's own; no line is written here."""

from __future__ import annotations

from analyzer.decide.predicates import cut_own_traceback
from analyzer.decide.promote import survived_notes
from tests.helpers import wild_analysis

TABLE_RARE = "q-paddle-launch-table-rare-2gpu-train"
LAYOUTXLM = "q-paddle-launch-ppocr-layoutxlm-4gpu-workerlogs"
KEYPOINT = "q-other-paddle-launch-2gpu-rtdetr-keypoint-train-workerlogs"
RTDETR = "p-other-paddle-launch-4gpu-rtdetr-ppdet-train"
SEMI_DETR = "p-other-paddle-launch-8gpu-ppdet-semi-detr-runs"
STABLE_AUDIO = "q-accelerate-stableaudio-dit-4gpu-train"
KART = "q-mp-spawn-kart-world-model-ddp-train"


def test_paddles_launcher_names_the_aborted_trainer() -> None:
    """`ABORT!!! Out of all 2 trainers, the trainer process with rank=[1] was aborted` is
    rank 1's death (the tool called the failed job `none`)."""
    v = wild_analysis(TABLE_RARE).diagnosis.verdict
    assert (v.category, v.rank) == ("unknown", 1)
    assert v.pattern_id == "torchelastic.paddle.trainer_aborted"


def test_a_relaunch_into_per_rank_files_sets_every_files_earlier_runs_aside() -> None:
    """PaddlePaddle appends each launch to workerlog.N: the last launch's failure is rank 1's,
    an earlier launch's the same error on rank 2 (the tool named rank 2, `assumed`)."""
    a = wild_analysis(LAYOUTXLM)
    v = a.diagnosis.verdict
    assert (v.category, v.rank) == ("python_exception", 1)
    notes = survived_notes(a.rows)
    assert any("workerlog.2:59" in n and "earlier run" in n for n in notes), notes


def test_a_last_launch_that_went_on_is_no_failure() -> None:
    """The last of ten launches in two workerlogs was still training (PaddleDetection's
    `Epoch: [12] [200/660]`): no failure (the tool named an earlier launch's missing file)."""
    v = wild_analysis(KEYPOINT).diagnosis.verdict
    assert v.category == "none"


def test_a_start_in_one_per_rank_file_alone_is_no_relaunch_of_the_job() -> None:
    """workerlog.0 also holds later one-GPU runs: the job's last launch is the last one the
    four files share, and training printed by a later run does not make rank 0's CUDA error
    of the shared launch survived."""
    v = wild_analysis(RTDETR).diagnosis.verdict
    assert (v.category, v.rank) == ("cuda_error", 0)


def test_a_last_launch_stopped_by_the_launcher_names_no_earlier_failure() -> None:
    """The last of twelve launches went on (rank 0's first iteration) and was stopped: an
    earlier launch's `_queue.Empty` on rank 2 is no longer the verdict (it was, `assumed`)."""
    v = wild_analysis(SEMI_DETR).diagnosis.verdict
    assert v.category == "unknown"
    assert v.rank != 2


def test_a_traceback_cut_after_its_ranks_own_timeout_is_a_waiters() -> None:
    """Rank 2 reports the watchdog's timeout, then a traceback cut inside accelerate's
    `prepare`: a waiter's stack, not its own failure (the tool named rank 2, `likely`); rank 0
    left before the first collective."""
    a = wild_analysis(STABLE_AUDIO)
    cut = [r for r in a.rows if r.tagged("uncatalogued") and r.rank == 2]
    assert cut and not cut_own_traceback(cut[0], a.rows)
    v = a.diagnosis.verdict
    assert (v.category, v.rank) == ("collective_timeout", 0)


def test_a_files_earlier_runs_are_one_note() -> None:
    """Twelve launches appended to eight workerlogs left 487 notes, one per failure of an
    earlier run (the report ran to a thousand lines): now one per file, with the number."""
    notes = [n for n in survived_notes(wild_analysis(SEMI_DETR).rows) if "earlier run" in n]
    assert len(notes) == 8
    assert all("more earlier-run failures in workerlog." in n for n in notes)


def test_a_cut_traceback_known_by_its_local_rank_is_its_processs_failure() -> None:
    """mp.spawn's `-- Process 0 terminated with the following error:` above a traceback cut
    inside DDP's forward: process 0 raised, and its peers' store errors followed (the tool
    read the heartbeat's store error as a rendezvous failure)."""
    v = wild_analysis(KART).diagnosis.verdict
    assert v.category == "python_exception"
    assert v.pattern_id == "python.traceback"


def test_the_one_silent_rank_of_a_hang_is_possible() -> None:
    """Ranks 1-3 of four time out in ALLREDUCE after rank 0 printed its early stop: rank 0,
    `possible` (no rank was named)."""
    v = wild_analysis("q-torchrun-4gpu-translator-ablation-train").diagnosis.verdict
    assert (v.category, v.rank, v.rank_certainty) == ("collective_timeout", 0, "possible")
    assert "may be the one they waited for" in v.cause


def test_an_empty_image_for_opencv_is_an_unreadable_data_file() -> None:
    """Both ranks' `(-215:Assertion failed) !_src.empty() in function 'cvtColor'` after 126
    epochs on the same data: an image that could not be read (a Python exception before)."""
    case = "q-other-paddle-launch-2gpu-ritm-interactive-seg-workerlogs"
    v = wild_analysis(case).diagnosis.verdict
    assert (v.category, v.pattern_id) == ("storage", "storage.image_not_read")

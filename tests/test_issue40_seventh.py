"""Rules written for issue 40 before its seventh final batch, from part M's open classes (the
verdict before each rule is in its test's docstring). Logs are the corpus's own, cut where a
test needs a shorter one; no line is written here."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import WILD, MakeJob, wild_analysis

NOTEBOOK = "m-mp-spawn-notebook-4proc-cant-get-attribute-demo-basic-process0-exit1"
TITAN = "m-torchrun-torchtitan-8rank-unrecognized-cli-option-rank4-exit2-others-sigterm"
SPEECHBRAIN = "m-torchrun-speechbrain-ckpt-desync-rank1-allreduce-vs-rank0-broadcast"
SPA_VL = "m-unknown-spa-vl-rlhf-reward-model-rank0-vs-rank2-broadcast-shape-desync"
SIMPLETUNER = "j-simpletuner-8gpu-collective-mismatch-rank7-seq0-reduce"
DALI_READ = "m-mpirun-cosmoflow-128rank-dali-tfrecord-read-error"
DALI_OPEN = "m-mpirun-polaris-cosmoflow-32rank-dali-missing-staged-tfrecord"


def _log(case: str) -> str:
    return (WILD / case / "output.log").read_text(encoding="utf-8")


def test_spawned_copies_of_one_error_name_no_rank() -> None:
    """Four spawn children's whole tracebacks of one unpickling error, then mp.spawn's
    ``process 0 terminated``: was rank 0 (`assumed`), a wrong accusation. mp.spawn stops the
    other children without a line, so the copies outnumbering its one record is no sign of one
    process printing twice."""
    v = wild_analysis(NOTEBOOK).diagnosis.verdict
    assert (v.category, v.rank) == ("python_exception", None)
    assert v.rank_rule == "same-way-unranked"


def test_one_spawned_traceback_keeps_its_process(make_job: MakeJob, tmp_path: Path) -> None:
    """The same log with one child's traceback only: one copy is no sign of several, and the
    record names the process."""
    lines = _log(NOTEBOOK).splitlines(keepends=True)
    second = [i for i, ln in enumerate(lines) if ln.startswith("Traceback (most recent")][1]
    end = [i for i, ln in enumerate(lines) if ln.startswith("AttributeError")][-1]
    job = make_job({"output.log": "".join(lines[:second] + lines[end + 1:])})
    from analyzer.api import analyze

    v = analyze([job / "output.log"]).diagnosis.verdict
    assert v.rank == 0


def test_tyro_rejecting_an_option_is_config_on_no_single_rank() -> None:
    """torchrun shows rank 0's tyro box and records rank 4's exit 2 first, stopping the rest:
    was `unknown`, rank 4 (`certain`). The parser box is a config error every rank raises; the
    launcher's lines about the other ranks are no sight of them without it."""
    v = wild_analysis(TITAN).diagnosis.verdict
    assert v.category == "config"
    assert v.pattern_id == "config.cli.tyro_unrecognized"
    assert v.rank is None


def test_a_collective_mismatch_report_names_no_single_rank() -> None:
    """Every rank runs the debug wrapper's fingerprint check and raises: speechbrain's report
    (rank 1 ALLREDUCE vs rank 0 BROADCAST) was rank 0 from torchrun's record, SPA-VL's was
    called ``none``."""
    for case in (SPEECHBRAIN, SPA_VL):
        v = wild_analysis(case).diagnosis.verdict
        assert v.pattern_id == "nccl.c10d.collective_mismatch", case
        assert (v.category, v.rank) == ("python_exception", None), case


def test_a_rank_shown_failing_beside_the_report_keeps_its_rank() -> None:
    """SimpleTuner: rank 1's report names rank 7 at SequenceNumber 0, and rank 7's own
    traceback follows: rank 7, not a copy of an error every rank raises."""
    v = wild_analysis(SIMPLETUNER).diagnosis.verdict
    assert (v.category, v.rank) == ("python_exception", 7)


def test_dali_reader_file_errors_are_storage() -> None:
    """DALI's reader asserts (a TFRecord it could not read, an index file not staged): were
    plain Python exceptions."""
    for case, path in ((DALI_READ, ".tfrecord"), (DALI_OPEN, "/dev/shm/train/")):
        v = wild_analysis(case).diagnosis.verdict
        assert (v.category, v.pattern_id) == ("storage", "storage.dali.reader_file"), case
        assert path in v.cause, case


# -- After the seventh final batch's first run (part N, tests/wild/README-n.md) ---------------

LORA_1NODE = "n-srun-1node-mlperf-llama2-70b-lora-nemo-trial10"
LEONARDO = "n-srun-100task-mpi-vqt-leonardo"
SD_1NODE = "n-srun-1node-8task-nemo-stable-diffusion-mlperf-trial"
SD_4NODE = "n-srun-4node-32task-nemo-stable-diffusion-mlperf-trial"
NEMO_CKPT = "n-torchrun-nemo-pretrain-checkpoint-run"
JEANZAY = "n-distlaunch-jeanzay-speechbrain-train"
TITAN_DONE = "j-torchrun-torchtitan-2gpu-abort-at-pg-destroy-after-training-done"
BERT_N = "n-srun-2node-mlperf-bert-apptainer-run"
BERT_M = "m-srun-mlperf-bert-2node-unexpanded-hostlist-master-addr-c10d-gai-error-until-scancel"
RESNET = "n-mpirun-2node-mlperf-resnet-hyperplane"


def test_slurmstepds_line_under_a_task_label_is_not_that_tasks() -> None:
    """`` 0: slurmstepd: … oom_kill event`` above srun's ``task 5: Out Of Memory``: was rank 0
    (`certain`), a wrong accusation. slurmstepd writes into one task's stream of the node."""
    a = wild_analysis(LORA_1NODE)
    oom = [r for r in a.events.iter_rows(named=True) if r["pattern_id"] == "memory.host.oom_kill"]
    assert oom and all(r["rank"] is None for r in oom)
    assert (a.diagnosis.verdict.category, a.diagnosis.verdict.rank) == ("host_oom", 5)


def test_srun_saying_out_of_memory_outweighs_its_killed_records() -> None:
    """Leonardo: ``task 25: Out Of Memory``, then srun's teardown ``Killed`` of many tasks:
    was no rank."""
    v = wild_analysis(LEONARDO).diagnosis.verdict
    assert (v.category, v.rank, v.rank_rule) == ("host_oom", 25, "srun-task")
    assert v.rank_certainty == "possible"


def test_a_process_announcing_its_rank_under_srun_makes_tasks_ranks() -> None:
    """Lightning's ``Initializing distributed: GLOBAL_RANK: N`` under ``srun -l`` on eight
    (and 32) tasks: the task id is the rank; was no rank for the one task whose store failed."""
    for case, rank in ((SD_1NODE, 2), (SD_4NODE, 16)):
        v = wild_analysis(case).diagnosis.verdict
        assert (v.category, v.rank) == ("rendezvous", rank), case


def test_a_paste_cut_above_a_frame_under_python_311_markers_opens_the_traceback() -> None:
    """NeMo-Run's rank-0 traceback begins with a source line and its ``^^^^`` markers: was
    ``none`` (nothing read); its frames run through Lightning's ModelCheckpoint."""
    v = wild_analysis(NEMO_CKPT).diagnosis.verdict
    assert (v.category, v.rank) == ("checkpoint", 0)


def test_a_launchers_failure_report_alone_is_a_failed_job() -> None:
    """torch.distributed.launch's traceback ending in ``ChildFailedError:`` and ``train.py
    FAILED``, the table cut: was ``none``."""
    a = wild_analysis(JEANZAY)
    assert a.diagnosis.status == "failed"
    assert (a.diagnosis.verdict.category, a.diagnosis.verdict.rank) == ("unknown", None)
    assert "launcher reports failed workers" in a.diagnosis.verdict.cause


def test_a_failure_report_after_the_training_ended_stays_none() -> None:
    v = wild_analysis(TITAN_DONE).diagnosis.verdict
    assert v.category == "none"


def test_a_store_address_that_is_a_node_list_is_rendezvous() -> None:
    """c10d's warning that it cannot resolve ``(nodeai[01,05], 53394)``, repeated until the job
    was cancelled: was the cancel."""
    for case in (BERT_N, BERT_M):
        v = wild_analysis(case).diagnosis.verdict
        assert (v.category, v.pattern_id) == (
            "rendezvous", "launch.rendezvous.address_not_a_host"), case


def test_mlperf_v06_run_stop_success_ends_the_training() -> None:
    """An srun cache-clearing step failed, then the run ended with mlperf_logging 0.6's
    ``run_stop … "status": "success"``: was ``unknown``."""
    a = wild_analysis(RESNET)
    assert (a.diagnosis.status, a.diagnosis.verdict.category) == ("ok", "none")


TRIXIE = "n-torchrun-multinode-trixie-run"


def test_the_launchers_first_record_by_local_rank_alone_is_possible() -> None:
    """Only torchrun's ``failed (exitcode: 1) local_rank: 0``, no worker output: was rank 0
    (`assumed`), a wrong accusation; now the only failing rank in view."""
    v = wild_analysis(TRIXIE).diagnosis.verdict
    assert (v.rank, v.rank_rule, v.rank_certainty) == (0, "first-observed", "possible")


def test_a_record_after_which_the_launcher_stopped_the_others_keeps_its_rank(
    make_job: MakeJob,
) -> None:
    """torchtitan's agent lines alone (seven SIGTERMs, then rank 4's exit 2): the launcher
    singled rank 4 out, so the record is not only the first it observed."""
    lines = _log(TITAN).splitlines(keepends=True)
    agent = [ln for ln in lines if "multiprocessing/api.py" in ln]
    job = make_job({"output.log": "".join(agent)})
    from analyzer.api import analyze

    v = analyze([job / "output.log"]).diagnosis.verdict
    assert v.rank == 4
    assert v.rank_rule != "first-observed"

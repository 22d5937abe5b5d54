"""Rules written from the misses of issue 40's final batch (tests/wild/README-i.md), each on the
real logs that showed the class and on lines that must not trigger it."""

from __future__ import annotations

from analyzer.api import analyze
from analyzer.decide.promote import survived
from analyzer.lines.pastes import numbered_paste
from analyzer.model.event import Event
from tests.helpers import WILD

CASE = "i-accelerate-fsdp-8node-checkpoint-save-parent-dir-missing"
"""ContextualAI/gritlm: a numbered copy of an 8-node FSDP job's log (``508 01/06/2024 …``)."""


def _numbered() -> list[str]:
    return (WILD / CASE / "output.log").read_text(encoding="utf-8").splitlines()[:12]


def test_a_numbered_paste_is_recognised() -> None:
    assert numbered_paste(_numbered())


def test_srun_labels_and_a_logs_own_numbers_are_not_a_numbered_paste() -> None:
    assert not numbered_paste(["  0: step 1", "  1: step 1", "  0: step 2", "  1: step 2"])
    iterations = [f"{n} iteration loss 2.5" for n in (100, 200, 300, 400, 500)]
    assert not numbered_paste(iterations)  # numbers that do not count up line by line


def _verdict(case: str) -> tuple[str, int | None]:
    v = analyze([p for p in (WILD / case).iterdir() if p.name != "expected.toml"]).diagnosis
    return v.verdict.category, v.verdict.rank


def test_a_numbered_paste_is_read_behind_its_margin() -> None:
    """Was `none`: the margin hid the traceback; torch.save's missing directory -> checkpoint."""
    assert _verdict(CASE) == ("checkpoint", None)


def test_the_transport_error_explains_the_nccl_errors_reporting_it() -> None:
    """Was `nccl_error`: every rank's NCCL teardown outnumbered the one socket/IB line."""
    assert _verdict("i-composer-2node-nccl-proxy-connect-closed-rank1")[0] == "network"
    assert _verdict("i-torchrun-32rank-nccl-net-ib-error5-rank16-watchdog")[0] == "network"


def test_mpi_runtime_failures_are_failures() -> None:
    """Were `none`: MPICH's init failure and Open MPI daemons of mismatched builds."""
    assert _verdict("i-srun-frontier-pytorch-mpi4py-import-order-mpich-nic-policy-abort")[0] == (
        "import_error")
    assert _verdict("i-mpirun-horovod-orte-force-terminate-hwloc-unpack")[0] == "import_error"


def test_a_frameworks_nccl_call_and_neuron_collectives_are_failures() -> None:
    assert _verdict("i-horovod-tf-ncclallreduce-invalid-data-type-wrong-nccl")[0] == (
        "import_error")
    assert _verdict("i-unknown-neuron-nemo-4node-enc-regmr-fail-after-hours")[0] == "network"



def _decision(case: str) -> tuple[int | None, str | None]:
    v = analyze([p for p in (WILD / case).iterdir() if p.name != "expected.toml"]).diagnosis
    return v.verdict.rank, v.verdict.rank_rule


def test_a_rank_mpirun_reports_dead_of_a_signal_died_on_its_own() -> None:
    """Horovod: rank 0's own segfault handler and mpirun's "process rank 1 … exited on signal
    11" (a signal, no exit code): two ranks crashed, nothing orders them, no rank is named."""
    assert _decision("i-mpirun-horovod-torch-segfault-all-ranks-gcc-abi") == (None, "another-died")


def test_unlabelled_copies_in_one_second_with_the_others_stopped_name_no_rank() -> None:
    """Three unlabelled copies of one NCCL error in one second; torchrun reports rank 0 dead
    and SIGTERMs ranks 1 and 2: every process failed alike (was rank 0 by only-death)."""
    got = _decision("i-torchrun-3rank-nccl-invalid-usage-no-net-plugin")
    assert got == (None, "same-way-unranked")


def test_ranks_the_launcher_reports_dead_in_one_second_name_no_culprit() -> None:
    """A ChildFailedError table whose four failures share one second: its Root Cause is only
    the first it observed (was rank 0, certain)."""
    got = _decision("i-torchrun-openvla-4gpu-tfds-dataset-not-found-all-ranks")
    assert got == (None, "died-together")



def _root(traceback: str) -> Event:
    return Event(file="job.out", line=10, pattern_id="python.traceback",
                 category="python_exception", role="root", text="IndexError: x", rank=2,
                 traceback=traceback)


def _iteration(line: int) -> Event:  # unranked: Megatron prints it on the last rank alone
    return Event(file="job.out", line=line, pattern_id="megatron.ctx.iteration",
                 category="unknown", role="context", text="iteration 4/ 20", tags=frozenset(
                     {"progress"}), captures={"iteration": "4"},
                 role_names={})


UNCAUGHT = (  # the shape of rank 2's traceback in the recipe's real job (tests/e2e)
    'Traceback (most recent call last):\n  File "harness/train.py", line 508, in <module>\n'
    '    sys.exit(main())\nIndexError: index 160 is out of bounds'
)
LOGGED = (  # a handler's logger.exception: the traceback starts in the frame that caught it
    'Traceback (most recent call last):\n  File "harness/train.py", line 436, in train\n'
    '    tokens = get_batch()\nIndexError: index 160 is out of bounds'
)


def test_an_unranked_progress_line_after_an_uncaught_exception_is_another_ranks() -> None:
    """Synthetic events (the mechanism): rank 2's exception reached ``<module>``, its process
    ended, so an unranked iteration line after it (torchrun's ``--tee`` wrote the last rank's
    line late) does not make it a survived error; a traceback a handler logged still can."""
    [kept, _] = survived([_root(UNCAUGHT), _iteration(12)])
    assert kept.role == "root"
    [logged, _] = survived([_root(LOGGED), _iteration(12)])
    assert logged.role == "context" and logged.tagged("survived")

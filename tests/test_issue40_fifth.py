"""Rules written for issue 40 before its fifth final batch, each for a class that real logs of
more than one project in the corpus show (the verdict before the rule is in each docstring).
The logs are cut or left as they are, never written; the notebook tests build a notebook's JSON
form of a real log's lines with ``json.dumps``, as Jupyter saves them."""

from __future__ import annotations

import json
from pathlib import Path

from analyzer.decide.ids import RankId
from analyzer.lines.pastes import pasted_prefix
from analyzer.read.notebook import is_notebook, plain_block
from tests.helpers import WILD, wild_analysis

KAGGLE = "l-accelerate-kaggle-notebook-2xt4-both-ranks-triton-outofresources-mamba3-bwd"
VADR1 = "l-torchrun-vadr1-rank2-cuda-oom-localrank1-record"
STEPVIDEO = "l-torchrun-stepvideo-rank3-oom-model-to-launcher-names-localrank2"
NEURON = "l-unknown-neuron-8node-llama70b-rank197-fsx-neuron-cache-oserror"


def _cut(case: str, tmp_path: Path, keep: slice) -> Path:
    """The case's log with only lines ``keep`` (0-based slice): a shorter copy, nothing added."""
    lines = (WILD / case / "output.log").read_bytes().split(b"\n")[keep]
    job = tmp_path / case
    job.mkdir()
    (job / "output.log").write_bytes(b"\n".join(lines))
    return job


# ---- a notebook's saved output --------------------------------------------------------------


def test_a_notebooks_output_is_read_as_the_log_it_holds() -> None:
    """F5-TTS's Kaggle notebook: both ranks' Triton ``OutOfResources`` tracebacks are JSON
    strings (was ``unknown`` from torchrun's record, rank 1 ``assumed``)."""
    v = wild_analysis(KAGGLE).diagnosis.verdict
    assert v.category == "python_exception"
    assert "OutOfResources" in v.cause
    assert v.rank is None and v.rank_rule == RankId.SAME_WAY_UNRANKED


def test_a_notebook_line_keeps_its_offsets_and_its_text() -> None:
    raw = (WILD / KAGGLE / "output.log").read_bytes()
    assert is_notebook(raw)
    plain = plain_block(raw)
    assert len(plain) == len(raw) and plain.count(b"\n") == raw.count(b"\n")
    lines = plain.split(b"\n")
    want = b"triton.runtime.errors.OutOfResources: out of resource: shared memory"
    assert any(ln.startswith(want) for ln in lines)
    frame = next(ln for ln in lines if ln.startswith(b'  File "/kaggle/working/F5-TTS'))
    assert frame.split(b"\r")[0].endswith(b'train.py", line 73, in main')


def test_a_real_log_in_notebook_form_gets_the_same_verdict(tmp_path: Path) -> None:
    """Another project's real log (torchtitan's OOM under torchrun, part K) saved the way a
    notebook saves a cell's stream: the same cause and rank as the plain log."""
    case = "k-torchrun-torchtitan-llama3-8b-rank1-oom-root-cause"
    text = (WILD / case / "output.log").read_text(encoding="utf-8")
    body = [f"      {json.dumps(ln + chr(10))}," for ln in text.splitlines()]
    nb = ['    {', '     "name": "stderr",', '     "output_type": "stream",', '     "text": [',
          *body, "     ]", "    }"]
    job = tmp_path / "nb"
    job.mkdir()
    (job / "output.log").write_text("\n".join(nb) + "\n", encoding="utf-8")
    plain, wrapped = wild_analysis(case).diagnosis.verdict, wild_analysis(job).diagnosis.verdict
    assert (wrapped.category, wrapped.rank) == (plain.category, plain.rank)


def test_json_lines_without_a_notebooks_keys_are_not_a_notebook() -> None:
    data = b"\n".join([b'  "step 1 loss 2.3\\n",'] * 20)
    assert not is_notebook(data)
    assert not is_notebook((WILD / VADR1 / "output.log").read_bytes())


# ---- a worker the agent records dead by local rank only ------------------------------------


def test_another_workers_death_by_local_rank_leaves_no_culprit() -> None:
    """Vad-R1: ``[rank2]:`` OOM, then the agent stops three pids and records ``local_rank: 1``
    dead with exit code 1: two workers failed on their own (was rank 2, ``certain``)."""
    v = wild_analysis(VADR1).diagnosis.verdict
    assert (v.category, v.rank, v.rank_rule) == ("cuda_oom", None, RankId.ANOTHER_DIED)
    assert "local rank 1" in v.rank_note


def test_a_local_record_that_may_be_the_named_rank_leaves_it(tmp_path: Path) -> None:
    """StepVideo: ``[rank3]:`` OOM, three pids in view and ``local_rank: 2``'s record: rank 3
    may be on another node or the agent's fourth worker, so the record settles nothing and the
    cut paste's ``possible`` stays. Vad-R1 without the record (the OOM and the stops): rank 2
    is named again."""
    v = wild_analysis(STEPVIDEO).diagnosis.verdict
    assert (v.rank, v.rank_certainty) == (3, "possible")
    v = wild_analysis(_cut(VADR1, tmp_path, slice(0, 4))).diagnosis.verdict
    assert (v.rank, v.rank_certainty) == (2, "certain")


# ---- two whole tracebacks of one error above the launcher's stop ---------------------------


def test_two_whole_tracebacks_of_one_error_are_two_ranks() -> None:
    """accelerate FSDP (part J): two ranks' identical ``RuntimeError`` tracebacks, torchrun's
    record of rank 1 (was rank 1, ``likely``)."""
    case = "j-accelerate-fsdp-2proc-use-orig-params-grad-dtype-all-ranks"
    v = wild_analysis(case).diagnosis.verdict
    assert (v.category, v.rank, v.rank_rule) == (
        "python_exception", None, RankId.SAME_WAY_UNRANKED
    )


def test_one_traceback_and_the_record_keep_the_rank(tmp_path: Path) -> None:
    """The notebook with its second traceback cut away: one copy, the record's rank stays."""
    raw = (WILD / KAGGLE / "output.log").read_text(encoding="utf-8").split("\n")
    second = [i for i, ln in enumerate(raw) if '"Traceback (most recent call last)' in ln][1]
    end = next(i for i in range(second, len(raw)) if "errors.OutOfResources" in raw[i])
    job = tmp_path / "one"
    job.mkdir()
    (job / "output.log").write_text("\n".join(raw[:second] + raw[end + 1 :]), encoding="utf-8")
    v = wild_analysis(job).diagnosis.verdict
    assert v.category == "python_exception" and v.rank == 1


# ---- an excerpt of one indented line --------------------------------------------------------


def test_one_indented_line_is_a_quoted_line() -> None:
    """AWS Neuron docs: one line, ``    [rank197]: RuntimeError: …`` (was ``none``): the
    margin is a quote's, so the line is read with its rank prefix and the job failed."""
    assert pasted_prefix(["    [rank197]: RuntimeError: x"]) == "    "
    assert pasted_prefix(["[gpu0] started"]) == ""
    d = wild_analysis(NEURON).diagnosis
    assert d.status == "failed" and d.verdict.category == "python_exception"
    assert d.verdict.rank == 197

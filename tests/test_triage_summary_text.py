"""The triage summary names jobs so they can be told apart, fits 80 columns without cutting a
category, documents the fingerprint it prints, and says what a job without log content is."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from analyzer.decide.fingerprint import FINGERPRINT_VERSION
from analyzer.triage.find import Job
from analyzer.triage.model import job_labels
from analyzer.triage.run import diagnose_job, to_frame
from analyzer.triage.summary import render_markdown, render_summary, summarize
from analyzer.triage.text_report import NARROW_BELOW, render_terminal
from tests.helpers import REAL, ROOT

CASCADE = REAL / "exception-cascade"


def test_labels_tell_jobs_of_one_id_apart() -> None:
    ids = ["11", "11", "11", "12", None]
    paths = ["/r/a", "/r/b", "/r/c", "/r/d", "/r/e"]
    assert job_labels(ids, paths) == ["11 (a)", "11 (b)", "11 (c)", "12", "e"]
    # a requeue: the same id in two attempts of the same directory name
    assert job_labels(["7", "7"], ["/x/run/attempt_0", "/x/run/attempt_1"]) == [
        "7 (attempt_0)", "7 (attempt_1)"]
    assert job_labels(["7", "7"], ["/a/run", "/b/run"]) == ["7 (a/run)", "7 (b/run)"]
    assert job_labels(["run", "run"], ["/a/run", "/b/run"]) == ["a/run", "b/run"]


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """Three copies of one job (slurm-11.out each) and a job whose only log is empty."""
    root = tmp_path_factory.mktemp("root")
    (log,) = CASCADE.glob("slurm-*.out")
    for d in ("run-a", "run-b", "run-c"):
        (root / d).mkdir()
        shutil.copy(log, root / d / "slurm-11.out")
    (root / "empty").mkdir()
    (root / "empty" / "slurm-12.out").write_bytes(b"")
    jobs = [Job(str(root / d), i) for d, i in
            (("run-a", "11"), ("run-b", "11"), ("run-c", "11"), ("empty", "12"))]
    return [diagnose_job(j.path, j.job_id) for j in jobs]


def test_the_examples_of_one_cause_can_be_told_apart(rows: list[dict]) -> None:
    s = summarize(to_frame(rows))
    (cause,) = s.causes.iter_rows(named=True)
    assert cause["examples"] == ["11 (run-a)", "11 (run-b)", "11 (run-c)"]
    for text in (render_terminal(s, width=160), render_terminal(s, width=80),
                 render_markdown(s), render_summary(s, "html")):
        assert "11 (run-a)" in text and "11, 11, 11" not in text


def test_a_job_whose_only_log_is_empty_says_so(rows: list[dict]) -> None:
    empty = rows[3]
    assert empty["status"] == "unknown"
    assert empty["category"] is None and empty["confidence"] is None
    assert "No log content" in empty["cause"] and "slurm-12.out: empty file" in empty["cause"]
    assert empty["fix"].startswith("Check the log path") and empty["path"] in empty["fix"]
    assert "Nothing to fix" not in empty["fix"]
    text = render_terminal(summarize(to_frame(rows)), width=120)
    assert "1 with no log content" in text
    line = next(ln for ln in text.splitlines() if "(" + empty["path"] in ln)
    assert line.lstrip().startswith("unknown: 12 ")
    assert "check the log path" in " ".join(text.split())


def test_categories_and_pattern_ids_are_never_cut(rows: list[dict]) -> None:
    """At 80 columns (and up to the table's width) each cause is a block: no line longer than
    the width, the category and pattern id whole; wider, the table keeps them whole too."""
    s = summarize(to_frame(rows))
    for width in (60, 80, NARROW_BELOW - 1, NARROW_BELOW, 200):
        text = render_terminal(s, width=width)
        assert max(map(len, text.splitlines())) <= width, width
        assert "python_exception" in text and "python.traceback" in text, width
    narrow = render_terminal(s, width=80)
    assert re.search(r"^  3 jobs · python_exception · python\.traceback · v\d-[0-9a-f]{12}$",
                     narrow, re.M)


def test_the_docs_describe_the_fingerprint_that_is_printed(rows: list[dict]) -> None:
    fp = rows[0]["fingerprint"]
    assert fp.startswith(f"v{FINGERPRINT_VERSION}-")
    doc = (ROOT / "docs" / "triage.md").read_text(encoding="utf-8")
    assert f"`v{FINGERPRINT_VERSION}-<12 hex digits>`" in doc
    shown = set(re.findall(r"\bv(\d+)-[0-9a-f]{12}\b", doc))
    assert shown <= {str(FINGERPRINT_VERSION)}, shown


def test_the_markdown_and_html_list_the_job_without_log_content(rows: list[dict]) -> None:
    s = summarize(to_frame(rows))
    for text in (render_markdown(s), render_summary(s, "html")):
        assert "slurm-12.out: empty file" in text and "check the log path" in text


def test_unreadable_count_is_not_doubled(rows: list[dict]) -> None:
    s = summarize(to_frame(rows))
    assert (s.unreadable, s.undiagnosed.height, s.left_unknown) == (1, 0, 1)
    assert [r["label"] for r in s.listed_jobs()] == ["12"]


def test_paths_in_the_module_are_not_machine_specific() -> None:
    assert Path(__file__).read_text().count("/" + "work/") == 0

"""Reports read as prose: code spans rendered as code, no empty Markdown header rows, no
alternative that repeats the verdict."""

from __future__ import annotations

import re

import pytest

from analyzer import analyze
from analyzer.report import render
from analyzer.report.markdown import prose as md_prose
from analyzer.util.safe import code_spans
from tests.helpers import SAMPLES


def test_code_spans() -> None:
    assert code_spans("run `uv sync` first") == [(False, "run "), (True, "uv sync"),
                                                 (False, " first")]
    assert code_spans("a lone ` tick") == [(False, "a lone ` tick")]
    assert md_prose("run `uv sync` before `a_b`") == "run `uv sync` before `a_b`"
    assert md_prose("x_y and `<b>`") == "x\\_y and `<b>`"


@pytest.fixture(scope="module")
def analyses() -> list:
    return [analyze(s, workers=1) for s in SAMPLES]


def _html_text_outside_pre(page: str) -> str:
    body = page.split("<body", 1)[1]
    body = re.sub(r"<pre[^>]*>.*?</pre>", "", body, flags=re.S)
    body = re.sub(r"<code>.*?</code>", "", body, flags=re.S)
    return re.sub(r"<[^>]+>", " ", body)


def test_no_literal_backticks_in_html_prose(analyses: list) -> None:
    bad = [a.paths[0].name for a in analyses if "`" in _html_text_outside_pre(render(a, "html"))]
    assert not bad


def test_markdown_tables_have_a_header_and_code_is_not_escaped(analyses: list) -> None:
    for a in analyses:
        text = render(a, "markdown")
        assert "| | |" not in text
        heads = ("**Cause:**", "**Fix:**")  # paragraphs below the verdict table
        prose_lines = [ln for ln in text.splitlines() if ln.startswith(heads)]
        assert prose_lines and not any("\\`" in ln for ln in prose_lines), a.paths[0].name


def test_also_considered_never_repeats_the_verdict(analyses: list) -> None:
    from analyzer.report.model import build_model

    for a in analyses:
        m = build_model(a)
        assert all(x.category != m.category for x in m.alternatives), a.paths[0].name


def test_render_leaves_out_clauses_of_unknown_fields() -> None:
    from analyzer.catalog.model import fill_template as fill

    assert fill("heads ({heads}) or groups ({value}) over TP={tp}.", {"heads": 6, "tp": 4}) == (
        "heads (6) or groups over TP=4.")
    assert fill("Task {task} on {node} was killed.", {"task": 1}) == "Task 1 was killed."
    assert fill("(status {status} {name}, error {err}, HCA {hca}).", {"status": 12, "err": 9}) == (
        "(status 12, error 9).")
    assert fill("Rank {rank} raised.", {}) == "Rank ? raised."  # the reasoner rewords it
    assert fill("Drain {node}, then resubmit.", {}) == "Drain the node, then resubmit."
    assert fill("Slurm lost node {node}.", {}) == "Slurm lost node ?."  # -> "a node"


def test_no_question_mark_in_the_prose_of_any_sample(analyses: list) -> None:
    bad = []
    for a in analyses:
        d = a.diagnosis
        for v in [d.verdict, *d.alternatives, *d.attempts]:
            for text in (v.cause, v.fix):
                if re.search(r"(^|[\s(=])\?([\s,.)]|$)", text or ""):
                    bad.append(f"{a.paths[0].name}: {text[:120]}")
    assert not bad, bad


def test_the_root_is_never_its_own_downstream_symptom(analyses: list) -> None:
    """Neither the root line nor its restatements (a copy in another stream, the JOB line after
    the STEP line, the same error on every rank when no single rank is named)."""
    bad = []
    for a in analyses:
        d = a.diagnosis
        v = d.verdict
        if d.status != "failed" or not v.pattern_id:
            continue
        counted = {p for s in d.symptoms.values() for p in s.get("patterns", {})}
        if v.rank is None and v.pattern_id in counted:
            bad.append(f"{a.paths[0].name}: {v.pattern_id}")
    assert not bad, bad
    byname = {a.paths[0].name: a.diagnosis for a in analyses}
    tl = byname["slurm-time-limit"]
    assert not any("time limit" in s for s in tl.symptom_lines), tl.symptom_lines

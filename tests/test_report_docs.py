"""The outputs shown in the docs are the tool's current outputs, and the report says each thing
once.

A fenced block right after ``<!-- output: mcore-diagnose ARGS -->`` in ``docs/*.md`` must be
``$ mcore-diagnose ARGS`` followed by exactly what that command prints (run from the repository
root, standard output a pipe). ``UPDATE_SNAPSHOTS=1 pytest tests/test_report_docs.py`` rewrites
the blocks; review the diff. A block after ``<!-- snapshot: tests/snapshots/NAME -->`` must hold
that snapshot's text (kept current by ``tests/test_reports.py``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.report import render
from analyzer.report.model import build_model
from tests.helpers import ROOT, SAMPLES

UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"
DOCS = sorted((ROOT / "docs").glob("*.md"))
_BLOCK = re.compile(
    r"<!-- (?P<kind>output|snapshot): (?P<what>[^\n]+?) -->\n```(?P<lang>\w*)\n(?P<body>.*?)```",
    re.S,
)


def blocks(doc: Path) -> list[re.Match[str]]:
    return list(_BLOCK.finditer(doc.read_text(encoding="utf-8")))


def command_output(what: str) -> str:
    """``$ mcore-diagnose ARGS`` and what the command prints, run from the repository root."""
    args = shlex.split(what)
    assert args[0] == "mcore-diagnose", what
    env = {k: v for k, v in os.environ.items()
           if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "MCORE_DIAGNOSE_PATTERNS")}
    r = subprocess.run([sys.executable, "-m", "analyzer", *args[1:]], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode in (0, 1), (what, r.stderr[-2000:])
    return f"$ {what}\n{r.stdout.rstrip()}\n"


DOC_BLOCKS = [(d, m["kind"], m["what"]) for d in DOCS for m in blocks(d)]


def test_the_docs_mark_their_outputs() -> None:
    """The report, the event table and the triage summary are shown from live output."""
    marked = {(d.name, k) for d, k, _ in DOC_BLOCKS}
    assert {("reports.md", "output"), ("reports.md", "snapshot"), ("triage.md", "output"),
            ("events.md", "output")} <= marked


@pytest.mark.parametrize(("doc", "kind", "what"), DOC_BLOCKS,
                         ids=[f"{d.name}:{w}" for d, _, w in DOC_BLOCKS])
def test_docs_block_is_current(doc: Path, kind: str, what: str) -> None:
    text = doc.read_text(encoding="utf-8")
    m = next(b for b in blocks(doc) if b["what"] == what and b["kind"] == kind)
    body = m["body"]
    if kind == "snapshot":
        snap = (ROOT / what).read_text(encoding="utf-8").strip("\n")
        assert snap in body, f"{doc.name}: the block after {what} is not that snapshot"
        return
    now = command_output(what)
    if UPDATE and now != body:
        doc.write_text(text[: m.start("body")] + now + text[m.end("body"):], encoding="utf-8")
        return
    assert body == now, f"{doc.name}: `{what}` prints otherwise; UPDATE_SNAPSHOTS=1 rewrites it"


def test_the_first_failing_note_never_repeats_the_cause() -> None:
    """A hang's cause quotes how its culprit was found; the note under "First failing" must
    not say it again (it did for every hang with a culprit)."""
    checked = 0
    for sample in SAMPLES:
        a = analyze([str(sample)])
        v = a.diagnosis.verdict
        m = build_model(a)
        if v.rank_note and " ".join(v.rank_note.split()).rstrip(".") in " ".join(v.cause.split()):
            checked += 1
            assert m.rank_note is None, sample.name
            text = render(a, "text", width=200)
            assert text.count(" ".join(v.rank_note.split()[:8])) == 1, sample.name
        elif v.rank_note:
            assert m.rank_note  # a note that adds something stays
    assert checked >= 3

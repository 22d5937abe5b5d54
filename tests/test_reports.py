"""The human-readable reports: snapshots of every format, escaping of hostile log text, colour
only on a terminal, the one-line ``-q`` form and the rank grid at 1,024 ranks.

Snapshots live in ``tests/snapshots/``; regenerate them with ``UPDATE_SNAPSHOTS=1 pytest
tests/test_reports.py`` and review the diff. Paths of the temporary job directories and the
package version are replaced by ``{JOB}`` and ``{VERSION}``, so snapshots hold neither machine
paths nor anything that changes by itself.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from analyzer import __version__
from analyzer.api import Analysis, analyze
from analyzer.report import render
from analyzer.report.grid import text_rows
from analyzer.report.jsonout import to_json
from analyzer.report.markdown import md
from analyzer.report.model import build_model
from analyzer.util.safe import clean
from tests.helpers import SAMPLE_LOGS, cli_on_tty, write_job

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"
EXT = {"terminal": "txt", "text": "text.txt", "markdown": "md", "html": "html", "json": "json"}
ANSI = re.compile(r"\x1b|\x9b")

# --------------------------------------------------------------------------------------------
# Job directories built here (the recorded samples are covered further down when present)
# --------------------------------------------------------------------------------------------

OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {lr} has a "
    "total capacity of 79.10 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this "
    "process has 77.88 GiB memory in use. Of the allocated memory 74.02 GiB is allocated by "
    "PyTorch, and 2.31 GiB is reserved by PyTorch but unallocated."
)
WATCHDOG = (
    "[E304 10:10:38.162555850 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=5001, OpType=ALLREDUCE, NumelIn=1259621, "
    "NumelOut=1259621, Timeout(ms)=600000) ran for 600000 milliseconds before timing out."
)
HOSTILE = (
    "bad [red]x[/red] [link=http://evil]click[/link] <script>alert(1)</script> &amp; "
    "\x1b[31mRED\x1b[0m done"
)


def oom_job(root: Path, nnodes: int = 2, gpn: int = 4, culprit: int = 5) -> Path:
    """One rank runs out of GPU memory; every other rank then hits the NCCL watchdog."""
    lines = [f"+ srun torchrun --nnodes {nnodes} --nproc-per-node {gpn} pretrain_gpt.py"]
    for r in range(nnodes * gpn):
        n, lr = divmod(r, gpn)
        lines.append(
            f"{n}: [default{lr}]:[rank{r}]: [2025-03-04 10:00:0{lr % 10}] iteration 100/1000"
        )
    n, lr = divmod(culprit, gpn)
    p = f"{n}: [default{lr}]:[rank{culprit}]: "
    lines += [
        p + "Traceback (most recent call last):",
        p + '  File "pretrain_gpt.py", line 40, in <module>',
        p + "    pretrain(train_ds)",
        p + '  File "megatron/training/training.py", line 1200, in train_step',
        p + "    loss.backward()",
        p + OOM.format(lr=lr),
    ]
    for r in range(nnodes * gpn):
        if r != culprit:
            n, lr = divmod(r, gpn)
            lines.append(f"{n}: [default{lr}]:[rank{r}]:" + WATCHDOG.format(r=r))
    return write_job(root / f"oom-{nnodes}x{gpn}", {"slurm-4242.out": "\n".join(lines) + "\n"})


def hostile_job(root: Path) -> Path:
    """A traceback whose message (the verdict's evidence) holds rich markup, HTML and ANSI."""
    p = "[rank1]: "
    log = (
        p
        + "Traceback (most recent call last):\n"
        + p
        + '  File "train.py", line 9, in <module>\n'
        + p
        + '    load("[link=http://evil]x[/link] <img src=http://evil/p.png>")\n'
        + p
        + "ValueError: "
        + HOSTILE
        + "\n"
    )
    return write_job(root / "hostile", {"slurm-9.out": log})


def clean_job(root: Path) -> Path:
    return write_job(root / "clean", {"slurm-1.out": "iteration 1\niteration 2\ntraining done\n"})


BUILDERS = {"oom-2x4": oom_job, "hostile": hostile_job, "clean": clean_job}


def normalise(text: str, job: Path) -> str:
    out = text
    for p in {str(job), str(job.resolve())}:
        for form in (p, md(p), html.escape(p)):
            out = out.replace(form, "{JOB}")
    out = out.replace(f"mcore-diagnose {__version__}", "mcore-diagnose {VERSION}")
    return out


def render_all(a: Analysis) -> dict[str, str]:
    return {fmt: render(a, fmt, color=False) for fmt in EXT}


def check_snapshot(name: str, fmt: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.{EXT[fmt]}"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"no snapshot {path.name}; run with UPDATE_SNAPSHOTS=1 and review it")
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"{path.name} changed; UPDATE_SNAPSHOTS=1 regenerates it"


def check_invariants(out: dict[str, str]) -> None:
    """What holds for every report of every job."""
    for fmt in ("terminal", "text", "markdown", "html", "json"):
        assert not ANSI.search(out[fmt]), f"{fmt} has an escape sequence"
        for bad in ("/" + "work/", "/" + "root/"):  # machine paths, spelt in two
            assert bad not in out[fmt]
    json.loads(out["json"])
    assert_safe_html(out["html"])


# --------------------------------------------------------------------------------------------
# HTML checker: a page is a tree of known, harmless tags; nothing is loaded or run
# --------------------------------------------------------------------------------------------

ALLOWED_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "div",
    "section",
    "h1",
    "h2",
    "p",
    "span",
    "table",
    "tr",
    "th",
    "td",
    "pre",
    "details",
    "summary",
    "ul",
    "li",
    "b",
    "code",
    "footer",
}
ALLOWED_ATTRS = {"class", "title", "style", "lang", "charset", "http-equiv", "content", "name"}


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag not in ALLOWED_TAGS:
            self.problems.append(f"tag <{tag}>")
        for k, v in attrs:
            if k not in ALLOWED_ATTRS:
                self.problems.append(f"attribute {k}= on <{tag}>")
            if k == "style" and v and ("url(" in v or "expression" in v):
                self.problems.append(f"style loads something: {v}")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def assert_safe_html(page: str) -> _Checker:
    assert page.startswith("<!DOCTYPE html>")
    low = page.lower()
    assert "<script" not in low and "javascript:" not in low
    assert "<link" not in low and "@import" not in low and "url(" not in low
    c = _Checker()
    c.feed(page)
    c.close()
    assert not c.problems, c.problems
    return c


# --------------------------------------------------------------------------------------------
# Snapshots
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BUILDERS))
@pytest.mark.parametrize("fmt", sorted(EXT))
def test_snapshot_of_built_job(name: str, fmt: str, tmp_path: Path) -> None:
    job = BUILDERS[name](tmp_path)
    a = analyze(job, workers=1)
    text = normalise(render(a, fmt, color=False), job)
    check_snapshot(name, fmt, text)


def test_verbose_terminal_adds_the_per_rank_timeline(tmp_path: Path) -> None:
    job = oom_job(tmp_path)
    a = analyze(job, workers=1)
    plain = render(a, "terminal")
    verbose = render(a, "terminal", verbose=True)
    assert "Per-rank timeline" not in plain and "Per-rank timeline" in verbose
    check_snapshot("oom-2x4-verbose", "terminal", normalise(verbose, job))
    # The culprit leads the timeline: its first event is the earliest.
    timeline = verbose.split("Per-rank timeline", 1)[1].splitlines()
    first_row = next(ln for ln in timeline if re.match(r"\s+\d+\s", ln))
    assert first_row.split()[0] == "5"


def _samples() -> list[Path]:
    found = []
    for kind in ("real", "formats"):
        base = SAMPLE_LOGS / kind
        if base.is_dir():
            found += sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))
    return found


@pytest.mark.parametrize(
    "sample",
    _samples() or [pytest.param(None, marks=pytest.mark.skip("no samples yet"))],
    ids=lambda p: f"{p.parent.name}-{p.name}" if p else "none",
)
def test_reports_of_samples(sample: Path) -> None:
    """Every sample renders in every format with the invariants; samples with a committed
    snapshot must match it (new samples get one with UPDATE_SNAPSHOTS=1)."""
    a = analyze(sample, workers=1)
    out = {fmt: normalise(text, sample) for fmt, text in render_all(a).items()}
    check_invariants(out)
    name = f"sample-{sample.parent.name}-{sample.name}"
    for fmt, text in out.items():
        if UPDATE or (SNAPSHOTS / f"{name}.{EXT[fmt]}").exists():
            check_snapshot(name, fmt, text)


# --------------------------------------------------------------------------------------------
# Hostile log text
# --------------------------------------------------------------------------------------------


def test_markup_html_and_ansi_in_log_lines_are_shown_literally(tmp_path: Path) -> None:
    a = analyze(hostile_job(tmp_path), workers=1)
    v = a.diagnosis.verdict
    assert v.category == "python_exception" and v.evidence
    assert "[red]x[/red]" in v.evidence[0].text  # the traceback is the verdict's evidence
    out = render_all(a)
    check_invariants(out)
    literal = "bad [red]x[/red] [link=http://evil]click[/link] <script>alert(1)</script> &amp;"

    # Terminal and text: rich markup printed as written, no escape codes at all.
    for fmt in ("terminal", "text"):
        flat = " ".join(out[fmt].split())
        assert literal in flat, fmt
        assert "RED done" in flat  # the ANSI codes around RED are gone, the word stays
    # Coloured terminal: rich colours the report, but makes no link and no colour from the log.
    coloured = render(a, "terminal", color=True)
    assert "\x1b[" in coloured  # colour is on ...
    assert "\x1b]8;" not in coloured  # ... but no OSC 8 hyperlink was made from [link=...]
    sgr_free = re.sub(r"\x1b\[[0-9;]*m", "", coloured)
    assert "\x1b" not in sgr_free
    assert literal in " ".join(sgr_free.split())

    # HTML: escaped text, no script element, no link, nothing that loads.
    page = out["html"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&amp;amp;" in page
    assert "<img" not in page.lower()
    checker = assert_safe_html(page)
    shown = "".join(checker.text)
    assert "<script>alert(1)</script>" in shown and "[link=http://evil]" in shown

    # Markdown: running text escaped; raw log text only inside code fences.
    md = out["markdown"]
    outside = re.sub(r"(?ms)^(`{3,})text\n.*?^\1$", "", md)
    assert "<script>" not in outside and "<img" not in outside
    assert "&lt;script&gt;" in outside and r"\[red\]" in outside
    assert "<script>alert(1)</script>" in md  # verbatim inside the fence

    # JSON: parses, and round-trips the text as the reader cleaned it.
    d = json.loads(out["json"])
    ev = d["verdict"]["evidence"][0]
    assert (
        "bad [red]x[/red] [link=http://evil]click[/link] <script>alert(1)</script> &amp; RED"
        in ev["text"]
    )
    assert ev["context"][0] == "Traceback (most recent call last):"


def test_escape_sequences_that_slip_past_the_reader_never_reach_the_output(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    a = analyze(hostile_job(tmp_path), workers=1)
    v = a.diagnosis.verdict
    sneaky = "x\x1b[2J\x1b]8;;http://evil\x07y\x9b31m\u202eevil\x07z\x00"
    e0 = v.evidence[0]
    e0 = replace(e0, text=e0.text + sneaky, context=[*e0.context, sneaky])
    v = replace(v, cause="cause " + sneaky, evidence=[e0, *v.evidence[1:]])
    d = replace(a.diagnosis, verdict=v)  # the report's input, changed as nothing else may
    for fmt in ("terminal", "text", "markdown", "html"):
        out = render(d, fmt, color=False)
        assert not ANSI.search(out), fmt
        assert "\u202e" not in out and "\x00" not in out and "\x07" not in out, fmt
    coloured = render(d, "terminal", color=True)
    assert "\x1b[2J" not in coloured and "\x1b]8" not in coloured and "\x9b" not in coloured
    # JSON keeps the exact text but writes the raw C1/bidi characters as \u escapes.
    text = to_json(d)
    assert "\x9b" not in text and "\u202e" not in text and "\x1b" not in text
    assert json.loads(text)["verdict"]["cause"] == "cause " + sneaky


def test_clean_removes_controls_and_keeps_text() -> None:
    assert clean("a\x1b[31mb\x1b[0mc") == "abc"
    assert clean("a\x9b1mb") == "ab"
    assert clean("tab\there") == "tab    here"
    assert clean("one\ntwo") == "one two"
    assert clean("one\ntwo", keep_newlines=True) == "one\ntwo"
    assert clean("\u202eabc\u2066") == "abc"
    assert clean("[red]x[/red] <b>&amp;") == "[red]x[/red] <b>&amp;"


# --------------------------------------------------------------------------------------------
# The rank grid
# --------------------------------------------------------------------------------------------


def test_grid_of_1024_ranks_shows_the_one_culprit_at_a_glance(tmp_path: Path) -> None:
    job = oom_job(tmp_path, nnodes=128, gpn=8, culprit=517)
    a = analyze(job, workers=1)
    m = build_model(a)
    g = m.grid
    assert len(g.cells) == 1024 and len(g.nodes) == 128
    assert g.culprit is not None and (g.culprit.rank, g.culprit.node) == (517, "64")
    assert [c.rank for c in g.cells if c.mark == "X"] == [517]

    text = render(a, "text")
    grid = text.split("Rank grid", 1)[1]
    rows = [ln for ln in grid.splitlines() if re.match(r"\s+\d+ [a-zX·]", ln)]
    assert len(rows) <= 16, "1,024 ranks must fit in a screenful"
    assert all(len(ln) <= 100 for ln in text.splitlines())
    assert "".join(rows).count("X") == 1
    assert "rank 517 first failing (node 64)" in " ".join(grid.split())
    check_snapshot("oom-128x8-grid", "text", normalise(grid, job))

    page = render(a, "html")
    assert page.count('title="rank ') == 1024
    assert 'title="rank 517 · node 64 · cuda_oom (first failing rank)' in page
    assert page.count('<div class="node"') == 128
    assert len(page) < 100_000, "mail clients clip HTML over about 100 KB"


def test_small_jobs_get_one_row_per_node(tmp_path: Path) -> None:
    a = analyze(oom_job(tmp_path), workers=1)
    rows = text_rows(build_model(a).grid, 100)
    assert [(label, "".join(c.mark for c in b[0])) for label, b in rows] == [
        ("0", "cccc"),
        ("1", "cXcc"),
    ]


# --------------------------------------------------------------------------------------------
# The command line: colour only on a terminal, NO_COLOR, pipes, -q, -o
# --------------------------------------------------------------------------------------------


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = {k: v for k, v in os.environ.items()
         if k not in ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE")}
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        capture_output=True,
        text=True,
        env=e,
        timeout=120,
    )


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_colour_on_a_terminal_and_never_with_no_color(tmp_path: Path) -> None:
    job = oom_job(tmp_path)
    coloured = cli_on_tty(str(job))
    assert "\x1b[" in coloured and "cuda_oom" in coloured
    plain = cli_on_tty(str(job), env={"NO_COLOR": "1"})
    assert "cuda_oom" in plain and "\x1b" not in plain


def test_pipes_get_plain_text_unless_colour_is_forced(tmp_path: Path) -> None:
    job = oom_job(tmp_path)
    r = cli(str(job))
    assert r.returncode == 0 and "cuda_oom" in r.stdout and not ANSI.search(r.stdout)
    # FORCE_COLOR colours the terminal report through a pipe (as for `| less -R`); the text,
    # Markdown and HTML formats never carry ANSI codes, and stderr gets no progress bar.
    r = cli(str(job), env={"FORCE_COLOR": "1"})
    assert r.returncode == 0 and ANSI.search(r.stdout)
    for args in (("--format", "text"), ("--format", "markdown"), ("--format", "html")):
        r = cli(str(job), *args, env={"FORCE_COLOR": "1"})
        assert r.returncode == 0, r.stderr
        assert "cuda_oom" in r.stdout and not ANSI.search(r.stdout), args
        assert not ANSI.search(r.stderr), "no progress bar or colour on a pipe"


def test_quiet_prints_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from analyzer.cli.commands import app

    job = oom_job(tmp_path)
    res = CliRunner().invoke(app, ["diagnose", str(job), "-q"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("cuda_oom rank=5 node=1 confidence=0.90: Rank 5 ran out of GPU")
    r = cli(str(hostile_job(tmp_path)), "-q")
    assert len(r.stdout.splitlines()) == 1 and not ANSI.search(r.stdout)


def test_output_file_gets_the_page_and_stdout_stays_empty(tmp_path: Path) -> None:
    job = oom_job(tmp_path)
    out = tmp_path / "report.html"
    r = cli(str(job), "--format", "html", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    page = out.read_text(encoding="utf-8")
    assert_safe_html(page)
    assert "cuda_oom" in page and html.escape("rank 5 (local 1) on node 1") in page

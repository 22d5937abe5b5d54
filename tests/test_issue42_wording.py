"""Issue 42: report wording, widths and small defects (items 10, 11, 12, 14, 15, 17, 18).

Every job here is a bundled sample (``sample_logs/``) or a test fixture; where a line is made up
to test a mechanism it says so.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from analyzer.api import Analysis, analyze
from analyzer.report.grid import build_grid
from tests.helpers import FORMATS, SAMPLES


@cache
def analysis(sample: Path) -> Analysis:
    return analyze([str(sample)])


# ---------------------------------------------------------------------------------------------
# Item 12: the rank grid's cell and `events --by-rank` name the same first event
# ---------------------------------------------------------------------------------------------


def _grid_vs_by_rank(a: Analysis) -> list[tuple[int, str | None, str | None]]:
    """(rank, grid category, by-rank category) for every rank where the two disagree."""
    df = a.by_rank()
    if "first_category" not in df.columns:
        return []
    by_rank = dict(df.select("rank", "first_category").iter_rows())
    culprit = a.diagnosis.verdict.rank
    out = []
    for cell in build_grid(a).cells:
        if cell.rank == culprit:  # the culprit's cell shows the verdict's category
            continue
        if cell.category != by_rank.get(cell.rank):
            out.append((cell.rank, cell.category, by_rank.get(cell.rank)))
    return out


def test_grid_cell_is_the_by_rank_first_event_where_they_disagreed() -> None:
    # collective-mismatch: every rank logs the watchdog's collective timeout and, in the same
    # second, "Some NCCL operations have failed"; the grid showed the second (nccl_error).
    a = analysis(FORMATS / "collective-mismatch")
    assert a.by_rank().filter(a.by_rank()["rank"] == 0)["first_category"][0] == (
        "collective_timeout"
    )
    assert _grid_vs_by_rank(a) == []
    assert a.diagnosis.ranks[0].category == "collective_timeout"  # JSON's `ranks` too


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_grid_and_by_rank_agree_on_every_sample(sample: Path) -> None:
    assert _grid_vs_by_rank(analysis(sample)) == []


# ---------------------------------------------------------------------------------------------
# Item 15: `triage --sacct` without sacct says so, once, on stderr
# ---------------------------------------------------------------------------------------------


def test_triage_sacct_without_sacct_says_the_columns_are_empty(tmp_path: Path) -> None:
    import json
    import os
    import shutil
    import subprocess
    import sys

    from tests.helpers import REAL

    root = tmp_path / "root"
    shutil.copytree(REAL / "exception-cascade", root / "job")
    bindir = tmp_path / "bin"  # a PATH with no sacct on it
    bindir.mkdir()
    out = tmp_path / "t.json"
    env = {**os.environ, "PATH": str(bindir), "NO_COLOR": "1"}
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "triage", str(root), "-j", "1", "--sacct",
         "-o", str(out)],
        capture_output=True, text=True, env=env, check=False,
    )
    assert r.returncode == 0, r.stderr
    said = [ln for ln in r.stderr.splitlines() if "sacct" in ln and str(tmp_path) not in ln]
    assert len(said) == 1, r.stderr
    assert "sacct is not installed" in said[0] and "empty" in said[0]
    assert json.loads(out.read_text())[0]["job_name"] is None


# ---------------------------------------------------------------------------------------------
# Item 14: the catalog cache keeps the few most recently used markers
# ---------------------------------------------------------------------------------------------


def test_catalog_cache_keeps_the_most_recently_used_markers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from analyzer.catalog import cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(cache.NO_CACHE_ENV, raising=False)
    d = tmp_path / "mcore-diagnose"
    keys = [f"{i:032x}" * 2 for i in range(cache.KEEP + 6)]
    for i, key in enumerate(keys):  # one a day, oldest first
        cache.mark_validated(key, [{"pattern": []}])
        marker = d / f"validated-{key[:32]}"
        os.utime(marker, (1_000_000 + i * 86400,) * 2)
    (d / "README").write_text("not a marker")  # synthetic: a file the cache did not write
    assert cache.is_validated(keys[0]) is False  # pruned on a later write
    assert cache.is_validated(keys[-1])
    markers = sorted(p.name for p in d.glob("validated-*"))
    assert len(markers) == cache.KEEP  # not one per pattern set or version
    assert (d / "README").exists()
    # a marker that is used survives the next writes; one that is not goes
    used, unused = keys[-cache.KEEP], keys[-cache.KEEP + 1]
    assert cache.is_validated(used)
    cache.mark_validated(f"{999:032x}" * 2, [])
    assert cache.is_validated(used) and not cache.is_validated(unused)


def test_catalog_cache_prune_tolerates_a_marker_removed_meanwhile(tmp_path: Path) -> None:
    from analyzer.catalog import cache

    for i in range(cache.KEEP + 2):
        (tmp_path / f"validated-{i:032x}").write_text("[]")
    gone = tmp_path / f"validated-{0:032x}"
    real_glob = Path.glob

    def racing_glob(self: Path, pattern: str):  # type: ignore[no-untyped-def]
        found = list(real_glob(self, pattern))
        gone.unlink()  # another run pruned it between the listing and the removal
        return found

    import unittest.mock

    with unittest.mock.patch.object(Path, "glob", racing_glob):
        cache.prune(tmp_path)
    assert len(list(tmp_path.glob("validated-*"))) == cache.KEEP


# ---------------------------------------------------------------------------------------------
# Item 17: wording
# ---------------------------------------------------------------------------------------------


def _text(sample: Path, fmt: str = "text") -> str:
    from analyzer.report import render

    return render(analysis(sample), fmt, width=100)


def test_a_verdict_without_a_rank_reads_as_a_sentence() -> None:
    out = _text(FORMATS / "duplicate-gpu")  # ranks 4 and 5 failed alike: no rank named
    assert "First failing no single rank" not in out
    assert "First failing rank not singled out, on node gpu-node-002" in out


def test_an_unknown_size_is_left_out_not_shown_as_a_question_mark() -> None:
    from analyzer.decide.assemble import _unknowns

    # the catalog's cause with no captured size (rendered by catalog.model.fill_template as "?")
    said = _unknowns("World size ? is not a multiple of the model-parallel size ? (TP x PP x CP).")
    assert "?" not in said.replace("(TP x PP x CP).", "")
    assert said.startswith("World size is not a multiple of the model-parallel size (TP")
    assert _unknowns("Rank ? raised") == "A rank raised"  # unchanged


def test_downstream_bullets_do_not_end_in_downstream() -> None:
    out = _text(FORMATS / "cuda-oom-cascade")
    assert "Downstream symptoms" in out
    assert "— downstream" not in out and "—\n  downstream" not in out


def test_the_oom_fix_does_not_repeat_the_cause_figures() -> None:
    v = analysis(FORMATS / "cuda-oom-cascade").diagnosis.verdict
    assert "7.82 GiB" in v.cause
    assert "7.82 GiB" not in v.fix and "79.10 GiB" not in v.fix and "3.21 GiB" not in v.fix
    assert v.fix.startswith("With TP=2, PP=1, CP=1, DP=4: lower --micro-batch-size")


def test_a_hang_with_a_named_culprit_does_not_send_the_user_to_find_one() -> None:
    from tests.helpers import REAL

    for job in (FORMATS / "pure-hang-missing-rank", FORMATS / "hang-lowest-last-enqueued",
                FORMATS / "collective-mismatch", REAL / "fr-late-rank"):
        v = analysis(job).diagnosis.verdict
        assert v.rank is not None, job
        assert "did NOT time out" not in v.fix, (job, v.fix)
        assert "find the first failing rank" not in v.fix, (job, v.fix)
        assert f"rank {v.rank}'s own log" in v.fix, (job, v.fix)


def test_the_evidence_of_a_culprit_without_a_line_says_so() -> None:
    # pure-hang-missing-rank: rank 6 is the culprit because it is the one rank that logged no
    # timeout; it logged nothing at all, so the evidence is another rank's line, and says so.
    out = _text(FORMATS / "pure-hang-missing-rank")
    evidence = out.split("\nEvidence\n", 1)[1].splitlines()[0]
    assert evidence.startswith("pure-hang-52007.err:9  rank 0 on node gpu-node-001")
    assert "rank 6 logged no line of its own" in evidence


def test_the_evidence_puts_the_culprit_line_first() -> None:
    for name in ("hang-lowest-last-enqueued", "collective-mismatch"):
        d = analysis(FORMATS / name).diagnosis
        assert d.verdict.evidence[0].rank == d.verdict.rank, name


def test_the_unknown_page_does_not_say_cause_not_identified_above_a_cause() -> None:
    from tests.helpers import REAL

    page = _text(REAL / "unknown-loader-fatal", "html")
    assert "not identified" not in page.lower()
    assert "no catalog pattern" in page.lower()


def test_flags_do_not_break_at_their_hyphens_in_html() -> None:
    page = _text(FORMATS / "cuda-oom-cascade", "html")
    assert '<span class="nw">(--use-distributed-optimizer);</span>' in page or (
        '<span class="nw">--use-distributed-optimizer</span>' in page
    )
    assert ".nw{white-space:nowrap}" in page


def test_an_empty_builtin_catalog_names_a_plain_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib.resources.readers import MultiplexedPath

    import analyzer.catalog.load as load
    from analyzer.catalog.model import CatalogError

    empty = MultiplexedPath(str(tmp_path))  # an installed namespace package with no file
    monkeypatch.setattr(load.resources, "files", lambda _name: empty)
    with pytest.raises(CatalogError) as exc:
        load.builtin_files()
    assert "MultiplexedPath" not in str(exc.value)
    assert f"no *.toml file in {tmp_path}" in str(exc.value)


# ---------------------------------------------------------------------------------------------
# Items 10 and 11: widths and hanging indents; -v shows long lines whole
# ---------------------------------------------------------------------------------------------


def _tty_lines(*args: str, columns: int = 80) -> list[str]:
    from tests.helpers import cli_on_tty

    out = cli_on_tty(*args, env={"NO_COLOR": "1", "COLUMNS": str(columns), "LINES": "50"})
    return out.replace("\r\n", "\n").splitlines()


def test_lint_findings_fit_80_columns_with_a_hanging_indent() -> None:
    from tests.helpers import ROOT

    script = ROOT / "tests" / "lint_scripts" / "four-mistakes.sbatch"
    lines = _tty_lines("lint", str(script))
    assert lines and max(map(len, lines)) <= 80, max(lines, key=len)
    head = next(i for i, ln in enumerate(lines) if "[tasks-per-node]" in ln)
    assert lines[head + 1].startswith("    ") and lines[head + 1].strip()  # wrapped, indented
    fix = next(i for i, ln in enumerate(lines) if ln.startswith("  fix: "))
    assert lines[fix + 1].startswith(" " * 7)  # under the fix's text, not at column 0
    assert not any(ln.endswith(" ") for ln in lines)


def test_lint_listing_uses_the_width_it_is_given() -> None:
    from analyzer.lint.report import render_findings
    from analyzer.lint.rules import Finding

    # synthetic finding: the mechanism of wrapping, not a real rule's words
    f = Finding(rule="r", severity="note", line=1, message="word " * 40, fix="fix " * 30,
                reason="why " * 30)
    text = render_findings([("s.sbatch", [f])], {"s.sbatch": ["srun " + "x" * 150]}, color=False,
                  width=60)
    assert max(map(len, text.splitlines())) <= 60


def test_patterns_show_fits_80_columns() -> None:
    lines = _tty_lines("patterns", "show", "nccl.watchdog.timeout")
    assert max(map(len, lines)) <= 80, max(lines, key=len)
    regex = next(ln for ln in lines if ln.startswith("regex:"))
    i = lines.index(regex)
    joined = regex[10:] + "".join(ln[10:] for ln in lines[i + 1:] if ln.startswith(" " * 10))
    from tests.helpers import builtin_catalog

    assert joined.startswith(builtin_catalog().by_id["nccl.watchdog.timeout"].regex.pattern)


def test_verbose_skipped_lines_fit_the_terminal() -> None:
    from analyzer.report.texttable import hanging

    # synthetic path and reason: the wrapping of one "skipped" line
    line = hanging("skipped ", "torchrun-logs/" + "deep/" * 20 + "x.md: not a log file name", 80)
    assert max(map(len, line.splitlines())) <= 80
    assert all(ln.startswith(" " * 8) for ln in line.splitlines()[1:])
    assert hanging("skipped ", "a.md: why", None) == "skipped a.md: why"  # a pipe: one line


def test_triage_text_summary_in_a_file_is_100_columns_with_hanging_indents(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    from tests.helpers import REAL

    out = tmp_path / "summary.txt"
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", "triage", str(REAL), "-j", "1", "--summary",
         str(out), "-o", str(tmp_path / "t.json")],
        capture_output=True, text=True, check=False,
    )
    assert r.returncode in (0, 1), r.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert max(map(len, lines)) == 100 or max(map(len, lines)) < 100
    assert max(map(len, lines)) > 80  # the width is used
    starts = ("Triage:", "Causes by count", "Node implication", "left unknown", "note:",
              "Against")
    flush = [ln for ln in lines if ln and not ln.startswith(" ")]
    assert all(ln.startswith(starts) for ln in flush), [
        ln for ln in flush if not ln.startswith(starts)]


def test_verbose_shows_long_traceback_lines_whole() -> None:
    from analyzer.report import render

    a = analysis(FORMATS / "cuda-oom-cascade")
    ev = a.diagnosis.verdict.evidence[0]
    long = [c for c in ev.context if len(c) > 80]
    assert long
    for width in (80, 100):
        out = render(a, "terminal", width=width, verbose=True)
        assert max(map(len, out.splitlines())) <= width
        flat = "".join(out.split())
        for c in long:  # every character of every long line is there: nothing cut with "…"
            assert "".join(c.split()) in flat, c
    plain = render(a, "terminal", width=80)
    assert "…" in plain  # the default view still cuts them


def test_the_grid_legend_wraps_under_itself() -> None:
    out = _text(FORMATS / "nccl-timeout-torch-2.12-slurm-25")
    grid = out.split("Rank grid", 1)[1].splitlines()
    legend = next(i for i, ln in enumerate(grid) if ln.startswith("  X first failing rank"))
    block = grid[legend : grid.index("", legend)]
    assert len(block) > 1  # it does wrap at 100 columns
    assert all(ln.startswith("  ") for ln in block)


def _outside_fences(text: str) -> list[str]:
    out, fenced = [], False
    for ln in text.splitlines():
        if ln.startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append(ln)
    return out


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_markdown_keeps_table_cells_short_and_wraps_prose(sample: Path) -> None:
    from analyzer.report import render

    lines = _outside_fences(render(analysis(sample), "markdown"))
    rows = [ln for ln in lines if ln.startswith("|")]
    assert rows and max(map(len, rows)) <= 100, max(rows, key=len)  # a row cannot wrap
    long = [ln for ln in lines if len(ln) > 100 and " " in ln.strip()[:100]
            and not ln.startswith("#")]  # a heading is one line
    assert not long, long[:2]  # prose wraps (only one unbroken word may pass the width)


def test_wrapped_markdown_never_starts_a_block() -> None:
    from analyzer.report.markdown import wrap

    # synthetic text: a flag and a list marker fall at the break
    lines = wrap("word " * 18 + "- not-a-list --flag 1. two", "- ", "  ", width=100)
    assert all(not ln[2:].startswith(("-", "1.")) for ln in lines[1:])
    assert " ".join(ln[2:] for ln in lines) == ("word " * 18 + "- not-a-list --flag 1. two")

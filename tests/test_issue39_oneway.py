"""Issue 39, items 3-5: one way in for each fact, the diagnosis as the report's input, options
as values.

* Everything the decision needs is read before it (``analyze``): ``analyzer/decide`` reads no
  file, and making the diagnosis reads none either (so it may be made at any time).
* A shared catalog is never written by a job (patterns switched off while reading belong to
  that job's result).
* ``Diagnosis`` is frozen all the way down, and a report is made from it alone.
* ``AnalyzeOptions`` and ``RenderOptions`` carry the options; the CLI types its catalog.

The jobs are recorded ones from ``sample_logs/real``; the one synthetic line (a user pattern's
catastrophic backtracking) is labelled where it is written.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import inspect
import pathlib
import shutil
from pathlib import Path

import pytest

from analyzer.api import AnalyzeOptions, analyze, diagnose
from analyzer.catalog.load import load_catalog
from analyzer.catalog.model import Catalog
from analyzer.report import RenderOptions, render, render_report
from tests.helpers import REAL, ROOT, SLOW_PATTERN

DECIDE = ROOT / "analyzer" / "decide"
REPORT = ROOT / "analyzer" / "report"

_IO_CALLS = frozenset({
    "open", "read_text", "read_bytes", "write_text", "write_bytes", "exists", "lexists",
    "is_file", "is_dir", "iterdir", "glob", "rglob", "resolve", "stat", "lstat", "scandir",
    "listdir", "walk", "load_config", "load_dumps", "load_dump", "find_script", "read_script",
})
"""Calls that read the file system (or wrap a read: the lint config, Flight Recorder dumps)."""
_IO_MODULES = frozenset({"subprocess", "glob", "shutil", "tempfile", "os", "io"})
_DEV_TOOLS = {"docs.py"}
"""``decide/docs.py`` rewrites docs/decisions.md when run by hand; no diagnosis imports it."""


def _io_in(path: Path) -> list[str]:
    """``file:line: what`` for each file-system call or I/O module import in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in _IO_CALLS:
                found.append(f"{path.name}:{node.lineno}: {name}()")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [
                node.module or ""]
            for m in mods:
                if m.split(".")[0] in _IO_MODULES:
                    found.append(f"{path.name}:{node.lineno}: import {m}")
    return found


def test_decide_does_no_io() -> None:
    found = [x for p in sorted(DECIDE.glob("*.py")) if p.name not in _DEV_TOOLS for x in _io_in(p)]
    assert found == [], "analyzer/decide reads files; read it in analyzer/read or flightrec"


def _refuse(*_a: object, **_k: object) -> None:
    raise AssertionError("the diagnosis read the file system")


@pytest.mark.parametrize("name", ["master-addr-nodelist", "fr-rank-stops"])
def test_the_diagnosis_reads_no_file(name: str, catalog: Catalog) -> None:
    a = analyze(REAL / name, catalog=catalog, workers=1)
    expected = diagnose(a)  # imports whatever the diagnosis imports lazily
    assert expected.batch_script is not None  # both jobs carry their sbatch script
    with pytest.MonkeyPatch.context() as m:  # every way to read a file raises meanwhile
        for attr in ("open", "read_bytes", "read_text", "iterdir", "is_dir", "is_file",
                     "exists", "resolve", "glob"):
            m.setattr(pathlib.Path, attr, _refuse)
        m.setattr(builtins, "open", _refuse)
        try:
            got = diagnose(a)
        except AssertionError as exc:
            got = exc
    assert got == expected


def test_a_script_gone_after_analyze_still_advises(tmp_path: Path, catalog: Catalog) -> None:
    """SLURM's copy of the script is removed right after the job is read (``cleanup``): the
    diagnosis, made later, still has it (it was read with the logs)."""
    job = tmp_path / "job"
    job.mkdir()
    shutil.copy(REAL / "master-addr-nodelist" / "slurm-1.out", job)
    copy = tmp_path / "scontrol" / "slurm-1.sh"
    copy.parent.mkdir()
    shutil.copy(REAL / "master-addr-nodelist" / "train.sbatch", copy)
    a = analyze(job, catalog=catalog, workers=1, script=copy)
    shutil.rmtree(copy.parent)
    d = a.diagnosis
    assert d.batch_script == str(copy)
    assert any(e.startswith("slurm-1.sh:") or str(copy) in e
               for x in d.advisories for e in x.evidence), d.advisories




def test_a_shared_catalog_is_never_written_by_a_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker process switches the slow pattern off: that job reports it, the parent's
    catalog (shared by every job of a triage) keeps it on, the next job does not report it."""
    import analyzer.read.readjob as read_mod

    monkeypatch.setattr(read_mod, "PARALLEL_MIN_BYTES", 0)
    pats = tmp_path / "patterns"
    pats.mkdir()
    (pats / "slow.toml").write_text(SLOW_PATTERN)
    cat = load_catalog([pats], use_env=False)
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "slurm-00.out").write_text("a" * 60 + "b\n")  # the smallest: a worker reads it
    for i in range(1, 4):
        (slow / f"slurm-{i:02d}.out").write_text("hello\n" * 200)
    a = analyze(slow, catalog=cat, workers=2)
    assert a.read.disabled.keys() == {"user.redos"}
    assert any("user.redos" in p and "longer than" in p for p in a.diagnosis.problems)
    assert cat.by_id["user.redos"].disabled_reason is None
    b = analyze(REAL / "exception-cascade", catalog=cat, workers=1)
    assert not any("user.redos" in p for p in b.diagnosis.problems)


def test_the_diagnosis_is_frozen_all_the_way_down(catalog: Catalog) -> None:
    d = analyze(REAL / "master-addr-nodelist", catalog=catalog, workers=1).diagnosis
    for obj, attr in ((d, "status"), (d.verdict, "cause"), (d.verdict.evidence[0], "text"),
                      (d.advisories[0], "explains_verdict"), (d.shape, "world")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, attr, None)


@pytest.mark.parametrize("name", ["master-addr-nodelist", "fr-rank-stops"])
def test_a_report_is_made_from_the_diagnosis_alone(name: str, catalog: Catalog) -> None:
    a = analyze(REAL / name, catalog=catalog, workers=1)
    d = a.diagnosis
    # a copy of the diagnosis, with nothing of the analysis around it
    alone = dataclasses.replace(d)
    for fmt in ("terminal", "text", "markdown", "html", "json"):
        assert render(alone, fmt, width=100) == render(a, fmt, width=100), fmt
    assert "Flight Recorder" in render(alone, "text") or name != "fr-rank-stops"
    assert alone.paths == (str(REAL / name),)
    assert name in render(alone, "markdown").split("| logs |")[1].split("\n")[0]


def test_report_imports_nothing_from_api() -> None:
    bad = []
    for p in sorted(REPORT.glob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("analyzer.api"):
                bad.append(f"{p.name}:{node.lineno}")
    assert bad == []
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "exclude_type_checking_imports = false" in text  # lint-imports sees those imports


def test_analyze_takes_options_as_a_value(catalog: Catalog) -> None:
    job = REAL / "exception-cascade"
    o = AnalyzeOptions(catalog=catalog, workers=1)
    by_value = analyze(job, o)
    by_name = analyze(job, catalog=catalog, workers=1)
    assert by_value.diagnosis == by_name.diagnosis
    assert analyze(job, o, workers=1).rows == by_value.rows  # a name overrides the value
    with pytest.raises(TypeError, match="unknown option wrokers; AnalyzeOptions has"):
        analyze(job, o, wrokers=1)


def test_render_options_are_one_value(catalog: Catalog) -> None:
    d = analyze(REAL / "exception-cascade", catalog=catalog, workers=1).diagnosis
    o = RenderOptions("text", width=80, verbose=True)
    assert render_report(d, o) == render(d, "text", width=80, verbose=True)
    assert render_report(d, RenderOptions("text", quiet=True)).count("\n") == 1
    with pytest.raises(ValueError, match="unknown report format 'pdf'"):
        RenderOptions("pdf")


def test_few_parameters_and_a_typed_catalog_through_the_cli() -> None:
    from analyzer.decide.advisories import launch_advisories

    assert len(inspect.signature(launch_advisories).parameters) <= 2
    cli = ROOT / "analyzer" / "cli"
    typed = [f"{p.name}: {ln.strip()}" for p in sorted(cli.glob("*.py"))
             for ln in p.read_text(encoding="utf-8").splitlines()
             if "catalog: Any" in ln or ("def _catalog(" in ln and "-> Any" in ln)]
    assert typed == []


def test_the_flight_recorder_finding_is_the_decisions_one_input(catalog: Catalog) -> None:
    """The hang reasoning takes the dumps' culprit from the finding it is given, not from a
    row of the event table: without the finding the row alone does not count, and the finding
    counts without the row."""
    from analyzer.decide.flightrec import CulpritEvent
    from analyzer.decide.reason import ReadSummary, diagnose_rows
    from analyzer.flightrec.analyze import FrFinding
    from analyzer.model.event import Event

    a = analyze(REAL / "fr-rank-stops", catalog=catalog, workers=1)
    fr, geo = a.flightrec, a.attributed.geometry
    assert fr is not None and fr.rank is not None

    def verdict(rows: list[Event], finding: FrFinding | None) -> tuple[int | None, float]:
        v = diagnose_rows(rows, a.facts, geo, ReadSummary(flight_recorder=finding)).verdict
        return v.rank, v.confidence

    with_dumps = verdict(a.rows, fr)
    assert with_dumps == (fr.rank, 0.9)  # the dumps' kind 'missing', the logs agreeing
    without_row = [r for r in a.rows if not isinstance(r, CulpritEvent)]
    assert verdict(without_row, fr) == with_dumps
    assert verdict(a.rows, None) != with_dumps  # the logs alone are less sure

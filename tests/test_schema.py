"""Every machine-readable output validates against the JSON Schemas of docs/schema/ (the
contract of docs/contract.md), on every sample job."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the test extras")

from analyzer.catalog.vocabulary import CATEGORIES  # noqa: E402
from analyzer.report.schemas import SCHEMAS, load_schema  # noqa: E402
from tests.helpers import ROOT, SAMPLES, cli_in_process  # noqa: E402


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """``mcore-diagnose ARGS`` in this process (the outputs are what is checked, not the
    process), with the built-in catalog alone."""
    return cli_in_process(*args, env={"MCORE_DIAGNOSE_PATTERNS": None})


def _validator(name: str) -> Any:
    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _errors(name: str, instance: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"[:300]
            for e in _validator(name).iter_errors(instance)]


@pytest.mark.parametrize("name", SCHEMAS)
def test_schemas_are_valid_and_shipped_copies_match_docs(name: str) -> None:
    _validator(name)
    assert load_schema(name) == json.loads(
        (ROOT / "docs" / "schema" / f"{name}.schema.json").read_text(encoding="utf-8"))


def test_category_enum_is_the_contract() -> None:
    enum = load_schema("diagnose")["$defs"]["verdict"]["properties"]["category"]["enum"]
    assert enum == list(CATEGORIES)
    contract = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    for c in CATEGORIES:
        assert f"`{c}`" in contract


def test_every_sample_validates_in_one_json_lines_run() -> None:
    assert len(SAMPLES) >= 20
    r = run(*map(str, SAMPLES), "-f", "json")
    assert r.returncode in (0, 1, 2), r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(SAMPLES)
    bad = {}
    for sample, line in zip(SAMPLES, lines, strict=True):
        obj = json.loads(line)
        assert obj["job"] == str(sample)
        errs = _errors("diagnose", obj)
        if errs:
            bad[sample.name] = errs[:5]
    assert not bad, bad


def test_unreadable_object_validates(tmp_path: Path) -> None:
    r = run(str(tmp_path / "missing"), "-f", "json")
    assert r.returncode == 3
    assert not _errors("diagnose", json.loads(r.stdout))


def test_an_invalid_report_is_rejected() -> None:
    """The schema has teeth: a wrong category, a string rank, a second timestamp form."""
    sample = ROOT / "sample_logs" / "real" / "exception-cascade"
    good = json.loads(run(str(sample), "-f", "json").stdout)
    assert not _errors("diagnose", good)
    for path, value in ((("verdict", "category"), "oom"), (("verdict", "rank"), "2"),
                        (("verdict", "time"), "2026-12-02 17:21:57"), (("status",), "broken")):
        bad = json.loads(json.dumps(good))
        target = bad
        for k in path[:-1]:
            target = target[k]
        target[path[-1]] = value
        assert _errors("diagnose", bad), path


@pytest.mark.parametrize("sample", [SAMPLES[0], SAMPLES[len(SAMPLES) // 2], SAMPLES[-1]],
                         ids=lambda p: p.name)
def test_events_validate(sample: Path) -> None:
    for extra in ((), ("--all",), ("--by-rank",)):
        r = run("events", str(sample), "-f", "json", *extra)
        assert r.returncode == 0, r.stderr
        assert not _errors("events", json.loads(r.stdout)), extra


def test_triage_rows_validate(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for s in SAMPLES[:4]:
        shutil.copytree(s, root / s.name)
    (root / "empty-job").mkdir()
    (root / "empty-job" / "slurm-999.out").write_bytes(b"")
    out = tmp_path / "t.json"
    r = run("triage", str(root), "-o", str(out), "-q", "-j", "1")
    assert r.returncode == 0, r.stderr
    rows = json.loads(out.read_text())
    assert len(rows) == 5
    assert not _errors("triage", rows)


def test_events_of_several_jobs_have_a_job_column_and_validate() -> None:
    # two jobs whose events and rank rows are never empty (a job whose world is unknown and
    # whose lines name no rank has no rank row, and so no row to carry its job)
    a = next(s for s in SAMPLES if s.name == "exception-cascade")
    b = next(s for s in SAMPLES if s.name == "cuda-oom-cascade")
    for extra in ((), ("--by-rank",)):
        r = run("events", str(a), str(b), "-f", "json", *extra)
        assert r.returncode == 0, r.stderr
        rows = json.loads(r.stdout)
        assert {row["job"] for row in rows} == {str(a), str(b)}
        assert not _errors("events", rows), extra

    r = run("events", str(a), str(b), "--by-rank")
    assert r.returncode == 0 and r.stdout.splitlines()[0].startswith("| job ")

"""Every machine-readable output of every command validates against its JSON Schema, for every
bundled sample job (``sample_logs/``) and every job of the wild corpus (``tests/wild/``).

``tests/test_schema.py`` checks the schemas themselves (valid, shipped, with teeth); here the
outputs: ``diagnose -f json``, ``events -f json`` with and without ``--all`` and ``--by-rank``
(per job, so a job without events, ``[]``, is covered), the triage table and ``lint -f json``.
The commands run in this process (``analyzer.cli.commands.main``), so the hundred-odd runs cost
no interpreter start each.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the test extras")

from analyzer.catalog.vocabulary import CATEGORIES, ROLES  # noqa: E402
from analyzer.cli.commands import main  # noqa: E402
from analyzer.lint.rules import RULE_IDS, SEVERITIES  # noqa: E402
from analyzer.report.schemas import load_schema  # noqa: E402
from tests.helpers import SAMPLES, WILD, fast_share  # noqa: E402

WILD_JOBS = sorted(p for p in WILD.iterdir() if p.is_dir()) if WILD.is_dir() else []
EVENT_MODES = ((), ("--all",), ("--by-rank",))


def _validator(name: str) -> Any:
    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def errors(name: str, instance: Any) -> list[str]:
    """The schema errors of ``instance`` (empty when it validates)."""
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"[:300]
            for e in _validator(name).iter_errors(instance)]


def cli(*args: str) -> tuple[int, str]:
    """Run the command line in this process: its exit status and standard output."""
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    rc = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(list(args))
        except SystemExit as exc:
            rc = int(exc.code or 0)
    out.flush()
    return rc, raw.getvalue().decode("utf-8")


def cli_json(*args: str) -> Any:
    """The JSON a command prints."""
    rc, text = cli(*args)
    assert rc in (0, 1, 2, 3, 5), (args, rc)
    return json.loads(text)


# --------------------------------------------------------------------------------------------
# The schemas name what the code can produce
# --------------------------------------------------------------------------------------------


def test_events_schema_enums_are_the_vocabulary() -> None:
    """Every role and category the catalog allows is in the events schema (``candidate`` was
    missing: the tool's own output of an unknown failure failed its schema)."""
    d = load_schema("events")["$defs"]
    assert d["event"]["properties"]["role"]["enum"] == list(ROLES)
    assert d["by_rank"]["properties"]["first_role"]["enum"] == [*ROLES, None]
    assert d["event"]["properties"]["category"]["enum"] == list(CATEGORIES)
    assert d["by_rank"]["properties"]["first_category"]["enum"] == [*CATEGORIES, None]


def test_an_empty_event_table_validates() -> None:
    """``[]`` (a job without events) is both an event table and a by-rank table: the schema
    must accept it (a ``oneOf`` rejected it for matching both)."""
    assert not errors("events", [])


def test_the_events_schema_keeps_its_teeth() -> None:
    row = {"rank": 0, "node": None, "local_rank": None, "first_time": None,
           "first_category": None, "first_role": None, "first_pattern": None, "events": 0,
           "last_line": None}
    assert not errors("events", [row])
    assert errors("events", [{**row, "first_role": "culprit"}])
    assert errors("events", [{**row, "rank": "0"}])
    assert errors("events", [{"rank": 0}])


def test_lint_schema_enums_are_the_rules() -> None:
    f = load_schema("lint")["$defs"]["finding"]["properties"]
    assert f["rule"]["enum"] == list(RULE_IDS), "a new lint rule goes into lint.schema.json"
    assert f["severity"]["enum"] == list(SEVERITIES)
    assert errors("lint", {"findings": [{"rule": "nope"}]})


# --------------------------------------------------------------------------------------------
# Every output of every sample
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sample",
    fast_share(SAMPLES, 2, lambda p: f"{p.parent.name}/{p.name}"),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_every_output_of_a_sample_validates(sample: Path) -> None:
    report = cli_json("diagnose", str(sample), "-f", "json")
    assert not errors("diagnose", report)
    for mode in EVENT_MODES:
        rows = cli_json("events", str(sample), "-f", "json", *mode)
        assert isinstance(rows, list)
        assert not errors("events", rows)[:5], mode
    scripts = sorted(sample.glob("*.sbatch"))
    if scripts:
        found = cli_json("lint", *map(str, scripts), "-f", "json")
        assert not errors("lint", found)


def test_a_job_without_events_gives_an_empty_table_that_validates(tmp_path: Path) -> None:
    job = tmp_path / "quiet"
    job.mkdir()
    (job / "slurm-5.out").write_text("iteration 1\niteration 2\n", encoding="utf-8")
    for mode in ((), ("--by-rank",)):
        rows = cli_json("events", str(job), "-f", "json", *mode)
        assert rows == [] or not errors("events", rows)
        assert not errors("events", rows)


def test_triage_of_every_sample_validates(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for s in SAMPLES:
        shutil.copytree(s, root / f"{s.parent.name}-{s.name}")
    (root / "empty-job").mkdir()
    (root / "empty-job" / "slurm-999.out").write_bytes(b"")
    table = tmp_path / "triage.json"
    rc, _ = cli("triage", str(root), "-q", "-j", "1", "-o", str(table))
    assert rc == 0
    rows = json.loads(table.read_text(encoding="utf-8"))
    assert len(rows) == len(SAMPLES) + 1
    assert not errors("triage", rows)[:5]


@pytest.mark.slow
@pytest.mark.skipif(not WILD_JOBS, reason="no wild corpus")
def test_every_diagnosis_of_the_wild_corpus_validates() -> None:
    """The wild corpus (public logs of many programs) in one run of ``diagnose``."""
    paths = [str(p) for p in WILD_JOBS]
    rc, text = cli("diagnose", *paths, "-f", "json")
    assert rc in (0, 1, 2, 3, 5)
    bad = {}
    for line in text.splitlines():
        obj = json.loads(line)
        if errs := errors("diagnose", obj):
            bad[obj.get("job")] = errs[:3]
    assert len(text.splitlines()) == len(paths)
    assert not bad, bad


@pytest.mark.slow
@pytest.mark.skipif(not WILD_JOBS, reason="no wild corpus")
@pytest.mark.parametrize("mode", EVENT_MODES, ids=lambda m: " ".join(m) or "default")
def test_every_event_table_of_the_wild_corpus_validates(mode: tuple[str, ...]) -> None:
    """The wild corpus in one run of ``events`` per mode (a test each, so the cores share them)."""
    rows = cli_json("events", *(str(p) for p in WILD_JOBS), "-f", "json", *mode)
    assert rows, mode
    assert not errors("events", rows)[:5], mode

"""Every bundled sample job: the verdict's category, rank and node match its expected.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from analyzer.api import analyze
from tests.helpers import SAMPLES, builtin_catalog

CATALOG = builtin_catalog()


def _expected(d: Path) -> dict:
    return tomllib.loads((d / "expected.toml").read_text())


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sample_verdict(sample: Path) -> None:
    exp = _expected(sample)
    d = analyze(sample, catalog=CATALOG, workers=1).diagnosis
    v = d.verdict
    want_rank = None if exp["rank"] == -1 else exp["rank"]
    assert v.category == exp["category"], v.cause
    assert v.rank == want_rank, (v.rank_note, v.cause)
    if exp.get("node"):
        assert exp["node"] in {v.node, str(v.node_index)}, (v.node, v.node_index)
    if exp["category"] == "none":
        assert d.status == "ok" and d.exit_code == (5 if d.launch_mistake else 2)
    else:
        assert d.status == "failed"
        assert v.evidence, "a failure verdict carries evidence"


def test_there_are_enough_samples() -> None:
    kinds = [_expected(s).get("kind") for s in SAMPLES]
    assert kinds.count("real") >= 12
    assert kinds.count("format-built") >= 8


@pytest.mark.parametrize(
    "sample",
    [s for s in SAMPLES if _expected(s)["category"] == "none"],
    ids=lambda p: p.name,
)
def test_no_pattern_fires_on_a_successful_job(sample: Path) -> None:
    a = analyze(sample, catalog=CATALOG, workers=1)
    loud = [(r.pattern_id, r.text) for r in a.rows if r.role != "context"]
    assert loud == []


# the launch rule that leads the verdict of a recorded launch mistake (issue 41)
LEADING_RULE = {"uv-sync-in-job": "uv-sync", "uv-sync-in-job-per-task": "uv-sync"}


@pytest.mark.parametrize("name", sorted(LEADING_RULE))
def test_a_recorded_launch_mistake_leads_its_verdict(name: str) -> None:
    sample = next(s for s in SAMPLES if s.name == name)
    d = analyze(sample, catalog=CATALOG, workers=1).diagnosis
    assert [a.rule for a in d.advisories if a.explains_verdict] == [LEADING_RULE[name]]
    assert d.verdict.cause.startswith("Launch mistake: ")

"""Re-recorded Flight Recorder jobs: the dumps still name the injected culprit (``slurm``)."""

from __future__ import annotations

import pytest

from analyzer import analyze
from harness.jobs import RecordedScenario
from harness.scenarios import FR_SCENARIOS

pytestmark = pytest.mark.slurm


@pytest.mark.parametrize("name", [s.name for s in FR_SCENARIOS])
def test_fresh_dumps_name_the_culprit(
    name: str, scenario_results: dict[str, RecordedScenario]
) -> None:
    rec = scenario_results[name]
    sc = rec.result.scenario
    assert (rec.recording / "fr").is_dir(), f"{name}: no dumps written"
    assert (rec.recording / "TORCHFRTRACE.md").is_file()
    a = analyze(rec.recording)
    assert a.flightrec is not None
    assert a.flightrec.rank == sc.rank, a.flightrec.reason
    v = a.diagnosis.verdict
    assert (v.category, v.rank, v.node) == (sc.category, sc.rank, sc.node)

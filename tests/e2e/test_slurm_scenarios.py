"""Re-run every scenario on a private SLURM cluster and compare with sample_logs/real/."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from harness.jobs import RecordedScenario
from harness.record import check_recording, leftover_machine_paths
from harness.scenarios import SCENARIOS

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_logs" / "real"
NAMES = [s.name for s in SCENARIOS]

pytestmark = pytest.mark.slurm


def normalised_names(root: Path, job_id: int) -> list[str]:
    """Relative file names with the job id (``slurm-%j.out``, ``%x-%j.err``, per-task
    ``slurm-%j-%t.out``) and torchrun's
    ``--log-dir`` run dir (``<rdzv-id = job id>_<random>``) masked."""
    names = []
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        per_task = re.sub(rf"^slurm-{job_id}-(\d+)\.(out|err)$", r"slurm-{jobid}-\1.\2", rel)
        if per_task != rel:  # a per-task name first: its task number may equal the job id
            rel = per_task
        else:
            rel = re.sub(rf"(?<!task)-{job_id}\.(out|err)$", r"-{jobid}.\1", rel)
        rel = re.sub(rf"^torchrun-logs/{job_id}_[^/]+/", "torchrun-logs/{jobid}_*/", rel)
        names.append(rel)
    return sorted(names)


@pytest.mark.parametrize("name", NAMES)
def test_scenario_state(name: str, scenario_results: dict[str, RecordedScenario]) -> None:
    rec = scenario_results[name]
    assert rec.result.state == rec.result.scenario.expected_state, (
        f"{name}: job {rec.result.job_id} ended {rec.result.state}"
    )


@pytest.mark.parametrize("name", NAMES)
def test_scenario_must_contain(name: str, scenario_results: dict[str, RecordedScenario]) -> None:
    rec = scenario_results[name]
    problems = [
        p
        for p in check_recording(rec.result.scenario, rec.recording, rec.result.state)
        if p.startswith("no match")
    ]
    assert not problems, f"{name}: {problems}"


@pytest.mark.parametrize("name", NAMES)
def test_scenario_matches_committed_sample(
    name: str, scenario_results: dict[str, RecordedScenario]
) -> None:
    rec = scenario_results[name]
    sample = SAMPLES / name
    assert (sample / "expected.toml").exists(), f"no committed sample for {name}"
    expected = tomllib.loads((sample / "expected.toml").read_text())
    sc = rec.result.scenario
    assert expected["category"] == sc.category
    assert expected["rank"] == sc.rank
    assert expected["node"] == sc.node
    assert expected["must_contain"] == list(sc.must_contain)
    committed = normalised_names(sample, int(expected["job_id"]))
    fresh = normalised_names(rec.recording, rec.result.job_id)
    assert fresh == committed
    # the committed sample itself still shows its fault
    assert not [p for p in check_recording(sc, sample, sc.expected_state)], name


@pytest.mark.parametrize("name", NAMES)
def test_recording_has_no_machine_paths(
    name: str, scenario_results: dict[str, RecordedScenario]
) -> None:
    assert leftover_machine_paths(scenario_results[name].recording) == []

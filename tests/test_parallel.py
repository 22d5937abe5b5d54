"""The parallel run (pytest-xdist) keeps what tests share outside their process in one worker
(``tests/conftest.py``). The items here are stand-ins (synthetic), not collected tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CHECKOUT_WRITERS, SHARED_CLUSTER, shared_group
from tests.helpers import ROOT


class _Item:
    """What ``shared_group`` reads of a ``pytest.Item``: markers, fixture names, path."""

    def __init__(self, path: Path, markers: tuple[str, ...] = (), fixtures: tuple[str, ...] = ()):
        self.path = path
        self.fixturenames = list(fixtures)
        self._markers = markers

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self._markers else None


def _group(item: _Item, updating: bool) -> str | None:
    return shared_group(item, updating)  # type: ignore[arg-type]


E2E = ROOT / "tests" / "e2e" / "test_slurm_scenarios.py"


@pytest.mark.parametrize("updating", [False, True])
def test_every_test_of_the_cluster_runs_in_one_worker(updating: bool) -> None:
    assert _group(_Item(E2E, markers=("slurm",)), updating) == SHARED_CLUSTER
    # a test that uses the cluster without the marker still shares its worker
    used = _Item(ROOT / "tests" / "test_x.py", fixtures=("slurm_jobs", "slurm_cluster"))
    assert _group(used, updating) == SHARED_CLUSTER


def test_snapshot_writers_share_a_worker_only_when_updating() -> None:
    docs = _Item(ROOT / "tests" / "test_report_docs.py")
    reports = _Item(ROOT / "tests" / "test_reports.py")
    for item in (docs, reports):
        assert _group(item, updating=True) == CHECKOUT_WRITERS
        assert _group(item, updating=False) is None


def test_any_other_test_runs_in_any_worker() -> None:
    plain = _Item(ROOT / "tests" / "test_cli.py", fixtures=("tmp_path",))
    assert _group(plain, updating=True) is None

"""The parallel run (pytest-xdist) keeps what tests share outside their process in one worker
(``tests/conftest.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CHECKOUT_WRITERS, SHARED_CLUSTER, shared_scope
from tests.helpers import ROOT


@pytest.mark.parametrize("updating", [False, True])
def test_every_test_of_the_cluster_shares_one_worker(updating: bool) -> None:
    for nodeid in ("tests/e2e/test_slurm_scenarios.py::test_scenario[cascade]",
                   "tests/e2e/test_recipe_slurm.py::test_recipe"):
        assert shared_scope(nodeid, updating) == SHARED_CLUSTER


def test_snapshot_writers_share_a_worker_only_when_updating() -> None:
    for nodeid in ("tests/test_report_docs.py::test_docs_block_is_current[x]",
                   "tests/test_reports.py::test_reports_of_samples[y]"):
        assert shared_scope(nodeid, updating=True) == CHECKOUT_WRITERS
        assert shared_scope(nodeid, updating=False) is None


def test_the_tests_of_one_job_read_as_shipped_share_a_worker() -> None:
    scopes = {shared_scope(f"tests/{f}.py::test_x[cuda-oom-cascade]", updating=False)
              for f in ("test_firstlines", "test_progresslines", "test_reader_fastpaths")}
    assert scopes == {"read:[cuda-oom-cascade]"}


def test_the_tests_of_a_module_with_a_costly_module_result_share_a_worker() -> None:
    """The wild corpus is analysed once per process: its floors' tests run in one worker."""
    scopes = {shared_scope(f"tests/test_wild.py::{t}", updating=False)
              for t in ("test_no_case_crashes", "test_category_accuracy_at_least_floor")}
    assert scopes == {"tests/test_wild.py"}


def test_any_other_test_runs_in_any_worker() -> None:
    assert shared_scope("tests/test_cli.py::test_stdin", updating=True) is None
    assert shared_scope("tests/test_e2e_like.py::test_x", updating=False) is None


_PROBE = '''
import os

import pytest


@pytest.mark.parametrize("n", range(6))
def test_probe(n):
    with open(os.environ["PROBE_OUT"], "a") as f:
        f.write(os.environ.get("PYTEST_XDIST_WORKER", "none") + "\\n")
'''


def test_the_cluster_tests_of_a_parallel_run_meet_in_one_worker(tmp_path: Path) -> None:
    """A real run on two workers: six tests under ``tests/e2e/`` (a synthetic probe, with the
    scheduler hook of ``tests/conftest.py``) all run in the same worker, so one private cluster
    starts. (Grouped by ``xdist_group`` markers, as first written, each worker started one:
    xdist 3.8 loses the group under pytest 9.)"""
    probe = tmp_path / "probe"
    (probe / "tests" / "e2e").mkdir(parents=True)
    (probe / "tests" / "e2e" / "test_probe.py").write_text(_PROBE, encoding="utf-8")
    hook = "from tests.conftest import pytest_xdist_make_scheduler  # noqa: F401\n"
    (probe / "conftest.py").write_text(hook, encoding="utf-8")
    ini = probe / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(ini),
         "--rootdir", str(probe), "-n", "2", "--dist=loadgroup",
         "--basetemp", str(tmp_path / "base"), str(probe)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PROBE_OUT": str(tmp_path / "workers"),
             "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    workers = (tmp_path / "workers").read_text().split()
    assert len(workers) == 6 and len(set(workers)) == 1, workers


@pytest.mark.parametrize("one_process", [["-p", "no:xdist"], ["-n", "0"]], ids=" ".join)
def test_the_suite_runs_in_one_process_too(one_process: list[str]) -> None:
    """``pyproject.toml``'s ``addopts`` ask xdist for workers; without xdist (or with ``-n 0``)
    the suite still runs (the scheduler hook of ``tests/conftest.py`` once made a run without
    xdist an internal error)."""
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *one_process,
         "tests/test_event.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and "gw0" not in r.stdout

"""Shared fixtures, and the hypothesis profile.

Fixtures (plain values for module-level code are in ``tests/helpers.py``):

* ``repo_root`` (session): the repository root.
* ``sample_logs`` (session): ``sample_logs/`` (``real/`` and ``formats/`` below it).
* ``catalog`` (session): the built-in pattern catalog, loaded once; do not change it.
* ``make_job``: ``make_job(files, name="job")`` writes ``files`` (``{relative path: str or
  bytes}``) into ``tmp_path / name`` and returns that directory (see ``helpers.write_job``).

Under CI, property tests draw the same examples on every run (a run that passes keeps passing);
locally they explore anew each time and keep what fails.

The suite runs on every core (pytest-xdist: ``--numprocesses=auto --dist=loadgroup`` in
``pyproject.toml``). Tests that share something outside their process run in one worker
(``shared_scope``): every test under ``tests/e2e/`` (the session's one private SLURM cluster),
the tests of a module whose module-scoped result is costly (the wild corpus analysed),
and under ``UPDATE_SNAPSHOTS=1`` every test that may rewrite a file of the checkout. ``-n 0``
or ``-p no:xdist`` runs one process.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from analyzer.catalog.model import Catalog
from tests.helpers import ROOT, SAMPLE_LOGS, MakeJob, builtin_catalog, write_job

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def sample_logs() -> Path:
    return SAMPLE_LOGS


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return builtin_catalog()


@pytest.fixture
def make_job(tmp_path: Path) -> MakeJob:
    def make(files: Mapping[str, str | bytes], name: str = "job") -> Path:
        return write_job(tmp_path / name, files)

    return make


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Without pytest-xdist (``-p no:xdist``, or not installed) accept and ignore the options
    ``pyproject.toml``'s ``addopts`` gives it: the suite then runs in one process."""
    if pluginmanager.has_plugin("xdist"):
        return
    group = parser.getgroup("xdist", "pytest-xdist is not loaded: one process")
    group.addoption("--numprocesses", dest="numprocesses", default=None,
                    help="ignored: pytest-xdist is not loaded")
    group.addoption("--dist", dest="dist", default="no", help="ignored: pytest-xdist is not loaded")


SHARED_CLUSTER = "slurm"
"""The scope of the tests under ``tests/e2e/``: they share the session's private SLURM cluster
(its fixtures live in ``tests/e2e/conftest.py``), so they run in one worker and one starts."""
CHECKOUT_WRITERS = "checkout-writers"
"""The scope of the tests that rewrite files of the checkout under ``UPDATE_SNAPSHOTS=1``
(several of them may edit the same file)."""
_WRITER_MODULES = ("tests/test_report_docs.py", "tests/test_reports.py")
_SHIPPED_READERS = (
    "tests/test_firstlines.py",
    "tests/test_progresslines.py",
    "tests/test_reader_fastpaths.py",
)
"""Files whose tests of one job share that job's read as shipped (``test_reader_needs``)."""
_ONE_WORKER_MODULES = ("tests/test_wild.py", "tests/test_reports_polish.py")
"""Modules whose tests share an expensive module-scoped result (the whole wild corpus
analysed; every sample's reports): in one worker it is computed once, not once per worker."""


def shared_scope(nodeid: str, updating: bool) -> str | None:
    """The scope a test must share with others (one worker runs a scope), or None when any
    worker may run it. Decided from the test id alone: xdist's scheduler sees nothing else."""
    path = nodeid.split("::", 1)[0]
    if path.startswith("tests/e2e/"):
        return SHARED_CLUSTER
    if updating and path in _WRITER_MODULES:
        return CHECKOUT_WRITERS
    if path in _ONE_WORKER_MODULES:
        return path
    if path in _SHIPPED_READERS and nodeid.endswith("]"):
        return "read:" + nodeid[nodeid.index("[") :]  # one job's tests in one worker
    return None


@pytest.hookimpl(optionalhook=True)  # a hook of xdist's: unknown without it
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist=loadgroup`` with the scopes of ``shared_scope`` (pytest-xdist 3.8 cannot group
    by marker under pytest 9: the group it writes into a test's id is lost, every worker
    would start a SLURM cluster); ``xdist_group`` markers still count where they work."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    updating = os.environ.get("UPDATE_SNAPSHOTS") == "1"

    class SharedStateScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return shared_scope(nodeid, updating) or super()._split_scope(nodeid)

    return SharedStateScheduling(config, log)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what collection built (modules, test items, parameters): the cyclic collector,
    run by the interpreter as objects pile up, then never walks those again. Their garbage is
    collected first; objects made by the tests themselves are collected as usual."""
    gc.collect()
    gc.freeze()

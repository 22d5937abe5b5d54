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
``pyproject.toml``). Tests that share something outside their process run in one worker, in
one ``xdist_group``: every SLURM test (the session's one private cluster), and under
``UPDATE_SNAPSHOTS=1`` every test that may rewrite a file of the checkout. ``-n 0`` or
``-p no:xdist`` runs one process.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Mapping
from pathlib import Path

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


def pytest_configure(config: pytest.Config) -> None:
    """Without pytest-xdist, its ``xdist_group`` marker is still known (and does nothing)."""
    if not config.pluginmanager.has_plugin("xdist"):
        config.addinivalue_line("markers", "xdist_group(name): run in one xdist worker")


SHARED_CLUSTER = "slurm"
"""The ``xdist_group`` of the tests that use the session's private SLURM cluster."""
CHECKOUT_WRITERS = "checkout-writers"
"""The ``xdist_group`` of the tests that rewrite files of the checkout under
``UPDATE_SNAPSHOTS=1`` (several of them may edit the same file)."""
_WRITER_MODULES = ("test_report_docs.py", "test_reports.py")


def shared_group(item: pytest.Item, updating: bool) -> str | None:
    """The ``xdist_group`` a test must run in, or None when any worker may run it."""
    fixtures = getattr(item, "fixturenames", ())
    if item.get_closest_marker("slurm") or "slurm_cluster" in fixtures:
        return SHARED_CLUSTER
    if updating and item.path.name in _WRITER_MODULES:
        return CHECKOUT_WRITERS
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put each test that shares state outside its process into its ``xdist_group``."""
    if not config.pluginmanager.has_plugin("xdist"):
        return
    updating = os.environ.get("UPDATE_SNAPSHOTS") == "1"
    for item in items:
        group = shared_group(item, updating)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what collection built (modules, test items, parameters): the cyclic collector,
    run by the interpreter as objects pile up, then never walks those again. Their garbage is
    collected first; objects made by the tests themselves are collected as usual."""
    gc.collect()
    gc.freeze()

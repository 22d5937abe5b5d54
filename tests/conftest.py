"""Shared fixtures, and the hypothesis profile.

Fixtures (plain values for module-level code are in ``tests/helpers.py``):

* ``repo_root`` (session): the repository root.
* ``sample_logs`` (session): ``sample_logs/`` (``real/`` and ``formats/`` below it).
* ``catalog`` (session): the built-in pattern catalog, loaded once; do not change it.
* ``make_job``: ``make_job(files, name="job")`` writes ``files`` (``{relative path: str or
  bytes}``) into ``tmp_path / name`` and returns that directory (see ``helpers.write_job``).

Under CI, property tests draw the same examples on every run (a run that passes keeps passing);
locally they explore anew each time and keep what fails.
"""

from __future__ import annotations

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

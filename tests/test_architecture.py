"""The package's architecture as a contract: the stages are layers, no cycles (import-linter,
configured in pyproject.toml), and the modules stay small enough to read."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT


def test_import_contracts_are_kept() -> None:
    """``lint-imports`` keeps every contract of ``[tool.importlinter]``: a lower stage never
    imports a higher one (decide never imports the CLI, API, reports or triage), and no two
    sibling modules import each other, directly or not."""
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    r = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


def test_every_stage_is_a_subpackage() -> None:
    """Only the entry points live at the top of the package; every other module sits in the
    subpackage of its stage."""
    top = sorted(p.name for p in (ROOT / "analyzer").glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "api.py", "version.py"]

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


MAX_COMPLEXITY = 20
MAX_MODULE_LINES = 500


def test_no_function_is_too_complex_to_read() -> None:
    """Every function's cyclomatic complexity is at most 20 (radon's rank C or better): a
    longer decision is a registry of small rules."""
    cc = pytest.importorskip("radon.complexity")
    too = []
    for path in sorted((ROOT / "analyzer").rglob("*.py")):
        for block in cc.cc_visit(path.read_text(encoding="utf-8")):
            if block.complexity > MAX_COMPLEXITY:
                too.append(f"{path.relative_to(ROOT)}:{block.lineno} {block.name} "
                           f"{block.complexity}")
    assert not too, "split these into small functions:\n" + "\n".join(too)


def test_no_module_is_too_long_to_read() -> None:
    long = [
        f"{p.relative_to(ROOT)}: {n} lines"
        for p in sorted((ROOT / "analyzer").rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert not long, "split these by job:\n" + "\n".join(long)


STRICT_MAX_COMPLEXITY = 15
STRICT_MAX_MODULE_LINES = 400
STRICT = ("decide", "read")
"""Packages held to stricter limits than the rest (issue 39): the reasoning, whose rules are
split by family (rank_hang, rank_same, rank_lines, rank_launcher) rather than grown to the
limit, and the reader, whose hot functions keep their common path inline and move only the
rare branches (slow paths, errors, first-time setup) out, its modules split by job (the
traceback state machine, the event's construction)."""


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / "analyzer" / package).glob("*.py"))


@pytest.mark.parametrize("package", STRICT)
def test_strict_functions_are_simpler_still(package: str) -> None:
    """In analyzer/decide/ and analyzer/read/ every function's cyclomatic complexity is at
    most 15: one that grows past it is split into named steps."""
    cc = pytest.importorskip("radon.complexity")
    too = [
        f"{p.relative_to(ROOT)}:{b.lineno} {b.name} {b.complexity}"
        for p in _modules(package)
        for b in cc.cc_visit(p.read_text(encoding="utf-8"))
        if b.complexity > STRICT_MAX_COMPLEXITY
    ]
    assert not too, "split these into small functions:\n" + "\n".join(too)


@pytest.mark.parametrize("package", STRICT)
def test_strict_modules_are_sized_to_their_job(package: str) -> None:
    """In analyzer/decide/ and analyzer/read/ every module is at most 400 lines."""
    long = [
        f"{p.relative_to(ROOT)}: {n} lines"
        for p in _modules(package)
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > STRICT_MAX_MODULE_LINES
    ]
    assert not long, "split these by job:\n" + "\n".join(long)

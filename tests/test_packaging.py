"""Packaging metadata users and tools look at: license, version, changelog, classifiers."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import analyzer
from tests.helpers import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]


def test_license_is_an_spdx_expression_with_its_file() -> None:
    assert PROJECT["license"] == "Apache-2.0"
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    # PEP 639: a license expression replaces the License :: classifiers
    assert not any(c.startswith("License ::") for c in PROJECT["classifiers"])
    req = PYPROJECT["build-system"]["requires"]
    m = next(re.match(r"setuptools>=(\d+)", r) for r in req if r.startswith("setuptools"))
    assert m and int(m[1]) >= 77, "SPDX license strings need setuptools 77"


def test_version_is_defined_once() -> None:
    assert "version" not in PROJECT and "version" in PROJECT["dynamic"]
    attr = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "analyzer.version.__version__"
    assert re.fullmatch(r"\d+\.\d+\.\d+(\.dev\d+|rc\d+)?", analyzer.__version__)


def test_changelog_has_the_current_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in text
    assert f"## [{analyzer.__version__}]" in text


def test_classifiers_keywords_and_typing() -> None:
    assert len(PROJECT["keywords"]) >= 5
    cls = PROJECT["classifiers"]
    assert "Typing :: Typed" in cls and "Programming Language :: Python :: 3.11" in cls
    assert (ROOT / "analyzer" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["analyzer"]


def test_uv_lock_is_in_sync_with_pyproject() -> None:
    import shutil
    import subprocess
    import sys

    import pytest

    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    (me,) = [p for p in lock["package"] if p["name"] == "mcore-diagnose"]
    locked = {d["name"] for d in me["dependencies"]}
    wanted = {re.split(r"[<>=;\[ ]", d, maxsplit=1)[0] for d in PROJECT["dependencies"]}
    assert locked == wanted
    uv = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if uv is None:
        pytest.skip("uv is not installed (pip install uv) to check the lock exactly")
    r = subprocess.run([uv, "lock", "--check", "--offline"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_every_subpackage_is_shipped() -> None:
    """A subpackage missing from the explicit list installs a wheel that cannot import."""
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "analyzer").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    missing = sorted(on_disk - listed)
    assert not missing, f"add {missing} to [tool.setuptools] packages in pyproject.toml"


def test_recipes_ship_as_package_data() -> None:
    """pip, pipx and uv users get the sbatch recipes (``mcore-diagnose recipes``)."""
    st = PYPROJECT["tool"]["setuptools"]
    assert "analyzer.recipes" in st["packages"]
    assert st["package-dir"]["analyzer.recipes"] == "recipes"
    assert "*.sbatch" in st["package-data"]["analyzer.recipes"]
    assert sorted((ROOT / "recipes").glob("*.sbatch")), "no recipe to ship"

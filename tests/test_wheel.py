"""The built wheel, installed into a fresh virtual environment outside the checkout, diagnoses a
copy of a sample job from another directory (as `pip install`, pipx and `uv tool install` do).

An editable install reads the catalog from the checkout; only a real install shows whether the
package ships it (and its schemas) and finds it. Takes 10-40 s (pip's cache makes it faster).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.slow  # building and installing the wheel: 10-40 s

SAMPLE = ROOT / "sample_logs" / "real" / "exception-cascade"
_SOURCES = ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "analyzer", "patterns",
            "docs/schema", "recipes")
_OFFLINE = ("No matching distribution", "Could not find a version", "NewConnectionError",
            "Temporary failure in name resolution", "Network is unreachable")


def _pip(python: Path | str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    return subprocess.run([str(python), "-m", "pip", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _skip_if_offline(r: subprocess.CompletedProcess[str], what: str) -> None:
    if r.returncode != 0:
        out = r.stdout + r.stderr
        if any(s in out for s in _OFFLINE):
            pytest.skip(f"{what} needs the package index (build requirements or dependencies), "
                        f"which cannot be reached here: {out.strip().splitlines()[-1]}")
        raise AssertionError(f"{what} failed:\n{out[-3000:]}")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with the wheel installed; returns its bin directory."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"  # build from a copy: building writes build/ and *.egg-info
    src.mkdir()
    for name in _SOURCES:
        p = ROOT / name
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif p.exists():
            shutil.copy2(p, src / name)
    dist = tmp / "dist"
    r = _pip(sys.executable, "wheel", "--no-deps", "-q", "-w", str(dist), str(src), cwd=tmp)
    _skip_if_offline(r, "building the wheel")
    (wheel,) = dist.glob("mcore_diagnose-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    r = _pip(venv / "bin" / "python", "install", "-q", str(wheel), cwd=tmp)
    _skip_if_offline(r, "installing the wheel")
    return venv / "bin"


def _run(bindir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "MCORE_"))}
    return subprocess.run([str(bindir / "mcore-diagnose"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_installed_wheel_diagnoses_a_sample_from_another_directory(
    installed: Path, tmp_path: Path
) -> None:
    job = tmp_path / "logs" / "job-7"
    shutil.copytree(SAMPLE, job)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = _run(installed, str(job), "-f", "json", cwd=elsewhere)
    assert r.returncode == 0, r.stdout + r.stderr
    v = json.loads(r.stdout)["verdict"]
    assert (v["category"], v["rank"], v["node"]) == ("python_exception", 2, "1")


def test_installed_package_is_the_wheel_and_ships_catalog_and_schemas(
    installed: Path, tmp_path: Path
) -> None:
    code = (
        "import analyzer, json; from importlib import resources; "
        "from analyzer.catalog.load import load_catalog; "
        "print(json.dumps([analyzer.__file__, len(load_catalog().patterns), "
        "sorted(f.name for f in resources.files('analyzer').iterdir())]))"
    )
    r = subprocess.run([str(installed / "python"), "-c", code], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, r.stderr
    where, n, names = json.loads(r.stdout)
    assert not Path(where).is_relative_to(ROOT), where
    assert n >= 200
    assert {"patterns", "schema", "py.typed"} <= set(names), names
    code = ("import analyzer; from importlib.metadata import metadata as m; "
            "d = m('mcore-diagnose'); "
            "print(d['Version'] == analyzer.__version__, d['License-Expression'])")
    r = subprocess.run([str(installed / "python"), "-c", code], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["True", "Apache-2.0"], r.stdout + r.stderr
    code = "from analyzer.report.schemas import load_schema; print(load_schema('diagnose')['$id'])"
    r = subprocess.run([str(installed / "python"), "-c", code], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "diagnose" in r.stdout, r.stderr
    r = _run(installed, "patterns", "list", cwd=tmp_path)
    assert r.returncode == 0 and len(r.stdout.splitlines()) == n


def test_installed_wheel_ships_the_recipes(installed: Path, tmp_path: Path) -> None:
    """No checkout: `mcore-diagnose recipes` lists, prints and writes them from the wheel."""
    shipped = sorted(p.stem for p in (ROOT / "recipes").glob("*.sbatch"))
    r = _run(installed, "recipes", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert [ln.split()[0] for ln in r.stdout.splitlines()] == shipped
    r = _run(installed, "recipes", "diagnose-on-failure", "-o", ".", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    recipe = (ROOT / "recipes" / "diagnose-on-failure.sbatch").read_text(encoding="utf-8")
    assert (tmp_path / "diagnose-on-failure.sbatch").read_text(encoding="utf-8") == recipe
    code = ("import json; from importlib import resources; "
            "names = [f.name for f in resources.files('analyzer.recipes').iterdir()]; "
            "print(json.dumps(sorted(names)))")
    r = subprocess.run([str(installed / "python"), "-c", code], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, r.stderr
    assert [n for n in json.loads(r.stdout) if n.endswith(".sbatch")] == [
        f"{n}.sbatch" for n in shipped]

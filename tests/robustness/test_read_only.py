"""Nothing lost, nothing written: a run leaves the job directory byte-for-byte and
metadata-unchanged, works on a read-only copy, and writes only where ``-o`` says."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from _robust import CATALOG, _under, assert_clean_exit, audited, cli

from analyzer.api import analyze
from analyzer.catalog.cache import cache_dir
from tests.helpers import ROOT

SAMPLE = ROOT / "sample_logs" / "formats" / "illegal-memory-access"


def _tree(root: Path) -> dict[str, tuple]:
    """Everything about a tree that a run could change, except access times (reading a file
    updates its atime on most mounts; that is the kernel's doing, not a write)."""
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames, "."]:
            p = Path(dirpath) / name
            st = os.lstat(p)
            meta = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            meta += (st.st_nlink, st.st_uid, st.st_gid)
            if stat.S_ISREG(st.st_mode):
                meta += (hashlib.sha256(p.read_bytes()).hexdigest(),)
            elif stat.S_ISLNK(st.st_mode):
                meta += (os.readlink(p),)
            out[p.relative_to(root).as_posix()] = meta
    return out


@pytest.fixture
def job(tmp_path: Path) -> Path:
    d = tmp_path / "job"
    shutil.copytree(SAMPLE, d, symlinks=True)
    big = d / "illegal-memory-access-83310.out"
    (d / "old-attempt.log.gz").write_bytes(gzip.compress(big.read_bytes()[:5000]))
    (d / "latest.log").symlink_to(big.name)
    (d / "outside.log").symlink_to("/dev/null")
    return d


def test_a_run_changes_nothing_in_the_job_directory(
    job: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    before = _tree(job)
    with audited() as audit:
        for fmt in ("terminal", "text", "markdown", "html", "json"):
            assert_clean_exit(cli(job, "-f", fmt, "-v"))
        assert_clean_exit(cli("events", job, "--all"))
    assert _tree(job) == before
    assert [w for w in audit.writes if _under(w[1], [str(job)])] == []
    assert list(cwd.iterdir()) == []


def test_output_goes_only_where_o_says(job: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    out = tmp_path / "reports" / "r.html"
    out.parent.mkdir()
    before = _tree(job)
    with audited() as audit:
        r = cli(job, "-f", "html", "-o", out)
    assert_clean_exit(r)
    assert r.stdout == ""
    assert out.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    # besides -o, only the tool's own catalog cache (docs/reader.md) may be written
    cache = str(cache_dir())
    written = {p for _what, p in audit.writes if not p.startswith(cache + os.sep)}
    assert written == {str(out)}, audit.writes
    assert _tree(job) == before and list(cwd.iterdir()) == []


def test_a_run_on_a_read_only_copy_works(job: Path) -> None:
    want = analyze(job, catalog=CATALOG, workers=1).diagnosis.verdict
    for p in [job, *job.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode & ~0o222)
    before = _tree(job)
    # Root ignores the mode bits, so the audit hook also refuses every write under the job
    # directory with EROFS, as a read-only mount would.
    with audited(read_only_under=[str(job)]) as audit:
        got = analyze(job, catalog=CATALOG, workers=1).diagnosis.verdict
        r = cli(job, "-f", "json")
    assert (got.category, got.rank) == (want.category, want.rank)
    assert_clean_exit(r)
    assert r.code == 0
    assert not [w for w in audit.writes if _under(w[1], [str(job)])]
    assert _tree(job) == before


def test_a_run_on_a_read_only_mount(job: Path, tmp_path: Path) -> None:
    """A real read-only bind mount, in a private mount namespace (needs root and unshare)."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("mount"):
        pytest.skip("needs root, unshare and mount")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("cannot create a mount namespace here")
    out = tmp_path / "r.json"
    script = (
        f"mount --bind {job} {job} && mount -o remount,bind,ro {job} "
        f"&& ! touch {job}/probe 2>/dev/null "
        f"&& exec {sys.executable} -m analyzer {job} -f json -o {out}"
    )
    before = _tree(job)
    r = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=180,
    )
    if "mount:" in r.stderr and r.returncode not in (0, 1, 2, 3):
        pytest.skip(f"bind mount refused: {r.stderr.strip()[:200]}")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert '"category": "cuda_error"' in out.read_text()
    assert _tree(job) == before

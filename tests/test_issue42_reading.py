"""Issue 42, items 1 and 8: a cut ``.gz`` log is read up to the cut, and input that cannot be
read is one line on standard error whose hint fits what was given."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.catalog.model import Catalog
from tests.helpers import REAL, MakeJob

LOG = REAL / "exception-cascade" / "slurm-7.out"
"""A real job's only log: three ranks' tracebacks, the last one 3 KB before its end."""


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


def cli(*args: str | Path, stdin: bytes | None = None) -> Run:
    """``mcore-diagnose ARGS`` in this process (stdin: the bytes standard input holds)."""
    import sys

    from analyzer.cli.commands import main

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.StringIO()
    code: int | None = None
    old_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main([str(a) for a in args])
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdin = old_stdin
    assert code is not None
    return Run(code, out.buffer.getvalue().decode("utf-8"), err.getvalue())  # type: ignore[attr-defined]


def cut_gzip(data: bytes, keep: int) -> tuple[bytes, int]:
    """``data`` gzipped and cut to ``keep`` bytes (negative: that many cut off the end), and how
    many bytes of ``data`` a decompressor gets out of what is left."""
    cut = gzip.compress(data)[:keep]
    return cut, len(zlib.decompressobj(wbits=31).decompress(cut))


# -- item 1: a .gz cut short ---------------------------------------------------------------


@pytest.mark.parametrize("block_bytes", [None, 4096], ids=["file-under-block", "file-over-block"])
def test_cut_gzip_is_read_up_to_the_cut(
    make_job: MakeJob, catalog: Catalog, monkeypatch: pytest.MonkeyPatch, block_bytes: int | None
) -> None:
    # The cut file is the only file of its job, so only it can hold the tracebacks.
    data = LOG.read_bytes()
    cut, decompressed = cut_gzip(data, -20)
    assert 0 < decompressed < len(data)
    if block_bytes is not None:
        assert decompressed > 3 * block_bytes
        monkeypatch.setattr("analyzer.read.file.BLOCK_BYTES", block_bytes)
    whole = analyze(LOG, catalog=catalog, workers=1)
    d = make_job({"slurm-7.out.gz": cut})

    a = analyze(d, catalog=catalog, workers=1)

    (scan,) = a.read.scans
    assert scan.bytes_read == decompressed
    assert len(scan.events) == len(whole.read.scans[0].events)
    assert (a.diagnosis.verdict.category, a.diagnosis.verdict.rank) == (
        whole.diagnosis.verdict.category,
        whole.diagnosis.verdict.rank,
    )
    (problem,) = a.read.problems
    assert problem.startswith("slurm-7.out.gz: ") and "cut short" in problem
    assert f"{decompressed:,} bytes" in problem


def test_cut_gzip_on_the_command_line(make_job: MakeJob) -> None:
    cut, decompressed = cut_gzip(LOG.read_bytes(), -20)
    d = make_job({"slurm-7.out.gz": cut})

    r = cli(d, "-f", "json")

    assert r.code == 0, r.stderr
    report = json.loads(r.stdout)
    assert (report["files_read"], report["bytes_read"]) == (1, decompressed)
    assert report["verdict"]["category"] == "python_exception"
    (line,) = r.stderr.splitlines()
    assert line.startswith("mcore-diagnose: warning: slurm-7.out.gz: ") and "cut short" in line


def test_gzip_cut_inside_its_header(make_job: MakeJob, catalog: Catalog) -> None:
    cut, decompressed = cut_gzip(LOG.read_bytes(), 5)  # a gzip header is 10 bytes
    assert decompressed == 0
    alone = make_job({"slurm-7.out.gz": cut}, name="alone")

    r = cli(alone)

    assert r.code == 3
    (line,) = r.stderr.splitlines()
    assert line.startswith("mcore-diagnose: slurm-7.out.gz: ") and "cut short" in line
    assert "Traceback" not in r.stderr

    # Beside a readable log, the cut file is a warning and the other file is read.
    d = make_job({"slurm-7.out.gz": cut, "slurm-7.err": LOG.read_bytes()}, name="beside")
    a = analyze(d, catalog=catalog, workers=1)
    assert a.diagnosis.verdict.category == "python_exception"
    assert [p.split(":")[0] for p in a.read.problems] == ["slurm-7.out.gz"]


# -- item 8: one line, a hint that fits what was given -------------------------------------


def _script_only(root: Path) -> list[str]:
    d = root / "scripts"
    d.mkdir()
    (d / "train.sbatch").write_bytes((REAL / "exception-cascade" / "train.sbatch").read_bytes())
    return [str(d)]


def _empty_dir(root: Path) -> list[str]:
    (root / "empty").mkdir()
    return [str(root / "empty")]


def _empty_file(root: Path) -> list[str]:
    (root / "slurm-1.out").write_bytes(b"")
    return [str(root / "slurm-1.out")]


def _binary_file(root: Path) -> list[str]:
    (root / "rank0.log").write_bytes(bytes(range(256)) * 8)  # synthetic: not text
    return [str(root / "rank0.log")]


def _missing(root: Path) -> list[str]:
    return [str(root / "job-1")]


# (input, words the line holds, words it must not hold)
CASES = {
    "missing path": (_missing, ["job-1: no such file or directory", "log directory"], []),
    "empty directory": (_empty_dir, ["empty directory", "log directory"], []),
    "directory of scripts": (
        _script_only,
        ["no log files in", "train.sbatch: not a log file name", "name a file on the command line"],
        ["--verbose"],
    ),
    "empty file named": (
        _empty_file,
        ["slurm-1.out: empty file, nothing to read", "give a log holding the job's output"],
        ["directly", "name a file", "--verbose", "no log files in"],
    ),
    "binary file named": (
        _binary_file,
        ["rank0.log: binary file", "give a log holding the job's output"],
        ["directly", "name a file", "--verbose", "no log files in"],
    ),
}


@pytest.mark.parametrize("command", ["diagnose", "events"])
@pytest.mark.parametrize("case", list(CASES))
def test_unreadable_input_is_one_line_with_a_fitting_hint(
    tmp_path: Path, command: str, case: str
) -> None:
    make, words, never = CASES[case]

    r = cli(command, *make(tmp_path))

    assert r.code == 3
    (line,) = r.stderr.splitlines()
    assert line.startswith("mcore-diagnose: ")
    for w in words:
        assert w in line
    for w in never:
        assert w not in line


@pytest.mark.parametrize("command", ["diagnose", "events"])
def test_empty_standard_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))

    r = cli(command, "-", stdin=b"")

    assert r.code == 3
    (line,) = r.stderr.splitlines()
    assert line.startswith("mcore-diagnose: standard input is empty; pipe the job's log into it")
    assert "mcore-diagnose-stdin" not in line and str(tmp_path) not in line
    assert list(tmp_path.iterdir()) == []  # its copy is gone


def test_empty_standard_input_as_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))

    r = cli("-", "-f", "json", stdin=b"")

    assert r.code == 3
    report = json.loads(r.stdout)
    assert report["error"] == "standard input is empty"
    assert report["hint"].startswith("Pipe the job's log into it")
    assert "mcore-diagnose-stdin" not in r.stdout


def test_standard_input_is_named_so_in_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))

    r = cli("-", "-f", "json", stdin=LOG.read_bytes())

    assert r.code == 0, r.stderr
    files = {e["file"] for e in json.loads(r.stdout)["verdict"]["evidence"]}
    assert files == {"(stdin)"}
    assert list(tmp_path.iterdir()) == []

"""Issue 44, discovery: one walk of the tree, and the same decisions as before.

The tree below is synthetic (file discovery is a mechanism: its files hold made-up text, not
log lines from a run). ``test_discovery_of_an_awkward_tree`` pins every decision discovery
makes on it (read, skipped with which reason, problems, what a path says), as discovery made
them before the walk was rewritten; ``test_one_stat_per_directory...`` checks what the
rewrite is for.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from analyzer.read import discover as disc_mod
from analyzer.read.discover import discover

TEXT = b"synthetic text line for a discovery test\n"


def _tree(root: Path) -> Path:
    job = root / "job"
    files: dict[str, bytes] = {
        "slurm-7.out": TEXT,
        "slurm-7-3.out": TEXT,
        "task-12.err": TEXT,
        "empty.log": b"",
        "script.sh": TEXT,
        "notes.md": TEXT,
        "ckpt.log": b"PK\x03\x04" + bytes(200),
        "blob.txt": bytes(range(256)) * 8,
        "utf16.log": "\ufeffsynthetic utf-16 text\n".encode("utf-16-le"),
        "run.log.gz": gzip.compress(TEXT),
        "report.txt": b'{"schema_version": 1, "job": "x"}\n',
        "error.json": b'{"message": "synthetic"}\n',
        "rank_trace_rank_0": b"not a dump, but named like one\n",
        "torchrun/node07/run_ab12/attempt_1/3/stdout.log": TEXT,
        "torchrun/node07/run_ab12/attempt_1/3/stderr.log": TEXT,
        "torchrun/node07/run_ab12/attempt_1/error.json": TEXT,
        "shared/logs/run_a1/attempt_0/0/stdout.log": TEXT,
        "shared/logs/run_b2/attempt_0/0/stdout.log": TEXT,
        "deep/a/b/c/worker.stdout": TEXT,
        "zz/data.bin": TEXT,
        "fr/pg_trace_rank_1": b"\x80\x04synthetic pickle head",
    }
    for rel, data in files.items():
        p = job / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    os.link(job / "slurm-7.out", job / "slurm-7.out.hardlink.log")
    (job / "aa-link.log").symlink_to("zz/data.bin")  # visited first: read under its own name
    (job / "zz" / "again.log").symlink_to("../slurm-7.out")  # the same file twice
    (job / "loop").symlink_to(".")
    (job / "out.log").symlink_to(root / "outside.log")
    (root / "outside.log").write_bytes(TEXT)
    (job / "dangling.log").symlink_to("nowhere.log")
    os.mkfifo(job / "fifo.log")
    return job


NOT_LOG = "not a log file name (.out/.err/.log/.txt, slurm-*, error.json)"
PLAIN = (False, None)


def test_discovery_of_an_awkward_tree(tmp_path: Path) -> None:
    job = _tree(tmp_path)
    d = discover([job])
    got = [
        (f.rel, f.size, f.compressed, f.encoding, f.stream, f.attempt, f.local_rank, f.task)
        for f in d.files
    ]
    assert [(f.node_hint, f.is_error_json, f.path) for f in d.files] == [
        (None, False, job / "aa-link.log"),
        (None, False, job / "deep/a/b/c/worker.stdout"),
        (None, True, job / "error.json"),
        (None, False, job / "run.log.gz"),
        (None, False, job / "shared/logs/run_a1/attempt_0/0/stdout.log"),
        (None, False, job / "shared/logs/run_b2/attempt_0/0/stdout.log"),  # shared log dir
        (None, False, job / "slurm-7-3.out"),
        (None, False, job / "slurm-7.out"),
        (None, False, job / "task-12.err"),
        ("node07", False, job / "torchrun/node07/run_ab12/attempt_1/3/stderr.log"),
        ("node07", False, job / "torchrun/node07/run_ab12/attempt_1/3/stdout.log"),
        ("node07", True, job / "torchrun/node07/run_ab12/attempt_1/error.json"),
        (None, False, job / "utf16.log"),
    ]
    torch = "torchrun/node07/run_ab12/attempt_1"
    assert got == [
        ("aa-link.log", 41, *PLAIN, None, None, None, None),
        ("deep/a/b/c/worker.stdout", 41, *PLAIN, "stdout", None, None, None),
        ("error.json", 25, *PLAIN, None, None, None, None),
        ("run.log.gz", 60, True, None, None, None, None, None),
        ("shared/logs/run_a1/attempt_0/0/stdout.log", 41, *PLAIN, "stdout", 0, 0, None),
        ("shared/logs/run_b2/attempt_0/0/stdout.log", 41, *PLAIN, "stdout", 0, 0, None),
        ("slurm-7-3.out", 41, *PLAIN, None, None, None, 3),
        ("slurm-7.out", 41, *PLAIN, None, None, None, None),
        ("task-12.err", 41, *PLAIN, "stderr", None, None, 12),
        (f"{torch}/3/stderr.log", 41, *PLAIN, "stderr", 1, 3, None),
        (f"{torch}/3/stdout.log", 41, *PLAIN, "stdout", 1, 3, None),
        (f"{torch}/error.json", 41, *PLAIN, None, 1, None, None),
        ("utf16.log", 46, False, "utf-16", None, None, None, None),
    ]
    # the hard link, zz/data.bin (reached first through aa-link.log), zz/again.log (the same
    # file as slurm-7.out) and the FIFO are left out without a word, as before
    dangling = next(why for rel, why in d.skipped if rel == "dangling.log")
    assert dangling.startswith("unreadable entry ([Errno 2] No such file or directory")
    assert [s for s in d.skipped if s[0] != "dangling.log"] == [
        (
            "blob.txt",
            "binary file: binary content (60% of the first 2 KiB is NUL, control "
            "bytes or invalid UTF-8)",
        ),
        ("ckpt.log", "binary file: zip archive (e.g. a torch.save checkpoint)"),
        ("empty.log", "empty file"),
        ("notes.md", NOT_LOG),
        ("out.log", "symlink pointing outside the job directory"),
        ("rank_trace_rank_0", NOT_LOG),
        ("report.txt", "an mcore-diagnose report"),
        ("script.sh", NOT_LOG),
        ("loop", "directory already visited (symlink loop)"),
    ]
    assert [s[0] for s in d.skipped].index("dangling.log") == 2
    assert d.problems == []
    assert d.fr_dumps == [(job / "fr" / "pg_trace_rank_1", "fr/pg_trace_rank_1")]


def test_one_stat_per_directory_and_one_open_per_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk takes a directory's identity from its entry's stat, not a second ``os.stat``
    of its path (24 calls here before), and opens each file with a log's name once."""
    job = tmp_path / "job"
    for node in range(3):
        for local in range(4):
            rank_dir = job / f"node{node}" / "run_x" / "attempt_0" / str(local)
            rank_dir.mkdir(parents=True)
            (rank_dir / "stdout.log").write_bytes(TEXT)
    calls: dict[str, int] = {"stat": 0, "open": 0}
    real_stat, real_open = os.stat, os.open

    def stat(*a: object, **k: object) -> os.stat_result:
        calls["stat"] += 1
        return real_stat(*a, **k)  # type: ignore[arg-type]

    def open_(*a: object, **k: object) -> int:
        calls["open"] += 1
        return real_open(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(disc_mod.os, "stat", stat)
    monkeypatch.setattr(disc_mod.os, "open", open_)
    d = discover([job])
    assert len(d.files) == 12
    # the top (and its resolution), none per directory; each log once
    assert calls["stat"] <= 2
    assert calls["open"] == 12

"""``mcore-diagnose watch`` reads only new bytes (analyzer/watch/tail.py): growth, a partial
last line, rotation, truncation, a new file, ``.gz`` ignored. The content is a real job's log
(sample_logs/real/exception-cascade) replayed into a temporary directory in pieces."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

from analyzer.watch.tail import Chunk, Tailer
from tests.helpers import REAL

LOG = (REAL / "exception-cascade" / "slurm-7.out").read_bytes()
LINES = LOG.splitlines(keepends=True)


def _lines(chunks: list[Chunk], rel: str) -> list[bytes]:
    return [ln for c in chunks if c.rel == rel for ln in c.lines]


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as f:
        f.write(data)


def test_growth_reads_every_line_once_with_its_number(tmp_path: Path) -> None:
    log = tmp_path / "slurm-7.out"
    log.write_bytes(b"")
    t = Tailer([tmp_path])
    got: list[bytes] = []
    numbers: list[int] = []
    for i in range(0, len(LINES), 37):
        _append(log, b"".join(LINES[i : i + 37]))
        for c in t.poll():
            got += c.lines
            numbers += range(c.first_line, c.first_line + len(c.lines))
    assert got == LOG.splitlines()
    assert numbers == list(range(1, len(LINES) + 1))
    assert t.poll() == [] and not t.grew  # at rest: nothing read


def test_a_partial_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    log = tmp_path / "slurm-7.out"
    line = LINES[62]
    log.write_bytes(b"".join(LINES[:62]) + line[:20])
    t = Tailer([tmp_path])
    assert _lines(t.poll(), "slurm-7.out") == LOG.splitlines()[:62]
    assert t.poll() == []
    _append(log, line[20:])
    assert _lines(t.poll(), "slurm-7.out") == [line.rstrip(b"\n")]


def test_truncation_restarts_the_file(tmp_path: Path) -> None:
    log = tmp_path / "slurm-7.out"
    log.write_bytes(b"".join(LINES[:100]))
    t = Tailer([tmp_path])
    t.poll()
    log.write_bytes(b"".join(LINES[100:110]))  # truncated and rewritten, shorter
    chunks = t.poll()
    assert [c.restarted for c in chunks] == [True]
    assert chunks[0].first_line == 1 and chunks[0].lines == LOG.splitlines()[100:110]


def test_rotation_keeps_the_renamed_file_and_reads_the_new_one_from_its_start(
    tmp_path: Path,
) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"".join(LINES[:80]))
    t = Tailer([tmp_path])
    assert len(_lines(t.poll(), "train.log")) == 80
    os.rename(log, tmp_path / "train.old.log")  # rotated by mv, then a new file
    _append(tmp_path / "train.old.log", b"".join(LINES[80:90]))  # the old one's last writes
    log.write_bytes(b"".join(LINES[90:100]))
    chunks = t.poll()
    assert _lines(chunks, "train.old.log") == LOG.splitlines()[80:90]  # not read again from 0
    assert _lines(chunks, "train.log") == LOG.splitlines()[90:100]


def test_a_new_file_is_picked_up(tmp_path: Path) -> None:
    (tmp_path / "slurm-7.out").write_bytes(b"".join(LINES[:10]))
    t = Tailer([tmp_path])
    t.poll()
    (tmp_path / "node1").mkdir()
    (tmp_path / "node1" / "slurm-7.out").write_bytes(b"".join(LINES[10:20]))
    assert _lines(t.poll(), "node1/slurm-7.out") == LOG.splitlines()[10:20]


def test_an_empty_file_that_grows_is_picked_up(tmp_path: Path) -> None:
    (tmp_path / "slurm-7.out").write_bytes(b"")
    t = Tailer([tmp_path])
    assert t.poll() == []
    (tmp_path / "slurm-7.out").write_bytes(b"".join(LINES[:5]))
    assert _lines(t.poll(), "slurm-7.out") == LOG.splitlines()[:5]


def test_gz_is_not_read_while_the_job_runs(tmp_path: Path) -> None:
    (tmp_path / "old.log.gz").write_bytes(gzip.compress(LOG))
    (tmp_path / "slurm-7.out").write_bytes(b"".join(LINES[:3]))
    t = Tailer([tmp_path])
    assert {c.rel for c in t.poll()} == {"slurm-7.out"}


def test_a_file_given_alone_is_followed(tmp_path: Path) -> None:
    log = tmp_path / "slurm-7.out"
    log.write_bytes(b"".join(LINES[:3]))
    t = Tailer([log])
    assert _lines(t.poll(), "slurm-7.out") == LOG.splitlines()[:3]

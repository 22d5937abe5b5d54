"""Discovery and the streaming reader on small constructed job directories."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.discover import discover

TB = (
    "  1: [default1]:[rank3]: Traceback (most recent call last):\n"
    "  0: [default0]:[rank0]: unrelated line from another rank\n"
    '  1: [default1]:[rank3]:   File "train.py", line 40, in step\n'
    "  1: [default1]:[rank3]:     raise ValueError(\"bad batch 7\")\n"
    "  1: [default1]:[rank3]: ValueError: bad batch 7\n"
)


def _job(tmp_path: Path, text: str, name: str = "slurm-42.out") -> Path:
    d = tmp_path / "job"
    d.mkdir(exist_ok=True)
    (d / name).write_text(text)
    return d


def test_traceback_is_one_event_with_type_message_and_frame(tmp_path: Path) -> None:
    a = analyze(_job(tmp_path, "noise\n" + TB))
    rows = [r for r in a.rows if r["pattern_id"] == "python.traceback"]
    assert len(rows) == 1
    r = rows[0]
    assert (r["exc_type"], r["exc_msg"]) == ("ValueError", "bad batch 7")
    assert r["frame"] == 'File "train.py", line 40, in step'
    assert (r["rank"], r["node_index"], r["line"]) == (3, 1, 6)
    assert "unrelated" not in r["traceback"]


def test_gzip_and_crlf_are_read(tmp_path: Path) -> None:
    d = tmp_path / "job"
    d.mkdir()
    (d / "slurm-1.out.gz").write_bytes(gzip.compress(TB.replace("\n", "\r\n").encode()))
    a = analyze(d)
    assert a.diagnosis.verdict.rank == 3
    assert a.diagnosis.verdict.category == "python_exception"


def test_binary_and_non_log_files_are_skipped_with_reason(tmp_path: Path) -> None:
    d = _job(tmp_path, TB)
    (d / "model.pt").write_bytes(b"PK\x03\x04" + os.urandom(100))
    (d / "weird.log").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
    (d / "notes.md").write_text("Traceback (most recent call last):\n")
    disc = discover([d])
    reasons = dict(disc.skipped)
    assert [f.rel for f in disc.files] == ["slurm-42.out"]
    assert "binary" in reasons["weird.log"]
    assert "not a log file name" in reasons["notes.md"]


def test_symlinks_out_of_the_tree_and_loops_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "secret.log"
    outside.write_text(TB)
    d = _job(tmp_path, "hello\n")
    (d / "leak.log").symlink_to(outside)
    (d / "loop").symlink_to(d)
    disc = discover([d])
    assert [f.rel for f in disc.files] == ["slurm-42.out"]
    assert any("outside" in why for _rel, why in disc.skipped)


def test_torchrun_log_dir_layout_gives_attempt_local_rank_and_stream(tmp_path: Path) -> None:
    f = tmp_path / "job" / "node7" / "run_ab12cd34" / "attempt_1" / "3" / "stderr.log"
    f.parent.mkdir(parents=True)
    f.write_text("x\n")
    (lf,) = discover([tmp_path / "job"]).files
    assert (lf.attempt, lf.local_rank, lf.stream, lf.node_hint) == (1, 3, "stderr", "node7")


def test_giant_line_and_invalid_utf8_do_not_break_line_numbers(tmp_path: Path) -> None:
    d = tmp_path / "job"
    d.mkdir()
    big = b"x" * (3 << 20)
    (d / "slurm-1.out").write_bytes(big + b"\n\xff\xfe bad bytes\n" + TB.encode())
    a = analyze(d)
    r = next(r for r in a.rows if r["pattern_id"] == "python.traceback")
    assert r["line"] == 7


def test_unreadable_file_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    d = _job(tmp_path, TB)
    (d / "locked.log").write_text("x")
    (d / "locked.log").chmod(0)
    a = analyze(d)
    assert any("locked.log" in p for p in a.read.problems)


def test_random_bytes_named_like_a_log_are_skipped_by_content(tmp_path: Path) -> None:
    """200 KB of random bytes as slurm-1.out: few NULs, so only the share of control bytes and
    invalid UTF-8 gives it away (as ripgrep and file(1) tell binary from text)."""
    import random

    d = tmp_path / "job"
    d.mkdir()
    (d / "slurm-1.out").write_bytes(random.Random(7).randbytes(200_000))
    disc = discover([d])
    assert disc.files == []
    ((rel, why),) = disc.skipped
    assert rel == "slurm-1.out" and "binary content" in why and "invalid UTF-8" in why
    assert analyze(d).diagnosis.exit_code == 3


@pytest.mark.parametrize(
    "text",
    [
        "Fehler beim Öffnen der Datei für Rang 3: Zugriff verweigert\n" * 60,  # Latin-1
        "naïve café — training résumé ✓ 日本語のログ\n" * 60,  # UTF-8 with many non-ASCII
    ],
)
def test_text_in_other_encodings_is_still_read(tmp_path: Path, text: str) -> None:
    d = tmp_path / "job"
    d.mkdir()
    enc = "latin-1" if "Öffnen" in text else "utf-8"
    (d / "slurm-1.out").write_bytes(text.encode(enc, "replace") + TB.encode())
    disc = discover([d])
    assert [f.rel for f in disc.files] == ["slurm-1.out"], disc.skipped


def test_a_few_corrupted_lines_do_not_make_a_log_binary(tmp_path: Path) -> None:
    junk = b"\xff\xfe\xc3\x00\x00\xed\xa0\x80\xf0\x9f\x98 \x00\x07"
    data = b"".join(b"iteration %d | loss 2.5\n" % i + (junk if i % 10 == 0 else b"")
                    for i in range(200))
    d = tmp_path / "job"
    d.mkdir()
    (d / "slurm-1.out").write_bytes(data + TB.encode())
    assert [f.rel for f in discover([d]).files] == ["slurm-1.out"]

"""Hand-made bad input: every case ends with a verdict (or ``unknown``), a clear line for what
could not be read, and an exit code from the contract; never a traceback."""

from __future__ import annotations

import gzip
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from _robust import CATALOG, assert_clean_exit, audited, cli, cli_subprocess

from analyzer.api import analyze
from tests.helpers import MakeJob

TB = (
    "[rank3]: Traceback (most recent call last):\n"
    '[rank3]:   File "train.py", line 9, in <module>\n'
    "[rank3]: KeyError: 'labels'\n"
)


def _verdict(d: Path) -> tuple[str, int | None]:
    v = analyze(d, catalog=CATALOG, workers=1).diagnosis.verdict
    return v.category, v.rank


def test_100_mb_line_without_newline(make_job: MakeJob) -> None:
    d = make_job({"slurm-1.out": b"step 1\n" + TB.encode()})
    chunk = b"0123456789abcdef" * (1 << 16)  # 1 MiB, no newline, no spaces
    with open(d / "slurm-1.out", "ab") as fh:
        for _ in range(100):
            fh.write(chunk)
    a = analyze(d, catalog=CATALOG, workers=1)
    assert (a.diagnosis.verdict.category, a.diagnosis.verdict.rank) == ("python_exception", 3)
    assert a.read.scans[0].bytes_read == (d / "slurm-1.out").stat().st_size
    r = cli(d, "-f", "json")
    assert_clean_exit(r)
    assert r.code == 0 and len(r.stdout) < 1 << 20  # the giant token is not copied out


def test_giant_line_holding_the_error_is_still_found(make_job: MakeJob) -> None:
    line = b"x" * (3 << 20) + b" torch.OutOfMemoryError: CUDA out of memory. " + b"y" * (2 << 20)
    d = make_job({"slurm-1.out": b"start\n" + line + b"\nend\n"})
    a = analyze(d, catalog=CATALOG, workers=1)
    assert all(len(r.text) < 20_000 for r in a.rows)
    assert_clean_exit(cli(d, "-q"))


def test_ansi_colours_and_cursor_movement(make_job: MakeJob) -> None:
    esc = (
        b"\x1b[1;31m[rank3]: \x1b[0m\x1b[2K\x1b[1A\x1b]0;title\x07\x1b[?25l"
        b"RuntimeError: CUDA error: an illegal memory access was encountered\x1b[0m\x1b[K\n"
    )
    d = make_job({"slurm-1.out": b"\x1b[32mstarting\x1b[0m\n" + esc})
    assert _verdict(d) == ("cuda_error", 3)
    r = cli(d, "-f", "text")
    assert_clean_exit(r)
    assert "\x1b" not in r.stdout and "title" not in r.stdout.split("illegal")[0][-40:]


def test_progress_bar_fused_with_the_next_message(make_job: MakeJob) -> None:
    bar = b"".join(
        b"  3: Loading: %3d%%|%-10s|\r" % (p, b"#" * (p // 10)) for p in range(0, 101, 5)
    )
    d = make_job(
        {"slurm-1.out": bar + b"  3: [rank3]: torch.OutOfMemoryError: CUDA out of memory.\n"},
    )
    assert _verdict(d) == ("cuda_oom", 3)


def test_progress_bar_under_srun_label_keeps_the_label(make_job: MakeJob) -> None:
    # srun --label prefixes only what follows a newline: frames after \r have no label.
    bar = b"  3: " + b"".join(b"Loading: %3d%%\r" % p for p in range(0, 101, 10))
    d = make_job({"slurm-1.out": bar + b"torch.OutOfMemoryError: CUDA out of memory.\n"})
    from analyzer.read.discover import discover
    from analyzer.read.readjob import read_job

    rr = read_job(discover([d]), CATALOG, workers=1)  # the reader's own events
    (ev,) = [e for s in rr.scans for e in s.events if e.role != "context"]
    assert ev.task == 3


def test_crlf_file(make_job: MakeJob) -> None:
    d = make_job({"slurm-1.out": ("hello\n" + TB).replace("\n", "\r\n").encode()})
    assert _verdict(d) == ("python_exception", 3)


def test_invalid_utf8_and_nul_bytes(make_job: MakeJob) -> None:
    junk = b"\xff\xfe\xc3\x00\x00\xed\xa0\x80\xf0\x9f\x98 \x00" * 10
    head = b"iteration 1 | loss 2.5\n" * 100
    data = head + junk + b"\n" + TB.encode().replace(b"KeyError", b"Key\x00Error") + junk
    d = make_job({"slurm-1.out": data})
    assert _verdict(d)[1] == 3
    assert_clean_exit(cli(d, "-f", "json"))


def test_file_of_nuls_after_a_crash(make_job: MakeJob) -> None:
    # A node that loses power leaves the tail of a file as NUL bytes.
    d = make_job({"slurm-1.out": TB.encode() + b"\x00" * (1 << 20)})
    assert _verdict(d) == ("python_exception", 3)


def test_gzip_that_ends_early(make_job: MakeJob) -> None:
    body = ("iteration 5\n" * 20000 + TB).encode()
    gz = gzip.compress(body)
    d = make_job({"slurm-1.out.gz": gz[: len(gz) - 40], "slurm-1.err": TB.encode()})
    a = analyze(d, catalog=CATALOG, workers=1)
    assert any("slurm-1.out.gz" in p and "ends early" in p for p in a.read.problems)
    assert a.diagnosis.verdict.category == "python_exception"
    r = cli(d)
    assert_clean_exit(r)
    assert "slurm-1.out.gz" in r.stderr


def test_gzip_header_only_and_garbage_gzip(make_job: MakeJob) -> None:
    d = make_job({"a.log.gz": b"\x1f\x8b", "b.log.gz": b"\x1f\x8b\x08\x00garbage"})
    r = cli(d)
    assert_clean_exit(r)
    assert r.code == 3 and "a.log.gz" in r.stderr


def test_empty_files_only(make_job: MakeJob) -> None:
    d = make_job({"slurm-1.out": b"", "rank0.log": b""})
    r = cli(d)
    assert r.code == 3 and "empty" in r.stderr


def test_empty_file_next_to_a_real_log(make_job: MakeJob) -> None:
    d = make_job({"slurm-1.out": b"", "slurm-1.err": TB.encode()})
    assert _verdict(d) == ("python_exception", 3)


def test_permission_denied(make_job: MakeJob) -> None:
    # Root reads every file whatever its mode, so chmod cannot make one unreadable: an audit
    # hook refuses to open it instead, in this process, exactly as the kernel would (EACCES).
    d = make_job({"slurm-1.out": TB.encode(), "locked.log": b"x\n", "sub/r.log": b"y\n"})
    deny = {str(d / "locked.log"), str(d / "sub")}
    with audited(deny=deny):
        a = analyze(d, catalog=CATALOG, workers=1)
        r = cli(d)
    assert any("locked.log" in p and "Permission denied" in p for p in a.read.problems)
    assert any(p.startswith("sub") for p in a.read.problems)
    assert (a.diagnosis.verdict.category, a.diagnosis.verdict.rank) == ("python_exception", 3)
    assert_clean_exit(r)
    assert r.code == 0 and "locked.log" in r.stderr


def test_permission_denied_on_everything(make_job: MakeJob) -> None:
    d = make_job({"slurm-1.out": TB.encode()})
    with audited(deny={str(d / "slurm-1.out")}):
        r = cli(d)
    assert r.code == 3 and "slurm-1.out" in r.stderr and "Permission denied" in r.stderr


def test_file_unreadable_between_discovery_and_reading(make_job: MakeJob) -> None:
    d = make_job({"slurm-1.out": TB.encode(), "slurm-1.err": TB.encode()})
    from analyzer.read.discover import discover
    from analyzer.read.readjob import read_job

    disc = discover([d])
    (d / "slurm-1.err").unlink()
    rr = read_job(disc, CATALOG, workers=1)
    assert any("slurm-1.err" in p for p in rr.problems)


def test_symlink_loops(make_job: MakeJob) -> None:
    d = make_job({"slurm-1.out": TB.encode()})
    (d / "self").symlink_to(".")
    (d / "a").symlink_to("b")
    (d / "b").symlink_to("a")
    (d / "sub").mkdir()
    (d / "sub" / "up").symlink_to("..")
    (d / "dangling.log").symlink_to("nowhere.log")
    a = analyze(d, catalog=CATALOG, workers=1)
    assert [s.file.rel for s in a.read.scans] == ["slurm-1.out"]
    assert _verdict(d) == ("python_exception", 3)
    assert_clean_exit(cli(d))


def test_special_files_are_never_opened(make_job: MakeJob) -> None:
    d = make_job({"slurm-1.out": TB.encode()})
    os.mkfifo(d / "pipe.log")  # opening a FIFO for reading would block forever
    with audited() as audit:
        a = analyze(d, catalog=CATALOG, workers=1)
    assert str(d / "pipe.log") not in audit.opened
    assert a.diagnosis.verdict.category == "python_exception"
    r = cli(d / "pipe.log")
    assert r.code == 3 and "not a regular file" in r.stderr


def test_binary_files_named_like_logs(make_job: MakeJob) -> None:
    d = make_job(
        {
            "ckpt.log": b"PK\x03\x04" + os.urandom(4096),
            "noise.out": os.urandom(1 << 16),
            "slurm-1.out": TB.encode(),
        },
    )
    assert _verdict(d) == ("python_exception", 3)


def _small_files(d: Path, n: int) -> Path:
    """``n`` one-line logs, 1,000 to a folder, one of them (in the middle) a traceback."""
    d.mkdir()
    payload = b"iteration 1 | loss 2.5\n"
    for i in range(n):
        sub = d / f"n{i // 1000:03d}"
        if i % 1000 == 0:
            sub.mkdir()
        fd = os.open(sub / f"rank{i}.log", os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, TB.encode() if i == n // 2 else payload)
        os.close(fd)
    return d


@pytest.mark.slow
def test_directory_of_100000_small_files(tmp_path: Path) -> None:
    """100,000 files are all read, and cost about 8 times what 12,500 cost (discovery or
    attribution that compares every file with every other would cost 64 times): CPU time of
    this process, compared within this run, so a busy machine changes nothing."""

    def run(d: Path) -> tuple[float, Any]:
        start = time.process_time()
        a = analyze(d, catalog=CATALOG, workers=1)
        return time.process_time() - start, a

    small = _small_files(tmp_path / "small", 12_500)
    d = _small_files(tmp_path / "job", 100_000)
    t_small = min(run(small)[0], run(small)[0])  # the first run also warms caches
    t_big, a = run(d)
    assert len(a.read.scans) == 100_000
    assert a.diagnosis.verdict.category == "python_exception"
    assert t_big < 3 * 8 * t_small, f"8 times the files cost {t_big / t_small:.0f} times the work"


def test_file_that_grows_while_it_is_read(make_job: MakeJob) -> None:
    d = make_job({"slurm-1.out": b"start\n"})
    path = d / "slurm-1.out"
    stop = threading.Event()

    def writer() -> None:
        with open(path, "ab", buffering=0) as fh:
            i = 0
            while not stop.is_set():
                # partial lines too: a writer is caught mid-line
                fh.write(b"iteration %d | loss 2.5 | lr 1e-4\n" % i + b"[rank3]: step")
                fh.write(b" done\n" * 50)
                i += 1
                if i % 100 == 0:
                    time.sleep(0.001)
            fh.write(TB.encode())

    t = threading.Thread(target=writer)
    t.start()
    try:
        time.sleep(0.2)
        for _ in range(3):
            a = analyze(d, catalog=CATALOG, workers=1)
            assert a.diagnosis.status in ("ok", "failed")
            r = cli(d, "-f", "json")
            assert_clean_exit(r)
    finally:
        stop.set()
        t.join()
    assert _verdict(d) == ("python_exception", 3)


def test_file_truncated_while_it_is_read(make_job: MakeJob) -> None:
    # logrotate's copytruncate: the file shrinks under the reader.
    d = make_job({"slurm-1.out": b"iteration 1\n" * 400_000 + TB.encode()})
    path = d / "slurm-1.out"
    done = threading.Event()

    def truncater() -> None:
        while not done.is_set():
            with open(path, "r+b") as fh:
                fh.truncate(1000)
            with open(path, "ab") as fh:
                fh.write(b"iteration 2\n" * 100_000)

    t = threading.Thread(target=truncater)
    t.start()
    try:
        for _ in range(3):
            analyze(d, catalog=CATALOG, workers=1)
    finally:
        done.set()
        t.join()


def test_nothing_readable_exits_3_in_a_real_process(make_job: MakeJob) -> None:
    d = make_job({"junk.bin.log": b"\x00\x01\x02" * 500, "empty.out": b""})
    r = cli_subprocess(d)
    assert r.code == 3 and "Traceback" not in r.stderr
    assert r.stderr.startswith("mcore-diagnose: ")

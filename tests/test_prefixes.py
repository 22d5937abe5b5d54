"""Prefix stripping and timestamp parsing on the forms real launchers print."""

from __future__ import annotations

import pytest

from analyzer.prefixes import split_prefixes
from analyzer.sanitize import clean_line
from analyzer.timestamps import Stamp, find_stamp, parse_glog, parse_iso


@pytest.mark.parametrize(
    ("line", "task", "local_rank", "rank", "message"),
    [
        ("  3: [default1]:[rank25]:[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] [Rank 1] W",
         3, 1, 25, "[Rank 1] W"),
        ("0: [default0]:hello", 0, 0, None, "hello"),
        ("[rank3]:   File \"x.py\", line 1", None, None, 3, "  File \"x.py\", line 1"),
        ("[rank3]: Traceback (most recent call last):", None, None, 3,
         "Traceback (most recent call last):"),
        ("i.pretrain/0 [default2]:[rank2]: boom", None, 2, 2, "boom"),
        ("[24]:[rank24]:x", None, None, 24, "x"),
        ("[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog", None, None, None, "[Rank 1] Watchdog"),
        ("W0731 10:50:07.575000 3247964 site-packages/torch/distributed/elastic/"
         "multiprocessing/api.py:897] Sending process 1 closing signal SIGTERM",
         None, None, None, "Sending process 1 closing signal SIGTERM"),
        ("[2024-01-20 07:54:42,803] torch.distributed.elastic.multiprocessing.api: [WARNING] "
         "Sending", None, None, None, "Sending"),
        ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1)", None, None,
         None, "failed (exitcode: 1)"),
        ("plain message: with colon", None, None, None, "plain message: with colon"),
        ("slurmstepd: error: *** JOB 1 ON n CANCELLED", None, None, None,
         "slurmstepd: error: *** JOB 1 ON n CANCELLED"),
    ],
)
def test_split_prefixes(
    line: str, task: int | None, local_rank: int | None, rank: int | None, message: str
) -> None:
    p = split_prefixes(line)
    assert (p.task, p.local_rank, p.rank, p.message) == (task, local_rank, rank, message)


def test_cpp_stamp_drops_monotonic_fraction_and_reads_unpadded_date() -> None:
    p = split_prefixes("[rank0]:[E808 04:21:41.161005534 ProcessGroupNCCL.cpp:2299] x")
    assert p.stamp == Stamp(None, 8, 8, 4, 21, 41, 0)
    assert p.level == "E"


def test_python_logger_stamp_keeps_microseconds() -> None:
    p = split_prefixes("E0120 07:54:42.803000 1399 torch/distributed/x.py:858] failed")
    assert p.stamp == Stamp(None, 1, 20, 7, 54, 42, 803000)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("*** JOB 4243 ON nid1 CANCELLED AT 2024-01-06T09:55:10 DUE TO TIME LIMIT ***",
         Stamp(2024, 1, 6, 9, 55, 10)),
        ("  time      : 2026-08-20_14:03:11", Stamp(2026, 8, 20, 14, 3, 11)),
        (" [2026-08-20 14:03:11.123456] iteration 5/10 |", Stamp(2026, 8, 20, 14, 3, 11, 123456)),
        ("[2024-01-20 07:54:42,803] torch", Stamp(2024, 1, 20, 7, 54, 42, 803000)),
    ],
)
def test_iso_variants(text: str, want: Stamp) -> None:
    assert parse_iso(text) == want
    assert find_stamp(text) == want


def test_glog_rejects_impossible_dates() -> None:
    assert parse_glog("E1399 10:00:00.000000") is None
    assert parse_glog("E101 10:00:00.123456789") == Stamp(None, 1, 1, 10, 0, 0, 0)


def test_clean_line_strips_ansi_and_progress_frames() -> None:
    raw = "\x1b[32mLoading 10%\rLoading 100%\r\x1b[0m[rank0]: Traceback (most recent call last):"
    assert clean_line(raw) == "[rank0]: Traceback (most recent call last):"
    assert clean_line("a\x00b\x07c\r\n") == "abc"
    assert clean_line("x" * 20000).endswith("more chars]")

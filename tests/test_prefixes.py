"""Prefix stripping and timestamp parsing on the forms real launchers print."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.lines.prefixes import split_prefixes
from analyzer.lines.timestamps import Stamp, find_stamp, parse_glog, parse_iso
from analyzer.util.sanitize import clean_line
from tests.helpers import SAMPLE_LOGS, WILD, write_job


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


# Launcher prefixes of other launchers, on real lines from public threads.
@pytest.mark.parametrize(
    ("line", "rank", "host", "worker_pid", "message"),
    [
        # OpenMPI / Horovod --tag-output: [jobid,rank]<stream>: (the MPI rank is global)
        ("[1,0]<stderr>:Traceback (most recent call last):", 0, None, None,
         "Traceback (most recent call last):"),
        ("[1,5]<stderr>:[shim5c combine] x.shape=(0, 2048)", 5, None, None,
         "[shim5c combine] x.shape=(0, 2048)"),
        # horovodrun (gloo) tags with the rank alone
        ("[1]<stderr>:[I debug.cpp:49] [c10d] The debug level is set to DETAIL.", 1, None, None,
         "[c10d] The debug level is set to DETAIL."),
        # OpenMPI around Lightning's own [rank: N]
        ("[1,1]<stderr>:[rank: 1] Monitored metric val_loss did not improve in the last 3 records."
         " Best score: 0.378. Signaling Trainer to stop.", 1, None, None,
         "Monitored metric val_loss did not improve in the last 3 records. Best score: 0.378. "
         "Signaling Trainer to stop."),
        # Lightning's rank-prefixed messages
        ("[rank: 5] Seed set to 1", 5, None, None, "Seed set to 1"),
        # Determined's trial prefix, inside a markdown quote of the paste
        ("> [] [rank=0] RuntimeError: CUDA out of memory. Tried to allocate 824.00 MiB", 0, None,
         None, "RuntimeError: CUDA out of memory. Tried to allocate 824.00 MiB"),
        # pytest's failure report around an mp.spawn error (ColossalAI's test suite)
        ("E       -- Process 3 terminated with the following error:", None, None, None,
         "-- Process 3 terminated with the following error:"),
        ("E           dist._verify_model_across_ranks(self.process_group, parameters)", None,
         None, None, "    dist._verify_model_across_ranks(self.process_group, parameters)"),
        # a quoted paste keeps nothing of the quote
        ("> > Traceback (most recent call last):", None, None, None,
         "Traceback (most recent call last):"),
        # Ray actors name a process and a host, not a rank
        ("(RayTrainWorker pid=1193, ip=10.244.4.193) Setting up process group for: env:// "
         "[rank=0, world_size=2]", None, "10.244.4.193", 1193,
         "Setting up process group for: env:// [rank=0, world_size=2]"),
        ("(RayWorker pid=27540) [W socket.cpp:436] [c10d] The server socket cannot be initialized "
         "on [::]:49363 (errno: 97 - Address family not supported by protocol).", None, None, 27540,
         "[c10d] The server socket cannot be initialized on [::]:49363 (errno: 97 - Address family "
         "not supported by protocol)."),
        # pdsh (DeepSpeed multi-node launcher): host: line
        ("172.16.220.18: bash: /home/lxw/anaconda3/envs/sys_py37/bin/python: No such file or "
         "directory", None, "172.16.220.18", None,
         "bash: /home/lxw/anaconda3/envs/sys_py37/bin/python: No such file or directory"),
        # Built from pdsh's format (host name instead of an address):
        ("worker-1: Traceback (most recent call last):", None, "worker-1", None,
         "Traceback (most recent call last):"),
    ],
)
def test_other_launcher_prefixes(
    line: str, rank: int | None, host: str | None, worker_pid: int | None, message: str
) -> None:
    p = split_prefixes(line)
    assert (p.rank, p.host, p.worker_pid, p.message) == (rank, host, worker_pid, message)
    assert p.task is None and p.local_rank is None


@pytest.mark.parametrize(
    "line",
    [
        # Kernel drivers and programs name themselves the way pdsh names hosts: not hosts.
        "nvidia-nvswitch3: SXid (PCI:0000:86:00.0): 24007, Fatal, Link 44 sourcetrack timeout",
        "RuntimeError: Address already in use",
        "python3: can't open file 'train.py': [Errno 2] No such file or directory",
        "node017:412734:412734 [1] init.cc:845 NCCL WARN Duplicate GPU detected : rank 9 and",
        "Epoch 8: 100% 16/16 [00:16<00:00,  1.04s/it, loss=0.33]",
        ">>> import torch",
        "> initializing torch distributed ...",
        "->  raise RuntimeError(msg)",
    ],
)
def test_lookalikes_are_not_host_prefixes(line: str) -> None:
    p = split_prefixes(line)
    assert p.host is None and p.message == line


def test_process_group_rank_in_watchdog_line_is_not_a_global_rank() -> None:
    """The old ProcessGroupNCCL tag ``[Rank N]`` is the rank in its process group (group-local for
    a subgroup): it stays in the message for the catalog, it is never the line's rank."""
    p = split_prefixes(
        "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=4, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800867 milliseconds "
        "before timing out."
    )
    assert p.rank is None and p.message.startswith("[Rank 1] Watchdog caught")


def test_clean_line_fast_path_is_sound() -> None:
    """``clean_line`` returns a printable line untouched: every character its slow path would
    remove or act on (ESC, CSI, CR, LF, tab, every C0/C1 control) is unprintable."""
    for cp in [*range(0x00, 0x20), *range(0x7F, 0xA0)]:
        assert not chr(cp).isprintable()
    assert clean_line("plain [rank0]: é ✓ line") == "plain [rank0]: é ✓ line"


def test_prefix_first_character_gates_are_sound() -> None:
    """``split_prefixes`` tries a prefix only where its first character can start it: on every
    position of many prefixed lines, each prefix that matches there starts with a character of
    its gate (or one from ``\\x80`` up, always tried)."""
    import analyzer.lines.launchers as lx
    import analyzer.lines.prefixes as px

    lines = [
        "P12   3: [default1]:[rank25]:[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] x",
        "worker-1: [1,3]<stderr>:(RayTrainWorker pid=1193, ip=10.244.4.193) [c] [rank=3] x",
        "10.0.0.1: i.pretrain/0 [default2]:[24]:[rank2]: [rank: 3] W0731 10:50:07.575000 3247 "
        "a/api.py:897] ERROR:torch.x: INFO:torch: DEBUG:torch: CRITICAL:torch: > > x",
        "[2024-01-20 07:54:42,803] torch.distributed.elastic: [WARNING] F1202 I1202 V1202 C1202",
        "(worker1, rank=1, pid=2769, ip=10.100.10.12) (MegatronPolicyWorker[rank=9] pid=41) "
        "rank3]: x",
    ]
    gates = [
        (px._SRUN, px._SRUN_FIRST), (px._PDSH, px._PDSH_FIRST), (lx._TAG, px._LETTERS),
        (px._PYLOG, px._PYLOG_FIRST), (px._BASIC, px._BASIC_FIRST), (px._QUOTE, {">"}),
        *[(rx, {"["}) for rx in (lx._OMPI, lx._DETERMINED, px._TEE, px._TEMPLATE, px._RANK,
                                 px._LIGHTNING, px._CPP, px._PY21)],
        (lx._RAY, {"("}), (lx._SKY, {"("}), (px._CUT_RANK, {"r"}),
    ]
    hits = 0
    for line in lines:
        for i in range(len(line)):
            for rx, first in gates:
                if rx.match(line, i):
                    hits += 1
                    assert line[i] in first
    assert hits > 30


_TASK_GROUP = '''
import asyncio

async def load(path):
    with open(path) as f:
        return f.read()

async def parse(text):
    return int(text)

async def main():
    async with asyncio.TaskGroup() as tg:
        tg.create_task(load("/nonexistent/ckpt/iter_0000100/model_optim_rng.pt"))
        tg.create_task(parse("not-a-number"))

asyncio.run(main())
'''


def _exception_group_log(tmp_path: Path, prefix: str = "") -> Path:
    """A real ExceptionGroup traceback, printed by this Python (3.11+), as a job directory."""
    run = subprocess.run(
        [sys.executable, "-c", _TASK_GROUP], capture_output=True, text=True, check=False
    )
    assert run.returncode == 1 and "Exception Group Traceback" in run.stderr
    return write_job(
        tmp_path / "job", {"train.err": "".join(prefix + ln for ln in run.stderr.splitlines(True))}
    )


def test_exception_group_margin_is_dropped(tmp_path: Path) -> None:
    lines = (_exception_group_log(tmp_path) / "train.err").read_text().splitlines()
    messages = [split_prefixes(ln).message for ln in lines]
    assert messages[0] == "Exception Group Traceback (most recent call last):"
    assert "Traceback (most recent call last):" in messages
    assert any(m.startswith("FileNotFoundError: [Errno 2]") for m in messages)
    assert any(m.startswith("ValueError: invalid literal for int()") for m in messages)
    assert any(m.startswith('  File "') for m in messages)
    # Separators are kept, not read as messages of their own.
    assert any(m.startswith("  +-+----") for m in messages)
    assert not any(m.startswith(("  | ", "    | ")) for m in messages)


@pytest.mark.parametrize("prefix", ["", "[rank3]: ", "  1: [default1]:"])
def test_exception_group_sub_exception_is_the_cause(tmp_path: Path, prefix: str) -> None:
    from analyzer.api import analyze

    analysis = analyze(_exception_group_log(tmp_path, prefix))
    missing = [e for e in analysis.rows if e.pattern_id == "megatron.ckpt.missing_file"]
    assert missing, [e.pattern_id for e in analysis.rows]
    event = missing[0]
    assert event.message.startswith("FileNotFoundError")
    assert event.traceback and 'in load' in event.traceback
    assert analysis.diagnosis.verdict.category == "checkpoint"
    if prefix == "[rank3]: ":
        assert event.rank == 3


@pytest.mark.parametrize(
    "line",
    [
        "  | Name  | Type   | Params",  # Lightning's model summary: only the margin goes
        "  |",
        "  +-+---------------- 1 ----------------",
        "  + not a group",
    ],
)
def test_exception_group_margin_needs_its_shape(line: str) -> None:
    message = split_prefixes(line).message
    if line.startswith("  | Name"):
        assert message == "Name  | Type   | Params"
    else:
        assert message == line


def test_a_log_pasted_inside_a_markdown_quote_is_read_without_it() -> None:
    from analyzer.lines.pastes import quoted_paste

    # A real reply that quotes a nanoGPT run (33 of 34 lines quoted).
    pasted = (WILD / "a-nanogpt-torchrun-loss-nan" / "output.log").read_bytes()
    assert quoted_paste(pasted)
    # Megatron's own "> building ..." lines are a minority of a real log's lines.
    megatron = (
        SAMPLE_LOGS / "formats/hang-lowest-last-enqueued/torchrun-logs/gpu-node-001/"
        "60441_f_q_7zk0/attempt_0/0/stdout.log"
    ).read_bytes()
    assert b"\n> " in megatron and not quoted_paste(megatron)
    assert not quoted_paste(b"") and not quoted_paste(b"\n\n")
    # In a quoted paste the quote goes whatever follows it (indentation, a JSON field);
    # elsewhere it goes only in front of a prefix or a traceback line.
    line = '>     "message": "RendezvousTimeoutError: ",'
    assert split_prefixes(line, quoted=True).message == '    "message": "RendezvousTimeoutError: ",'
    assert split_prefixes(line).message == line
    assert split_prefixes(">   0: [rank2]: x", quoted=True).message == "x"


@pytest.mark.parametrize(
    ("line", "message", "task", "rank", "stamp"),
    [
        # kubectl logs --timestamps (nanoseconds, Z) over a torch 2.x rank prefix
        ("2024-05-01T12:34:56.789012345Z [rank3]: RuntimeError: x", "RuntimeError: x", None, 3,
         Stamp(2024, 5, 1, 12, 34, 56, 789012)),
        # GitHub Actions (7 digits) over an srun label: the collector's time dates the line
        ("2024-05-01T12:34:56.7890123Z   1: Traceback (most recent call last):",
         "Traceback (most recent call last):", 1, None, Stamp(2024, 5, 1, 12, 34, 56, 789012)),
        # the program's own stamp wins over the collector's
        ("2024-05-01T12:34:56+02:00 [E709 17:05:38.162555850 File.cpp:1] boom", "boom", None,
         None, Stamp(None, 7, 9, 17, 5, 38, 0)),
        # a time without a zone, or with nothing after it, is not a collector's prefix
        ("2024-05-01T12:34:56 RuntimeError: x", "2024-05-01T12:34:56 RuntimeError: x", None,
         None, None),
        # over an exception group's margin
        ("2024-05-01T12:34:56Z   | ValueError: x", "ValueError: x", None, None,
         Stamp(2024, 5, 1, 12, 34, 56, 0)),
    ],
)
def test_a_log_collectors_time_is_peeled_and_dates_the_line(
    line: str, message: str, task: int | None, rank: int | None, stamp: Stamp | None
) -> None:
    p = split_prefixes(line)
    assert (p.message, p.task, p.rank, p.stamp) == (message, task, rank, stamp)


@pytest.mark.parametrize(
    ("line", "message", "host", "rank", "stamp"),
    [
        # moreutils ts
        ("May 01 12:34:56 RuntimeError: x", "RuntimeError: x", None, None,
         Stamp(None, 5, 1, 12, 34, 56, 0)),
        # a journald record of the kernel: its host is the node the line is about
        ("May  1 12:34:56 node01 kernel: Out of memory: Killed process 4242 (python)",
         "Out of memory: Killed process 4242 (python)", "node01", None,
         Stamp(None, 5, 1, 12, 34, 56, 0)),
        # a journald record of a process, over torch's rank prefix
        ("Dec 31 23:59:59 gpu-7 python[4242]: [rank3]: Traceback (most recent call last):",
         "Traceback (most recent call last):", "gpu-7", 3, Stamp(None, 12, 31, 23, 59, 59, 0)),
        # a program's "word N: " after ts is not a journald host and process
        ("May 01 12:34:56 iteration 10: loss 2.1", "iteration 10: loss 2.1", None, None,
         Stamp(None, 5, 1, 12, 34, 56, 0)),
        ("Mayday 12:00:00 x", "Mayday 12:00:00 x", None, None, None),
    ],
)
def test_a_syslog_style_time_is_peeled_and_a_journald_host_kept(
    line: str, message: str, host: str | None, rank: int | None, stamp: Stamp | None
) -> None:
    p = split_prefixes(line)
    assert (p.message, p.host, p.rank, p.stamp) == (message, host, rank, stamp)


@pytest.mark.parametrize(
    ("line", "rank", "host", "stamp", "message"),
    [
        # tests/wild/a-*: a wrapper's date and time in front of c10d's rank prefix (real line)
        ("2025-06-24 17:29:06  [rank0]:[E624 09:29:06.969438582 ProcessGroupNCCL.cpp:1785] x",
         0, None, Stamp(None, 6, 24, 9, 29, 6), "x"),
        ("2024-05-01 12:34:56,789 [rank3]: RuntimeError: boom", 3, None,
         Stamp(2024, 5, 1, 12, 34, 56, 789000), "RuntimeError: boom"),
        ("[2024-05-01 12:34:56] [rank3]: RuntimeError: boom", 3, None,
         Stamp(2024, 5, 1, 12, 34, 56), "RuntimeError: boom"),
        ("2024-05-01T12:34:56.5 - [default2]:boom", 2, None,
         Stamp(2024, 5, 1, 12, 34, 56, 500000), "boom"),
        ("12:34:56 [rank3]: RuntimeError: boom", 3, None, None, "RuntimeError: boom"),
        ("1714567890.123 [rank3]: boom", 3, None, Stamp(2024, 5, 1, 12, 51, 30), "boom"),
        ("node01 [stderr] [rank3]: boom", 3, "node01", None, "boom"),
        ("gpu-7.cluster [stdout] Watchdog caught collective operation timeout: ", None,
         "gpu-7.cluster", None, "Watchdog caught collective operation timeout: "),
        ("[node01:3]: An error occurred: KeyError 'x'", 3, "node01", None,
         "An error occurred: KeyError 'x'"),
        ("2024-05-01 12:34:56 [node01:3]: boom", 3, "node01", Stamp(2024, 5, 1, 12, 34, 56),
         "boom"),
        # a PAI-DLC pod's name in front of torchelastic's logger (tests/wild/c-memoryvla-…)
        ("[dlc1mtq58q0821ib-master-0] [2026-03-30 19:24:35,966] torch.distributed.elastic."
         "multiprocessing.api: [WARNING] Sending process 73 the closing signal SIGTERM", None,
         "dlc1mtq58q0821ib-master-0", Stamp(2026, 3, 30, 19, 24, 35, 966000),
         "Sending process 73 the closing signal SIGTERM"),
        ("[node-3] [rank3]: boom", 3, "node-3", None, "boom"),
        # a CI harness's label in front of the rank prefix (tests/wild/a-srun-thunder-…)
        ("0: Error: [rank0]: Traceback (most recent call last):", 0, None, None,
         "Traceback (most recent call last):"),
    ],
)
def test_time_and_host_in_front_of_the_rank(
    line: str, rank: int | None, host: str | None, stamp: Stamp | None, message: str
) -> None:
    """A time (asctime, bracketed, ISO, HH:MM:SS, epoch) and a collector's host are peeled in
    front of the rank prefix, and a date dates the line."""
    p = split_prefixes(line)
    got_rank = p.rank if p.rank is not None else p.local_rank
    assert (p.message, got_rank, p.host, p.stamp) == (message, rank, host, stamp)


@pytest.mark.parametrize(
    "line",
    [
        " [2024-05-01 12:34:56] iteration       10/     100 | consumed samples: 80",
        "[2024-05-01 12:34:56] iteration 10/100",
        "2024-05-01 12:34:56,789 - INFO - training started",
        "12:34:56 loss 2.3",
        "1714567890 events processed",
        "[INFO] [2024-01-01 00:00:00] no host in the first bracket",
    ],
)
def test_a_time_before_the_message_itself_stays(line: str) -> None:
    """A time not followed by a rank prefix belongs to the message (Megatron's iteration line)."""
    assert split_prefixes(line).message == line


def test_torchruns_role_behind_its_logger_prefix_is_no_wrapper_tag() -> None:
    """torchrun's agent puts its role, ``[default] ``, behind glog's prefix on each of its
    lines: the agent's own lines alone (grep of a real run) are no relayed log, while a
    wrapper's tag in front of the logger's prefix is (h-torchrun-wrapper-prefix-typeerror)."""
    from analyzer.read.file import _builtin_catalog
    from analyzer.read.match import LineMatcher

    real = (SAMPLE_LOGS / "real" / "clean-success-verbose" / "slurm-1.out").read_bytes()
    agent = b"\n".join(ln for ln in real.splitlines() if b"] [default] " in ln) + b"\n"
    assert agent.count(b"\n") >= 10
    m = LineMatcher(_builtin_catalog())
    m.read_head(agent)
    assert m.pasted == ""
    m.read_head((WILD / "h-torchrun-wrapper-prefix-typeerror-rank0" / "output.log").read_bytes())
    assert m.pasted == "[TRAINING] "

"""The reader's shortcuts give the answers of the long way, on every bundled and wild log.

- ``split_prefixes`` returns a line that starts with NCCL's own ``host:pid:tid [dev] `` prefix
  as its message at once (``prefixes._NCCL_HEAD``): compared with the full peeling on every
  line of the bundled and wild logs and on hosts chosen to look like other prefixes.
- ``hard_wrap_width``: Megatron's iteration lines of one width, each followed by an NCCL line
  (a hit-dense log), are no hard wrap; a real wrap still is.
- The reader without the NCCL shortcut and without the builder's lane (``EventBuilder._lane``:
  a line of one pattern that ``split_prefixes`` would not change read the short way) reads
  the same events on every bundled and wild job (the other fast paths are compared in
  ``test_reader_needs.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import regex

from analyzer.lines import prefixes
from analyzer.lines.prefixes import split_prefixes
from analyzer.read.match import LineMatcher
from analyzer.read.wrap import hard_wrap_width
from analyzer.util.sanitize import clean_line, decode
from tests.helpers import SAMPLES, WILD
from tests.test_reader_needs import JOB_PARAMS, read_both

_NEVER = regex.compile(r"(?!)")


def _log_lines() -> list[str]:
    out: list[str] = []
    for root in [*SAMPLES, WILD]:
        for f in sorted(Path(root).rglob("*")):
            if f.is_file() and f.suffix not in (".toml", ".json", ".gz", ".md"):
                out.extend(clean_line(decode(raw)) for raw in f.read_bytes().splitlines())
    return out


TRICKY = [
    "node017:4242:4300 [3] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
    "9aee1c01f3e7:6727:7168 [1] NCCL INFO [Service thread] Connection closed by localRank 2",
    "INFO:12:13 [0] NCCL INFO comm 0x1 rank 0 nranks 8 cudaDev 0 - Init COMPLETE",
    "E:1:2 [0] NCCL WARN x",
    "Jan:1:2 [0] NCCL INFO x",
    "W1202:1:2 [0] NCCL INFO x",
    "P1:2:3 [0] NCCL INFO x",
    "10.0.0.1:55:66 [7] NCCL INFO x [stderr] y",
    "2024-05-01T12:34:56:7 [0] NCCL INFO x",
    "2024-05-01T12:34:56.789Z node1 [stderr] x",
    "12:34:56 [0] NCCL INFO x",
    "1234567890:1:2 [0] [rank3]: x",
    "worker-1: node1:1:2 [0] NCCL INFO x",
    "  3: node1:1:2 [0] NCCL INFO x",
    "[rank3]: node1:1:2 [0] NCCL INFO x",
    "node1:1:2 [0] [rank3]: NCCL INFO x",
    "a.b-c_d:1:2 [0] ",
]


def test_the_nccl_head_shortcut_peels_what_the_long_way_peels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Only a line the shortcut takes can read differently (any other takes the long way both
    # times); each distinct line once.
    lines = sorted({ln for ln in [*_log_lines(), *TRICKY] if prefixes._NCCL_HEAD.match(ln)})
    fast = [split_prefixes(ln) for ln in lines]
    assert len(lines) > 100
    monkeypatch.setattr(prefixes, "_NCCL_HEAD", _NEVER)
    monkeypatch.setattr(LineMatcher, "lane", lambda _self, _start: None)
    slow = [split_prefixes(ln) for ln in lines]
    assert [(ln, f) for ln, f, s in zip(lines, fast, slow, strict=True) if f != s] == []


ITERATION = (
    " [2026-08-20 11:50:52.{us:06d}] iteration {it}/  500000 | consumed samples:     {it} |"
    " elapsed time per iteration (ms): 8123.5 | lm loss: 2.345679E+00 | grad norm: 0.812 |"
)
NCCL = (
    "node000:180000:180061 [0] NCCL INFO AllReduce: opCount {it} sendbuff 0x7fcab79f6c2b "
    "count 1259621 datatype 7 op 0 root 0 comm 0x26bf9043f3e [nranks=1024]"
)


def test_iteration_lines_followed_by_nccl_lines_are_no_wrap() -> None:
    lines = []
    for it in range(100, 400):
        lines.append(ITERATION.format(us=it * 7919 % 1000000, it=it))
        if it % 3:
            lines.append(NCCL.format(it=it))
    head = ("\n".join(lines) + "\n").encode()
    assert hard_wrap_width(head) is None


def test_a_wrapped_nccl_message_is_still_a_wrap() -> None:
    msg = (
        "[rank3]:[E ProcessGroupNCCL.cpp:754] [Rank 3] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum={n}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=600000) ran for 600381 milliseconds before timing out."
    )
    out: list[str] = []
    for n in range(100, 104):
        text = msg.format(n=n)
        out.extend(text[i : i + 80] for i in range(0, len(text), 80))
    assert hard_wrap_width(("\n".join(out) + "\n").encode()) == 80


@pytest.mark.parametrize("job", JOB_PARAMS)
def test_without_the_shortcuts_every_event_is_the_same(
    job: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def switch_off() -> None:
        monkeypatch.setattr(prefixes, "_NCCL_HEAD", _NEVER)
        monkeypatch.setattr(LineMatcher, "lane", lambda _self, _start: None)

    fast, slow = read_both(job, switch_off)
    assert slow == fast

"""Strip the launcher and logger prefixes that stack in front of a log message.

Outermost first: srun ``--label`` (``  3: ``), a launcher tag such as NeMo-Run's
``i.pretrain/0 ``, torchrun's ``--tee`` header (``[default3]:``) or a
``--log-line-prefix-template`` header (``[24]:``), c10d's ``[rank3]:``, then the C++
(``[E1202 15:34:58.764000000 File.cpp:12] ``) or Python logger prefix
(``W1202 15:34:58.764000 4242 path/api.py:897] ``).
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

from analyzer.timestamps import Stamp, parse_glog, parse_iso

_SRUN = regex.compile(r"(?:P\d+ )?\ *(\d{1,6}): ")
_TAG = regex.compile(r"[A-Za-z][\w.-]*/\d+ (?=\[)")
_TEE = regex.compile(r"\[(?!rank\d)([A-Za-z_][A-Za-z_-]*?)(\d{1,5})\]:")
_TEMPLATE = regex.compile(r"\[(\d{1,6})\]:")
_RANK = regex.compile(r"\[rank(\d{1,6})\]: ?")
_CPP = regex.compile(r"\[(?P<lvl>[FEWIV])(?P<ts>\d{3,4} \d\d:\d\d:\d\d\.\d+)?\ ?[\w.]+:\d+\] ?")
_PYLOG = regex.compile(
    r"(?P<lvl>[VIWEFC])(?P<ts>\d{3,4} \d\d:\d\d:\d\d\.\d{6}) +(?P<pid>\d+) [^\s\]]+:\d+\] ?"
)
_PY21 = regex.compile(
    r"\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] [\w.]+: \[(?P<lvl>[A-Z]+)\] ?"
)
_BASIC = regex.compile(r"(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL):torch[\w.]*:")


@dataclass(frozen=True, slots=True)
class Prefixed:
    """What the prefixes of one line say, and the message behind them."""

    message: str
    task: int | None = None
    """srun ``--label`` task id (the node index with one task per node)."""
    local_rank: int | None = None
    """From torchrun's ``[default3]:`` header."""
    rank: int | None = None
    """Global rank from ``[rank3]:`` or a ``[${rank}]:`` prefix template."""
    level: str | None = None
    """Logger level letter (E, W, I, ...) when a logger prefix was present."""
    stamp: Stamp | None = None
    """Timestamp carried by the logger prefix."""
    logger_pid: int | None = None


def split_prefixes(line: str) -> Prefixed:
    """Peel the prefixes off ``line``; never raises, unknown prefixes stay in the message."""
    pos = 0
    task = local_rank = rank = pid = None
    level: str | None = None
    stamp: Stamp | None = None

    m = _SRUN.match(line, pos)
    if m:
        task = int(m[1])
        pos = m.end()
    m = _TAG.match(line, pos)
    if m:
        pos = m.end()
    m = _TEE.match(line, pos)
    if m:
        local_rank = int(m[2])
        pos = m.end()
    else:
        m = _TEMPLATE.match(line, pos)
        if m:
            rank = int(m[1])
            pos = m.end()
    m = _RANK.match(line, pos)
    if m:
        rank = int(m[1])
        pos = m.end()
    for rx in (_CPP, _PYLOG, _PY21, _BASIC):
        m = rx.match(line, pos)
        if m:
            level = m["lvl"][0]
            ts = m.groupdict().get("ts")
            if ts:
                stamp = parse_iso(ts) if "-" in ts else parse_glog(level + ts)
            if m.groupdict().get("pid"):
                pid = int(m["pid"])
            pos = m.end()
            break
    return Prefixed(line[pos:], task, local_rank, rank, level, stamp, pid)

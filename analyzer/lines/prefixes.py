"""Strip the launcher and logger prefixes that stack in front of a log message.

Outermost first: srun ``--label`` (``  3: ``) or a pdsh host (``worker-1: ``, DeepSpeed's
multi-node launcher), OpenMPI's / Horovod's ``--tag-output`` (``[1,3]<stderr>:``, ``[3]<stdout>:``),
a Ray actor (``(RayTrainWorker pid=1193, ip=10.244.4.193) ``), a launcher tag such as NeMo-Run's
``i.pretrain/0 ``, torchrun's ``--tee`` header (``[default3]:``) or a
``--log-line-prefix-template`` header (``[24]:``), c10d's ``[rank3]:``, Lightning's
``[rank: 3] `` or Determined's ``[rank=3] ``, then the C++
(``[E1202 15:34:58.764000000 File.cpp:12] ``) or Python logger prefix
(``W1202 15:34:58.764000 4242 path/api.py:897] ``). Innermost, Python's exception-group margin
(``  | ``, ``    | ``, ``  + `` in front of ``Exception Group Traceback``) is dropped, so the
frames and the message of a sub-exception read like any traceback.

A markdown quote (``> ``) of a pasted log is dropped first (in a file that is a quoted paste
as a whole, ``quoted_paste``, from every line), then a log collector's RFC 3339 time
(``kubectl logs --timestamps``, ``docker logs -t``, GitHub Actions:
``2024-05-01T12:34:56.789012345Z ``) or a syslog-style time (moreutils ``ts``, a journald
record with its host: ``May 01 12:34:56 node01 kernel: ``), which dates a line that has no
stamp of its own, then pytest's ``E       ``.

Ranks: ``[rankN]:``, a ``[N]:`` template, the MPI rank of ``--tag-output``, Lightning's
``[rank: N]`` and Determined's ``[rank=N]`` are global ranks; ``[defaultN]:`` is a local rank.
The ``[Rank N]`` inside ProcessGroupNCCL's messages is a process-group rank (group-local for a
subgroup) and stays in the message. A Ray actor prefix names a process and a host, never a rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import regex

from analyzer.lines.chars import DIGITS, LETTERS
from analyzer.lines.launchers import launchers
from analyzer.lines.timestamps import Stamp, parse_glog, parse_iso

_COLLECTOR = regex.compile(
    r"(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?)(?:Z|[+-]\d\d:?\d\d):? (?=.)"
)
"""An RFC 3339 time with its zone and one space (or a colon and a space), in front of every line
a log collector re-emits: ``kubectl logs --timestamps``, ``docker logs -t``, GitHub Actions' raw
logs (``2024-05-01T12:34:56.789012345Z ``), a cloud job's stored log
(``2021-03-10T13:22:37.443Z: [1,0]<stderr>:``, facebookresearch/deit under mpirun in the wild
corpus). Outermost after a quote; it dates the line when the program's own prefixes do not."""
_RANK_AHEAD = (
    r"(?=\[(?:rank)?\d{1,6}\]: ?|\[[A-Za-z_][A-Za-z_-]*?\d{1,5}\]:|\ *\d{1,6}: "
    r"|\[[A-Za-z0-9][\w.-]*:\d{1,6}\]: |[A-Za-z0-9][\w.-]* \[std(?:err|out)\] )"
)
"""What must follow a bare time for it to be peeled: a prefix that carries a rank or a task
(``[rank3]:``, ``[default3]:``, ``[24]:``, srun's ``  3: ``, ``[host:3]: ``, ``host [stderr] ``).
A time in front of anything else is the message's own (Megatron's `` [2024-…] iteration``)."""
_STAMPED = regex.compile(
    r"(?:\[(?P<iso>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)(?:Z|[+-]\d\d:?\d\d)?\]"
    r"|(?P<iso>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)(?:Z|[+-]\d\d:?\d\d)?"
    r"|\[?\d\d:\d\d:\d\d(?:[.,]\d{1,6})?\]?"
    r"|(?P<epoch>1\d{9})(?:\.\d{1,9})?)"
    r" +(?:[-|] +)?" + _RANK_AHEAD
)
"""A time a wrapper or Python logging's ``asctime`` puts in front of a rank prefix: a date and
time, bare or in brackets, with a comma or dot fraction (``2024-05-01 12:34:56,789 ``,
``[2024-05-01T12:34:56.789Z] ``), a bare ``HH:MM:SS`` (which dates nothing) or epoch seconds.
Peeled only in front of a prefix that carries a rank (``_RANK_AHEAD``)."""
_HOSTED = regex.compile(
    r"(?P<host>[A-Za-z0-9][\w.-]*) \[std(?:err|out)\] "
    r"|\[(?P<host>[A-Za-z0-9][\w.-]*):(?P<rank>\d{1,6})\]: "
    r"|\[(?P<host>[A-Za-z][\w.-]*\d[\w.-]*)\] (?=\[(?:\d{4}-\d\d-\d\d|rank\d|default\d))"
)
"""A log collector's ``host [stderr] `` / ``host [stdout] ``, a wrapper's ``[host:N]: `` (N is
the process's global rank), or a platform's ``[host] `` in front of a logger's bracketed date or
a rank prefix (a PAI-DLC pod: ``[dlc…-master-0] [2026-03-30 19:24:35,966] torch…``; the name
holds a digit, so ``[INFO] [`` is not a host)."""
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_SYSLOG = regex.compile(
    r"(?P<mon>" + "|".join(_MONTHS) + r") {1,2}(?P<d>\d{1,2}) "
    r"(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:\.(?P<f>\d{1,6}))? "
    r"(?:(?P<host>[A-Za-z0-9][\w.-]*) (?:kernel|[\w./-]+\[\d+\]): )?(?=.)"
)
"""A syslog-style time in front of a line: moreutils ``ts`` (``May 01 12:34:56 ``), or a
journald / syslog record (``May 01 12:34:56 node01 kernel: ``, ``... node01 python[4242]: ``),
whose host is the node the line is about."""
_SRUN = regex.compile(r"(?:P\d+ )?\ *(\d{1,6}): ")
_PDSH = regex.compile(
    r"(?P<host>\d{1,3}(?:\.\d{1,3}){3}): (?=\S)"
    r"|(?P<host>(?!(?:python|pip|gcc|cc|ld|sm|cuda|py)\d)[A-Za-z][A-Za-z0-9-]*\d[A-Za-z0-9-]*"
    r"(?:\.[A-Za-z][A-Za-z0-9-]*)*): "
    r"(?=\[|\s|Traceback|/|bash: |[\w.]*(?:Error|Exception|Warning)\b|[\w.-]+:\d+:\d+ \[\d+\] )"
)
"""pdsh (DeepSpeed's multi-node launcher) prefixes each remote line with ``host: ``. A host is an
IPv4 address, or a name with a digit (``worker-1``, ``node017``) followed by what a training log
line starts with (a bracket, indentation, a traceback, an exception, an NCCL prefix): a kernel
driver's ``nvidia-nvswitch3: SXid …`` or a program's ``RuntimeError: `` are not hosts."""
_CUT_RANK = regex.compile(r"rank(\d{1,6})\]: ?")
"""c10d's ``[rankN]:`` whose opening bracket a paste cut off (``rank3]: Traceback …``), at the
very start of a line only."""
_LIGHTNING = regex.compile(r"\[rank: (\d{1,6})\] ")
_QUOTE = regex.compile(r"(?:> )+(?=\S)")
"""A markdown block quote (``> ``) around a pasted log. Megatron itself prints ``> building
...`` lines, so the quote is dropped only in front of another prefix or a traceback line."""
_PASTE = regex.compile(r"(?:> ?)+")
"""The quote of a line in a file that is a quoted paste as a whole (``quoted_paste``)."""
_PYTEST = regex.compile(r"E {7}(?= *\S)")
"""pytest's failure report puts ``E       `` in front of every line of an exception (a
paste from a failed test): dropped like a quote."""
_QUOTED = regex.compile(r"Traceback |\s*File \"|[\w.]*(?:Error|Exception|Interrupt)\b")
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
_GROUP = regex.compile(r"(?:  )+(?:\| (?=.)|\+ (?=Exception Group Traceback ))")
"""Python 3.11+ prints an ``ExceptionGroup`` (asyncio's ``TaskGroup``, Ray, anyio) with a margin
of ``|`` two spaces deeper per nesting level, ``+`` on the group's first line."""


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
    host: str | None = None
    """The host named by a pdsh ``host: `` prefix or a Ray actor's ``ip=``."""
    worker_pid: int | None = None
    """The process named by a Ray actor prefix ``(Actor pid=N ...)``."""


_DIGITS = DIGITS
_LETTERS = LETTERS
_SRUN_FIRST = _DIGITS | {"P", " "}
_AFTER_SPACES = _DIGITS | {"|", "+"}
"""What may follow the leading spaces of a line that has a prefix: srun's task number
(``  3: ``), an exception group's margin (``  | ``, ``  + ``); any other character means no
prefix at all (``regex``'s ``\\d`` also matches other Unicode digits: from ``\\x80`` up the
line takes the long way)."""
_PDSH_FIRST = _DIGITS | _LETTERS
_PYLOG_FIRST = frozenset("VIWEFC")
_BASIC_FIRST = frozenset("DIWEC")
"""The ASCII characters each prefix can start with (``regex``'s ``\\d`` also matches other
Unicode digits, so a character from ``\\x80`` up is always tried). A prefix that cannot start
at the current position is not tried: most lines have one or two prefixes, and a failed
``match`` call costs as much as the test that avoids it many times over."""
_INNER_FIRST = frozenset("[(") | _LETTERS | _PYLOG_FIRST | _BASIC_FIRST
"""Every ASCII character a prefix after srun's / pdsh's can start with: at a position holding
none of them (nor a character from ``\\x80`` up) no further prefix can be peeled."""

_new = object.__new__
_SET = tuple(Prefixed.__dict__[n].__set__ for n in Prefixed.__slots__)


def _prefixed(
    message: str,
    task: int | None = None,
    local_rank: int | None = None,
    rank: int | None = None,
    level: str | None = None,
    stamp: Stamp | None = None,
    logger_pid: int | None = None,
    host: str | None = None,
    worker_pid: int | None = None,
) -> Prefixed:
    """``Prefixed(...)`` at half the cost: a frozen dataclass's ``__init__`` goes through
    ``object.__setattr__`` for every field; the slots' own descriptors are set directly."""
    o = _new(Prefixed)
    s0, s1, s2, s3, s4, s5, s6, s7, s8 = _SET
    s0(o, message)
    s1(o, task)
    s2(o, local_rank)
    s3(o, rank)
    s4(o, level)
    s5(o, stamp)
    s6(o, logger_pid)
    s7(o, host)
    s8(o, worker_pid)
    return o


_SYSLOG_FIRST = frozenset(m[0] for m in _MONTHS)
_OUTER_FIRST = _DIGITS | _LETTERS | {" "}
"""What an outer prefix (a collector's or syslog time, pytest's ``E``, srun's label, a pdsh
host) can start with; a line that starts otherwise (``[``, ``(``) goes straight to the inner
ones."""
_LOGGERS: dict[str, tuple[regex.Pattern[str], ...]] = {
    "[": (_CPP, _PY21),
    **dict.fromkeys(_PYLOG_FIRST | _BASIC_FIRST, (_PYLOG, _BASIC)),
}
"""The logger prefixes that may start at a character (every one from ``\x80`` up)."""
_ANY_LOGGER = (_CPP, _PYLOG, _PY21, _BASIC)


def _syslog_stamp(m: regex.Match[str]) -> Stamp | None:
    """The stamp of a ``_SYSLOG`` match (no year: the job's year fills it in)."""
    month = _MONTHS.index(m["mon"]) + 1
    day = int(m["d"])
    if not 1 <= day <= 31:
        return None
    micro = int((m["f"] + "000000")[:6]) if m["f"] else 0
    return Stamp(None, month, day, int(m["h"]), int(m["mi"]), int(m["s"]), micro)


def split_prefixes(line: str, quoted: bool = False) -> Prefixed:
    """Peel the prefixes off ``line``; never raises, unknown prefixes stay in the message.
    ``quoted``: the line is from a quoted paste (``quoted_paste``), so a leading ``> `` is
    always the quote, whatever follows it.

    The prefixes are peeled outermost first, each one tried only where the character at the
    current position can start it (a failed ``match`` call costs as much as the test that
    avoids it many times over): the outer ones (``_outer``), then, unless nothing more can
    start there, the launchers' (``launchers``), torchrun's and c10d's (``_torch``) and a
    logger's (``_logger``)."""
    first = line[:1]
    if first == " " and _bare_indent(line):
        return _prefixed(line)
    if first in _PDSH_FIRST and _NCCL_HEAD.match(line):
        return _prefixed(line)  # NCCL's own ``host:pid:tid [dev] `` prefix: nothing to peel
    quote = (_PASTE if quoted else _QUOTE).match(line) if first == ">" else None
    pos = quote.end() if quote else 0
    task: int | None = None
    host: str | None = None
    collected: Stamp | None = None
    rank: int | None = None
    c = line[pos : pos + 1]
    if c == "[":
        pos, host, collected, rank = _stamped(line, pos)
        c = line[pos : pos + 1]
    if c in _OUTER_FIRST or c >= "\x80":
        pos, task, host, collected, rank = _outer(line, pos, host, collected, rank)
        c = line[pos : pos + 1]
    if c in _INNER_FIRST or c >= "\x80":
        return _inner(line, pos, quote, quoted, task, host, collected, rank)
    # Nothing more can be peeled (most lines of a log that has no prefixes end here).
    if c == " ":
        pos = _group(line, pos)
    if quote:
        pos = _unquote(line, pos, quote, quoted)
    return _prefixed(line[pos:] if pos else line, task, stamp=collected, host=host)


NCCL_PROC = r"[A-Za-z0-9][A-Za-z0-9_.-]*:[0-9]+:[0-9]+ \[[0-9]+\] "
"""NCCL's own ``host:pid:tid [dev] `` in front of each of its lines (a regex source, for
``str`` and ``bytes`` patterns alike: ASCII only)."""

_NCCL_HEAD = regex.compile(NCCL_PROC)
"""The start of a line NCCL printed itself (``node017:4242:4300 [3] NCCL INFO …``; every line
of an ``NCCL_DEBUG=INFO`` log). No prefix can be peeled in front of it, so ``split_prefixes``
returns such a line as its message at once: each prefix that can start with its first
character needs a space, a ``/`` or a date where it has ``:`` and digits (srun's and pdsh's
``: ``, a launcher tag's ``/N ``, a logger's ``LEVEL:torch``, a time's ``T``/space after the
date), and ``_HOSTED``'s ``host [stderr] `` a space right after the host (tested on every
bundled and wild line by ``tests/test_reader_fastpaths.py``)."""


_NCCL_OWN = regex.compile(NCCL_PROC)
"""``_NCCL_HEAD`` for what the line is rather than for ``split_prefixes``'s shortcut (which
``tests/test_reader_fastpaths.py`` switches off to compare it with the long way)."""


def nccl_own(line: str) -> bool:
    """Whether ``line`` starts with NCCL's own ``host:pid:tid [dev] ``: a line NCCL printed
    itself, never the rest of another line."""
    return _NCCL_OWN.match(line) is not None


def bare(line: str) -> bool:
    """Whether ``split_prefixes`` peels nothing off ``line`` and returns it whole as its
    message, for one of its two shortcuts: an indent that leads to no prefix (Megatron's
    `` [time] iteration …``) or NCCL's own ``host:pid:tid [dev] ``."""
    first = line[:1]
    return (first == " " and _bare_indent(line)) or (
        first in _PDSH_FIRST and _NCCL_HEAD.match(line) is not None
    )


def _bare_indent(line: str) -> bool:
    """Whether an indented line (Megatron's `` [time] iteration …``, a traceback's frames)
    carries no prefix: only spaces that lead to srun's task number (``  3: ``) or to an
    exception group's margin (``  | ``, ``  + ``) can."""
    c = line.lstrip(" ")[:1]
    return bool(c) and c not in _AFTER_SPACES and c < "\x80"


def _stamped(
    line: str, pos: int, host: str | None = None, collected: Stamp | None = None,
    rank: int | None = None,
) -> tuple[int, str | None, Stamp | None, int | None]:
    """A time in front of a rank prefix (``_STAMPED``), then a collector's ``host [stderr] ``
    or a wrapper's ``[host:N]: ``: (where the rest starts, host, stamp, rank)."""
    c = line[pos : pos + 1]
    m = _STAMPED.match(line, pos) if c == "[" or c in _DIGITS else None
    if m:
        if m["iso"]:
            collected = parse_iso(m["iso"]) or collected
        elif m["epoch"]:
            t = datetime.fromtimestamp(int(m["epoch"]), tz=UTC)
            collected = Stamp(t.year, t.month, t.day, t.hour, t.minute, t.second)
        pos = m.end()
        pos += len(line) - pos - len(line[pos:].lstrip(" ")) if line[pos : pos + 1] == " " else 0
    c = line[pos : pos + 1]
    if (c == "[" and ":" in line[pos : pos + 80]) or " [std" in line[pos : pos + 80]:
        m = _HOSTED.match(line, pos)
        if m:
            host = m["host"]
            rank = int(m["rank"]) if m["rank"] else rank
            pos = m.end()
    return pos, host, collected, rank


def _collectors(line: str, pos: int, collected: Stamp | None) -> tuple[int, Stamp | None]:
    """Up to two log collectors' times at ``pos`` (kubectl's over a cloud job's stored log):
    (where the rest starts, the innermost time, which is the line's)."""
    for _ in range(2):
        m = _COLLECTOR.match(line, pos)
        if m is None:
            break
        collected, pos = parse_iso(m["ts"]) or collected, m.end()
    return pos, collected


def _outer(
    line: str, pos: int, host: str | None, collected: Stamp | None, rank: int | None
) -> tuple[int, int | None, str | None, Stamp | None, int | None]:
    """A log collector's time, a syslog time (with its host), a time in front of a rank
    prefix, a collector's host, pytest's ``E``, then srun's label or a pdsh host: (where the
    rest starts, srun task, host, the collector's stamp, rank)."""
    c = line[pos : pos + 1]
    if c in _DIGITS or c >= "\x80":
        pos, collected = _collectors(line, pos, collected)
        c = line[pos : pos + 1]
    if c in _SYSLOG_FIRST:
        m = _SYSLOG.match(line, pos)
        if m:
            collected = collected or _syslog_stamp(m)
            host = m["host"]
            pos = m.end()
            c = line[pos : pos + 1]
    if c in _DIGITS or c in _LETTERS or c >= "\x80":
        pos, host, collected, rank = _stamped(line, pos, host, collected, rank)
        c = line[pos : pos + 1]
    if c == "E":
        m = _PYTEST.match(line, pos)
        if m:
            pos = m.end()
            c = line[pos : pos + 1]
    if c in _SRUN_FIRST or c >= "\x80":
        m = _SRUN.match(line, pos)
        if m:  # a collector's time may follow srun's label (srun … | ts, a CI log of srun)
            at, collected = _collectors(line, m.end(), collected)
            pos, host, collected, rank = _stamped(line, at, host, collected, rank)
            return pos, int(m[1]), host, collected, rank
    if c in _PDSH_FIRST or c >= "\x80":
        m = _PDSH.match(line, pos)
        if m:
            return m.end(), None, m["host"], collected, rank
    return pos, None, host, collected, rank


def _inner(
    line: str,
    pos: int,
    quote: regex.Match[str] | None,
    quoted: bool,
    task: int | None,
    host: str | None,
    collected: Stamp | None,
    outer_rank: int | None = None,
) -> Prefixed:
    """The prefixes inside srun's / pdsh's, from ``pos``, and the message behind them."""
    if pos == 0 and line[:4] == "rank":
        m = _CUT_RANK.match(line)
        if m:
            outer_rank, pos = int(m[1]), m.end()
    pos, rank, worker_pid, host, node = launchers(line, pos, host)
    rank = outer_rank if rank is None else rank
    task = node if task is None else task
    local_rank: int | None = None
    c = line[pos : pos + 1]
    if c == "[" or c >= "\x80":
        pos, local_rank, rank = _torch(line, pos, rank)
        c = line[pos : pos + 1]
    level: str | None = None
    stamp: Stamp | None = None
    pid: int | None = None
    loggers = _LOGGERS.get(c) or (_ANY_LOGGER if c >= "\x80" else None)
    if loggers:
        pos, level, stamp, pid = _logger(line, pos, loggers)
        c = line[pos : pos + 1]
    if c == "[" or c >= "\x80":
        m = _LIGHTNING.match(line, pos)
        if m:
            rank = int(m[1])
            pos = m.end()
            c = line[pos : pos + 1]
    if c == " ":
        pos = _group(line, pos)
    if quote:
        pos = _unquote(line, pos, quote, quoted)
    return _prefixed(
        line[pos:], task, local_rank, rank, level, stamp or collected, pid, host, worker_pid
    )


def _torch(line: str, pos: int, rank: int | None) -> tuple[int, int | None, int | None]:
    """torchrun's ``[default3]:`` or a ``[${rank}]:`` template, c10d's ``[rank3]:``,
    Lightning's ``[rank: 3] ``: (where the rest starts, local rank, rank)."""
    local_rank: int | None = None
    m = _TEE.match(line, pos)
    if m:
        local_rank = int(m[2])
        pos = m.end()
    else:
        m = _TEMPLATE.match(line, pos)
        if m:
            rank = int(m[1])
            pos = m.end()
    c = line[pos : pos + 1]
    if c == "[" or c >= "\x80":
        m = _RANK.match(line, pos)
        if m:
            rank = int(m[1])
            pos = m.end()
            again = _RANK.match(line, pos)  # nested redirects print it twice: [rank0]:[rank0]:
            if again and again[1] == m[1]:
                pos = again.end()
            c = line[pos : pos + 1]
    if c == "[" or c >= "\x80":
        m = _LIGHTNING.match(line, pos)
        if m:
            rank = int(m[1])
            pos = m.end()
    return pos, local_rank, rank


def _logger(
    line: str, pos: int, loggers: tuple[regex.Pattern[str], ...]
) -> tuple[int, str | None, Stamp | None, int | None]:
    """The first of ``loggers`` that matches at ``pos``: (where the rest starts, level
    letter, stamp, logger pid)."""
    for rx in loggers:
        m = rx.match(line, pos)
        if m:
            level = m["lvl"][0]
            got = m.groupdict()
            ts = got.get("ts")
            stamp = (parse_iso(ts) if "-" in ts else parse_glog(level + ts)) if ts else None
            pid = got.get("pid")
            return m.end(), level, stamp, int(pid) if pid else None
    return pos, None, None, None


def _group(line: str, pos: int) -> int:
    """After an exception group's margin at ``pos`` (``pos`` itself when there is none)."""
    m = _GROUP.match(line, pos)
    return m.end() if m else pos


def _unquote(line: str, pos: int, quote: regex.Match[str], quoted: bool) -> int:
    """``pos``, or 0 when the line's leading ``> `` is Megatron's own, not a quote: outside a
    quoted paste, a quote in front of nothing but the message and no traceback line."""
    if not quoted and pos == quote.end() and not _QUOTED.match(line, pos):
        return 0
    return pos

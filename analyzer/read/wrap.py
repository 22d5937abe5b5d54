"""Hard-wrapped messages: a line cut at terminal width, its rest on the next line.

A terminal copy or ``fold -w`` breaks a long message at its width (``Watchdog caught
collective operation timeout: Wor`` then ``kNCCL(SeqNum=…``), often inside a pattern's needle.
Two ways back to one line:

- a whole file wrapped at one width (``hard_wrap_width``: no line longer, several distinct lines
  exactly that long, most continued by a line with no prefix of its own) is unwrapped block by
  block before it is searched (``unwrap_block``), keeping every offset and line number;
- elsewhere, a candidate line (one holding a needle) that no pattern matches is tried once more
  joined with the next line of the same writer (``unwrap``). Lines that match on their own
  never pay for this.
"""

from __future__ import annotations

from collections.abc import Callable

import regex

from analyzer.catalog.model import Pattern
from analyzer.lines.prefixes import NCCL_PROC, Prefixed, split_prefixes
from analyzer.util.sanitize import clean_line

Lookup = Callable[[str], "tuple[Pattern, dict[str, str]] | None"]
MIN_WRAPPED = 40
"""A line shorter than this was not cut at a terminal's width."""


def continues(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    """Whether a line written by ``b`` (its launcher prefixes: srun task, ranks, host, pid)
    can continue a line written by ``a``: the same writer, or none at all (a terminal's wrap
    repeats no prefix)."""
    return b == a or not any(x is not None for x in b)


def unwrap(
    msg: str, nxt: Prefixed, lookup: Lookup
) -> tuple[Pattern, dict[str, str]] | None:
    """The match of ``msg`` continued by the next line ``nxt`` (joined as printed, then with a
    space), or None."""
    rest = nxt.message
    if len(msg) < MIN_WRAPPED or not rest.strip():
        return None
    got = lookup(msg + rest)
    if got is None and not msg.endswith(" ") and not rest.startswith(" "):
        got = lookup(msg + " " + rest)
    return got


MIN_WIDTH = 60
"""Narrower terminals than this are not recognised as a hard wrap."""
SAMPLE_BYTES = 64 << 10
"""How much of a file's first block is looked at for a hard wrap (a wrap shows early)."""


def hard_wrap_width(head: bytes) -> int | None:
    """The width a file was hard-wrapped at (a terminal copy, ``fold -w``), read from its
    first block, or None. A wrapped file has no line longer than its width, several lines
    exactly that long, and most of them continued by a line that does not start as they do: a
    log whose longest lines are a run of equally long iteration lines does not qualify."""
    lines = head[:SAMPLE_BYTES].split(b"\n")[:-1]
    if len(lines) < 2:
        return None
    lens = list(map(len, lines))
    width = max(lens)
    if width < MIN_WIDTH or lens.count(width) < 2:  # a wrap has several lines that long
        return None
    at = [i for i, n in enumerate(lens) if n == width]
    if len({lines[i] for i in at}) < 2:  # one long line said twice is not a wrap
        return None
    cont = sum(1 for i in at if i + 1 < len(lines) and _continuation(lines[i + 1], lines[i]))
    return width if cont * 2 > len(at) else None


_SAME_START = 12
_RECORD = regex.compile(
    rb"\s*(?:Traceback \(|File \"|During handling|The above exception|Exception ignored"
    rb"|[A-Za-z_][\w.]*(?:Error|Exception|Warning|Interrupt)\b"
    rb"|(?:\[\d{4}-\d\d-\d\d [^\]\n]*\] )?" + NCCL_PROC.encode() + rb"NCCL )"
)
"""Lines that start a record of their own (a traceback's parts, an exception line, an NCCL
line with its ``host:pid:tid [dev]`` prefix: the rest of a wrapped message never begins with
another process's NCCL prefix, so a log whose longest lines are each followed by an NCCL
line, as Megatron's iteration lines on a hit-dense log, is not hard-wrapped)."""


def _continuation(line: bytes, prev: bytes) -> bool:
    """Whether ``line`` reads as the rest of ``prev`` rather than a record of its own: not
    empty, no launcher or logger prefix of its own (another rank's copy of the same message
    has one), and not starting as ``prev`` does (the next of a run of equally long iteration
    lines starts like it; the rest of a wrapped message does not)."""
    if not line.strip() or line[:_SAME_START] == prev[:_SAME_START] or _RECORD.match(line):
        return False
    text = clean_line(line[:200].decode("utf-8", "replace"))  # a colour code hides no prefix
    return split_prefixes(text).message == text


def unwrap_block(data: bytes, width: int) -> bytes:
    """``data`` with every line exactly ``width`` bytes long joined to the next line; the
    newline moves behind the joined line, so line numbers after it and every byte offset stay
    as they were (the joined line is followed by an empty one)."""
    parts = data.split(b"\n")
    out: list[bytes] = []
    pending = 0
    crs = 0
    for i, ln in enumerate(parts):
        last = i == len(parts) - 1
        if len(ln) == width and not last and _continuation(parts[i + 1], ln):
            if ln.endswith(b"\r"):  # a CRLF file: the CR goes behind the joined line
                ln, crs = ln[:-1], crs + 1
            out.append(ln)
            pending += 1
            continue
        out.append(ln)
        out.append(b"\r" * crs + b"\n" * (pending + (0 if last else 1)))
        pending = crs = 0
    return b"".join(out)

"""Hard-wrapped messages: a line cut at terminal width, its rest on the next line.

A terminal copy or ``fold -w`` breaks a long message at its width (``Watchdog caught
collective operation timeout: Wor`` then ``kNCCL(SeqNum=…``), often inside a pattern's needle.
Two ways back to one line:

- a whole file wrapped at one width (``hard_wrap_width``: no line longer, in bytes or, where
  it has multi-byte characters, in characters; several distinct lines exactly that long, most
  continued by a line with no prefix of its own, or a single one cut inside a word; a line of
  spaces continues a padded line) is unwrapped block by block before it is searched
  (``unwrap_block``), keeping every offset and line number;
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
    first block, or None. A wrapped file has no line longer than its width (counted in
    characters where a line has multi-byte ones) and lines exactly that long continued by a
    line that does not start as they do: several distinct ones, most of them continued (a log
    whose longest lines are a run of equally long iteration lines does not qualify), or one
    line (said once or repeated with the same rest) cut inside a word (``_one_cut``)."""
    head = head[:SAMPLE_BYTES]
    lines = head.split(b"\n")[:-1]
    if len(lines) < 2:
        return None
    lens = list(map(len, lines))
    width = _widest(head, lens)
    if width < MIN_WIDTH:
        return None
    at = [i for i, n in enumerate(lens) if n == width]
    if not at:
        return None
    if len({lines[i] for i in at}) < 2:  # one long line, once or repeated
        return width if _one_cut(lines, at) else None
    cont = sum(1 for i in at if i + 1 < len(lines) and _continuation(lines[i + 1], lines[i]))
    return width if cont * 2 > len(at) else None


def _widest(head: bytes, lens: list[int]) -> int:
    """The longest line's length: in bytes, or in characters where the block has multi-byte
    ones (a wrap at text columns leaves a line of ``█`` or ``▍`` longer in bytes than its
    width). Only lines that long in bytes are evidence of a cut: a box drawn in multi-byte
    characters is as wide on every line."""
    if head.isascii():
        return max(lens)
    return max(map(len, head.decode("utf-8", "replace").split("\n")[:-1]))


_WORD_END = regex.compile(rb"[A-Za-z0-9]\r?$")
_WORD_REST = regex.compile(rb"[a-z0-9](?![\w.-]*:(?:\s|$))")
"""The rest of a word cut at a line's end: it goes on in lower case or digits, and is no
``word:`` label that starts a line of its own (``srun: error``, ``stderr: ``)."""


def _one_cut(lines: list[bytes], at: list[int]) -> bool:
    """Whether the one line found exactly as long as the widest (said once, or repeated) was
    cut there: every time continued by the same rest (a line said twice and followed by two
    different lines is two records), and cut inside a word (a letter or digit on both sides
    of the cut), which a line that ends where its message does seldom is."""
    if at[-1] + 1 >= len(lines):
        return False
    piece, rest = lines[at[0]], lines[at[0] + 1]
    return (
        all(lines[i + 1] == rest for i in at)
        and _WORD_END.search(piece) is not None
        and _WORD_REST.match(rest) is not None
        and _continuation(rest, piece)
    )


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
    lines starts like it; the rest of a wrapped message does not). A line of spaces is the
    rest of a line that a terminal copy padded to its width, cut again at a narrower one."""
    if not line.strip():
        bare = line.rstrip(b"\r")
        return bare != b"" and not bare.strip(b" ")
    if line[:_SAME_START] == prev[:_SAME_START] or _RECORD.match(line):
        return False
    text = clean_line(line[:200].decode("utf-8", "replace"))  # a colour code hides no prefix
    return split_prefixes(text).message == text


def _at_width(line: bytes, width: int) -> bool:
    """Whether ``line`` was cut at ``width``: that many bytes, or that many characters (a
    line with multi-byte characters that a wrap at text columns cut)."""
    n = len(line)
    return n == width or (n > width and len(line.decode("utf-8", "replace")) == width)


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
        if _at_width(ln, width) and not last and _continuation(parts[i + 1], ln):
            if ln.endswith(b"\r"):  # a CRLF file: the CR goes behind the joined line
                ln, crs = ln[:-1], crs + 1
            out.append(ln)
            pending += 1
            continue
        out.append(ln)
        out.append(b"\r" * crs + b"\n" * (pending + (0 if last else 1)))
        pending = crs = 0
    return b"".join(out)

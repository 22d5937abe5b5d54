"""A Python traceback as the event builder follows it: its lines, its state, its fields.

A traceback (``Traceback (most recent call last):``) is followed line by line, per writer (the
launcher prefixes of its first line), and ends at its exception line, at the first line of
its writer that cannot belong to a traceback (:func:`belongs`), or ``TRACEBACK_MAX_LINES``
lines after it began. What it was doing is kept in :class:`Traceback` (which may cross block
boundaries); the builder (``builder.py``) turns it into one event.
"""

from __future__ import annotations

from collections.abc import Callable

import regex

from analyzer.catalog.model import PatternMatch
from analyzer.lines.prefixes import Prefixed
from analyzer.read.match import WINDOW_BYTES
from analyzer.read.rawevent import Line
from analyzer.read.search import Block

TRACEBACK_MAX_LINES = 400
"""A traceback still open this many lines after it began is cut there."""
TRACEBACK_START = "Traceback (most recent call last):"
STARTS = (TRACEBACK_START, "Original " + TRACEBACK_START)
"""A traceback's first line; torch's DataLoader re-raise prints the worker's own traceback as
``Original Traceback (most recent call last):`` (torch/_utils.py ``ExceptionWrapper``)."""


def opens(msg: str) -> bool:
    """A line that begins a traceback: one of ``STARTS``, or a line that *ends* with the
    header after other text, where a program printed its own preface (or a prompt without
    its newline) before Python's traceback: Monarch's actor mesh (``… processing error:
    Traceback (most recent call last):``, torchforge) and huggingface-cli's token prompt
    (``… (input will not be visible): Traceback (most recent call last):``, intel's
    extension-for-transformers). One word before it is a field or a stream's name, not a
    preface: ``traceback :`` of torchelastic's error summary and Ray's RaySystemError (read
    by their own readers), ``stderr:`` of accelerate's test runner. Text after the header
    (``ValueError: Traceback (most recent call last): was in the message``) opens nothing."""
    s = msg.strip()
    if s.startswith(STARTS):
        return True
    head, sep, tail = s.rpartition(": " + TRACEBACK_START)
    return bool(sep) and not tail and " " in head.strip()


_CHAIN = ("During handling", "The above exception")
_ELASTIC_FIELD = regex.compile(r"^ {1,2}(?:time|host|rank|exitcode|error_file|traceback) *: ")
"""A field of torchelastic's ChildFailedError table (``  exitcode  : 1 (pid: 3078336)``), at
its two-space indent, where no traceback line is (``  File "…"`` and its source below): the
launcher prints the table right below its worker's stderr, so a traceback whose end was cut
off (a paste, a worker killed mid-write) would otherwise take the table's rows as its own
(xtuner's 4-GPU run and a speculators run on NPUs, tests/wild part O, lost rows that name a
second dead rank)."""
EXC_LINE = regex.compile(r"^(?P<exc_type>[A-Za-z_][\w.]*)(?::[ ]?(?P<exc_msg>.*))?$")
FRAME = regex.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<lineno>\d+)(?:, in (?P<func>.+))?')
Writer = tuple[int | None, int | None, int | None, str | None, int | None]
NO_WRITER: Writer = (None, None, None, None, None)


def writer(p: Prefixed) -> Writer:
    """Who wrote a line, as far as its prefixes tell: (srun task, local rank, rank, host,
    pid); the last two from a pdsh or Ray actor prefix."""
    return (p.task, p.local_rank, p.rank, p.host, p.worker_pid)


class Traceback:
    """A traceback being read: the state that may cross block boundaries."""

    __slots__ = ("anchor", "body", "exc", "first_line", "frame_hit", "frames", "matches")

    def __init__(self, anchor: Line, message: str) -> None:
        self.anchor = anchor
        self.first_line = anchor[2]
        self.body: list[str] = [message.strip()]
        self.frames: list[str] = []
        self.matches: list[tuple[PatternMatch, Line]] = []
        self.exc: Line | None = None
        self.frame_hit: PatternMatch | None = None
        """The innermost frame a ``frame``-tagged pattern names."""

    def fields(self) -> dict[str, str]:
        """What the traceback itself tells: the exception line's type and message, and the
        innermost frame."""
        fields: dict[str, str] = {}
        if self.exc is not None:
            em = EXC_LINE.match(self.exc[1].message.strip())
            if em:
                fields = {k: v for k, v in em.groupdict().items() if v}
        if self.frames:
            fields["frame"] = self.frames[-1]
        return fields


def belongs(tb: Traceback, msg: str) -> tuple[regex.Match[str] | None, bool] | None:
    """(frame match, is the exception line) of a line of an open traceback's writer; None
    when the line cannot belong to the traceback."""
    stripped = msg.strip()
    fm = FRAME.match(msg)
    indented = msg[:1].isspace()
    chain = stripped.startswith(_CHAIN)
    is_exc = (
        not indented
        and not fm
        and not chain
        and not stripped.startswith(STARTS)
        and EXC_LINE.match(stripped) is not None
    )
    # A second start before any frame: two processes that share one label printing the
    # same traceback line by line (8 ranks under one srun task). Read as one traceback.
    twin = not tb.frames and not indented and stripped.startswith(STARTS)
    if stripped and not (indented or fm or chain or is_exc or twin):
        return None
    if indented and _ELASTIC_FIELD.match(msg):
        return None  # torchrun's failure table right below a traceback cut without its end
    return fm, is_exc


def frame_below(blk: Block, e: int, read: Callable[[bytes], tuple[str, Prefixed]]) -> bool:
    """Whether the next line with text after offset ``e`` is a traceback frame (the log
    then begins with the source line of a frame whose ``File`` line was cut off). Empty
    lines are passed over: an unwrapped block keeps one where each joined piece was; so is
    the marker line CPython 3.11+ prints under a frame's source line in every traceback
    (``^^^^^^``, ``~~~^^^``: torchrun's own traceback in torchtitan's part M run has them;
    NeMo-Run's rank-0 paste of part N begins right above one).
    ``read``: (text, prefixes) of a raw line (``LineMatcher.line``)."""
    data = blk.data
    while e < len(data):
        nxt = blk.line_end(e + 1)
        raw = data[e + 1 : min(nxt, e + 1 + WINDOW_BYTES)]
        if raw.strip():
            msg = read(raw)[1].message
            if not _MARKERS.fullmatch(msg):
                return FRAME.match(msg) is not None
        e = nxt
    return False


_MARKERS = regex.compile(r"\s*[\^~]+\s*")
"""Python 3.11's position markers under a frame's source line."""

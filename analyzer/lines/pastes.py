"""Whole-file signs that a log was pasted or relayed: what every line carries that is no
part of the log.

Read once per file from its first block (``read/file.py``, ``LineMatcher.read_head``), then
applied line by line by the matcher (``LineMatcher.line``): a markdown quote (``quoted_paste``:
the ``> `` is dropped by ``split_prefixes``), a markdown code block's margin or a wrapper's tag
(``pasted_prefix``: dropped from the message, inside any collector's or launcher's prefix).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

import regex

_QUOTE_LINE = re.compile(rb"\n>")
"""A line that starts with a quote (``re``'s literal search: twice as fast as ``in`` on a
log's 64 KiB head, where every newline is a first-byte hit)."""


def head_lines(data: bytes) -> list[bytes]:
    """The first 200 non-empty lines of a file's first 64 KiB: what the whole-file tests
    look at."""
    return [ln for ln in data[: 64 << 10].split(b"\n", 400) if ln.strip()][:200]


def quoted_paste(data: bytes) -> bool:
    """Whether a file's first block reads as a log pasted inside a markdown quote: of its
    first 200 non-empty lines, 80 % (and at least one) start with ``>``. Megatron's own ``> ``
    lines are a minority of any real log's lines."""
    if data[:1] != b">" and _QUOTE_LINE.search(data, 0, 64 << 10) is None:
        return False  # most files: no line starts with a quote
    lines = head_lines(data)
    quoted = sum(1 for ln in lines if ln[:1] == b">")
    return quoted >= 1 and quoted >= 0.8 * len(lines)


MIN_MARGIN = 4
"""The narrowest margin read as an indented paste (a markdown code block indents by four)."""
_TAG = r"\[[A-Za-z][A-Za-z0-9_.-]{0,30}\] "
_WRAPPER_TAG = regex.compile(_TAG)
"""A wrapper's tag in front of a line it relays (``[TRAINING] ``: a supervisor script that
runs torchrun and labels its output)."""
_LEVEL_WORDS = frozenset(
    ["INFO", "WARN", "WARNING", "ERROR", "DEBUG", "CRITICAL", "FATAL", "TRACE", "NOTICE"]
)
"""Bracketed words that are a logger's level, not a wrapper's tag."""


_TAG_BYTES = re.compile(rb"(?<!\] )" + _TAG.encode())
"""``_WRAPPER_TAG`` on bytes (ASCII only), for the cheap test of a file's raw head; a tag right
behind a logger's closing bracket (torchrun's ``[default] `` role behind glog's ``api.py:879] ``)
is the log's own text and does not count."""


def may_be_pasted(first_message: str, head: bytes, lines: int) -> bool:
    """Whether a file's head could carry a pasted prefix, the cheap test before
    ``pasted_prefix`` peels its lines: the first line's message starts with a margin (every
    message of an indented paste does), or ``[NAME] `` (``_TAG_BYTES``) occurs about as often
    as there are lines, blank ones included (one C search of the head; most logs have far
    fewer). A loose test: ``pasted_prefix`` decides."""
    if first_message.startswith(" " * MIN_MARGIN):
        return True
    return len(_TAG_BYTES.findall(head)) >= 0.5 * lines


def pasted_prefix(messages: Sequence[str]) -> str:
    """What the messages of a file's first lines (launcher and collector prefixes peeled)
    say every line carries that is no part of the log: the margin of a log pasted indented
    as a whole (a markdown code block: at least ``MIN_MARGIN`` spaces in front of every
    message), or the tag a wrapper puts in front of the lines it relays (the same ``[NAME] ``
    on 80 % of them, not a logger's level). Empty when there is none. A log's own indented
    lines (traceback frames, Megatron's `` [time] iteration …``) sit among lines that start at
    the first column, and a logger's bracketed levels differ from line to line. A file of one
    indented line is that line quoted (a document's or a thread's one-line excerpt: the Neuron
    docs' ``    [rank197]: RuntimeError: …``, part L); a wrapper's tag needs two lines."""
    msgs = [m for m in messages if m.strip()]
    if not msgs:
        return ""
    margin = min(len(m) - len(m.lstrip(" ")) for m in msgs)
    if margin >= MIN_MARGIN:
        return " " * margin
    if len(msgs) < 2:
        return ""
    tags = Counter(t[0] for m in msgs if (t := _WRAPPER_TAG.match(m)))
    if not tags:
        return ""
    tag, n = tags.most_common(1)[0]
    if n < 0.8 * len(msgs) or tag[1:-2].upper() in _LEVEL_WORDS:
        return ""
    return tag


NUMBERED = regex.compile(r"[ \t]*(?:\d+(?:\.\d+)?s\t)?(\d{1,7})(?:[ \t]|$)")
"""A line number in front of a pasted line (``cat -n``, ``nl``, an editor's or a code viewer's
numbered copy: ``508 01/06/2024 08:28:40 - INFO …``, ``   12\tTraceback …``), after the
seconds since start where Kaggle's notebook log export puts them (``704.7s\t1290\tTraceback …``:
two F5-TTS fine-tunes on Kaggle, tests/wild part P)."""


def numbered_paste(messages: Sequence[str]) -> bool:
    """Whether a file's first lines carry a numbered margin: 80 % of its non-empty messages
    (and at least four) start with a number and a space or tab, and 80 % of the numbers follow
    the one before by one. srun's label (``3: ``) has a colon; a log's own numbers do not count
    up line by line."""
    msgs = [m for m in messages if m.strip()]
    nums = [int(m_[1]) for m in msgs if (m_ := NUMBERED.match(m))]
    if len(nums) < 4 or len(nums) < 0.8 * len(msgs):
        return False
    steps = sum(1 for a, b in pairwise(nums) if b == a + 1)
    return steps >= 0.8 * (len(nums) - 1)

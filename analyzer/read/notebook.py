"""A notebook's saved output read as the log it holds.

A Jupyter notebook committed with its outputs (``.ipynb``: Kaggle and Colab runs, a
repository's example notebooks) stores each line a cell printed as a JSON string on a line of
its own, indented and quoted, with the newline escaped: ``      "torch.OutOfMemoryError: CUDA
out of memory…\\n",``. Seen in the wild corpus (part L: F5-TTS's Kaggle notebook, whose two
ranks' Triton ``OutOfResources`` tracebacks and torchrun's record are all such strings) and in
any ``.ipynb`` of the public code corpus that kept a failed cell's stream output (``"name":
"stderr"``, ``"output_type": "stream"``, ``"text": [``). The class is a container, not a
project: every message of the log is there, under one escaping.

Each such line is replaced by the string it holds, in place: the trailing newline dropped, the
escapes undone, and the bytes it saves filled by a carriage return and spaces behind the text,
so the line count and every byte offset stay as they were (``clean_line`` keeps the text before
a final blank ``\\r`` frame, as a terminal would show it). The notebook's own structure lines
(``{``, ``"output_type": "stream",``) are left as they are: they hold no needle.
"""

from __future__ import annotations

import json
import re

_STRING_LINE = re.compile(rb'(?m)^[ \t]*"((?:[^"\\\n]|\\.)*)",?[ \t]*\r?$')
"""A line that is one JSON string (a list item: its comma optional), and the string's body."""
_KEY_LINE = re.compile(rb'(?m)^[ \t]*"(?:output_type|text|name|cell_type|outputs|source)": ')
"""A notebook's own keys, one of which its head must show."""
HEAD = 64 << 10
"""How much of a file's first block decides whether it is a notebook's output."""
MIN_LINES = 5
SHARE = 0.5
"""At least this many of the head's non-empty lines, and this share of them, are JSON strings
(a notebook's structure lines are the rest)."""


def is_notebook(data: bytes) -> bool:
    """Whether a file's first block reads as a notebook's saved output: one of the notebook's
    keys, and most lines JSON strings ending in an escaped newline. A log's own quoted lines
    (a JSON-lines log's objects, a YAML list of strings) carry no such key."""
    if data.find(b"\\", 0, HEAD) < 0:  # no escape at all (memchr: 10x the search below)
        return False
    head = data[:HEAD]
    if b'\\n"' not in head or _KEY_LINE.search(head) is None:
        return False
    lines = [ln for ln in head.split(b"\n") if ln.strip()]
    strings = len(_STRING_LINE.findall(head))
    return strings >= MIN_LINES and strings >= SHARE * len(lines)


def _plain(m: re.Match[bytes]) -> bytes:
    line = m[0]
    try:
        text = json.loads(b'"' + m[1] + b'"')
    except ValueError:
        return line
    if text.endswith("\n"):
        text = text[:-1]
    out = text.replace("\n", " ").encode("utf-8", "surrogatepass")
    pad = len(line) - len(out)
    if line.endswith(b"\r"):  # a CRLF file keeps its CR last, where the searcher expects it
        pad -= 1
        return out + b"\r" + b" " * (pad - 1) + b"\r" if pad >= 1 else line
    return out + b"\r" + b" " * (pad - 1) if pad >= 1 else line


def plain_block(data: bytes) -> bytes:
    """``data`` (whole lines of a notebook) with every JSON string line replaced by its text,
    each line at its own offset (see the module's docstring)."""
    return _STRING_LINE.sub(_plain, data)

"""Defensive cleaning of log-derived strings before any report shows them.

The reader already removes ANSI sequences and C0 controls from every line; this is the second
line of defence at the output edge: whatever reaches a report has no escape sequence, no C0/C1
control character and no bidirectional override that could make a terminal, a mail client or a
browser show something other than what the log said.
"""

from __future__ import annotations

import html

import regex

from analyzer.util.sanitize import _ANSI

# C0 except \n and \t, DEL, C1; Unicode bidi embeddings/overrides/isolates (Trojan Source).
_BAD = regex.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def clean(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` as a string with escape sequences and control characters removed.

    Tabs become four spaces; newlines are kept only with ``keep_newlines`` (otherwise a
    space), so one log line stays one line in every report.
    """
    s = "" if text is None else str(text)
    if "\x1b" in s or "\x9b" in s:
        s = _ANSI.sub("", s)
    s = s.replace("\t", "    ").replace("\r\n", "\n").replace("\r", "\n")
    if not keep_newlines:
        s = s.replace("\n", " ")
    return _BAD.sub("", s)


def html_text(text: object) -> str:
    """Untrusted text for HTML text or a quoted attribute (``None`` is empty); the caller
    cleans control characters first (the report model does)."""
    return html.escape(str(text if text is not None else ""), quote=True)


def has_escape(text: str) -> bool:
    """True when ``text`` holds an ESC or CSI byte (a report must not, unless it colours)."""
    return "\x1b" in text or "\x9b" in text


def shorten(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters with a marker saying how much was left out."""
    if limit <= 0 or len(text) <= limit:
        return text
    return text[:limit] + f" …[{len(text) - limit} more chars]"


_CODE_SPAN = regex.compile(r"`([^`\n]+)`")


def code_spans(text: str) -> list[tuple[bool, str]]:
    """``text`` split into (is_code, part): the catalog's causes and fixes mark commands and
    identifiers with single backticks; a report shows them as code, not as literal backticks.
    An unpaired backtick stays text."""
    parts: list[tuple[bool, str]] = []
    pos = 0
    for m in _CODE_SPAN.finditer(text):
        if m.start() > pos:
            parts.append((False, text[pos : m.start()]))
        parts.append((True, m[1]))
        pos = m.end()
    if pos < len(text):
        parts.append((False, text[pos:]))
    return parts

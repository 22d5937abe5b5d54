"""Make raw log bytes safe to look at: decode, drop terminal control sequences, keep the last
frame of ``\\r`` progress bars."""

from __future__ import annotations

import regex

# CSI (ESC [ ... final), OSC (ESC ] ... BEL/ST), two-byte escapes and other C0/C1 controls.
_ANSI = regex.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]"
)
_CONTROL = regex.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LABEL = regex.compile(
    r"(?:P\d+ )?\ *\d{1,6}: (?:\[[A-Za-z_-]*\d{1,6}\]:)?|\[[A-Za-z_-]*\d{1,6}\]:"
)
"""The launcher labels in front of a line: srun ``--label``, torchrun ``--tee``/template."""
MAX_LINE_CHARS = 8192
"""Longer lines are cut (with a marker) before matching and reporting."""


def decode(raw: bytes) -> str:
    """Decode one line of log bytes; invalid UTF-8 becomes U+FFFD, never an exception."""
    return raw.decode("utf-8", errors="replace")


def clean_line(text: str) -> str:
    """Strip ANSI sequences and control characters, keep the text after the last ``\\r``."""
    if text.isprintable() and len(text) <= MAX_LINE_CHARS:
        # Nothing to do: ESC, CSI, CR, LF and every C0/C1 control are unprintable (category
        # Cc), so no branch below would change the text. Most lines take this path.
        return text
    if text[:1] == "\ufeff":
        text = text[1:]  # a byte-order mark at the start of a file (saved by a Windows editor)
    if "\x1b" in text or "\x9b" in text:
        text = _ANSI.sub("", text)
    text = text.rstrip("\r\n")
    if "\r" in text:
        # A progress bar rewrites the line: what a terminal would show is the last frame. srun
        # --label (and torchrun --tee) label only what follows a newline, so a label on the
        # first frame belongs to the last one too.
        parts = [p for p in text.split("\r") if p.strip()]
        text = parts[-1] if parts else ""
        if len(parts) > 1:
            m = _LABEL.match(parts[0])
            if m and not _LABEL.match(text):
                text = m[0] + text
    if _CONTROL.search(text):
        text = _CONTROL.sub("", text.replace("\t", "    "))
    if len(text) > MAX_LINE_CHARS:
        text = text[:MAX_LINE_CHARS] + f" …[{len(text) - MAX_LINE_CHARS} more chars]"
    return text

"""Tell a text log from a binary file by its first KiBs (what discovery reads of each file)."""

from __future__ import annotations

import codecs

import regex

__all__ = ["GZIP_MAGIC", "SNIFF_BYTES", "UTF16_BOMS", "sniff_binary"]

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"PK\x03\x04", "zip archive (e.g. a torch.save checkpoint)"),
    (b"\x7fELF", "executable"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed file"),
    (b"BZh", "bzip2-compressed file"),
    (b"\xfd7zXZ", "xz-compressed file"),
    (b"\x93NUMPY", "numpy array"),
    (b"SQLite format 3", "SQLite database"),
    (b"%PDF", "PDF document"),
)
_MAGIC_PREFIXES = (*(m for m, _ in _MAGIC), b"\x80")
"""Every head :func:`sniff_binary` names by its first bytes (one ``startswith`` of them all)."""
GZIP_MAGIC = b"\x1f\x8b"
UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
"""A log that starts with one of these is UTF-16 text (PowerShell's ``>`` redirection), not
binary for all its NUL bytes."""
SNIFF_BYTES = 4096
"""How much of a file's head is read to tell text from binary."""
_NUL_RUN = regex.compile(rb"\x00{32,}")
_CONTROL_BYTES = bytes(b for b in range(32) if b < 9 or 13 < b < 27 or b > 27)
_NOT_CONTROL = bytes(b for b in range(256) if b not in _CONTROL_BYTES)


def sniff_binary(head: bytes) -> str | None:
    """Why ``head`` (the first KiBs of a file) is not a text log, or None if it looks like one.

    Known magic numbers first; then, as ripgrep and ``file(1)`` do, the share of bytes a text
    log never holds: NUL, C0 controls other than tab, newlines, form feed and ESC, and bytes
    that are not valid UTF-8. Long NUL runs (a crashed node's zero-filled tail) and a UTF-8
    character cut at the end of the sample are not counted.
    """
    # Most logs: ASCII without a control byte or a magic number, text at once.
    if (
        head.isascii()
        and not head.startswith(_MAGIC_PREFIXES)
        and not head.translate(None, _NOT_CONTROL)
    ):
        return None
    return _sniff(head)


def _sniff(head: bytes) -> str | None:
    """:func:`sniff_binary` for a head that is not plain ASCII text."""
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return what
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "Python pickle (e.g. a flight-recorder dump or checkpoint)"
    # A node that dies mid-write can leave a block of NUL bytes in a log (the filesystem
    # zero-fills what was allocated but never written): long NUL runs say nothing.
    if b"\x00" in head:
        head = _NUL_RUN.sub(b"", head)
    if not head:
        return None
    nul = head.count(b"\x00")
    ctrl = len(head.translate(None, _NOT_CONTROL)) - nul  # C0 controls but \t\n\v\f\r, ESC
    invalid = 0 if head.isascii() else _invalid_utf8(head)  # ASCII is valid UTF-8
    n = len(head)
    if nul > n // 8 or ctrl > n * 3 // 10:
        return "binary content"
    bad = nul + ctrl + invalid
    # Text in a legacy 8-bit encoding (Latin-1) is invalid UTF-8 but has no control bytes;
    # random or compressed bytes have both (about 8 % controls, 50 % invalid UTF-8).
    if n >= 64 and (
        ((nul + ctrl) * 100 > n * 2 and bad * 100 > n * _BAD_PERCENT) or invalid * 100 > n * 30
    ):
        return (
            f"binary content ({bad * 100 // n}% of the first {_kib(n)} is NUL, control bytes "
            "or invalid UTF-8)"
        )
    return None


_BAD_PERCENT = 10
"""A sample with more than this share of non-text bytes is binary (random bytes: ~50 %;
a Latin-1 log or one with a few corrupted lines: a few %)."""
_SURROGATE = regex.compile("[\udc80-\udcff]")


def _invalid_utf8(head: bytes) -> int:
    """Bytes of ``head`` that are not valid UTF-8 (a character cut at the end is forgiven)."""
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    return len(_SURROGATE.findall(decoder.decode(head, final=False)))


def _kib(n: int) -> str:
    return f"{n // 1024} KiB" if n >= 1024 else f"{n} bytes"

"""Failure fingerprints: the same failure gets the same id across jobs and nights.

Like Sentry's grouping, a fingerprint hashes what identifies a failure and masks what varies
from one occurrence to the next. Version 2 hashes structured keys, never report wording:

* the category and the pattern id of the verdict,
* the exception type, when the failure is an exception, and
* the innermost frame's function and file name when the traceback shows one; otherwise the
  template of the log line that caused the verdict (its message, not the rendered cause
  sentence): timestamps, UUIDs, URLs, paths, IP addresses and ports, hexadecimal ids, the job's
  own host names, other host names, and every number (ranks, pids, sizes, iterations, line
  numbers) replaced by placeholders; whitespace collapsed.

Editing a cause sentence in the catalog, or a restart's "(attempt 0 of 2 …)" suffix, therefore
never changes a fingerprint. The fingerprint reads ``v2-<12 hex digits>``. Any change to what
is hashed or how it is normalised must bump :data:`FINGERPRINT_VERSION`, so that a baseline
computed with another scheme is recognised as incomparable instead of reporting every failure
as new.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import regex

FINGERPRINT_VERSION = 2
_FRAME = regex.compile(r'File "(?:[^"]*/)?(?P<file>[^"/]+)", line \d+, in (?P<func>\S+)')

_SUBS: tuple[tuple[regex.Pattern[str], str], ...] = tuple(
    (regex.compile(p, regex.I), r)
    for p, r in (
        # 2024-05-01T10:00:00.123+02:00, 2024-05-01 10:00:00, 2024-05-01_10:00:05, 2024/05/01
        (
            r"\d{4}[-/]\d{2}[-/]\d{2}(?:[T _]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?"
            r"(?:Z|[+-]\d{2}:?\d{2})?)?",
            "<ts>",
        ),
        # glog E0101 12:00:01.000000, bare 12:00:01(.123)
        (r"\b[IWEF]\d{4} \d{1,2}:\d{2}:\d{2}(?:\.\d+)?", "<ts>"),
        (r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b", "<ts>"),
        # Mon Jul 17 07:39:47 2024
        (
            r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
            r" +\d{1,2} <ts> \d{4}\b",
            "<ts>",
        ),
        (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<uuid>"),
        (r"\b[a-z][a-z0-9+.-]*://\S+", "<url>"),
        # absolute and relative paths: /a/b, ~/a, ./a, ../a/b.cpp, a/b/c.py (2+ components)
        (r"(?<![\w<>])(?:~|\.{1,2})?(?:/[\w.@+%=,-]+)+/?", "<path>"),
        (r"(?<![\w<>/])[\w.@+-]+(?:/[\w.@+-]+)+", "<path>"),
        # IPv4 (with port), IPv6-ish, [ip]:port
        (r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", "<addr>"),
        (r"\[?(?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4}\]?(?::\d+)?(?![\w:])", "<addr>"),
        (r"\b0x[0-9a-f]+\b", "<hex>"),
        (r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b", "<hex>"),
        # fully qualified host names: node017.cluster.internal
        (r"\b[a-z][\w-]*(?:\.[a-z][\w-]*){2,}\b", "<host>"),
    )
)
_NUM = regex.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?", regex.I)
_SPACE = regex.compile(r"\s+")
_MAX = 600


def normalize(text: str, hosts: Iterable[str] = ()) -> str:
    """``text`` with the details that vary between occurrences masked."""
    s = text or ""
    for h in sorted(
        {h for h in hosts if h and not h.isdigit() and len(h) > 1}, key=len, reverse=True
    ):
        s = regex.sub(rf"(?<![\w-]){regex.escape(h)}(?:\.[\w-]+)*(?![\w-])", "<host>", s)
    for pat, rep in _SUBS:
        s = pat.sub(rep, s)
    s = _NUM.sub("<n>", s)
    s = _SPACE.sub(" ", s).strip()
    return s[:_MAX]


def frame_key(frame: str | None) -> str | None:
    """``train.py:get_batch`` from a traceback frame line (None when it is not one)."""
    m = _FRAME.search(frame or "")
    return f"{m['file']}:{m['func']}" if m else None


def fingerprint(
    category: str | None,
    pattern_id: str | None,
    message: str | None,
    hosts: Iterable[str] = (),
    version: int = FINGERPRINT_VERSION,
    *,
    exc_type: str | None = None,
    frame: str | None = None,
) -> str:
    """The fingerprint of a failure, ``v<version>-<12 hex>``.

    ``message`` is the log line (or exception message) that caused the verdict; with a
    traceback ``frame`` the frame's function stands for it, so the message's wording and
    values never split one failure into several.
    """
    if version != FINGERPRINT_VERSION:
        raise ValueError(f"fingerprint scheme v{version} is not implemented")
    where = frame_key(frame)
    detail = where if where else normalize(message or "", hosts)
    key = "\x1f".join((f"v{version}", category or "", pattern_id or "", exc_type or "", detail))
    return f"v{version}-" + hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def version_of(fp: str | None) -> int | None:
    """The scheme version a fingerprint was made with (None when it is not one)."""
    if not fp or not fp.startswith("v") or "-" not in fp:
        return None
    head = fp[1:].split("-", 1)[0]
    return int(head) if head.isdecimal() else None

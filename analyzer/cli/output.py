"""Writing a report or a table: to a file or standard output, in slices when large."""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from analyzer.cli.app import fail
from analyzer.decide.verdict import (
    EXIT_USAGE,
)

EXIT_CANNOT_WRITE = EXIT_USAGE
"""An output that cannot be written (``-o /dev/full``, standard output on a full disk)."""

WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
"""What a write to a file or standard output fails with when the disk cannot take it."""


def write_failure(exc: OSError) -> str | None:
    """Why a write failed, when ``exc`` says the disk cannot take it (``No space left on
    device``, also from polars, whose errors carry the number only in the text); else None."""
    code = exc.errno
    if code is None:
        found = re.search(r"\(os error (\d+)\)", str(exc))
        code = int(found.group(1)) if found else None
    if code not in WRITE_ERRNOS:
        return None
    return exc.strerror or os.strerror(code)


def _write(text: str | bytes, output: Path | None) -> None:
    if output is None:
        _stream(lambda fh: fh.write(text if isinstance(text, bytes) else text.encode()), None)
        return
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    _stream(lambda fh: fh.write(data), output)


def _stream(write: Callable[[BinaryIO], object], output: Path | None) -> None:
    """``write(sink)`` straight into ``output`` (standard output without it): a table of a
    hundred thousand events is never one string in memory (the many-files benchmark job's
    events as JSON are 130 MB)."""
    if output is None:
        sys.stdout.flush()
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    try:
        with output.open("wb") as fh:
            write(fh)
    except OSError as exc:
        why = write_failure(exc) or exc.strerror or exc
        fail(f"cannot write {output}: {why}", EXIT_CANNOT_WRITE)


JSON_SLICE_ROWS = 8192
"""Rows written at a time by :func:`_json_rows`."""


def _json_rows(df: Any, sink: BinaryIO) -> None:
    """``df.write_json()`` and a newline into ``sink``, a slice of rows at a time: polars makes
    the whole text in memory before it writes (130 MB for the many-files job's events)."""
    sink.write(b"[")
    for i in range(0, len(df), JSON_SLICE_ROWS):
        part = df.slice(i, JSON_SLICE_ROWS).write_json().encode("utf-8")
        sink.write((b"," if i else b"") + part[1:-1])  # the rows, without the array's brackets
    sink.write(b"]\n")

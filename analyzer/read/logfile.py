"""A file to read, with what its path says about it (``discover`` makes them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LogFile:
    """A file to read, with what its path says about it."""

    path: Path
    rel: str
    """Path relative to the job directory (what reports show)."""
    size: int
    compressed: bool = False
    encoding: str | None = None
    """``utf-16`` for a file that starts with a UTF-16 byte-order mark (PowerShell's ``>``
    writes UTF-16LE): it is read as UTF-8 text, so offsets count the converted bytes."""
    stream: str | None = None
    """``stdout``/``stderr`` when the name says so, else None (combined)."""
    attempt: int | None = None
    local_rank: int | None = None
    task: int | None = None
    node_hint: str | None = None
    is_error_json: bool = False
    rank: int | None = None
    """The global rank a per-rank file's name gives (``filerank``), else None."""

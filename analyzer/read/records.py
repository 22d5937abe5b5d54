"""What the reader hands on: one raw event per matched line (or assembled traceback), and
what one file yielded; their fields are the reader's interface."""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from analyzer.lines.timestamps import Stamp
from analyzer.read.discover import LogFile


@dataclass(slots=True)
class RawEvent:
    """One matched line (or assembled traceback), before job-level attribution.

    Its instances take the allocator's size class of an :class:`analyzer.model.event.Event` (a
    test checks it): ``shape.events.build_events`` frees each raw event as its record is made, so
    the record reuses the raw event's memory. Adding or removing a field here or there may
    break that; the test says.
    """

    file: str
    line: int
    offset: int
    text: str
    message_at: int | str
    """Where the message (the line less its prefixes: :attr:`message`) starts in ``text``; the
    message itself where it is not the end of ``text`` (see :func:`message_ref`), so that a
    message is not a second string beside its line."""
    pattern_id: str
    category: str
    role: str
    title: str
    fields: dict[str, str]
    task: int | None
    local_rank: int | None
    rank: int | None
    level: str | None
    stamp: Stamp | None
    stamp_inherited: bool
    stream: str | None
    attempt: int | None
    nccl_host: str | None = None
    nccl_pid: int | None = None
    nccl_dev: int | None = None
    """Host, pid and device of NCCL's ``host:pid:tid [dev]`` prefix (``commranks.nccl_writer``)."""
    prefix_host: str | None = None
    """The host a pdsh ``host: `` prefix or a Ray actor prefix's ``ip=`` names."""
    prefix_pid: int | None = None
    """The process a Ray actor prefix ``(Actor pid=N ...)`` names."""
    traceback: str | None = None
    cause: str = ""
    fix: str = ""
    repeats: int = 1
    """How many matched lines this event stands for: itself, plus the repeats of the same
    pattern by the same writer that the reader folded into it (see ``fold.py``). The sum over
    a file's events is the exact number of matched lines."""

    @property
    def message(self) -> str:
        """The line less its prefixes (``lines.prefixes.split_prefixes``)."""
        at = self.message_at
        return self.text[at:] if isinstance(at, int) else at


def message_ref(text: str, message: str) -> int | str:
    """What :attr:`RawEvent.message_at` holds for a line ``text`` whose message is
    ``message``: where it starts in ``text`` when it ends ``text`` (0 when it is ``text``),
    else ``message`` itself."""
    if message is text:
        return 0
    at = len(text) - len(message)
    return at if at >= 0 and text.endswith(message) else message


@dataclass
class FileScan:
    """What one file yielded."""

    file: LogFile
    events: list[RawEvent] = field(default_factory=list)
    bytes_read: int = 0
    years: AbstractSet[int] = field(default_factory=set)
    problem: str | None = None
    error_json: dict[str, Any] | None = None
    disabled: dict[str, str] = field(default_factory=dict)
    """User patterns disabled while this file was read (a regex timeout): id -> reason. Set
    in worker processes too, so that the parent can report them."""

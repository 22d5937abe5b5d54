"""One row of the event table as a typed, immutable record.

The reader hands on ``RawEvent`` (what one line said); attribution adds where and when
(``Attribution``); ``shape.events.build_events`` joins the two into an :class:`Event`, which every
later stage reads: the facts, the reasoning, the fixes, the reports and triage. The polars
table (``shape.events.to_frame``) is built from these records at the edge.

Structural attributes are typed fields. What the pattern captured stays apart in
``captures`` (strings, as matched; the catalog declares their types for the table), so a
capture can never shadow a structural value. A stage that needs a changed event makes a new
one (``dataclasses.replace``): an event, once built, is never changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Any


class Role(StrEnum):
    """What an event's line is to the failure (``Event.role``; the catalog's ``ROLES``):
    ``root`` a cause, ``symptom`` a consequence, ``context`` background, ``candidate`` a line
    no pattern knows, kept for the unknown-failure inference."""

    ROOT = "root"
    SYMPTOM = "symptom"
    CONTEXT = "context"
    CANDIDATE = "candidate"


ROOT, SYMPTOM, CONTEXT, CANDIDATE = Role.ROOT, Role.SYMPTOM, Role.CONTEXT, Role.CANDIDATE
"""The roles as module names, for code that runs per event: a module global is found about
five times faster than ``Role.ROOT`` (Python 3.11's ``EnumType.__getattr__`` slows every
member lookup)."""


EMPTY: Mapping[str, str] = MappingProxyType({})
"""The shared empty mapping of events without captures or roles."""

COLUMN_TYPES: dict[str, str] = {
    "file": "str",
    "line": "int",
    "offset": "int",
    "node": "str",
    "node_index": "int",
    "host": "str",
    "rank": "int",
    "local_rank": "int",
    "attempt": "int",
    "time": "datetime",
    "time_inherited": "bool",
    "stream": "str",
    "pattern_id": "str",
    "category": "str",
    "role": "str",
    "title": "str",
    "level": "str",
    "text": "str",
    "message": "str",
    "traceback": "str",
    "repeats": "int",
}
"""The table's structural columns and their types, in order (``Event`` attributes of the
same names); a capture may not take one of these names (the catalog refuses it)."""
STRUCTURAL: tuple[str, ...] = tuple(COLUMN_TYPES)


@dataclass(frozen=True, slots=True)
class Event:
    """A matched line (or assembled traceback) with its node, rank and time.

    ``captures``: the pattern's named groups (or, for rows the tool makes itself, such as
    the Flight Recorder's, their own fields). ``roles``: the captured values whose capture
    declares a role (``rank``, ``exit_code``, ``world_size`` …), keyed by role, read through
    the pattern's ``role_names`` (no table per event). ``tags``: the
    pattern's tags. ``cause``/``fix``: the pattern's templates (``fix_exact``: a reasoning
    rule wrote a fix already specific to the job, not to be tailored). ``rank_assumed``: the
    rank rests only on the single-node assumption (local rank N read as global rank N).
    """

    file: str
    line: int
    pattern_id: str
    category: str
    role: str
    text: str
    offset: int | None = None
    node: str | None = None
    node_index: int | None = None
    host: str | None = None
    rank: int | None = None
    local_rank: int | None = None
    attempt: int | None = None
    time: datetime | None = None
    time_inherited: bool = False
    stream: str | None = None
    title: str = ""
    level: str | None = None
    message: str = ""
    traceback: str | None = None
    repeats: int = 1
    captures: Mapping[str, str | None] = field(default_factory=lambda: EMPTY)
    role_names: Mapping[str, str] = field(default_factory=lambda: EMPTY)
    """Role -> the name of the capture that declares it (shared by a pattern's events)."""
    tags: frozenset[str] = frozenset()
    cause: str = ""
    fix: str = ""
    fix_exact: bool = False
    rank_assumed: bool = False

    def cap(self, name: str) -> str | None:
        """The captured value ``name`` (None when the pattern has no such capture or it did
        not participate)."""
        return self.captures.get(name)

    def role_of(self, role: str) -> str | None:
        """The captured value with this role, or None."""
        name = self.role_names.get(role)
        return (self.captures.get(name) if name else None) or None

    @property
    def roles(self) -> dict[str, str]:
        """Every captured value that has a role, keyed by role."""
        return {r: v for r, name in self.role_names.items() if (v := self.captures.get(name))}

    def tagged(self, tag: str) -> bool:
        """Whether the event's pattern carries ``tag``."""
        return tag in self.tags

    def structural(self) -> dict[str, Any]:
        """The structural columns as a dict (for the table and the JSON)."""
        return {k: getattr(self, k) for k in STRUCTURAL}

    def values(self) -> dict[str, Any]:
        """Structural values and captures together, for rendering a pattern's cause and fix
        templates (captures never shadow a structural name: the catalog forbids it)."""
        out: dict[str, Any] = {k: v for k, v in self.captures.items() if v is not None}
        for k in STRUCTURAL:
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        return out


def from_flat(row: Mapping[str, Any]) -> Event:
    """An event from one flat mapping, as a row of the table reads: structural names become
    attributes, every other key a capture. Missing structural values take neutral defaults
    (file ``""``, line 0, pattern ``""``, category ``unknown``, role ``root``, text ``""``)."""
    base: dict[str, Any] = {
        "file": "",
        "line": 0,
        "pattern_id": "",
        "category": "unknown",
        "role": Role.ROOT,
        "text": "",
    }
    captures: dict[str, str | None] = {}
    for k, v in row.items():
        if k in STRUCTURAL:
            if v is not None or k not in ("title", "message", "repeats", "time_inherited"):
                base[k] = v
        else:
            captures[k] = None if v is None else str(v)
    return Event(**base, captures=captures or EMPTY)


_PUT = tuple(getattr(Event, f.name).__set__ for f in fields(Event))
"""Each field's slot setter, in field order (``new_event``)."""


def new_event(*values: Any) -> Event:
    """``Event(*values)``, every field given in order, without the frozen ``__init__``'s
    ``object.__setattr__`` call per field: the records of a large job are made at about half
    the cost (``shape.events.build_events``)."""
    if len(values) != len(_PUT):
        raise TypeError(f"new_event takes {len(_PUT)} values, got {len(values)}")
    ev = object.__new__(Event)
    for put, v in zip(_PUT, values, strict=True):
        put(ev, v)
    return ev

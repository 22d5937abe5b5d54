"""The one ISO 8601 form of every timestamp the tool writes (JSON, events, triage tables).

``2026-12-02T17:21:57.149000``: date, ``T``, time with six fraction digits always (so that
strings sort as times and every consumer parses one shape), and the UTC offset (``+02:00``)
only when the log gave one. Logs rarely give one; then the time is the cluster's local time.
"""

from __future__ import annotations

from datetime import datetime

POLARS_FORMAT = "%Y-%m-%dT%H:%M:%S%.6f"
"""The same form for ``polars`` ``dt.to_string`` (naive columns)."""
PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}([+-]\d{2}:\d{2})?$"
"""A regular expression every written timestamp matches (used by the JSON schemas)."""


def iso(t: datetime | None) -> str | None:
    """``t`` in the tool's ISO 8601 form, or None."""
    if t is None:
        return None
    return t.isoformat(timespec="microseconds")

"""One finding: one JSON object on one line (docs/schema/watch.schema.json)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from analyzer.watch.writers import Writer, Writers

SCHEMA_VERSION = 1
KINDS = ("failure", "stall", "straggler", "end")
MAX_LAST_LINES = 64
"""Writers' last lines kept in one finding (the culprits first)."""


def iso(t: float | None) -> str | None:
    """``t`` (seconds since the epoch) as ISO-8601 in UTC."""
    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def last_lines(ws: Writers, writers: list[Writer]) -> dict[str, dict[str, Any]]:
    """Each writer's newest line, keyed by its rank (or its file and task)."""
    return {
        ws.name(w): {"time": iso(w.last.seen), "text": w.last.text, "file": w.last.file,
                  "line": w.last.line}
        for w in writers[:MAX_LAST_LINES]
    }


def finding(kind: str, job: str, now: float, cause: str, **more: Any) -> dict[str, Any]:
    """A finding with every key of the schema (those not given are null or empty)."""
    obj: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": kind,
        "time": iso(now),
        "job": job,
        "rank": None,
        "ranks": [],
        "node": None,
        "category": None,
        "cause": cause,
        "fix": None,
        "last_lines": {},
        "silent_for_s": None,
        "threshold_s": None,
        "verdict": None,
        "diagnosis": None,
        "ncclras": None,
    }
    unknown = set(more) - set(obj)
    if unknown:
        raise TypeError(f"not a finding's key: {', '.join(sorted(unknown))}")
    obj.update(more)
    return obj

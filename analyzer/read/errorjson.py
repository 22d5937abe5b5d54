"""torchelastic's ``error.json`` (written by ``@record``): the most reliable per-rank record."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from analyzer.catalog.model import SPECIFIC, Catalog, tier
from analyzer.lines.prefixes import split_prefixes
from analyzer.lines.timestamps import Stamp
from analyzer.model.event import Role
from analyzer.read.discover import LogFile
from analyzer.read.records import RawEvent
from analyzer.read.tracebacks import EXC_LINE


def error_json_event(lf: LogFile, data: dict[str, Any], catalog: Catalog) -> RawEvent | None:
    """One event from an error.json, or None when it holds no message."""
    message, extra = _message(data)
    if not message:
        return None
    first = message.strip().splitlines()[-1] if message.strip() else message
    stamp = _stamp(extra.get("timestamp"))
    pm = catalog.match(split_prefixes(first).message)
    m = EXC_LINE.match(first.strip())
    fields = {k: v for k, v in (m.groupdict() if m else {}).items() if v}
    tb = extra.get("py_callstack")
    # a specific pattern names the failure; a catch-all or a candidate says less than
    # error.json itself does
    if pm is not None and tier(pm.pattern) == SPECIFIC and pm.pattern.role != Role.CONTEXT:
        p = pm.pattern
        pid, cat, role, title, cause, fix = p.id, p.category, p.role, p.title, p.cause, p.fix
        fields.update(pm.fields)
    else:
        pid, cat, role = "torchelastic.error_json", "python_exception", Role.ROOT.value
        title = f"Uncaught {fields.get('exc_type', 'exception')} (error.json)"
        cause = "An uncaught {exc_type} was raised: {exc_msg}."
        fix = "Fix the code or input that raised {exc_type}; the traceback shows where."
    return RawEvent(
        file=lf.rel,
        line=1,
        offset=0,
        text=first[:2000],
        message_at=0,
        pattern_id=pid,
        category=cat,
        role=role,
        title=title,
        fields=fields,
        task=lf.task,
        local_rank=lf.local_rank,
        rank=None,
        level="E",
        stamp=stamp,
        stamp_inherited=False,
        stream=None,
        attempt=lf.attempt,
        traceback=str(tb) if tb else None,
        cause=cause,
        fix=fix,
    )


def _message(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(the message, its ``extraInfo``: empty unless a dict) of an error.json."""
    msg_obj = data.get("message")
    if not isinstance(msg_obj, dict):
        return str(msg_obj or ""), {}
    extra = msg_obj.get("extraInfo") or {}
    return str(msg_obj.get("message", "")), extra if isinstance(extra, dict) else {}


def _stamp(ts: object) -> Stamp | None:
    """The time of an ``extraInfo.timestamp`` (seconds since the epoch), None when it is none."""
    try:
        t = datetime.fromtimestamp(int(str(ts)))
    except (TypeError, ValueError, OverflowError, OSError):
        return None
    return Stamp(t.year, t.month, t.day, t.hour, t.minute, t.second)

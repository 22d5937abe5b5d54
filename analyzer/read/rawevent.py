"""A raw event made of a catalog match and the line it was read on (the event builder's last
step, ``builder.py``)."""

from __future__ import annotations

from analyzer.catalog.model import PatternMatch
from analyzer.lines.prefixes import Prefixed
from analyzer.lines.timestamps import Stamp
from analyzer.read.commranks import nccl_writer
from analyzer.read.discover import LogFile
from analyzer.read.records import RawEvent, message_ref

Line = tuple[str, Prefixed, int, int, Stamp | None, bool]
"""(text, prefixes, line number, file offset, stamp, inherited) of a line already read."""


def raw_event(lf: LogFile, pm: PatternMatch, line: Line) -> RawEvent:
    """The event of ``pm`` on ``line`` of the file ``lf``: the pattern's words, the line's
    prefixes (the file's own task and local rank where the line names none) and NCCL's
    writer."""
    text, pre, line_no, offset, stamp, inherited = line
    nccl = nccl_writer(pre.message)
    p = pm.pattern
    return RawEvent(
        file=lf.rel,
        line=line_no,
        offset=offset,
        text=text,
        message_at=message_ref(text, pre.message),
        pattern_id=p.id,
        category=p.category,
        role=p.role,
        title=p.title,
        fields=pm.fields,
        task=pre.task if pre.task is not None else lf.task,
        local_rank=pre.local_rank if pre.local_rank is not None else lf.local_rank,
        rank=pre.rank,
        level=pre.level,
        stamp=stamp,
        stamp_inherited=inherited,
        stream=lf.stream,
        attempt=lf.attempt,
        nccl_host=nccl[0] if nccl else None,
        nccl_pid=nccl[1] if nccl else None,
        nccl_dev=nccl[2] if nccl else None,
        prefix_host=pre.host,
        prefix_pid=pre.worker_pid,
        cause=p.cause,
        fix=p.fix,
    )

"""torchrun's ChildFailedError blocks, reassembled from their tagged field lines."""

from __future__ import annotations

from dataclasses import dataclass, field

from analyzer.read.file import FileScan, RawEvent
from analyzer.shape.roles import Roles


@dataclass
class ChildFailure:
    """One failure listed in a torchrun ChildFailedError block."""

    file: str
    line: int
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    exitcode: int | None = None
    pid: int | None = None
    time: str | None = None
    is_root: bool = False
    task: int | None = None
    events: list[RawEvent] = field(default_factory=list)
    """The block's field lines while the job is attributed (``attribute`` empties it once
    every event is placed, so that a large job's raw events can go as their records come)."""


def child_failures(scans: list[FileScan], roles: Roles) -> list[ChildFailure]:
    """Reassemble torchrun's ChildFailedError blocks from their tagged field lines."""
    out: list[ChildFailure] = []
    for sc in scans:
        cur: ChildFailure | None = None
        root_next = False
        for ev in sc.events:
            tags = roles.tags(ev)
            if "childfailed-rootcause" in tags:
                root_next = True
                continue
            if "childfailed-header" in tags:
                root_next = False
                cur = None
                continue
            if "childfailed-field" not in tags:
                continue
            if "childfailed-start" in tags or cur is None or ev.line - cur.line > 10:
                cur = ChildFailure(ev.file, ev.line, is_root=root_next, task=ev.task)
                root_next = False
                out.append(cur)
            cur.events.append(ev)
            cur.time = roles.get(ev, "time") or cur.time
            cur.host = roles.get(ev, "host") or cur.host
            if (rank := roles.int(ev, "global_rank")) is not None:
                cur.rank, cur.local_rank = rank, roles.int(ev, "local_rank")
            if (code := roles.int(ev, "exit_code")) is not None:
                cur.exitcode = code
                cur.pid = roles.int(ev, "pid")
    return out

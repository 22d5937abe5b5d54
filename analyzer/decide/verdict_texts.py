"""Title, cause and fix of the verdicts whose words are their rule's own, not their pattern's.

Each verdict rule that words itself names one of these in its ``VerdictRule.texts``
(``analyzer.decide.rules``); ``analyzer.decide.assemble`` calls it. The sentences come from
``analyzer.decide.wording``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from analyzer.decide import wording
from analyzer.decide.jobview import JobView

if TYPE_CHECKING:
    from analyzer.decide.proposal import Proposal


def unknown(p: Proposal, job: JobView) -> tuple[str, str, str]:
    """Only symptoms of no class: the earliest sign, and where to look."""
    e = p.event
    assert e is not None
    return (
        wording.UNKNOWN_TITLE,
        wording.unknown_cause(e.title or e.pattern_id),
        wording.UNKNOWN_FIX,
    )


def cut_traceback(p: Proposal, job: JobView) -> tuple[str, str, str]:
    """A rank's traceback cut before its exception line: what its frames say, if anything."""
    e = p.event
    assert e is not None
    title = e.title or ""
    under = title.partition(" raised ")[2] or None
    cause = wording.cut_traceback_cause(e.rank, e.cap("frame"), under)
    return title, cause, wording.CUT_TRACEBACK_FIX


def dead_worker(p: Proposal, job: JobView) -> tuple[str, str, str]:
    """A failure known only from a worker's exit record (``len(p.same)`` exited alike)."""
    e = p.event
    assert e is not None
    code = e.role_of("exit_code")
    return (
        wording.dead_worker_title(code),
        wording.dead_worker_cause(code, e.rank, len(p.same)),
        wording.DEAD_WORKER_FIX,
    )


def stalled_start(p: Proposal, job: JobView) -> tuple[str, str, str]:
    """Logs that end while the job was forming: how many ranks announced themselves."""
    e = p.event
    assert e is not None
    claimed = {r.rank for r in job.rows if r.tagged("rank-claim") and r.rank is not None}
    world = e.role_of("world_size") or (str(job.geo.world) if job.geo.world else "?")
    cause = wording.stalled_start_cause(
        len(claimed), int(world) if world.isdecimal() else 0, e.file, e.line
    )
    return wording.STALLED_START_TITLE, cause, wording.STALLED_START_FIX

"""Stalls and stragglers, from what each writer printed last and when (``writers.py``).

A stall: no writer printed a progress line for longer than the threshold, learned from the
job's own cadence (``factor`` x the median interval between progress lines, at least
``floor`` seconds; ``fixed`` replaces it). The culprits are the writers whose output (any line,
not only progress) stopped first. A straggler: a writer whose iteration lags the median of the
others by two or more, for longer than the threshold.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from analyzer.watch.writers import Writer, Writers

LAG_ITERATIONS = 2
CULPRIT_GAP_S = 1.0
"""Writers whose last line is within this of the oldest are named with it."""


@dataclass(frozen=True)
class Thresholds:
    """How long without progress is a stall (see the module's docstring)."""

    factor: float = 5.0
    floor: float = 60.0
    fixed: float | None = None

    def threshold(self, cadence: float | None) -> float:
        """The stall threshold for a job whose progress lines come every ``cadence`` s."""
        if self.fixed is not None:
            return self.fixed
        return max(self.floor, self.factor * cadence) if cadence is not None else self.floor


@dataclass(frozen=True)
class Stall:
    """No progress for ``silent_for`` seconds (over ``threshold``); ``culprits`` stopped first."""

    silent_for: float
    threshold: float
    culprits: list[Writer]
    everyone: list[Writer]


def find_stall(ws: Writers, now: float, th: Thresholds) -> Stall | None:
    """The stall at ``now``, or None (no progress line yet, or progress within the threshold)."""
    prog = ws.progressing()
    if not prog:
        return None
    newest = max(w.progress_at or 0.0 for w in prog)
    limit = th.threshold(ws.cadence())
    silent = now - newest
    if silent <= limit:
        return None
    everyone = _processes(ws, sorted(ws.by_key.values(), key=lambda w: w.last.seen))
    return Stall(silent, limit, _culprits(everyone), everyone)


def _culprits(procs: list[Writer]) -> list[Writer]:
    """Who stopped first: the ranks at the lowest iteration when the ranks' iterations differ;
    else those whose last line is older than the others' (by more than ``CULPRIT_GAP_S``);
    else those whose last line is not a progress line while the others' are; else all."""
    its = [w.iteration for w in procs if w.iteration is not None]
    if len(its) >= 2 and min(its) < max(its):
        return [w for w in procs if w.iteration == min(its)]
    oldest = procs[0].last.seen
    early = [w for w in procs if w.last.seen - oldest <= CULPRIT_GAP_S]
    if len(early) < len(procs):
        return early
    off = [w for w in procs if not w.last.progress]
    return off if 0 < len(off) < len(procs) else procs


def _processes(ws: Writers, writers: list[Writer]) -> list[Writer]:
    """The writers that are training processes: those with a rank when any has one, else
    those with an srun task or local rank, else all (a launcher's own lines are none)."""
    ranked = [w for w in writers if ws.rank_of(w) is not None]
    if ranked:
        return ranked
    tasks = [w for w in writers if w.task is not None or w.local_rank is not None]
    return tasks or writers


def find_stragglers(ws: Writers, now: float, th: Thresholds) -> list[Writer]:
    """Writers whose iteration lags the median by ``LAG_ITERATIONS`` or more for longer than
    the threshold (where the logs print every rank's iteration)."""
    its = [w for w in ws.by_key.values() if w.iteration is not None]
    if len(its) < 3:
        return []
    median = statistics.median(w.iteration or 0 for w in its)
    limit = th.threshold(ws.cadence())
    return [
        w for w in its
        if median - (w.iteration or 0) >= LAG_ITERATIONS
        and now - (w.iteration_at or now) > limit
    ]

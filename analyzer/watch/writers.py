"""What each writer (a rank, else a file's task) printed last, and when the watcher saw it.

Lines are read with the post-mortem's matcher (``analyzer.read.match.LineMatcher``): its
prefixes give the rank, its catalog match the role and whether the line is a progress line
(a pattern tagged ``progress``: Megatron's iteration line, a framework's step or loss line).
Times are the watcher's clock when the line was read: the logs' own timestamps may be absent.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from analyzer.catalog.model import Catalog
from analyzer.model.event import Role
from analyzer.read.match import LineMatcher
from analyzer.watch.tail import Chunk

PROGRESS_TAG = "progress"
_TRACEBACK = "Traceback (most recent call last)"
_ALARM = frozenset({Role.ROOT.value, Role.SYMPTOM.value, Role.CANDIDATE.value})
END_MARKERS = (
    "srun: error:",
    "Exited with exit code",
    "failed (exitcode",
    "[exiting program",
    "[after training is done]",
    "CANCELLED AT",
    "DUE TO TIME LIMIT",
    "Succeeded: True",
)
"""Lines a launcher or Megatron prints when a job or a worker ends."""
KEEP_INTERVALS = 64


@dataclass
class LastLine:
    """A writer's newest line."""

    seen: float
    text: str
    file: str
    line: int
    progress: bool = False
    """The line is a progress line."""


@dataclass
class Writer:
    """One rank (or one file's task when the rank is unknown)."""

    label: str
    rank: int | None
    """The rank its lines name (``[rank3]:``); see ``Writers.rank_of`` for an inferred one."""
    last: LastLine
    task: int | None = None
    local_rank: int | None = None
    progress_at: float | None = None
    iteration: int | None = None
    iteration_at: float | None = None
    intervals: list[float] = field(default_factory=list)


@dataclass
class Writers:
    """Every writer of the job, fed the new lines of each poll."""

    catalog: Catalog
    by_key: dict[str, Writer] = field(default_factory=dict)
    alarms: int = 0
    """Lines read that may start a failure (a root, symptom or unknown error line, or a
    traceback): the caller re-runs the decision when this grows."""
    ended: bool = False
    """A launcher's or the training's end line was read."""

    def __post_init__(self) -> None:
        self._matcher = LineMatcher(self.catalog)
        self._progress_lines = 0
        self._cadence: tuple[int, float | None] = (-1, None)
        self._alias: dict[str, str] = {}
        """A torchrun worker's place (file, srun task, local rank) -> its rank's key, once a
        line of it named its rank (``[default1]:[rank3]:``): one writer, whatever it prints."""

    def feed(self, chunk: Chunk, now: float) -> None:
        """Read one file's new lines, seen at ``now``."""
        for i, raw in enumerate(chunk.lines):
            if raw.strip():
                self._line(raw, chunk, chunk.first_line + i, now)

    def _line(self, raw: bytes, chunk: Chunk, number: int, now: float) -> None:
        text, pre = self._matcher.line(raw)
        msg = pre.message
        rel = chunk.rel
        task = chunk.task if pre.task is None else pre.task
        local = chunk.local_rank if pre.local_rank is None else pre.local_rank
        where = f"{rel}:{pre.task}" if pre.task is not None else rel
        if pre.local_rank is not None:
            where += f"[{pre.local_rank}]"
        if pre.rank is not None:
            key, label, rank = f"r{pre.rank}", str(pre.rank), pre.rank
            if local is not None and self._alias.get(where) != key:
                self._merge(where, key)
        else:
            key, label, rank = self._alias.get(where, where), where, None
        w = self.by_key.get(key)
        last = LastLine(now, text, rel, number)
        if w is None:
            w = self.by_key[key] = Writer(label, rank, last, task, local)
        else:
            w.last = last
        if any(m in msg for m in END_MARKERS):
            self.ended = True
        if _TRACEBACK in msg:
            self.alarms += 1
        got = self._matcher.match_text(msg)
        if got is None:
            return
        pattern, fields = got
        if pattern.role in _ALARM:
            self.alarms += 1
        if PROGRESS_TAG in pattern.tags:
            last.progress = True
            self._progress_lines += 1
            self._progress(w, fields, now)

    def _merge(self, where: str, key: str) -> None:
        """From now on ``where``'s lines are ``key``'s; what ``where`` printed joins it."""
        self._alias[where] = key
        old = self.by_key.pop(where, None)
        w = self.by_key.get(key)
        if old is None:
            return
        if w is None:
            self.by_key[key] = old
            return
        if old.last.seen > w.last.seen:
            w.last = old.last
        if old.progress_at is not None and (w.progress_at or 0.0) <= old.progress_at:
            w.progress_at, w.intervals = old.progress_at, old.intervals
            w.iteration, w.iteration_at = old.iteration, old.iteration_at

    @staticmethod
    def _progress(w: Writer, fields: dict[str, str], now: float) -> None:
        if w.progress_at is not None and now > w.progress_at:
            w.intervals = [*w.intervals[-KEEP_INTERVALS + 1 :], now - w.progress_at]
        w.progress_at = now
        it = fields.get("iteration")
        if it is not None and it.isdigit():
            w.iteration, w.iteration_at = int(it), now

    def rank_of(self, w: Writer) -> int | None:
        """``w``'s rank: the one its lines name, else srun's task x the ranks per node +
        torchrun's local rank (one task per node, as torchrun is launched), else None."""
        if w.rank is not None:
            return w.rank
        if w.task is None or w.local_rank is None:
            return None
        nproc = 1 + max((x.local_rank for x in self.by_key.values() if x.local_rank is not None),
                        default=0)
        return w.task * nproc + w.local_rank

    def name(self, w: Writer) -> str:
        """How findings name ``w``: its rank, else its file and srun task."""
        r = self.rank_of(w)
        return w.label if r is None else str(r)

    def progressing(self) -> list[Writer]:
        """The writers that printed a progress line."""
        return [w for w in self.by_key.values() if w.progress_at is not None]

    def cadence(self) -> float | None:
        """The median interval between progress lines, over every writer (None: too few)."""
        if self._cadence[0] == self._progress_lines:  # at rest: no new progress line
            return self._cadence[1]
        every = [x for w in self.by_key.values() for x in w.intervals]
        got = statistics.median(every) if len(every) >= 2 else None
        self._cadence = (self._progress_lines, got)
        return got

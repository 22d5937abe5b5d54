"""The watcher: each poll reads the new lines, and reports a failure, a stall, a straggler;
at the end, the post-mortem's verdict (docs/watch.md)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from analyzer.api import AnalyzeOptions
from analyzer.catalog.load import load_catalog
from analyzer.watch.detect import Stall, Thresholds, find_stall, find_stragglers
from analyzer.watch.finding import finding, last_lines
from analyzer.watch.postmortem import postmortem
from analyzer.watch.tail import Tailer
from analyzer.watch.writers import Writers

QUIET_POLLS = 2
"""Polls without a new byte after an end line before a directory's job counts as ended."""
END_QUIET_S = 5.0
"""...and at least this many seconds: a worker's exit and its launcher's lines come seconds
apart (an exception's traceback, then the exit)."""
SETTLE_QUIET_S = 2.0
SETTLE_MAX_S = 6.0
"""A failure's lines are decided once nothing was written for ``SETTLE_QUIET_S``, or
``SETTLE_MAX_S`` after the first of them: a cascade is written over a few seconds (the other
ranks' errors follow the first), and its first lines alone can name no rank or a wrong one."""


@dataclass
class WatchConfig:
    """What to watch and how."""

    paths: list[str]
    label: str
    options: AnalyzeOptions = field(default_factory=AnalyzeOptions)
    thresholds: Thresholds = field(default_factory=Thresholds)
    ncclras: bool = False
    job_alive: Callable[[], bool] | None = None
    """For a SLURM job id: whether the job is still in the queue (None: a directory)."""
    final: Callable[[AnalyzeOptions], AnalyzeOptions] | None = None
    """For a SLURM job id: the options of the final post-mortem (SLURM's record looked up
    again, as ``mcore-diagnose JOBID`` would after the end)."""


class Watcher:
    """Follow one job's logs; ``poll()`` returns the new findings, ``end()`` the last one."""

    def __init__(self, cfg: WatchConfig, clock: Callable[[], float] = time.time) -> None:
        self.cfg = cfg
        self.clock = clock
        cat = cfg.options.catalog or load_catalog(list(cfg.options.patterns))
        self.options = replace(cfg.options, catalog=cat)
        self.tailer = Tailer([Path(p) for p in cfg.paths])
        self.writers = Writers(cat)
        self._alarms = 0
        self._pending: float | None = None
        """When failure lines not decided yet were first read (None: none pending)."""
        self._failures: set[tuple[Any, ...]] = set()
        self._stalled = False
        self._straggling: set[str] = set()
        self._quiet = 0
        self._grew_at = clock()
        self._gone = False

    def poll(self) -> list[dict[str, Any]]:
        """Read what was written since the last poll; the findings it shows."""
        now = self.clock()
        for chunk in self.tailer.poll():
            self.writers.feed(chunk, now)
        self._quiet = 0 if self.tailer.grew else self._quiet + 1
        if self.tailer.grew:
            self._grew_at = now
        out: list[dict[str, Any]] = []
        if self.writers.alarms > self._alarms and self._pending is None:
            self._pending = now
        self._alarms = self.writers.alarms
        if self._pending is not None and (
            now - self._grew_at >= SETTLE_QUIET_S or now - self._pending >= SETTLE_MAX_S
        ):
            out += self.settle()
        out += self._stall(now)
        out += self._stragglers(now)
        return out

    def ended(self) -> bool:
        """Whether the job ended: SLURM says so, or its end lines were read and nothing grew
        for ``QUIET_POLLS`` polls and ``END_QUIET_S`` seconds."""
        if self.cfg.job_alive is not None:
            if not self._gone:
                self._gone = not self.cfg.job_alive()
            return self._gone
        return (self.writers.ended and self._quiet >= QUIET_POLLS
                and self.clock() - self._grew_at >= END_QUIET_S)

    def end(self) -> dict[str, Any]:
        """The ``end`` finding: the post-mortem of everything written (``diagnosis``: the
        object ``mcore-diagnose PATHS -f json`` prints)."""
        options = self.options if self.cfg.final is None else self.cfg.final(self.options)
        line, d = postmortem(self.cfg.paths, options, self.cfg.label)
        obj = json.loads(line)
        v = d.verdict if d is not None and d.status == "failed" else None
        cause = v.cause if v is not None else (
            f"the job ended; status {obj.get('status')}" + (
                f": {obj['error']}" if obj.get("error") else ""
            )
        )
        return finding(
            "end", self.cfg.label, self.clock(), cause,
            rank=v.rank if v else None, ranks=[v.rank] if v and v.rank is not None else [],
            node=v.node if v else None, category=str(v.category) if v else None,
            fix=v.fix if v else None, verdict=obj.get("verdict"), diagnosis=obj,
        )

    def settle(self) -> list[dict[str, Any]]:
        """The failure finding of the failure lines not decided yet (the loop calls it before
        the end)."""
        if self._pending is None:
            return []
        self._pending = None
        return self._failure(self.clock())

    def _failure(self, now: float) -> list[dict[str, Any]]:
        """The post-mortem's verdict on the logs so far, once per (category, rank, pattern)."""
        line, d = postmortem(self.cfg.paths, self.options, self.cfg.label)
        if d is None or d.status != "failed":
            return []
        v = d.verdict
        key = (v.category, v.rank, v.pattern_id)
        if key in self._failures:
            return []
        self._failures.add(key)
        return [finding(
            "failure", self.cfg.label, now, v.cause, rank=v.rank,
            ranks=[v.rank] if v.rank is not None else [], node=v.node,
            category=str(v.category), fix=v.fix, verdict=json.loads(line)["verdict"],
        )]

    def _stall(self, now: float) -> list[dict[str, Any]]:
        """A stall finding once per episode (a progress line ends the episode); none once an
        end line was read (the job is ending: its last iteration is no stall)."""
        s = None if self.writers.ended else find_stall(self.writers, now, self.cfg.thresholds)
        if s is None:
            self._stalled = False
            return []
        if self._stalled:
            return []
        self._stalled = True
        return [self._stall_finding(s, now)]

    def _stall_finding(self, s: Stall, now: float) -> dict[str, Any]:
        ws = self.writers
        names = ", ".join(ws.name(w) for w in s.culprits)
        first = s.culprits[0]
        head = f"no progress line for {s.silent_for:.0f} s (threshold {s.threshold:.0f} s); "
        if len(s.culprits) == len(s.everyone) > 1:
            cause = head + "every rank stopped at the same point: the logs do not say which first"
        else:
            cause = head + (f"output stopped first on {names}, whose last line was: "
                            f"{first.last.text.strip()}")
        others = [w for w in s.everyone if w not in s.culprits]
        return finding(
            "stall", self.cfg.label, now, cause, rank=ws.rank_of(first),
            ranks=[r for r in map(ws.rank_of, s.culprits) if r is not None], category="stall",
            fix=(
                f"see what {ws.name(first)} is doing (py-spy dump --pid PID, a Flight Recorder "
                "dump); its last line says where it stopped"
            ),
            last_lines=last_lines(ws, [*s.culprits, *others]),
            silent_for_s=round(s.silent_for, 3), threshold_s=round(s.threshold, 3),
            ncclras=self._ask_ncclras() if self.cfg.ncclras else None,
        )

    def _stragglers(self, now: float) -> list[dict[str, Any]]:
        """A straggler finding when a writer starts to lag (again)."""
        found = find_stragglers(self.writers, now, self.cfg.thresholds)
        labels = {w.label for w in found}
        new = [w for w in found if w.label not in self._straggling]
        self._straggling = labels
        ws = self.writers
        limit = self.cfg.thresholds.threshold(ws.cadence())
        return [
            finding(
                "straggler", self.cfg.label, now,
                f"{ws.name(w)} is at iteration {w.iteration} while the others are ahead",
                rank=ws.rank_of(w), ranks=[r for r in [ws.rank_of(w)] if r is not None],
                category="straggler", last_lines=last_lines(ws, [w]),
                silent_for_s=round(now - (w.iteration_at or now), 3),
                threshold_s=round(limit, 3),
            )
            for w in new
        ]

    @staticmethod
    def _ask_ncclras() -> dict[str, Any] | None:
        """NCCL's RAS report (``ncclras``), when its client is on PATH."""
        try:
            from analyzer.watch.ncclras import ask_ncclras
        except ImportError:
            return None
        return ask_ncclras(30.0)

"""The poll loop (its clock and sleep injectable, so tests never wait) and the exit codes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from analyzer.watch.core import Watcher

EXIT_ENDED = 0
EXIT_CONDITION = 4
"""An ``--exit-on`` condition fired."""
EXIT_ON = {"failure": {"failure"}, "stall": {"stall"}, "any": {"failure", "stall", "straggler"}}

Emit = Callable[[dict[str, Any]], None]


def watch_loop(
    w: Watcher,
    emit: Emit,
    *,
    interval: float = 2.0,
    once: bool = False,
    max_seconds: float | None = None,
    exit_on: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
    tick: Callable[[], None] | None = None,
) -> int:
    """Poll until the job ends (or ``once``, or ``max_seconds``, or Ctrl-C), emitting every
    finding; the ``end`` finding last (``tick`` after each poll). 4 when an ``exit_on``
    finding was emitted, else 0."""
    wanted = EXIT_ON.get(exit_on or "", set())
    start = w.clock()
    try:
        while True:
            for f in w.poll():
                emit(f)
                if f["kind"] in wanted:
                    return EXIT_CONDITION
            if tick is not None:
                tick()
            if once or w.ended():
                break
            if max_seconds is not None and w.clock() - start >= max_seconds:
                break
            sleep(interval)
        for f in w.settle():  # failure lines of the last polls, not decided yet
            emit(f)
            if f["kind"] in wanted:
                return EXIT_CONDITION
    except KeyboardInterrupt:
        pass
    emit(w.end())
    return EXIT_ENDED

"""A progress bar on stderr while reading, only on a terminal and only when it takes a while."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

SHOW_AFTER_S = 0.7


@contextmanager
def progress_callback(enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    """Yield a ``(done, total)`` callback that draws a rich progress bar after a moment."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    start = time.monotonic()
    state: dict[str, Any] = {}
    console = Console(stderr=True)

    def cb(done: int, total: int) -> None:
        if "bar" not in state:
            if time.monotonic() - start < SHOW_AFTER_S:
                return
            bar = Progress(
                "reading logs",
                BarColumn(),
                DownloadColumn(),
                TimeRemainingColumn(),
                console=console,
                transient=True,
            )
            bar.start()
            state["bar"] = bar
            state["task"] = bar.add_task("read", total=total)
        bar = state["bar"]
        bar.update(state["task"], completed=done)

    try:
        yield cb
    finally:
        if "bar" in state:
            state["bar"].stop()

"""The terminal view (rich ``Live``): each writer's progress and last line, the newest findings."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from analyzer.watch.core import Watcher

SHOWN_WRITERS = 32
SHOWN_FINDINGS = 8


class LiveView:
    """A live table refreshed after every poll; findings listed under it as they come."""

    def __init__(self, w: Watcher, console: Console | None = None) -> None:
        self.w = w
        self.findings: list[dict[str, Any]] = []
        self.live = Live(self._render(), console=console or Console(), auto_refresh=False)

    def __enter__(self) -> LiveView:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(None, None, None)

    def emit(self, f: dict[str, Any]) -> None:
        """Show a finding."""
        self.findings.append(f)
        self.tick()

    def tick(self) -> None:
        """Redraw."""
        self.live.update(self._render(), refresh=True)

    def _render(self) -> Group:
        now = self.w.clock()
        t = Table(title=Text(f"watching {self.w.cfg.label}"), expand=True)
        for col, least in (("rank / writer", 14), ("iteration", 9), ("last line", 20),
                           ("age s", 5)):
            t.add_column(col, overflow="ellipsis", no_wrap=True, min_width=least)
        ws = sorted(self.w.writers.by_key.values(), key=lambda x: x.last.seen)
        for wr in ws[:SHOWN_WRITERS]:
            t.add_row(Text(wr.label), "-" if wr.iteration is None else str(wr.iteration),
                      Text(wr.last.text.strip()), f"{now - wr.last.seen:.0f}")
        lines = [
            Text(f"{f['kind']}: {f['cause']}" + (f" Fix: {f['fix']}" if f["fix"] else ""),
                 style="bold" if f["kind"] != "end" else "")
            for f in self.findings[-SHOWN_FINDINGS:]
        ]
        return Group(t, *lines)

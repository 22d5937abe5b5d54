"""Lint output: a rich terminal listing with the script lines, plain text, or JSON."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from analyzer.lint.rules import Finding
from analyzer.util.safe import clean

_STYLE = {"error": "bold red", "warning": "yellow", "note": "cyan"}
WIDTH = 100


def to_json(results: Sequence[tuple[str, list[Finding]]]) -> str:
    """``{"findings": [{rule, severity, line, message, fix, reason, file}, ...]}``."""
    return json.dumps(
        {"findings": [f.as_dict() for _, found in results for f in found]}, indent=2
    ) + "\n"


def _summary(results: Sequence[tuple[str, list[Finding]]]) -> str:
    counts = {s: sum(f.severity == s for _, fs in results for f in fs)
              for s in ("error", "warning", "note")}
    n = len(results)
    head = f"{n} script{'s' if n != 1 else ''}: "
    if not any(counts.values()):
        return head + "no findings"
    return head + ", ".join(f"{v} {k}{'s' if v != 1 else ''}" for k, v in counts.items() if v)


def render(
    results: Sequence[tuple[str, list[Finding]]],
    lines: dict[str, list[str]],
    *,
    color: bool,
    reasons: bool = True,
) -> str:
    """The report for terminal or text: each finding with its script line, the fix and why."""
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=color, no_color=not color, width=WIDTH,
                  highlight=False, emoji=False, soft_wrap=True)
    for path, found in results:
        src = lines.get(path, [])
        for f in found:
            head = Text()
            head.append(f"{clean(path)}:{f.line}", style="bold")
            head.append(": ")
            head.append(f.severity, style=_STYLE[f.severity])
            head.append(f" [{f.rule}] ", style="dim")
            head.append(clean(f.message))
            con.print(head)
            if 1 <= f.line <= len(src):
                code = clean(src[f.line - 1]).rstrip()
                con.print(Text.assemble((f"  {f.line:>4} | ", "dim"), code))
            con.print(Text.assemble(("  fix: ", "green"), clean(f.fix)))
            if reasons:
                con.print(Text("  why: " + clean(f.reason), style="dim"))
            con.print()
    con.print(Text(_summary(results)))
    return buf.getvalue()

"""Lint output: a rich terminal listing with the script lines, plain text, or JSON."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from analyzer.lint.compose import Composed, compose
from analyzer.lint.rules import Finding
from analyzer.util.safe import clean

_STYLE = {"error": "bold red", "warning": "yellow", "note": "cyan"}
WIDTH = 100
"""Width of the listing written to a file or a pipe (with no ``COLUMNS``)."""


def listing_width() -> int:
    """The terminal's width (``COLUMNS`` honoured), or :data:`WIDTH`; at least 40."""
    return max(40, shutil.get_terminal_size((WIDTH, 24)).columns)


def to_json(results: Sequence[tuple[str, list[Finding]]],
            lines: dict[str, list[str]] | None = None) -> str:
    """``{"findings": [{rule, severity, line, message, fix, reason, file}, ...], "composed":
    [{file, line, rules, fix, conflicts, separate}, ...]}`` (``lines``: each script's text by
    path, for the composed lines)."""
    lines = lines or {}
    composed = [c.as_dict() for path, found in results
                for c in compose(found, lines.get(path, []))]
    return json.dumps(
        {"findings": [f.as_dict() for _, found in results for f in found],
         "composed": composed}, indent=2
    ) + "\n"


def _summary(results: Sequence[tuple[str, list[Finding]]]) -> str:
    counts = {s: sum(f.severity == s for _, fs in results for f in fs)
              for s in ("error", "warning", "note")}
    n = len(results)
    head = f"{n} script{'s' if n != 1 else ''}: "
    if not any(counts.values()):
        return head + "no findings"
    return head + ", ".join(f"{v} {k}{'s' if v != 1 else ''}" for k, v in counts.items() if v)


def render_findings(
    results: Sequence[tuple[str, list[Finding]]],
    lines: dict[str, list[str]],
    *,
    color: bool,
    reasons: bool = True,
    width: int | None = None,
) -> str:
    """The report for terminal or text: each finding with its script line, the fix and why,
    every line within ``width`` columns (default :func:`listing_width`), wrapped lines indented
    under their label."""
    width = width or listing_width()
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=color, no_color=not color, width=width,
                  highlight=False, emoji=False, soft_wrap=True, _environ={})
    for path, found in results:
        src = lines.get(path, [])
        composed = {c.line: c for c in compose(found, src)}
        for k, f in enumerate(found):
            head = Text()
            head.append(f"{clean(path)}:{f.line}", style="bold")
            head.append(": ")
            head.append(f.severity, style=_STYLE[f.severity])
            head.append(f" [{f.rule}] ", style="dim")
            head.append(clean(f.message))
            _hang(con, Text(), head, width, indent=4)
            if 1 <= f.line <= len(src):
                code = clean(src[f.line - 1]).rstrip()
                _hang(con, Text(f"  {f.line:>4} | ", "dim"), Text(code), width)
            _hang(con, Text("  fix: ", "green"), Text(clean(f.fix)), width)
            if reasons:
                _hang(con, Text("  why: ", "dim"), Text(clean(f.reason), style="dim"), width)
            con.print()
            last_on_line = k + 1 == len(found) or found[k + 1].line != f.line
            if last_on_line and f.line in composed:
                _composed(con, path, composed[f.line], width)
    _hang(con, Text(), Text(_summary(results)), width, indent=2)
    return buf.getvalue()


def _composed(con: Console, path: str, c: Composed, width: int) -> None:
    """The one corrected line for a line's findings, its conflicts and the fixes kept apart."""
    head = Text()
    head.append(f"{clean(path)}:{c.line}", style="bold")
    head.append(f": all {len(c.rules)} fixes on this line applied together "
                f"({', '.join(c.rules)}):")
    _hang(con, Text(), head, width, indent=4)
    _hang(con, Text("  fixed: ", "green"), Text(clean(c.fix)), width)
    for (kept, other), (kept_fix, other_fix) in c.conflicts:
        _hang(con, Text("  conflict: ", "yellow"),
              Text(f"[{kept}] and [{other}] change the same words; the fixed line has "
                   f"[{kept}]'s fix, not [{other}]'s. Both:"), width)
        _hang(con, Text(f"    [{kept}] ", "dim"), Text(clean(kept_fix)), width)
        _hang(con, Text(f"    [{other}] ", "dim"), Text(clean(other_fix)), width)
    if c.separate:
        one = len(c.separate) == 1
        _hang(con, Text("  apart: ", "dim"),
              Text(", ".join(f"[{r}]" for r in c.separate)
                   + (": its fix is" if one else ": their fixes are")
                   + " not this line corrected; see the finding" + ("" if one else "s")), width)
    con.print()


def _hang(con: Console, label: Text, body: Text, width: int, indent: int | None = None) -> None:
    """``label`` then ``body`` wrapped to ``width``, continuation lines indented by ``indent``
    (the label's width by default): a hanging indent."""
    pad = len(label.plain) if indent is None else indent
    room = max(width - max(pad, len(label.plain)), 20)
    for i, line in enumerate(body.wrap(con, room)):
        line.rstrip()
        con.print(Text.assemble(label if i == 0 else " " * pad, line))

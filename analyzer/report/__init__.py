"""Reports: terminal (rich), plain text, Markdown, HTML and JSON views of one diagnosis."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analyzer.api import Analysis

FORMATS = ("terminal", "text", "markdown", "html", "json")


def terminal_width(default: int = 100) -> int:
    """The terminal's width, kept between 60 and 160 columns."""
    cols = shutil.get_terminal_size((default, 24)).columns
    return max(60, min(cols, 160))


def render(
    a: Analysis, fmt: str, *, quiet: bool = False, verbose: bool = False, color: bool = False
) -> str:
    """The report for ``a`` in ``fmt`` (terminal, text, markdown, html, json).

    ``color`` says the output goes to a terminal: the terminal report is then coloured (unless
    ``NO_COLOR`` is set) and as wide as the terminal. ``quiet`` gives one line (not for JSON).
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}; one of {', '.join(FORMATS)}")
    if fmt == "json":
        from analyzer.report.jsonout import to_json

        return to_json(a.diagnosis)
    if quiet:
        from analyzer.report.oneline import one_line

        return one_line(a.diagnosis) + "\n"
    if fmt == "markdown":
        from analyzer.report.markdown import to_markdown

        return to_markdown(a, verbose=verbose)
    if fmt == "html":
        from analyzer.report.html import to_html

        return to_html(a, verbose=verbose)
    from analyzer.report.terminal import WIDTH, to_terminal, to_text

    if fmt == "text":
        return to_text(a, verbose=verbose)
    width = terminal_width() if color else WIDTH
    return to_terminal(a, color=color, verbose=verbose, width=width)

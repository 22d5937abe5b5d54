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
    a: Analysis,
    fmt: str,
    *,
    quiet: bool = False,
    verbose: bool = False,
    color: bool = False,
    width: int | None = None,
) -> str:
    """The report for ``a`` (an ``analyzer.api.Analysis``) as a string.

    Parameters:
        a: the analysis of one job, from ``analyzer.analyze``.
        fmt: ``terminal`` (rich panels and the rank grid), ``text`` (the same in plain text),
            ``markdown``, ``html`` (one self-contained page) or ``json`` (the object of
            ``docs/contract.md``, indented; the command line prints it on one line).
        quiet: one line, ``category rank=… node=… confidence=…: cause`` (not for JSON).
        verbose: add the per-rank timeline and show tracebacks and long lines whole.
        color: the terminal report carries ANSI colours (``analyzer.util.color.use_color``
            decides it on the command line).
        width: the line width of the ``terminal`` and ``text`` reports; the command line
            passes the terminal's width (with or without colour), and 100 (``WIDTH``) when
            standard output is not a terminal. None: the terminal's width when ``color``,
            else 100. No line of these reports is longer (log lines are cut or wrapped).

    Raises ``ValueError`` for an unknown ``fmt``. Log text is escaped for the format.
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

    if width is None:
        width = terminal_width() if color and fmt == "terminal" else WIDTH
    if fmt == "text":
        return to_text(a, verbose=verbose, width=width)
    return to_terminal(a, color=color, verbose=verbose, width=width)

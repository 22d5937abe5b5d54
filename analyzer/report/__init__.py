"""Reports: terminal (rich), plain text, Markdown, HTML and JSON views of one diagnosis."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analyzer.api import Analysis


def render(
    a: Analysis, fmt: str, *, quiet: bool = False, verbose: bool = False, color: bool = False
) -> str:
    """The report for ``a`` in ``fmt`` (terminal, text, markdown, html, json)."""
    if fmt == "json":
        from analyzer.report.jsonout import to_json

        return to_json(a.diagnosis)
    if quiet:
        from analyzer.report.oneline import one_line

        return one_line(a.diagnosis) + "\n"
    if fmt == "markdown":
        from analyzer.report.markdown import to_markdown

        return to_markdown(a)
    if fmt == "html":
        from analyzer.report.html import to_html

        return to_html(a)
    from analyzer.report.terminal import to_terminal

    return to_terminal(a, color=(fmt == "terminal" and color), verbose=verbose)

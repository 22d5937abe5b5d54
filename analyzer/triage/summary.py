"""The triage summary: causes by count, node implication, unknown share, new versus recurring.

This module is the summary's front: it picks a renderer by format and re-exports what the
summary is made of. The data model and its computation live in ``analyzer.triage.model``; the
renderers in ``text_report`` (rich, for the terminal or plain text), ``markdown_report``
(escaped Markdown) and ``html_report`` (one self-contained page); the table's reading, writing
and merging in ``analyzer.triage.table``.
"""

from __future__ import annotations

from pathlib import Path

from analyzer.triage.html_report import render_html
from analyzer.triage.markdown_report import md_escape, render_markdown
from analyzer.triage.model import (
    EXAMPLES,
    MIN_NODE_JOBS,
    UNDIAGNOSED,
    Summary,
    is_host,
    mark_new,
    summarize,
    unknown_lines,
)
from analyzer.triage.table import (
    META_KEY,
    TableError,
    merge_tables,
    read_meta,
    read_table,
    read_table_empty,
    table_format,
    write_table,
)
from analyzer.triage.text_report import render_terminal

__all__ = [
    "EXAMPLES",
    "META_KEY",
    "MIN_NODE_JOBS",
    "UNDIAGNOSED",
    "Summary",
    "TableError",
    "is_host",
    "mark_new",
    "md_escape",
    "merge_tables",
    "read_meta",
    "read_table",
    "read_table_empty",
    "render_html",
    "render_markdown",
    "render_summary",
    "render_terminal",
    "summarize",
    "summary_format",
    "table_format",
    "unknown_lines",
    "write_table",
]


def summary_format(path: Path) -> str:
    """``markdown``, ``html`` or ``text`` from a summary file's name."""
    suffix = path.suffix.lower()
    if suffix in (".md", ".markdown"):
        return "markdown"
    if suffix in (".html", ".htm"):
        return "html"
    if suffix in (".txt", ".text"):
        return "text"
    raise ValueError(f"{path}: unknown summary format {suffix or '(none)'}; use .md, .html or .txt")


def render_summary(s: Summary, fmt: str, width: int = 100) -> str:
    """The summary in ``terminal``/``text`` (``width`` columns; one block per cause below
    ``text_report.NARROW_BELOW``), ``markdown`` or ``html``."""
    if fmt == "markdown":
        return render_markdown(s)
    if fmt == "html":
        return render_html(s)
    return render_terminal(s, color=fmt == "terminal", width=width)

"""HTML report (placeholder until the report issue lands)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analyzer.api import Analysis


def to_html(a: Analysis) -> str:
    """A minimal self-contained HTML page."""
    from analyzer.report.terminal import to_terminal

    return "<!doctype html><pre>" + html.escape(to_terminal(a, color=False)) + "</pre>\n"

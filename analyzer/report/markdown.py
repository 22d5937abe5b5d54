"""Markdown report (placeholder until the report issue lands)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analyzer.api import Analysis


def to_markdown(a: Analysis) -> str:
    """A minimal Markdown report."""
    from analyzer.report.terminal import to_terminal

    return "```\n" + to_terminal(a, color=False) + "```\n"

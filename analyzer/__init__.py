"""mcore-diagnose: find the first failing rank, the cause and the fix in a failed job's logs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from analyzer.version import __version__

__all__ = ["AnalyzeOptions", "__version__", "analyze"]

if TYPE_CHECKING:
    from analyzer.api import AnalyzeOptions, analyze


def __getattr__(name: str) -> Any:
    # Lazy: `mcore-diagnose --version` must not pay for polars and the catalog.
    if name in ("analyze", "AnalyzeOptions"):
        from analyzer import api

        return getattr(api, name)
    raise AttributeError(name)

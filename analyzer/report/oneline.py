"""The ``--quiet`` one-line summary."""

from __future__ import annotations

from analyzer.verdict import Diagnosis


def one_line(d: Diagnosis) -> str:
    """``category rank=R node=N: cause`` on one line."""
    v = d.verdict
    rank = "all/none" if v.rank is None else str(v.rank)
    node = v.node if v.node is not None else "-"
    cause = " ".join(v.cause.split())
    return f"{v.category} rank={rank} node={node} confidence={v.confidence:.2f}: {cause}"

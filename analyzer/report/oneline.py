"""The ``--quiet`` one-line summary."""

from __future__ import annotations

from analyzer.decide.verdict import Diagnosis
from analyzer.util.safe import clean


def one_line(d: Diagnosis) -> str:
    """``category rank=R node=N confidence=C: cause`` on one line, no control characters."""
    v = d.verdict
    rank = "-" if v.rank is None else str(v.rank)
    node = "-" if v.node is None else "_".join(clean(v.node).split()) or "-"
    cause = " ".join(clean(v.cause).split())
    return f"{clean(v.category)} rank={rank} node={node} confidence={v.confidence:.2f}: {cause}"

"""How sure a named rank is, by the rank rule that settled it."""

from __future__ import annotations

CERTAINTY: dict[str | None, str] = {
    None: "certain",
    "same-way-first": "certain",
    "only-death": "certain",
    "only-rank": "certain",
    "from-line": "likely",
    "traceback-below": "likely",
    "named-above": "likely",
    "culprit": "likely",
    "inferred": "likely",
}
"""How sure a named rank is, by the rule that named it (a rank its own line carries is
``certain``; one taken from another line or the hang analysis ``likely``)."""


def certainty(rank: int | None, rule: str | None, assumed: bool) -> str:
    """``certain``, ``likely``, ``assumed`` (a local rank taken as global on what looks like
    one node) or ``unknown`` (no rank named)."""
    if rank is None:
        return "unknown"
    if assumed:
        return "assumed"
    return CERTAINTY.get(rule, "likely")

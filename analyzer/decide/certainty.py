"""How sure a named rank is, by the rank rule that settled it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CERTAINTY: dict[str | None, str] = {
    None: "certain",
    "same-way-first": "certain",
    "only-death": "certain",
    "only-rank": "certain",
    "from-line": "likely",
    "traceback-below": "likely",
    "named-above": "likely",
    "culprit": "likely",
    "own-traceback": "likely",
    "inferred": "likely",
}
"""How sure a named rank is, by the rule that named it (a rank its own line carries is
``certain``; one taken from another line or the hang analysis ``likely``)."""


CONFIRMED_BY_DUMPS = "dumps"
"""The hang rule (``HangFinding.rule``) of a culprit the Flight Recorder dumps show."""


def certainty(
    rank: int | None, rule: str | None, assumed: bool, facts: Mapping[str, Any] | None = None
) -> str:
    """``certain``, ``likely``, ``assumed`` (a local rank taken as global on what looks like
    one node) or ``unknown`` (no rank named). A hang's culprit is ``likely`` from the logs
    alone and ``certain`` when the Flight Recorder dumps show it (``facts["hang_rule"]``)."""
    if rank is None:
        return "unknown"
    if assumed:
        return "assumed"
    if rule == "culprit" and (facts or {}).get("hang_rule") == CONFIRMED_BY_DUMPS:
        return "certain"
    return CERTAINTY.get(rule, "likely")

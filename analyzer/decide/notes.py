"""A verdict's rank note, worded once the decision is complete: its rank rule's note, then the
single-node assumption."""

from __future__ import annotations

from dataclasses import replace

from analyzer.decide import wording
from analyzer.decide.rank_decision import rank_note
from analyzer.decide.verdict import Verdict


def finish(v: Verdict) -> Verdict:
    """The decided verdict with its rank note worded: its rank rule's note, then the
    single-node assumption."""
    note = rank_note(v.rank_rule, v.rank_facts) if v.rank_rule else v.rank_note
    if v.rank_assumed:
        note = f"{note}; {wording.ASSUMED}" if note else wording.ASSUMED
    return replace(v, rank_note=note)

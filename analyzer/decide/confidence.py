"""How sure a verdict is, declared once per decision rule (never a bare number in a rule).

A catalogued root takes its category's confidence from the vocabulary's category table
(``CategoryInfo.confidence``); a hang takes the confidence of the hang strategy that named (or
did not name) its culprit (``analyzer.decide.hangs``); an inferred verdict takes the unknown-
failure ranking's (``analyzer.decide.unknown``). Every other rule reads this table.
"""

from __future__ import annotations

CONFIDENCE: dict[str, float] = {
    "root-uncatalogued": 0.75,
    "root-near-miss": 0.6,
    "alternative": 0.3,
    "alternative-slurm-end": 0.2,
    "slurm-end": 0.85,
    "end-after-symptoms": 0.6,
    "death-record": 0.6,
    "cut-traceback": 0.4,
    "symptoms": 0.5,
    "unknown": 0.2,
    "stalled-start": 0.3,
    "none": 0.8,
}
"""Confidence of a verdict by the rule that chose it (``docs/decisions.md``):
``root-uncatalogued`` is a root no catalog pattern claims (a bare traceback); ``root-near-miss``
a root whose line is cut before the end of what its pattern matches (``near_miss`` capture); the
``alternative`` rows are the roots and SLURM end considered beside the verdict."""

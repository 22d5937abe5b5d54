"""The machine-readable report (``--format json``), per ``categories.md``."""

from __future__ import annotations

import json

from analyzer.verdict import Diagnosis


def to_json(d: Diagnosis) -> str:
    """One JSON object, newline-terminated; log text stays valid JSON whatever it holds."""
    return json.dumps(d.as_dict(), indent=2, ensure_ascii=False, default=str) + "\n"

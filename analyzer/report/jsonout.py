"""The machine-readable report (``--format json``), per ``categories.md``."""

from __future__ import annotations

import json

import regex

from analyzer.decide.verdict import Diagnosis

# json.dumps(ensure_ascii=False) escapes C0 controls but writes C1 controls (U+0080-U+009F, e.g.
# the 8-bit CSI) and bidi overrides raw; escape them too so no terminal acts on them.
_RAW = regex.compile(r"[\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def to_json(d: Diagnosis) -> str:
    """One JSON object, newline-terminated; log text stays valid JSON whatever it holds."""
    text = json.dumps(d.as_dict(), indent=2, ensure_ascii=False, default=str)
    return _RAW.sub(lambda m: f"\\u{ord(m[0]):04x}", text) + "\n"

"""The JSON Schemas of the tool's machine-readable outputs (``docs/schema/*.schema.json``).

They ship inside the package as ``analyzer.schema`` (read them with ``load_schema``); the
contract they formalise is ``docs/contract.md``.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

SCHEMAS = ("diagnose", "events", "triage", "catalog", "lint", "watch")
_CHECKOUT_DIR = Path(__file__).resolve().parents[2] / "docs" / "schema"


def load_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of ``name`` (one of :data:`SCHEMAS`)."""
    if name not in SCHEMAS:
        raise ValueError(f"unknown schema {name!r}; one of {', '.join(SCHEMAS)}")
    file = f"{name}.schema.json"
    try:
        text = resources.files("analyzer.schema").joinpath(file).read_text(encoding="utf-8")
    except (ImportError, OSError):  # a source checkout that is not installed
        text = (_CHECKOUT_DIR / file).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data

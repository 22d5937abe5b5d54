"""Documentation the tool points users to exists (help texts, warnings, README links)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import ROOT

_DOC_REF = re.compile(r"\bdocs/[\w./-]+\.(?:md|json|png)")
_MD_LINK = re.compile(r"\]\(((?!https?:|#)[^)#\s]+)(?:#[^)]*)?\)")


def _texts() -> list[Path]:
    return [*sorted((ROOT / "analyzer").rglob("*.py")), ROOT / "README.md",
            *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "recipes").glob("*"))]


def test_every_docs_path_named_in_code_or_docs_exists() -> None:
    missing = []
    for f in _texts():
        for ref in _DOC_REF.findall(f.read_text(encoding="utf-8")):
            if not (ROOT / ref.rstrip(".")).exists():
                missing.append(f"{f.relative_to(ROOT)}: {ref}")
    assert not missing, missing


def test_triage_help_names_a_doc_that_exists() -> None:
    from analyzer.triage import cli

    text = Path(cli.__file__).read_text(encoding="utf-8")
    assert "docs/triage.md" in text
    doc = (ROOT / "docs" / "triage.md").read_text(encoding="utf-8")
    for heading in ("Which directories are jobs", "The table", "Fingerprints", "The summary"):
        assert f"## {heading}" in doc


def test_relative_markdown_links_resolve() -> None:
    missing = []
    for f in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
              ROOT / "recipes" / "README.md"]:
        for target in _MD_LINK.findall(f.read_text(encoding="utf-8")):
            if not (f.parent / target).exists():
                missing.append(f"{f.relative_to(ROOT)}: {target}")
    assert not missing, missing

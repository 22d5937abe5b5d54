"""Everything code reads of the catalog is declared: no pattern id in the code, every capture
name read by name is a well-known field, every role, tag and fact name is declared, and the
loader holds patterns to the declared types."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from analyzer.catalog.load import load_catalog
from analyzer.catalog.model import CatalogError
from analyzer.catalog.vocabulary import (
    CAPTURE_ROLES,
    CATEGORIES,
    DECISION_TAGS,
    FACTS,
    FIELDS,
    STRUCTURAL_NAMES,
    TAGS,
    Category,
)

PACKAGE = Path(__file__).resolve().parent.parent / "analyzer"

# method or function name -> (index of the string argument, the vocabulary it must be in)
_READS: dict[str, tuple[int, str]] = {
    "cap": (0, "field"),
    "role_of": (0, "role"),
    "tagged": (0, "tag"),
    "fact": (0, "fact"),
}
# ``roles.get(ev, "world_size")`` / ``roles.int(ev, "local_rank")``: role readers in attribution
_ROLE_HELPERS = {"get", "int"}


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield str(path.relative_to(PACKAGE.parent)), ast.parse(path.read_text("utf-8"))


def _reads() -> Iterator[tuple[str, int, str, str]]:
    """(file, line, vocabulary, name) of every literal name code reads from an event."""
    for where, tree in _modules():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            attr, args = node.func.attr, node.args
            strs = [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None
                    for a in args]
            if attr in _READS and strs and strs[_READS[attr][0]] is not None:
                yield where, node.lineno, _READS[attr][1], str(strs[_READS[attr][0]])
            owner = node.func.value
            if (attr in _ROLE_HELPERS and isinstance(owner, ast.Name) and owner.id == "roles"
                    and len(strs) == 2 and strs[1] is not None):
                yield where, node.lineno, "role", str(strs[1])


def test_code_reads_only_declared_names() -> None:
    known = {
        "field": set(FIELDS),
        "role": set(CAPTURE_ROLES),
        "tag": set(TAGS) | set(DECISION_TAGS),
        "fact": set(FACTS),
    }
    reads = list(_reads())
    assert len(reads) > 30  # the scan finds the reads (a scan that finds none proves nothing)
    bad = [f"{w}:{ln}: {kind} {name!r}" for w, ln, kind, name in reads if name not in known[kind]]
    assert not bad, "undeclared names read by code (declare them in catalog/vocabulary.py):\n" + (
        "\n".join(bad)
    )


def test_no_string_literal_in_the_code_is_a_pattern_id() -> None:
    """Meaning lives in declared tags, roles and fields, never in a pattern's id."""
    ids = {p.id for p in load_catalog().patterns}
    found = [
        f"{where}:{node.lineno}: {node.value!r}"
        for where, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ids
    ]
    assert not found, "pattern ids in code (select by tag or role instead):\n" + "\n".join(found)


def test_lists_of_capture_and_fact_names_are_declared() -> None:
    from analyzer.read.fold import IDENTITY_CAPTURES
    from analyzer.shape import facts

    declared = set(FIELDS) | set(CAPTURE_ROLES) | STRUCTURAL_NAMES
    assert declared >= IDENTITY_CAPTURES, IDENTITY_CAPTURES - declared
    for name in vars(facts):
        value = getattr(facts, name)
        if name.startswith("_ARG_MAP"):
            assert set(value.values()) <= set(FACTS), set(value.values()) - set(FACTS)
        if name == "_FIELD_FACTS":
            assert set(value) <= set(FACTS), set(value) - set(FACTS)


def test_categories_are_an_enum_of_the_contract() -> None:
    assert tuple(c.value for c in Category) == CATEGORIES
    assert len(CATEGORIES) == 22 and Category.CUDA_OOM == "cuda_oom"


def test_the_loader_holds_a_well_known_field_to_its_type(tmp_path: Path) -> None:
    (tmp_path / "mine.toml").write_text(
        """
[[pattern]]
id = "site.port.text"
category = "rendezvous"
role = "root"
title = "port as text"
cause = "A port as text."
fix = "Nothing."
needles = ["bound port"]
regex = 'bound port (?P<port>\\w+)'
captures = { port = "str" }
examples = ["bound port 29500"]
counter_examples = ["nothing here"]
""",
        encoding="utf-8",
    )
    with pytest.raises(CatalogError, match="well-known field 'port'"):
        load_catalog([tmp_path])

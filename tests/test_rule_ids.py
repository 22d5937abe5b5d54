"""No rule id or role name is typed as a string outside its declaration: the reasoning
(analyzer/decide/) and the shaping (analyzer/shape/) name a verdict rule, a rank rule's
outcome, a hang strategy or an event role by its enum member (``analyzer.decide.ids``,
``analyzer.model.event.Role``), so a mistyped id fails at import, never at run time.

The scan reads the source with ``ast``: docstrings, comments, dictionary keys and subscripts
(JSON and fact keys), and the arguments of ``tagged``/``cap``/``role_of``/``get`` and tests
against ``tags`` (tags, captures and facts are vocabularies of their own that share some words)
are not ids.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from analyzer.decide.ids import HangId, RankId, VerdictId
from analyzer.model.event import Role
from tests.helpers import ROOT

IDS = frozenset(str(m) for enum in (VerdictId, RankId, HangId, Role) for m in enum)
SCANNED = ("analyzer/decide", "analyzer/shape")
DECLARED_IN = frozenset({"analyzer/decide/ids.py"})
ROLES = frozenset(str(m) for m in Role)
ROLE_DECLARED_IN = "analyzer/model/event.py"
OTHER_VOCABULARY: frozenset[tuple[str, str]] = frozenset(
    {
        ("analyzer/decide/verdict.py", "unknown"),  # a diagnosis status, a category
        ("analyzer/decide/reason.py", "unknown"),  # a diagnosis status
        ("analyzer/decide/unknown.py", "unknown"),  # the category
        ("analyzer/decide/unknown.py", "death-record"),  # the tag (DEATH_TAG)
        ("analyzer/decide/promote_end.py", "death-record"),  # the tag, among a death's tags
        ("analyzer/decide/launchlogs.py", "unknown"),  # the category an advisory explains
        ("analyzer/decide/flightrec.py", "none"),  # English: no ranks
    }
)
"""Words that are also another vocabulary's (``Category.UNKNOWN``, a diagnosis status, a
tag named as a constant)."""
_NOT_IDS_CALLS = frozenset({"tagged", "cap", "role_of", "get"})


def _not_ids(tree: ast.AST) -> set[int]:
    """The string constants of ``tree`` that are not ids whatever their text (see above)."""
    out: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant):
            out.add(id(n.value))  # a docstring (of a module, class, function or attribute)
        elif isinstance(n, ast.Dict):
            out.update(id(k) for k in n.keys if k is not None)
        elif isinstance(n, ast.Subscript):
            out.add(id(n.slice))
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and n.func.attr in _NOT_IDS_CALLS):
            out.update(id(a) for a in n.args)
        elif isinstance(n, ast.Compare) and "tags" in ast.unparse(n.comparators[-1]):
            out.add(id(n.left))
        elif isinstance(n, ast.ClassDef) and any("Enum" in ast.unparse(b) for b in n.bases):
            # another vocabulary's own declaration (a grid cell's kind, a category)
            out.update(id(s.value) for s in n.body if isinstance(s, ast.Assign))
    return out


def literal_ids(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each string constant in ``source`` that spells a rule id or role."""
    tree = ast.parse(source)
    skip = _not_ids(tree)
    for n in ast.walk(tree):
        if (isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in IDS
                and id(n) not in skip):
            yield n.lineno, n.value


def test_no_rule_id_or_role_is_a_bare_string() -> None:
    found = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in DECLARED_IN:
                continue
            for line, text in literal_ids(path.read_text(encoding="utf-8")):
                if (rel, text) not in OTHER_VOCABULARY:
                    found.append(f"{rel}:{line}: {text!r}")
    assert not found, "name these by their enum member:\n" + "\n".join(found)


def test_no_role_is_a_bare_string_anywhere() -> None:
    """Event roles are one vocabulary across the package (the reader sets them, the catalog
    orders patterns by them, reports and the CLI filter by them): every module names them by
    ``Role`` (or a constant made from it), never by a bare string."""
    found = []
    for path in sorted((ROOT / "analyzer").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == ROLE_DECLARED_IN:
            continue
        for line, text in literal_ids(path.read_text(encoding="utf-8")):
            if text in ROLES:
                found.append(f"{rel}:{line}: {text!r}")
    assert not found, "name these by Role:\n" + "\n".join(found)


def test_the_scan_finds_a_bare_id_and_skips_what_is_not_one() -> None:
    """The scan itself: a comparison with a bare rule id or role is found; a docstring, a
    tag, a capture or a dictionary key with the same text is not (synthetic source)."""
    src = (
        '"""The root rule."""\n'
        'def f(p, e, d):\n'
        '    """stalled-start"""\n'
        '    if p.rule == "stalled-start" or e.role == "context":\n'
        '        return e.tagged("uniform") or e.cap("missing") or {"culprit": 1}["culprit"]\n'
        'class Kind(StrEnum):\n'
        '    ROOT = "root"\n'
    )
    assert list(literal_ids(src)) == [(4, "stalled-start"), (4, "context")]


def test_every_id_is_declared_once() -> None:
    """Each enum's values are distinct, and a rank outcome and a verdict rule share a value
    only where they mean the same decision (``slurm-end``, ``inferred``)."""
    for enum in (VerdictId, RankId, HangId, Role):
        assert len({str(m) for m in enum}) == len(enum)
    assert {str(m) for m in VerdictId} & {str(m) for m in RankId} == {"slurm-end", "inferred"}
    assert Path(ROOT / "analyzer/decide/ids.py").is_file()

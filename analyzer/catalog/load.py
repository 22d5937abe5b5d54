"""Load and validate the pattern catalog (``patterns/*.toml``)."""

from __future__ import annotations

import os
import string
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import regex

from analyzer.catalog.cache import (
    digest,
    is_validated,
    lazy_regex,
    mark_validated,
    named_groups,
    remembered_data,
)
from analyzer.catalog.model import (
    ENV_VAR,
    NEEDS,
    PATTERN_KEYS,
    PLACEHOLDER_NAMES,
    TRACEBACK_FIELDS,
    TRACEBACK_TAG,
    USER_TIMEOUT_S,
    Capture,
    Catalog,
    CatalogError,
    Example,
    Pattern,
)
from analyzer.catalog.vocabulary import (
    CAPTURE_ROLES,
    CAPTURE_TYPES,
    CATEGORIES,
    FIELDS,
    ROLES,
    STRUCTURAL_NAMES,
    TAGS,
)
from analyzer.lines.prefixes import split_prefixes

_CHECKOUT_DIR = Path(__file__).resolve().parents[2] / "patterns"


def builtin_files() -> list[Traversable]:
    """The built-in pattern files, in name order.

    They ship inside the package as ``analyzer.patterns`` (a data directory without
    ``__init__.py``, so ``importlib.resources`` may hand back a multiplexed namespace path, or a
    path inside a zip); a source checkout that is not installed reads ``patterns/`` directly.
    Raises ``CatalogError`` when none is found: an empty catalog would report every failed job
    as "no failure".
    """
    root: Traversable | None = None
    try:
        root = resources.files("analyzer.patterns")
    except (ImportError, TypeError, ValueError):
        root = None
    found: list[Traversable] = []
    if root is not None:
        try:
            found = [f for f in root.iterdir() if f.name.endswith(".toml") and f.is_file()]
        except OSError as exc:
            raise CatalogError(
                f"the built-in pattern catalog cannot be listed ({exc}); "
                "reinstall mcore-diagnose (pip install --force-reinstall mcore-diagnose)"
            ) from None
    if root is None and _CHECKOUT_DIR.is_dir():
        found = [f for f in _CHECKOUT_DIR.iterdir() if f.name.endswith(".toml")]
    if not found:
        where = _plain(root) if root is not None else "the package analyzer.patterns"
        raise CatalogError(
            f"the built-in pattern catalog is empty: no *.toml file in {where}. The installation "
            "is broken; reinstall mcore-diagnose (pip install --force-reinstall mcore-diagnose)"
        )
    return sorted(found, key=lambda f: f.name)


def _plain(root: Traversable) -> str:
    """A resource directory as a plain path: a namespace package's ``MultiplexedPath('…')``
    as the directories it joins."""
    paths = getattr(root, "_paths", None)
    return ", ".join(str(p) for p in paths) if paths else str(root)


def builtin_dir() -> Path:
    """The directory of the built-in catalog when it lies on the file system.

    Prefer ``builtin_files()``, which also works when the package is imported from a zip.
    """
    first = builtin_files()[0]
    if isinstance(first, Path):
        return first.parent
    with resources.as_file(first) as real:  # a zip import: no directory to name
        return Path(real).parent


def _as_str_tuple(value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CatalogError(f"{what} must be a list of strings")
    return tuple(value)


_TABLE_NAMES = STRUCTURAL_NAMES | {"job"}
"""Names a capture may not take: the event table's structural columns, and ``job``, the column
a table of several jobs begins with (``mcore-diagnose events A B``)."""


def _parse_captures(raw: Any, groups: set[str], where: str) -> dict[str, Capture]:
    shadow = sorted(groups & _TABLE_NAMES)
    if shadow:
        raise CatalogError(
            f"{where}: capture {shadow[0]!r} shadows a structural column (it would be replaced "
            "by the attributed value); rename it, and give it a role if it names the subject"
        )
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise CatalogError(f"{where}: 'captures' must be a table of name = type or {{type, role}}")
    out = {g: Capture(g) for g in groups}
    for name, decl in raw.items():
        if name not in groups:
            raise CatalogError(f"{where}: captures declares {name!r}, which the regex lacks")
        if isinstance(decl, str):
            decl = {"type": decl}
        if not isinstance(decl, dict) or set(decl) - {"type", "role"}:
            raise CatalogError(f"{where}: capture {name!r} must be a type or {{type, role}}")
        kind = decl.get("type", "str")
        role = decl.get("role")
        if kind not in CAPTURE_TYPES:
            raise CatalogError(
                f"{where}: capture {name!r} has type {kind!r}; use one of "
                + ", ".join(CAPTURE_TYPES)
            )
        if role is not None and role not in CAPTURE_ROLES:
            raise CatalogError(
                f"{where}: capture {name!r} has role {role!r}; use one of "
                + ", ".join(CAPTURE_ROLES)
            )
        out[name] = Capture(name, kind, role)
    roles = [c.role for c in out.values() if c.role]
    if len(roles) != len(set(roles)):
        raise CatalogError(f"{where}: two captures declare the same role")
    _check_fields(out, where)
    return out


def _check_fields(captures: Mapping[str, Capture], where: str) -> None:
    """A capture named like a well-known field (``FIELDS``: code reads it by name) must have
    that field's type."""
    for c in captures.values():
        want = FIELDS[c.name][0] if c.name in FIELDS else None
        if want is not None and c.type != want:
            raise CatalogError(
                f"{where}: capture {c.name!r} is the well-known field {c.name!r} ("
                f"{FIELDS[c.name][1]}), which code reads as {want}; declare it "
                f'`{c.name} = "{want}"` in captures, or give the group another name'
            )


def _check_placeholders(
    raw: Mapping[str, Any], groups: set[str], where: str, also: frozenset[str] = frozenset()
) -> None:
    """Every ``{name}`` of cause and fix is a capture, a structural name or one of ``also``."""
    for key in ("cause", "fix"):
        try:
            parsed = list(string.Formatter().parse(raw[key]))
        except ValueError as exc:
            raise CatalogError(f"{where}: {key} is not a valid template: {exc}") from None
        for _lit, name, _spec, _conv in parsed:
            if name is None:
                continue
            if name not in groups and name not in PLACEHOLDER_NAMES and name not in also:
                raise CatalogError(
                    f"{where}: {key} uses {{{name}}}, which is neither a capture of the regex "
                    f"nor one of {', '.join(sorted(PLACEHOLDER_NAMES))}"
                )


def _check_keys(raw: Mapping[str, Any], origin: str) -> tuple[str, str]:
    """(id, where for messages) of a pattern table whose keys and required strings are
    right, its category and role known words."""
    pid = raw.get("id")
    if not isinstance(pid, str) or not pid:
        raise CatalogError(f"{origin}: a pattern has no id")
    where = f"{origin}: pattern {pid!r}"
    unknown = sorted(set(raw) - PATTERN_KEYS)
    if unknown:
        raise CatalogError(
            f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(PATTERN_KEYS))})"
        )
    for key in ("category", "role", "title", "regex", "cause", "fix"):
        if not isinstance(raw.get(key), str):
            raise CatalogError(f"{where}: missing or non-string '{key}'")
    if raw["category"] not in CATEGORIES:
        raise CatalogError(f"{where}: unknown category {raw['category']!r}")
    if raw["role"] not in ROLES:
        raise CatalogError(f"{where}: role must be one of {', '.join(ROLES)}")
    return pid, where


def _compile(raw: Mapping[str, Any], where: str, lazy: bool) -> tuple[regex.Pattern[str], set[str]]:
    """The pattern's regex and the names of its groups."""
    try:
        flags = regex.VERSION1 if raw.get("version1") else 0
        rx = lazy_regex(raw["regex"], flags) if lazy else regex.compile(raw["regex"], flags)
    except regex.error as exc:
        raise CatalogError(f"{where}: regex does not compile: {exc}") from None
    # A lazy regex (a catalog validated before) is not compiled for its group names.
    return rx, named_groups(raw["regex"]) if lazy else set(rx.groupindex)


def _parse_tags(raw: Mapping[str, Any], where: str, user: bool) -> frozenset[str]:
    tags = _as_str_tuple(raw.get("tags", []), f"{where}: tags")
    bad_tags = [t for t in tags if t not in TAGS and not (user and t.startswith("user-"))]
    if bad_tags:
        raise CatalogError(
            f"{where}: unknown tag {bad_tags[0]!r} (known: {', '.join(TAGS)}; user patterns may "
            "add their own as user-NAME)"
        )
    return frozenset(tags)


def _parse_examples(raw: Mapping[str, Any], groups: set[str], where: str) -> tuple[Example, ...]:
    examples = []
    for ex in raw.get("examples", []):
        if isinstance(ex, str):
            examples.append(Example(ex))
        elif (
            isinstance(ex, dict)
            and isinstance(ex.get("line"), str)
            and not set(ex) - {"line", "fields"}
        ):
            fields = {str(k): str(v) for k, v in dict(ex.get("fields", {})).items()}
            missing = sorted(set(fields) - groups)
            if missing:
                raise CatalogError(
                    f"{where}: an example expects field {missing[0]!r}, which is not a capture"
                )
            examples.append(Example(ex["line"], fields))
        else:
            raise CatalogError(f"{where}: an example must be a string or {{line=..., fields=...}}")
    return tuple(examples)


def _parse_pattern(
    raw: Mapping[str, Any], origin: str, user: bool, lazy: bool = False
) -> Pattern:
    pid, where = _check_keys(raw, origin)
    rx, groups = _compile(raw, where, lazy)
    captures = _parse_captures(raw.get("captures"), groups, where)
    tags = _parse_tags(raw, where, user)
    # The traceback's pattern describes an event the reader assembles: its cause and fix may
    # use the fields the reader gives it.
    _check_placeholders(
        raw, groups, where, TRACEBACK_FIELDS if TRACEBACK_TAG in tags else frozenset()
    )
    examples = _parse_examples(raw, groups, where)
    needles = _as_str_tuple(raw.get("needles", []), f"{where}: needles")
    if not needles or any(not n for n in needles):
        raise CatalogError(f"{where}: needs at least one non-empty needle")
    need = raw.get("need", "every")
    if need not in NEEDS:
        raise CatalogError(f"{where}: need {need!r} is not one of {', '.join(NEEDS)}")
    return Pattern(
        id=pid,
        category=raw["category"],
        role=raw["role"],
        title=raw["title"],
        needles=needles,
        regex=rx,
        cause=raw["cause"],
        fix=raw["fix"],
        versions=_as_str_tuple(raw.get("versions", []), f"{where}: versions"),
        source=str(raw.get("source", "")),
        examples=examples,
        counter_examples=_as_str_tuple(
            raw.get("counter_examples", []), f"{where}: counter_examples"
        ),
        origin=origin,
        user=user,
        tags=tags,
        captures=captures,
        need=need,
    )


def check_pattern(p: Pattern) -> list[str]:
    """Problems with one pattern's own examples (empty when it proves itself)."""
    problems: list[str] = []
    limit = USER_TIMEOUT_S * 4 if p.user else None
    try:
        _check_examples(p, problems, limit)
    except TimeoutError:
        problems.append(f"its regex ran longer than {limit}s on its own examples")
    return problems


def _check_examples(p: Pattern, problems: list[str], limit: float | None) -> None:
    if not p.examples:
        problems.append("has no examples")
    for ex in p.examples:
        msg = split_prefixes(ex.line).message
        if not any(n in ex.line for n in p.needles):
            problems.append(f"no needle occurs in example {ex.line[:80]!r}")
        m = p.regex.search(msg, timeout=limit)
        if not m:
            problems.append(f"does not match example {ex.line[:100]!r}")
            continue
        got = m.groupdict()
        for k, v in ex.fields.items():
            if got.get(k) != v:
                problems.append(f"example {ex.line[:60]!r}: field {k}={got.get(k)!r}, want {v!r}")
    for line in p.counter_examples:
        if p.regex.search(split_prefixes(line).message, timeout=limit):
            problems.append(f"matches counter-example {line[:100]!r}")


def _read_toml(path: Path | Traversable) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"{path}: cannot read pattern file: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{path}: invalid TOML: {exc}") from None


def _load_file(
    path: Path | Traversable, data: dict[str, Any], user: bool, lazy: bool
) -> list[Pattern]:
    """The patterns of one file, ``data`` being its parsed TOML."""
    extra = sorted(set(data) - {"pattern"})
    if extra:
        raise CatalogError(f"{path}: unknown top-level key {extra[0]!r} (only [[pattern]] tables)")
    raw_patterns = data.get("pattern", [])
    if not isinstance(raw_patterns, list):
        raise CatalogError(f"{path}: [[pattern]] tables expected")
    return [
        _parse_pattern(r, path.name if not user else str(path), user, lazy) for r in raw_patterns
    ]


def pattern_dirs_from_env() -> list[Path]:
    """Directories named by ``MCORE_DIAGNOSE_PATTERNS``."""
    value = os.environ.get(ENV_VAR, "")
    return [Path(p) for p in value.split(os.pathsep) if p]


def load_catalog(
    extra: Sequence[Path] = (), *, use_env: bool = True, validate: bool = True
) -> Catalog:
    """Load the built-in catalog, then user pattern files or directories (later ids win).

    With ``validate`` every pattern must pass its own examples, or ``CatalogError`` is raised.
    """
    files = _catalog_files(list(extra) + (pattern_dirs_from_env() if use_env else []))
    # A catalog that passed validation before compiles each regex on first use (start-up).
    key = digest(files) if validate else None
    lazy = key is not None and is_validated(key)
    # A remembered catalog keeps its files parsed (JSON reads faster than TOML parses).
    parsed = remembered_data(key) if lazy else None
    if parsed is None or len(parsed) != len(files):
        parsed = [_read_toml(path) for path, _user in files]
    patterns = _merge(files, parsed, lazy)
    if validate and not lazy:
        _validate_once(patterns, key, parsed)
    return Catalog(patterns, [str(f) for f, _ in files])


def _catalog_files(user_paths: list[Path]) -> list[tuple[Path | Traversable, bool]]:
    """(file, is a user file) of the built-in catalog, then of each user path in order."""
    files: list[tuple[Path | Traversable, bool]] = [(f, False) for f in builtin_files()]
    for up in user_paths:
        if up.is_dir():
            files.extend((f, True) for f in sorted(up.glob("*.toml")))
        elif up.is_file():
            files.append((up, True))
        else:
            raise CatalogError(f"{up}: no such pattern file or directory")
    return files


def _merge(
    files: list[tuple[Path | Traversable, bool]], parsed: list[dict[str, Any]], lazy: bool
) -> list[Pattern]:
    """Every file's patterns in order, a user pattern replacing the built-in one of its id."""
    ordered: dict[str, Pattern] = {}
    for (path, user), data in zip(files, parsed, strict=True):
        seen_here: set[str] = set()
        for p in _load_file(path, data, user, lazy):
            if p.id in seen_here:
                raise CatalogError(f"{path}: duplicate pattern id {p.id!r}")
            seen_here.add(p.id)
            if p.id in ordered and not user:
                raise CatalogError(f"{path}: pattern id {p.id!r} already defined")
            _check_replacement(path, ordered.get(p.id), p)
            ordered[p.id] = p
    patterns = list(ordered.values())
    # no built-in file at all (every pattern replaced by a user copy, as with ``-p`` naming a
    # copy of the catalog, is a choice, not a broken installation)
    if not any(not user for _path, user in files) or not patterns:
        raise CatalogError(
            "the built-in pattern catalog holds no pattern; reinstall mcore-diagnose "
            "(pip install --force-reinstall mcore-diagnose)"
        )
    tracebacks = [p.id for p in patterns if TRACEBACK_TAG in p.tags]
    if len(tracebacks) > 1:
        raise CatalogError(
            f"only one pattern may carry the tag {TRACEBACK_TAG!r} (the reader assembles its "
            f"event from a whole traceback); found {', '.join(tracebacks)}"
        )
    return patterns


def _check_replacement(path: Path | Traversable, old: Pattern | None, new: Pattern) -> None:
    """A user pattern that replaces the traceback's pattern keeps its tag (the reader needs
    one)."""
    if old is not None and TRACEBACK_TAG in old.tags and TRACEBACK_TAG not in new.tags:
        raise CatalogError(
            f"{path}: pattern {new.id!r} replaces the traceback's pattern and must keep its "
            f"tag {TRACEBACK_TAG!r}"
        )


def _validate_once(
    patterns: list[Pattern], key: str | None, parsed: list[dict[str, Any]] | None = None
) -> None:
    """Check every pattern against its examples and remember that this very catalog passed
    (``catalog_cache``: keyed by the files' content and the checking code)."""
    bad = [f"{p.origin}: {p.id}: {msg}" for p in patterns for msg in check_pattern(p)]
    if bad:
        raise CatalogError("invalid patterns:\n  " + "\n  ".join(bad))
    # A remembered catalog reads its capture names from the regex sources: remember only one
    # where that reading is exact.
    if all(named_groups(p.regex.pattern) == set(p.regex.groupindex) for p in patterns):
        mark_validated(key, parsed)


def cross_claims(catalog: Catalog) -> list[str]:
    """Examples claimed by another pattern of a different category in the same role."""
    out = []
    for p in catalog.patterns:
        for ex in p.examples:
            msg = split_prefixes(ex.line).message
            for pm in catalog.match_all(msg):
                q = pm.pattern
                if q.id != p.id and q.role == p.role and q.category != p.category:
                    out.append(f"{p.id}: example {ex.line[:70]!r} also matched by {q.id}")
    return out


def iter_examples(catalog: Catalog) -> Iterable[tuple[Pattern, str, bool]]:
    """(pattern, line, must_match) for every example and counter-example."""
    for p in catalog.patterns:
        for ex in p.examples:
            yield p, ex.line, True
        for line in p.counter_examples:
            yield p, line, False

"""Load, validate and apply the pattern catalog (``patterns/*.toml``)."""

from __future__ import annotations

import os
import string
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import regex

from analyzer.catalog_cache import digest, is_validated, lazy_regex, mark_validated
from analyzer.categories import CATEGORIES, ROLES
from analyzer.prefixes import split_prefixes

ENV_VAR = "MCORE_DIAGNOSE_PATTERNS"
USER_TIMEOUT_S = 0.25
"""Time limit for one search of a user-supplied regex."""
BUILTIN_TIMEOUT_S = 2.0
_ROLE_ORDER = {"root": 0, "symptom": 1, "context": 2}


class CatalogError(Exception):
    """A pattern file is invalid; the message says which file, which pattern and why."""


@dataclass(frozen=True)
class Example:
    """A line a pattern must match, and the fields it must capture."""

    line: str
    fields: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Pattern:
    """One failure signature."""

    id: str
    category: str
    role: str
    title: str
    needles: tuple[str, ...]
    regex: regex.Pattern[str]
    cause: str
    fix: str
    versions: tuple[str, ...]
    source: str
    examples: tuple[Example, ...]
    counter_examples: tuple[str, ...]
    origin: str
    user: bool = False
    disabled_reason: str | None = None

    def search(self, message: str) -> regex.Match[str] | None:
        """Search ``message``; a user pattern that runs out of time is disabled, not fatal."""
        if self.disabled_reason:
            return None
        try:
            return self.regex.search(
                message, timeout=USER_TIMEOUT_S if self.user else BUILTIN_TIMEOUT_S
            )
        except TimeoutError:
            self.disabled_reason = (
                f"regex took longer than {USER_TIMEOUT_S if self.user else BUILTIN_TIMEOUT_S}s "
                "on one line; pattern skipped for the rest of the run"
            )
            return None


@dataclass(frozen=True, slots=True)
class PatternMatch:
    """A pattern that matched a message, with what it captured."""

    pattern: Pattern
    fields: dict[str, str]


class _Blank(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"


def render(template: str, values: Mapping[str, Any]) -> str:
    """Fill ``{field}`` placeholders; unknown or empty fields render as ``?``."""
    clean = _Blank({k: v for k, v in values.items() if v is not None and v != ""})
    try:
        return string.Formatter().vformat(template, (), clean)
    except (ValueError, IndexError, KeyError, AttributeError):
        return template


@dataclass
class Catalog:
    """The loaded patterns, their needles, and where they came from."""

    patterns: list[Pattern]
    sources: list[str]

    def __post_init__(self) -> None:
        self.by_id = {p.id: p for p in self.patterns}
        needles: dict[str, list[int]] = {}
        for i, p in enumerate(self.patterns):
            for n in p.needles:
                needles.setdefault(n, []).append(i)
        self.needles: list[str] = list(needles)
        self.needle_patterns: list[list[int]] = [needles[n] for n in self.needles]

    def candidates(self, message: str) -> list[Pattern]:
        """Patterns with a needle in ``message``, in catalog order."""
        idx: set[int] = set()
        for n, pats in zip(self.needles, self.needle_patterns, strict=True):
            if n in message:
                idx.update(pats)
        return [self.patterns[i] for i in sorted(idx)]

    def match_all(self, message: str) -> list[PatternMatch]:
        """Every pattern that matches ``message`` (prefixes already stripped)."""
        out = []
        for p in self.candidates(message):
            m = p.search(message)
            if m:
                out.append(PatternMatch(p, {k: v for k, v in m.groupdict().items() if v}))
        return out

    def match(self, message: str) -> PatternMatch | None:
        """The one match kept for a line: root over symptom over context, then catalog order."""
        found = self.match_all(message)
        if not found:
            return None
        return min(found, key=lambda pm: _ROLE_ORDER[pm.pattern.role])


def builtin_dir() -> Path:
    """Where the built-in catalog lives (inside the installed package, or the checkout)."""
    try:
        p = Path(str(resources.files("analyzer.patterns")))
        if any(p.glob("*.toml")):
            return p
    except (ImportError, TypeError, OSError):
        pass
    return Path(__file__).resolve().parent.parent / "patterns"


def _as_str_tuple(value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CatalogError(f"{what} must be a list of strings")
    return tuple(value)


def _parse_pattern(raw: Mapping[str, Any], origin: str, user: bool, lazy: bool = False) -> Pattern:
    pid = raw.get("id")
    if not isinstance(pid, str) or not pid:
        raise CatalogError(f"{origin}: a pattern has no id")
    where = f"{origin}: pattern {pid!r}"
    for key in ("category", "role", "title", "regex", "cause", "fix"):
        if not isinstance(raw.get(key), str):
            raise CatalogError(f"{where}: missing or non-string '{key}'")
    if raw["category"] not in CATEGORIES:
        raise CatalogError(f"{where}: unknown category {raw['category']!r}")
    if raw["role"] not in ROLES:
        raise CatalogError(f"{where}: role must be one of {', '.join(ROLES)}")
    try:
        flags = regex.VERSION1 if raw.get("version1") else 0
        rx = lazy_regex(raw["regex"], flags) if lazy else regex.compile(raw["regex"], flags)
    except regex.error as exc:
        raise CatalogError(f"{where}: regex does not compile: {exc}") from None
    examples = []
    for ex in raw.get("examples", []):
        if isinstance(ex, str):
            examples.append(Example(ex))
        elif isinstance(ex, dict) and isinstance(ex.get("line"), str):
            fields = {str(k): str(v) for k, v in dict(ex.get("fields", {})).items()}
            examples.append(Example(ex["line"], fields))
        else:
            raise CatalogError(f"{where}: an example must be a string or {{line=..., fields=...}}")
    needles = _as_str_tuple(raw.get("needles", []), f"{where}: needles")
    if not needles or any(not n for n in needles):
        raise CatalogError(f"{where}: needs at least one non-empty needle")
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
        examples=tuple(examples),
        counter_examples=_as_str_tuple(
            raw.get("counter_examples", []), f"{where}: counter_examples"
        ),
        origin=origin,
        user=user,
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


def _load_file(path: Path, user: bool, lazy: bool = False) -> list[Pattern]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"{path}: cannot read pattern file: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{path}: invalid TOML: {exc}") from None
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
    builtin = builtin_dir()
    files: list[tuple[Path, bool]] = [(f, False) for f in sorted(builtin.glob("*.toml"))]
    user_paths = list(extra) + (pattern_dirs_from_env() if use_env else [])
    for up in user_paths:
        if up.is_dir():
            files.extend((f, True) for f in sorted(up.glob("*.toml")))
        elif up.is_file():
            files.append((up, True))
        else:
            raise CatalogError(f"{up}: no such pattern file or directory")
    # A catalog that passed validation before compiles each regex on first use (start-up).
    key = digest(files) if validate else None
    lazy = key is not None and is_validated(key)
    ordered: dict[str, Pattern] = {}
    for path, user in files:
        seen_here: set[str] = set()
        for p in _load_file(path, user, lazy):
            if p.id in seen_here:
                raise CatalogError(f"{path}: duplicate pattern id {p.id!r}")
            seen_here.add(p.id)
            if p.id in ordered and not user:
                raise CatalogError(f"{path}: pattern id {p.id!r} already defined")
            ordered[p.id] = p
    patterns = list(ordered.values())
    if validate and not lazy:
        _validate_once(patterns, key)
    return Catalog(patterns, [str(f) for f, _ in files])


def _validate_once(patterns: list[Pattern], key: str | None) -> None:
    """Check every pattern against its examples and remember that this very catalog passed
    (``catalog_cache``: keyed by the files' content and the checking code)."""
    bad = [f"{p.origin}: {p.id}: {msg}" for p in patterns for msg in check_pattern(p)]
    if bad:
        raise CatalogError("invalid patterns:\n  " + "\n  ".join(bad))
    mark_validated(key)


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

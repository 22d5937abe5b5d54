"""Load, validate and apply the pattern catalog (``patterns/*.toml``)."""

from __future__ import annotations

import os
import string
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import regex

from analyzer.catalog_cache import (
    digest,
    is_validated,
    lazy_regex,
    mark_validated,
    named_groups,
    remembered_data,
)
from analyzer.categories import (
    CAPTURE_ROLES,
    CAPTURE_TYPES,
    CATEGORIES,
    ROLES,
    STRUCTURAL_NAMES,
    TAGS,
)
from analyzer.prefixes import split_prefixes

ENV_VAR = "MCORE_DIAGNOSE_PATTERNS"
USER_TIMEOUT_S = 0.25
"""Time limit for one search of a user-supplied regex. Built-in patterns run without one:
the time limit costs about 3 us per search (most of a search), and the test suite proves
every built-in regex fast on adversarial lines of ``MAX_LINE_CHARS`` instead
(``tests/test_catalog.py::test_builtin_regexes_do_not_backtrack``)."""
_Match = regex.Match
"""(The ``regex`` field of ``Pattern`` hides the module inside the class.)"""
_ROLE_ORDER = {"root": 0, "symptom": 1, "context": 2, "candidate": 3}
"""A candidate loses to every other pattern on the same line."""


SPECIFIC, FALLBACK, CANDIDATE = 0, 1, 2
"""The tiers of ``tier``: a line is kept by the lowest tier that matches it."""


def tier(p: Pattern) -> int:
    """``CANDIDATE`` for a generic error form, ``FALLBACK`` for a catch-all, else ``SPECIFIC``."""
    return CANDIDATE if p.role == "candidate" else FALLBACK if "fallback" in p.tags else SPECIFIC


def match_priority(p: Pattern) -> tuple[int, int]:
    """Which pattern keeps a line when several match (lower wins, then catalog order): every
    specific pattern before a ``fallback`` catch-all, before a ``candidate``; then by role."""
    return (tier(p), _ROLE_ORDER[p.role])


PATTERN_KEYS: frozenset[str] = frozenset(
    {
        "id",
        "category",
        "role",
        "title",
        "needles",
        "regex",
        "version1",
        "cause",
        "fix",
        "versions",
        "source",
        "examples",
        "counter_examples",
        "tags",
        "captures",
    }
)
"""Every key a ``[[pattern]]`` table may have; any other key is an error (a typo would
otherwise drop a test silently)."""
PLACEHOLDER_NAMES: frozenset[str] = frozenset({"rank", "local_rank", "node", "host"})
"""Structural names a cause or fix may use besides the pattern's own captures."""
_SIZE_UNITS = {"": 1, "b": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_SIZE = regex.compile(r"(?i)^\s*([\d.]+)\s*([kmgt]?)(i?)b?\s*$")
_DURATION = regex.compile(r"(?i)^\s*([\d.]+)\s*(ms|s|sec|seconds?|min|minutes?|h|hours?)?\s*$")
_DURATION_S = {"ms": 0.001, "s": 1, "sec": 1, "min": 60, "h": 3600}


class CatalogError(Exception):
    """A pattern file is invalid; the message says which file, which pattern and why."""


@dataclass(frozen=True)
class Example:
    """A line a pattern must match, and the fields it must capture."""

    line: str
    fields: Mapping[str, str] = field(default_factory=dict)


def convert(kind: str, value: str | None) -> Any:
    """A captured string as its declared type (None when it does not parse)."""
    if value is None or kind == "str":
        return value
    try:
        if kind == "int":
            return int(value.strip())
        if kind == "float":
            return float(value.strip())
        if kind == "size":
            m = _SIZE.match(value)
            if not m:
                return None
            base = 1024 if m[3] else 1000
            mult = _SIZE_UNITS[m[2].lower()]
            power = {1: 0, 1e3: 1, 1e6: 2, 1e9: 3, 1e12: 4}[mult]
            return float(m[1]) * base**power
        if kind == "duration":
            m = _DURATION.match(value)
            if not m:
                return None
            unit = (m[2] or "s").lower()
            unit = "min" if unit.startswith("min") else unit
            unit = "h" if unit.startswith("h") else unit
            unit = "s" if unit.startswith("sec") else unit
            return float(m[1]) * _DURATION_S[unit]
    except ValueError:
        return None
    return value


@dataclass(frozen=True, slots=True)
class Capture:
    """A named group of a pattern's regex: its declared type and role."""

    name: str
    type: str = "str"
    role: str | None = None


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
    tags: frozenset[str] = frozenset()
    captures: Mapping[str, Capture] = field(default_factory=dict)

    def by_role(self, role: str) -> str | None:
        """The name of the capture that declares ``role`` (None if none does)."""
        for c in self.captures.values():
            if c.role == role:
                return c.name
        return None

    def fields(self, m: _Match[str]) -> dict[str, str]:
        """The named groups ``m`` captured, empty ones left out: ``m.groupdict()`` filtered,
        read through ``m.groups()`` (a tenth of the cost; a name used twice is one group)."""
        names: tuple[tuple[str, int], ...] | None = self.__dict__.get("_group_names")
        if names is None:
            names = self.__dict__["_group_names"] = tuple(
                (n, i - 1) for n, i in self.regex.groupindex.items()
            )
        g = m.groups()
        return {n: v for n, i in names if (v := g[i])}

    def search(self, message: str) -> _Match[str] | None:
        """Search ``message``; a user pattern that runs out of time is disabled, not fatal."""
        if not self.user:
            return self.regex.search(message)
        if self.disabled_reason:
            return None
        try:
            return self.regex.search(message, timeout=USER_TIMEOUT_S)
        except TimeoutError:
            self.disabled_reason = (
                f"regex took longer than {USER_TIMEOUT_S}s "
                "on one line; pattern skipped for the rest of the run"
            )
            return None


@dataclass(frozen=True, slots=True)
class PatternMatch:
    """A pattern that matched a message, with what it captured."""

    pattern: Pattern
    fields: dict[str, str]


_NOUNS = {"node": "the node", "host": "the host", "gpu": "the GPU", "hca": "the HCA",
          "port": "the port", "path": "the file"}
"""What an unknown field reads as where its clause cannot be left out ("Drain the node")."""


class _Blank(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"


def render(template: str, values: Mapping[str, Any]) -> str:
    """Fill ``{field}`` placeholders. A clause that only holds an unknown field is left out
    (``query groups ({value})``, ``, HCA {hca}``, ``on {node}``); an unknown node, host, GPU,
    HCA, port or path reads "the node" etc.; other unknown fields render as ``?`` (the
    reasoner rewords ``Rank ?`` as "a rank")."""
    clean = _Blank({k: v for k, v in values.items() if v is not None and v != ""})
    template = _drop_unknown_clauses(template, clean)
    try:
        return string.Formatter().vformat(template, (), clean)
    except (ValueError, IndexError, KeyError, AttributeError):
        return template


_PLACEHOLDER = regex.compile(r"\{(\w+)\}")


def _drop_unknown_clauses(template: str, known: Mapping[str, Any]) -> str:
    for name in dict.fromkeys(_PLACEHOLDER.findall(template)):
        if name in known:
            continue
        f = regex.escape("{" + name + "}")
        for rx in (
            rf" ?\({f}\)",  # "query groups ({value})"
            rf",\s*[A-Za-z][\w .-]{{0,24}}?\s*{f}(?=\s*[,;)])",  # "(..., HCA {hca})"
            rf"\s+(?:on|at|in|from|of|for|with|via)\s+{f}(?=[\s.,;:)]|$)",  # "Task 1 on {node}"
            rf"(?<=\}}) {f}",  # "status {status} {status_name}": a qualifier of a known value
        ):
            template, n = regex.subn(rx, "", template, count=1)
            if n:
                break
        else:
            noun = _NOUNS.get(name)
            # "Drain {node}" -> "Drain the node"; "lost node {node}" stays for the reasoner
            if noun:
                template = regex.sub(
                    rf"(?<!\b{regex.escape(noun.split()[-1])} ){f}", noun, template,
                    flags=regex.IGNORECASE,
                )
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

    def capture_types(self) -> dict[str, str]:
        """Declared type of every capture name in the catalog (``str`` when undeclared)."""
        out: dict[str, str] = {}
        for p in self.patterns:
            for c in p.captures.values():
                if out.get(c.name, "str") == "str":
                    out[c.name] = c.type
        return out

    def candidates(self, message: str) -> list[Pattern]:
        """Patterns with a needle in ``message``, in catalog order."""
        idx: set[int] = set()
        for n, pats in zip(self.needles, self.needle_patterns, strict=True):
            if n in message:
                idx.update(pats)
        return [self.patterns[i] for i in sorted(idx)]

    def match_all(self, message: str) -> list[PatternMatch]:
        """Every pattern that matches ``message`` (prefixes already stripped). A ``fallback``
        pattern is listed only when no specific pattern matches; a ``candidate`` is always
        listed (``match`` keeps it only when nothing else matches)."""
        out = []
        for p in self.candidates(message):
            m = p.search(message)
            if m:
                out.append(PatternMatch(p, p.fields(m)))
        if any(tier(pm.pattern) == SPECIFIC for pm in out):
            return [pm for pm in out if tier(pm.pattern) != FALLBACK]
        return out

    def match(self, message: str) -> PatternMatch | None:
        """The one match kept for a line: specific over ``fallback`` over ``candidate``, then
        root over symptom over context, then catalog order."""
        found = self.match_all(message)
        if not found:
            return None
        return min(found, key=lambda pm: match_priority(pm.pattern))


_CHECKOUT_DIR = Path(__file__).resolve().parent.parent / "patterns"


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
        where = str(root) if root is not None else "the package analyzer.patterns"
        raise CatalogError(
            f"the built-in pattern catalog is empty: no *.toml file in {where}. The installation "
            "is broken; reinstall mcore-diagnose (pip install --force-reinstall mcore-diagnose)"
        )
    return sorted(found, key=lambda f: f.name)


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


def _parse_captures(raw: Any, groups: set[str], where: str) -> dict[str, Capture]:
    shadow = sorted(groups & STRUCTURAL_NAMES)
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
    return out


def _check_placeholders(raw: Mapping[str, Any], groups: set[str], where: str) -> None:
    for key in ("cause", "fix"):
        try:
            parsed = list(string.Formatter().parse(raw[key]))
        except ValueError as exc:
            raise CatalogError(f"{where}: {key} is not a valid template: {exc}") from None
        for _lit, name, _spec, _conv in parsed:
            if name is None:
                continue
            if name not in groups and name not in PLACEHOLDER_NAMES:
                raise CatalogError(
                    f"{where}: {key} uses {{{name}}}, which is neither a capture of the regex "
                    f"nor one of {', '.join(sorted(PLACEHOLDER_NAMES))}"
                )


def _parse_pattern(
    raw: Mapping[str, Any], origin: str, user: bool, lazy: bool = False
) -> Pattern:
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
    try:
        flags = regex.VERSION1 if raw.get("version1") else 0
        rx = lazy_regex(raw["regex"], flags) if lazy else regex.compile(raw["regex"], flags)
    except regex.error as exc:
        raise CatalogError(f"{where}: regex does not compile: {exc}") from None
    # A lazy regex (a catalog validated before) is not compiled for its group names.
    groups = named_groups(raw["regex"]) if lazy else set(rx.groupindex)
    captures = _parse_captures(raw.get("captures"), groups, where)
    _check_placeholders(raw, groups, where)
    tags = _as_str_tuple(raw.get("tags", []), f"{where}: tags")
    bad_tags = [t for t in tags if t not in TAGS and not (user and t.startswith("user-"))]
    if bad_tags:
        raise CatalogError(
            f"{where}: unknown tag {bad_tags[0]!r} (known: {', '.join(TAGS)}; user patterns may "
            "add their own as user-NAME)"
        )
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
        tags=frozenset(tags),
        captures=captures,
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
    files: list[tuple[Path | Traversable, bool]] = [(f, False) for f in builtin_files()]
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
    # A remembered catalog keeps its files parsed (JSON reads faster than TOML parses).
    parsed = remembered_data(key) if lazy else None
    if parsed is None or len(parsed) != len(files):
        parsed = [_read_toml(path) for path, _user in files]
    ordered: dict[str, Pattern] = {}
    for (path, user), data in zip(files, parsed, strict=True):
        seen_here: set[str] = set()
        for p in _load_file(path, data, user, lazy):
            if p.id in seen_here:
                raise CatalogError(f"{path}: duplicate pattern id {p.id!r}")
            seen_here.add(p.id)
            if p.id in ordered and not user:
                raise CatalogError(f"{path}: pattern id {p.id!r} already defined")
            ordered[p.id] = p
    patterns = list(ordered.values())
    if not any(not p.user for p in patterns):
        raise CatalogError(
            "the built-in pattern catalog holds no pattern; reinstall mcore-diagnose "
            "(pip install --force-reinstall mcore-diagnose)"
        )
    if validate and not lazy:
        _validate_once(patterns, key, parsed)
    return Catalog(patterns, [str(f) for f, _ in files])


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

"""The pattern catalog's model: patterns, their captures and matches, and the loaded catalog."""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import regex

from analyzer.model.event import Role

ENV_VAR = "MCORE_DIAGNOSE_PATTERNS"
USER_TIMEOUT_S = 0.25
"""Time limit for one search of a user-supplied regex. Built-in patterns run without one:
the time limit costs about 3 us per search (most of a search), and the test suite proves
every built-in regex fast on adversarial lines of ``MAX_LINE_CHARS`` instead
(``tests/test_catalog.py::test_builtin_regexes_do_not_backtrack``)."""
_Match = regex.Match
"""(The ``regex`` field of ``Pattern`` hides the module inside the class.)"""
_ROLE_ORDER = {r.value: i for i, r in enumerate(Role)}
"""A candidate loses to every other pattern on the same line."""


SPECIFIC, FALLBACK, CANDIDATE = 0, 1, 2
"""The tiers of ``tier``: a line is kept by the lowest tier that matches it."""


def tier(p: Pattern) -> int:
    """``CANDIDATE`` for a generic error form, ``FALLBACK`` for a catch-all, else ``SPECIFIC``."""
    return CANDIDATE if p.role == Role.CANDIDATE else FALLBACK if "fallback" in p.tags else SPECIFIC


def match_priority(p: Pattern) -> tuple[int, int]:
    """Which pattern keeps a line when several match (lower wins, then catalog order): every
    specific pattern before a ``fallback`` catch-all, before a ``candidate``; then by role."""
    return (tier(p), _ROLE_ORDER[p.role])


NEEDS = ("every", "first")
"""Values of a pattern's ``need`` (``Pattern.need``)."""
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
        "need",
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
TRACEBACK_TAG = "uncatalogued"
"""The tag of the pattern whose event the reader assembles from a whole traceback that no
other pattern claims (``python.traceback``): it is never matched line by line, and at most one
pattern carries it (``Catalog.traceback``)."""
TRACEBACK_FIELDS: frozenset[str] = frozenset({"exc_type", "exc_msg", "frame"})
"""The fields the reader gives a traceback's event (the exception line's type and message, the
innermost frame): the cause and fix of the ``TRACEBACK_TAG`` pattern may use them."""
GENERIC_EXCEPTION_TAG = "generic-exception"
"""The tag of the catalog's catch-all for a Python exception line: inside a traceback the
reader drops its match, the traceback it assembles says more."""
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
    need: str = "every"
    """What the reader must keep of this pattern's lines in one file (``NEEDS``): ``every``
    line (bounded as ``read/fold.py`` says), or only the ``first`` line of each distinct set
    of captures per writer, the later ones counted in its ``repeats``."""

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

    @cached_property
    def _whole_needles(self) -> frozenset[str]:
        """The needles this pattern matches on their own."""
        return frozenset(n for n in self.needles if self.regex.search(n) is not None)

    def near(self, message: str) -> _Match[str] | None:
        """A near miss: ``message`` is cut before the end of a line this pattern matches (a
        version that prints fewer trailing clauses, a paste or wrap cut short), and what it
        holds reaches past one of the pattern's needles. The groups read so far are captured;
        the rest stay empty."""
        if self.disabled_reason:
            return None
        try:
            m = self.regex.search(
                message, partial=True, timeout=USER_TIMEOUT_S if self.user else None
            )
        except TimeoutError:
            return None
        if m is None or not m.partial:
            return None
        got = m.group()
        # past a needle, not merely up to its end: a message that ends with a needle ("…: No
        # such file or directory", a C library's strerror closing a complete message) holds
        # nothing of what the pattern adds to it (DALI's "Could not open file /data/train.rec:
        # No such file or directory" is no cut checkpoint path)
        held = [n for n in self.needles if 0 <= got.find(n) < len(got) - len(n)]
        if not held:
            return None
        # A needle that the pattern matches on its own, or what the line holds matching on its
        # own: the pattern refused the line for what else it holds (a lookaround, an anchor),
        # not because the line was cut.
        if self._whole_needles.intersection(held) or self.regex.search(got) is not None:
            return None
        return m

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


def fill_template(template: str, values: Mapping[str, Any]) -> str:
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
        self._traceback = [p for p in self.patterns if TRACEBACK_TAG in p.tags]
        needles: dict[str, list[int]] = {}
        for i, p in enumerate(self.patterns):
            if TRACEBACK_TAG in p.tags:
                continue  # assembled by the reader, never matched line by line
            for n in p.needles:
                needles.setdefault(n, []).append(i)
        self.needles: list[str] = list(needles)
        self.needle_patterns: list[list[int]] = [needles[n] for n in self.needles]

    @property
    def traceback(self) -> Pattern:
        """The pattern of a traceback that no other pattern claims (tag ``uncatalogued``,
        ``python.traceback``): the reader assembles its event from the whole traceback."""
        if len(self._traceback) != 1:
            raise CatalogError(
                f"the catalog needs one pattern tagged {TRACEBACK_TAG!r} (python.traceback in "
                f"patterns/python.toml); it has {len(self._traceback)}"
            )
        return self._traceback[0]

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

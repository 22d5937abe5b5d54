"""Rank claims: the ways a line says which rank it speaks for, or names another rank, declared
as data (``patterns/claims/ranks.toml``) with the lines each must read.

Three readers find them. A *prefix* claim is peeled off the line by
:mod:`analyzer.lines.prefixes` (compiled, on every line); a *capture* claim is a catalog
pattern's capture with a role or field (every pattern that declares it makes that claim); a
*message* claim is a regex over the message of a line that became an event and got no rank
from a prefix or a capture: a new way of naming a rank is one entry in the file, with its
examples, and no new code. Attribution takes a message claim's rank; its strength says how far
that rank is the global one (``assumed``: the report says so).
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import regex

from analyzer.catalog.load import CatalogError

_CHECKOUT = Path(__file__).resolve().parents[2] / "patterns" / "claims" / "ranks.toml"


class ClaimKind(StrEnum):
    """What kind of statement about a rank a claim is."""

    OWN_PREFIX = "own-prefix"
    LAUNCHER_RECORD = "launcher-record"
    FRAMEWORK_COLUMN = "framework-column"
    ACTOR_REPR = "actor-repr"
    NAMES_ITSELF = "names-itself"
    NAMES_CULPRIT = "names-culprit"
    PEER_ACCUSATION = "peer-accusation"
    PID_MAP = "pid-map"
    OWN_FILE = "own-file"


class Strength(StrEnum):
    """How far a claimed rank is the global rank of the culprit."""

    CERTAIN = "certain"
    ASSUMED = "assumed"
    CULPRIT = "culprit"


class Reader(StrEnum):
    """Which stage finds a claim."""

    PREFIX = "prefix"
    MESSAGE = "message"
    CAPTURE = "capture"
    PATH = "path"


@dataclass(frozen=True, slots=True)
class Example:
    """A real line and the value the claim must read from it."""

    line: str
    value: int


@dataclass(frozen=True)
class RankClaim:
    """One declared way of naming a rank."""

    id: str
    kind: ClaimKind
    strength: Strength
    reader: Reader
    refs: tuple[str, ...] = ()
    narrow: str = ""
    gives: str = ""
    """A prefix claim: the ``Prefixed`` field it fills (``rank``, ``local_rank``, ``task``)."""
    role: str = ""
    """A capture claim: the capture role (``global_rank``, ``pid`` …)."""
    field: str = ""
    """A capture claim: the capture field (``lagging_ranks`` …)."""
    regex: regex.Pattern[str] | None = None
    """A message claim: its regex (a ``rank`` group)."""
    needle: str = ""
    """A message claim: a fixed string every line it reads holds (tried first)."""
    examples: tuple[Example, ...] = ()
    counter: tuple[str, ...] = ()
    """Lines the claim must not read a rank from."""
    alone: bool = False
    """A path claim whose name is specific enough to be read on its own, not only as one of a
    set of per-rank files."""
    names_log: bool = False
    """A path claim whose names are log files whatever their suffix (PaddlePaddle's
    ``workerlog.N``, detectron2's ``log.txt.rankN``): discovery reads them."""
    base: int | None = None
    """A path claim with a ``base`` group: the rank of the file named by that group alone (the
    name without its rank part: detectron2's ``log.txt`` beside ``log.txt.rank1``)."""

    def read(self, message: str) -> int | None:
        """The rank a message claim reads from ``message`` (None: no claim)."""
        if self.regex is None:
            return None
        m = self.regex.search(message)
        return int(m["rank"]) if m else None


@dataclass(frozen=True)
class MessageClaims:
    """The message claims, tried in declaration order on an event's message."""

    claims: tuple[RankClaim, ...]
    needles: tuple[str, ...]
    """A fixed string each claim's line must hold (its regex's literal start), so that a
    message without any of them costs a few substring tests."""

    def rank_of(self, message: str) -> tuple[int, RankClaim] | None:
        """The first claim's rank in ``message`` and the claim, or None."""
        if not any(n in message for n in self.needles):
            return None
        for c in self.claims:
            r = c.read(message)
            if r is not None:
                return r, c
        return None


def _claim(raw: dict[str, Any]) -> RankClaim:
    where = f"rank claim {raw.get('id', '?')!r} ({_CHECKOUT.name})"
    try:
        examples = raw.get("examples", ())
        c = RankClaim(
            id=str(raw["id"]),
            kind=ClaimKind(raw["kind"]),
            strength=Strength(raw["strength"]),
            reader=Reader(raw["reader"]),
            refs=tuple(raw.get("refs", ())),
            narrow=str(raw.get("narrow", "")),
            gives=str(raw.get("gives", "")),
            role=str(raw.get("role", "")),
            field=str(raw.get("field", "")),
            regex=regex.compile(raw["regex"]) if "regex" in raw else None,
            needle=str(raw.get("needle", "")),
            examples=tuple(Example(str(e["line"]), int(e["value"])) for e in examples),
            counter=tuple(str(x) for x in raw.get("not", ())),
            alone=bool(raw.get("alone", False)),
            names_log=bool(raw.get("names_log", False)),
            base=int(raw["base"]) if "base" in raw else None,
        )
    except (KeyError, ValueError, TypeError, regex.error) as exc:
        raise CatalogError(f"{where}: {exc}") from None
    problem = _problem(c)
    if problem:
        raise CatalogError(f"{where}: {problem}")
    return c


def _problem(c: RankClaim) -> str | None:
    """What is wrong with a declared claim, or None."""
    if c.reader == Reader.CAPTURE:
        return None if c.role or c.field else "a capture claim names a `role` or a `field`"
    if len(c.refs) < 2 and not c.narrow:
        return "cite two projects in `refs`, or say in `narrow` why one is enough"
    if c.reader == Reader.PATH:
        if c.regex is None or "rank" not in c.regex.groupindex:
            return "a path claim needs a `regex` with a `rank` group"
        if c.gives not in ("rank", "local_rank"):
            return "a path claim `gives` rank or local_rank"
    elif c.reader != Reader.MESSAGE:
        return None
    elif c.regex is None or "rank" not in c.regex.groupindex or not c.needle:
        return "a message claim needs a `needle` and a `regex` with a `rank` group"
    for e in c.examples:
        if c.read(e.line) != e.value or (c.needle or "") not in e.line:
            return f"example does not read {e.value}: {e.line!r}"
    for line in c.counter:
        if c.read(line) is not None:
            return f"reads a rank from a `not` line: {line!r}"
    return None


def _text() -> str:
    try:
        return resources.files("analyzer.patterns").joinpath("claims/ranks.toml").read_text(
            encoding="utf-8"
        )
    except (ImportError, OSError, TypeError, ValueError):
        return _CHECKOUT.read_text(encoding="utf-8")


@cache
def rank_claims() -> tuple[RankClaim, ...]:
    """Every declared rank claim, in file order (validated: each message claim reads its
    examples and none of its ``not`` lines)."""
    try:
        data = tomllib.loads(_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(
            f"the rank claims cannot be read ({exc}); reinstall mcore-diagnose"
        ) from None
    return tuple(_claim(raw) for raw in data.get("claim", ()))


@cache
def message_claims(claims: Sequence[RankClaim] | None = None) -> MessageClaims:
    """The message claims of ``claims`` (the declared ones by default)."""
    chosen = tuple(c for c in (claims or rank_claims()) if c.reader == Reader.MESSAGE)
    return MessageClaims(chosen, tuple(sorted({c.needle for c in chosen})))


@cache
def path_claims() -> tuple[RankClaim, ...]:
    """The claims read from a log file's name (``reader = "path"``), in file order."""
    return tuple(c for c in rank_claims() if c.reader == Reader.PATH)


@cache
def log_name_claims() -> tuple[regex.Pattern[str], ...]:
    """The regexes of the path claims whose names are log files (``names_log``)."""
    return tuple(c.regex for c in path_claims() if c.names_log and c.regex is not None)

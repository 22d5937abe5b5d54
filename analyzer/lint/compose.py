"""One corrected line for several findings on the same script line.

Each finding's fix is the line corrected for its own mistake only, so a line with four mistakes
gets four fixes, each keeping the other three. :func:`compose` applies every fix that rewrites
the line to that line, in the order of the rule registry (:data:`~analyzer.lint.rules.RULES`):
each fix's changes (its difference from the original line, word by word) go on top of the
previous ones. Two fixes that change the same words conflict: the first is kept, and both are
reported. A fix that is not a corrected version of the line (a line to add elsewhere, a
template) stays apart, listed in ``separate``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from analyzer.lint.rules import RULE_IDS, Finding

_TOKEN = re.compile(r"\s+|[='\"]|[^\s='\"]+")
_NOTE = re.compile(r"\s{3}#\s.*$")
_SIMILAR = 0.6
"""How much of the line a fix must keep to count as a corrected version of it."""


@dataclass(frozen=True)
class Composed:
    """The one corrected line for the findings on one script line."""

    file: str
    line: int
    rules: tuple[str, ...]
    """The rules whose fixes the line applies, in the order applied."""
    fix: str
    """The line with all those fixes applied."""
    conflicts: tuple[tuple[tuple[str, str], tuple[str, str]], ...] = ()
    """``((kept rule, other rule), (kept fix, other fix))``: two fixes that change the same
    words; the other's fix is not in :attr:`fix`."""
    separate: tuple[str, ...] = ()
    """Rules on this line whose fix is not a corrected version of it (shown on their own)."""

    def as_dict(self) -> dict[str, object]:
        """The JSON form."""
        return {"file": self.file, "line": self.line, "rules": list(self.rules),
                "fix": self.fix,
                "conflicts": [{"rules": list(r), "fixes": list(f)} for r, f in self.conflicts],
                "separate": list(self.separate)}


@dataclass(frozen=True)
class _Edit:
    """Tokens ``start:end`` of the original line replaced by ``new``."""

    start: int
    end: int
    new: tuple[str, ...]

    def clashes(self, other: _Edit) -> bool:
        if (self.start, self.end, self.new) == (other.start, other.end, other.new):
            return False  # the same change twice
        if self.start == self.end and other.start == other.end:  # two insertions
            return self.start == other.start  # at one place: which goes first is unknown
        return self.start < other.end and other.start < self.end  # overlap (or inside)


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _split_note(fix: str, original: str) -> tuple[str, str]:
    """``fix`` without a trailing ``   # note`` the original line does not have, and the note."""
    m = _NOTE.search(fix)
    if m is None or m.group(0).strip() in original:
        return fix, ""
    return fix[: m.start()], m.group(0).strip()


def _edits(original: list[str], fix: str) -> list[_Edit] | None:
    """The changes that turn ``original`` into ``fix``; None when ``fix`` is not a corrected
    version of the line (it keeps too little of it)."""
    new = _tokens(fix)
    sm = SequenceMatcher(None, original, new, autojunk=False)
    if sm.ratio() < _SIMILAR:
        return None
    return [_Edit(i1, i2, tuple(new[j1:j2]))
            for op, i1, i2, j1, j2 in sm.get_opcodes() if op != "equal"]


def _apply(original: list[str], edits: list[_Edit]) -> str:
    out: list[str] = []
    pos = 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        out += original[pos : e.start]
        out += e.new
        pos = max(pos, e.end)
    out += original[pos:]
    return "".join(out).strip()


def _compose_line(line: str, found: list[Finding]) -> Composed | None:
    """The composed fix for ``found`` (all on ``line``), None unless two of them rewrite it."""
    original = _tokens(line.strip())
    kept: list[tuple[Finding, list[_Edit]]] = []
    conflicts: list[tuple[tuple[str, str], tuple[str, str]]] = []
    separate: list[str] = []
    notes: list[str] = []
    for f in found:
        body, note = _split_note(f.fix, line)
        edits = _edits(original, body.strip()) if body.strip() != line.strip() else None
        if not edits:
            separate.append(f.rule)
            continue
        clash = next((k for k, ke in kept if any(e.clashes(o) for e in edits for o in ke)), None)
        if clash is not None:
            conflicts.append(((clash.rule, f.rule), (clash.fix, f.fix)))
            continue
        kept.append((f, edits))
        if note and note not in notes:
            notes.append(note)
    if len(kept) < 2:
        return None
    fix = _apply(original, [e for _, es in kept for e in es])
    return Composed(found[0].file, found[0].line, tuple(f.rule for f, _ in kept),
                    fix + "".join("   " + n for n in notes), tuple(conflicts), tuple(separate))


def _rule_order(f: Finding) -> int:
    return RULE_IDS.index(f.rule) if f.rule in RULE_IDS else len(RULE_IDS)


def compose(found: Sequence[Finding], lines: Sequence[str]) -> list[Composed]:
    """One :class:`Composed` line for each script line (of ``lines``, the script's text) that
    two or more findings rewrite, in line order. ``found`` are one script's findings."""
    by_line: dict[int, list[Finding]] = {}
    for f in found:
        by_line.setdefault(f.line, []).append(f)
    out: list[Composed] = []
    for n in sorted(by_line):
        group = sorted(by_line[n], key=_rule_order)
        if len(group) < 2 or not 1 <= n <= len(lines):
            continue
        c = _compose_line(lines[n - 1], group)
        if c is not None:
            out.append(c)
    return out

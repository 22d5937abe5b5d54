"""Split script text into commands of shell words, the way bash reads them.

Quotes, ``$(...)``, ``${...}``, backticks, backslash continuations, quoted strings over several
lines and arrays ``NAME=( ... )`` are kept whole; every word and command keeps the physical line
it starts on. ``then``/``do``/``fi``/... are dropped and each command records how deeply it sits
in ``if``/``for``/``while``/``case`` bodies. Nothing is expanded here (see
:mod:`analyzer.lint.expand`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SEPARATORS = (";;", "&&", "||", ";", "|", "&")
_OPEN_KEYWORDS = {"if", "while", "until", "for", "case", "select"}
_CLOSE_KEYWORDS = {"fi", "done", "esac"}
_LEAD_KEYWORDS = {"then", "do", "else", "elif", "{", "}", "!"}
_WORD_END = " \t\n;&|)"
_PLAIN_END = " \t\n;&|()\\'\"$`"
_DOLLAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])?")
_ARRAY_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


@dataclass
class Word:
    """One shell word as written: its parts (kind, text) and the physical line it starts on."""

    parts: list[tuple[str, str]]  # kind: "u" unquoted, "s" single-quoted, "d" double-quoted
    line: int
    array: list[Word] | None = None  # NAME=( ... )

    @property
    def raw(self) -> str:
        """The word's literal text with quotes removed and nothing expanded."""
        return "".join(t for _, t in self.parts)

    @property
    def single_quoted(self) -> bool:
        """True when the whole word is one single-quoted string."""
        return len(self.parts) == 1 and self.parts[0][0] == "s"


@dataclass
class Command:
    """One simple command: its words, first and last physical line, nesting and condition."""

    words: list[Word]
    line: int
    end_line: int
    depth: int = 0  # inside if/for/while/case bodies
    conditional: bool = False  # after && or || (e.g. ``[[ ... ]] && export X=1``)


def skip_balanced(text: str, i: int, open_: str, close: str) -> int:
    """Index after the ``close`` matching the ``open_`` just before ``i`` (quotes respected)."""
    depth = 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and open_ == "(":
            j = text.find("'", i + 1)
            i = n if j < 0 else j + 1
            continue
        if c == '"':
            i = skip_dquote(text, i + 1)
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def skip_dquote(text: str, i: int) -> int:
    """Index after the closing double quote of a string whose body starts at ``i``."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            return i + 1
        if text.startswith("$(", i):
            i = skip_balanced(text, i + 2, "(", ")")
            continue
        if c == "`":
            j = text.find("`", i + 1)
            i = n if j < 0 else j + 1
            continue
        i += 1
    return n


_READERS: dict[str, str] = {
    "\\": "_backslash",
    "'": "_single_quoted",
    '"': "_double_quoted",
    "`": "_backquoted",
    "(": "_array",
    "$": "_dollar",
}
"""The method that reads a word part starting with each special character."""


class _Lexer:
    """Splits script text into commands of words, tracking physical line numbers."""

    def __init__(self, text: str, first_line: int = 1) -> None:
        self.text = text
        self.i = 0
        self.line = first_line
        self.commands: list[Command] = []

    def _advance_to(self, j: int) -> str:
        chunk = self.text[self.i : j]
        self.line += chunk.count("\n")
        self.i = j
        return chunk

    def _take(self, w: Word, kind: str, part: str, j: int) -> bool:
        """Add ``part`` to ``w`` and move to ``j``."""
        w.parts.append((kind, part))
        self._advance_to(j)
        return True

    # --- word parts: each reads one part at the current position ------------------------

    def _backslash(self, w: Word) -> bool:
        """A line continuation (dropped) or one escaped character."""
        t = self.text
        if t.startswith("\\\n", self.i):
            self._advance_to(self.i + 2)
            if not w.parts:
                w.line = self.line
            return True
        return self._take(w, "u", t[self.i + 1 : self.i + 2], self.i + 2)

    def _single_quoted(self, w: Word) -> bool:
        """``'...'``: taken literally."""
        t, n = self.text, len(self.text)
        j = t.find("'", self.i + 1)
        j = n if j < 0 else j
        return self._take(w, "s", t[self.i + 1 : j], min(n, j + 1))

    def _double_quoted(self, w: Word) -> bool:
        """``"..."``: its body, expanded later."""
        t, n = self.text, len(self.text)
        j = skip_dquote(t, self.i + 1)
        body = t[self.i + 1 : j - 1 if j <= n and t[j - 1 : j] == '"' else j]
        return self._take(w, "d", body, j)

    def _command_substitution(self, w: Word) -> bool:
        """``$(...)``, kept whole."""
        j = skip_balanced(self.text, self.i + 2, "(", ")")
        return self._take(w, "u", self.text[self.i : j], j)

    def _braced_parameter(self, w: Word) -> bool:
        """``${...}``, kept whole."""
        j = skip_balanced(self.text, self.i + 2, "{", "}")
        return self._take(w, "u", self.text[self.i : j], j)

    def _backquoted(self, w: Word) -> bool:
        """```...```, kept whole."""
        t, n = self.text, len(self.text)
        j = t.find("`", self.i + 1)
        j = n if j < 0 else j + 1
        return self._take(w, "u", t[self.i : j], j)

    def _array(self, w: Word) -> bool:
        """``( ... )`` after ``NAME=``: the array's words; anywhere else it ends the word."""
        if not (w.parts and w.parts[-1][0] == "u" and _ARRAY_ASSIGN.fullmatch(w.raw)):
            return False
        t = self.text
        j = skip_balanced(t, self.i + 1, "(", ")")
        inner = _Lexer(t[self.i + 1 : j - 1], self.line)
        self._advance_to(j)
        w.array = [x for cmd in inner.run() for x in cmd.words]
        return True

    def _dollar(self, w: Word) -> bool:
        """``$(...)``, ``${...}`` or ``$NAME``."""
        if self.text.startswith("$(", self.i):
            return self._command_substitution(w)
        if self.text.startswith("${", self.i):
            return self._braced_parameter(w)
        return self._parameter(w)

    def _parameter(self, w: Word) -> bool:
        """``$NAME``, ``$1``, ``$@``, ... (or a lone ``$``)."""
        m = _DOLLAR.match(self.text, self.i)
        j = m.end() if m else self.i + 1
        return self._take(w, "u", self.text[self.i : j], j)

    def _plain(self, w: Word) -> bool:
        """Unquoted text up to the next special character."""
        t, n = self.text, len(self.text)
        j = self.i
        while j < n and t[j] not in _PLAIN_END:
            j += 1
        if j == self.i:  # a lone '$'
            j += 1
        return self._take(w, "u", t[self.i : j], j)

    def _word_part(self, w: Word) -> bool:
        """Read the next part of ``w``; False when the word ends at the current position."""
        c = self.text[self.i]
        if c in _WORD_END:
            return False
        # The reader of each character that starts a special word part, by name: a table of
        # bound methods on the instance would be a reference cycle (tests/test_gcpause.py).
        return bool(getattr(self, _READERS.get(c, "_plain"))(w))

    def word(self) -> Word:
        """Read one word starting at the current position."""
        w = Word([], self.line)
        while self.i < len(self.text) and self._word_part(w):
            pass
        return w

    def run(self) -> list[Command]:
        """Tokenise the whole text."""
        t = self.text
        n = len(t)
        words: list[Word] = []
        start = self.line
        conditional = False
        next_conditional = False

        def flush(op: str) -> None:
            nonlocal words, conditional, next_conditional
            if words:
                self.commands.append(Command(words, start, self.line, 0, conditional))
            words = []
            conditional = next_conditional = op in ("&&", "||")

        while self.i < n:
            c = t[self.i]
            if c in " \t":
                self.i += 1
                continue
            if t.startswith("\\\n", self.i):
                self._advance_to(self.i + 2)
                continue
            if c == "\n":
                flush("\n")
                self._advance_to(self.i + 1)
                continue
            if c == "#" and (not words or t[self.i - 1] in " \t"):
                j = t.find("\n", self.i)
                self._advance_to(n if j < 0 else j)
                continue
            op = next((s for s in _SEPARATORS if t.startswith(s, self.i)), None)
            if op is not None:
                flush(op)
                self._advance_to(self.i + len(op))
                continue
            if c in "()":
                self._advance_to(self.i + 1)
                continue
            if not words:
                start = self.line
                conditional = next_conditional
            before = self.i
            w = self.word()
            if self.i == before:  # nothing consumed: skip the character
                self._advance_to(self.i + 1)
                continue
            words.append(w)
        flush("\n")
        return self.commands


def _mark_depth(commands: list[Command]) -> list[Command]:
    """Strip ``then``/``do``/... keywords and record how deeply each command is nested."""
    depth = 0
    out: list[Command] = []
    for cmd in commands:
        words = list(cmd.words)
        while words and words[0].raw in _LEAD_KEYWORDS and words[0].parts[0][0] == "u":
            words.pop(0)
        if not words:
            continue
        head = words[0].raw
        if head in _CLOSE_KEYWORDS:
            depth = max(0, depth - 1)
            continue
        cmd.words = words
        cmd.depth = depth
        if head in _OPEN_KEYWORDS:
            depth += 1
            if head in ("for", "select", "case"):
                continue
            cmd.words = words[1:]
            cmd.conditional = True
            if not cmd.words:
                continue
        if len(words) >= 2 and words[-1].raw == "{" and words[0].raw.endswith("()"):
            depth += 1
            continue
        out.append(cmd)
    return out


def tokenize(text: str, first_line: int = 1) -> list[Command]:
    """The commands of ``text`` (a script or a ``bash -c`` body)."""
    return _mark_depth(_Lexer(text, first_line).run())

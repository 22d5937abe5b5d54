"""Expand shell words the way bash would, far enough to follow the script's variables.

:class:`Env` follows assignments in order so that ``$VAR`` and ``${VAR}`` expand to what the
script set earlier, evaluates plain ``$((...))`` arithmetic, and keeps variables SLURM or the login
environment set at run time (``$SLURM_NNODES``, ``$TMPDIR``, ...) and ``$(...)`` symbolic.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace

from analyzer.lint.lexer import Word, skip_balanced

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_PARAM = re.compile(
    r"\$(?:\{(?P<b>[#!]?[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!])(?P<idx>\[[@*0-9]\])?"
    r"(?P<op>:?[-=+?])?(?P<rest>[^}]*)\}|(?P<n>[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!]))"
)
_ARITH = re.compile(r"^\$\(\((.*)\)\)$", re.S)
_ARITH_NAME = re.compile(r"\$?\{?([A-Za-z_]\w*)\}?")
_DQUOTE_ESCAPED = "$`\"\\\n"
_SPECIAL = re.compile(r"\$")
_QUOTED_SPECIAL = re.compile(r"[$\\]")  # in double quotes a backslash may quote the next one
RUNTIME_VARS = re.compile(
    r"^(SLURM_\w+|SLURMD_\w+|TMPDIR|HOME|USER|LOGNAME|PWD|OLDPWD|HOSTNAME|PATH|"
    r"CUDA_VISIBLE_DEVICES|\d+|[@*#?$!])$"
)
"""Variables whose value only exists when the job runs: they stay symbolic (``$NAME``)."""


@dataclass(frozen=True)
class Field:
    """One word after expansion, with the line its text came from."""

    value: str
    line: int
    symbolic: bool = False  # holds a value only known at run time ($SLURM_*, $(...))
    at: int = 0  # the line the word is written on (``line`` is where a $VAR's value came from)


@dataclass
class Var:
    """A variable as the script set it."""

    name: str
    fields: list[Field]
    line: int
    exported: bool = False
    conditional: bool = False
    array: bool = False

    @property
    def value(self) -> str:
        """The value as one string (array elements joined by spaces)."""
        return " ".join(f.value for f in self.fields)


_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
        ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
        ast.Div: lambda a, b: a // b, ast.Mod: lambda a, b: a % b}


def _calc(expr: str) -> int | None:
    """Integer value of a shell arithmetic body made of numbers and + - * / %, else None."""
    try:
        tree = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError:
        return None

    def ev(node: ast.expr) -> int | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            a, b = ev(node.left), ev(node.right)
            if a is None or b is None or (b == 0 and type(node.op) in (
                    ast.FloorDiv, ast.Div, ast.Mod)):
                return None
            return _OPS[type(node.op)](a, b)
        return None

    return ev(tree)


def _arith_end(text: str, i: int) -> int:
    """Index after the ``$((...))`` that starts at ``i``."""
    j = skip_balanced(text, i + 3, "(", ")")
    if j < len(text) and text[j] == ")":
        j += 1
    return j


def _plain_end(text: str, i: int, quoted: bool) -> int:
    """Index of the next character from ``i`` on that may start an expansion (or an escape)."""
    m = (_QUOTED_SPECIAL if quoted else _SPECIAL).search(text, i)
    return m.start() if m else len(text)


class _Fields:
    """The fields an expansion has produced so far, and the one being built."""

    def __init__(self, line: int) -> None:
        self.line = line  # the line of the text being expanded
        self.done: list[Field] = []
        self.cur = ""
        self.cur_line = line
        self.cur_sym = False
        self.started = False

    def literal(self, text: str) -> None:
        """Append text written in place."""
        self.cur += text
        self.cur_line = self.line
        self.started = True

    def value(self, text: str, symbolic: bool) -> None:
        """Append the value of a substitution (no word splitting)."""
        self.cur += text
        self.cur_sym = self.cur_sym or symbolic
        self.started = True

    def parameter(self, fields: list[Field], quoted: bool) -> None:
        """Append a parameter's fields; unquoted, they split on whitespace."""
        pieces: list[Field] = []
        for f in fields:
            if quoted:
                pieces.append(f)
            else:
                pieces += [Field(p, f.line, f.symbolic) for p in f.value.split()]
        if not pieces:
            return
        if len(fields) == 1 and fields[0].line != self.line and not self.cur:
            self.cur_line = fields[0].line
        first, *more = pieces
        self.value(first.value, first.symbolic)
        for p in more:
            self.done.append(Field(self.cur, self.cur_line, self.cur_sym))
            self.cur, self.cur_line, self.cur_sym = p.value, p.line, p.symbolic

    def finish(self) -> list[Field]:
        """All the fields, the last one included when anything was written."""
        if self.started or self.cur:
            self.done.append(Field(self.cur, self.cur_line, self.cur_sym))
        return self.done


class Env:
    """The variables the script has set so far."""

    def __init__(self) -> None:
        self.vars: dict[str, Var] = {}
        self.allexport = False  # ``set -a``: every assignment is exported

    def get(self, name: str) -> Var | None:
        """The variable ``name`` or None."""
        return self.vars.get(name)

    def _param(self, m: re.Match[str], line: int) -> list[Field] | None:
        name = m.group("b") or m.group("n")
        op = m.group("op")
        rest = m.group("rest") or ""
        if name.startswith(("#", "!")):
            return [Field(m.group(0), line, True)]
        var = self.vars.get(name)
        if var is None:
            if RUNTIME_VARS.match(name) or op is None or op.lstrip(":") in "+?":
                return [Field(f"${name}", line, True)]
            return self.expand_text(rest, line, quoted=True) or [Field("", line)]
        if op and op.lstrip(":") == "+":
            return self.expand_text(rest, line, quoted=True)
        if var.array:
            return _element(var, name, m.group("idx"), line)
        return [Field(var.value, var.line, any(f.symbolic for f in var.fields))]

    def _arith(self, text: str, line: int) -> Field:
        m = _ARITH.match(text)
        if m is None:
            return Field(text, line, True)
        body = _ARITH_NAME.sub(lambda k: self._num(k.group(1)), m.group(1))
        value = _calc(body)
        return Field(str(value), line) if value is not None else Field(text, line, True)

    def _num(self, name: str) -> str:
        var = self.vars.get(name)
        if var is not None and var.value.strip().isdigit():
            return var.value.strip()
        return f"${name}"

    def _expand_at(self, text: str, i: int, quoted: bool, acc: _Fields) -> int:
        """Expand the piece of ``text`` that starts at ``i`` into ``acc``; the index after it."""
        if quoted and text[i] == "\\" and i + 1 < len(text) and text[i + 1] in _DQUOTE_ESCAPED:
            # inside double quotes a backslash quotes $ ` " \ and joins lines
            if text[i + 1] != "\n":
                acc.literal(text[i + 1])
            return i + 2
        if text.startswith("$((", i):
            j = _arith_end(text, i)
            f = self._arith(text[i:j], acc.line)
            acc.value(f.value, f.symbolic)
            return j
        if text.startswith("$(", i):
            j = skip_balanced(text, i + 2, "(", ")")
            acc.value(text[i:j], True)
            return j
        m = _PARAM.match(text, i)
        if m is None:  # plain text, up to the next character that may start an expansion
            j = _plain_end(text, i + 1, quoted)
            acc.literal(text[i:j])
            return j
        acc.parameter(self._param(m, acc.line) or [], quoted)
        return m.end()

    def expand_text(self, text: str, line: int, quoted: bool) -> list[Field]:
        """Expand ``$...`` in ``text``; unquoted expansions split on whitespace."""
        acc = _Fields(line)
        i = 0
        while i < len(text):
            i = self._expand_at(text, i, quoted, acc)
        return acc.finish()

    def expand(self, word: Word) -> list[Field]:
        """The fields ``word`` expands to (one, several, or none for an empty unquoted $X)."""
        fields: list[Field] = []
        cur: Field | None = None
        for kind, text in word.parts:
            if kind == "s":
                got = [Field(text, word.line)]
            else:
                got = self.expand_text(text, word.line, quoted=kind == "d")
                if kind == "d" and not got:
                    got = [Field("", word.line)]
            for k, f in enumerate(got):
                if k == 0 and cur is not None:
                    cur = Field(cur.value + f.value, cur.line, cur.symbolic or f.symbolic)
                else:
                    if cur is not None:
                        fields.append(cur)
                    cur = f
        if cur is not None:
            fields.append(cur)
        return [replace(f, at=word.line) for f in fields]

    def expand_all(self, words: list[Word]) -> list[Field]:
        """Expand several words."""
        return [f for w in words for f in self.expand(w)]

    def _value_of(self, word: Word, prefix: str) -> list[Field]:
        """The one field a scalar assignment ``word`` (its ``NAME=`` is ``prefix``) sets."""
        first_kind, first_text = word.parts[0]
        parts = [(first_kind, first_text[len(prefix) :]), *word.parts[1:]]
        # an assignment's value is not word-split
        value_fields = [
            f
            for kind, text in parts
            for f in (
                [Field(text, word.line)]
                if kind == "s"
                else self.expand_text(text, word.line, quoted=True)
            )
        ]
        joined = "".join(f.value for f in value_fields)
        line = value_fields[0].line if len(value_fields) == 1 else word.line
        return [Field(joined, line, any(f.symbolic for f in value_fields))]

    def assign(self, word: Word, exported: bool, conditional: bool) -> Var | None:
        """Apply ``NAME=value`` / ``NAME+=value`` / ``NAME=( ... )``; None if not an assignment."""
        m = _ASSIGN.match(word.raw)
        if m is None or word.parts[0][0] != "u" or not word.parts[0][1].startswith(m.group(0)):
            return None
        name, append = m.group(1), m.group(2) == "+"
        is_array = word.array is not None
        if word.array is not None:
            fields = self.expand_all(word.array)
        else:
            fields = self._value_of(word, m.group(0))
        old = self.vars.get(name)
        if append and old is not None:
            if is_array or old.array:
                fields = old.fields + fields
                is_array = True
            else:
                fields = [Field(old.value + fields[0].value, word.line, fields[0].symbolic)]
        var = Var(name, fields, word.line,
                  exported or self.allexport or bool(old and old.exported), conditional, is_array)
        self.vars[name] = var
        return var

    def copy(self) -> Env:
        """A copy (a snapshot of the variables at one command)."""
        e = Env()
        e.vars = dict(self.vars)
        e.allexport = self.allexport
        return e

    def environment(self) -> Env:
        """What a child process (``bash -c``, an srun task) inherits: the exported variables."""
        e = Env()
        e.vars = {k: v for k, v in self.vars.items() if v.exported}
        return e


def _element(var: Var, name: str, idx: str | None, line: int) -> list[Field]:
    """What ``$NAME``, ``${NAME[@]}`` or ``${NAME[k]}`` gives for the array ``var``."""
    if idx in ("[@]", "[*]") or name in "@*":
        return list(var.fields)
    if idx and idx[1:-1].isdigit():
        k = int(idx[1:-1])
        return [var.fields[k]] if k < len(var.fields) else [Field("", line)]
    return list(var.fields[:1])

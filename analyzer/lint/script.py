"""Read an sbatch script the way bash and SLURM would, far enough to check the launch rules.

Not a shell: it tokenises commands (quotes, ``$(...)``, ``${...}``, backslash continuations,
quoted strings over several lines, arrays ``NAME=( ... )``), keeps the ``#SBATCH`` directives
that come before the first command, and follows assignments in order so that ``$VAR`` and
``${VAR}`` expand to what the script set earlier. Variables SLURM or the login environment set at
run time (``$SLURM_NNODES``, ``$TMPDIR``, ...) stay symbolic. A ``bash -c '...'`` body is read
as a nested script with its own line numbers mapped back onto the file.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_DISABLE = re.compile(r"#\s*mcore-diagnose:\s*disable=([\w,\- ]+)")
_SBATCH = re.compile(r"^\s*#SBATCH\s+(.*)$")
_SEPARATORS = (";;", "&&", "||", ";", "|", "&")
_OPEN_KEYWORDS = {"if", "while", "until", "for", "case", "select"}
_CLOSE_KEYWORDS = {"fi", "done", "esac"}
_LEAD_KEYWORDS = {"then", "do", "else", "elif", "{", "}", "!"}
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


@dataclass
class Directive:
    """One ``#SBATCH`` option."""

    name: str  # long form without dashes, e.g. "nodes"
    value: str
    line: int


@dataclass
class Script:
    """A parsed sbatch script."""

    path: str
    lines: list[str]
    directives: list[Directive]
    commands: list[Command]
    disabled: dict[int, set[str]] = field(default_factory=dict)

    def directive(self, *names: str) -> Directive | None:
        """The last ``#SBATCH`` directive with one of ``names`` (later ones win, as in sbatch)."""
        found = [d for d in self.directives if d.name in names]
        return found[-1] if found else None

    def line_text(self, n: int) -> str:
        """Physical line ``n`` (1-based) without its newline, '' when out of range."""
        return self.lines[n - 1] if 1 <= n <= len(self.lines) else ""


# --- tokenising ------------------------------------------------------------------------------


def _skip_balanced(text: str, i: int, open_: str, close: str) -> int:
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
            i = _skip_dquote(text, i + 1)
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _skip_dquote(text: str, i: int) -> int:
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
            i = _skip_balanced(text, i + 2, "(", ")")
            continue
        if c == "`":
            j = text.find("`", i + 1)
            i = n if j < 0 else j + 1
            continue
        i += 1
    return n


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

    def word(self) -> Word:
        """Read one word starting at the current position."""
        t = self.text
        n = len(t)
        w = Word([], self.line)
        while self.i < n:
            c = t[self.i]
            if c in " \t\n;&|":
                break
            if c == "\\":
                if t.startswith("\\\n", self.i):
                    self._advance_to(self.i + 2)
                    if not w.parts:
                        w.line = self.line
                    continue
                w.parts.append(("u", t[self.i + 1 : self.i + 2]))
                self._advance_to(self.i + 2)
                continue
            if c == "'":
                j = t.find("'", self.i + 1)
                j = n if j < 0 else j
                w.parts.append(("s", t[self.i + 1 : j]))
                self._advance_to(min(n, j + 1))
                continue
            if c == '"':
                j = _skip_dquote(t, self.i + 1)
                body = t[self.i + 1 : j - 1 if j <= n and t[j - 1 : j] == '"' else j]
                w.parts.append(("d", body))
                self._advance_to(j)
                continue
            if t.startswith("$(", self.i):
                j = _skip_balanced(t, self.i + 2, "(", ")")
                w.parts.append(("u", t[self.i : j]))
                self._advance_to(j)
                continue
            if t.startswith("${", self.i):
                j = _skip_balanced(t, self.i + 2, "{", "}")
                w.parts.append(("u", t[self.i : j]))
                self._advance_to(j)
                continue
            if c == "`":
                j = t.find("`", self.i + 1)
                j = n if j < 0 else j + 1
                w.parts.append(("u", t[self.i : j]))
                self._advance_to(j)
                continue
            if c == "(":
                if w.parts and w.parts[-1][0] == "u" and re.fullmatch(
                    r"[A-Za-z_][A-Za-z0-9_]*\+?=", w.raw
                ):
                    # NAME=( ... ): an array assignment
                    j = _skip_balanced(t, self.i + 1, "(", ")")
                    inner = _Lexer(t[self.i + 1 : j - 1], self.line)
                    self._advance_to(j)
                    w.array = [x for cmd in inner.run() for x in cmd.words]
                    continue
                break
            if c == ")":
                break
            if c == "$":
                m = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])?").match(t, self.i)
                j = m.end() if m else self.i + 1
                w.parts.append(("u", t[self.i : j]))
                self._advance_to(j)
                continue
            j = self.i
            while j < n and t[j] not in " \t\n;&|()\\'\"$`":
                j += 1
            if j == self.i:  # a lone '$'
                j += 1
            w.parts.append(("u", t[self.i : j]))
            self._advance_to(j)
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


# --- expansion -------------------------------------------------------------------------------

_PARAM = re.compile(
    r"\$(?:\{(?P<b>[#!]?[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!])(?P<idx>\[[@*0-9]\])?"
    r"(?P<op>:?[-=+?])?(?P<rest>[^}]*)\}|(?P<n>[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!]))"
)
_ARITH = re.compile(r"^\$\(\((.*)\)\)$", re.S)


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


class Env:
    """The variables the script has set so far."""

    def __init__(self) -> None:
        self.vars: dict[str, Var] = {}

    def get(self, name: str) -> Var | None:
        """The variable ``name`` or None."""
        return self.vars.get(name)

    def _param(self, m: re.Match[str], line: int) -> list[Field] | None:
        name = m.group("b") or m.group("n")
        idx = m.group("idx")
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
        if var.array and (idx in ("[@]", "[*]") or name in "@*"):
            return list(var.fields)
        if var.array and idx and idx[1:-1].isdigit():
            k = int(idx[1:-1])
            return [var.fields[k]] if k < len(var.fields) else [Field("", line)]
        if var.array:
            return list(var.fields[:1])
        return [Field(var.value, var.line, any(f.symbolic for f in var.fields))]

    def _arith(self, text: str, line: int) -> Field:
        m = _ARITH.match(text)
        if m is None:
            return Field(text, line, True)
        body = re.sub(r"\$?\{?([A-Za-z_]\w*)\}?", lambda k: self._num(k.group(1)), m.group(1))
        value = _calc(body)
        return Field(str(value), line) if value is not None else Field(text, line, True)

    def _num(self, name: str) -> str:
        var = self.vars.get(name)
        if var is not None and var.value.strip().isdigit():
            return var.value.strip()
        return f"${name}"

    def expand_text(self, text: str, line: int, quoted: bool) -> list[Field]:
        """Expand ``$...`` in ``text``; unquoted expansions split on whitespace."""
        out: list[Field] = []
        cur = ""
        cur_line = line
        cur_sym = False
        started = False
        i = 0
        while i < len(text):
            if quoted and text[i] == "\\" and i + 1 < len(text) and text[i + 1] in "$`\"\\\n":
                # inside double quotes a backslash quotes $ ` " \ and joins lines
                if text[i + 1] != "\n":
                    cur += text[i + 1]
                    cur_line = line
                    started = True
                i += 2
                continue
            if text.startswith("$((", i):
                j = _skip_balanced(text, i + 3, "(", ")")
                if j < len(text) and text[j] == ")":
                    j += 1
                f = self._arith(text[i:j], line)
                cur += f.value
                cur_sym = cur_sym or f.symbolic
                started = True
                i = j
                continue
            if text.startswith("$(", i):
                j = _skip_balanced(text, i + 2, "(", ")")
                cur += text[i:j]
                cur_sym = True
                started = True
                i = j
                continue
            m = _PARAM.match(text, i)
            if m is None:
                cur += text[i]
                cur_line = line
                started = True
                i += 1
                continue
            fields = self._param(m, line) or []
            i = m.end()
            pieces: list[Field] = []
            for f in fields:
                if quoted:
                    pieces.append(f)
                else:
                    pieces += [Field(p, f.line, f.symbolic) for p in f.value.split()]
            if not pieces:
                continue
            if len(fields) == 1 and fields[0].line != line and not cur:
                cur_line = fields[0].line
            first, *more = pieces
            cur += first.value
            cur_sym = cur_sym or first.symbolic
            started = True
            for p in more:
                out.append(Field(cur, cur_line, cur_sym))
                cur, cur_line, cur_sym = p.value, p.line, p.symbolic
        if started or cur:
            out.append(Field(cur, cur_line, cur_sym))
        return out

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

    def assign(self, word: Word, exported: bool, conditional: bool) -> Var | None:
        """Apply ``NAME=value`` / ``NAME+=value`` / ``NAME=( ... )``; None if not an assignment."""
        raw = word.raw
        m = _ASSIGN.match(raw)
        if m is None or word.parts[0][0] != "u" or not word.parts[0][1].startswith(m.group(0)):
            return None
        name, append = m.group(1), m.group(2) == "+"
        if word.array is not None:
            fields = self.expand_all(word.array)
            is_array = True
        else:
            first_kind, first_text = word.parts[0]
            rest = Word([(first_kind, first_text[len(m.group(0)) :]), *word.parts[1:]], word.line)
            # an assignment's value is not word-split
            value_fields = [
                f
                for kind, text in rest.parts
                for f in (
                    [Field(text, word.line)]
                    if kind == "s"
                    else self.expand_text(text, word.line, quoted=True)
                )
            ]
            joined = "".join(f.value for f in value_fields)
            line = value_fields[0].line if len(value_fields) == 1 else word.line
            fields = [Field(joined, line, any(f.symbolic for f in value_fields))]
            is_array = False
        old = self.vars.get(name)
        if append and old is not None:
            if is_array or old.array:
                fields = old.fields + fields
                is_array = True
            else:
                fields = [Field(old.value + fields[0].value, word.line, fields[0].symbolic)]
        var = Var(name, fields, word.line, exported or bool(old and old.exported),
                  conditional, is_array)
        self.vars[name] = var
        return var

    def copy(self) -> Env:
        """A copy (for a nested ``bash -c`` body)."""
        e = Env()
        e.vars = dict(self.vars)
        return e


# --- the script ------------------------------------------------------------------------------

_SHORT = {"N": "nodes", "n": "ntasks", "G": "gpus", "C": "constraint", "p": "partition",
          "o": "output", "e": "error", "D": "chdir", "J": "job-name", "t": "time"}


def parse_options(tokens: list[str]) -> list[tuple[str, str]]:
    """``--name=value`` / ``--name value`` / ``-X value`` pairs from SLURM option tokens."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("--"):
            name, eq, value = tok[2:].partition("=")
            if not eq and i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
                value = tokens[i + 1]
                i += 1
            out.append((name, value))
        elif tok.startswith("-") and len(tok) >= 2:
            name = _SHORT.get(tok[1], tok[1])
            value = tok[2:]
            if not value and i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
                value = tokens[i + 1]
                i += 1
            out.append((name, value.lstrip("=")))
        else:
            break
        i += 1
    return out


def _directives(lines: list[str], first_command: int) -> list[Directive]:
    out: list[Directive] = []
    for n, text in enumerate(lines, 1):
        if n >= first_command:
            break
        m = _SBATCH.match(text)
        if m is None:
            continue
        body = m.group(1).split(" #", 1)[0].strip()
        for name, value in parse_options(body.split()):
            out.append(Directive(name, value.strip("'\""), n))
    return out


def parse_script(text: str, path: str = "<script>") -> Script:
    """Parse sbatch script ``text``."""
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    commands = tokenize(text)
    first = commands[0].line if commands else len(lines) + 1
    disabled: dict[int, set[str]] = {}
    for n, line in enumerate(lines, 1):
        m = _DISABLE.search(line)
        if m:
            disabled[n] = {r.strip() for r in m.group(1).replace(" ", ",").split(",") if r.strip()}
    return Script(path, lines, _directives(lines, first), commands, disabled)

"""Read an sbatch script the way bash and SLURM would, far enough to check the launch rules.

Not a shell: :mod:`analyzer.lint.lexer` tokenises commands (quotes, ``$(...)``, ``${...}``,
backslash continuations, quoted strings over several lines, arrays ``NAME=( ... )``) and
:mod:`analyzer.lint.expand` follows assignments in order so that ``$VAR`` and ``${VAR}`` expand to
what the script set earlier; variables SLURM or the login environment set at run time
(``$SLURM_NNODES``, ``$TMPDIR``, ...) stay symbolic. This module keeps the ``#SBATCH`` directives
that come before the first command and the inline ``# mcore-diagnose: disable=RULE`` comments. A
``bash -c '...'`` body is read as a nested script with its own line numbers mapped back onto the
file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from analyzer.lint.expand import RUNTIME_VARS, Env, Field, Var
from analyzer.lint.lexer import Command, Word, tokenize

_DISABLE = re.compile(r"#\s*mcore-diagnose:\s*disable=([\w,\- ]+)")
_SBATCH = re.compile(r"^\s*#SBATCH\s+(.*)$")
_SHORT = {"N": "nodes", "n": "ntasks", "G": "gpus", "C": "constraint", "p": "partition",
          "o": "output", "e": "error", "D": "chdir", "J": "job-name", "t": "time"}


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


__all__ = [
    "RUNTIME_VARS", "Command", "Directive", "Env", "Field", "Script", "Var", "Word",
    "parse_options", "parse_script", "tokenize",
]

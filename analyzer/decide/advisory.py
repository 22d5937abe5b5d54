"""One launch advisory, the linted batch script the advisories read, and their shared helpers.

``analyzer.decide.advisories`` assembles the advisories; ``advise_events`` raises those the
events show, ``advise_world`` those about the world's size and the hosts' tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from analyzer.lint import lint_text
from analyzer.model.event import Event
from analyzer.read.batchscript import BatchScript

if TYPE_CHECKING:  # the lint rules load only when a batch script is linted
    from analyzer.lint.rules import Finding

_COMMAND = ("-", "srun", "export", "torchrun", "python", "uv ", "bash", "exec", "#SBATCH", "$")
"""How a script line (not prose) starts."""


def _open(line: str) -> bool:
    """A script line that opens a multi-line shell command: a trailing backslash or an
    unclosed quote."""
    return line.startswith(_COMMAND) and "`" not in line and (
        line.endswith("\\") or line.count("'") % 2 == 1 or line.count('"') % 2 == 1)


def instruction(fix: str) -> str:
    """``fix`` as one instruction: a script line the lint rewrote that opens a multi-line
    command (``... --redirects 3 \\``, ``bash -c '``) is shown as that line's start, in
    backticks, not as a fragment that reads as the whole fix."""
    fix = fix.strip()
    if "\n" in fix or not _open(fix):
        return fix
    start = fix.rstrip(" \\")
    return f"change the script's line to `{start} …`"


@dataclass(frozen=True)
class Advisory:
    """One launch-rule observation about the job."""

    rule: str
    message: str
    fix: str
    evidence: tuple[str, ...] = ()
    severity: str = "warning"
    explains_verdict: bool = False
    patterns: tuple[str, ...] = ()  # the catalog patterns whose events are the evidence
    explains: frozenset[str] = frozenset()  # verdict categories it explains whatever the rule
    drops: frozenset[str] = frozenset()  # topics of the verdict's fix it makes irrelevant
    script_only: bool = False  # only the batch script shows it (no line of the logs)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fix", instruction(self.fix))

    def as_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"rule": self.rule, "message": self.message, "fix": self.fix,
                "evidence": list(self.evidence), "severity": self.severity,
                "explains_verdict": self.explains_verdict}


@dataclass(frozen=True)
class LintedScript:
    """The job's batch script as the advisories use it (all empty when there is none)."""

    path: str | None = None
    text: str | None = None
    findings: tuple[Finding, ...] = ()
    lines: tuple[str, ...] = ()
    job: Any = None
    """The script's launch structure (``analyzer.lint.launchplan.Job``), None without a script."""

    def evidence(self, f: Finding) -> str:
        """``script:line: the script's line`` for a finding of the script."""
        n = f.line
        text = self.lines[n - 1].strip() if 1 <= n <= len(self.lines) else f.message
        return f"{f.file}:{n}: {text}"

    def finding(self, rule: str, needle: str = "") -> Finding | None:
        """The first finding of ``rule`` whose message holds ``needle``."""
        return next((f for f in self.findings if f.rule == rule and needle in f.message), None)

    def evidence_of(self, f: Finding | None) -> list[str]:
        """``[evidence(f)]``, or nothing without a finding."""
        return [self.evidence(f)] if f is not None else []


def lint_script(script: BatchScript | None, gpu_name: str | None) -> LintedScript:
    """Lint and parse the script that was read (no file is read here)."""
    from analyzer.lint.launchplan import read_job
    from analyzer.lint.script import parse_script

    if script is None:
        return LintedScript()
    cfg = replace(script.config, gpu_hint=gpu_name) if gpu_name else script.config
    text = script.text
    return LintedScript(
        str(script.path),
        text,
        tuple(lint_text(text, script.shown, cfg)),
        tuple(text.replace("\r\n", "\n").split("\n")),
        read_job(parse_script(text, str(script.path))),
    )


def where(r: Event) -> str:
    """``file:line: text`` of an event, as evidence."""
    return f"{r.file}:{r.line}: {(r.text or '').strip()}"


def nodes(rows: Iterable[Event]) -> list[str]:
    """The nodes (or hosts) of ``rows``, sorted."""
    return sorted({str(r.node or r.host or "?") for r in rows})


def tagged(rows: Sequence[Event], tag: str) -> list[Event]:
    """The rows carrying ``tag`` (``Event.tagged``, without a call per row)."""
    return [r for r in rows if tag in r.tags]


def ids(rows: Iterable[Event]) -> tuple[str, ...]:
    """The pattern ids of ``rows``, once each, in order (an advisory's evidence patterns)."""
    return tuple(dict.fromkeys(str(r.pattern_id) for r in rows))


Advise = Callable[[list[Event], LintedScript], Advisory | None]
"""One advisory the events (and the script's findings) may raise."""

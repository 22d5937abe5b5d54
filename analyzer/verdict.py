"""The diagnosis objects and their JSON form (the contract in ``categories.md``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

SCHEMA_VERSION = 1


@dataclass
class Evidence:
    """A log line that supports a verdict."""

    file: str
    line: int
    text: str
    rank: int | None = None
    node: str | None = None
    time: datetime | None = None
    context: list[str] = field(default_factory=list)
    """Surrounding lines (a traceback), shown collapsed."""

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        d: dict[str, Any] = {"file": self.file, "line": self.line, "text": self.text}
        if self.context:
            d["context"] = self.context
        return d


@dataclass
class Verdict:
    """One explanation of the failure."""

    category: str
    cause: str
    fix: str
    confidence: float
    pattern_id: str | None = None
    rank: int | None = None
    local_rank: int | None = None
    node: str | None = None
    node_index: int | None = None
    time: datetime | None = None
    title: str = ""
    evidence: list[Evidence] = field(default_factory=list)
    rank_note: str | None = None
    """Why ``rank`` is null, or how the culprit was found."""
    attempt: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON form, with the contract's keys first."""
        return {
            "category": self.category,
            "pattern_id": self.pattern_id,
            "rank": self.rank,
            "local_rank": self.local_rank,
            "node": self.node,
            "time": self.time.isoformat() if self.time else None,
            "cause": self.cause,
            "fix": self.fix,
            "confidence": round(self.confidence, 2),
            "evidence": [e.as_dict() for e in self.evidence],
            "title": self.title,
            "node_index": self.node_index,
            "rank_note": self.rank_note,
            "attempt": self.attempt,
        }


@dataclass
class Diagnosis:
    """The verdict on a job, with alternatives, symptoms and facts."""

    status: str
    """``failed``, ``ok`` or ``unknown`` (nothing could be read)."""
    verdict: Verdict
    alternatives: list[Verdict] = field(default_factory=list)
    symptoms: dict[str, dict[str, Any]] = field(default_factory=dict)
    symptom_lines: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    attempts: list[Verdict] = field(default_factory=list)
    phase: str | None = None
    problems: list[str] = field(default_factory=list)
    files: int = 0
    bytes_read: int = 0
    ranks: dict[int, dict[str, Any]] = field(default_factory=dict)
    """Per-rank first event (role, category, time, node) for the rank grid."""
    advisories: list[dict[str, Any]] = field(default_factory=list)
    """Launch-rule advisories (:mod:`analyzer.launch`), also for jobs that did not fail."""
    batch_script: str | None = None

    @property
    def exit_code(self) -> int:
        """0 diagnosed, 1 failed with unknown cause, 2 no failure found (3 is bad input)."""
        if self.status == "ok":
            return 2
        if self.verdict.category == "unknown":
            return 1
        return 0

    def as_dict(self) -> dict[str, Any]:
        """The JSON report."""
        return {
            "schema_version": SCHEMA_VERSION,
            "status": self.status,
            "verdict": self.verdict.as_dict(),
            "alternatives": [a.as_dict() for a in self.alternatives],
            "symptoms": self.symptoms,
            "symptom_summary": self.symptom_lines,
            "facts": self.facts,
            "phase": self.phase,
            "attempts": [a.as_dict() for a in self.attempts],
            "ranks": {str(k): v for k, v in sorted(self.ranks.items())},
            "problems": self.problems,
            "files_read": self.files,
            "bytes_read": self.bytes_read,
            "advisories": self.advisories,
            "batch_script": self.batch_script,
        }

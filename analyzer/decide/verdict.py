"""The diagnosis objects and their JSON form (the contract in ``categories.md``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from analyzer.decide.ids import Certainty
from analyzer.util.timefmt import iso

if TYPE_CHECKING:
    from analyzer.decide.advisories import Advisory
    from analyzer.flightrec.analyze import FrFinding
    from analyzer.shape.facts import JobFacts

SCHEMA_VERSION = 1


EXIT_DIAGNOSED = 0
EXIT_UNKNOWN = 1
EXIT_NO_FAILURE = 2
EXIT_UNREADABLE = 3
EXIT_LAUNCH_MISTAKE = 5
EXIT_USAGE = 64
EXIT_CODES: dict[int, str] = {
    EXIT_DIAGNOSED: "the job failed and a cause was diagnosed",
    EXIT_UNKNOWN: "the job failed but the cause is unknown",
    EXIT_NO_FAILURE: "no failure found (status ok)",
    EXIT_UNREADABLE: "nothing could be read (missing path, empty directory, no log files)",
    EXIT_LAUNCH_MISTAKE: "the job ran (no failure) but broke a launch rule (status ok, "
    "launch_mistake true)",
    EXIT_USAGE: "usage error (bad option, bad pattern file)",
}
"""The exit statuses of every command, defined once (docs/contract.md says the same)."""


@dataclass(frozen=True)
class Evidence:
    """A log line that supports a verdict (never changed once made)."""

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


@dataclass(frozen=True)
class Verdict:
    """One explanation of the failure (never changed once made: ``dataclasses.replace``)."""

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
    key: dict[str, str] = field(default_factory=dict)
    """What identifies this failure across jobs (exception type, frame, message template):
    the fingerprint's input, independent of the rendered wording."""
    unknown: dict[str, Any] | None = None
    """For a verdict inferred from a line no pattern knows: its template and fingerprint."""
    rule: str | None = None
    """The decision rule that chose this verdict (``analyzer.decide.rules.BY_ID``)."""
    rank_rule: str | None = None
    """How the rank was settled (or why none is named); ``rank_note`` says it in words."""
    rank_facts: dict[str, Any] = field(default_factory=dict)
    """The facts behind ``rank_rule`` (file, line, ranks ...), for the note."""
    rank_assumed: bool = False
    """The rank is a local rank taken as global: the logs show a single node."""
    rank_basis: dict[str, str] | None = None
    """What the rank rests on: the kind of rank claim that named it and the claim (or the rank
    rule, or ``shape``); see ``analyzer.decide.rankbasis``."""

    @property
    def rank_certainty(self) -> str | None:
        """How sure the named rank is: ``certain`` (its own line, the launcher or the first
        failure in time names it), ``likely`` (taken from another line, the hang analysis, or
        the only rank whose failure the logs show), ``assumed`` (a local rank taken as global
        on one node); None when no rank is named."""
        # Imported here: ``--version`` loads this module and must not pay for the rank rules.
        from analyzer.decide.certainty import certainty

        c = certainty(self.rank, self.rank_rule, self.rank_assumed, self.rank_facts)
        return None if c == Certainty.UNKNOWN else c

    def _rule_basis(self) -> dict[str, str] | None:
        """The basis of a rank a rule named where the builder recorded none (inferred)."""
        if self.rank is None or not self.rank_rule:
            return None
        return {"kind": "rank-rule", "claim": str(self.rank_rule)}

    def as_dict(self) -> dict[str, Any]:
        """JSON form, with the contract's keys first."""
        d: dict[str, Any] = {
            "category": self.category,
            "pattern_id": self.pattern_id,
            "rank": self.rank,
            "local_rank": self.local_rank,
            "node": self.node,
            "time": iso(self.time),
            "cause": self.cause,
            "fix": self.fix,
            "confidence": round(self.confidence, 2),
            "evidence": [e.as_dict() for e in self.evidence],
            "title": self.title,
            "node_index": self.node_index,
            "rank_note": self.rank_note,
            "attempt": self.attempt,
            "rule": self.rule,
            "rank_rule": self.rank_rule,
            "rank_certainty": self.rank_certainty,
            "rank_basis": self.rank_basis or self._rule_basis(),
        }
        if self.unknown is not None:
            d["unknown"] = self.unknown
        return d


def _no_facts() -> JobFacts:
    # Imported here: ``--version`` loads this module and must not pay for ``regex``.
    from analyzer.shape.facts import JobFacts

    return JobFacts()


@dataclass(frozen=True)
class RankRow:
    """One rank's first event, for the rank grid (all None: a rank that logged nothing)."""

    node: str | None = None
    role: str | None = None
    category: str | None = None
    time: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"node": self.node, "role": self.role, "category": self.category,
                "time": iso(self.time)}


@dataclass(frozen=True)
class JobShape:
    """The launch geometry the reports show: world size, nodes × workers per node, and the
    host of each srun task (``analyzer.shape.geometry.Geometry``, as settled for the job)."""

    world: int | None = None
    nnodes: int | None = None
    nproc_per_node: int | None = None
    task_hosts: Mapping[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Diagnosis:
    """The verdict on a job, with alternatives, symptoms and facts; typed records throughout,
    a dict only in ``as_dict``. Never changed once made (``dataclasses.replace`` makes a new
    one)."""

    status: str
    """``failed``, ``ok`` or ``unknown`` (nothing could be read)."""
    verdict: Verdict
    alternatives: Sequence[Verdict] = ()
    symptoms: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    symptom_lines: Sequence[str] = ()
    facts: JobFacts = field(default_factory=lambda: _no_facts())
    scheduler_facts: Mapping[str, Any] = field(default_factory=dict)
    """What the scheduler says of the job (``scontrol``/``sacct`` for a job id)."""
    attempts: Sequence[Verdict] = ()
    phase: str | None = None
    problems: Sequence[str] = ()
    files: int = 0
    bytes_read: int = 0
    ranks: Mapping[int, RankRow] = field(default_factory=dict)
    """Per-rank first event (role, category, time, node) for the rank grid."""
    flight_recorder: FrFinding | None = None
    """What the Flight Recorder dumps show (``analyzer.flightrec``), when there were any."""
    advisories: Sequence[Advisory] = ()
    """Launch-rule advisories (``analyzer.decide.advisories``), also for jobs that did not
    fail."""
    batch_script: str | None = None
    shape: JobShape = field(default_factory=JobShape)
    """The job's launch geometry, for the reports (not in the JSON report)."""
    paths: Sequence[str] = ()
    """The job's logs as given (directories or files), for the reports (the JSON report's
    ``job`` key is the command line's)."""
    launch_mistake: bool = False
    """The job ran without a failure but broke a launch rule (its verdict says which)."""

    @property
    def exit_code(self) -> int:
        """The command's exit status for this diagnosis (see :data:`EXIT_CODES`)."""
        if self.status == "unknown":
            return EXIT_UNREADABLE
        if self.status == "ok":
            return EXIT_LAUNCH_MISTAKE if self.launch_mistake else EXIT_NO_FAILURE
        if self.verdict.category == "unknown":
            return EXIT_UNKNOWN
        return EXIT_DIAGNOSED

    def fact(self, name: str) -> Any:
        """One fact of the job (the scheduler's first), or None."""
        if name in self.scheduler_facts:
            return self.scheduler_facts[name]
        if name == "last_iteration":
            return self.facts.last_iteration
        return self.facts.get(name)

    def as_dict(self) -> dict[str, Any]:
        """The JSON report."""
        return {
            "schema_version": SCHEMA_VERSION,
            "status": self.status,
            "launch_mistake": self.launch_mistake,
            "verdict": self.verdict.as_dict(),
            "alternatives": [a.as_dict() for a in self.alternatives],
            "symptoms": {k: dict(v) for k, v in self.symptoms.items()},
            "symptom_summary": list(self.symptom_lines),
            "facts": {**self.facts.as_dict(), **self.scheduler_facts},
            "phase": self.phase,
            "attempts": [a.as_dict() for a in self.attempts],
            "ranks": {str(k): v.as_dict() for k, v in sorted(self.ranks.items())},
            "problems": list(self.problems),
            "files_read": self.files,
            "bytes_read": self.bytes_read,
            "advisories": [x.as_dict() for x in self.advisories],
            "batch_script": self.batch_script,
        } | (
            {"flight_recorder": self.flight_recorder.as_dict()} if self.flight_recorder else {}
        )

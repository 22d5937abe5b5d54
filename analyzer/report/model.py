"""What every human-readable report shows, computed once from a :class:`Diagnosis`.

The terminal, text, Markdown and HTML reports are views of this model, so they say the same
thing. Every string in it that came from a log has been through :func:`clean` (no escape
sequences, no control characters); each view still escapes it for its own medium.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from analyzer.decide.flightrec import table_lines
from analyzer.report.grid import Grid, build_grid
from analyzer.report.input import ReportInput, diagnosis_of
from analyzer.util.safe import clean

if TYPE_CHECKING:
    from analyzer.decide.advisories import Advisory
    from analyzer.decide.verdict import Diagnosis, Evidence, JobShape, RankRow, Verdict

CONTEXT_HEAD = 2
CONTEXT_TAIL = 5
"""A traceback longer than head + tail + 1 lines is shown collapsed: first and last lines."""


@dataclass
class EvidenceView:
    """One evidence line and its (collapsible) traceback."""

    location: str
    """``file:line`` (relative to the job directory, as the reader named it)."""
    who: str
    """``rank 5`` / ``rank 5 on node gpu-07`` or empty."""
    text: str
    context: list[str] = field(default_factory=list)
    """The traceback before the line, without the line itself."""
    line_in_context: bool = False
    """The traceback ends with this line (the exception message)."""

    def collapsed(self) -> tuple[list[str], int, list[str]]:
        """(first lines, number hidden, last lines) of the context."""
        ctx = self.context
        if len(ctx) <= CONTEXT_HEAD + CONTEXT_TAIL + 1:
            return ctx, 0, []
        return ctx[:CONTEXT_HEAD], len(ctx) - CONTEXT_HEAD - CONTEXT_TAIL, ctx[-CONTEXT_TAIL:]


@dataclass
class AltView:
    """An alternative (or per-attempt) explanation, one line."""

    category: str
    rank: str
    confidence: float
    cause: str
    attempt: int | None = None


@dataclass
class TimelineRow:
    """One rank's first event, for ``--verbose``."""

    rank: int
    node: str
    time: str
    role: str
    category: str


@dataclass
class AdvisoryView:
    """One launch advisory, cleaned for display."""

    rule: str
    severity: str
    message: str
    fix: str
    evidence: list[str]
    explains_verdict: bool

    @property
    def line(self) -> str:
        """``[rule] message`` with a marker when it explains the verdict."""
        tag = " (explains the verdict)" if self.explains_verdict else ""
        return f"[{self.rule}]{tag} {self.message}"


def _advisory(x: Advisory) -> AdvisoryView:
    return AdvisoryView(
        clean(x.rule),
        clean(x.severity),
        clean(x.message),
        clean(x.fix),
        [clean(v) for v in x.evidence][:4],
        x.explains_verdict,
    )


@dataclass
class ReportModel:
    """The report's content; all strings are plain text, safe to escape and print."""

    status: str
    """``failed``, ``ok`` or ``unknown``."""
    severity: str
    """``ok`` (no failure), ``unknown`` (failed, cause not named) or ``fail``."""
    category: str
    title: str
    rank: int | None
    who: str
    """``rank 5 (local 1) on node gpu-07`` or a note when no rank is named."""
    time: str | None
    cause: str
    fix: str
    confidence: float
    pattern_id: str | None
    rank_note: str | None
    evidence: list[EvidenceView]
    symptoms: list[str]
    facts: list[tuple[str, str]]
    grid: Grid
    alternatives: list[AltView]
    attempts: list[AltView]
    problems: list[str]
    timeline: list[TimelineRow]
    logs: str
    """The paths the report is about, as given on the command line."""
    flight_recorder: list[str] = field(default_factory=list)
    """The Flight Recorder per-rank sequence table and verdict, plain lines (may be empty)."""
    advisories: list[AdvisoryView] = field(default_factory=list)
    """Launch-rule advisories (:mod:`analyzer.decide.advisories`)."""

    @property
    def headline(self) -> str:
        """``cuda_oom — CUDA out of memory`` (the title only when there is one)."""
        return f"{self.category} — {self.title}" if self.title else self.category


def fmt_time(t: datetime | str | None) -> str | None:
    """A timestamp as ``2025-03-04 10:00:03`` (no ``T``; fraction and zone kept)."""
    if t is None:
        return None
    if isinstance(t, datetime):
        return t.isoformat(sep=" ")
    return clean(t).replace("T", " ", 1)


def _who(v: Verdict, hosts: dict[int, str]) -> str:
    if v.rank is None:  # "First failing rank not singled out, on node 2" (the note says why)
        who = "rank not singled out"
    else:
        who = f"rank {v.rank}"
        if v.local_rank is not None:
            who += f" (local {v.local_rank})"
    node = _node_label(v.node, v.node_index, hosts)
    if node:
        who += (", on" if v.rank is None else " on") + f" node {node}"
    if v.rank_certainty is not None:
        who += f" — {CERTAINTY_WORDS[v.rank_certainty]}"
    return who


CERTAINTY_WORDS = {
    "certain": "certain",
    "likely": "likely, not certain",
    "possible": "possible, not confirmed",
    "assumed": "assumed",
}
"""How the report says ``Verdict.rank_certainty`` next to the rank."""


def _rank_note(v: Verdict) -> str | None:
    """The note under "First failing", unless the cause already says it word for word (a
    hang's cause quotes how its culprit was found)."""
    if not v.rank_note:
        return None
    note = clean(v.rank_note)

    def norm(s: str) -> str:
        return " ".join(s.lower().split()).rstrip(".")

    return None if norm(note) in norm(clean(v.cause)) else note


def _node_label(node: str | None, index: int | None, hosts: dict[int, str]) -> str | None:
    label = clean(node) if node is not None else None
    host = hosts.get(index) if index is not None else None
    if host and label and clean(host) != label:
        return f"{label} ({clean(host)})"
    return label or (clean(host) if host else None)


def _evidence(e: Evidence) -> EvidenceView:
    text = clean(e.text)
    ctx = [clean(c) for c in e.context]
    in_ctx = False
    if ctx and ctx[-1].strip() and text.rstrip().endswith(ctx[-1].strip()):
        ctx = ctx[:-1]
        in_ctx = True
    who = []
    if e.rank is not None:
        who.append(f"rank {e.rank}")
    if e.node is not None:
        who.append(f"node {clean(e.node)}")
    return EvidenceView(
        location=f"{clean(e.file)}:{e.line}",
        who=" on ".join(who),
        text=text,
        context=ctx,
        line_in_context=in_ctx,
    )


def _evidence_views(v: Verdict, ranks: Mapping[int, RankRow]) -> list[EvidenceView]:
    """The verdict's evidence; when the culprit logged nothing (a hang's silent rank), the
    first line, another rank's, says so rather than pass for the culprit's own."""
    views = [_evidence(e) for e in v.evidence]
    row = ranks.get(v.rank) if v.rank is not None else None
    first = v.evidence[0] if v.evidence else None
    if views and row is not None and row.category is None and first is not None and (
        first.rank is not None and first.rank != v.rank
    ):
        views[0] = replace(
            views[0], who=f"{views[0].who} (rank {v.rank} logged no line of its own)"
        )
    return views


def _alt(v: Verdict) -> AltView:
    return AltView(
        category=clean(v.category),
        rank="—" if v.rank is None else str(v.rank),
        confidence=v.confidence,
        cause=clean(v.cause),
        attempt=v.attempt,
    )


_PARALLEL_KEYS = ("tp", "pp", "cp", "dp", "ep")
_GPU_KEYS = ("gpu_name", "gpu_generation")
_VERSION_KEYS = (
    ("torch", "torch_version"),
    ("NCCL", "nccl_version"),
    ("Megatron", "megatron_version"),
)


def _plural(n: int, word: str) -> str:
    """``1 node`` / ``2 nodes``."""
    return f"{n} {word}{'s' if n != 1 else ''}"


def _nodes_fact(g: JobShape, grid: Grid) -> str | None:
    """``2 × 8 GPUs`` from the geometry, else the number of nodes the grid shows."""
    if g.nnodes and g.nproc_per_node:
        return f"{g.nnodes} × {g.nproc_per_node} GPUs"
    if grid.nodes and grid.cells:
        return _plural(len(grid.nodes), "node")
    return None


Fact = Callable[[str], Any]
"""One fact of the job by name (``Diagnosis.fact``)."""


def _parallelism_fact(fact: Fact) -> str | None:
    """``TP=2 PP=4`` (the sizes the logs name)."""
    return " ".join(f"{k.upper()}={fact(k)}" for k in _PARALLEL_KEYS if fact(k)) or None


def _gpu_fact(fact: Fact) -> str | None:
    """``NVIDIA H100 Hopper (sm_90)``."""
    gpu = " ".join(str(fact(k)) for k in _GPU_KEYS if fact(k))
    if fact("sm"):
        gpu += f" (sm_{fact('sm')})"
    return gpu.strip() or None


def _versions_fact(fact: Fact) -> str | None:
    """``torch 2.4.0, NCCL 2.21.5, Megatron 0.8.0``."""
    return ", ".join(f"{name} {fact(k)}" for name, k in _VERSION_KEYS if fact(k)) or None


def _last_iteration_fact(fact: Fact) -> Any:
    """The last iteration, ``120 of 1000`` when the run's length is known."""
    last = fact("last_iteration")
    if last is not None and fact("train_iters"):
        return f"{last} of {fact('train_iters')}"
    return last


def _slurm_fact(fact: Fact) -> str | None:
    """``1234 FAILED exit 1:0 on gpu-[01-04]``."""
    if not fact("slurm_job_id"):
        return None
    parts = (
        fact("slurm_job_id"),
        fact("slurm_state"),
        f"exit {fact('slurm_exit_code')}" if fact("slurm_exit_code") else None,
        f"on {fact('slurm_nodelist')}" if fact("slurm_nodelist") else None,
    )
    return " ".join(str(x) for x in parts if x)


def _fact_text(v: Any) -> str:
    """A fact's value as shown: integers with thousands separators, all of it cleaned."""
    return clean(f"{v:,}" if isinstance(v, int) else v)


def _facts(d: Diagnosis, grid: Grid) -> list[tuple[str, str]]:
    """The job's facts, one (name, value) row each; unknown facts are left out."""
    f = d.fact
    g = d.shape
    ws = g.world
    rows: list[tuple[str, Any]] = [
        ("SLURM job", _slurm_fact(f)),
        ("world size", ws),
        ("ranks seen", None if ws or not grid.cells else len(grid.cells)),
        ("nodes", _nodes_fact(g, grid)),
        ("parallelism", _parallelism_fact(f)),
        ("GPU", _gpu_fact(f)),
        ("versions", _versions_fact(f)),
        ("last iteration", _last_iteration_fact(f)),
        ("phase", d.phase),
        ("read", f"{_plural(d.files, 'file')}, {_bytes(d.bytes_read)}"),
    ]
    return [(k, _fact_text(v)) for k, v in rows if v not in (None, "")]


def _bytes(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def _timeline(grid: Grid) -> list[TimelineRow]:
    rows = [
        TimelineRow(
            rank=c.rank,
            node=c.node,
            time=c.time or "",
            role=c.role or "",
            category=c.category or "",
        )
        for c in grid.cells
    ]
    # First events first (the culprit leads); ranks without an event at the end.
    rows.sort(key=lambda r: (r.time == "", r.time, r.rank))
    return rows


def build_model(x: ReportInput) -> ReportModel:
    """The report model of a diagnosis (or of ``x.diagnosis``)."""
    d = diagnosis_of(x)
    v = d.verdict
    hosts = dict(d.shape.task_hosts)
    grid = build_grid(d)
    if d.status == "ok":
        severity = "mistake" if d.launch_mistake else "ok"
    elif v.category == "unknown" or d.status == "unknown":
        severity = "unknown"
    else:
        severity = "fail"
    return ReportModel(
        status=d.status,
        severity=severity,
        category=clean(v.category),
        title=clean(v.title),
        rank=v.rank,
        who=_who(v, hosts),
        time=fmt_time(v.time),
        cause=clean(v.cause),
        fix=clean(v.fix),
        confidence=v.confidence,
        pattern_id=clean(v.pattern_id) if v.pattern_id else None,
        rank_note=_rank_note(v),
        evidence=_evidence_views(v, d.ranks),
        symptoms=[clean(s) for s in d.symptom_lines],
        facts=_facts(d, grid),
        grid=grid,
        alternatives=[_alt(x) for x in d.alternatives if x.category != v.category],
        attempts=[_alt(x) for x in d.attempts],
        problems=[clean(p) for p in d.problems],
        timeline=_timeline(grid),
        logs=", ".join(clean(p) for p in d.paths),
        flight_recorder=[clean(x) for x in table_lines(d.flight_recorder)],
        advisories=[_advisory(x) for x in d.advisories],
    )

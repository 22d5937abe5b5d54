"""From the event table to a diagnosis: the verdict rules, the rank rules, then the words.

For each torchrun attempt and for the whole job, the first verdict rule that applies proposes
the event that explains the failure (``analyzer.decide.rules``), the rank rules decide which
rank it names and how sure (``analyzer.decide.rank_decision``), and the verdict is built once
from the two (``analyzer.decide.assemble``). The job's verdict is then the first attempt's when
attempts disagree, or a line no pattern knows when the verdict is only a cascade
(``analyzer.decide.unknown``). docs/decisions.md explains every rule.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from analyzer.catalog.vocabulary import Category
from analyzer.decide import wording
from analyzer.decide.assemble import build_verdict
from analyzer.decide.flightrec import CulpritEvent, culprit_event
from analyzer.decide.ids import VerdictId
from analyzer.decide.jobview import JobView
from analyzer.decide.notes import finish
from analyzer.decide.promote import survived_notes
from analyzer.decide.rank_decision import decide_rank
from analyzer.decide.rules import Proposal, propose
from analyzer.decide.summary import phase, rank_table, summarise
from analyzer.decide.unknown import infer, split_candidates
from analyzer.decide.verdict import Diagnosis, Verdict
from analyzer.flightrec.analyze import FrFinding
from analyzer.model.event import Event
from analyzer.shape.attribute import Geometry
from analyzer.shape.facts import JobFacts


def _verdicts(job: JobView, p: Proposal, whole_job: bool) -> tuple[Verdict, list[Verdict]]:
    """The verdict of proposal ``p`` and of its alternatives."""
    v = build_verdict(job, p, decide_rank(job, p, whole_job))
    alts = [build_verdict(job, a, decide_rank(job, a)) for a in p.alternatives]
    return v, alts


def decide(
    rows: Sequence[Event], facts: JobFacts, geo: Geometry, whole_job: bool = False,
    dumps: CulpritEvent | None = None,
) -> tuple[Verdict, list[Verdict], str]:
    """The verdict, alternatives and status (``failed``/``ok``) for one attempt's rows
    (``whole_job``: the rows of every attempt, where the job-level rank rules apply too;
    ``dumps``: the event in which the Flight Recorder dumps name a culprit)."""
    job = JobView.of(rows, facts, geo, dumps)
    p = propose(job)
    v, alts = _verdicts(job, p, whole_job)
    return v, alts, p.status


def _attempt_of(rows: list[Event]) -> None:
    """Give combined-stream events an attempt number from torchrun's restart lines."""
    # "Worker group FAILED. L/M attempts left; will restart": what follows is attempt M-L+1.
    # Every node's agent prints the line, so the numbers (not a count of lines) decide.
    restarts: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r in rows:
        if r.tagged("restart") and r.attempt is None:
            left, most = r.cap("attempts_left") or "", r.cap("max_restarts") or ""
            if left.isdecimal() and most.isdecimal():
                restarts[r.file].append((r.line, int(most) - int(left) + 1))
    for i, r in enumerate(rows):
        marks = restarts.get(r.file)
        if r.attempt is None and marks:
            # A new row in this list: the caller's rows are never changed.
            rows[i] = replace(r, attempt=max((a for ln, a in marks if ln < r.line), default=0))


def _per_attempt(
    rows: list[Event], facts: JobFacts, geo: Geometry, dumps: CulpritEvent | None
) -> list[Verdict]:
    """One verdict per torchrun attempt, when the job restarted."""
    attempts = sorted({r.attempt for r in rows if r.attempt is not None})
    if len(attempts) < 2:
        return []
    out = []
    for a in attempts:
        va, _alts, _st = decide(
            [r for r in rows if r.attempt in (a, None)], facts, geo, dumps=dumps
        )
        out.append(replace(va, attempt=a))
    return out


_ECHOES = frozenset(
    {Category.RENDEZVOUS, Category.COLLECTIVE_TIMEOUT, Category.UNKNOWN, Category.NONE}
)
"""Categories a later attempt shows as an echo of the first attempt's failure."""
_UNNAMED = (Category.NONE, Category.UNKNOWN)
"""Verdicts that name no cause."""


def _first_attempt(
    v: Verdict, alts: list[Verdict], per_attempt: list[Verdict]
) -> tuple[Verdict, list[Verdict], int | None]:
    """With several attempts, the first attempt that failed of a known cause explains the
    job (a later attempt's failure is often its echo); other attempts' own failures lead the
    alternatives, and the cause says how many attempts there were. The third value is the
    index in ``per_attempt`` of the verdict chosen, when it is one of them."""
    known = [i for i, x in enumerate(per_attempt) if x.category not in _UNNAMED]
    shared = known[0] if known else None
    if shared is not None:
        first = per_attempt[shared]
        if (first.category, first.pattern_id) != (v.category, v.pattern_id):
            alts, v = [v, *alts], first
        else:
            v, shared = replace(v, attempt=first.attempt), None
    echoes = _ECHOES | {v.category}
    own = [x for x in per_attempt if x.attempt != v.attempt and x.category not in echoes]
    alts = [*reversed(own), *alts]
    v = replace(v, cause=v.cause + wording.attempt_suffix(v.attempt, len(per_attempt)))
    return v, alts, shared


def _assumed(v: Verdict, rows: Sequence[Event]) -> bool:
    """Whether the verdict's rank rests on the single-node assumption (local rank N taken as
    global rank N): a line the verdict cites for that rank was attributed so (the agent's exit
    line of local rank 0), or every line of that rank was."""
    if v.rank is None:
        return v.rank_assumed
    mine = [r for r in rows if r.rank == v.rank]
    cited = {(e.file, e.line) for e in v.evidence}
    if any(r.rank_assumed and (r.file, r.line) in cited for r in mine):
        return True
    return bool(mine) and all(r.rank_assumed for r in mine)


@dataclass(frozen=True)
class ReadSummary:
    """What reading the job said about itself, for the diagnosis."""

    problems: list[str] = field(default_factory=list)
    files: int = 0
    bytes_read: int = 0
    readable: bool = True
    flight_recorder: FrFinding | None = None
    """The Flight Recorder dumps' finding: the decision's one input about them."""


def diagnose_rows(
    rows: list[Event],
    facts: JobFacts,
    geo: Geometry,
    read: ReadSummary | None = None,
    baseline: frozenset[str] | None = None,
) -> Diagnosis:
    """The job's complete diagnosis: one verdict per torchrun attempt, and the one for the job.

    ``rows`` are never changed. ``baseline``: templates of a good run's candidate lines
    (``analyzer.decide.unknown``)."""
    read = read or ReadSummary()
    dumps = culprit_event(read.flight_recorder, rows)
    rows, candidates = split_candidates(rows)
    _attempt_of(rows)
    per_attempt = _per_attempt(rows, facts, geo, dumps)
    v, alts, status = decide(rows, facts, geo, whole_job=True, dumps=dumps)
    shared: int | None = None
    if per_attempt and status == "failed":  # a job that restarted and finished is ok
        v, alts, shared = _first_attempt(v, alts, per_attempt)
    if status == "failed" and candidates:
        inferred, _ranked = infer(v, rows, candidates, geo.world, baseline)
        if inferred is not v:
            alts, v, shared = [v, *alts], replace(inferred, rule=VerdictId.INFERRED), None
    v = finish(replace(v, rank_assumed=_assumed(v, rows)))
    if shared is not None:
        per_attempt[shared] = v
    symptoms, lines = summarise(rows, v)
    if status == "ok" and not read.readable:
        status = "unknown"
    return Diagnosis(
        status=status,
        verdict=v,
        alternatives=[x if x is v else finish(x) for x in alts],
        symptoms=symptoms,
        symptom_lines=lines,
        facts=facts,
        attempts=[x if x is v else finish(x) for x in per_attempt],
        phase=phase(v, facts),
        ranks=rank_table(rows, geo.ranks(rows)),
        problems=[*read.problems, *survived_notes(rows)],
        files=read.files,
        bytes_read=read.bytes_read,
        flight_recorder=read.flight_recorder,
    )

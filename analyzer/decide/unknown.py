"""Failures no pattern knows: template, rank and explain the catalog's ``candidate`` lines.

``patterns/candidates.toml`` claims error-like lines that no other pattern claims (role
``candidate``). This module never reads logs itself; it works on the event rows:

1. **Templates.** Each candidate message is masked (timestamps, UUIDs, URLs, paths, IP
   addresses, hex ids, the job's host names, every number: ranks, pids, sizes) into a
   template, hashed into a stable, versioned fingerprint (``t1-<12 hex>``).
2. **Ranking.** Templates are grouped; a template that the good run (``--baseline``) also
   printed is never a candidate; one printed on many ranks is noise (every rank prints it);
   the best is on one or few ranks, before (or with) the cascade's first event, near its
   rank's death (torchrun's ``failed (exitcode: …)``, a signal).
3. **Verdict inputs.** :func:`infer` replaces a cascade verdict (a hang, a bare death, an
   unknown failure, a symptom-only network error) by an inferred one naming the rank and the
   line, with a confidence of 0.4-0.5; it never touches a verdict a catalog root explains.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from analyzer.catalog.vocabulary import SLURM_END_CATEGORIES
from analyzer.decide import wording
from analyzer.decide.fingerprint import normalize
from analyzer.decide.ids import RankId
from analyzer.decide.verdict import Evidence, Verdict
from analyzer.model.event import CANDIDATE, ROOT, SYMPTOM, Event

TEMPLATE_VERSION = 1
"""Bump when what a template masks changes: fingerprints of another version never compare."""
ROLE = CANDIDATE
SKEW = timedelta(seconds=2)
DEATH_WINDOW = timedelta(minutes=5)
"""A candidate this long (or less) before its rank's death is "near" it."""
DEATH_TAG = "death-record"
"""The tag of a launcher's or scheduler's record of a process death (an exit code, a signal)."""
_FAMILY = {"native-crash": "native_crash"}
"""Tags of candidate patterns whose line family a catalog category names (a crash, an
abort): tag -> the inferred verdict's category."""
_CASCADES = ("collective_timeout", "unknown")
_SYMPTOM_ONLY = ("network", "nccl_error")


@dataclass
class Template:
    """One masked line form and the candidate rows that share it."""

    template: str
    fingerprint: str
    rows: list[Event]
    ranks: set[int] = field(default_factory=set)
    in_baseline: bool = False
    near_death: bool = False
    before_cascade: bool = True

    @property
    def first(self) -> Event:
        """The earliest row (by time, then file and line); rows with a rank first."""
        return min(self.rows, key=_order)

    def as_dict(self, world: int | None, baseline: bool) -> dict[str, Any]:
        """JSON form for the report (``verdict.unknown``)."""
        r = self.first
        return {
            "template": self.template,
            "fingerprint": self.fingerprint,
            "template_version": TEMPLATE_VERSION,
            "pattern_id": r.pattern_id,
            "ranks": sorted(self.ranks),
            "world_size": world,
            "lines": len(self.rows),
            "near_death": self.near_death,
            "new_since_baseline": (not self.in_baseline) if baseline else None,
        }


def _order(r: Event) -> tuple[bool, datetime, str, int]:
    return (r.rank is None, r.time or datetime.max, r.file, r.line)


def split_candidates(
    rows: list[Event],
) -> tuple[list[Event], list[Event]]:
    """(rows without candidates, candidate rows); the first list feeds the existing rules.

    A traceback the reader assembled around a candidate line (a custom ``ShardError: …``, a
    source line with ``abort`` in it) is given back to the rules as the uncatalogued
    traceback it is without the candidate catalog."""
    keep, cands = [], []
    for r in rows:
        if r.role == ROLE and r.traceback:
            keep.append(_as_traceback(r))
        elif r.role == ROLE:
            cands.append(r)
        else:
            keep.append(r)
    return keep, [r for r in cands if _is_error_line(r)]


def _as_traceback(r: Event) -> Event:
    """The reader's event for a traceback no catalog pattern claims (``python.traceback``):
    a root with the exception line's type and message, a symptom when the traceback was cut
    before its exception line."""
    from analyzer.read.file import EXC_LINE, TRACEBACK_START, traceback_pattern

    p = traceback_pattern()
    body = (r.traceback or "").splitlines()
    last = body[-1] if len(body) > 1 else ""
    stripped = last.strip()
    em = (
        EXC_LINE.match(stripped)
        if last[:1]
        and not last[:1].isspace()
        and not stripped.startswith(
            ('File "', "During handling", "The above exception", TRACEBACK_START)
        )
        else None
    )
    captures = dict(r.captures)
    if em:
        captures["exc_type"] = em["exc_type"]
        captures["exc_msg"] = em["exc_msg"]
    return replace(
        r,
        pattern_id=p.id,
        category=p.category,
        role=ROOT if em else SYMPTOM,
        cause=p.cause,
        fix=p.fix,
        captures=captures,
        tags=p.tags,
        title=f"Uncaught {captures.get('exc_type') or 'exception'}",
    )


def _is_error_line(r: Event) -> bool:
    if not r.tagged("level-gated"):
        return True
    return (r.level or "") in ("E", "F")


def template_of(message: str, hosts: Iterable[str] = ()) -> str:
    """The message with its variable parts masked (the same masking as triage fingerprints)."""
    return normalize(message, hosts)


def template_fingerprint(template: str) -> str:
    """``t<version>-<12 hex>``: stable across jobs, versions and machines."""
    key = f"t{TEMPLATE_VERSION}\x1f{template}"
    return (
        f"t{TEMPLATE_VERSION}-"
        + hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    )


def hosts_of(rows: Iterable[Event]) -> set[str]:
    """The job's host names as the rows name them (masked as ``<host>`` in templates)."""
    out: set[str] = set()
    for r in rows:
        for h in (r.host, r.node):
            if isinstance(h, str) and h and not h.isdigit():
                out.add(h)
    return out


def group(
    cands: Sequence[Event],
    hosts: Iterable[str] = (),
    baseline: frozenset[str] = frozenset(),
) -> list[Template]:
    """Candidate rows grouped by template, in order of first appearance."""
    hosts = set(hosts)
    groups: dict[str, Template] = {}
    for r in sorted(cands, key=lambda r: (r.time or datetime.max, r.file, r.line)):
        t = template_of(r.message or r.text, hosts)
        g = groups.get(t)
        if g is None:
            g = groups[t] = Template(t, template_fingerprint(t), [], in_baseline=t in baseline)
        g.rows.append(r)
        if r.rank is not None:
            g.ranks.add(r.rank)
    return list(groups.values())


def rank_templates(
    templates: list[Template],
    rows: list[Event],
    world: int | None,
) -> list[Template]:
    """The templates that may explain the failure, best first.

    Kept: not in the baseline, printed on a rank, on few ranks (at most a quarter of the world,
    at least one), not later than the cascade's first event (2 s of skew). Order: near its
    rank's death first, then fewer ranks, then earlier.
    """
    active = [r for r in rows if r.role in (ROOT, SYMPTOM)]
    t0 = min((r.time for r in active if r.time is not None), default=None)
    few = _few_ranks(rows, world)
    deaths = [r for r in active if r.tagged(DEATH_TAG)]
    out = []
    for g in templates:
        if g.in_baseline or not g.ranks or len(g.ranks) > few:
            continue
        first = g.first
        ft = first.time
        g.before_cascade = t0 is None or ft is None or ft <= t0 + SKEW
        if not g.before_cascade:
            continue
        g.near_death = _died_near(g.ranks, ft, deaths)
        out.append(g)
    return sorted(
        out,
        key=lambda g: (not g.near_death, len(g.ranks), g.first.time or datetime.max),
    )


def _few_ranks(rows: list[Event], world: int | None) -> int:
    """The most ranks a template may be printed on: a quarter of the world (or of the ranks
    seen), at least one."""
    seen_ranks = {r.rank for r in rows if r.rank is not None}
    n = world or len(seen_ranks) or 1
    return max(1, n // 4)


def _died_near(ranks: set[int], ft: datetime | None, deaths: list[Event]) -> bool:
    """Whether one of ``ranks`` died from 2 s before ``ft`` to ``DEATH_WINDOW`` after it."""
    return any(
        d.rank in ranks
        and (ft is None or d.time is None or ft - SKEW <= d.time <= ft + DEATH_WINDOW)
        for d in deaths
    )


def is_cascade(v: Verdict, rows: list[Event]) -> bool:
    """Whether ``v`` only describes the cascade (no catalog root line explains the failure)."""
    if any(r.role == ROOT and r.category not in SLURM_END_CATEGORIES for r in rows):
        return False  # a catalogued cause (a SLURM end after a hang is not one)
    if v.category in _CASCADES:
        return True
    if v.pattern_id and any(r.pattern_id == v.pattern_id and r.tagged(DEATH_TAG) for r in rows):
        return True  # a bare death: an exit code or a signal with nothing before it
    return v.category in _SYMPTOM_ONLY and v.confidence <= 0.5


def infer(
    v: Verdict,
    rows: list[Event],
    cands: list[Event],
    world: int | None,
    baseline: frozenset[str] | None = None,
) -> tuple[Verdict, list[Template]]:
    """The verdict after looking at candidates, and the ranked templates (best first).

    ``v`` is returned unchanged unless it is a cascade and a rank-level template explains it:
    on the rank ``v`` already names, or, when ``v`` names none, a template its rank died of
    (the rank's death follows the line).
    """
    ranked = rank_templates(group(cands, hosts_of(rows), baseline or frozenset()), rows, world)
    if not ranked or not is_cascade(v, rows):
        return v, ranked
    if v.rank is not None:
        ranked = [g for g in ranked if g.ranks == {v.rank}] or []
        if not ranked:
            return v, []
    best = ranked[0]
    if v.rank is None and not best.near_death:
        # nothing ties the line to the failure: a rank that logged an error and lived on
        return v, ranked
    return _inferred(v, best, rows, world, baseline is not None), ranked


def _inferred(
    cascade: Verdict, g: Template, rows: list[Event], world: int | None, baseline: bool
) -> Verdict:
    r = g.first
    rank = r.rank
    line = (r.message or r.text).strip()
    n = world or len({x.rank for x in rows if x.rank is not None}) or None
    said = {
        "spread": wording.spread(len(g.ranks), n),
        "new": wording.NEW_SINCE_GOOD_RUN if baseline and not g.in_baseline else "",
    }
    cause = wording.inferred_cause(
        rank, line, g.near_death, said["spread"], said["new"], cascade.category
    )
    fix = wording.inferred_fix(rank, r.node)
    ev = [_evidence(r)]
    death_rows = [d for d in rows if d.rank == rank and d.tagged(DEATH_TAG)]
    if death_rows:
        ev.append(_evidence(min(death_rows, key=_order)))
    out = Verdict(
        category=_family(r),
        cause=cause,
        fix=fix,
        confidence=0.5 if g.near_death else 0.4,
        pattern_id=r.pattern_id,
        rank=rank,
        local_rank=r.local_rank,
        node=r.node,
        node_index=r.node_index,
        time=r.time,
        title=wording.INFERRED_TITLE,
        evidence=ev,
        attempt=r.attempt,
        rank_rule=RankId.INFERRED,
        rank_facts=said,
        unknown=g.as_dict(n, baseline),
    )
    return out


def _family(r: Event) -> str:
    """The inferred verdict's category: the family the candidate's tags name, else unknown."""
    return next((cat for tag, cat in _FAMILY.items() if r.tagged(tag)), "unknown")


def _evidence(r: Event) -> Evidence:
    return Evidence(r.file, r.line, r.text, r.rank, r.node, r.time)


def candidate_templates(rows: Sequence[Event]) -> frozenset[str]:
    """Templates of every candidate line of ``rows`` (a good run's, for ``--baseline``)."""
    _rows, cands = split_candidates(list(rows))
    hosts = hosts_of(rows)
    return frozenset(template_of(r.message or r.text, hosts) for r in cands)

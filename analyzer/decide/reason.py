"""From the event table to a verdict: the earliest root cause that explains the others.

Rules (docs/decisions.md): symptom and context events never become the verdict while a root event
exists; roots are ordered by time with a tolerance for clock skew and 1-second stamps, ties go
to the stronger evidence, then stream order; a SLURM end that struck a job already failed or
hung is a consequence; the same start-up error on every rank names no single rank; with only
timeouts the hang analysis names a culprit or says why it cannot.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import regex

from analyzer.catalog.model import render
from analyzer.catalog.vocabulary import SLURM_END_CATEGORIES, info, strength
from analyzer.decide import wording
from analyzer.decide.fixes import tailor_fix
from analyzer.decide.flightrec import culprit_row
from analyzer.decide.hangs import find_culprit
from analyzer.decide.rank_rules import headless, uniform_by_detail
from analyzer.decide.unknown import infer, split_candidates
from analyzer.decide.verdict import Diagnosis, Evidence, Verdict
from analyzer.model.event import Event
from analyzer.shape.attribute import Geometry
from analyzer.shape.facts import JobFacts
from analyzer.util.timefmt import iso

SKEW = timedelta(seconds=2)
"""Events this close count as simultaneous (clock skew between hosts, 1 s stamps)."""
_FAR_FUTURE = datetime.max


def _key(r: Event) -> tuple[datetime, int, str, int]:
    return (r.time or _FAR_FUTURE, -strength(r.category), r.file, r.line)


def _earliest(rows: list[Event]) -> Event:
    """Earliest by time within the skew tolerance, then strength, then stream order."""
    timed = [(r.time, r) for r in rows if r.time is not None]
    if not timed:
        return min(rows, key=lambda r: (-strength(r.category), r.file, r.line))
    t0 = min(t for t, _r in timed)
    window = [(t, r) for t, r in timed if t - t0 <= SKEW]
    return min(window, key=lambda tr: (-strength(tr[1].category), tr[0], tr[1].file, tr[1].line))[1]


def _evidence(r: Event) -> Evidence:
    ctx = (r.traceback or "").splitlines()
    return Evidence(r.file, r.line, r.text, r.rank, r.node, r.time, ctx)


def _values(r: Event, facts: JobFacts) -> dict[str, Any]:
    v: dict[str, Any] = {**facts.values, **r.values()}
    v["rank"] = r.rank if r.rank is not None else "?"
    return v


_UNKNOWN_SUBJECT = regex.compile(r"\b(?P<w>[Rr]ank|[Nn]ode) \?(?=[\s,.:;)]|$)")


def _unknowns(text: str) -> str:
    """``Rank ? raised`` reads badly: say "a rank" where the logs name none."""
    return _UNKNOWN_SUBJECT.sub(
        lambda m: ("A " if m["w"][0].isupper() else "a ") + m["w"].lower(), text
    )


def _verdict_from(r: Event, facts: JobFacts, geo: Geometry, conf: float) -> Verdict:
    vals = _values(r, facts)
    cause = _unknowns(render(r.cause or r.title or "", vals))
    fix = render(r.fix or "", vals)
    if not r.fix_exact:  # a reasoning rule's own fix is already specific
        fix = tailor_fix(r, fix, facts, geo)
    fix = _unknowns(fix)
    return Verdict(
        category=r.category,
        cause=cause,
        fix=fix,
        confidence=conf,
        pattern_id=r.pattern_id,
        rank=r.rank,
        local_rank=r.local_rank,
        node=r.node,
        node_index=r.node_index,
        time=r.time,
        title=r.title or "",
        evidence=[_evidence(r)],
        attempt=r.attempt,
        key=_failure_key(r),
    )


def _failure_key(r: Event) -> dict[str, str]:
    """Structured identity of the event: exception type, innermost frame, message, op."""
    key = {
        "exc_type": r.cap("exc_type") or "",
        "frame": r.cap("frame") or "",
        "message": r.cap("exc_msg") or r.message or r.text or "",
    }
    op = r.cap("op")
    if op:
        key["op"] = str(op)
    return {k: v for k, v in key.items() if v}


def _signature(r: Event) -> tuple[str, str]:
    return (r.pattern_id, r.cap("exc_type") or "")


def _universe(rows: list[Event], facts: JobFacts, geo: Geometry) -> set[int]:
    ws = geo.world_size
    if isinstance(ws, int) and 0 < ws <= 1_000_000:
        return set(range(ws))
    return {r.rank for r in rows if r.rank is not None}


def _world(facts: JobFacts, geo: Geometry) -> int | None:
    ws = geo.world_size  # settled once (Geometry.resolve)
    return ws if isinstance(ws, int) and ws > 0 else None


def _first_per_rank(rows: list[Event]) -> list[Event]:
    firsts: dict[int, Event] = {}
    for r in sorted(rows, key=_key):
        if r.rank is not None:
            firsts.setdefault(r.rank, r)
    return sorted(firsts.values(), key=_key)


def _enrich_rank(v: Verdict, chosen: Event, active: list[Event]) -> None:
    """A root without a rank (a scheduler line) takes it from a same-category event nearby."""
    kin = {chosen.category, *info(chosen.category).kin}
    near = [
        r
        for r in active
        if r.category in kin
        and r.rank is not None
        and (
            chosen.time is None
            or r.time is None
            or abs(r.time - chosen.time) <= timedelta(minutes=2)
        )
    ]
    ranks = {r.rank for r in near}
    if chosen.category == "network" and chosen.time is not None:
        # A peer that died first makes the link error its echo: do not blame the reporter.
        died = [
            r
            for r in active
            if r.tagged("death") and r.time is not None and r.time < chosen.time - SKEW
        ]
        if died:
            _why(v, "peer-died-first", file=died[0].file, line=died[0].line)
            return
    if len(ranks) == 1:
        _take_rank(v, near[0], "from-line")


def _root_verdict(roots: list[Event], rows: list[Event], facts: JobFacts, geo: Geometry) -> Verdict:
    chosen = _earliest(roots)
    conf = 0.75 if chosen.tagged("uncatalogued") else info(chosen.category).confidence
    v = _verdict_from(chosen, facts, geo, conf)
    sig = _signature(chosen)
    same = _first_per_rank([r for r in roots if _signature(r) == sig])
    universe = _universe(rows, facts, geo)
    if len(same) >= 2:
        n = len(same)
        every = bool(universe) and {r.rank for r in same} >= universe
        who = f"all {n} ranks" if every else "ranks " + ", ".join(str(r.rank) for r in same[:8])
        t0, t1 = same[0].time, same[1].time
        if t0 is not None and t1 is not None and t1 - t0 > SKEW:
            first = same[0]
            v = _verdict_from(first, facts, geo, conf)
            _why(v, "same-way-first", who=who, rank=first.rank)
        else:
            v.rank = v.local_rank = None
            if every:
                v.node = v.node_index = None
            _why(v, "same-way-together", who=who)
        for r in same[1:3]:
            v.evidence.append(_evidence(r))
    elif chosen.rank is None:
        _enrich_rank(v, chosen, [r for r in rows if r.role != "context"])
        if v.rank is None and not v.rank_rule:
            _only_death(v, rows)
    if v.node is None and v.rank is None and not v.rank_rule:
        _enrich_node(v, chosen, rows, geo)
    uniform = (
        info(chosen.category).uniform
        or chosen.tagged("uniform")
        or uniform_by_detail(chosen, rows)
    )
    if v.rank is not None and len(same) < 2 and uniform:
        _uniform_rank(v, chosen, rows)
    if v.rank is not None and len(same) < 2 and headless(chosen) and geo.world_size != 1:
        _why(v, "paste-cut", rank=v.rank)
        v.rank = v.local_rank = None
    return v


_KILLED_BY_LAUNCHER = frozenset({"-15", "15", "SIGTERM", "-2", "SIGINT"})
"""Exit codes and signals of workers the launcher stopped itself: never the one that failed."""


def _only_death(v: Verdict, rows: list[Event]) -> None:
    """An unranked root takes the rank of the one worker the launcher reports dead, when
    exactly one is (torchrun's ``failed (exitcode: 1) local_rank: 0``, mp.spawn's process
    exits): the line came from the process that died. Workers it SIGTERMed do not count."""
    dead: dict[int, Event] = {}
    for r in rows:
        if r.rank is None or not r.tagged("death"):
            continue
        if r.role_of("exit_code") in _KILLED_BY_LAUNCHER or r.role_of("signal") in (
            _KILLED_BY_LAUNCHER
        ):
            continue
        dead.setdefault(r.rank, r)
    if len(dead) != 1:
        return
    (r,) = dead.values()
    _take_rank(v, r, "only-death")


def _only_rank(v: Verdict, geo: Geometry) -> None:
    """A job of one process failed on its only rank, 0 (unless a rule already said why no
    rank is named)."""
    if v.rank is None and not v.rank_rule and geo.world_size == 1:
        v.rank, v.local_rank = 0, 0
        _why(v, "only-rank")


def _take_rank(v: Verdict, r: Event, rule: str) -> None:
    """The verdict takes rank, local rank and node from event ``r`` (rank rule ``rule``, which
    names the line), and shows ``r`` as evidence."""
    v.rank, v.local_rank = r.rank, r.local_rank
    v.node, v.node_index = r.node or v.node, r.node_index
    _why(v, rule, file=r.file, line=r.line)
    v.evidence.append(_evidence(r))


def _why(v: Verdict, rule: str, **facts: Any) -> None:
    """Record how the verdict's rank was settled; ``wording.finish`` words it."""
    v.rank_rule, v.rank_facts = rule, facts


def _uniform_rank(v: Verdict, chosen: Event, rows: list[Event]) -> None:
    """A start-up error every rank raises alike (a bad argument, a missing module) names no
    rank when the logs show no other rank: the launcher reported the first copy it saw. Other
    ranks seen without it (a node with a broken environment) keep the rank."""
    sig = _signature(chosen)
    others = {
        r.rank
        for r in rows
        if r.rank is not None and r.rank != v.rank and r.role != "context" and _signature(r) != sig
    }
    if others:
        return
    _why(v, "uniform", rank=v.rank)
    v.rank = v.local_rank = None


_NEAR_LINES = 2
"""An srun exit this close below an unlabelled root line is that line's task's exit."""


def _enrich_node(v: Verdict, chosen: Event, rows: list[Event], geo: Geometry) -> None:
    """An unprefixed root line takes its node from srun's task exits, when they single one out.

    A task that exits on its own (an exit code, not a SIGTERM/SIGKILL from srun) right below the
    line, or the only task that exits on its own, is the line's node. The first task to exit is
    not enough by itself: in a two-node job the healthy node's agent often exits first.
    """
    exits = [
        r
        for r in rows
        if r.tagged("task-exit")
        and r.role_of("exit_code") is not None
        and (r.role_of("task") or "").isdecimal()
    ]
    tasks = {int(r.role_of("task") or 0) for r in exits}
    if not tasks:
        return
    last = chosen.line  # an assembled traceback's line is its closing exception line
    below = [r for r in exits if r.file == chosen.file and last < r.line <= last + _NEAR_LINES]
    if len(tasks) == 1:
        first = exits[0]
    elif below:
        first = min(below, key=lambda r: r.line)
    else:
        _why(v, "srun-exits-many", tasks=len(tasks))
        return
    task = int(first.role_of("task") or 0)
    v.node_index = task
    v.node = geo.node_label(geo.task_hosts.get(task), task)
    _why(v, "srun-exit", task=task, file=first.file, line=first.line)


def _hang_verdict(
    timeouts: list[Event], rows: list[Event], facts: JobFacts, geo: Geometry
) -> Verdict:
    finding = find_culprit(timeouts, _universe(rows, facts, geo), culprit_row(rows))
    first = _earliest(timeouts)
    v = _verdict_from(first, facts, geo, finding.confidence)
    v.category = "collective_timeout"
    ranks = len({r.rank for r in timeouts if r.rank is not None})
    op = first.cap("op")
    seq = first.cap("seq")
    what = wording.collective(op, seq)
    v.rule = "hang"
    if finding.rank is not None:
        culprit_rows = [r for r in rows if r.rank == finding.rank]
        node = next((r.node for r in culprit_rows if r.node), None)
        v.rank, v.node = finding.rank, node
        v.local_rank = next((r.local_rank for r in culprit_rows if r.local_rank is not None), None)
        v.node_index = next((r.node_index for r in culprit_rows if r.node_index is not None), None)
        if v.node is None and geo.nproc_per_node:
            v.node_index = finding.rank // geo.nproc_per_node
            hosts = {r.host for r in rows if r.node_index == v.node_index and r.host}
            v.node = geo.node_label(hosts.pop() if len(hosts) == 1 else None, v.node_index)
        v.cause = wording.hang_cause(ranks, what, finding.rank, finding.reason)
        _why(v, "culprit", reason=finding.reason)
        v.evidence = [_evidence(r) for r in finding.rows] + [_evidence(first)]
    else:
        v.rank = v.local_rank = v.node_index = None
        v.node = None
        v.cause = wording.hang_cause(ranks, what, None, finding.reason)
        _why(v, "culprit", reason=finding.reason)
    base = render(first.fix or "", _values(first, facts))
    v.fix = tailor_fix(replace(first, category="collective_timeout"), base, facts, geo)
    return v


def _slurm_end_verdict(
    ends: list[Event], rows: list[Event], facts: JobFacts, geo: Geometry
) -> Verdict:
    end = min(ends, key=_key)
    v = _verdict_from(end, facts, geo, 0.85)
    v.rank = v.local_rank = None
    v.rule = "slurm-end"
    _why(v, "slurm-end")
    return v


def _over_joined(r: Event) -> Event | None:
    """A line saying more workers joined than the world holds (a capture with role ``joined``
    above the one with role ``world_size``) is a rendezvous root whatever its own role: two
    jobs, or a stale ``file://`` store, share one store. None for any other line."""
    joined, world = r.role_of("joined") or "", r.role_of("world_size") or ""
    if not (joined.isdecimal() and world.isdecimal() and int(joined) > int(world) > 0):
        return None
    return replace(
        r,
        role="root",
        category="rendezvous",
        title=wording.OVER_JOINED_TITLE,
        cause=wording.over_joined_cause(joined, world),
        fix=wording.OVER_JOINED_FIX,
        fix_exact=True,
    )


def _claimed_twice(rows: list[Event]) -> list[Event]:
    """The second claim of one global rank in one file and attempt (tag ``rank-claim``)
    becomes a rendezvous root: two launchers handed out the same ranks (Lightning started by
    srun without one task per GPU, two agents per node), so the world can never form."""
    first: dict[tuple[str, int | None, int], Event] = {}
    promoted: dict[int, Event] = {}
    for i, r in enumerate(rows):  # rows are in file and line order
        rank = r.rank
        if rank is None or not r.tagged("rank-claim"):
            continue
        earlier = first.setdefault((r.file, r.attempt, rank), r)
        if earlier is not r:
            promoted[i] = replace(
                r,
                role="root",
                category="rendezvous",
                title=wording.CLAIMED_TWICE_TITLE,
                cause=wording.claimed_twice_cause(rank, r.file, earlier.line, r.line),
                fix=wording.CLAIMED_TWICE_FIX,
                fix_exact=True,
            )
    if not promoted:
        return rows
    return [promoted.get(i, r) for i, r in enumerate(rows)]


def _victim_rank(v: Verdict, symptom: Event) -> None:
    """A verdict made from a symptom does not name the symptom's rank (unless the line
    records that rank's own death): the rank is where the failure showed, not where it
    began."""
    if v.rank is not None and not symptom.tagged("death"):
        _why(v, "victim", rank=v.rank)
        v.rank = v.local_rank = None


def _say_if_assumed(v: Verdict, rows: list[Event]) -> None:
    """When the verdict's rank rests only on the single-node assumption (local rank N taken
    as global rank N), the note says so."""
    if v.rank is None:
        return
    mine = [r for r in rows if r.rank == v.rank]
    v.rank_assumed = bool(mine) and all(r.rank_assumed for r in mine)


def decide(rows: list[Event], facts: JobFacts, geo: Geometry) -> tuple[Verdict, list[Verdict], str]:
    """The verdict, alternatives and status (``failed``/``ok``) for one attempt's rows."""
    rows = _claimed_twice([_over_joined(r) or r for r in rows])
    active = [r for r in rows if r.role != "context"]
    roots = [r for r in active if r.role == "root" and r.category not in SLURM_END_CATEGORIES]
    ends = [r for r in active if r.category in SLURM_END_CATEGORIES and r.role == "root"]
    symptoms = [r for r in active if r.role == "symptom"]
    alternatives: list[Verdict] = []

    if roots:
        v = _root_verdict(roots, rows, facts, geo)
        v.rule = "root"
        seen = {(v.category, v.pattern_id)}
        for r in sorted(roots, key=_key):
            if (r.category, r.pattern_id) not in seen and len(alternatives) < 3:
                seen.add((r.category, r.pattern_id))
                alternatives.append(_verdict_from(r, facts, geo, 0.3))
        if ends:
            alternatives.append(_verdict_from(min(ends, key=_key), facts, geo, 0.2))
        return v, alternatives, "failed"

    if ends:
        end = min(ends, key=_key)
        t_end = end.time
        before = [
            r
            for r in symptoms
            if info(r.category).before_end
            and (t_end is None or (r.time is not None and r.time < t_end - SKEW))
        ]
        if before:
            cats = Counter(r.category for r in before)
            if "collective_timeout" in cats:
                v = _hang_verdict(
                    [r for r in before if r.category == "collective_timeout"], rows, facts, geo
                )
            else:
                cat = max(cats, key=lambda c: (strength(c), cats[c]))
                first = min((r for r in before if r.category == cat), key=_key)
                v = _verdict_from(first, facts, geo, 0.6)
            alternatives.append(_slurm_end_verdict(ends, rows, facts, geo))
            v.cause += wording.then_slurm_ended(end.title or end.category)
            v.rule = "end-after-symptoms"
            return v, alternatives, "failed"
        return _slurm_end_verdict(ends, rows, facts, geo), alternatives, "failed"

    promotable = [r for r in symptoms if info(r.category).promotable and r.tagged("death-record")]
    if promotable:
        first = _earliest(promotable)
        v = _verdict_from(first, facts, geo, 0.6)
        v.rule = "death-record"
        return v, alternatives, "failed"
    timeouts = [r for r in symptoms if r.category == "collective_timeout"]
    if timeouts:
        return _hang_verdict(timeouts, rows, facts, geo), alternatives, "failed"
    if symptoms:
        cats = Counter(r.category for r in symptoms)
        first = _earliest(symptoms)
        cat = cats.most_common(1)[0][0]
        if info(cat).evident:
            first = _earliest([r for r in symptoms if r.category == cat])
            v = _verdict_from(first, facts, geo, 0.5)
            _victim_rank(v, first)
            v.rule = "symptoms"
            return v, alternatives, "failed"
        v = _verdict_from(first, facts, geo, 0.2)
        _victim_rank(v, first)
        if v.rank is None:
            _only_death(v, rows)
        v.category = "unknown"
        v.title = wording.UNKNOWN_TITLE
        v.cause = wording.unknown_cause(first.title or first.pattern_id)
        v.fix = wording.UNKNOWN_FIX
        v.rule = "unknown"
        return v, alternatives, "failed"
    v = Verdict(
        category="none",
        cause=wording.NONE_CAUSE,
        fix=wording.NONE_FIX,
        confidence=0.8,
        title=wording.NONE_TITLE,
        rule="none",
    )
    return v, alternatives, "ok"


def _summarise(rows: list[Event], v: Verdict) -> tuple[dict[str, Any], list[str]]:
    groups: dict[str, list[Event]] = defaultdict(list)
    ev = v.evidence[0] if v.evidence else None
    for r in rows:
        if r.role == "context":
            continue
        if ev is not None and r.file == ev.file and r.line == ev.line:
            continue
        # The root restated is not downstream of itself: the same pattern on the same rank, or
        # with no rank (a copy in another stream, the job-level twin of a step-level line), or
        # on any rank when the verdict names none (every rank failed the same way).
        if r.pattern_id == v.pattern_id and (v.rank is None or r.rank in (v.rank, None)):
            continue
        groups[r.category].append(r)
    out: dict[str, Any] = {}
    lines: list[str] = []
    for cat, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        ranks = {r.rank for r in rs if r.rank is not None}
        times = [r.time for r in rs if r.time is not None]
        pats: Counter[str] = Counter()
        for r in rs:
            pats[r.pattern_id] += r.repeats or 1
        n = pats.total()  # matched lines: a kept event stands for its folded repeats too
        out[cat] = {
            "ranks": len(ranks),
            "events": n,
            "first_time": iso(min(times)) if times else None,
            "patterns": dict(pats.most_common(5)),
        }
        top = rs[0]
        what = top.title or top.pattern_id
        ops = Counter((r.cap("op"), r.cap("seq")) for r in rs if r.cap("op"))
        if ops:
            (op, seq), _n = ops.most_common(1)[0]
            what += f" on {op}" + (f" SeqNum {seq}" if seq else "")
        when = ""
        if times and v.time:
            delta = min(times) - v.time
            if delta.total_seconds() > 1:
                when = f" {_human(delta)} later"
        lines.append(wording.downstream_line(wording.ranks_phrase(len(ranks)), what, when, n))
    return out, lines


def _human(d: timedelta) -> str:
    s = int(d.total_seconds())
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min"


def _phase(v: Verdict, facts: JobFacts, rows: list[Event]) -> str | None:
    if v.category == "none":
        return None
    if facts.checkpoint_saving:
        return "checkpoint save"
    if info(v.category).startup:
        return "start-up"
    if facts.last_iteration is None:
        return "start-up"
    if facts.last_iteration <= 1:
        return "first iteration"
    return "training"


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


@dataclass(frozen=True)
class ReadSummary:
    """What reading the job said about itself, for the diagnosis."""

    problems: list[str] = field(default_factory=list)
    files: int = 0
    bytes_read: int = 0
    readable: bool = True
    flight_recorder: dict[str, Any] | None = None


def diagnose_rows(
    rows: list[Event],
    facts: JobFacts,
    geo: Geometry,
    read: ReadSummary | None = None,
    baseline: frozenset[str] | None = None,
) -> Diagnosis:
    """The job's complete diagnosis: one verdict per torchrun attempt, and the one for the job.

    ``baseline``: templates of a good run's candidate lines (``analyzer.decide.unknown``)."""
    read = read or ReadSummary()
    rows, candidates = split_candidates(rows)
    _attempt_of(rows)
    attempts = sorted({r.attempt for r in rows if r.attempt is not None})
    per_attempt: list[Verdict] = []
    if len(attempts) > 1:
        for a in attempts:
            ar = [r for r in rows if r.attempt in (a, None)]
            va, _alts, _st = decide(ar, facts, geo)
            va.attempt = a
            per_attempt.append(va)
    v, alts, status = decide(rows, facts, geo)
    if status == "failed":
        _only_rank(v, geo)
    if per_attempt:
        first = next((x for x in per_attempt if x.category not in ("none", "unknown")), None)
        if first is not None and (first.category, first.pattern_id) != (v.category, v.pattern_id):
            alts.insert(0, v)
            v = first
        elif first is not None:
            v.attempt = first.attempt
        echoes = {"rendezvous", "collective_timeout", "unknown", "none", v.category}
        for x in per_attempt:
            if x.attempt != v.attempt and x.category not in echoes:
                alts.insert(0, x)
        n = len(per_attempt)
        v.cause += wording.attempt_suffix(v.attempt, n)
    if status == "failed" and candidates:
        inferred, _ranked = infer(v, rows, candidates, _world(facts, geo), baseline)
        if inferred is not v:
            alts.insert(0, v)
            v = inferred
            v.rule = "inferred"
    _say_if_assumed(v, rows)
    for alt in alts:
        alt.rule = alt.rule or "alternative"
    for x in {id(x): x for x in (v, *alts, *per_attempt)}.values():
        wording.finish(x)
    symptoms, lines = _summarise(rows, v)
    ranks: dict[int, dict[str, Any]] = {
        r.rank: {
            "node": r.node,
            "role": r.role,
            "category": r.category,
            "time": iso(r.time),
        }
        for r in _first_per_rank([r for r in rows if r.role != "context"])
        if r.rank is not None
    }
    for rk in _universe(rows, facts, geo):
        ranks.setdefault(rk, {"node": None, "role": None, "category": None, "time": None})
    if status == "ok" and not read.readable:
        status = "unknown"
    return Diagnosis(
        status=status,
        verdict=v,
        alternatives=alts,
        symptoms=symptoms,
        symptom_lines=lines,
        facts=facts.as_dict(),
        attempts=per_attempt,
        phase=_phase(v, facts, rows),
        ranks=ranks,
        problems=list(read.problems),
        files=read.files,
        bytes_read=read.bytes_read,
        flight_recorder=read.flight_recorder,
    )

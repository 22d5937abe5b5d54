"""The verdict rules: which event explains the failure, tried in order until one applies.

Each rule is a pure function from the job (``JobView``) to a ``Proposal`` or None, with an id
(``Verdict.rule``, worded in ``wording.RULES``) and a docstring that says when it applies and
why; ``docs/decisions.md`` lists them in this order (a test checks it). The rank is decided
afterwards, by its own rules (``analyzer.decide.rank_decision``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from analyzer.catalog.vocabulary import Category, info, strength
from analyzer.decide.confidence import CONFIDENCE
from analyzer.decide.flightrec import culprit_row
from analyzer.decide.hangs import HangFinding, find_culprit
from analyzer.decide.job import JobView
from analyzer.decide.ordering import SKEW, clearly_first, earliest, first_per_rank, key, signature
from analyzer.model.event import Event

KILLED_BY_LAUNCHER = frozenset({"-15", "15", "SIGTERM", "-2", "SIGINT"})
"""Exit codes and signals of workers the launcher stopped itself: never the one that failed."""
ALTERNATIVES = 3
"""At most this many other roots are shown beside a root verdict."""


@dataclass(frozen=True)
class Proposal:
    """What a verdict rule proposes: the event the verdict is made from, and why."""

    rule: str
    """The verdict rule's id."""
    event: Event | None
    """The event the verdict's cause, fix, time and evidence come from (None: no failure)."""
    confidence: float
    status: str = "failed"
    category: str | None = None
    """The verdict's category when it is not the event's (a hang, an unknown failure)."""
    same: tuple[Event, ...] = ()
    """Each rank's first copy of the same failure (a root verdict), in time order."""
    hang: HangFinding | None = None
    """The hang analysis (a hang verdict)."""
    timeouts: tuple[Event, ...] = ()
    """The timeouts the hang analysis compared."""
    end: Event | None = None
    """The SLURM end that only confirmed the failure (``end-after-symptoms``)."""
    alternatives: tuple[Proposal, ...] = ()


def _copies(
    first: Event, events: Iterable[Event], alike: Callable[[Event], object]
) -> tuple[Event, tuple[Event, ...]]:
    """Each rank's first copy of ``first``'s failure (the events ``alike`` says are the same),
    in time order, and the copy the verdict is made from: the first rank's when it was clearly
    first, else ``first``."""
    key = alike(first)
    same = tuple(first_per_rank(r for r in events if alike(r) == key))
    return (same[0] if clearly_first(same) else first), same


def root(job: JobView) -> Proposal | None:
    """A root event exists: the earliest root (within the clock-skew tolerance, then the
    stronger evidence, then stream order) is the cause, whatever symptoms came before it.
    When the same failure (pattern and exception type) shows on several ranks and one was
    clearly first, that rank's copy is the one the verdict is made from."""
    if not job.roots:
        return None
    chosen = earliest(job.roots)
    if chosen.tagged("uncatalogued"):
        conf = CONFIDENCE["root-uncatalogued"]
    elif chosen.cap("near_miss"):
        conf = min(CONFIDENCE["root-near-miss"], info(chosen.category).confidence)
    else:
        conf = info(chosen.category).confidence
    event, same = _copies(chosen, job.roots, signature)
    return Proposal("root", event, conf, same=same, alternatives=_root_alternatives(job, event))


def _root_alternatives(job: JobView, chosen: Event) -> tuple[Proposal, ...]:
    """Other roots of another category or pattern (up to ``ALTERNATIVES``), then the first
    SLURM end, as alternatives of a root verdict."""
    seen = {(chosen.category, chosen.pattern_id)}
    out: list[Proposal] = []
    for r in sorted(job.roots, key=key):
        if (r.category, r.pattern_id) not in seen and len(out) < ALTERNATIVES:
            seen.add((r.category, r.pattern_id))
            out.append(Proposal("alternative", r, CONFIDENCE["alternative"]))
    if job.ends:
        end = min(job.ends, key=key)
        out.append(Proposal("alternative", end, CONFIDENCE["alternative-slurm-end"]))
    return tuple(out)


def end_after_symptoms(job: JobView) -> Proposal | None:
    """SLURM ended the job (time limit, preemption, node failure) after symptoms that explain
    a failure of their own (a hang's timeouts, a host OOM, a diverging loss): the end only
    confirmed them. The strongest such symptom (a hang before all) is the cause."""
    if not job.ends:
        return None
    end = min(job.ends, key=key)
    t_end = end.time
    before = [r for r in job.symptoms if info(r.category).before_end and _before(r, end, t_end)]
    if not before:
        return None
    alternatives = (Proposal("slurm-end", end, CONFIDENCE["slurm-end"]),)
    cats = Counter(r.category for r in before)
    if Category.COLLECTIVE_TIMEOUT in cats:
        hung = _hang(job, [r for r in before if r.category == Category.COLLECTIVE_TIMEOUT])
        return replace(hung, rule="end-after-symptoms", end=end, alternatives=alternatives)
    cat = max(cats, key=lambda c: (strength(c), cats[c]))
    first = min((r for r in before if r.category == cat), key=key)
    return Proposal(
        "end-after-symptoms",
        first,
        CONFIDENCE["end-after-symptoms"],
        end=end,
        alternatives=alternatives,
    )


def _before(r: Event, end: Event, t_end: datetime | None) -> bool:
    """Whether symptom ``r`` came before SLURM's dated ``end`` (an undated end: every
    symptom): by their times, or, for a symptom undated or within the clock-skew tolerance
    of the end, by its place before the end in the one file that holds both."""
    if t_end is None:
        return True
    if r.time is None or abs(r.time - t_end) <= SKEW:
        return r.file == end.file and r.line < end.line
    return r.time < t_end


def slurm_end(job: JobView) -> Proposal | None:
    """SLURM ended the job and nothing failed before it: the end is the verdict."""
    if not job.ends:
        return None
    return Proposal("slurm-end", min(job.ends, key=key), CONFIDENCE["slurm-end"])


def death_record(job: JobView) -> Proposal | None:
    """No root line, but a worker's death record of a category that says why it died (a
    scheduler's OOM kill, a fatal signal, a CUDA error exit): the earliest is the verdict.
    Several ranks' records of the same death are compared as a root's copies are."""
    promotable = [
        r for r in job.symptoms if info(r.category).promotable and r.tagged("death-record")
    ]
    if not promotable:
        return None
    event, same = _copies(earliest(promotable), promotable, signature)
    return Proposal("death-record", event, CONFIDENCE["death-record"], same=same)


def cut_traceback(job: JobView) -> Proposal | None:
    """No root line, but one rank's own traceback cut before its exception line (a paste that
    ends inside it, ``cut_own_traceback``): that rank raised an uncaught Python exception whose
    type the log lost, and the other ranks' timeouts and exits followed it. The verdict is that
    exception (or what its frames say, e.g. a checkpoint failure), at low confidence. Cut
    tracebacks of two ranks or more do not single one out: the rule does not apply."""
    cut = [r for r in job.symptoms if cut_own_traceback(r)]
    if len({r.rank for r in cut}) != 1:
        return None
    return Proposal("cut-traceback", earliest(cut), CONFIDENCE["cut-traceback"])


def cut_own_traceback(e: Event) -> bool:
    """Whether ``e`` is a rank's own traceback cut before its exception line (a paste that
    ends inside it): that rank raised an uncaught Python exception whose type the log lost.
    A traceback through a ``torch.distributed`` call is left alone: its exception may be a
    collective's timeout or NCCL error."""
    return (
        e.tagged("uncatalogued")
        and e.rank is not None
        and not e.cap("exc_type")
        and "distributed_c10d.py" not in (e.traceback or "")
    )


def hang(job: JobView) -> Proposal | None:
    """Only collective timeouts: a hang. The hang analysis names a culprit only from
    evidence (the Flight Recorder dumps, a desync report, a rank missing from the timeouts),
    else says why it cannot."""
    timeouts = [r for r in job.symptoms if r.category == Category.COLLECTIVE_TIMEOUT]
    return _hang(job, timeouts) if timeouts else None


def _hang(job: JobView, timeouts: list[Event]) -> Proposal:
    finding = find_culprit(timeouts, set(job.universe), culprit_row(list(job.rows)))
    return Proposal(
        "hang",
        earliest(timeouts),
        finding.confidence,
        category=Category.COLLECTIVE_TIMEOUT,
        hang=finding,
        timeouts=tuple(timeouts),
    )


def symptoms(job: JobView) -> Proposal | None:
    """Only symptoms, and the most common class is evident on its own (a diverging loss, a
    rendezvous, network or NCCL error): the earliest of that class is the cause."""
    if not job.symptoms:
        return None
    cat = Counter(r.category for r in job.symptoms).most_common(1)[0][0]
    if not info(cat).evident:
        return None
    first = earliest(r for r in job.symptoms if r.category == cat)
    return Proposal("symptoms", first, CONFIDENCE["symptoms"])


def unknown(job: JobView) -> Proposal | None:
    """Only symptoms of no evident class: the job failed and the cause is unknown; the
    earliest symptom is shown as the evidence. When a worker died of a signal that says why
    (``SIGNAL_CATEGORY``: SIGABRT, SIGSEGV, SIGKILL …), the verdict takes that category."""
    if not job.symptoms:
        return None
    codes = [
        _exit_code(r) or 0
        for r in job.symptoms
        if r.tagged("death") or r.tagged("death-record")
    ]
    signalled = [SIGNAL_CATEGORY[c] for c in codes if c in SIGNAL_CATEGORY]
    category = signalled[0] if len(set(signalled)) == 1 else Category.UNKNOWN
    return Proposal("unknown", earliest(job.symptoms), CONFIDENCE["unknown"], category=category)


def _exit_code(e: Event) -> int | None:
    """The non-zero exit code (or negative signal) a line records, if any."""
    code = e.role_of("exit_code")
    try:
        n = int(code) if code is not None else 0
    except ValueError:
        return None
    return n or None


def dead_worker(job: JobView) -> Proposal | None:
    """No root, SLURM end or symptom, but a worker's exit record (a non-zero exit code in
    torchrun's ChildFailedError block, an agent's or srun's exit line): the job failed and no
    line says why. The verdict is ``unknown`` (a native crash or host OOM when the worker died of
    a signal that says so, ``SIGNAL_CATEGORY``), made from the first worker that exited on its own
    (one the launcher stopped, SIGTERM/SIGINT, only when no other did); several workers that
    exited alike (the same code) are compared as a root's copies are."""
    dead = [r for r in job.rows if _exit_code(r) is not None]
    if not dead:
        return None
    own = [r for r in dead if str(_exit_code(r)) not in KILLED_BY_LAUNCHER] or dead
    event, same = _copies(earliest(own), own, _exit_code)
    category = SIGNAL_CATEGORY.get(_exit_code(event) or 0, Category.UNKNOWN)
    return Proposal("dead-worker", event, CONFIDENCE["unknown"], category=category, same=same)


SIGNAL_CATEGORY: dict[int, str] = {
    -6: Category.NATIVE_CRASH,
    -11: Category.NATIVE_CRASH,
    -7: Category.NATIVE_CRASH,
    -4: Category.NATIVE_CRASH,
    -8: Category.NATIVE_CRASH,
    -9: Category.HOST_OOM,
}
"""What a worker's death by a signal (a negative exit code) says when no line says more:
SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE a native crash; SIGKILL the OOM killer."""


_WENT_ON = ("progress", "checkpoint-save-begin", "checkpoint-save-end")
"""Tags of lines that show a job past its start-up: an iteration line, a checkpoint save."""


def stalled_start(job: JobView) -> Proposal | None:
    """No failure line, but the logs end while the job was still forming: processes announced
    their global rank (tag ``rank-claim``) for fewer ranks than the world they name, and no
    line after the last announcement in its file shows the job going on (only start-up lines
    follow, no iteration line or checkpoint save anywhere). The ranks that never announced
    themselves never joined, so the job could not form: a rendezvous failure (no rank named),
    its evidence the last announcement. A job whose every rank announced itself, or that
    printed anything recognised after its start-up, is not called stalled."""
    claims = [r for r in job.rows if r.tagged("rank-claim") and r.rank is not None]
    if not claims or any(r.tagged(t) for r in job.rows for t in _WENT_ON):
        return None
    worlds = {_int(r.role_of("world_size")) for r in claims} | {job.geo.world}
    worlds.discard(None)
    if len(worlds) != 1:
        return None
    (world,) = worlds
    claimed = {r.rank for r in claims}
    if not world or len(claimed) >= world:
        return None
    last = max(claims, key=lambda r: (r.file, r.line))
    later = [
        r
        for r in job.rows
        if r.file == last.file
        and r.line > last.line
        and not (r.category == Category.RENDEZVOUS and r.role == "context")
    ]
    if later:
        return None
    return Proposal(
        "stalled-start", last, CONFIDENCE["stalled-start"], category=Category.RENDEZVOUS
    )


def _int(v: str | None) -> int | None:
    return int(v) if v is not None and v.isdecimal() else None


def none(job: JobView) -> Proposal | None:
    """Nothing failed: no root, SLURM end or symptom in the logs."""
    return Proposal("none", None, CONFIDENCE["none"], status="ok", category=Category.NONE)


@dataclass(frozen=True)
class VerdictRule:
    """One verdict rule of the registry."""

    id: str
    propose: Callable[[JobView], Proposal | None]

    @property
    def doc(self) -> str:
        """When the rule applies, and why."""
        return " ".join((self.propose.__doc__ or "").split())


VERDICT_RULES: tuple[VerdictRule, ...] = (
    VerdictRule("root", root),
    VerdictRule("end-after-symptoms", end_after_symptoms),
    VerdictRule("slurm-end", slurm_end),
    VerdictRule("death-record", death_record),
    VerdictRule("cut-traceback", cut_traceback),
    VerdictRule("hang", hang),
    VerdictRule("symptoms", symptoms),
    VerdictRule("unknown", unknown),
    VerdictRule("dead-worker", dead_worker),
    VerdictRule("stalled-start", stalled_start),
    VerdictRule("none", none),
)
"""The verdict rules in the order they are tried; the first that proposes wins."""


def propose(job: JobView) -> Proposal:
    """The proposal of the first verdict rule that applies (``none`` always does)."""
    for rule in VERDICT_RULES:
        p = rule.propose(job)
        if p is not None:
            return p
    raise AssertionError("the none rule always proposes")

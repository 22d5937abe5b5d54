"""Each verdict rule and each rank rule on events built directly, through the registries.

Every test goes through ``propose`` or ``decide_rank``, so removing a rule from its registry
(or moving it after the rule that would otherwise win) fails its test.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from analyzer.decide import rules
from analyzer.decide.certainty import certainty
from analyzer.decide.hangs import HangFinding
from analyzer.decide.jobview import JobView
from analyzer.decide.rank_decision import OUTCOMES, RANK_RULES, decide_rank
from analyzer.decide.rank_model import RankDecision
from analyzer.decide.reason import decide
from analyzer.decide.rules import VERDICT_RULES, Proposal, propose
from analyzer.model.event import Event
from analyzer.shape.attribute import Geometry
from analyzer.shape.facts import JobFacts

T0 = datetime(2026, 12, 1, 12, 0, 0)


def ev(
    category: str = "python_exception",
    role: str = "root",
    *,
    line: int = 1,
    file: str = "slurm-1.out",
    rank: int | None = None,
    seconds: float | None = 0,
    pattern: str | None = None,
    tags: tuple[str, ...] = (),
    roles: dict[str, str] | None = None,
    **kw: Any,
) -> Event:
    """An event as the reader and attribution would make it."""
    roles = roles or {}
    return Event(
        file=file,
        line=line,
        pattern_id=pattern or f"test.{category}.{role}",
        category=category,
        role=role,
        text=f"line {line}",
        rank=rank,
        local_rank=kw.pop("local_rank", rank),
        node=kw.pop("node", None),
        node_index=kw.pop("node_index", None),
        time=None if seconds is None else T0 + timedelta(seconds=seconds),
        title=kw.pop("title", f"{category} {role}"),
        captures={f"c_{k}": v for k, v in roles.items()},
        role_names={k: f"c_{k}" for k in roles},
        tags=frozenset(tags),
        **kw,
    )


def view(*rows: Event, world: int | None = None) -> JobView:
    return JobView.of(list(rows), JobFacts(), Geometry(world_size=world))


def proposed(*rows: Event, world: int | None = None) -> Proposal:
    return propose(view(*rows, world=world))


# -- verdict rules ---------------------------------------------------------------------------


def test_registries_are_worded_and_documented() -> None:
    assert [r.id for r in VERDICT_RULES] == [
        "root", "end-after-symptoms", "slurm-end", "death-record", "cut-traceback", "hang",
        "symptoms", "unknown", "dead-worker", "stalled-start", "none",
    ]
    for r in VERDICT_RULES:
        assert r.summary and r.doc and r.propose is not None, r.id
    for rr in RANK_RULES:
        assert rr.doc and rr.outcomes, rr.id
        assert all(o.note for o in rr.outcomes), rr.id
        assert rr.verdicts <= {r.id for r in VERDICT_RULES}, rr.id


def test_root_the_earliest_root_wins_over_earlier_symptoms() -> None:
    sym = ev("collective_timeout", "symptom", rank=1, seconds=0, line=1)
    late = ev("cuda_error", rank=2, seconds=30, line=2)
    early = ev("python_exception", rank=0, seconds=10, line=3)
    p = proposed(sym, late, early)
    assert (p.rule, p.event) == ("root", early)
    assert [a.event for a in p.alternatives] == [late]


def test_root_within_the_skew_the_stronger_evidence_wins() -> None:
    weak = ev("python_exception", rank=0, seconds=0, line=1)
    strong = ev("hardware", rank=1, seconds=1, line=2)
    assert proposed(weak, strong).event == strong


def test_end_after_symptoms_a_slurm_end_only_confirms_them() -> None:
    oom = ev("host_oom", "symptom", rank=3, seconds=0)
    end = ev("slurm_time_limit", seconds=60, line=9)
    p = proposed(oom, end)
    assert (p.rule, p.event, p.end) == ("end-after-symptoms", oom, end)
    assert [a.rule for a in p.alternatives] == ["slurm-end"]


def test_end_after_symptoms_an_undated_symptom_above_the_end_in_its_file() -> None:
    """A symptom without a time (a native abort's signal banner) printed above SLURM's dated
    end in the same file came before it; one in another file cannot be ordered."""
    crash = ev("native_crash", "symptom", rank=0, seconds=None, line=58)
    end = ev("slurm_cancelled", seconds=60, line=108)
    p = proposed(crash, end)
    assert (p.rule, p.event, p.end) == ("end-after-symptoms", crash, end)
    below = replace(crash, line=200)
    assert proposed(below, end).rule == "slurm-end"
    elsewhere = replace(crash, file="rank0.log")
    assert proposed(elsewhere, end).rule == "slurm-end"
    # a collector stamped both with the same second: the order in the file decides
    same_second = replace(crash, time=end.time)
    assert proposed(same_second, end).rule == "end-after-symptoms"


def test_slurm_end_alone() -> None:
    end = ev("slurm_cancelled", seconds=60)
    p = proposed(end)
    assert (p.rule, p.event, p.status) == ("slurm-end", end, "failed")


def test_death_record_without_a_root_line() -> None:
    death = ev("native_crash", "symptom", rank=2, tags=("death-record", "death"))
    p = proposed(ev("collective_timeout", "symptom", rank=0, seconds=5, line=5), death)
    assert (p.rule, p.event) == ("death-record", death)


def test_hang_when_only_timeouts() -> None:
    t = [ev("collective_timeout", "symptom", rank=r, line=r + 1) for r in range(3)]
    p = proposed(*t, world=4)
    assert (p.rule, p.category) == ("hang", "collective_timeout")
    assert p.hang is not None and p.hang.rank == 3  # the one rank missing from the timeouts


def test_symptoms_of_an_evident_class_name_it() -> None:
    net = ev("network", "symptom", rank=1)
    p = proposed(net, ev("network", "symptom", rank=2, line=2))
    assert (p.rule, p.event) == ("symptoms", net)


def test_unknown_when_symptoms_name_no_class() -> None:
    p = proposed(ev("native_crash", "symptom", rank=1))
    assert (p.rule, p.category) == ("unknown", "unknown")


def test_dead_worker_a_failed_job_is_never_ok() -> None:
    """An exit record alone (a ChildFailedError block's ``exitcode : 1``, a context line) makes
    the job failed with an unknown cause, from the worker that exited on its own."""
    sigterm = ev("unknown", "context", line=5, rank=3, roles={"exit_code": "-15"})
    own = ev("unknown", "context", line=9, rank=2, seconds=1, roles={"exit_code": "1"})
    p = proposed(sigterm, own)
    assert (p.rule, p.status, p.category, p.event) == ("dead-worker", "failed", "unknown", own)
    assert proposed(sigterm).event == sigterm  # stopped by the launcher: still not "ok"
    d = ranked(sigterm, own)
    assert (d.rank, d.rule, certainty(d.rank, d.rule, False)) == (2, None, "certain")


def test_dead_worker_several_alike_at_once_name_no_rank() -> None:
    """Every worker aborted alike in the same second: no single rank to blame."""
    dead = [ev("unknown", "context", line=i, rank=i, roles={"exit_code": "-6"}) for i in range(3)]
    d = ranked(*dead)
    assert (d.rank, d.rule) == (None, "same-way-together")
    assert proposed(*dead).category == "native_crash"  # SIGABRT says a native crash


def test_death_records_of_several_ranks_at_once_name_no_rank() -> None:
    """Three workers' SIGSEGV records in the same second: the first listed is not the first."""
    deaths = [
        ev("native_crash", "symptom", line=10 + i, rank=i, tags=("death-record",),
           pattern="test.exit.sigsegv")
        for i in (1, 2, 0)
    ]
    p = proposed(*deaths)
    assert p.rule == "death-record" and len(p.same) == 3
    assert ranked(*deaths).rank is None


def test_a_zero_exit_is_no_death() -> None:
    p = proposed(ev("unknown", "context", roles={"exit_code": "0"}))
    assert (p.rule, p.status) == ("none", "ok")


def test_survived_a_root_its_rank_trained_past_is_not_the_cause() -> None:
    """A root followed by the same writer's iteration line is context (tag ``survived``); a
    later line of another rank, or one in another attempt, proves nothing."""
    oom = ev("nccl_error", "root", line=10, rank=1)
    later = ev("none", "context", line=50, rank=1, seconds=60, tags=("progress",))
    p = proposed(oom, later)
    assert (p.rule, p.status) == ("none", "ok")
    assert rules_survived_notes(oom, later) == [
        "survived error, not the cause: nccl_error root at slurm-1.out:10, and training went "
        "on (slurm-1.out:50)"
    ]
    other_rank = ev("none", "context", line=50, rank=2, seconds=60, tags=("progress",))
    assert proposed(oom, other_rank).rule == "root"
    other_attempt = ev("none", "context", line=50, rank=1, seconds=60, tags=("progress",),
                       attempt=2)
    assert proposed(oom, other_attempt).rule == "root"
    before = ev("none", "context", line=5, rank=1, seconds=-60, tags=("progress",))
    assert proposed(oom, before).rule == "root"
    death = ev("host_oom", "root", line=10, rank=1, tags=("death",))
    assert proposed(death, later).rule == "root"


def test_survived_a_finished_save_after_an_unranked_root() -> None:
    warn = ev("cuda_oom", "root", line=3)
    saved = ev("none", "context", line=90, rank=0, seconds=30, tags=("checkpoint-save-end",))
    assert proposed(warn, saved).rule == "none"


def rules_survived_notes(*rows: Event) -> list[str]:
    from analyzer.decide.promote import survived_notes

    return survived_notes(list(rows))


def test_none_when_nothing_failed() -> None:
    p = proposed(ev("none", "context"))
    assert (p.rule, p.status, p.event) == ("none", "ok", None)


def _claim(rank: int, world: int, line: int, file: str = "slurm-1.out") -> Event:
    """A process's announcement of its global rank (Lightning's ``Initializing distributed:
    GLOBAL_RANK: 0, MEMBER: 1/5``, a program's ``Distributed init: rank 0/2``)."""
    return ev("rendezvous", "context", line=line, file=file, rank=rank, tags=("rank-claim",),
              roles={"world_size": str(world)})


def test_stalled_start_logs_that_end_before_every_rank_joined_are_not_ok() -> None:
    """One rank of five announced itself and the logs end there: the job never formed, a
    rendezvous failure with the announcement as evidence and no rank named."""
    banner = ev("unknown", "context", line=1)
    last = _claim(0, 5, line=2)
    job = view(banner, last)
    p = propose(job)
    assert (p.rule, p.status, p.category, p.event) == (
        "stalled-start", "failed", "rendezvous", last)
    d = decide_rank(job, p, True)
    assert (d.rank, d.rule) == (None, "not-joined")
    # the world size known from the job's geometry serves as well
    bare = ev("rendezvous", "context", line=2, rank=0, tags=("rank-claim",))
    assert proposed(bare, world=2).rule == "stalled-start"
    # a rendezvous line after it (a store barrier still waiting) is still start-up
    waiting = ev("rendezvous", "context", line=3, rank=0)
    assert proposed(last, waiting).rule == "stalled-start"


@pytest.mark.parametrize(
    "later",
    [
        # every rank announced itself: the world formed
        [_claim(1, 2, line=3)],
        # each node's file holds its own ranks: together they make the world
        [_claim(1, 2, line=1, file="node1.out")],
        # a line the catalog knows after the announcement: the job went on
        [ev("nccl_error", "context", line=9)],
        # training progress anywhere: an iteration line
        [ev("nan_loss", "context", line=1, file="other.out", tags=("progress",))],
        [ev("checkpoint", "context", line=1, file="other.out", tags=("checkpoint-save-end",))],
    ],
)
def test_stalled_start_not_when_the_job_formed_or_went_on(later: list[Event]) -> None:
    p = proposed(_claim(0, 2, line=2), *later)
    assert (p.rule, p.status) == ("none", "ok")


def test_stalled_start_not_without_a_known_world_or_with_a_failure() -> None:
    bare = ev("rendezvous", "context", line=2, rank=0, tags=("rank-claim",))
    assert proposed(bare).rule == "none"  # no world size: nothing says a rank is missing
    assert proposed(_claim(0, 2, line=2), _claim(1, 4, line=3)).rule == "none"  # two worlds
    err = ev("python_exception", rank=0, line=3)
    assert proposed(_claim(0, 2, line=2), err).rule == "root"


# -- rank rules ------------------------------------------------------------------------------


def ranked(*rows: Event, world: int | None = None, whole_job: bool = False) -> RankDecision:
    job = view(*rows, world=world)
    return decide_rank(job, propose(job), whole_job)


def test_own_rank_is_certain() -> None:
    d = ranked(ev(rank=5))
    assert (d.rank, d.rule, certainty(d.rank, d.rule, False)) == (5, None, "certain")


def test_slurm_end_names_no_rank() -> None:
    d = ranked(ev("slurm_node_fail", rank=1, node="n1"))
    assert (d.rank, d.node, d.rule) == (None, "n1", "slurm-end")


def test_culprit_from_the_hang_analysis() -> None:
    t = ev("collective_timeout", "symptom", rank=0)
    job = view(t, ev("python_exception", "context", rank=3, node="n3", line=2))
    finding = HangFinding(3, "missing", 0.65, [], {"rank": 3, "world": 4})
    p = Proposal("hang", t, 0.65, category="collective_timeout", hang=finding, timeouts=(t,))
    d = decide_rank(job, p)
    assert (d.rank, d.node, d.rule) == (3, "n3", "culprit")
    assert certainty(d.rank, d.rule, False, d.facts) == "likely"  # the logs alone


def test_a_culprit_the_flight_recorder_shows_is_certain() -> None:
    t = ev("collective_timeout", "symptom", rank=0)
    job = view(t, ev("python_exception", "context", rank=3, node="n3", line=2))
    finding = HangFinding(3, "dumps", 0.8, [], {"rank": 3, "shown": "rank 3 never joined #17"})
    p = Proposal("hang", t, 0.8, category="collective_timeout", hang=finding, timeouts=(t,))
    d = decide_rank(job, p)
    assert (d.rank, d.rule, d.facts["hang_rule"]) == (3, "culprit", "dumps")
    assert certainty(d.rank, d.rule, False, d.facts) == "certain"


def test_same_way_first_names_the_first_rank() -> None:
    a = ev(rank=1, seconds=0, pattern="x")
    b = ev(rank=0, seconds=10, pattern="x", line=2)
    d = ranked(b, a)
    assert (d.rank, d.rule, d.facts["rank"]) == (1, "same-way-first", 1)


def test_same_way_together_names_none() -> None:
    d = ranked(*(ev(rank=r, pattern="x", line=r + 1, node="n") for r in range(4)), world=4)
    assert (d.rank, d.node, d.rule) == (None, None, "same-way-together")
    assert d.facts["who"] == "all 4 ranks"


def test_same_way_unranked_names_none_when_the_launcher_saw_several_die() -> None:
    """Four workers sharing one stream print the same error with no rank label; the
    launcher reports ranks 0-3 dead with exit code 1 (a ChildFailedError table): nobody is
    blamed, not even the rank of the launcher line right below the copies."""
    copies = [ev(pattern="exc", line=n, roles={"exc_type": "SyntaxError"}) for n in (23, 28, 35)]
    dead = [
        ev("unknown", "context", rank=r, line=60 + r, tags=("childfailed-field",),
           roles={"exit_code": "1"})
        for r in range(4)
    ]
    exit0 = ev("python_exception", "symptom", rank=0, seconds=2, line=43,
               tags=("death", "death-record"), roles={"exit_code": "1"})
    d = ranked(*copies, exit0, *dead)
    assert (d.rank, d.rule, d.facts) == (None, "same-way-unranked", {"copies": 3, "ranks": 4})


def test_same_way_unranked_keeps_a_rank_when_one_died_on_its_own() -> None:
    """The same copies, but the launcher stopped the others (exit -15): one rank died on its
    own, and the rank comes from the line near the copies as before."""
    copies = [ev(pattern="exc", line=n, roles={"exc_type": "SyntaxError"}) for n in (23, 28)]
    exit0 = ev("python_exception", "symptom", rank=0, seconds=2, line=43,
               tags=("death", "death-record"), roles={"exit_code": "1"})
    stopped = ev("unknown", "context", rank=1, line=61, tags=("childfailed-field",),
                 roles={"exit_code": "-15"})
    d = ranked(*copies, exit0, stopped)
    assert (d.rank, d.rule) == (0, "from-line")


def test_three_copies_in_one_second_with_the_others_stopped_name_no_rank() -> None:
    """Three unlabelled copies of one error in one second; the launcher reports rank 0 dead on
    its own and stopped ranks 1 and 2: each copy is one process failing alike (issue 40's
    batch: an NCCL `invalid usage` on every rank), so no rank is named; two copies keep it
    (``test_same_way_unranked_keeps_a_rank_when_one_died_on_its_own``)."""
    copies = [ev(pattern="exc", line=n, roles={"exc_type": "DistBackendError"})
              for n in (29, 65, 73)]
    exit0 = ev("python_exception", "symptom", rank=0, seconds=0, line=80,
               tags=("death", "death-record"), roles={"exit_code": "1"})
    stopped = [ev("unknown", "symptom", rank=r, seconds=0, line=77 + r, tags=("death",),
                  roles={"signal": "SIGTERM"}) for r in (1, 2)]
    d = ranked(*copies, exit0, *stopped)
    assert (d.rank, d.rule) == (None, "same-way-unranked")


def test_died_together_names_no_rank_of_failures_in_one_second() -> None:
    """An unknown failure shown by the launcher's records: four ranks dead on their own in the
    same second (a ChildFailedError table): the Root Cause record names no culprit."""
    recs = [ev("unknown", "symptom", rank=r, seconds=0, line=10 + r,
               tags=("death", "death-record"), roles={"exit_code": "1"}) for r in range(4)]
    d = ranked(*recs)
    assert (d.rank, d.rule) == (None, "died-together")


def test_another_died_when_the_launcher_reports_only_other_ranks_dead() -> None:
    """Rank 0's traceback is shown, but the launcher (mpiexec) reports rank 6 exited with
    code 1 on its own and says nothing of rank 0: two ranks failed, nothing orders them."""
    shown = ev(rank=0, seconds=None, line=38)
    six = ev("python_exception", "symptom", rank=6, seconds=None, line=42,
             tags=("death", "death-record"), roles={"exit_code": "1"})
    stopped = ev("unknown", "symptom", rank=11, seconds=None, line=43, tags=("death",),
                 roles={"signal": "15"})
    d = ranked(shown, six, stopped)
    assert (d.rank, d.rule, d.facts) == (None, "another-died", {"rank": 0, "others": "6"})


def test_another_died_keeps_the_rank_the_launcher_reports_too() -> None:
    """The same, but the launcher reports rank 0's own exit too: rank 0 stays named."""
    shown = ev(rank=7, seconds=None, line=1)
    seven = ev("python_exception", "symptom", rank=7, seconds=None, line=2,
               tags=("death", "death-record"), roles={"exit_code": "1"})
    stopped = ev("unknown", "symptom", rank=14, seconds=None, line=3, tags=("death",),
                 roles={"signal": "15"})
    assert ranked(shown, seven, stopped).rank == 7


def test_own_traceback_names_the_rank_of_a_cut_traceback() -> None:
    """A paste that ends inside rank 1's traceback (no exception line: a symptom) names
    rank 1, likely; a timeout of rank 1 alone is still a victim's sign."""
    tb = ev("checkpoint", "symptom", rank=1, pattern="python.traceback", tags=("uncatalogued",))
    d = ranked(tb)
    assert (d.rank, d.rule, certainty(d.rank, d.rule, False)) == (1, "own-traceback", "likely")
    waited = ev("nccl_error", "symptom", rank=1)
    assert (ranked(waited).rank, ranked(waited).rule) == (None, "victim")


def test_cut_traceback_one_ranks_own_traceback_before_the_others_timeouts() -> None:
    """Rank 0's traceback is cut before its exception line, rank 1 times out waiting for it:
    the verdict is rank 0's uncaught exception (what its frames say), rank 0 likely."""
    tb = ev("checkpoint", "symptom", rank=0, seconds=None, pattern="python.traceback",
            tags=("uncatalogued",), traceback='  File "train.py", line 3, in save')
    timeout = ev("collective_timeout", "symptom", rank=1, seconds=5, line=2)
    p = proposed(tb, timeout)
    assert (p.rule, p.event, p.category) == ("cut-traceback", tb, None)
    d = ranked(tb, timeout)
    assert (d.rank, d.rule, certainty(d.rank, d.rule, False)) == (0, "own-traceback", "likely")


@pytest.mark.parametrize(
    "traceback",
    ['  File "torch/distributed/distributed_c10d.py", line 9, in all_reduce', None],
)
def test_cut_traceback_not_through_a_collective_nor_of_two_ranks(traceback: str | None) -> None:
    """A cut traceback through a torch.distributed call may end in a timeout; cut tracebacks
    of two ranks single out neither: both are left to the later rules."""
    tb = ev("python_exception", "symptom", rank=0, seconds=None, pattern="python.traceback",
            tags=("uncatalogued",), traceback=traceback or '  File "a.py", line 1, in f')
    rows = [tb] if traceback else [tb, replace(tb, rank=1, line=2)]
    timeout = ev("collective_timeout", "symptom", rank=2, seconds=5, line=3)
    assert proposed(*rows, timeout).rule == "hang"


def test_unknown_takes_the_category_of_a_signal_death() -> None:
    """Only symptoms of no evident class, and the worker died of SIGABRT (exit -6): the cause
    is still not named by a line, but the verdict says native_crash; the evidence stays the
    earliest symptom."""
    first = ev("native_crash", "symptom", seconds=0, line=10, pattern="terminate_called")
    died = ev("nccl_error", "symptom", seconds=300, line=11, tags=("death-record",),
              roles={"exit_code": "-6"})
    p = proposed(first, died)
    assert (p.rule, p.category, p.event) == ("unknown", "native_crash", first)
    plain = replace(died, role_names={}, captures={})
    assert proposed(first, plain).category == "unknown"


def test_from_line_lends_no_rank_from_another_copy_of_the_failure() -> None:
    """Two OOMs of one kind, one with a rank label and one without (a paste that begins
    inside another process's traceback): the unlabelled one takes no rank from its copy."""
    bare = ev("cuda_oom", seconds=None, line=1, pattern="oom")
    five = ev("cuda_oom", rank=5, seconds=None, line=11, pattern="oom")
    d = ranked(bare, five)
    assert (d.rank, d.rule) == (None, None)


def test_peer_died_first_does_not_blame_the_reporter() -> None:
    died = ev("native_crash", "symptom", rank=2, seconds=0, tags=("death",))
    link = ev("network", seconds=10, line=2)
    assert ranked(died, link).rule == "peer-died-first"


def test_from_line_takes_the_one_rank_nearby() -> None:
    root = ev("cuda_oom", seconds=0)
    near = ev("cuda_oom", "symptom", rank=6, seconds=30, line=2)
    d = ranked(root, near)
    assert (d.rank, d.rule, d.evidence) == (6, "from-line", (near,))


def test_traceback_below_an_unranked_root_lends_its_rank() -> None:
    """CUDA's device-side assert (no rank prefix) and, on the next line, rank 5's traceback."""
    root = ev("nan_loss", line=2, seconds=None)
    tb = ev("python_exception", "symptom", line=3, rank=5, seconds=None, traceback="Traceback")
    d = ranked(root, tb)
    assert (d.rank, d.rule, certainty(d.rank, d.rule, False)) == (5, "traceback-below", "likely")
    far = ev("python_exception", "symptom", line=9, rank=5, seconds=None, traceback="Traceback")
    assert ranked(root, far).rank is None
    two = ev("python_exception", "symptom", line=4, rank=6, seconds=None, traceback="Traceback")
    assert ranked(root, tb, two).rank is None


def test_traceback_below_past_the_empty_lines_of_an_unwrapped_line() -> None:
    """The root line was hard-wrapped in three pieces: unwrapped, it is followed by two empty
    lines, and the traceback three lines below is still right below it (the byte offsets
    show nothing but newlines between them); a line of text between them is not."""
    root = ev("nan_loss", line=2, seconds=None, offset=100)  # text "line 2": 6 bytes
    tb = ev("python_exception", "symptom", line=5, rank=5, seconds=None, traceback="Traceback",
            offset=109)
    assert (ranked(root, tb).rank, ranked(root, tb).rule) == (5, "traceback-below")
    after_text = replace(tb, offset=140)
    assert ranked(root, after_text).rank is None


def test_named_above_a_line_naming_the_failing_rank_lends_it() -> None:
    """torch RPC's ``On WorkerInfo(id=14, …):`` header, then the unranked error line."""
    header = ev("unknown", "context", line=1, rank=14, seconds=None, tags=("failing-rank",))
    root = ev("cuda_error", line=2, seconds=None)
    d = ranked(header, root)
    assert (d.rank, d.rule, certainty(d.rank, d.rule, False)) == (14, "named-above", "likely")
    untagged = ev("unknown", "context", line=1, rank=14, seconds=None)
    assert ranked(untagged, root).rank is None


def test_victim_a_symptom_names_no_rank() -> None:
    d = ranked(ev("network", "symptom", rank=4))
    assert (d.rank, d.rule) == (None, "victim")


def test_only_death_gives_an_unranked_root_the_dead_workers_rank() -> None:
    root = ev(seconds=None)
    dead = ev("native_crash", "symptom", rank=1, line=2, tags=("death",), roles={"exit_code": "1"})
    killed = ev("native_crash", "symptom", rank=0, line=3, tags=("death",),
                roles={"exit_code": "-15"})
    d = ranked(root, dead, killed)
    assert (d.rank, d.rule) == (1, "only-death")


def test_only_death_follows_victim_for_an_unknown_failure() -> None:
    echo = ev("native_crash", "symptom", rank=1)
    dead = ev("native_crash", "symptom", rank=0, line=2, tags=("death",), roles={"exit_code": "1"})
    d = ranked(echo, dead)  # the echo's rank is a victim's; the one dead worker is named
    assert (d.rank, d.rule, d.evidence) == (0, "only-death", (dead,))


def test_link_end_a_refused_connection_names_its_reporter_as_possible() -> None:
    """A rank's own line saying it could not connect to a peer (tag ``link-end``) keeps its
    rank, graded possible: the peer or the link is as likely at fault. Without the tag the same
    line is the rank's own, certain."""
    refused = ev("network", rank=1, tags=("link-end",))
    d = ranked(refused)
    assert (d.rank, d.rule, certainty(d.rank, d.rule, False)) == (1, "link-end", "possible")
    d = ranked(ev("network", rank=1))
    assert (d.rank, d.rule) == (1, None)


def test_a_sigterm_short_of_the_workers_is_no_singling_out() -> None:
    """torchrun SIGTERMed one worker and recorded local rank 5's exit (taken as global): six
    workers at least, so others exited unseen and the record is only the first it observed;
    with local rank 1 (two workers) the one SIGTERM stopped every other, and it singles out."""
    stopped = ev("unknown", "context", rank=None, line=1, roles={"signal": "SIGTERM", "pid": "121"})
    dead = ev("unknown", "symptom", rank=5, line=2, tags=("death",), roles={"exit_code": "1"},
              rank_assumed=True)
    assert ranked(stopped, dead).rule == "first-observed"
    dead1 = ev("unknown", "symptom", rank=1, line=2, tags=("death",), roles={"exit_code": "1"},
               rank_assumed=True)
    assert ranked(stopped, dead1).rule != "first-observed"


def test_first_observed_a_launchers_record_by_local_rank_alone_is_possible() -> None:
    """torchrun's ``failed (exitcode: 1) local_rank: 0`` with nothing else (its local rank
    taken as global): the first exit it observed, possible; not once it stopped the others."""
    dead = ev("unknown", "symptom", rank=0, tags=("death",), roles={"exit_code": "1"},
              rank_assumed=True)
    d = ranked(dead)
    assert (d.rank, d.rule, certainty(d.rank, d.rule, True)) == (0, "first-observed", "possible")
    stopped = ev("unknown", "symptom", rank=1, line=2, tags=("death",),
                 roles={"exit_code": "-15"})
    assert ranked(dead, stopped).rule != "first-observed"


@pytest.mark.parametrize(("tasks", "rule", "node"), [(["1"], "srun-exit", "1"),
                                                     (["0", "1"], "srun-exits-many", None)])
def test_srun_exit_names_the_node(tasks: list[str], rule: str, node: str | None) -> None:
    root = ev(seconds=None, line=10)
    exits = [
        ev("native_crash", "symptom", seconds=None, line=20 + i, tags=("task-exit",),
           roles={"task": t, "exit_code": "1"})
        for i, t in enumerate(tasks)
    ]
    d = ranked(root, *exits)
    assert (d.rank, d.rule, d.node) == (None, rule, node)


def test_srun_task_names_the_task_srun_reports_dead_of_the_verdicts_cause() -> None:
    """slurmstepd's unranked oom_kill line, and srun's ``task 2: Out Of Memory``: task 2 is
    named as a possible rank; not when two tasks are named or a launcher runs inside srun."""
    root = ev("host_oom", seconds=None, line=10)
    task2 = ev("host_oom", seconds=None, line=11, roles={"task": "2"})
    d = ranked(root, task2)
    assert (d.rank, d.rule, certainty(d.rank, d.rule, False)) == (2, "srun-task", "possible")
    task3 = ev("host_oom", seconds=None, line=12, roles={"task": "3"})
    assert ranked(root, task2, task3).rank is None
    job = view(root, task2)
    job = replace(job, geo=replace(job.geo, nproc_per_node=4))
    assert decide_rank(job, propose(job)).rank is None
    other = ev("native_crash", seconds=None, line=11, roles={"task": "2"})
    assert ranked(root, other).rank is None  # a record of another cause names nothing


def test_uniform_a_start_up_error_on_one_rank_names_none() -> None:
    assert ranked(ev("config", rank=3)).rule == "uniform"
    other = ev("python_exception", "symptom", rank=1, line=2)
    assert ranked(ev("config", rank=3), other).rank == 3


def test_paste_cut_a_headless_traceback_names_none() -> None:
    tb = 'File "train.py", line 3, in <module>\nValueError: x'
    assert ranked(ev(rank=2, traceback=tb)).rule == "paste-cut"
    assert ranked(ev(rank=2, traceback=tb), world=1).rank == 2


def test_earlier_traceback_another_ranks_cut_traceback_above_leaves_it_possible() -> None:
    """Rank 0's traceback begins above rank 1's error and ends before its own error line: rank
    1 is only possible. Below the error, or dated after it, it orders nothing."""
    head = "Traceback (most recent call last):"
    tb = head + '\n  File "train.py", line 3, in <module>'
    frag = replace(ev("python_exception", "symptom", rank=0, line=1, seconds=None,
                      traceback=tb), message=head)
    err = ev("cuda_error", rank=1, line=4, seconds=5)
    d = ranked(frag, err)
    assert (d.rank, d.rule, certainty(d.rank, d.rule, False)) == (1, "earlier-traceback",
                                                                    "possible")
    assert ranked(replace(frag, line=6), err).rule is None
    assert ranked(replace(frag, time=err.time + timedelta(seconds=9)), err).rule is None
    read = replace(frag, message="ValueError: x")  # its error line was read: a root of its own
    assert ranked(read, err).rule != "earlier-traceback"


def test_still_working_names_the_rank_absent_while_a_bar_counts_on() -> None:
    """Ranks 1-3 time out while a progress bar in the same log counts on: rank 0, the only
    rank of 0..3 not among them, was still working (likely)."""

    def timeout(rank: int, line: int, text: str = "") -> Event:
        return replace(ev("collective_timeout", "symptom", line=line, rank=rank, seconds=line,
                          roles={"pg_rank": str(rank)}), text=text)

    outs = [timeout(1, 2, "75% 24/32 [01:09<00:22,  2.83s/it]"), timeout(2, 3), timeout(3, 4)]
    later = replace(ev("nccl_error", "symptom", line=6, seconds=6),
                    text="78% 25/32 [01:12<00:20,  2.86s/it] Some NCCL operations have failed")
    d = ranked(*outs, later)
    assert (d.rank, d.rule, certainty(d.rank, d.rule, False)) == (0, "still-working", "likely")
    quiet = ranked(*outs)  # the bar does not go on: rank 0 is only the silent one
    assert (quiet.rank, quiet.rule, certainty(quiet.rank, quiet.rule, False)) == (
        0, "silent-rank", "possible")
    assert ranked(*outs, later, world=8).rank is None  # ranks 0, 4-7 are all absent


def test_silent_rank_is_the_one_rank_up_to_the_highest_reporting_without_a_timeout() -> None:
    """Ranks 1-3 time out and rank 0 says nothing: possibly the one they waited for (a
    LatentWire ablation's rank 0 stopped early, part Q); with ranks 1 and 3 alone two ranks are
    silent, and a world of 8 leaves five: no rank."""

    def timeout(rank: int) -> Event:
        return ev("collective_timeout", "symptom", line=rank, rank=rank, seconds=rank,
                  roles={"pg_rank": str(rank)})

    d = ranked(timeout(1), timeout(2), timeout(3))
    assert (d.rank, d.rule, certainty(d.rank, d.rule, False)) == (0, "silent-rank", "possible")
    assert ranked(timeout(1), timeout(3)).rank is None
    assert ranked(timeout(1), timeout(2), timeout(3), world=8).rank is None
    assert ranked(timeout(1)).rank is None  # one report: nothing to compare


def _launcher_reports(rank: int) -> tuple[Event, Event]:
    """torchrun's records: ``rank`` exited 1 on its own; another worker got SIGTERM."""
    died = ev("python_exception", "symptom", line=20, rank=rank, seconds=5, tags=("death",),
              roles={"exit_code": "1"})
    stopped = ev("unknown", "symptom", line=18, seconds=4, roles={"signal": "SIGTERM"})
    return died, stopped


def test_the_launcher_singling_out_the_rank_keeps_it() -> None:
    """A uniform-looking error, or a paste cut inside the traceback, still names the rank the
    launcher reports as the only worker that died on its own (the others it stopped)."""
    tb = 'File "train.py", line 3, in <module>\nAttributeError: x'
    d = ranked(ev("import_error", rank=1, traceback=tb), *_launcher_reports(1))
    assert (d.rank, d.rule) == (1, None)
    other = ranked(ev("import_error", rank=1, traceback=tb), *_launcher_reports(0))
    assert other.rank is None


def test_only_rank_for_a_one_process_job_as_a_whole() -> None:
    root = ev(seconds=None)
    assert ranked(root, world=1).rank is None
    d = ranked(root, world=1, whole_job=True)
    assert (d.rank, d.rule) == (0, "only-rank")


def test_decide_builds_the_verdict_once_from_both_decisions() -> None:
    a = ev(rank=1, seconds=0, pattern="x")
    b = ev(rank=0, seconds=10, pattern="x", line=2)
    v, alts, status = decide([a, b], JobFacts(), Geometry())
    assert (v.rule, v.rank, v.rank_rule, status) == ("root", 1, "same-way-first", "failed")
    assert alts == []
    assert [e.line for e in v.evidence] == [1, 2]


def test_an_inferred_verdict_names_its_rank_by_the_inferred_outcome() -> None:
    """A verdict inferred from a line no pattern knows (a real job's) records ``inferred`` as
    its rule and rank rule, with that outcome's note and certainty."""
    from analyzer.api import analyze
    from tests.helpers import REAL, builtin_catalog

    job = REAL / "unknown-loader-fatal"
    v = analyze(job, catalog=builtin_catalog(), workers=1).diagnosis.verdict
    assert (v.rule, v.rank_rule, v.rank, v.rank_certainty) == ("inferred", "inferred", 1, "likely")
    assert v.rank_note == "inferred: the first unknown error line, on 1 of 4 ranks"


def test_every_rank_outcome_is_tested() -> None:
    """Each outcome a rank rule may record (from the registry, no list kept by hand) is asserted
    by a test of its own: a rule added without a test fails here."""
    here = Path(__file__).read_text(encoding="utf-8")
    untested = [o for o in OUTCOMES if f'"{o}"' not in here]
    assert not untested, untested
    assert {r.id for r in rules.VERDICT_RULES} <= set(rules.BY_ID)


def test_every_rule_records_only_the_outcomes_it_declares() -> None:
    """A rank rule's function names only its own outcomes (``RankId.X`` in its source), so a
    rule that records another rule's id (or one no rule declares) fails here, not at run time."""
    import ast
    import inspect
    import textwrap

    for rr in RANK_RULES:
        tree = ast.parse(textwrap.dedent(inspect.getsource(rr.apply)))
        recorded = {
            a.attr
            for call in ast.walk(tree)
            if isinstance(call, ast.Call) and _records(call.func)
            for arg in [*call.args, *(k.value for k in call.keywords)]
            for a in ast.walk(arg)
            if isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name)
            and a.value.id == "RankId"
        }
        declared = {o.id.name for o in rr.outcomes}
        assert recorded and recorded <= declared, (rr.id, recorded - declared)


def _records(func: object) -> bool:
    """A call that records a rank outcome: ``d.why``, ``d.unnamed``, ``d.taken_from`` or a
    new ``RankDecision``."""
    import ast

    if isinstance(func, ast.Attribute):
        return func.attr in ("why", "unnamed", "taken_from")
    return isinstance(func, ast.Name) and func.id == "RankDecision"


def test_docs_list_the_registries_as_the_code_has_them() -> None:
    """docs/decisions.md's generated section equals the registries (regenerate it with
    ``python -m analyzer.decide.docs docs/decisions.md``)."""
    from analyzer.decide.docs import registry_markdown

    doc = (Path(__file__).resolve().parent.parent / "docs" / "decisions.md").read_text("utf-8")
    assert registry_markdown() in doc

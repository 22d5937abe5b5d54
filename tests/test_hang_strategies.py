"""Each hang-culprit strategy on timeout events built directly, through the registry: removing
a strategy (or moving it after the one that would otherwise win) fails its test."""

from __future__ import annotations

from analyzer.decide import hangs
from analyzer.decide.hangs import STRATEGIES, find_culprit
from analyzer.model.event import Event


def timeout(rank: int, traceback: str | None = None, **caps: str) -> Event:
    return Event(
        file=f"rank{rank}.log",
        line=1,
        pattern_id="test.watchdog",
        category="collective_timeout",
        role="symptom",
        text="timeout",
        rank=rank,
        traceback=traceback,
        captures=caps,
    )


def test_every_strategy_is_worded_documented_and_has_a_confidence() -> None:
    assert [s.id for s in STRATEGIES] == [
        "desync",
        "op-mismatch",
        "call-mismatch",
        "lowest-enqueued",
        "lowest-completed",
        "missing",
        "none",
    ]
    for s in STRATEGIES:
        assert s.confidence and s.doc and s.find is not None, s.id
        assert s.words, s.id  # a template, or a builder ("none" is worded from its facts)


def test_desync_report_names_the_lagging_rank() -> None:
    f = find_culprit([timeout(0, lagging_ranks="[3]"), timeout(1)], set(range(4)))
    assert (f.rank, f.rule, f.confidence) == (3, "desync", 0.8)


def test_op_mismatch_at_one_sequence_number() -> None:
    t = [timeout(r, seq="7", op="ALLREDUCE") for r in range(3)] + [
        timeout(3, seq="7", op="BROADCAST")
    ]
    f = find_culprit(t, set(range(4)))
    assert (f.rank, f.rule, f.detail["others_op"]) == (3, "op-mismatch", "ALLREDUCE")


def test_call_mismatch_from_gloo_tracebacks() -> None:
    def tb(fn: str) -> str:
        return f'File "torch/distributed/distributed_c10d.py", line 9, in {fn}'

    t = [timeout(r, tb("all_reduce")) for r in range(3)] + [timeout(3, tb("broadcast"))]
    f = find_culprit(t, set(range(4)))
    assert (f.rank, f.rule, f.detail["op"]) == (3, "call-mismatch", "broadcast")


def test_lowest_last_enqueued() -> None:
    t = [
        timeout(0, last_enqueued="20"),
        timeout(1, last_enqueued="19"),
        timeout(2, last_enqueued="20"),
    ]
    f = find_culprit(t, set(range(3)))
    assert (f.rank, f.rule, f.detail["others_reached"]) == (1, "lowest-enqueued", 20)


def test_lowest_last_completed() -> None:
    """All enqueued alike; one rank never finished a collective the others finished."""
    t = [
        timeout(0, last_enqueued="9", last_completed="8"),
        timeout(1, last_enqueued="9", last_completed="7"),
        timeout(2, last_enqueued="9", last_completed="8"),
    ]
    f = find_culprit(t, set(range(3)))
    assert (f.rank, f.rule, f.detail["others_reached"]) == (1, "lowest-completed", 8)
    alike = [timeout(r, last_enqueued="9", last_completed="8") for r in range(3)]
    assert find_culprit(alike, set(range(3))).rank is None
    two_low = [timeout(r, last_completed=str(7 + (r > 1))) for r in range(3)]
    assert find_culprit(two_low, set(range(3))).rank is None


def test_the_one_rank_missing_from_the_reports() -> None:
    f = find_culprit([timeout(0), timeout(1), timeout(3)], set(range(4)))
    assert (f.rank, f.rule, f.confidence) == (2, "missing", 0.65)


def test_none_names_no_rank_and_mentions_the_first_watchdog() -> None:
    f = find_culprit([timeout(0, src_rank="1"), timeout(1, src_rank="1")], set(range(4)))
    assert (f.rank, f.rule) == (None, "none")
    assert f.detail == {"missing": [2, 3], "world_known": True, "first_watchdog": 1}


def test_the_strongest_evidence_wins() -> None:
    """A desync report outranks a missing rank (both apply here)."""
    f = find_culprit([timeout(0, lagging_ranks="2"), timeout(1)], set(range(3)))
    assert (f.rank, f.rule) == (2, "desync")
    assert hangs.missing([timeout(0), timeout(1)], set(range(3))) is not None


def test_a_ranks_own_report_outweighs_its_peers_accusing_it() -> None:
    """gloo's ``monitored_barrier``: every other rank is told to "check rank 0 logs for faulty
    rank" (ProcessGroupGloo's peer error), and rank 0's own line names the rank that did not
    pass the barrier: that rank is the culprit, not rank 0."""
    t = [timeout(r, lagging_ranks="0") for r in (1, 2)] + [timeout(0, lagging_ranks="3")]
    f = find_culprit(t, set(range(4)))
    assert (f.rank, f.rule) == (3, "desync")
    assert f.rows[0].rank == 0  # the culprit's accuser's own line comes first


def test_ranks_accusing_each_other_name_no_culprit_by_desync() -> None:
    t = [timeout(1, lagging_ranks="0"), timeout(0, lagging_ranks="1")]
    assert find_culprit(t, set(range(2))).rule != "desync"

"""The event record: typed, immutable, captures apart from the structural attributes."""

from __future__ import annotations

import dataclasses

import pytest

from analyzer.api import analyze
from analyzer.catalog.model import Catalog
from analyzer.model.event import STRUCTURAL, Event, from_flat
from analyzer.shape.attribute import Roles
from analyzer.shape.events import BASE_COLUMNS
from tests.helpers import REAL


def test_an_event_cannot_be_changed_only_replaced() -> None:
    e = Event(file="f", line=1, pattern_id="p", category="config", role="root", text="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.rank = 3  # type: ignore[misc]
    f = dataclasses.replace(e, rank=3)
    assert (e.rank, f.rank) == (None, 3)
    assert not hasattr(e, "__dict__"), "slotted: no per-event dict"


def test_the_table_columns_are_the_record_attributes() -> None:
    assert tuple(BASE_COLUMNS) == STRUCTURAL
    names = {f.name for f in dataclasses.fields(Event)}
    assert set(STRUCTURAL) <= names


def test_a_capture_never_takes_a_structural_value() -> None:
    """A capture named like a column stays a capture: the attributed host is the record's,
    the captured one is read with ``cap`` (from_flat puts unknown keys in captures)."""
    e = from_flat({"host": "gpu-node-002", "store_host": "gpu-node-001", "rank": 1})
    assert e.host == "gpu-node-002" and e.cap("store_host") == "gpu-node-001"
    assert e.cap("host") is None
    assert e.values()["store_host"] == "gpu-node-001" and e.values()["host"] == "gpu-node-002"


def test_a_role_is_read_through_the_pattern_table() -> None:
    """A capture that did not participate (None) or matched empty has no value for its role."""
    e = Event(
        file="f",
        line=1,
        pattern_id="p",
        category="config",
        role="symptom",
        text="x",
        captures={"rank": "7", "code": "1", "host": None, "pid": ""},
        role_names={"global_rank": "rank", "exit_code": "code", "host": "host", "pid": "pid"},
    )
    assert e.role_of("global_rank") == "7"
    assert e.roles == {"global_rank": "7", "exit_code": "1"}
    assert e.role_of("host") is None and e.role_of("pid") is None
    assert e.role_of("signal") is None


def test_a_pattern_shares_one_role_table_among_its_events(catalog: Catalog) -> None:
    cat = catalog
    roles = Roles(cat)
    p = next(p for p in cat.patterns if any(c.role for c in p.captures.values()))
    assert roles.names(p.id) is roles.names(p.id)
    assert dict(roles.names(p.id)) == {c.role: c.name for c in p.captures.values() if c.role}


def test_the_analysis_keeps_records_not_the_readers_events() -> None:
    """Once the records exist, the raw events and their attributions are gone (they were a
    large job's largest structures); the records hold the same facts."""
    a = analyze(REAL / "exception-cascade", workers=1)
    assert a.rows and all(isinstance(r, Event) for r in a.rows)
    assert a.attributed.events == []
    assert all(s.events == [] for s in a.read.scans)
    assert a.read.readable
    assert a.events.height == len(a.rows)
    assert a.diagnosis.verdict.category == "python_exception"


def test_a_raw_event_and_its_record_share_a_size_class() -> None:
    """``build_events`` frees each raw event as its record is made; in one size class
    (CPython's small-object allocator rounds to 16 bytes) the record reuses its memory."""
    from analyzer.read.records import RawEvent

    def size_class(cls: type) -> int:
        return -(-cls.__basicsize__ // 16)

    assert size_class(RawEvent) == size_class(Event), (RawEvent.__basicsize__, Event.__basicsize__)


def test_a_raw_events_message_is_where_it_starts_in_its_text() -> None:
    """A raw event holds its message as an offset into its text (a copy of a line's end cost
    18 MB of a large job's peak), or the message itself where it is not the text's end."""
    from analyzer.read.records import message_ref

    text = "[rank3]: RuntimeError: boom"
    assert message_ref(text, text) == 0
    assert message_ref(text, "RuntimeError: boom") == 9
    assert message_ref(text, "") == len(text)
    assert message_ref(text, "unquoted: boom") == "unquoted: boom"
    assert message_ref("ab", "xab") == "xab"
    for line in ["[rank3]: RuntimeError: boom", "node1:1:1 [0] NCCL INFO x", "> quoted line"]:
        from analyzer.lines.prefixes import split_prefixes

        msg = split_prefixes(line).message
        ev = _raw(line, message_ref(line, msg))
        assert ev.message == msg


def _raw(text: str, at: int | str) -> object:
    from analyzer.read.records import RawEvent

    return RawEvent(
        file="f", line=1, offset=0, text=text, message_at=at, pattern_id="p", category="c",
        role="root", title="t", fields={}, task=None, local_rank=None, rank=None, level=None,
        stamp=None, stamp_inherited=False, stream=None, attempt=None,
    )


def test_torchruns_failure_records_let_go_of_their_events_once_placed() -> None:
    """``attribute`` places every event of a ChildFailedError block by its record, then empties
    the record's events, so that the raw events go as their records come."""
    import gc

    from analyzer.read.records import RawEvent

    def raw_events() -> int:
        gc.collect()
        return sum(type(o) is RawEvent for o in gc.get_objects())

    before = raw_events()
    a = analyze(REAL / "sigkill-rank", workers=1)
    assert a.attributed.failures, "the job has ChildFailedError records"
    assert all(cf.events == [] for cf in a.attributed.failures)
    assert raw_events() == before


def test_new_event_is_the_event_its_values_make() -> None:
    """``new_event`` (the table's fast constructor) gives what ``Event(...)`` gives from the
    same values in field order, defaults included; a wrong count is refused."""
    from dataclasses import fields as dc_fields
    from datetime import datetime

    from analyzer.model.event import new_event

    names = [f.name for f in dc_fields(Event)]
    values = {
        "file": "a/b.log", "line": 7, "pattern_id": "p.q", "category": "cuda_oom",
        "role": "root", "text": "[rank1]: x", "offset": 120, "node": "n0", "node_index": 0,
        "host": "n0", "rank": 1, "local_rank": 1, "attempt": 0,
        "time": datetime(2026, 1, 2, 3, 4, 5), "time_inherited": True, "stream": "stderr",
        "title": "T", "level": "E", "message": "x", "traceback": "tb", "repeats": 3,
        "captures": {"k": "v"}, "role_names": {"pid": "k"}, "tags": frozenset({"t"}),
        "cause": "c", "fix": "f", "fix_exact": True, "rank_assumed": True,
    }
    assert sorted(values) == sorted(names), "every field is given a value"
    made = new_event(*[values[n] for n in names])
    assert made == Event(**values)
    assert all(getattr(made, n) is values[n] for n in names)
    with pytest.raises(TypeError):
        new_event(*[values[n] for n in names][:-1])
    with pytest.raises(AttributeError):
        made.rank = 2  # type: ignore[misc]  # still frozen

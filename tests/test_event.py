"""The event record: typed, immutable, captures apart from the structural attributes."""

from __future__ import annotations

import dataclasses

import pytest

from analyzer.api import analyze
from analyzer.catalog.model import Catalog
from analyzer.model.event import STRUCTURAL, Event, from_flat
from analyzer.shape.attribute import Roles
from analyzer.shape.table import BASE_COLUMNS
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

"""Issue 44: a whole-job fact of the rows (``decide/rowmemo.py``) is computed once per rows
object, and again for another or a changed sequence."""

from __future__ import annotations

from collections.abc import Sequence

from analyzer.decide.rowmemo import per_rows
from analyzer.model.event import Event
from tests.test_decision_rules import ev


def test_a_fact_of_the_same_rows_is_computed_once() -> None:
    calls: list[int] = []

    @per_rows
    def count(rows: Sequence[Event]) -> int:
        calls.append(1)
        return len(rows)

    rows = (ev(), ev(line=2))
    assert count(rows) == count(rows) == 2
    assert len(calls) == 1
    other = [*rows, ev(line=3)]
    assert count(other) == 3  # another object: computed again
    other.append(ev(line=4))
    assert count(other) == 3  # the same object: remembered (rows are never changed in place)
    assert count(tuple(other)) == 4
    assert len(calls) == 3

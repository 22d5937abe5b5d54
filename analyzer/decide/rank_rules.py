"""Small rank rules for the reasoning, each a function of the events it needs.

``reason.py`` calls them; they live here so that each has its own unit tests
(``tests/test_rankrules.py``).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.model.event import Event

DETAIL_LINES = 4
"""How far below an error line its detail may be: PyTorch prints ``NCCL error in: …``, then
``ncclUnhandledCudaError: …``, ``Last error:`` and the NCCL WARN text on the next lines."""


def detail_rows(chosen: Event, rows: Iterable[Event], span: int = DETAIL_LINES) -> list[Event]:
    """The root events that detail ``chosen``: in the same file, a few lines below it, written
    by the same rank (or by none) — the ``Last error:`` block under a generic NCCL error."""
    return [
        r
        for r in rows
        if r is not chosen
        and r.role == "root"
        and r.file == chosen.file
        and chosen.line < r.line <= chosen.line + span
        and r.rank in (chosen.rank, None)
    ]


def uniform_by_detail(chosen: Event, rows: Iterable[Event]) -> bool:
    """Whether the detail under ``chosen`` says the failure is one every rank hits alike (its
    pattern is tagged ``uniform``): a generic ``unhandled cuda error`` whose ``Last error:`` is
    NCCL's ``Cuda failure 'invalid argument'`` is the node's setup, not one rank's fault."""
    return any(r.tagged("uniform") for r in detail_rows(chosen, rows))


def headless(chosen: Event) -> bool:
    """Whether ``chosen`` is a traceback whose start the log does not have: its text begins
    with a frame or a frame's source line, not ``Traceback (most recent call last):`` (a
    paste that begins inside it). What came before was cut off, so the log cannot show that
    this rank failed first."""
    tb = chosen.traceback
    return tb is not None and not tb.lstrip().startswith(_HEADS)


_HEADS = ("Traceback (most recent call last)", "Original Traceback (most recent call last)")

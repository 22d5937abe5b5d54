"""Small rank rules for the reasoning, each a function of the events it needs.

``reason.py`` calls them; they live here so that each has its own unit tests
(``tests/test_rankrules.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import regex

from analyzer.model.event import ROOT, Event

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
        and r.role == ROOT
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
    return tb is not None and not tb.lstrip().startswith(HEADS)


HEADS = (
    "Traceback (most recent call last)",
    "Original Traceback (most recent call last)",
)
"""How a traceback's first line begins."""


_BAR = regex.compile(r"(?<![\d.])(\d{1,3})%(?:\|[^|\n]{0,80}\|)?\s*(\d+)/(\d+) \[\d+:\d+")
"""A tqdm progress bar: ``72% 23/32 [01:07<00:25, …]`` (YOLO's bar format) or ``72%|███▏ |
23/32 [01:07<00:25, …]`` (tqdm's default); the last one on a line is its latest refresh."""


def bar_of(text: str) -> tuple[int, int] | None:
    """(count, total) of the last progress bar on a line, or None."""
    found = _BAR.findall(text)
    if not found:
        return None
    _pct, n, total = found[-1]
    return int(n), int(total)


def bar_went_on(rows: Sequence[Event], first: Event) -> Event | None:
    """The first line after ``first`` (same file) whose progress bar counts further than the
    last bar at or before ``first``'s line (same total, a line with no rank or the same
    writer): some process kept working while ``first`` was written (the ranks that time out
    are blocked in the collective and draw nothing)."""
    bars = sorted(
        ((r, b) for r in rows if r.file == first.file and (b := bar_of(r.text)) is not None),
        key=lambda rb: rb[0].line,
    )
    before = [b for r, b in bars if r.line <= first.line]
    if not before:
        return None
    n0, total = before[-1]
    return next((r for r, (n, t) in bars if r.line > first.line and t == total and n > n0), None)


def reporting_ranks(timeouts: Iterable[Event]) -> set[int]:
    """The ranks whose timeout reports the logs show: the global rank of each line, or, when no
    line carries one (a torch 1.x watchdog line with no ``[rankN]:`` prefix), the rank the
    watchdog names itself (``[Rank N]``, ``pg_rank``)."""
    rows = list(timeouts)
    ranks = {r.rank for r in rows if r.rank is not None}
    if ranks:
        return ranks
    named = {r.cap("pg_rank") for r in rows}
    if None in named or "" in named:
        return set()
    return {int(x) for x in named if x is not None and x.isdecimal()}

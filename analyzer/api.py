"""The Python API: ``analyze(path)`` returns the events, the facts and the diagnosis."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.attribute import Attributed, attribute
from analyzer.catalog import Catalog, load_catalog
from analyzer.discover import Discovery, discover
from analyzer.events import build_rows, by_rank, to_frame
from analyzer.facts import JobFacts, collect_facts
from analyzer.read import ReadResult, read_job
from analyzer.reason import diagnose_rows
from analyzer.verdict import Diagnosis

if TYPE_CHECKING:
    import polars as pl


@dataclass
class Analysis:
    """Everything the tool learned about one job."""

    paths: list[Path]
    read: ReadResult
    attributed: Attributed
    rows: list[dict[str, Any]]
    facts: JobFacts
    catalog: Catalog
    notes: list[str] = field(default_factory=list)
    baseline: frozenset[str] | None = None
    """Templates of a good run's unknown-error lines (``--baseline``), see analyzer.unknown."""

    @cached_property
    def events(self) -> pl.DataFrame:
        """The rank × event table (one row per matched line or traceback)."""
        return to_frame(self.rows)

    def by_rank(self) -> pl.DataFrame:
        """One row per rank: node, first event and counts per category."""
        return by_rank(self.events)

    @cached_property
    def diagnosis(self) -> Diagnosis:
        """The verdict (computed on first use)."""
        d = diagnose_rows(
            [dict(r) for r in self.rows], self.facts, self.attributed.geometry, self.baseline
        )
        d.problems = self.read.problems + [
            f"pattern {p.id}: {p.disabled_reason}"
            for p in self.catalog.patterns
            if p.disabled_reason
        ]
        d.files = len(self.read.scans)
        d.bytes_read = sum(s.bytes_read for s in self.read.scans)
        if d.status == "ok" and not self.read.readable:
            d.status = "unknown"
        return d

    @property
    def discovery(self) -> Discovery:
        """Files found and skipped."""
        return self.read.discovery


def analyze(
    paths: str | Path | Sequence[str | Path],
    *,
    patterns: Sequence[Path] = (),
    catalog: Catalog | None = None,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    baseline: Sequence[str | Path] = (),
) -> Analysis:
    """Read a job's logs (directories or files) and attribute every event.

    ``baseline``: a good run of the same job; lines whose templates it also printed are never
    taken for an unknown failure's cause.

    >>> a = analyze("sample_logs/real/exception-cascade")   # doctest: +SKIP
    >>> a.events.columns[:4], a.diagnosis.verdict.category  # doctest: +SKIP
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    plist = [Path(p) for p in paths]
    cat = catalog or load_catalog(list(patterns))
    disc = discover(plist)
    rr = read_job(disc, cat, workers=workers, progress=progress)
    att = attribute(rr.scans)
    rows = build_rows(att)
    facts = collect_facts(rows)
    base = None
    if baseline:
        from analyzer.unknown import baseline_templates

        base = baseline_templates([Path(p) for p in baseline], cat)
    return Analysis(plist, rr, att, rows, facts, cat, baseline=base)

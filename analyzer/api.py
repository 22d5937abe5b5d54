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
    script: Path | None = None
    """The job's batch script (``--script``); else one found in the log directory."""

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
        d = diagnose_rows([dict(r) for r in self.rows], self.facts, self.attributed.geometry)
        d.problems = self.read.problems + [
            f"pattern {p.id}: {p.disabled_reason}"
            for p in self.catalog.patterns
            if p.disabled_reason
        ]
        d.files = len(self.read.scans)
        d.bytes_read = sum(s.bytes_read for s in self.read.scans)
        if d.status == "ok" and not self.read.readable:
            d.status = "unknown"
        _add_advisories(self, d)
        return d

    @property
    def discovery(self) -> Discovery:
        """Files found and skipped."""
        return self.read.discovery


def _add_advisories(a: Analysis, d: Diagnosis) -> None:
    from analyzer.launch import launch_advisories

    geo = a.attributed.geometry
    try:
        adv, used = launch_advisories(a.rows, d.verdict.category, a.paths,
                                      a.script, verdict_pattern=d.verdict.pattern_id,
                                      geometry=(geo.nnodes, geo.nproc_per_node),
                                      gpu_name=a.facts.get("gpu_name"),
                                      task_hosts=geo.task_hosts)
    except Exception as exc:  # a script the linter cannot read must not cost the diagnosis
        d.problems.append(f"launch advisories skipped: {type(exc).__name__}: {exc}")
        return
    d.advisories = [x.as_dict() for x in adv]
    d.batch_script = used


def analyze(
    paths: str | Path | Sequence[str | Path],
    *,
    patterns: Sequence[Path] = (),
    catalog: Catalog | None = None,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Analysis:
    """Read a job's logs (directories or files) and attribute every event.

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
    return Analysis(plist, rr, att, rows, facts, cat)

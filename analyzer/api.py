"""The Python API: ``analyze(path)`` returns the events, the facts and the diagnosis."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.catalog.cache import digest
from analyzer.catalog.load import builtin_files, load_catalog, pattern_dirs_from_env
from analyzer.catalog.model import Catalog
from analyzer.decide.flightrec import evidence_rows
from analyzer.decide.reason import ReadSummary, diagnose_rows
from analyzer.decide.verdict import Diagnosis, JobShape
from analyzer.flightrec.analyze import read_finding
from analyzer.model.event import Event
from analyzer.read.batchscript import BatchScript, load_batch_script
from analyzer.read.discover import Discovery, discover
from analyzer.read.readjob import ReadResult, read_job
from analyzer.read.slurmjob import SlurmJob
from analyzer.read.unreadable import why_unreadable
from analyzer.shape.attribute import Attributed, attribute
from analyzer.shape.events import build_events, to_frame
from analyzer.shape.facts import JobFacts, collect_facts
from analyzer.util.gcpause import without_gc

if TYPE_CHECKING:
    import polars as pl

    from analyzer.flightrec.analyze import FrFinding


@dataclass(frozen=True)
class AnalyzeOptions:
    """How ``analyze`` and ``run_job`` read a job (every field optional; see ``analyze``)."""

    patterns: Sequence[Path] = ()
    """Extra pattern files or directories, loaded after the built-in catalog."""
    catalog: Catalog | None = None
    """An already loaded catalog; ``patterns`` is then ignored."""
    workers: int | None = None
    """Processes used for reading (None: the machine's cores; 1: this process)."""
    progress: Callable[[int, int], None] | None = None
    """Called as ``progress(done_bytes, total_bytes)`` while files are read."""
    missing_ok: bool = False
    """A path that does not exist is a problem in ``read.problems``, not an error."""
    baseline: Sequence[str | Path] = ()
    """Good runs of the same job: error lines they also printed are never a cause."""
    good_run_templates: frozenset[str] | None = None
    """Those lines' templates, already read (``baseline_templates``)."""
    script: Path | None = None
    """The job's sbatch script (default: one found in the job directory, or the scheduler's)."""
    scheduler: SlurmJob | None = None
    """SLURM's record of the job (``analyzer.read.slurmjob.lookup``), given by job id."""


def _options(options: AnalyzeOptions | None, given: dict[str, Any]) -> AnalyzeOptions:
    """``options`` with the fields named in ``given`` replaced; an unknown name is a
    ``TypeError`` that lists the known ones."""
    known = {f.name for f in fields(AnalyzeOptions)}
    unknown = sorted(set(given) - known)
    if unknown:
        raise TypeError(
            f"unknown option {', '.join(unknown)}; AnalyzeOptions has {', '.join(sorted(known))}"
        )
    return replace(options or AnalyzeOptions(), **given)


@dataclass(frozen=True, repr=False)
class Analysis:
    """Everything the tool learned about one job (returned by ``analyze``).

    Attributes: ``paths`` (as given), ``read`` (files read, skipped and problems),
    ``attributed`` (the launch geometry; the reader's events with their attributions),
    ``rows`` (the events as typed records, ``analyzer.model.event.Event``), ``facts`` (world size,
    parallelism, versions, progress), ``catalog`` (the patterns used), ``flightrec`` (the
    Flight Recorder dumps' finding), ``batch_script`` (the job's batch script as read),
    ``script`` and ``baseline`` (as given to ``analyze``). Everything the diagnosis needs is
    read by ``analyze``: the diagnosis reads no file. Never changed once made; computed on first
    use, without side effects: ``events`` (polars) and ``diagnosis`` (``diagnose(analysis)``).

    In Jupyter the analysis shows as its HTML report; ``repr()`` is one short line.
    """

    paths: list[Path]
    read: ReadResult
    attributed: Attributed
    rows: list[Event]
    facts: JobFacts
    catalog: Catalog
    notes: list[str] = field(default_factory=list)
    flightrec: FrFinding | None = None
    """What the PyTorch Flight Recorder dumps show (None without dumps)."""
    baseline: frozenset[str] | None = None
    """Templates of a good run's unknown-error lines (``--baseline``); see
    ``analyzer.decide.unknown``."""
    script: Path | None = None
    """The job's batch script (``--script``); else one found in the log directory."""
    scheduler: SlurmJob | None = None
    """SLURM's record of the job, when it was given by job id (its facts and notes join the
    diagnosis; its batch script was read into ``batch_script``)."""
    batch_script: BatchScript | None = None
    """The batch script the launch advisories lint (``script``, the scheduler's, or one found
    in the log directory), read with the logs; None when there is none."""

    @cached_property
    def events(self) -> pl.DataFrame:
        """The rank × event table (one row per matched line or traceback)."""
        return to_frame(self.rows, self.catalog.capture_types())

    def by_rank(self) -> pl.DataFrame:
        """One row per rank of the world (ranks without events included, with zero counts):
        node, local rank, first event (time, category, role, pattern), counts per category."""
        from analyzer.shape.byrank import world_by_rank

        return world_by_rank(self.events, self.attributed.geometry)

    @cached_property
    def diagnosis(self) -> Diagnosis:
        """The diagnosis (``diagnose(self)``, computed on first use)."""
        return diagnose(self)

    @property
    def discovery(self) -> Discovery:
        """Files found and skipped."""
        return self.read.discovery

    def __repr__(self) -> str:
        where = " ".join(str(p) for p in self.paths[:3]) + (" …" if len(self.paths) > 3 else "")
        nf, ne = len(self.read.scans), len(self.rows)
        head = (
            f"<Analysis {where!r}: {nf} file{'s' if nf != 1 else ''}, "
            f"{ne} event{'s' if ne != 1 else ''}"
        )
        try:
            d = self.diagnosis
        except Exception as exc:  # repr must never raise
            return f"{head}; diagnosis failed: {type(exc).__name__}>"
        v = d.verdict
        if d.status != "failed":
            return f"{head}; status {d.status}>"
        rank = "-" if v.rank is None else v.rank
        node = "-" if v.node is None else v.node
        return f"{head}; {v.category} rank={rank} node={node} confidence={v.confidence:.2f}>"

    def _repr_markdown_(self) -> str:
        """The Markdown report (Jupyter, and anything that renders ``_repr_markdown_``)."""
        from analyzer.report import render

        return render(self.diagnosis, "markdown")

    def _repr_html_(self) -> str:
        """The HTML report in a sandboxed frame, so that its styles stay out of the notebook."""
        import html

        from analyzer.report import render

        page = render(self.diagnosis, "html")
        return (
            f'<iframe sandbox srcdoc="{html.escape(page, quote=True)}" '
            'style="width:100%;height:720px;border:1px solid #ccc" '
            'title="mcore-diagnose report"></iframe>'
        )


@without_gc
def diagnose(a: Analysis) -> Diagnosis:
    """The diagnosis of an analysed job: the verdict rules, the rank rules, the launch
    advisories and what SLURM said of it. ``a`` is never changed and no file is read; the same
    analysis always gives the same diagnosis."""
    fr = a.flightrec
    off = a.read.disabled  # switched off while this job was read, in any process (its own)
    disabled = [f"pattern {p.id}: {off[p.id]}" for p in a.catalog.patterns if p.id in off]
    geo = a.attributed.geometry
    d = diagnose_rows(
        a.rows,  # read only: ``diagnose_rows`` never changes the rows it is given
        a.facts,
        geo,
        ReadSummary(
            problems=a.read.problems + disabled + (list(fr.problems) if fr is not None else []),
            files=len(a.read.scans),
            bytes_read=sum(s.bytes_read for s in a.read.scans),
            readable=a.read.readable,
            flight_recorder=fr,
        ),
        a.baseline,
    )
    d = replace(
        d,
        shape=JobShape(geo.world, geo.nnodes, geo.nproc_per_node, dict(geo.task_hosts)),
        paths=tuple(str(p) for p in a.paths),
    )
    d = _with_advisories(a, d)
    return d if a.scheduler is None else _with_scheduler(d, a.scheduler)


def _with_advisories(a: Analysis, d: Diagnosis) -> Diagnosis:
    """``d`` with the launch advisories of the job's batch script and logs."""
    from analyzer.decide.advisories import LaunchInput, launch_advisories

    geo = a.attributed.geometry
    job = LaunchInput(a.rows, a.batch_script, geo.nnodes, geo.nproc_per_node, geo.task_hosts,
                      a.facts.get("gpu_name"))
    try:
        adv, used = launch_advisories(job, (d.verdict.category, d.verdict.pattern_id))
    except Exception as exc:  # a script the linter cannot read must not cost the diagnosis
        problem = f"launch advisories skipped: {type(exc).__name__}: {exc}"
        return replace(d, problems=[*d.problems, problem])
    from analyzer.decide.leading import lead

    return lead(replace(d, advisories=tuple(adv), batch_script=used))


def _with_scheduler(d: Diagnosis, job: SlurmJob) -> Diagnosis:
    """``d`` with SLURM's facts and notes of the job; a batch script SLURM handed over is
    named by the command that wrote it."""
    used = d.batch_script
    if used and job.script and used == str(job.script):
        used = f"scontrol write batch_script {job.job_id}"
    return replace(
        d,
        scheduler_facts=dict(job.facts),
        problems=[*d.problems, *job.notes],
        batch_script=used,
    )


_BUILTIN: dict[str, Catalog] = {}
"""The built-in catalog ``analyze`` loaded, by its files' digest (``_catalog``)."""


def _catalog(patterns: Sequence[Path]) -> Catalog:
    """The catalog of an analysis given none: with user patterns (``patterns``, or
    ``MCORE_DIAGNOSE_PATTERNS``) loaded anew each time (a user regex that runs out of time is
    disabled for the run that met it, and reported there); the built-in one loaded once per
    process while its files are unchanged, and with it the reader's compiled scanner
    (``read.readjob.scanner_for``): about 0.1 s of each later call (a library user's loop,
    the test suite). Built-in patterns are never changed once loaded."""
    if patterns or pattern_dirs_from_env():
        return load_catalog(list(patterns))
    key = digest([(f, False) for f in builtin_files()])
    if key is None:
        return load_catalog()
    if key not in _BUILTIN:
        _BUILTIN.clear()
        _BUILTIN[key] = load_catalog()
    return _BUILTIN[key]


@without_gc
def analyze(
    paths: str | Path | Sequence[str | Path],
    options: AnalyzeOptions | None = None,
    /,
    **given: Any,
) -> Analysis:
    """Read one job's logs (directories or files), its batch script and Flight Recorder dumps,
    and attribute every event.

    Parameters:
        paths: a job directory or log file, or several that form ONE job (their ranks and
            nodes are merged; diagnose separate jobs with separate calls).
        options: how to read it (``AnalyzeOptions``; default: all its defaults).
        given: any field of ``AnalyzeOptions`` by name, e.g. ``analyze(path, workers=1)``;
            it replaces the one in ``options``. The fields:

            * ``patterns``: extra pattern files or directories, loaded after the built-in
              catalog (a pattern with the same id replaces the built-in one).
            * ``catalog``: an already loaded catalog (``analyzer.catalog.load.load_catalog``);
              ``patterns`` is then ignored. Loading costs more than diagnosing a small job:
              reuse it.
            * ``workers``: processes used for reading (default: the machine's cores; 1 reads
              in this process).
            * ``progress``: called as ``progress(done_bytes, total_bytes)`` while files are
              read.
            * ``missing_ok``: with False (the default) a path that does not exist raises
              ``FileNotFoundError``; with True it becomes a problem in ``read.problems``.
            * ``baseline``: good runs of the same job (directories or files): error lines
              they also printed are never taken for an unknown failure's cause
              (``analyzer.decide.unknown``).
            * ``good_run_templates``: those lines' templates, already read
              (``baseline_templates``); used instead of ``baseline`` when given.
            * ``script``: the job's sbatch script, for the launch advisories (default: one
              found in the job directory, or the scheduler's).
            * ``scheduler``: SLURM's record of the job (``analyzer.read.slurmjob.lookup``),
              when it was given by job id.

    Raises:
        FileNotFoundError: a path does not exist (unless ``missing_ok``).
        TypeError: an option that ``AnalyzeOptions`` does not have.
        analyzer.catalog.model.CatalogError: a pattern file is invalid, or the built-in catalog is
            missing or empty (a broken installation).

    When the paths exist but hold nothing readable (an empty directory, only binary files),
    the analysis is returned with ``read.readable`` False and ``diagnosis.status ==
    "unknown"`` (``diagnosis.exit_code == 3``, as the command line exits).

    >>> a = analyze("sample_logs/real/exception-cascade")   # doctest: +SKIP
    >>> a.events.columns[:4], a.diagnosis.verdict.category  # doctest: +SKIP
    """
    o = _options(options, given)
    if isinstance(paths, (str, Path)):
        paths = [paths]
    plist = [Path(p) for p in paths]
    if not o.missing_ok:
        for p in plist:
            if not os.path.lexists(p):
                raise FileNotFoundError(errno.ENOENT, "no such job directory or log file", str(p))
    cat = o.catalog or _catalog(o.patterns)
    disc = discover(plist)
    rr = read_job(disc, cat, workers=o.workers, progress=o.progress)
    att = attribute(rr.scans, cat)
    for sc in rr.scans:  # the records below carry all the reader's events held
        sc.events = []
    rows = build_events(att)  # empties att.events as it goes (``attributed`` keeps the geometry)
    facts = collect_facts(rows)
    fr = read_finding(disc.fr_dumps, att.geometry.ranks(rows))
    if fr is not None:
        rows += evidence_rows(fr, rows)
    base = o.good_run_templates
    if base is None and o.baseline:
        base = baseline_templates([Path(p) for p in o.baseline], cat)
    sched = o.scheduler
    theirs = sched.script if sched is not None and o.script is None else None
    script = load_batch_script(plist, o.script or theirs, from_scheduler=theirs is not None)
    return Analysis(
        plist, rr, att, rows, facts, cat, flightrec=fr, baseline=base, script=o.script,
        scheduler=sched, batch_script=script,
    )


def baseline_templates(paths: Sequence[Path], catalog: Catalog | None = None) -> frozenset[str]:
    """Templates of every candidate line of a good run (``--baseline GOOD_JOB_DIR``)."""
    from analyzer.decide.unknown import candidate_templates

    return candidate_templates(analyze(list(paths), catalog=catalog, workers=1).rows)


@dataclass(frozen=True)
class JobRun:
    """One job run through the pipeline: what the command line and triage both report."""

    analysis: Analysis
    problem: str | None = None
    """Why nothing of the job could be read, with what to do next (None: it was read)."""

    @property
    def diagnosis(self) -> Diagnosis:
        """The job's diagnosis (made on first use: ``events`` needs none)."""
        return self.analysis.diagnosis


def unreadable(a: Analysis, paths: Sequence[str | Path]) -> str | None:
    """Why nothing of ``paths`` could be read, a newline, and what to do next (each one line:
    the command line prints them as one, JSON keeps them apart); None when something was read."""
    why = why_unreadable(a.read, paths)
    return None if why is None else "\n".join(why)


def run_job(
    paths: Sequence[str | Path],
    options: AnalyzeOptions,
    shown: Sequence[str | Path] | None = None,
) -> JobRun:
    """Analyse one job, the one way every command does it: paths that do not exist are
    problems, not errors (``missing_ok``); ``options.scheduler`` is SLURM's record of a job
    given by id (its batch script is the default ``script``); ``shown`` are the paths named in
    the problem when nothing could be read (default: ``paths``)."""
    a = analyze(paths, replace(options, missing_ok=True))
    return JobRun(a, unreadable(a, shown if shown is not None else paths))

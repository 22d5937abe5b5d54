"""The ``mcore-diagnose`` command line."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, BinaryIO

import typer

from analyzer.decide.verdict import (
    EXIT_DIAGNOSED,
    EXIT_NO_FAILURE,
    EXIT_UNKNOWN,
    EXIT_UNREADABLE,
    EXIT_USAGE,
)
from analyzer.lint.cli import register_lint
from analyzer.triage.cli import triage_app
from analyzer.util.color import ColorChoice
from analyzer.util.gcpause import paused_gc
from analyzer.version import __version__

SUBCOMMANDS = {
    "diagnose",
    "events",
    "patterns",
    "triage",
    "--help",
    "-h",
    "--install-completion",
    "--show-completion",
}


def _plain_argument_help() -> None:
    """Show arguments in help as their metavar (``PATH...``), as click and most tools do.

    typer writes a required argument as ``{PATH...}``; the braces mean nothing to a user.
    """
    from typer.core import TyperArgument

    def make_metavar(self: TyperArgument, ctx: object, *, usage: bool = False) -> str:
        name = self.metavar or (self.name or "").upper()
        if self.nargs != 1 and not name.endswith("..."):
            name += "..."
        return f"[{name}]" if usage and not self.required else name

    TyperArgument.make_metavar = make_metavar  # type: ignore[method-assign]


_plain_argument_help()

app = typer.Typer(
    name="mcore-diagnose",
    help=(
        "Post-mortem analyzer for failed distributed training jobs (Megatron-LM, PyTorch, "
        "SLURM): names the first failing rank, the cause and a fix.\n\n"
        "  mcore-diagnose logs/job-1234/            # diagnose a job directory\n\n"
        "  mcore-diagnose 1234                      # a SLURM job id (scontrol)\n\n"
        "  mcore-diagnose lint train.sbatch         # check a script first\n\n"
        "  mcore-diagnose events logs/job-1234/ --by-rank\n\n"
        "  mcore-diagnose patterns test\n\n"
        "  mcore-diagnose triage /logs/last-night/ -o triage.parquet\n\n"
        "  mcore-diagnose --version\n\n"
        "Exit codes: 0 failure diagnosed, 1 failed with unknown cause, 2 no failure found, "
        "3 nothing could be read, 64 usage error."
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"mcore-diagnose {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            help="Print the version and exit.",
            is_eager=True,
            callback=_version_callback,
        ),
    ] = False,
) -> None:
    pass


patterns_app = typer.Typer(help="List, show, test and explain the failure patterns.")
app.add_typer(patterns_app, name="patterns")
app.add_typer(triage_app, name="triage")
register_lint(app, SUBCOMMANDS)


class Format(StrEnum):
    """Report formats."""

    terminal = "terminal"
    text = "text"
    markdown = "markdown"
    html = "html"
    json = "json"


class TableFormat(StrEnum):
    """Event table formats."""

    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"


PathsArg = Annotated[
    list[str],
    typer.Argument(
        help="Job directories, log files, or - for standard input.",
        metavar="PATH...",
        show_default=False,
    ),
]
PatternsOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--patterns",
        "-p",
        metavar="PATH",
        help="Extra pattern file or directory (repeatable); also MCORE_DIAGNOSE_PATTERNS.",
        show_default=False,
    ),
]
OutputOpt = Annotated[
    Path | None,
    typer.Option("--output", "-o", metavar="FILE", help="Write to FILE, not standard output."),
]
VerboseOpt = Annotated[
    bool, typer.Option("--verbose", "-v", help="Show skipped files and the per-rank timeline.")
]
ColorOpt = Annotated[
    ColorChoice,
    typer.Option(
        "--color",
        metavar="WHEN",
        help=(
            "Colour the terminal report: auto (only on a terminal; NO_COLOR, FORCE_COLOR, "
            "CLICOLOR_FORCE and TERM=dumb are honoured), always or never."
        ),
        case_sensitive=False,
    ),
]
FR_HELP = "Flight Recorder dumps (*_trace_rank_N) kept outside the job dir (repeatable)."
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers", "-j", metavar="N", help="Processes for reading (default: one per core)."
    ),
]
GoodRunOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--baseline",
        help="A good run of the same job (directory or log file, repeatable): error lines it "
        "also printed are never taken for the cause of an unknown failure.",
        show_default=False,
        metavar="PATH",
    ),
]


def fail(message: str, code: int = EXIT_UNREADABLE) -> None:
    """Print one clear line on stderr and exit."""
    typer.echo(f"mcore-diagnose: {message}", err=True)
    raise typer.Exit(code)


def _stdin_to_temp() -> Path:
    fd, name = tempfile.mkstemp(prefix="mcore-diagnose-stdin-", suffix=".log")
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
    return Path(name)


def _check_baseline(baseline: list[Path] | None) -> None:
    for b in baseline or []:
        if not b.exists():
            fail(f"--baseline {b}: no such file or directory; give a good run's logs", EXIT_USAGE)


def _run(
    paths: list[str],
    catalog: Any,
    workers: int | None,
    show: bool,
    *,
    extra: list[str] | None = None,
    baseline: list[Path] | None = None,
    script: Path | None = None,
    scheduler: Any = None,
) -> Any:
    """``analyzer.api.run_job`` on ``paths`` (``-``: standard input, read into a temporary
    file) and ``extra`` (Flight Recorder dumps), with a progress bar when ``show``."""
    from analyzer.api import run_job
    from analyzer.report.progress import progress_callback

    _check_baseline(baseline)
    tmp: Path | None = None
    real: list[Path] = []
    for p in [*paths, *(extra or [])]:
        if p == "-":
            tmp = _stdin_to_temp()
            real.append(tmp)
        else:
            real.append(Path(p))
    try:
        with progress_callback(show) as cb:
            return run_job(
                real,
                catalog,
                workers=workers,
                progress=cb,
                script=script,
                baseline=baseline or [],
                scheduler=scheduler,
                shown=paths,
            )
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)


def _write(text: str | bytes, output: Path | None) -> None:
    if output is None:
        if isinstance(text, bytes):
            sys.stdout.buffer.write(text)
        else:
            sys.stdout.write(text)
        return
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    _stream(lambda fh: fh.write(data), output)


def _stream(write: Callable[[BinaryIO], object], output: Path | None) -> None:
    """``write(sink)`` straight into ``output`` (standard output without it): a table of a
    hundred thousand events is never one string in memory (the many-files benchmark job's
    events as JSON are 130 MB)."""
    if output is None:
        sys.stdout.flush()
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    try:
        with output.open("wb") as fh:
            write(fh)
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}", EXIT_USAGE)


JSON_SLICE_ROWS = 8192
"""Rows written at a time by :func:`_json_rows`."""


def _json_rows(df: Any, sink: BinaryIO) -> None:
    """``df.write_json()`` and a newline into ``sink``, a slice of rows at a time: polars makes
    the whole text in memory before it writes (130 MB for the many-files job's events)."""
    sink.write(b"[")
    for i in range(0, len(df), JSON_SLICE_ROWS):
        part = df.slice(i, JSON_SLICE_ROWS).write_json().encode("utf-8")
        sink.write((b"," if i else b"") + part[1:-1])  # the rows, without the array's brackets
    sink.write(b"]\n")


# Several jobs in one run exit with the most serious outcome: nothing readable, then a failure
# of unknown cause, then a diagnosed failure, then no failure found.
_EXIT_SEVERITY = (EXIT_NO_FAILURE, EXIT_DIAGNOSED, EXIT_UNKNOWN, EXIT_UNREADABLE)


@app.command("diagnose")
def diagnose_cmd(
    paths: PathsArg,
    fmt: Annotated[
        Format | None,
        typer.Option(
            "--format",
            "-f",
            metavar="FORMAT",
            help=(
                "Report format: terminal, text, markdown, html or json (JSON Lines: one object "
                "per job). Default: terminal on standard output; with -o, each file's suffix."
            ),
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        list[Path] | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help=(
                "Write the report to FILE instead of standard output; repeatable, the format "
                "from each suffix (.html .htm .md .markdown .json .jsonl .txt .text)."
            ),
            show_default=False,
        ),
    ] = None,
    color: ColorOpt = ColorChoice.auto,
    patterns: PatternsOpt = None,
    verbose: VerboseOpt = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print one line per job.")] = False,
    workers: WorkersOpt = None,
    fr: Annotated[
        list[str] | None, typer.Option("--fr", help=FR_HELP, show_default=False, metavar="DIR")
    ] = None,
    baseline: GoodRunOpt = None,
    script: Annotated[
        Path | None,
        typer.Option(
            "--script",
            metavar="FILE",
            help=(
                "The job's sbatch script, for the launch advisories (default: one in the job "
                "directory, or scontrol's copy for a job id); with several jobs, each one's."
            ),
            show_default=False,
        ),
    ] = None,
) -> None:
    """Diagnose failed jobs: first failing rank, cause, fix (the default command).

    Each job directory is diagnosed on its own; log files named on the command line (and -
    for standard input) together form one job. An argument that is a SLURM job id and not an
    existing path is a job of its own too: scontrol names its logs and its batch script.

    Examples:

      mcore-diagnose logs/job-1234/

      mcore-diagnose 1234                      # a SLURM job id

      mcore-diagnose logs/job-1234/ -o report.html -o report.txt -o report.json

      mcore-diagnose logs/job-1234/ logs/job-1235/ -f json | jq .verdict.category

      mcore-diagnose slurm-1234.out train-1234.err --format json

      mcore-diagnose logs/job-1234/ --baseline logs/job-1200/   # a good run of the same job
    """
    from analyzer.read.slurmjob import is_job_id
    from analyzer.report.outputs import OutputError, combine, group_jobs, job_label, plan_outputs
    from analyzer.util.color import use_color

    try:
        targets = plan_outputs(output or [], fmt.value if fmt else None)
    except OutputError as exc:
        fail(str(exc), EXIT_USAGE)
    if script is not None and not script.is_file():
        fail(f"--script {script}: no such file; give the job's sbatch script", EXIT_USAGE)
    jobs = group_jobs(paths, alone=is_job_id)
    if len(jobs) > 1 and any(t.fmt == "html" for t in targets):
        fail(
            "an HTML report holds one job; give one job directory per run, or use "
            "`mcore-diagnose triage` for many jobs",
            EXIT_USAGE,
        )
    json_only = all(t.fmt == "json" for t in targets)
    show_progress = not json_only and sys.stderr.isatty()
    to_stdout = targets[0].path is None
    tty = to_stdout and use_color(color, sys.stdout)
    catalog = _catalog(patterns)
    rendered: dict[int, list[tuple[str, str]]] = {i: [] for i in range(len(targets))}
    codes: list[int] = []
    for job in jobs:
        label = job_label(job)
        prefix = f"{label}: " if len(jobs) > 1 else ""
        run, problem = _run_one(job, catalog, workers, show_progress, fr, baseline, script)
        if problem is not None:  # one line, like a bad path; the message names the path
            codes.append(EXIT_UNREADABLE)
            typer.echo(f"mcore-diagnose: {problem}", err=True)
            for i, t in enumerate(targets):
                if t.fmt == "json":
                    a = run.analysis if run is not None else None
                    rendered[i].append((label, _unreadable_json(label, problem, a)))
            continue
        a, d = run.analysis, run.diagnosis
        codes.append(d.exit_code)
        _warn(a, d, prefix, verbose and targets[0].fmt == "terminal")
        for i, t in enumerate(targets):
            text = _render_job(a, t.fmt, label, quiet, verbose, tty and t.path is None)
            rendered[i].append((label, prefix + text if quiet and t.fmt != "json" else text))
    for i, t in enumerate(targets):
        if rendered[i]:
            try:
                text = combine(t.fmt, rendered[i], lines=quiet)
            except OutputError as exc:
                fail(str(exc), EXIT_USAGE)
            _write(text, t.path)
    raise typer.Exit(max(codes, key=_EXIT_SEVERITY.index) if codes else EXIT_UNREADABLE)


def _run_one(
    job: list[str],
    catalog: Any,
    workers: int | None,
    show: bool,
    fr: list[str] | None,
    baseline: list[Path] | None,
    script: Path | None,
) -> tuple[Any, str | None]:
    """(the job's run or None, why it cannot be read or looked up)."""
    slurm, logs, problem = _slurm_job(job)
    if problem is not None:
        return None, problem
    try:
        run = _run(
            logs, catalog, workers, show, extra=fr, baseline=baseline, script=script,
            scheduler=slurm,
        )
        if run.problem is None:
            run.diagnosis  # noqa: B018  (made now: it reads SLURM's copy of the script)
    finally:
        if slurm is not None:
            slurm.cleanup()
    return run, run.problem


def _warn(a: Any, d: Any, prefix: str, skipped: bool) -> None:
    """The job's problems (and, with ``skipped``, the files skipped) on standard error."""
    if skipped:
        for rel, why in a.discovery.skipped:
            typer.echo(f"{prefix}skipped {rel}: {why}", err=True)
    for p in d.problems:
        typer.echo(f"mcore-diagnose: warning: {prefix}{p}", err=True)


def _slurm_job(job: list[str]) -> tuple[Any, list[str], str | None]:
    """(the SLURM job or None, the log paths to read, why a job id cannot be looked up)."""
    from analyzer.read.slurmjob import SlurmJobError, is_job_id, lookup

    if len(job) != 1 or not is_job_id(job[0]):
        return None, job, None
    try:
        j = lookup(job[0])
    except SlurmJobError as exc:
        return None, [], str(exc)
    return j, [str(f) for f in j.logs], None


def _render_job(a: Any, fmt: str, label: str, quiet: bool, verbose: bool, color: bool) -> str:
    from analyzer.report import render

    if fmt == "json":
        from analyzer.report.outputs import json_line

        return json_line(_with_job(a.diagnosis.as_dict(), label))
    if quiet:
        return render(a, fmt, quiet=True)
    return render(a, fmt, verbose=verbose, color=color)


def _with_job(obj: dict[str, Any], label: str) -> dict[str, Any]:
    """The JSON object with ``job`` (the paths as given) right after ``schema_version``."""
    return {"schema_version": obj["schema_version"], "job": label, **obj}


def _unreadable_json(label: str, problem: str, a: Any | None) -> str:
    from analyzer.decide.verdict import SCHEMA_VERSION
    from analyzer.report.outputs import json_line

    return json_line(
        {
            "schema_version": SCHEMA_VERSION,
            "job": label,
            "status": "unknown",
            "verdict": None,
            "error": problem.split("\n", 1)[0],
            "hint": problem.split("\n", 1)[1] if "\n" in problem else None,
            "problems": list(a.read.problems) if a is not None else [problem],
            "skipped": [{"file": rel, "reason": why} for rel, why in a.discovery.skipped]
            if a is not None
            else [],
            "files_read": 0,
            "bytes_read": 0,
        }
    )


@app.command("events")
def events_cmd(
    paths: PathsArg,
    fmt: Annotated[
        TableFormat,
        typer.Option(
            "--format", "-f", metavar="FORMAT", help="Table format: table, csv, json or parquet."
        ),
    ] = TableFormat.table,
    output: OutputOpt = None,
    by_rank: Annotated[bool, typer.Option("--by-rank", help="One row per rank.")] = False,
    patterns: PatternsOpt = None,
    workers: WorkersOpt = None,
    all_events: Annotated[
        bool, typer.Option("--all", help="Include context events (facts, progress lines).")
    ] = False,
) -> None:
    """Print or write the rank × event table.

    Each job directory is a job of its own: with several jobs the table gets a first column
    ``job`` (the path as given); log files named on the command line form one job.

    Examples:

      mcore-diagnose events logs/job-1234/ --by-rank

      mcore-diagnose events logs/job-1234/ --format parquet -o events.parquet
    """
    import polars as pl

    from analyzer.report.outputs import group_jobs, job_label
    from analyzer.shape.table import to_frame

    jobs = group_jobs(paths)
    catalog = _catalog(patterns)
    frames = []
    for job in jobs:
        run = _run(job, catalog, workers, False)
        if run.problem:
            fail(run.problem)
        a = run.analysis
        del run  # ``a`` is dropped below, once its rows are in ``df``
        if by_rank:
            df = a.by_rank()
        elif all_events:
            df = a.events
        else:  # the table of the events shown only, with the columns of all
            shown = [r for r in a.rows if r.role != "context"]
            df = to_frame(shown, a.catalog.capture_types(), columns_of=a.rows)
        if len(jobs) > 1:
            df = df.select(pl.lit(job_label(job)).alias("job"), pl.all())
        frames.append(df)
        del a  # its records and table: the rows to write are all in ``df`` now
    df = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")
    if by_rank and len(frames) > 1:  # a category one job lacks counts 0 there
        from analyzer.shape.byrank import COUNT_EXCLUDED

        df = df.with_columns(pl.col(c).fill_null(0) for c in df.columns if c not in COUNT_EXCLUDED)
    if fmt == TableFormat.parquet:
        if output is None:
            fail("--format parquet needs -o FILE", EXIT_USAGE)
        df.write_parquet(output)
        return
    if fmt in (TableFormat.csv, TableFormat.json):
        df = _iso_times(df)
    if fmt == TableFormat.csv:
        flat = df.select([c for c in df.columns if df.schema[c] != pl.List])
        _stream(lambda sink: flat.write_csv(sink), output)
        return
    if fmt == TableFormat.json:
        _stream(lambda sink: _json_rows(df, sink), output)
        return
    from analyzer.report.table import table_text

    _write(table_text(df, by_rank=by_rank), output)


def _iso_times(df: Any) -> Any:
    """Datetime columns as strings in the tool's one ISO 8601 form (``analyzer.util.timefmt``)."""
    import polars as pl

    from analyzer.util.timefmt import POLARS_FORMAT

    return df.with_columns(
        pl.col(c).dt.to_string(POLARS_FORMAT)
        for c, t in df.schema.items()
        if isinstance(t, pl.Datetime)
    )


@patterns_app.command("list")
def patterns_list(patterns: PatternsOpt = None) -> None:
    """List every pattern: id, category, role, title."""
    cat = _catalog(patterns)
    for p in cat.patterns:
        typer.echo(f"{p.id:<48} {p.category:<28} {p.role:<8} {p.title}")
    typer.echo(f"{len(cat.patterns)} patterns from {len(cat.sources)} files", err=True)


@patterns_app.command("show")
def patterns_show(
    pattern_id: Annotated[str, typer.Argument(metavar="ID", help="A pattern id.")],
    patterns: PatternsOpt = None,
) -> None:
    """Show one pattern in full."""
    cat = _catalog(patterns)
    p = cat.by_id.get(pattern_id)
    if p is None:
        close = [i for i in cat.by_id if pattern_id.split(".")[0] in i][:5]
        fail(
            f"no pattern {pattern_id!r}"
            + (
                f"; did you mean {', '.join(close)}?"
                if close
                else "; see `mcore-diagnose patterns list`"
            ),
            EXIT_USAGE,
        )
        return
    typer.echo(
        f"id:       {p.id}\ncategory: {p.category}\nrole:     {p.role}\ntitle:    {p.title}\n"
        f"needles:  {list(p.needles)}\nregex:    {p.regex.pattern}\ncause:    {p.cause}\n"
        f"fix:      {p.fix}\nversions: {', '.join(p.versions)}\nsource:   {p.source}\n"
        f"file:     {p.origin}\nexamples:"
    )
    for ex in p.examples:
        typer.echo(f"  + {ex.line}")
    for line in p.counter_examples:
        typer.echo(f"  - {line}")


@patterns_app.command("test")
def patterns_test(patterns: PatternsOpt = None) -> None:
    """Run every example and counter-example; exit 1 on any failure."""
    from analyzer.catalog.load import check_pattern, cross_claims

    cat = _catalog(patterns, validate=False)
    failures = [f"{p.id}: {m}" for p in cat.patterns for m in check_pattern(p)]
    failures += cross_claims(cat)
    n = sum(len(p.examples) + len(p.counter_examples) for p in cat.patterns)
    for f in failures:
        typer.echo(f"FAIL {f}")
    typer.echo(f"{len(cat.patterns)} patterns, {n} examples: {len(failures)} failed")
    raise typer.Exit(1 if failures else 0)


@patterns_app.command("explain")
def patterns_explain(
    line: Annotated[str, typer.Argument(metavar="LINE", help="A log line, quoted.")],
    patterns: PatternsOpt = None,
) -> None:
    """Show which pattern matches LINE and what it captures."""
    from analyzer.lines.prefixes import split_prefixes
    from analyzer.util.sanitize import clean_line

    cat = _catalog(patterns)
    pre = split_prefixes(clean_line(line))
    typer.echo(
        f"prefixes: task={pre.task} local_rank={pre.local_rank} rank={pre.rank} "
        f"level={pre.level} stamp={pre.stamp}"
    )
    typer.echo(f"message:  {pre.message}")
    found = cat.match_all(pre.message)
    if not found:
        typer.echo("no pattern matches")
        raise typer.Exit(1)
    kept = cat.match(pre.message)
    for pm in found:
        mark = "*" if kept and pm.pattern.id == kept.pattern.id else " "
        typer.echo(f"{mark} {pm.pattern.id} ({pm.pattern.category}, {pm.pattern.role})")
        for k, v in pm.fields.items():
            typer.echo(f"    {k} = {v}")


def _catalog_hint(patterns: list[Path] | None) -> str:
    from analyzer.catalog.model import ENV_VAR

    if patterns or os.environ.get(ENV_VAR):
        return f"\nFix the pattern file, or leave out --patterns and {ENV_VAR}."
    return ""


@patterns_app.command("suggest")
def patterns_suggest(
    jobs: Annotated[list[Path], typer.Argument(help="Job directories with an unknown failure.")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Directory to write the drafted pattern files.")
    ],
    baseline: GoodRunOpt = None,
    patterns: PatternsOpt = None,
) -> None:
    """Draft a pattern (TOML) from the unknown failure of one or more jobs.

    Jobs whose unknown lines share a template give one draft. Each draft passes `patterns
    test` as written; set its category, cause and fix, then use it with --patterns DIR.

    Example:

      mcore-diagnose patterns suggest logs/job-1234/ logs/job-1250/ -o my-patterns/
    """
    from analyzer.cli.suggest import SuggestError, check, suggest

    for j in [*jobs, *(baseline or [])]:
        if not j.exists():
            fail(f"{j}: no such file or directory", EXIT_USAGE)
    out = output.resolve()
    for j in jobs:
        jr = j.resolve()
        if jr.is_dir() and (out == jr or jr in out.parents):
            fail(f"-o {output} is inside the job directory {j}; write elsewhere", EXIT_USAGE)
    cat = _catalog(patterns)
    try:
        drafts, notes = suggest(jobs, baseline or [], cat)
    except SuggestError as exc:
        fail(str(exc), EXIT_UNKNOWN)
        return
    for n in notes:
        typer.echo(f"mcore-diagnose: {n}", err=True)
    if not drafts:
        fail("nothing to draft: no job has an error line that no pattern knows", EXIT_UNKNOWN)
    with tempfile.TemporaryDirectory(prefix="mcore-suggest-") as tmp:
        for d in drafts:
            problems = check(d, Path(tmp))
            if problems:
                fail(f"the draft {d.pattern_id} does not prove itself: {problems[0]}", 1)
    try:
        output.mkdir(parents=True, exist_ok=True)
        for d in drafts:
            (output / d.file_name).write_text(d.toml, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}", EXIT_USAGE)
    for d in drafts:
        typer.echo(
            f"{output / d.file_name}: {d.pattern_id} from {len(d.jobs)} job(s) "
            f"({', '.join(d.jobs)}), template {d.fingerprint}"
        )
    typer.echo(
        f"next: set category, cause and fix; `mcore-diagnose patterns test --patterns {output}`; "
        f"then `mcore-diagnose JOB --patterns {output}`",
        err=True,
    )


def _catalog(patterns: list[Path] | None, validate: bool = True) -> Any:
    from analyzer.catalog.load import load_catalog
    from analyzer.catalog.model import CatalogError

    try:
        return load_catalog(patterns or [], validate=validate)
    except CatalogError as exc:
        fail(f"cannot load patterns: {exc}{_catalog_hint(patterns)}", EXIT_USAGE)


def main(argv: list[str] | None = None) -> None:
    """Entry point: ``mcore-diagnose PATH`` is ``mcore-diagnose diagnose PATH``."""
    try:
        from typer._click import exceptions as cx
    except ImportError:  # typer < 0.29 uses click itself
        from click import exceptions as cx  # type: ignore[no-redef]

    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("--version", "-V"):
        print(f"mcore-diagnose {__version__}")
        return
    first = next((a for a in args if not a.startswith("-") or a == "-"), None)
    if args and first not in SUBCOMMANDS and args[0] not in SUBCOMMANDS:
        args = ["diagnose", *args]
    # One command is a short-lived process whose objects form no cycles: the cyclic collector
    # is paused for all of it (analyzer.util.gcpause). Not in triage's parent, which may run for
    # hours over thousands of jobs (its job runs pause it themselves, in ``analyze``).
    command = args[0] if args and args[0] in SUBCOMMANDS else first
    try:
        with paused_gc() if command != "triage" else contextlib.nullcontext():
            rv = app(args=args, prog_name="mcore-diagnose", standalone_mode=False)
    except cx.NoArgsIsHelpError as exc:
        exc.show()
        raise SystemExit(EXIT_USAGE) from None
    except cx.UsageError as exc:
        exc.show()
        raise SystemExit(EXIT_USAGE) from None
    except (typer.Abort, getattr(cx, "Abort", typer.Abort)):
        print("mcore-diagnose: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    except (typer.Exit, getattr(cx, "Exit", typer.Exit)) as exc:
        raise SystemExit(getattr(exc, "exit_code", 1)) from None
    except BrokenPipeError:
        sys.stderr.close()
        raise SystemExit(0) from None
    except KeyboardInterrupt:
        print("mcore-diagnose: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    raise SystemExit(rv if isinstance(rv, int) else 0)

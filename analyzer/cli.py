"""The ``mcore-diagnose`` command line."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from analyzer import __version__
from analyzer.lint.cli import register_lint
from analyzer.triage.cli import triage_app

EXIT_DIAGNOSED = 0
EXIT_UNKNOWN = 1
EXIT_NO_FAILURE = 2
EXIT_UNREADABLE = 3
EXIT_USAGE = 64

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


_SUFFIX_FORMAT = {
    ".html": Format.html,
    ".htm": Format.html,
    ".md": Format.markdown,
    ".json": Format.json,
    ".txt": Format.text,
}

PathsArg = Annotated[
    list[str],
    typer.Argument(help="Job directories, log files, or - for standard input.", show_default=False),
]
PatternsOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--patterns",
        "-p",
        help="Extra pattern file or directory (repeatable); also MCORE_DIAGNOSE_PATTERNS.",
        show_default=False,
    ),
]
OutputOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the report to this file.")
]
VerboseOpt = Annotated[
    bool, typer.Option("--verbose", "-v", help="Show skipped files and the per-rank timeline.")
]
WorkersOpt = Annotated[
    int | None, typer.Option("--workers", "-j", help="Processes for reading (default: cores).")
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


def _load(paths: list[str], patterns: list[Path] | None, workers: int | None, show: bool) -> Any:
    from analyzer.catalog import CatalogError

    tmp: Path | None = None
    real: list[Path] = []
    for p in paths:
        if p == "-":
            tmp = _stdin_to_temp()
            real.append(tmp)
        else:
            real.append(Path(p))
    try:
        from analyzer.api import analyze
        from analyzer.report.progress import progress_callback

        with progress_callback(show) as cb:
            return analyze(real, patterns=patterns or [], workers=workers, progress=cb)
    except CatalogError as exc:
        fail(
            f"cannot load patterns: {exc}\nFix the pattern file or leave out --patterns.",
            EXIT_USAGE,
        )
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)


def _check_readable(a: Any, paths: list[str]) -> None:
    if a.read.readable:
        return
    problems = a.read.problems
    skipped = a.discovery.skipped
    if problems:
        msg = problems[0]
    elif skipped:
        msg = (
            f"no log files in {', '.join(paths)}: {len(skipped)} file(s) skipped "
            f"(e.g. {skipped[0][0]}: {skipped[0][1]}); pass a log file directly or use --verbose"
        )
    else:
        msg = f"{', '.join(paths)}: empty directory, no log files to read"
    fail(msg + "\nGive the job's log directory (where slurm-<jobid>.out is written).")


def _write(text: str | bytes, output: Path | None) -> None:
    if output is None:
        if isinstance(text, bytes):
            sys.stdout.buffer.write(text)
        else:
            sys.stdout.write(text)
        return
    try:
        if isinstance(text, bytes):
            output.write_bytes(text)
        else:
            output.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}", EXIT_USAGE)


@app.command("diagnose")
def diagnose_cmd(
    paths: PathsArg,
    fmt: Annotated[
        Format | None,
        typer.Option(
            "--format",
            "-f",
            help="Report format (default: from the -o suffix .html/.md/.json/.txt, else terminal).",
        ),
    ] = None,
    output: OutputOpt = None,
    patterns: PatternsOpt = None,
    verbose: VerboseOpt = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print one line.")] = False,
    workers: WorkersOpt = None,
    script: Annotated[
        Path | None,
        typer.Option("--script", help="The job's sbatch script (default: one in the log dir)."),
    ] = None,
) -> None:
    """Diagnose a failed job: first failing rank, cause, fix (the default command).

    Examples:

      mcore-diagnose logs/job-1234/

      mcore-diagnose logs/job-1234/ --format html -o report.html

      mcore-diagnose slurm-1234.out --format json | jq .verdict
    """
    from analyzer.report import render

    if fmt is None:
        fmt = _SUFFIX_FORMAT.get(output.suffix.lower(), Format.text) if output else Format.terminal
    show_progress = fmt != Format.json and sys.stderr.isatty()
    from analyzer.slurmjob import SlurmJobError, is_job_id, lookup

    jobs = []
    try:
        jobs = [lookup(p) for p in paths if is_job_id(p)]
    except SlurmJobError as exc:
        fail(str(exc))
    logs = [str(f) for j in jobs for f in j.logs] + [p for p in paths if not is_job_id(p)]
    a = _load(logs, patterns, workers, show_progress)
    _check_readable(a, logs)
    if script is not None and not script.is_file():
        fail(f"--script {script}: no such file; give the job's sbatch script", EXIT_USAGE)
    a.script = script or next((j.script for j in jobs if j.script), None)
    d = a.diagnosis
    for j in jobs:
        d.facts.update(j.facts)
        d.problems += j.notes
        if d.batch_script and j.script and d.batch_script == str(j.script):
            d.batch_script = f"scontrol write batch_script {j.job_id}"
        j.cleanup()
    if verbose and fmt == Format.terminal:
        for rel, why in a.discovery.skipped:
            typer.echo(f"skipped {rel}: {why}", err=True)
    for p in d.problems:
        typer.echo(f"mcore-diagnose: warning: {p}", err=True)
    tty = output is None and sys.stdout.isatty()
    out = render(a, fmt.value, quiet=quiet, verbose=verbose, color=tty)
    _write(out, output)
    raise typer.Exit(d.exit_code)


@app.command("events")
def events_cmd(
    paths: PathsArg,
    fmt: Annotated[
        TableFormat, typer.Option("--format", "-f", help="Table format.")
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

    Examples:

      mcore-diagnose events logs/job-1234/ --by-rank

      mcore-diagnose events logs/job-1234/ --format parquet -o events.parquet
    """
    import polars as pl

    a = _load(paths, patterns, workers, False)
    _check_readable(a, paths)
    df = a.events
    if not all_events and not by_rank:
        df = df.filter(pl.col("role") != "context")
    if by_rank:
        df = a.by_rank()
    if fmt == TableFormat.parquet:
        if output is None:
            fail("--format parquet needs -o FILE", EXIT_USAGE)
        df.write_parquet(output)
        return
    if fmt == TableFormat.csv:
        flat = df.select([c for c in df.columns if df.schema[c] != pl.List])
        _write(flat.write_csv(), output)
        return
    if fmt == TableFormat.json:
        _write(df.write_json() + "\n", output)
        return
    from analyzer.report.table import table_text

    _write(table_text(df, by_rank=by_rank), output)


@patterns_app.command("list")
def patterns_list(patterns: PatternsOpt = None) -> None:
    """List every pattern: id, category, role, title."""
    cat = _catalog(patterns)
    for p in cat.patterns:
        typer.echo(f"{p.id:<48} {p.category:<28} {p.role:<8} {p.title}")
    typer.echo(f"{len(cat.patterns)} patterns from {len(cat.sources)} files", err=True)


@patterns_app.command("show")
def patterns_show(pattern_id: str, patterns: PatternsOpt = None) -> None:
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
    from analyzer.catalog import check_pattern, cross_claims

    cat = _catalog(patterns, validate=False)
    failures = [f"{p.id}: {m}" for p in cat.patterns for m in check_pattern(p)]
    failures += cross_claims(cat)
    n = sum(len(p.examples) + len(p.counter_examples) for p in cat.patterns)
    for f in failures:
        typer.echo(f"FAIL {f}")
    typer.echo(f"{len(cat.patterns)} patterns, {n} examples: {len(failures)} failed")
    raise typer.Exit(1 if failures else 0)


@patterns_app.command("explain")
def patterns_explain(line: str, patterns: PatternsOpt = None) -> None:
    """Show which pattern matches LINE and what it captures."""
    from analyzer.prefixes import split_prefixes
    from analyzer.sanitize import clean_line

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


def _catalog(patterns: list[Path] | None, validate: bool = True) -> Any:
    from analyzer.catalog import CatalogError, load_catalog

    try:
        return load_catalog(patterns or [], validate=validate)
    except CatalogError as exc:
        fail(f"cannot load patterns: {exc}", EXIT_USAGE)


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
    try:
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

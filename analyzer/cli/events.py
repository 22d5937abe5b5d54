"""``mcore-diagnose events``: the rank x event table."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from analyzer.cli.app import (
    PathsArg,
    PatternsOpt,
    TableFormat,
    WorkersOpt,
    _catalog,
    _run,
    app,
    fail,
)
from analyzer.cli.output import _json_rows, _stream, _write
from analyzer.decide.verdict import (
    EXIT_USAGE,
)
from analyzer.model.event import Role

TableOutputOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--output",
        "-o",
        metavar="FILE",
        help=(
            "Write the table to FILE instead of standard output; repeatable, the format from "
            "each suffix (.csv .json .parquet .txt); - is standard output. Never inside the "
            "job directory."
        ),
        show_default=False,
    ),
]


@app.command("events")
def events_cmd(
    paths: PathsArg,
    fmt: Annotated[
        TableFormat | None,
        typer.Option(
            "--format",
            "-f",
            metavar="FORMAT",
            help=(
                "Table format: table, csv, json or parquet. Default: table on standard output; "
                "with -o, each file's suffix."
            ),
            show_default=False,
        ),
    ] = None,
    output: TableOutputOpt = None,
    by_rank: Annotated[bool, typer.Option("--by-rank", help="One row per rank.")] = False,
    patterns: PatternsOpt = None,
    workers: WorkersOpt = None,
    all_events: Annotated[
        bool, typer.Option("--all", help="Include context events (facts, progress lines).")
    ] = False,
) -> None:
    """Print or write the rank × event table.

    Each job directory is a job of its own: with several jobs the table gets a first column
    `job` (the path as given); log files named on the command line form one job.

    Examples:

    \b
      mcore-diagnose events logs/job-1234/ --by-rank
      mcore-diagnose events logs/job-1234/ -o events.parquet -o events.csv
      mcore-diagnose events logs/job-1234/ -f csv | head
    """
    from analyzer.report.outputs import (
        TABLE_SUFFIX_FORMAT,
        OutputError,
        group_jobs,
        plan_outputs,
    )

    try:
        targets = plan_outputs(
            output or [], fmt.value if fmt else None, suffixes=TABLE_SUFFIX_FORMAT,
            default="table", plain={},
        )
    except OutputError as exc:
        fail(str(exc), EXIT_USAGE)
    from analyzer.cli.jobs import jobs_to_read

    df = _table(jobs_to_read(group_jobs(paths), targets), patterns, workers, by_rank, all_events)
    for tg in targets:
        _write_table(df, tg.fmt, tg.path, by_rank)


def _table(
    jobs: list[list[str]],
    patterns: list[Path] | None,
    workers: int | None,
    by_rank: bool,
    all_events: bool,
) -> Any:
    """The jobs' event table (``--by-rank``: one row per rank), with a ``job`` column first
    when there are several."""
    import polars as pl

    from analyzer.api import AnalyzeOptions
    from analyzer.report.outputs import job_label
    from analyzer.shape.events import to_frame

    options = AnalyzeOptions(catalog=_catalog(patterns), workers=workers)
    frames = []
    for job in jobs:
        run = _run(job, options, False)
        if run.problem:
            fail(run.problem)
        a = run.analysis
        del run  # ``a`` is dropped below, once its rows are in ``df``
        if by_rank:
            df = a.by_rank()
        elif all_events:
            df = a.events
        else:  # the table of the events shown only, with the columns of all
            shown = [r for r in a.rows if r.role != Role.CONTEXT]
            df = to_frame(shown, a.catalog.capture_types(), columns_of=a.rows)
        if len(jobs) > 1:
            df = df.select(pl.lit(job_label(job)).alias("job"), pl.all())
        frames.append(df)
        del a  # its records and table: the rows to write are all in ``df`` now
    df = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")
    if by_rank and len(frames) > 1:  # a category one job lacks counts 0 there
        from analyzer.shape.byrank import COUNT_EXCLUDED

        df = df.with_columns(pl.col(c).fill_null(0) for c in df.columns if c not in COUNT_EXCLUDED)
    return df


def _write_table(df: Any, fmt: str, output: Path | None, by_rank: bool) -> None:
    """``df`` in ``fmt`` (table, csv, json, parquet) to ``output`` (standard output: None)."""
    import polars as pl

    if fmt == "parquet":
        if output is None and sys.stdout.isatty():
            fail("parquet is binary: give -o FILE.parquet (or pipe standard output)", EXIT_USAGE)
        _stream(lambda sink: df.write_parquet(sink), output)
        return
    if fmt in ("csv", "json"):
        df = _iso_times(df)
    if fmt == "csv":
        flat = df.select([c for c in df.columns if df.schema[c] != pl.List])
        _stream(lambda sink: flat.write_csv(sink), output)
        return
    if fmt == "json":
        _stream(lambda sink: _json_rows(df, sink), output)
        return
    from analyzer.report.texttable import table_text

    _write(table_text(df, by_rank=by_rank, width=_width(output)), output)


def _width(output: Path | None) -> int | None:
    """The terminal's width for a table on a terminal; None (the full table) elsewhere."""
    from analyzer.cli.app import terminal_width

    return terminal_width() if output is None else None


def _iso_times(df: Any) -> Any:
    """Datetime columns as strings in the tool's one ISO 8601 form (``analyzer.util.timefmt``)."""
    import polars as pl

    from analyzer.util.timefmt import POLARS_FORMAT

    return df.with_columns(
        pl.col(c).dt.to_string(POLARS_FORMAT)
        for c, t in df.schema.items()
        if isinstance(t, pl.Datetime)
    )

"""``mcore-diagnose events``: the rank x event table."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from analyzer.cli.app import (
    OutputOpt,
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

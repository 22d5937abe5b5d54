"""``triage``'s options checked before any job runs: the outputs, --shard, --workers,
--timeout (each a usage error in one line, exit 64)."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import typer

from analyzer.decide.verdict import EXIT_USAGE


def usage(message: str) -> NoReturn:
    """One line on standard error and exit 64."""
    typer.echo(f"mcore-diagnose triage: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


def one_output(outputs: list[Path] | None) -> Path | None:
    """The table's one ``-o`` (None: none given); several are a usage error."""
    if outputs and len(outputs) > 1:
        usage(f"-o is given {len(outputs)} times; triage writes one table: give one -o "
              "(--summary/-s is repeatable)")
    return outputs[0] if outputs else None


def check_outputs(output: Path | None, summaries: list[Path]) -> None:
    """Every output's suffix names a format."""
    from analyzer.triage.summary import summary_format, table_format

    try:
        if output is not None:
            table_format(output)
        for p in summaries:
            summary_format(p)
    except ValueError as exc:
        usage(str(exc))


def refuse_outputs(outputs: list[Path | None], roots: list[Path], jobs: list[str]) -> None:
    """No output inside a job read (nor onto a log file given) or a root searched: a report
    there could become a job, or swallow the jobs below it, on the next run."""
    from analyzer.report.outputs import OutputError, refuse_inside

    try:
        refuse_inside(outputs, jobs)  # the job's own directory named first
    except OutputError as exc:
        usage(str(exc))
    try:
        refuse_inside(outputs, [str(r) for r in roots])
    except OutputError as exc:
        usage(str(exc).replace("the job directory", "the directory searched"))


def check_options(
    shard: str | None, workers: int | None, timeout: float
) -> tuple[int, int] | None:
    """Check --shard, --workers and --timeout (a usage error otherwise); the shard as (I, N)."""
    from analyzer.triage.find import parse_shard

    shard_spec: tuple[int, int] | None = None
    if shard is not None:
        try:
            shard_spec = parse_shard(shard)
        except ValueError as exc:
            usage(str(exc))
    if workers is not None and workers < 0:
        usage("--workers must be 0 or more")
    if timeout < 0:
        usage("--timeout must be 0 or more")
    return shard_spec



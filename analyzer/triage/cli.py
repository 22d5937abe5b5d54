"""``mcore-diagnose triage``: diagnose many jobs at once and summarise causes and nodes.

``triage ROOT...`` is ``triage run ROOT...`` (the default subcommand); ``triage merge PARTS...``
combines the parts written by ``--shard I/N``. Heavy imports (polars, the analyzer, rich) happen
inside the commands so that ``mcore-diagnose --version`` stays fast.
"""

from __future__ import annotations

import os
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from analyzer.decide.verdict import EXIT_DIAGNOSED as EXIT_OK
from analyzer.triage.options import check_options as _check_options
from analyzer.triage.options import check_outputs as _check_outputs
from analyzer.triage.options import one_output
from analyzer.triage.options import usage as _usage
from analyzer.util.clickgroup import default_command_group
from analyzer.util.color import ColorChoice

if TYPE_CHECKING:
    from analyzer.triage.find import Job


triage_app = typer.Typer(
    cls=default_command_group("run"),
    help=(
        "Diagnose many jobs at once: one table row per job, causes grouped by fingerprint, "
        "nodes implicated across jobs, new versus recurring failures.\n\n"
        "\b\n"
        "  mcore-diagnose triage /logs/nightly/ -o triage.parquet -s triage.md\n"
        "  mcore-diagnose triage /logs/nightly/ --shard 0/8 -o parts/0.parquet\n"
        "  mcore-diagnose triage merge parts/*.parquet -o triage.parquet\n\n"
        "Exit codes: 0 the batch ran (whatever the jobs' outcome), 64 usage error."
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

OutputOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--output", "-o", metavar="FILE", help="Write the table: .parquet, .csv or .json (one -o).",
        show_default=False,
    ),
]
BaselineOpt = Annotated[
    Path | None,
    typer.Option(
        "--baseline",
        "-b",
        metavar="PATH",
        help="A previous triage table (.parquet/.csv/.json): mark fingerprints never seen before "
        "and ones that vanished. Or a good run's job directory: error lines it also printed are "
        "never taken for an unknown failure's cause.",
    ),
]
SummaryOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--summary",
        "-s",
        help="Also write the summary to this file: .md, .html or .txt (repeatable).",
        show_default=False,
        metavar="FILE",
    ),
]
ColorOpt = Annotated[
    ColorChoice,
    typer.Option(
        "--color",
        metavar="WHEN",
        help="Colour the summary: auto (a terminal; NO_COLOR, FORCE_COLOR, CLICOLOR_FORCE, "
        "TERM=dumb honoured), always or never.",
        case_sensitive=False,
    ),
]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="Do not print the summary on the terminal.")
]


def _load_baseline(baseline: Path | None) -> Any:
    if baseline is None:
        return None
    from analyzer.triage.summary import TableError, read_table

    if not baseline.is_file():
        _usage(f"--baseline {baseline}: no such file")
    try:
        return read_table(baseline)
    except (TableError, ValueError) as exc:
        _usage(f"--baseline: {exc}")
    return None


def _finish(
    df: Any,
    output: Path | None,
    baseline_df: Any,
    baseline: Path | None,
    summaries: list[Path],
    quiet: bool,
    meta: dict[str, Any],
    warnings: list[str],
    color: ColorChoice = ColorChoice.auto,
) -> None:
    from analyzer.triage.summary import (
        mark_new,
        render_summary,
        render_terminal,
        summarize,
        summary_format,
        write_table,
    )

    s = summarize(df, baseline_df, baseline.name if baseline else None)
    s.notes = warnings + s.notes
    table = mark_new(df, s) if s.baseline is not None else df
    if output is not None:
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            write_table(table, output, meta)
        except OSError as exc:
            _usage(f"cannot write {output}: {exc.strerror or exc}")
    for p in summaries:
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(render_summary(s, summary_format(p)), encoding="utf-8")
        except OSError as exc:
            _usage(f"cannot write {p}: {exc.strerror or exc}")
    if not quiet:
        import shutil

        from analyzer.util.color import use_color

        tty = use_color(color, sys.stdout)
        width = shutil.get_terminal_size((100, 24)).columns
        sys.stdout.write(render_terminal(s, color=tty, width=width))
    elif warnings:
        for w in warnings:
            typer.echo(f"mcore-diagnose triage: warning: {w}", err=True)
    if output is not None and not quiet:
        typer.echo(f"wrote {output} ({df.height} job{'s' if df.height != 1 else ''})", err=True)


def _use_patterns(patterns: list[Path]) -> None:
    """Check the extra patterns once here, then hand them to the workers (which load the
    catalog themselves) through ``MCORE_DIAGNOSE_PATTERNS``."""
    from analyzer.catalog.load import load_catalog
    from analyzer.catalog.model import ENV_VAR, CatalogError

    try:
        load_catalog(patterns)
    except CatalogError as exc:
        _usage(f"cannot load patterns: {exc}")
    extra = [str(p.resolve()) for p in patterns]
    if os.environ.get(ENV_VAR):
        extra.append(os.environ[ENV_VAR])
    os.environ[ENV_VAR] = os.pathsep.join(extra)


def _add_sacct(rows: list[dict[str, Any]], verbose: bool) -> None:
    """SLURM's name, user, partition, state, start and end of each job, where sacct tells."""
    from analyzer.triage.slurm import sacct_info

    info, why = sacct_info(str(r.get("job_id") or "") for r in rows)
    for r in rows:
        r.update(info.get(str(r.get("job_id") or ""), {}))
    if why:  # asked for with --sacct: say why the columns are empty, verbose or not
        typer.echo(f"mcore-diagnose triage: no SLURM job details: {why}", err=True)


def _job_line(row: dict[str, Any]) -> str:
    """``path: status category rank=R node=N`` (and the note) for --verbose."""
    parts = [f"{row['path']}: {row.get('status') or '?'}"]
    if row.get("category"):
        parts.append(str(row["category"]))
    for key in ("rank", "node"):
        if row.get(key) is not None:
            parts.append(f"{key}={row[key]}")
    if row.get("note"):
        parts.append(f"({' '.join(str(row['note']).split())[:200]})")
    return " ".join(parts)


class _Progress:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, done: int, total: int) -> None:
        if self.enabled:
            end = "\n" if done == total else ""
            sys.stderr.write(f"\rtriage: {done}/{total} jobs diagnosed{end}")
            sys.stderr.flush()


def _split_baseline(baseline: Path | None) -> tuple[tuple[str, ...], Path | None]:
    """A --baseline directory is a good run (its path, for the workers); a file is a table."""
    if baseline is not None and baseline.is_dir():
        return (str(baseline.resolve()),), None
    return (), baseline


def _read_jobs_from(jobs_from: Path) -> list[Job]:
    """The jobs listed in the --jobs-from file (``-``: stdin), relative to the file."""
    from analyzer.triage.find import read_job_list

    if str(jobs_from) == "-":
        text = sys.stdin.read()
        base = None
    else:
        try:
            text = jobs_from.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError as exc:
            _usage(f"--jobs-from {jobs_from}: {exc.strerror or exc}")
        base = jobs_from.parent
    return read_job_list(text, base)


_MIXED_SHOWN = 5
"""Directories of several jobs' output and other logs named one by one on stderr."""


def _warn_mixed(mixed: dict[str, list[str]]) -> None:
    """One line on stderr for each directory (the first few) that holds several SLURM jobs'
    output and other logs: read as one job, as ``diagnose`` reads it."""
    for d in sorted(mixed)[:_MIXED_SHOWN]:
        ids = mixed[d]
        typer.echo(
            f"mcore-diagnose triage: warning: {d} holds the output of {len(ids)} SLURM jobs "
            f"({', '.join(ids[:5])}{', …' if len(ids) > 5 else ''}) and other logs, read as one "
            f"job ({ids[-1]}); `mcore-diagnose {d} --job ID` reads one job's output alone",
            err=True,
        )
    if len(mixed) > _MIXED_SHOWN:
        typer.echo(
            f"mcore-diagnose triage: warning: {len(mixed) - _MIXED_SHOWN} more directories "
            "hold several SLURM jobs' output and other logs, each read as one job",
            err=True,
        )


def _gather_jobs(roots: list[Path], jobs_from: Path | None, max_depth: int) -> list[Job]:
    """The jobs listed in ``jobs_from`` and found under ``roots``, each directory of several
    jobs' output files split by job id as ``diagnose`` splits it, one per key (the row's
    ``path``), sorted by key (a warning when there are none)."""
    from analyzer.triage.find import FindError, find_jobs, split_jobs

    if not roots and jobs_from is None:
        _usage("give one or more ROOT directories, or --jobs-from FILE")
    jobs: list[Job] = []
    try:
        if jobs_from is not None:
            jobs += _read_jobs_from(jobs_from)
        if roots:
            jobs += find_jobs(roots, max_depth=max_depth)
    except FindError as exc:
        _usage(str(exc))
    mixed: dict[str, list[str]] = {}
    by_key = {j.key: j for j in split_jobs(jobs, mixed)}
    jobs = [by_key[k] for k in sorted(by_key)]
    _warn_mixed(mixed)
    if not jobs:
        typer.echo(
            "mcore-diagnose triage: warning: no job directories found (a job directory holds "
            "slurm-<id>.out or <name>-<id>.out/.err; see docs/triage.md)",
            err=True,
        )
    return jobs


def _take_shard(
    jobs: list[Job], shard_spec: tuple[int, int] | None, meta: dict[str, Any], output: Path | None
) -> tuple[list[Job], Path | None]:
    """With --shard, only that shard's jobs (noted in ``meta``) and a part's default output."""
    if shard_spec is None:
        return jobs, output
    from analyzer.triage.find import select_shard

    i, n = shard_spec
    meta["jobs_all"] = len(jobs)
    jobs = select_shard(jobs, i, n)
    meta.update(shard=f"{i}/{n}", jobs=len(jobs))
    if output is None:
        output = Path(f"triage-part-{i}-of-{n}.parquet")
    return jobs, output


def _memory_limit(max_memory: float | None, n_workers: int) -> int | None:
    """--max-memory in bytes (None: no limit); by default a share of the machine's memory."""
    from analyzer.triage.run import default_max_memory

    if max_memory is None:
        return default_max_memory(max(1, n_workers))
    return int(max_memory * 2**30) if max_memory > 0 else None


def _diagnose(
    jobs: list[Job], workers: int, timeout: float, mem: int | None, good_runs: tuple[str, ...],
    quiet: bool,
) -> list[dict[str, Any]]:
    """Every job's row, diagnosed by the worker pool (progress on a terminal's stderr)."""
    from analyzer.triage.run import diagnose_job, run_jobs

    func = partial(diagnose_job, good_runs=good_runs) if good_runs else diagnose_job
    return run_jobs(
        jobs,
        workers=workers,
        timeout=timeout or None,
        max_memory=mem,
        func=func,
        progress=_Progress(not quiet and sys.stderr.isatty()),
    )


@triage_app.command("run")
def run_cmd(
    roots: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Directories to search for job directories (or job directories / log files "
            "themselves).",
            show_default=False,
            metavar="ROOT",
        ),
    ] = None,
    outputs: OutputOpt = None,
    jobs_from: Annotated[
        Path | None,
        typer.Option(
            "--jobs-from",
            help="Also diagnose the job directories listed in this file (one per line, - for "
            "stdin), taken as given.",
            metavar="FILE",
        ),
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            help="Diagnose only the I-th of N deterministic partitions (I from 0) and write a "
            "part for `triage merge`.",
            metavar="I/N",
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            "-j",
            metavar="N",
            help="Worker processes (default: the CPUs available; 0: in this process, no limits).",
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option(
            "--timeout", metavar="SECONDS", help="Seconds one job may take (0: no limit)."
        )
    ] = 600.0,
    max_memory: Annotated[
        float | None,
        typer.Option(
            "--max-memory",
            metavar="GIB",
            help="GiB one job's worker may use (default: 80% of memory over the workers; 0: no "
            "limit).",
        ),
    ] = None,
    max_depth: Annotated[
        int, typer.Option("--max-depth", metavar="N", help="How deep below each root to search.")
    ] = 12,
    baseline: BaselineOpt = None,
    summary: SummaryOpt = None,
    patterns: Annotated[
        list[Path] | None,
        typer.Option(
            "--patterns",
            "-p",
            metavar="PATH",
            help="Extra pattern file or directory (repeatable); also MCORE_DIAGNOSE_PATTERNS.",
            show_default=False,
        ),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="One line per job on stderr: status, category, rank, node."
        ),
    ] = False,
    sacct: Annotated[
        bool,
        typer.Option(
            "--sacct",
            help="Fill job name, user, partition, state, start and end from this cluster's "
            "sacct (only for jobs that ran on this cluster: job ids are not unique across "
            "clusters).",
        ),
    ] = False,
    color: ColorOpt = ColorChoice.auto,
    quiet: QuietOpt = False,
) -> None:
    """Find job directories under ROOTs, diagnose them in parallel, summarise (the default).

    A job directory directly holds a SLURM output (slurm-<id>.out, <name>-<id>.out/.err) or
    a torchrun --log-dir tree; a folder of several SLURM jobs' output files is one job per job
    id, as diagnose reads it; see docs/triage.md for the whole rule.
    """
    from analyzer.decide.fingerprint import FINGERPRINT_VERSION
    from analyzer.triage.options import refuse_outputs
    from analyzer.triage.run import to_frame, usable_cpus

    output = one_output(outputs)
    summaries = list(summary or [])
    _check_outputs(output, summaries)
    shard_spec = _check_options(shard, workers, timeout)
    good_runs, baseline = _split_baseline(baseline)
    baseline_df = _load_baseline(baseline)
    if patterns:
        _use_patterns(patterns)
    roots = list(roots or [])
    jobs = _gather_jobs(roots, jobs_from, max_depth)
    meta: dict[str, Any] = {"jobs": len(jobs), "roots": [str(r) for r in roots]}
    jobs, output = _take_shard(jobs, shard_spec, meta, output)
    refuse_outputs([output, *summaries], roots, [j.path for j in jobs])
    meta["fingerprint_version"] = FINGERPRINT_VERSION
    n_workers = usable_cpus() if workers is None else workers
    mem = _memory_limit(max_memory, n_workers)
    if not quiet:
        where = f" (shard {meta['shard']} of {meta['jobs_all']})" if shard_spec else ""
        typer.echo(
            f"triage: {len(jobs)} job{'' if len(jobs) == 1 else 's'}{where}, "
            f"{n_workers or 1} worker(s)",
            err=True,
        )
    rows = _diagnose(jobs, n_workers, timeout, mem, good_runs, quiet)
    if sacct:
        _add_sacct(rows, verbose)
    if verbose:
        for row in rows:
            typer.echo(_job_line(row), err=True)
    _finish(to_frame(rows), output, baseline_df, baseline, summaries, quiet, meta, [], color)
    raise typer.Exit(EXIT_OK)


@triage_app.command("merge")
def merge_cmd(
    parts: Annotated[
        list[Path],
        typer.Argument(
            help="Parts written by `triage --shard I/N -o ...`.",
            show_default=False,
            metavar="PART",
        ),
    ],
    outputs: OutputOpt = None,
    baseline: BaselineOpt = None,
    summary: SummaryOpt = None,
    color: ColorOpt = ColorChoice.auto,
    quiet: QuietOpt = False,
) -> None:
    """Combine the parts of a sharded triage into one table and summary.

    Example:

    \b
      mcore-diagnose triage merge parts/*.parquet -o triage.parquet -s triage.md
    """
    from analyzer.decide.fingerprint import FINGERPRINT_VERSION
    from analyzer.triage.summary import TableError, merge_tables

    output = one_output(outputs)
    summaries = list(summary or [])
    _check_outputs(output, summaries)
    missing = [str(p) for p in parts if not p.is_file()]
    if missing:
        _usage(f"no such part: {', '.join(missing)}")
    baseline_df = _load_baseline(baseline)
    try:
        df, warnings = merge_tables(list(parts))
    except (TableError, ValueError) as exc:
        _usage(str(exc))
        return
    meta = {
        "jobs": df.height,
        "merged_parts": len(parts),
        "fingerprint_version": FINGERPRINT_VERSION,
    }
    _finish(df, output, baseline_df, baseline, summaries, quiet, meta, warnings, color)
    raise typer.Exit(EXIT_OK)

"""``mcore-diagnose diagnose`` (the default command): one report per job."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from analyzer.cli.app import (
    FR_HELP,
    ColorOpt,
    Format,
    GoodRunOpt,
    PathsArg,
    PatternsOpt,
    VerboseOpt,
    WorkersOpt,
    _catalog,
    _run,
    app,
    fail,
    one_line,
)
from analyzer.cli.output import _write
from analyzer.decide.verdict import (
    EXIT_DIAGNOSED,
    EXIT_NO_FAILURE,
    EXIT_UNKNOWN,
    EXIT_UNREADABLE,
    EXIT_USAGE,
)
from analyzer.util.color import ColorChoice

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
                "from each suffix (.html .htm .md .markdown .json .jsonl .txt .text); - is "
                "standard output. Never inside the job directory."
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
    only: Annotated[
        str | None,
        typer.Option(
            "--job",
            metavar="ID",
            help=(
                "Read only the output of this SLURM job id in each directory given (a folder "
                "of several jobs' outputs or job directories)."
            ),
            show_default=False,
        ),
    ] = None,
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

    \b
      mcore-diagnose logs/job-1234/
      mcore-diagnose 1234                      # a SLURM job id
      mcore-diagnose logs/ --job 1234          # only job 1234's files in logs/
      mcore-diagnose logs/job-1234/ -o report.html -o report.json
      mcore-diagnose logs/a/ logs/b/ -f json | jq .verdict.category
      mcore-diagnose slurm-1234.out train-1234.err --format json
      mcore-diagnose logs/job-1234/ --baseline logs/job-1200/   # a good run
    """
    from analyzer.report.outputs import job_label
    from analyzer.util.color import use_color

    targets, jobs = _plan(paths, output, fmt, script, only, [*(fr or []), *(baseline or [])])
    show_progress = not all(t.fmt == "json" for t in targets) and sys.stderr.isatty()
    tty = any(t.path is None for t in targets) and use_color(color, sys.stdout)
    catalog = _catalog(patterns)
    rendered: list[list[tuple[str, str]]] = [[] for _ in targets]
    codes: list[int] = []
    for job in jobs:
        label = job_label(job)
        prefix = f"{label}: " if len(jobs) > 1 else ""
        run, problem = _run_one(job, catalog, workers, show_progress, fr, baseline, script,
                                targets)
        if problem is not None:  # one line, like a bad path; the message names the path
            codes.append(EXIT_UNREADABLE)
            typer.echo(f"mcore-diagnose: {one_line(problem)}", err=True)
            a = run.analysis if run is not None else None
            for i, tg in enumerate(targets):
                if tg.fmt == "json":
                    rendered[i].append((label, _unreadable_json(label, problem, a)))
            continue
        codes.append(run.diagnosis.exit_code)
        _warn(run.analysis, run.diagnosis, prefix, verbose and targets[0].fmt == "terminal")
        for i, tg in enumerate(targets):
            text = _render_job(
                run.analysis, tg.fmt, label, quiet, verbose, tty and tg.path is None,
                tg.path is None,
            )
            rendered[i].append((label, prefix + text if quiet and tg.fmt != "json" else text))
    _write_all(targets, rendered, quiet)
    raise typer.Exit(max(codes, key=_EXIT_SEVERITY.index) if codes else EXIT_UNREADABLE)


def _plan(
    paths: list[str],
    output: list[Path] | None,
    fmt: Format | None,
    script: Path | None,
    only: str | None,
    read_dirs: list[Any],
) -> tuple[list[Any], list[list[str]]]:
    """The output targets and the jobs, or a usage error in one line."""
    from analyzer.cli.jobs import check_job_option, jobs_to_read
    from analyzer.read.slurmjob import is_job_id
    from analyzer.report.outputs import OutputError, group_jobs, plan_outputs

    try:
        targets = plan_outputs(output or [], fmt.value if fmt else None)
    except OutputError as exc:
        fail(str(exc), EXIT_USAGE)
    if script is not None and not script.is_file():
        fail(f"--script {script}: no such file; give the job's sbatch script", EXIT_USAGE)
    check_job_option(only)
    also = [str(p) for p in read_dirs] + ([str(script)] if script is not None else [])
    jobs = jobs_to_read(group_jobs(paths, alone=is_job_id), targets, only, also)
    if len(jobs) > 1 and any(t.fmt == "html" for t in targets):
        fail(
            "an HTML report holds one job; give one job directory per run, or use "
            "`mcore-diagnose triage` for many jobs",
            EXIT_USAGE,
        )
    return targets, jobs


def _write_all(targets: list[Any], rendered: list[list[tuple[str, str]]], quiet: bool) -> None:
    """Each target's jobs combined into its one output."""
    from analyzer.report.outputs import OutputError, combine

    for tg, rows in zip(targets, rendered, strict=True):
        if rows:
            try:
                text = combine(tg.fmt, rows, lines=quiet)
            except OutputError as exc:
                fail(str(exc), EXIT_USAGE)
            _write(text, tg.path)


def _run_one(
    job: list[str],
    catalog: Any,
    workers: int | None,
    show: bool,
    fr: list[str] | None,
    baseline: list[Path] | None,
    script: Path | None,
    targets: list[Any],
) -> tuple[Any, str | None]:
    """(the job's run or None, why it cannot be read or looked up)."""
    slurm, logs, problem = _slurm_job(job, targets)
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
        from analyzer.report.table import hanging

        width = shutil.get_terminal_size().columns if sys.stderr.isatty() else None
        for rel, why in a.discovery.skipped:  # wrapped to the terminal, indented under the path
            typer.echo(hanging(f"{prefix}skipped ", f"{rel}: {why}", width), err=True)
    for p in d.problems:
        typer.echo(f"mcore-diagnose: warning: {prefix}{p}", err=True)


def _slurm_job(job: list[str], targets: list[Any]) -> tuple[Any, list[str], str | None]:
    """(the SLURM job or None, the log paths to read, why a job id cannot be looked up); an
    output onto the job's StdOut/StdErr or into their directory is a usage error."""
    from analyzer.read.slurmjob import SlurmJobError, is_job_id, lookup
    from analyzer.report.outputs import OutputError, refuse_inside

    if len(job) != 1 or not is_job_id(job[0]):
        return None, job, None
    try:
        j = lookup(job[0])
    except SlurmJobError as exc:
        return None, [], str(exc)
    logs = [str(f) for f in j.logs]
    try:
        refuse_inside([t.path for t in targets], logs)
    except OutputError as exc:
        j.cleanup()
        fail(f"{exc} (the output of job {job[0]})", EXIT_USAGE)
    return j, logs, None


def _render_job(
    a: Any, fmt: str, label: str, quiet: bool, verbose: bool, color: bool, stdout: bool
) -> str:
    """One job's report in ``fmt``; on standard output as wide as the terminal (100 columns
    when it is not one, and in files)."""
    from analyzer.cli.app import terminal_width
    from analyzer.report import render
    from analyzer.report.terminal import WIDTH

    if fmt == "json":
        from analyzer.report.outputs import json_line

        return json_line(_with_job(a.diagnosis.as_dict(), label))
    if quiet:
        return render(a, fmt, quiet=True)
    width = (terminal_width() if stdout else None) or WIDTH
    return render(a, fmt, verbose=verbose, color=color, width=width)


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

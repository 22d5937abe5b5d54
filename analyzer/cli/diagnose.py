"""``mcore-diagnose diagnose`` (the default command): one report per job."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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
    EXIT_LAUNCH_MISTAKE,
    EXIT_NO_FAILURE,
    EXIT_UNKNOWN,
    EXIT_UNREADABLE,
    EXIT_USAGE,
)
from analyzer.util.color import ColorChoice

if TYPE_CHECKING:
    from analyzer.api import Analysis, AnalyzeOptions, JobRun
    from analyzer.decide.verdict import Diagnosis
    from analyzer.read.slurmjob import SlurmJob
    from analyzer.report.input import RenderOptions
    from analyzer.report.outputs import Target

# Several jobs in one run exit with the most serious outcome: nothing readable, then a failure
# of unknown cause, then a diagnosed failure, then a run with a launch mistake, then no failure
# found.
_EXIT_SEVERITY = (
    EXIT_NO_FAILURE, EXIT_LAUNCH_MISTAKE, EXIT_DIAGNOSED, EXIT_UNKNOWN, EXIT_UNREADABLE
)


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
    options = _analyze_options(patterns, workers, baseline, script)
    looks = [_render_options(tg, quiet, verbose, tty) for tg in targets]
    rendered: list[list[tuple[str, str]]] = [[] for _ in targets]
    codes: list[int] = []
    for job in jobs:
        label = job_label(job)
        prefix = f"{label}: " if len(jobs) > 1 else ""
        run, read = _run_one(job, options, show_progress, fr, targets)
        if isinstance(run, str):  # one line, like a bad path; the message names the path
            codes.append(EXIT_UNREADABLE)
            _unreadable(label, run, read, targets, rendered)
            continue
        d = run.diagnosis
        codes.append(d.exit_code)
        _warn(run.analysis, d, prefix, verbose and targets[0].fmt == "terminal")
        for i, look in enumerate(looks):
            text = _render_job(d, look, label)
            rendered[i].append((label, prefix + text if quiet and look.fmt != "json" else text))
    _write_all(targets, rendered, quiet)
    raise typer.Exit(max(codes, key=_EXIT_SEVERITY.index) if codes else EXIT_UNREADABLE)


def _unreadable(
    label: str,
    problem: str,
    a: Analysis | None,
    targets: list[Target],
    rendered: list[list[tuple[str, str]]],
) -> None:
    """A job that could not be read: one line on stderr, its JSON object in the JSON outputs."""
    typer.echo(f"mcore-diagnose: {one_line(problem)}", err=True)
    for i, tg in enumerate(targets):
        if tg.fmt == "json":
            rendered[i].append((label, _unreadable_json(label, problem, a)))


def _analyze_options(
    patterns: list[Path] | None,
    workers: int | None,
    baseline: list[Path] | None,
    script: Path | None,
) -> AnalyzeOptions:
    """How every job of the run is read (one catalog, loaded once, for all)."""
    from analyzer.api import AnalyzeOptions

    return AnalyzeOptions(
        catalog=_catalog(patterns), workers=workers, baseline=tuple(baseline or ()),
        script=script,
    )


def _plan(
    paths: list[str],
    output: list[Path] | None,
    fmt: Format | None,
    script: Path | None,
    only: str | None,
    read_dirs: list[Any],
) -> tuple[list[Target], list[list[str]]]:
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


def _write_all(targets: list[Target], rendered: list[list[tuple[str, str]]], quiet: bool) -> None:
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
    options: AnalyzeOptions,
    show: bool,
    fr: list[str] | None,
    targets: list[Target],
) -> tuple[JobRun, None] | tuple[str, Analysis | None]:
    """(the job's run, None), or (why it cannot be read or looked up, its analysis or None)."""
    from dataclasses import replace

    slurm, logs, problem = _slurm_job(job, targets)
    if problem is not None:
        return problem, None
    try:  # everything SLURM handed over (its copy of the script) is read by ``_run``
        run = _run(logs, replace(options, scheduler=slurm), show, extra=fr)
    finally:
        if slurm is not None:
            slurm.cleanup()
    if run.problem is not None:
        return run.problem, run.analysis
    return run, None


def _warn(a: Analysis, d: Diagnosis, prefix: str, skipped: bool) -> None:
    """The job's problems (and, with ``skipped``, the files skipped) on standard error."""
    if skipped:
        from analyzer.report.texttable import hanging

        width = shutil.get_terminal_size().columns if sys.stderr.isatty() else None
        for rel, why in a.discovery.skipped:  # wrapped to the terminal, indented under the path
            typer.echo(hanging(f"{prefix}skipped ", f"{rel}: {why}", width), err=True)
    for p in d.problems:
        typer.echo(f"mcore-diagnose: warning: {prefix}{p}", err=True)


def _slurm_job(
    job: list[str], targets: list[Target]
) -> tuple[SlurmJob | None, list[str], str | None]:
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


def _render_options(tg: Target, quiet: bool, verbose: bool, tty: bool) -> RenderOptions:
    """How a target's reports look: on standard output as wide as the terminal (100 columns
    when it is not one, and in files), coloured when ``tty`` says so."""
    from analyzer.cli.app import terminal_width
    from analyzer.report import RenderOptions

    stdout = tg.path is None
    if quiet and tg.fmt != "json":
        return RenderOptions(tg.fmt, quiet=True)
    if tg.fmt not in ("terminal", "text"):  # no width: the panels' module (rich) not imported
        return RenderOptions(tg.fmt, color=tty and stdout, verbose=verbose)
    from analyzer.report.terminal import WIDTH

    width = (terminal_width() if stdout else None) or WIDTH
    return RenderOptions(tg.fmt, width, color=tty and stdout, verbose=verbose)


def _render_job(d: Diagnosis, o: RenderOptions, label: str) -> str:
    """One job's report as ``o`` says; JSON is one line with the job's ``label``."""
    from analyzer.report import render_report

    if o.fmt == "json":
        from analyzer.report.outputs import json_line

        return json_line(_with_job(d.as_dict(), label))
    return render_report(d, o)


def _with_job(obj: dict[str, Any], label: str) -> dict[str, Any]:
    """The JSON object with ``job`` (the paths as given) right after ``schema_version``."""
    return {"schema_version": obj["schema_version"], "job": label, **obj}


def _unreadable_json(label: str, problem: str, a: Analysis | None) -> str:
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

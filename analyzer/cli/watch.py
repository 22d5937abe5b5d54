"""The ``mcore-diagnose watch`` command: follow a running job's logs and report a failure, a
stall, a straggler and, at the end, the post-mortem's verdict (docs/watch.md). Registered on
the main app by :func:`register_watch`."""

from __future__ import annotations

import os
import subprocess
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

EXIT_USAGE = 64
EXIT_UNREADABLE = 3

if TYPE_CHECKING:
    from collections.abc import Callable

    from analyzer.api import AnalyzeOptions
    from analyzer.read.slurmjob import SlurmJob


class WatchFormat(StrEnum):
    """Where findings go."""

    terminal = "terminal"
    json = "json"


class ExitOn(StrEnum):
    """Which findings end the watch with exit status 4."""

    failure = "failure"
    stall = "stall"
    any = "any"


def _fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    typer.echo(f"mcore-diagnose watch: {message}", err=True)
    raise typer.Exit(code)


def _in_queue(job_id: str) -> Callable[[], bool]:
    """Whether SLURM still lists the job (``squeue -h -j ID``; an error counts as gone)."""

    def alive() -> bool:
        try:
            r = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True,
                               text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return r.returncode == 0 and bool(r.stdout.strip())

    return alive


def _relook(job: str, looked: list[SlurmJob]) -> Callable[[AnalyzeOptions], AnalyzeOptions]:
    """The final post-mortem's options: SLURM's record of the job as it is now (its end
    state), as ``mcore-diagnose JOBID`` reads it; the first record when it cannot be had."""

    def final(options: AnalyzeOptions) -> AnalyzeOptions:
        from dataclasses import replace

        from analyzer.read.slurmjob import SlurmJobError, lookup

        try:
            j = lookup(job)
        except SlurmJobError:
            return options
        looked.append(j)
        return replace(options, scheduler=j)

    return final


def _target(job: str) -> tuple[list[str], SlurmJob | None]:
    """The paths to follow and SLURM's record (a job id that is not a path), or exit 3."""
    from analyzer.read.slurmjob import SlurmJobError, is_job_id, lookup

    if os.path.lexists(job):
        return [job], None
    if not is_job_id(job):
        _fail(f"{job}: no such job directory or log file; give the job's log directory, "
              "a log file or a SLURM job id", EXIT_UNREADABLE)
    try:
        j = lookup(job, pending_ok=True)  # a job just submitted writes its output later
    except SlurmJobError as exc:
        _fail(" ".join(str(exc).split("\n")), EXIT_UNREADABLE)
    return [str(f) for f in j.logs], j


def _load_catalog(patterns: list[Path] | None) -> Any:
    """The catalog with ``-p``'s patterns, or a usage error in one line."""
    from analyzer.catalog.load import load_catalog
    from analyzer.catalog.model import CatalogError

    try:
        return load_catalog(patterns or [])
    except CatalogError as exc:
        _fail(f"cannot load patterns: {exc}; fix the pattern file, or leave out --patterns")


def _open_output(output: Path | None, inputs: list[str]) -> Any:
    """``-o FILE`` opened for the findings (never an input, never inside one, never over an
    existing file); None for standard output."""
    from analyzer.report.outputs import OutputError, refuse_inside

    if output is None or output == Path("-"):
        return None
    try:
        refuse_inside([output], inputs)
    except OutputError as exc:
        _fail(str(exc))
    if output.exists():
        _fail(f"{output} exists; give another -o (watch never overwrites a file)")
    try:
        return output.open("x", encoding="utf-8")
    except OSError as exc:
        _fail(f"cannot write {output}: {exc.strerror or exc}; give a writable -o")


def watch_cmd(
    job: Annotated[str, typer.Argument(help="The job's log directory or file, or a SLURM job id.",
                                       metavar="PATH|JOBID", show_default=False)],
    interval: Annotated[float, typer.Option("--interval", metavar="SECONDS", min=0.05,
                                            help="Seconds between polls.")] = 2.0,
    stall_after: Annotated[float | None, typer.Option(
        "--stall-after", metavar="SECONDS", min=0.0, show_default=False,
        help="A stall after this long without a progress line (default: learned).")] = None,
    stall_factor: Annotated[float, typer.Option(
        "--stall-factor", metavar="K", min=0.0,
        help="Learned threshold: K x the median interval between progress lines.")] = 5.0,
    min_stall: Annotated[float, typer.Option(
        "--min-stall", metavar="SECONDS", min=0.0,
        help="The learned threshold's floor.")] = 60.0,
    fmt: Annotated[WatchFormat | None, typer.Option(
        "--format", "-f", metavar="FORMAT", show_default=False,
        help="terminal (a live view) or json (JSON Lines); default: terminal on a terminal, "
        "else json.")] = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", metavar="FILE", show_default=False,
        help="Write the findings (JSON Lines) to FILE, a new file outside the job.")] = None,
    on_finding: Annotated[str | None, typer.Option(
        "--on-finding", metavar="CMD", show_default=False,
        help="Run CMD (a shell command) once per finding, the finding's JSON on its "
        "standard input.")] = None,
    exit_on: Annotated[ExitOn | None, typer.Option(
        "--exit-on", metavar="KIND", show_default=False,
        help="Exit with status 4 at the first failure, stall or any finding.")] = None,
    ncclras: Annotated[bool, typer.Option(
        "--ncclras", help="On a stall, ask NCCL's ncclras client (on PATH) and join its report.",
    )] = False,
    once: Annotated[bool, typer.Option(
        "--once", help="Read what is there, print the findings and the final verdict, exit.",
    )] = False,
    max_seconds: Annotated[float | None, typer.Option(
        "--max-seconds", metavar="N", min=0.0, show_default=False,
        help="Stop after N seconds (then print the final verdict).")] = None,
    patterns: Annotated[list[Path] | None, typer.Option(
        "--patterns", "-p", metavar="PATH", show_default=False,
        help="Extra pattern file or directory (repeatable); also MCORE_DIAGNOSE_PATTERNS.",
    )] = None,
) -> None:
    """Watch a running job: report a failure, a stall, a straggler as soon as the logs show
    them, and the post-mortem's verdict when the job ends.

    Exit codes: 0 the job ended (or --once, --max-seconds, Ctrl-C), 4 a finding that
    --exit-on names, 3 nothing to read (no such path or job), 64 usage error.

    Examples:

    \b
      mcore-diagnose watch logs/job-1234/
      mcore-diagnose watch 1234 --exit-on stall --on-finding ./page-me.sh
      mcore-diagnose watch logs/job-1234/ -f json | jq .cause
    """
    from analyzer.api import AnalyzeOptions
    from analyzer.watch.core import WatchConfig, Watcher
    from analyzer.watch.detect import Thresholds

    paths, slurm = _target(job)
    out = _open_output(output, paths)
    options = AnalyzeOptions(catalog=_load_catalog(patterns), workers=1, scheduler=slurm)
    looked: list[SlurmJob] = [slurm] if slurm is not None else []
    cfg = WatchConfig(
        paths, job, options, Thresholds(stall_factor, min_stall, stall_after), ncclras,
        _in_queue(job) if slurm is not None else None,
        _relook(job, looked) if slurm is not None else None,
    )
    w = Watcher(cfg)
    live = out is None and (fmt or _default_format()) == WatchFormat.terminal
    try:
        code = _run(w, out, live, on_finding, interval, once, max_seconds, exit_on)
    finally:
        if out is not None:
            out.close()
        for j in looked:
            j.cleanup()
    raise typer.Exit(code)


def _default_format() -> WatchFormat:
    return WatchFormat.terminal if sys.stdout.isatty() else WatchFormat.json


def _run(
    w: Any, out: Any, live: bool, on_finding: str | None, interval: float, once: bool,
    max_seconds: float | None, exit_on: ExitOn | None,
) -> int:
    """The loop with its sinks: the live view or JSON Lines, then the hook."""
    from analyzer.watch.loop import watch_loop
    from analyzer.watch.sinks import fan_out, hook, json_sink

    extra = [hook(on_finding)] if on_finding else []
    args: dict[str, Any] = {
        "interval": interval, "once": once, "max_seconds": max_seconds,
        "exit_on": exit_on.value if exit_on else None,
    }
    if not live:
        return watch_loop(w, fan_out(json_sink(out or sys.stdout), *extra), **args)
    from analyzer.watch.live import LiveView

    with LiveView(w) as view:
        return watch_loop(w, fan_out(view.emit, *extra), tick=view.tick, **args)


def register_watch(app: typer.Typer, subcommands: set[str]) -> None:
    """Add ``watch`` to the main app and to the names that are not a path to diagnose."""
    app.command("watch")(watch_cmd)
    subcommands.add("watch")

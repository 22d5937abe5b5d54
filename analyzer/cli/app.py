"""The Typer app, the options every command shares, and loading the catalog."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from analyzer.cli.recipes import register_recipes
from analyzer.cli.watch import register_watch
from analyzer.decide.verdict import (
    EXIT_UNREADABLE,
    EXIT_USAGE,
)
from analyzer.lint.cli import register_lint
from analyzer.triage.cli import triage_app
from analyzer.util.clickgroup import default_command_group
from analyzer.util.color import ColorChoice

if TYPE_CHECKING:
    from analyzer.api import AnalyzeOptions, JobRun
    from analyzer.catalog.model import Catalog

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
        "\b\n"
        "  mcore-diagnose logs/job-1234/            # diagnose a job directory\n"
        "  mcore-diagnose 1234                      # a SLURM job id (scontrol)\n"
        "  mcore-diagnose lint train.sbatch         # check a script first\n"
        "  mcore-diagnose events logs/job-1234/ --by-rank\n"
        "  mcore-diagnose patterns test\n"
        "  mcore-diagnose triage /logs/last-night/ -o triage.parquet\n"
        "  mcore-diagnose --version\n\n"
        "Exit codes: 0 failure diagnosed, 1 failed with unknown cause, 2 no failure found, "
        "3 nothing could be read, 64 usage error, 70 internal error (--debug shows it)."
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    cls=default_command_group("diagnose"),
    context_settings={"help_option_names": ["-h", "--help"]},
)


patterns_app = typer.Typer(help="List, show, test and explain the failure patterns.")
app.add_typer(patterns_app, name="patterns")
app.add_typer(triage_app, name="triage")
register_lint(app, SUBCOMMANDS)
register_recipes(app, SUBCOMMANDS)
register_watch(app, SUBCOMMANDS)


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
        "--workers",
        "-j",
        metavar="N",
        min=0,
        help="Processes for reading (default: one per core; 0 or 1: this process alone).",
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


def terminal_width() -> int | None:
    """The terminal's width when standard output is a terminal (``COLUMNS`` honoured), with
    or without colour; None when it is a pipe or a file."""
    if not sys.stdout.isatty():
        return None
    from analyzer.report import terminal_width as columns

    return columns()


def one_line(message: str) -> str:
    """``message`` as one line: a problem and its hint (``analyzer.api.unreadable`` keeps them
    on two lines for JSON) joined with ``; `` (``…; give the job's log directory (…)``)."""
    head, *rest = [part.strip() for part in message.splitlines() if part.strip()] or [""]
    for hint in rest:
        head += "; " + hint[:1].lower() + hint[1:].rstrip(".")
    return head


def fail(message: str, code: int = EXIT_UNREADABLE) -> NoReturn:
    """Print ``message`` on stderr as one clear line and exit with ``code``."""
    typer.echo(f"mcore-diagnose: {one_line(message)}", err=True)
    raise typer.Exit(code)


def _stdin_to_temp() -> Path:
    """Standard input copied into a file named ``(stdin)`` in a new temporary directory (the
    name reports and messages show; ``_drop_stdin`` removes both)."""
    from analyzer.read.unreadable import STDIN_NAME

    path = Path(tempfile.mkdtemp(prefix="mcore-diagnose-stdin-")) / STDIN_NAME
    with path.open("wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
    return path


def _drop_stdin(path: Path) -> None:
    """Remove standard input's copy and its directory."""
    path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        path.parent.rmdir()


def _check_baseline(baseline: list[str | Path] | None) -> None:
    for b in baseline or []:
        if not Path(b).exists():
            fail(f"--baseline {b}: no such file or directory; give a good run's logs", EXIT_USAGE)


def _run(
    paths: list[str], options: AnalyzeOptions, show: bool, extra: list[str] | None = None
) -> JobRun:
    """``analyzer.api.run_job`` on ``paths`` (``-``: standard input, read into a temporary
    file) and ``extra`` (Flight Recorder dumps), with a progress bar when ``show``."""
    from dataclasses import replace

    from analyzer.api import run_job
    from analyzer.report.progress import progress_callback

    _check_baseline(list(options.baseline))
    tmp: Path | None = None
    real: list[Path] = []
    for p in [*paths, *(extra or [])]:
        if p != "-":
            real.append(Path(p))
        elif tmp is None:  # standard input is read once, however often `-` is given
            tmp = _stdin_to_temp()
            real.append(tmp)
    try:
        with progress_callback(show) as cb:
            return run_job(real, replace(options, progress=cb), shown=paths)
    finally:
        if tmp is not None:
            _drop_stdin(tmp)


def _catalog_hint(patterns: list[Path] | None) -> str:
    from analyzer.catalog.model import ENV_VAR

    if patterns or os.environ.get(ENV_VAR):
        return f"\nFix the pattern file, or leave out --patterns and {ENV_VAR}."
    return ""


def _catalog(patterns: list[Path] | None, validate: bool = True) -> Catalog:
    from analyzer.catalog.load import load_catalog
    from analyzer.catalog.model import CatalogError

    try:
        return load_catalog(patterns or [], validate=validate)
    except CatalogError as exc:
        fail(f"cannot load patterns: {exc}{_catalog_hint(patterns)}", EXIT_USAGE)

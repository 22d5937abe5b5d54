"""The ``mcore-diagnose`` entry point: every command registered on one app, and ``main``."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import traceback
from typing import Any

import typer
import typer.main
from typer.core import TyperOption

from analyzer.cli import diagnose, events, patterns  # noqa: F401  (they register their commands)
from analyzer.cli.app import app
from analyzer.cli.output import JSON_SLICE_ROWS, _json_rows  # noqa: F401  (tests use them here)
from analyzer.decide.verdict import (
    EXIT_USAGE,
)
from analyzer.util.clickgroup import add_to_every_command
from analyzer.util.gcpause import paused_gc
from analyzer.version import __version__

__all__ = ["app", "command", "main"]

DEBUG_ENV = "MCORE_DIAGNOSE_DEBUG"
"""Set (by ``--debug`` too): an internal error prints its traceback."""

EXIT_INTERNAL = 70
"""An internal error of the tool (``EX_SOFTWARE`` of sysexits.h)."""


def _common_options() -> list[TyperOption]:
    """``--version`` and ``--debug``, given to every command (``mcore-diagnose X --version``)."""

    def version(ctx: Any, _param: Any, value: bool) -> None:
        if value and not ctx.resilient_parsing:
            typer.echo(f"mcore-diagnose {__version__}")
            raise typer.Exit(0)

    def debug(_ctx: Any, _param: Any, value: bool) -> None:
        if value:
            os.environ[DEBUG_ENV] = "1"

    return [
        TyperOption(param_decls=["--version", "-V"], is_flag=True, expose_value=False,
                    is_eager=True, callback=version, help="Print the version and exit."),
        TyperOption(param_decls=["--debug"], is_flag=True, expose_value=False, is_eager=True,
                    callback=debug,
                    help=f"On an internal error, show the traceback (also {DEBUG_ENV}=1)."),
    ]


def command() -> Any:
    """The click command behind ``mcore-diagnose``, every command with the common options."""
    cmd = typer.main.get_command(app)
    add_to_every_command(cmd, _common_options)
    return cmd


def _internal_error(exc: BaseException) -> None:
    """One line for an error of the tool itself (the traceback with ``--debug``)."""
    if os.environ.get(DEBUG_ENV):
        traceback.print_exception(exc)
    msg = str(exc).splitlines()[0] if str(exc) else ""
    print(
        f"mcore-diagnose: internal error: {type(exc).__name__}: {msg}; please report it with "
        "the output of the same command with --debug",
        file=sys.stderr,
    )


def _broken_pipe(exc: OSError) -> bool:
    """Whether ``exc`` says the reader of standard output went away."""
    return isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE or "Broken pipe" in str(exc)


def _quiet_stdout() -> None:
    """Point standard output at /dev/null so Python's exit flush cannot fail again."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def main(argv: list[str] | None = None) -> None:
    """Entry point: ``mcore-diagnose PATH`` is ``mcore-diagnose diagnose PATH``."""
    try:
        from typer._click import exceptions as cx
    except ImportError:  # typer < 0.29 uses click itself
        from click import exceptions as cx  # type: ignore[no-redef]

    args = list(sys.argv[1:] if argv is None else argv)
    triage = bool(args) and args[0] == "triage"
    try:
        with contextlib.nullcontext() if triage else paused_gc():
            rv = command().main(args=args, prog_name="mcore-diagnose", standalone_mode=False)
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
    except OSError as exc:  # a closed pipe (`| head`): polars raises OSError, not BrokenPipeError
        if not _broken_pipe(exc):
            _internal_error(exc)
            raise SystemExit(EXIT_INTERNAL) from None
        _quiet_stdout()
        raise SystemExit(0) from None
    except KeyboardInterrupt:
        print("mcore-diagnose: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    except Exception as exc:  # a bug of the tool: one line, the traceback with --debug
        _internal_error(exc)
        raise SystemExit(EXIT_INTERNAL) from None
    raise SystemExit(rv if isinstance(rv, int) else 0)

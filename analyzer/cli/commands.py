"""The ``mcore-diagnose`` entry point: every command registered on one app, and ``main``."""

from __future__ import annotations

import contextlib
import errno
import os
import sys

import typer

from analyzer.cli import diagnose, events, patterns  # noqa: F401  (they register their commands)
from analyzer.cli.app import SUBCOMMANDS, app
from analyzer.cli.output import JSON_SLICE_ROWS, _json_rows  # noqa: F401  (tests use them here)
from analyzer.decide.verdict import (
    EXIT_USAGE,
)
from analyzer.util.gcpause import paused_gc
from analyzer.version import __version__

__all__ = ["app", "main"]


def _with_command(args: list[str]) -> tuple[list[str], str | None]:
    """``args`` with ``diagnose`` put first when no subcommand is named, and the command."""
    first = next((a for a in args if not a.startswith("-") or a == "-"), None)
    if args and first not in SUBCOMMANDS and args[0] not in SUBCOMMANDS:
        args = ["diagnose", *args]
    return args, args[0] if args and args[0] in SUBCOMMANDS else first


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
    if args and args[0] in ("--version", "-V"):
        print(f"mcore-diagnose {__version__}")
        return
    args, command = _with_command(args)
    try:
        with paused_gc() if command != "triage" else contextlib.nullcontext():
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
    except OSError as exc:  # a closed pipe (`| head`): polars raises OSError, not BrokenPipeError
        if not _broken_pipe(exc):
            raise
        _quiet_stdout()
        raise SystemExit(0) from None
    except KeyboardInterrupt:
        print("mcore-diagnose: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    raise SystemExit(rv if isinstance(rv, int) else 0)

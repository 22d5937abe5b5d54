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
from analyzer.cli.output import (  # noqa: F401  (tests use JSON_SLICE_ROWS, _json_rows here)
    EXIT_CANNOT_WRITE,
    JSON_SLICE_ROWS,
    _json_rows,
    write_failure,
)
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
EXIT_CLOSED_PIPE = 0
"""Standard output's reader went away (``| head -1``): the reader's choice, not an error; the
same for every command."""


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
    _raise_closed_pipe(cmd)
    return cmd


class ClosedPipe(Exception):
    """Standard output's reader went away (``| head -1``)."""


def _raise_closed_pipe(cmd: Any) -> None:
    """Make a closed pipe under ``cmd`` (its options' callbacks, ``--help`` and every command
    below it included) a :class:`ClosedPipe`: click's own handler would exit 1 for it, and only
    for an ``OSError`` that carries ``EPIPE`` (polars' carries none), so commands differed."""
    for name in ("make_context", "invoke"):
        inner = getattr(cmd, name)

        def guarded(*args: Any, _inner: Any = inner, **kwargs: Any) -> Any:
            try:
                return _inner(*args, **kwargs)
            except OSError as exc:
                if _broken_pipe(exc):
                    raise ClosedPipe from exc
                raise

        setattr(cmd, name, guarded)


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


def _write_error(exc: OSError) -> int:
    """The exit status for ``exc`` escaping a command, after its one line on stderr: a closed
    pipe exits quietly, a full disk as ``-o`` onto one does, anything else is a bug."""
    if _broken_pipe(exc):
        _quiet_stdout()
        return EXIT_CLOSED_PIPE
    why = write_failure(exc)  # the disk is full (`> /dev/full`); -o files are checked on writing
    if why is None:
        _internal_error(exc)
        return EXIT_INTERNAL
    print(f"mcore-diagnose: cannot write standard output: {why}", file=sys.stderr)
    _quiet_stdout()
    return EXIT_CANNOT_WRITE


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
        sys.stdout.flush()  # a write that fails now is reported like any other
    except ClosedPipe:
        _quiet_stdout()
        raise SystemExit(EXIT_CLOSED_PIPE) from None
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
    except OSError as exc:  # a closed pipe or a full disk met by Python's or polars' writes
        raise SystemExit(_write_error(exc)) from None
    except KeyboardInterrupt:
        print("mcore-diagnose: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    except Exception as exc:  # a bug of the tool: one line, the traceback with --debug
        _internal_error(exc)
        raise SystemExit(EXIT_INTERNAL) from None
    raise SystemExit(rv if isinstance(rv, int) else 0)


# ``from analyzer.cli import app`` is this app, not the module ``analyzer.cli.app`` (whose import
# above made it an attribute of the package, which loads this module only on first use).
sys.modules[__package__ or "analyzer.cli"].app = app  # type: ignore[attr-defined]

"""The ``mcore-diagnose`` command line: ``app`` holds the commands, ``main`` runs them.

``main`` answers ``--version`` before the commands (typer, every command's options) are
loaded; ``app`` is loaded on first use (``from analyzer.cli import app``).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from analyzer.cli.commands import app

__all__ = ["app", "main"]

_VERSION_ONLY = (["--version"], ["-V"])


def main(argv: list[str] | None = None) -> None:
    """Entry point: ``mcore-diagnose PATH`` is ``mcore-diagnose diagnose PATH``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args in _VERSION_ONLY:
        _version()
    from analyzer.cli.commands import main as run

    run(args)


def _version() -> NoReturn:
    """Print the version, as ``--version`` on any command does, and exit."""
    from analyzer.version import __version__

    try:
        sys.stdout.write(f"mcore-diagnose {__version__}\n")
        sys.stdout.flush()
    except OSError as exc:  # a closed pipe or a full disk: as every command says it
        from analyzer.cli.commands import _write_error

        raise SystemExit(_write_error(exc)) from None
    raise SystemExit(0)


def __getattr__(name: str) -> Any:
    if name == "app":
        from analyzer.cli.commands import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

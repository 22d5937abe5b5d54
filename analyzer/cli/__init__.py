"""The ``mcore-diagnose`` command line: ``app`` holds the commands, ``main`` runs them."""

from analyzer.cli.commands import app, main

__all__ = ["app", "main"]

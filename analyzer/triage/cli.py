"""``mcore-diagnose triage``: placeholder until the triage issue lands."""

from __future__ import annotations

import typer

triage_app = typer.Typer(help="Diagnose many jobs at once and summarise causes and nodes.")


@triage_app.callback(invoke_without_command=True)
def triage(roots: list[str] = typer.Argument(None)) -> None:  # noqa: B008
    """Not implemented yet."""
    typer.echo("triage is not implemented yet", err=True)
    raise typer.Exit(64)

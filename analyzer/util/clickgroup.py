"""A command group with a default command, and the options every command shares.

``mcore-diagnose JOB`` is ``mcore-diagnose diagnose JOB`` and ``mcore-diagnose triage ROOT`` is
``mcore-diagnose triage run ROOT``: when the first argument is not one of the group's commands
(nor its help option), the default command gets all of them, options included, so
``mcore-diagnose -p patterns JOB`` is ``diagnose -p patterns JOB`` whatever a path is called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from typer.core import TyperGroup, TyperOption


def default_command_group(default: str) -> type[TyperGroup]:
    """A ``TyperGroup`` class whose arguments go to ``default`` when they name no command."""

    class DefaultCommandGroup(TyperGroup):
        def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
            if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
                args = [default, *args]
            return super().parse_args(ctx, args)

    DefaultCommandGroup.__name__ = f"DefaultCommandGroup[{default}]"
    return DefaultCommandGroup


def add_to_every_command(command: Any, make: Callable[[], list[TyperOption]]) -> None:
    """Give ``command`` and every command below it the options ``make`` builds (a fresh set
    each, placed before ``--help``)."""
    have = {o for p in command.params for o in getattr(p, "opts", [])}
    new = [p for p in make() if not have.intersection(p.opts)]
    command.params[len(command.params):] = new
    for sub in getattr(command, "commands", {}).values():
        add_to_every_command(sub, make)

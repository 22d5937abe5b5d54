"""When to colour: ``--color auto|always|never`` and the environment conventions.

``always`` and ``never`` win over everything. ``auto`` (the default) colours only when the
output is a terminal, and follows the conventions most command-line tools share:
``NO_COLOR`` (any non-empty value) turns colour off; ``FORCE_COLOR`` or ``CLICOLOR_FORCE``
(non-empty and not ``0``) turn it on even through a pipe; ``TERM=dumb`` turns it off.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import StrEnum
from typing import TextIO


class ColorChoice(StrEnum):
    """The values of ``--color``."""

    auto = "auto"
    always = "always"
    never = "never"


def _on(value: str | None) -> bool:
    return bool(value) and value != "0"


def use_color(
    choice: str | ColorChoice = ColorChoice.auto,
    stream: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
) -> bool:
    """Whether output written to ``stream`` should carry ANSI colours."""
    choice = ColorChoice(choice)
    if choice is ColorChoice.always:
        return True
    if choice is ColorChoice.never:
        return False
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if _on(env.get("FORCE_COLOR")) or _on(env.get("CLICOLOR_FORCE")):
        return True
    if env.get("TERM") == "dumb":
        return False
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        return False

"""The ``mcore-diagnose recipes`` command: the sbatch recipes that ship inside the package
(``analyzer.recipes``, the checkout's ``recipes/``), listed, printed or written to a file, so
that a pip, pipx or uv install has them without a checkout. Registered on the main app by
:func:`register_recipes`."""

from __future__ import annotations

import re
import sys
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, NoReturn

import typer

EXIT_USAGE = 64
SUFFIX = ".sbatch"
_CHECKOUT_DIR = Path(__file__).resolve().parents[2] / "recipes"


def _fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    typer.echo(f"mcore-diagnose recipes: {message}", err=True)
    raise typer.Exit(code)


def recipe_files() -> dict[str, Traversable]:
    """The shipped recipes by name (``diagnose-on-failure``), in name order.

    Installed, they are the package data ``analyzer.recipes``; a source checkout that is not
    installed (or an editable install made before they shipped) reads ``recipes/`` directly.
    """
    found: list[Traversable] = []
    try:
        root: Traversable | None = resources.files("analyzer.recipes")
    except (ImportError, TypeError, ValueError):
        root = None
    if root is not None:
        try:
            found = [f for f in root.iterdir() if f.name.endswith(SUFFIX) and f.is_file()]
        except OSError:
            found = []
    if not found and _CHECKOUT_DIR.is_dir():
        found = list(_CHECKOUT_DIR.glob(f"*{SUFFIX}"))
    return {f.name.removesuffix(SUFFIX): f for f in sorted(found, key=lambda f: f.name)}


def summary(text: str) -> str:
    """What a recipe does: the first sentence (up to ``.``, ``;`` or ``:``) of the comment
    that follows its shebang."""
    words: list[str] = []
    for line in text.splitlines()[1:]:
        if not line.startswith("#") or line.startswith("#SBATCH") or not line.strip("# "):
            break
        words.append(line.lstrip("#").strip())
    return re.split(r"[.;:](?:\s|$)", " ".join(words), maxsplit=1)[0].strip()


def _target(output: Path, name: str) -> Path:
    """``-o`` as a file: a directory given gets the recipe's own file name."""
    return output / f"{name}{SUFFIX}" if output.is_dir() else output


def _write(output: Path, name: str, text: str, force: bool) -> None:
    target = _target(output, name)
    if (target.exists() or target.is_symlink()) and not force:
        _fail(f"{target} exists; give --force to overwrite it, or another -o")
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        _fail(f"cannot write {target}: {exc.strerror or exc}; give a writable -o")


def recipes_cmd(
    name: Annotated[
        str | None,
        typer.Argument(help="The recipe to print or write (see the list).", metavar="NAME",
                       show_default=False),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE",
                     help="Write the recipe to FILE (a directory: DIR/NAME.sbatch); - is "
                     "standard output. An existing file is kept unless --force.",
                     show_default=False),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing -o FILE.")] = False,
) -> None:
    """List the sbatch recipes that ship with the tool, print one, or write one to a file.

    Examples:

    \b
      mcore-diagnose recipes
      mcore-diagnose recipes diagnose-on-failure
      mcore-diagnose recipes diagnose-on-failure -o .
    """
    files = recipe_files()
    if not files:
        _fail("no recipe found in the package; the installation is broken: reinstall "
              "mcore-diagnose (pip install --force-reinstall mcore-diagnose)", 3)
    if name is None:
        if output is not None:
            _fail("-o needs the NAME of a recipe (mcore-diagnose recipes lists them)")
        from analyzer.report import terminal_width
        from analyzer.report.texttable import hanging

        width = max(len(n) for n in files)
        # a terminal: wrapped under the summary; a pipe: one line each
        columns = terminal_width() if sys.stdout.isatty() else None
        for n, f in files.items():
            line = summary(f.read_text(encoding="utf-8"))
            typer.echo(hanging(f"{n:<{width}}  ", line, columns).rstrip())
        return
    key = name.removesuffix(SUFFIX)
    if key not in files:
        _fail(f"no recipe named {name}; the recipes are: {', '.join(files)}")
    text = files[key].read_text(encoding="utf-8")
    if output is None or output == Path("-"):
        sys.stdout.write(text)
    else:
        _write(output, key, text, force)


def register_recipes(app: typer.Typer, subcommands: set[str]) -> None:
    """Add ``recipes`` to the main app and to the names that are not a path to diagnose."""
    app.command("recipes")(recipes_cmd)
    subcommands.add("recipes")

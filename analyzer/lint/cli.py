"""The ``mcore-diagnose lint`` command (registered on the main app by :func:`register_lint`)."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from analyzer.util.color import ColorChoice, use_color

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_UNREADABLE = 3
EXIT_USAGE = 64


class LintFormat(StrEnum):
    """Lint output formats."""

    terminal = "terminal"
    text = "text"
    json = "json"


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"mcore-diagnose lint: {message}", err=True)
    raise typer.Exit(code)


LINT_SUFFIX_FORMAT = {".json": LintFormat.json, ".txt": LintFormat.text, ".text": LintFormat.text}
"""Lint's formats by ``-o`` suffix."""


def _output_format(output: Path | None, fmt: LintFormat | None) -> LintFormat:
    """The format: ``--format``, else the suffix of ``-o FILE`` (an unknown one is a usage
    error), else terminal; a terminal report in a file is plain text."""
    if output is None or output == Path("-"):
        return fmt or LintFormat.terminal
    by_suffix = LINT_SUFFIX_FORMAT.get(output.suffix.lower())
    if fmt is not None:
        given = LintFormat.text if fmt == LintFormat.terminal else fmt
        if by_suffix is not None and by_suffix != given:
            _fail(f"-o {output} is {by_suffix} by its suffix {output.suffix} but --format says "
                  f"{given}; leave out --format, or give a file whose suffix fits", EXIT_USAGE)
        return given
    if by_suffix is None:
        _fail(f"cannot tell the format of {output} from its suffix {output.suffix or '(none)'}; "
              f"use one of {', '.join(LINT_SUFFIX_FORMAT)}, or give --format", EXIT_USAGE)
    return by_suffix


def _one_output(outputs: list[Path] | None, scripts: list[Path]) -> Path | None:
    """The one ``-o`` (None: none given): several, or one that is a script being read, is a
    usage error."""
    if not outputs:
        return None
    if len(outputs) > 1:
        _fail(f"-o is given {len(outputs)} times; lint writes one file: give one -o", EXIT_USAGE)
    out = outputs[0]
    if out != Path("-") and any(_same(out, s) for s in scripts):
        _fail(f"-o {out} is one of the scripts being read; write elsewhere", EXIT_USAGE)
    return out


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):
        return False


def lint_cmd(
    scripts: Annotated[
        list[Path],
        typer.Argument(help="sbatch scripts to check.", show_default=False, metavar="SCRIPT"),
    ],
    fmt: Annotated[
        LintFormat | None,
        typer.Option(
            "--format",
            "-f",
            metavar="FORMAT",
            help="Output format: terminal, text or json. Default: terminal on standard "
            "output; with -o, the file's suffix (.json, .txt, .text).",
            show_default=False,
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="FILE",
            help="Config file (TOML: [lint.partitions], node_local_paths); default "
            "~/.config/mcore-diagnose/config.toml or $MCORE_DIAGNOSE_CONFIG.",
        ),
    ] = None,
    no_reasons: Annotated[
        bool, typer.Option("--no-reasons", help="Leave out the guide's reason under each finding.")
    ] = False,
    outputs: Annotated[
        list[Path] | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write the findings to FILE instead of standard output, the format from its "
            "suffix (.json .txt .text); - is standard output. One -o; never a script read.",
            show_default=False,
        ),
    ] = None,
    color: Annotated[
        ColorChoice,
        typer.Option(
            "--color",
            metavar="WHEN",
            help="Colour the terminal output: auto (a terminal; NO_COLOR honoured), always or "
            "never.",
            case_sensitive=False,
        ),
    ] = ColorChoice.auto,
) -> None:
    """Check sbatch scripts against the launch guide before submitting them.

    Exit 1 when any error or warning is found, 0 otherwise, 3 when a script cannot be read.
    Silence one rule on one line with a comment: # mcore-diagnose: disable=RULE

    Examples:

    \b
      mcore-diagnose lint train.sbatch
      mcore-diagnose lint jobs/*.sbatch -f json
    """
    from analyzer.lint import ConfigError, lint_text, load_config
    from analyzer.lint.report import render_findings, to_json

    output = _one_output(outputs, scripts)

    try:
        cfg = load_config(config)
    except ConfigError as exc:
        _fail(f"cannot load config: {exc}\nFix the file or leave out --config.", EXIT_USAGE)
        return
    results: list[tuple[str, Any]] = []
    lines: dict[str, list[str]] = {}
    for path in scripts:
        try:
            if path.is_dir():
                raise IsADirectoryError(21, "is a directory, not a script")
            text = path.read_bytes().decode("utf-8", errors="replace")
        except OSError as exc:
            _fail(f"cannot read {path}: {exc.strerror or exc}; give the path of an sbatch "
                  "script", EXIT_UNREADABLE)
            return
        if "#SBATCH" not in text and "srun" not in text:
            typer.echo(f"mcore-diagnose lint: warning: {path} has no #SBATCH line and no srun: "
                       "is it an sbatch script?", err=True)
        results.append((str(path), lint_text(text, str(path), cfg)))
        lines[str(path)] = text.replace("\r\n", "\n").split("\n")
    fmt = _output_format(output, fmt)
    if output == Path("-"):
        output = None
    if fmt == LintFormat.json:
        text = to_json(results, lines)
    else:
        colored = fmt == LintFormat.terminal and use_color(color, sys.stdout)
        text = render_findings(results, lines, color=colored, reasons=not no_reasons)
    if output is None:
        sys.stdout.write(text)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            _fail(f"cannot write {output}: {exc.strerror or exc}", EXIT_USAGE)
    bad = any(f.severity in ("error", "warning") for _, found in results for f in found)
    raise typer.Exit(EXIT_FINDINGS if bad else EXIT_CLEAN)


def register_lint(app: typer.Typer, subcommands: set[str]) -> None:
    """Add ``lint`` to the main app and to the names that are not a path to diagnose."""
    app.command("lint")(lint_cmd)
    subcommands.add("lint")

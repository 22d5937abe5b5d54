"""Reports: terminal (rich), plain text, Markdown, HTML and JSON views of one diagnosis."""

from __future__ import annotations

import shutil

from analyzer.report.input import FORMATS, RenderOptions, ReportInput, diagnosis_of

__all__ = ["FORMATS", "RenderOptions", "render", "render_report", "terminal_width"]


def terminal_width(default: int = 100) -> int:
    """The terminal's width, kept between 60 and 160 columns."""
    cols = shutil.get_terminal_size((default, 24)).columns
    return max(60, min(cols, 160))


def render(
    d: ReportInput,
    fmt: str,
    *,
    quiet: bool = False,
    verbose: bool = False,
    color: bool = False,
    width: int | None = None,
) -> str:
    """The report of ``d`` (a ``Diagnosis``, or an ``analyzer.api.Analysis``) as a string.

    Parameters:
        d: the diagnosis of one job (``analyzer.analyze(path).diagnosis``), or the analysis.
        fmt: ``terminal`` (rich panels and the rank grid), ``text`` (the same in plain text),
            ``markdown``, ``html`` (one self-contained page) or ``json`` (the object of
            ``docs/contract.md``, indented; the command line prints it on one line).
        quiet: one line, ``category rank=… node=… confidence=…: cause`` (not for JSON).
        verbose: add the per-rank timeline and show tracebacks and long lines whole.
        color: the terminal report carries ANSI colours (``analyzer.util.color.use_color``
            decides it on the command line).
        width: the line width of the ``terminal`` and ``text`` reports; the command line
            passes the terminal's width (with or without colour), and 100 (``WIDTH``) when
            standard output is not a terminal. None: the terminal's width when ``color``,
            else 100. No line of these reports is longer (log lines are cut or wrapped).

    The same as ``render_report(d, RenderOptions(fmt, width, color, quiet, verbose))``.
    Raises ``ValueError`` for an unknown ``fmt``. Log text is escaped for the format.
    """
    return render_report(d, RenderOptions(fmt, width, color, quiet, verbose))


def render_report(d: ReportInput, o: RenderOptions) -> str:
    """The report of ``d`` as ``o`` says (see :func:`render`)."""
    diag = diagnosis_of(d)
    if o.fmt == "json":
        from analyzer.report.jsonout import to_json

        return to_json(diag)
    if o.quiet:
        from analyzer.report.oneline import one_line

        return one_line(diag) + "\n"
    if o.fmt == "markdown":
        from analyzer.report.markdown import to_markdown

        return to_markdown(diag, verbose=o.verbose)
    if o.fmt == "html":
        from analyzer.report.html import to_html

        return to_html(diag, verbose=o.verbose)
    from analyzer.report.terminal import WIDTH, to_terminal, to_text

    width = o.width
    if width is None:
        width = terminal_width() if o.color and o.fmt == "terminal" else WIDTH
    if o.fmt == "text":
        return to_text(diag, verbose=o.verbose, width=width)
    return to_terminal(diag, color=o.color, verbose=o.verbose, width=width)

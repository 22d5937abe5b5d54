"""The terminal report (rich) and its plain-text twin (``--format text``).

Verdict panel, evidence with a collapsed traceback, downstream symptoms, job facts and the rank
grid; ``--verbose`` adds the per-rank timeline. Log text is untrusted: it only ever reaches rich
as ``Text`` objects (never parsed as markup, no highlighting, no emoji codes) after
:func:`~analyzer.util.safe.clean`, and a report rendered without colour is checked to hold no
escape sequence at all.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from analyzer.report.grid import Grid, nodes_per_row, text_rows
from analyzer.report.model import EvidenceView, ReportModel, build_model
from analyzer.util.safe import clean, has_escape, shorten

if TYPE_CHECKING:
    from analyzer.report.input import ReportInput

WIDTH = 100
"""Width of reports written to a file or a pipe (and of the snapshots)."""
EVIDENCE_CHARS = 600
"""Longer evidence lines are cut in the default view (``--verbose`` shows them whole)."""

_SEVERITY_STYLE = {"fail": "red", "unknown": "yellow", "ok": "green", "mistake": "yellow"}


def _verdict_panel(m: ReportModel) -> Panel:
    style = _SEVERITY_STYLE[m.severity]
    t = Text()
    t.append(m.category, style=f"bold {style}")
    if m.title:
        t.append(" — " + m.title, style="bold")
    rows = Table.grid(padding=(0, 1))
    rows.add_column(style="bold", no_wrap=True)
    rows.add_column()
    if m.status != "ok":
        who = Text(m.who)
        if m.rank_note:
            who.append("\n" + m.rank_note, style="dim")
        rows.add_row("First failing", who)
        if m.time:
            rows.add_row("Time", Text(m.time))
    rows.add_row("Cause", Text(m.cause))
    if m.fix:
        rows.add_row("Fix", Text(m.fix))
    conf = Text(f"{m.confidence:.2f}")
    if m.pattern_id:
        conf.append(f"  (pattern {m.pattern_id})", style="dim")
    rows.add_row("Confidence", conf)
    return Panel(
        Group(t, rows),
        title="mcore-diagnose verdict",
        title_align="left",
        border_style=style,
        expand=True,
    )


def _pad(r: RenderableType, pad: tuple[int, int, int, int]) -> Padding:
    return Padding(r, pad, expand=False)


def _heading(text: str) -> Text:
    return Text(text, style="bold underline")


def _whole(line: str) -> RenderableType:
    """A traceback line shown whole: wrapped, its wrapped part under its own first character."""
    body = line.lstrip(" ")
    text = Text(body, style="dim", overflow="fold")
    return _pad(text, (0, 0, 0, 2 + len(line) - len(body)))


def _evidence_block(e: EvidenceView, verbose: bool) -> RenderableType:
    head = Text(e.location, style="cyan")
    if e.who:
        head.append("  " + e.who, style="dim")
    parts: list[RenderableType] = [head]
    if e.context:
        if verbose:  # every line whole, wrapped under its own start
            parts += [_whole(line) for line in e.context]
        else:  # collapsed, each line cut at the width
            first, hidden, last = e.collapsed()
            ctx = Text("\n".join(first), style="dim")
            if hidden:
                ctx.append(f"\n… {hidden} more traceback lines (--verbose shows them) …",
                           style="dim")
                ctx.append("\n" + "\n".join(last), style="dim")
            ctx.no_wrap = True
            ctx.overflow = "ellipsis"
            parts.append(_pad(ctx, (0, 0, 0, 2)))
    line = e.text if verbose else shorten(e.text, EVIDENCE_CHARS)
    parts.append(_pad(Text(line, style="bold"), (0, 0, 0, 2)))
    return Group(*parts)


def _evidence(m: ReportModel, verbose: bool) -> RenderableType:
    if not m.evidence:
        return Group()
    blocks: list[RenderableType] = [_heading("Evidence")]
    for e in m.evidence:
        blocks.append(_evidence_block(e, verbose))
    return Group(*blocks)


def _symptoms(m: ReportModel) -> RenderableType:
    if not m.symptoms:
        return Group()
    items: list[RenderableType] = [_pad(Text("• " + s), (0, 0, 0, 2)) for s in m.symptoms[:8]]
    if len(m.symptoms) > 8:
        items.append(Text(f"  … and {len(m.symptoms) - 8} more", style="dim"))
    return Group(_heading("Downstream symptoms"), *items)


def _facts(m: ReportModel) -> RenderableType:
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold", no_wrap=True)
    t.add_column()
    for k, v in m.facts:
        t.add_row(k, Text(v))
    t.add_row("logs", Text(m.logs))
    return Group(_heading("Job"), _pad(t, (0, 0, 0, 2)))


def grid_lines(grid: Grid, width: int, color: bool) -> list[Text]:
    """The rank grid as lines of text (styled only with ``color``)."""
    rows = text_rows(grid, width)
    if not rows:
        return []
    lw = max(len(r[0]) for r in rows)
    out: list[Text] = []
    for label, blocks in rows:
        t = Text(f"  {label:>{lw}} ", style="dim")
        for i, block in enumerate(blocks):
            if i:
                t.append(" ")
            for c in block:
                t.append(c.mark, style=c.key.style if color else "")
        out.append(t)
    return out


def _grid(m: ReportModel, width: int, color: bool) -> RenderableType:
    g = m.grid
    if not g.cells:
        return Group()
    rows = text_rows(g, width)
    per = nodes_per_row(rows)
    head = "Rank grid"
    head_note = " (one cell per rank, one row per node)"
    if per > 1:
        head_note = f" (one cell per rank, {per} nodes per row, row label = first node)"
    lines: list[RenderableType] = [
        Text(head, style="bold underline").append(head_note, style="dim"),
        _pad(Text(g.summary), (0, 0, 0, 2)),
        *grid_lines(g, width, color),
    ]
    legend = Text()
    for i, k in enumerate(g.keys):
        if i:
            legend.append("   ")
        legend.append(k.mark, style=k.style if color else "")
        legend.append(f" {k.label}", style="dim")
    lines.append(_pad(legend, (0, 0, 0, 2)))  # wrapped lines stay indented
    return Group(*lines)


def _timeline(m: ReportModel) -> RenderableType:
    t = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
    for col, just in (
        ("rank", "right"),
        ("node", "left"),
        ("first event", "left"),
        ("role", "left"),
        ("category", "left"),
    ):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in m.timeline:
        t.add_row(
            str(r.rank),
            Text(r.node),
            Text(r.time or "—"),
            Text(r.role or "—"),
            Text(r.category or "—"),
        )
    return Group(_heading("Per-rank timeline (first event of each rank, earliest first)"), t)


def _others(m: ReportModel) -> RenderableType:
    lines: list[RenderableType] = []
    if m.attempts:
        lines.append(_heading("Per-attempt verdicts"))
        for a in m.attempts:
            lines.append(
                _pad(
                    Text(
                        f"attempt {a.attempt}: {a.category} (rank {a.rank}, {a.confidence:.2f}): "
                        f"{a.cause}"
                    ),
                    (0, 0, 0, 2),
                )
            )
    if m.alternatives:
        lines.append(_heading("Also considered"))
        for a in m.alternatives[:3]:
            lines.append(
                _pad(
                    Text(
                        f"{a.category} (rank {a.rank}, {a.confidence:.2f}): {a.cause}", style="dim"
                    ),
                    (0, 0, 0, 2),
                )
            )
    for p in m.problems:
        note = Table.grid()  # "note: " then the text, wrapped under itself
        note.add_column(no_wrap=True)
        note.add_column()
        note.add_row(Text("note: ", style="dim"), Text(p, style="dim"))
        lines.append(note)
    return Group(*lines)


def _advisories(m: ReportModel) -> RenderableType:
    lines: list[RenderableType] = [_heading("Launch advisories (the launch guide's rules)")]
    style = {"error": "red", "warning": "yellow"}
    for x in m.advisories:
        t = Text(x.severity, style=style.get(x.severity, ""))
        t.append(" " + x.line, style="")
        lines.append(_pad(t, (0, 0, 0, 2)))
        lines.append(_pad(Text("fix: " + x.fix), (0, 0, 0, 4)))
        lines += [_pad(Text(v, style="dim"), (0, 0, 0, 4)) for v in x.evidence]
    return Group(*lines)


def _console(buf: io.StringIO, width: int, color: bool) -> Console:
    return Console(
        file=buf,
        force_terminal=color,
        no_color=not color,
        color_system="standard" if color else None,
        width=width,
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
        legacy_windows=False,
        _environ={},  # FORCE_COLOR, COLUMNS, TTY_* of the caller must not change the report
    )


def render_model(m: ReportModel, *, color: bool, verbose: bool = False, width: int = WIDTH) -> str:
    """The report of ``m`` as text, with ANSI colours only when ``color``."""
    buf = io.StringIO()
    console = _console(buf, width, color)
    console.print(_verdict_panel(m))
    if m.status != "ok":
        console.print(_evidence(m, verbose))
        if m.symptoms:
            console.print()
            console.print(_symptoms(m))
    if m.advisories:
        console.print()
        console.print(_advisories(m))
    console.print()
    console.print(_facts(m))
    if m.grid.cells:
        console.print()
        console.print(_grid(m, width, color))
    if m.flight_recorder:
        console.print()
        console.print(_heading("Flight Recorder (per rank, stuck process group)"))
        console.print(_pad(Text("\n".join(m.flight_recorder)), (0, 0, 0, 2)))
    if verbose and m.timeline:
        console.print()
        console.print(_timeline(m))
    others = _others(m)
    if m.attempts or m.alternatives or m.problems:
        console.print()
        console.print(others)
    out = buf.getvalue()
    if not color:
        out = "\n".join(line.rstrip() for line in out.split("\n"))
    if not color and has_escape(out):  # defensive: nothing may smuggle an escape sequence out
        out = clean(out, keep_newlines=True)
    return out


def to_terminal(
    d: ReportInput, *, color: bool, verbose: bool = False, width: int = WIDTH
) -> str:
    """Render the report, with ANSI colours when ``color`` (``analyzer.util.color.use_color``
    decides it for the command line: ``--color``, ``NO_COLOR``, ``FORCE_COLOR``, a TTY)."""
    return render_model(build_model(d), color=color, verbose=verbose, width=width)


def to_text(d: ReportInput, *, verbose: bool = False, width: int = WIDTH) -> str:
    """The plain-text report (mail bodies, files): box drawing, no ANSI codes."""
    return render_model(build_model(d), color=False, verbose=verbose, width=width)

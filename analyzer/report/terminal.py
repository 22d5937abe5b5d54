"""The terminal report (rich): verdict panel, evidence, facts, symptoms and the rank grid.

Log text is untrusted: it is passed to rich as ``Text`` (never parsed as markup) after control
sequences were stripped by the reader.
"""

from __future__ import annotations

import io
import os
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from analyzer.report.grid import CATEGORY_STYLE, grid_cells

if TYPE_CHECKING:
    from analyzer.api import Analysis

_ROLE_STYLE = {"root": "bold red", "symptom": "yellow", None: "dim"}


def _facts_table(a: Analysis) -> Table:
    d = a.diagnosis
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    f = d.facts
    rows = [
        ("world size", f.get("world_size")),
        ("nodes × GPUs", _nodes(a)),
        (
            "parallelism",
            " ".join(f"{k.upper()}={f[k]}" for k in ("tp", "pp", "cp", "dp", "ep") if f.get(k))
            or None,
        ),
        (
            "GPU",
            " ".join(str(x) for x in (f.get("gpu_name"), f.get("gpu_generation")) if x) or None,
        ),
        (
            "versions",
            " ".join(
                f"{k.split('_')[0]} {f[k]}"
                for k in ("torch_version", "nccl_version", "megatron_version")
                if f.get(k)
            )
            or None,
        ),
        ("last iteration", f.get("last_iteration")),
        ("phase", d.phase),
        ("read", f"{d.files} files, {d.bytes_read / 1e6:.1f} MB"),
    ]
    for k, v in rows:
        if v is not None:
            t.add_row(k, Text(str(v)))
    return t


def _nodes(a: Analysis) -> str | None:
    g = a.attributed.geometry
    if g.nnodes and g.nproc_per_node:
        return f"{g.nnodes} × {g.nproc_per_node}"
    return None


def _verdict_panel(a: Analysis) -> Panel:
    d = a.diagnosis
    v = d.verdict
    style = "green" if d.status == "ok" else ("yellow" if v.category == "unknown" else "red")
    body = Text()
    body.append(f"{v.category}", style=f"bold {style}")
    if v.title:
        body.append(f" — {v.title}")
    body.append("\n")
    who = "rank " + (str(v.rank) if v.rank is not None else "— (none named)")
    if v.local_rank is not None:
        who += f" (local {v.local_rank})"
    if v.node is not None:
        who += f" on node {v.node}"
    if v.time:
        who += f" at {v.time.isoformat(sep=' ')}"
    body.append("First failing: ", style="bold")
    body.append(who + "\n")
    if v.rank_note:
        body.append("  " + v.rank_note + "\n", style="dim")
    body.append("Cause: ", style="bold")
    body.append(v.cause + "\n")
    body.append("Fix: ", style="bold")
    body.append(v.fix + "\n")
    body.append(f"Confidence: {v.confidence:.2f}", style="dim")
    return Panel(body, title="mcore-diagnose verdict", border_style=style)


def _evidence(a: Analysis, verbose: bool) -> Group:
    v = a.diagnosis.verdict
    parts: list[Text] = []
    for e in v.evidence:
        t = Text()
        t.append(f"{e.file}:{e.line}", style="cyan")
        t.append("\n  " + e.text)
        ctx = e.context
        if ctx:
            shown = ctx if verbose or len(ctx) <= 8 else [*ctx[:2], "…", *ctx[-5:]]
            for c in shown:
                t.append("\n    │ " + c, style="dim")
        parts.append(t)
    return Group(Text("Evidence", style="bold"), *parts)


def _grid(a: Analysis, color: bool) -> Group:
    nodes = grid_cells(a.diagnosis)
    if not nodes:
        return Group()
    lines: list[Text] = [Text("Rank grid (first event per rank)", style="bold")]
    for node, cells in nodes:
        t = Text(f"{node:>10} ")
        for c in cells:
            mark = c.mark
            t.append(mark, style=CATEGORY_STYLE.get(c.kind, "") if color else "")
        lines.append(t)
    legend = Text("  X root cause  s symptom  · no event  ? rank not seen", style="dim")
    lines.append(legend)
    return Group(*lines)


def _symptoms(a: Analysis) -> Group:
    lines = [Text("Downstream symptoms", style="bold")]
    for s in a.diagnosis.symptom_lines[:8]:
        lines.append(Text("  • " + s))
    return Group(*lines) if len(lines) > 1 else Group()


def _timeline(a: Analysis) -> Group:
    lines = [Text("Per-rank timeline (first event)", style="bold")]
    for rk, info in sorted(a.diagnosis.ranks.items()):
        lines.append(
            Text(
                f"  rank {rk:>5} node {info.get('node') or '-':>10} {info.get('time') or '-':>26}"
                f"  {info.get('role') or '-':8} {info.get('category') or '-'}"
            )
        )
    return Group(*lines)


def to_terminal(a: Analysis, *, color: bool, verbose: bool = False, width: int = 100) -> str:
    """Render the report; ``color`` only on a TTY and when NO_COLOR is unset."""
    use_color = color and not os.environ.get("NO_COLOR")
    buf = io.StringIO()
    console = Console(
        file=buf,
        force_terminal=use_color,
        no_color=not use_color,
        color_system="standard" if use_color else None,
        width=width,
        highlight=False,
        emoji=False,
        markup=False,
    )
    console.print(_verdict_panel(a))
    if a.diagnosis.status != "ok":
        console.print(_evidence(a, verbose))
        console.print()
        console.print(_symptoms(a))
    console.print(Text("Job", style="bold"))
    console.print(_facts_table(a))
    console.print()
    console.print(_grid(a, use_color))
    if verbose:
        console.print(_timeline(a))
    for alt in a.diagnosis.alternatives[:3]:
        console.print(
            Text(
                f"Alternative: {alt.category} (rank {alt.rank}, {alt.confidence:.2f}): {alt.cause}",
                style="dim",
            )
        )
    for p in a.diagnosis.problems:
        console.print(Text(f"note: {p}", style="dim"))
    return buf.getvalue()

"""The triage summary for a terminal, or as plain text.

Rendered with rich; every piece of log-derived text is wrapped in ``Text`` so that markup in a
job path or a cause is printed, never interpreted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from analyzer.triage.model import (
    MIN_NODE_JOBS,
    Summary,
    headline,
    one_line,
    unknown_lines,
    unknown_summary_line,
)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def _causes_table(s: Summary) -> Table:
    """Causes by count: one row per fingerprint (NEW marked against a baseline)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    has_new = s.baseline is not None
    t = Table(title=Text("Causes by count"), box=box.SIMPLE_HEAD, title_justify="left")
    t.add_column(Text("jobs"), justify="right")
    t.add_column(Text("category"))
    t.add_column(Text("cause (first example)"), overflow="fold", ratio=3)
    t.add_column(Text("example jobs"), overflow="fold", ratio=1)
    t.add_column(Text("fingerprint"), no_wrap=True)
    for r in s.causes.iter_rows(named=True):
        fp = Text(r["fingerprint"] or "")
        if has_new and r.get("new"):
            fp.append(" NEW", style="bold red")
        t.add_row(
            Text(str(r["jobs"])),
            Text(f"{r['category']}\n{r['pattern_id'] or ''}".strip()),
            Text(one_line(r["cause"], 110)),
            Text(", ".join(r["examples"])),
            fp,
        )
    return t


def _nodes_table(s: Summary) -> Table:
    """Node implication: one row per host that failed several jobs."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    t = Table(
        title=Text(f"Node implication (failing node of >= {MIN_NODE_JOBS} jobs)"),
        box=box.SIMPLE_HEAD,
        title_justify="left",
    )
    t.add_column(Text("node"))
    t.add_column(Text("jobs"), justify="right")
    t.add_column(Text("categories"), overflow="fold")
    t.add_column(Text("example jobs"), overflow="fold")
    for r in s.nodes.iter_rows(named=True):
        t.add_row(
            Text(r["node"]),
            Text(str(r["jobs"])),
            Text(", ".join(c for c in r["categories"] if c)),
            Text(", ".join(r["examples"])),
        )
    return t


def _print_unknown(con: Console, s: Summary) -> None:
    """The unknown share, the unknown-failure templates and the first undiagnosed jobs."""
    from rich.text import Text

    con.print(Text(unknown_summary_line(s)))
    for line in unknown_lines(s):
        con.print(Text(f"  {line}"))
    for r in s.undiagnosed.head(10).iter_rows(named=True):
        con.print(Text(f"  {r['status']}: {r['job_id']} ({r['path']}): {one_line(r['note'])}"))
    if s.undiagnosed.height > 10:
        con.print(Text(f"  ... and {s.undiagnosed.height - 10} more"))


def _print_baseline(con: Console, s: Summary) -> None:
    """New and vanished fingerprints against the baseline (nothing without one)."""
    from rich.text import Text

    if s.baseline is None:
        return
    vanished = s.vanished.height if s.vanished is not None else 0
    con.print(Text(f"Against {s.baseline}: {len(s.new)} new fingerprint(s), {vanished} vanished"))
    if s.vanished is not None:
        for r in s.vanished.iter_rows(named=True):
            con.print(
                Text(
                    f"  vanished {r['fingerprint']} ({r['jobs']} job(s) before): "
                    f"{r['category']}: {one_line(r['cause'], 120)}"
                )
            )


def render_terminal(s: Summary, color: bool = False, width: int = 120) -> str:
    """The summary for a terminal (plain text when ``color`` is False)."""
    import io

    from rich.console import Console
    from rich.text import Text

    buf = io.StringIO()
    con = Console(
        file=buf,
        force_terminal=color,
        no_color=not color,
        width=width,
        highlight=False,
        soft_wrap=False,
        emoji=False,
        markup=False,
    )
    con.print(Text("Triage: " + headline(s), style="bold"))
    if s.causes.height:
        con.print(_causes_table(s))
    else:
        con.print(Text("No failures diagnosed."))
    if s.nodes.height:
        con.print(_nodes_table(s))
    else:
        con.print(Text("Node implication: no node is the failing node of several jobs."))
    _print_unknown(con, s)
    _print_baseline(con, s)
    for n in s.notes:
        con.print(Text(f"note: {n}"))
    out = buf.getvalue()
    if not color:  # piped text: rich pads table cells to the full width
        out = "\n".join(line.rstrip() for line in out.split("\n"))
    return out

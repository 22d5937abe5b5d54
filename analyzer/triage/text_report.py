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
    from rich.text import Text

NARROW_BELOW = 130
"""Below this width the causes and nodes are blocks (one per cause or node), not tables: the
tables' five columns would cut categories and pattern ids."""


def _causes_table(s: Summary) -> Table:
    """Causes by count: one row per fingerprint (NEW marked against a baseline)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    has_new = s.baseline is not None
    t = Table(title=Text("Causes by count"), box=box.SIMPLE_HEAD, title_justify="left")
    t.add_column(Text("jobs"), justify="right")
    t.add_column(Text("category"), no_wrap=True)  # never cut: categories and pattern ids
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


def _print_causes_narrow(con: Console, s: Summary) -> None:
    """Causes by count, one block per fingerprint: nothing is cut, long text wraps."""
    from rich.padding import Padding
    from rich.text import Text

    has_new = s.baseline is not None
    con.print(Text("Causes by count"))
    for r in s.causes.iter_rows(named=True):
        head = Text(f"{r['jobs']} job{'s' if r['jobs'] != 1 else ''} · {r['category']}")
        if r["pattern_id"]:
            head.append(f" · {r['pattern_id']}")
        head.append(f" · {r['fingerprint'] or ''}")
        if has_new and r.get("new"):
            head.append(" NEW", style="bold red")
        _hang(con, head, 2, 4)
        con.print(Padding(Text(one_line(r["cause"], 240)), (0, 0, 0, 4)))
        _hang(con, Text("e.g. " + ", ".join(r["examples"])), 4, 6)


def _print_nodes_narrow(con: Console, s: Summary) -> None:
    """Node implication, one block per node."""
    from rich.text import Text

    con.print(Text(f"Node implication (failing node of >= {MIN_NODE_JOBS} jobs)"))
    for r in s.nodes.iter_rows(named=True):
        _hang(con, Text(f"{r['node']}: {r['jobs']} jobs · "
                        + ", ".join(c for c in r["categories"] if c)), 2, 4)
        _hang(con, Text("e.g. " + ", ".join(r["examples"])), 4, 6)


def _print_unknown(con: Console, s: Summary) -> None:
    """The unknown share, the unknown-failure templates and the first undiagnosed jobs."""
    from rich.text import Text

    _hang(con, Text(unknown_summary_line(s)), 0, 2)
    for line in unknown_lines(s):
        _hang(con, Text(line), 2, 4)
    listed = s.listed_jobs()
    for r in listed[:10]:
        _hang(con, Text(f"{r['status']}: {r['label']} ({r['path']}): {one_line(r['note'])}"),
              2, 4)
    if len(listed) > 10:
        con.print(Text(f"  ... and {len(listed) - 10} more"))


def _print_baseline(con: Console, s: Summary) -> None:
    """New and vanished fingerprints against the baseline (nothing without one)."""
    from rich.text import Text

    if s.baseline is None:
        return
    vanished = s.vanished.height if s.vanished is not None else 0
    _hang(con, Text(f"Against {s.baseline}: {len(s.new)} new fingerprint(s), {vanished} vanished"),
          0, 2)
    if s.vanished is not None:
        for r in s.vanished.iter_rows(named=True):
            _hang(con, Text(f"vanished {r['fingerprint']} ({r['jobs']} job(s) before): "
                            f"{r['category']}: {one_line(r['cause'], 120)}"), 2, 4)


def _hang(con: Console, text: Text, first: int, indent: int) -> None:
    """``text`` from column ``first``, wrapped to the console's width with the lines after the
    first from column ``indent`` (a hanging indent; ``first`` <= ``indent``)."""
    from rich.text import Text

    for i, line in enumerate(text.wrap(con, max(con.width - indent, 20))):
        line.rstrip()
        con.print(Text.assemble(" " * (first if i == 0 else indent), line))


def render_terminal(s: Summary, color: bool = False, width: int = 100) -> str:
    """The summary for a terminal (plain text when ``color`` is False), every line within
    ``width`` columns, wrapped lines indented under their first."""
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
    _hang(con, Text("Triage: " + headline(s), style="bold"), 0, 2)
    narrow = width < NARROW_BELOW
    if s.causes.height and narrow:
        _print_causes_narrow(con, s)
    elif s.causes.height:
        con.print(_causes_table(s))
    else:
        con.print(Text("No failures diagnosed."))
    if s.nodes.height and narrow:
        _print_nodes_narrow(con, s)
    elif s.nodes.height:
        con.print(_nodes_table(s))
    else:
        con.print(Text("Node implication: no node is the failing node of several jobs."))
    _print_unknown(con, s)
    _print_baseline(con, s)
    for n in s.notes:
        _hang(con, Text(f"note: {n}"), 0, 6)
    out = buf.getvalue()
    if not color:  # piped text: rich pads table cells to the full width
        out = "\n".join(line.rstrip() for line in out.split("\n"))
    return out

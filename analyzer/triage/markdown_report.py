"""The triage summary as GitHub-flavoured Markdown (log-derived text escaped)."""

from __future__ import annotations

from typing import Any

from analyzer.report.markdown import md
from analyzer.triage.model import (
    MIN_NODE_JOBS,
    Summary,
    headline,
    one_line,
    unknown_lines,
    unknown_summary_line,
)
from analyzer.util.safe import clean


def md_escape(text: Any) -> str:
    """Untrusted text for a Markdown table cell: one line, special characters escaped."""
    return md(clean(text if text is not None else ""))


def _causes_section(s: Summary) -> list[str]:
    """Causes by count: a table with one row per fingerprint (a ``new`` column against a
    baseline)."""
    out = ["## Causes by count", ""]
    if not s.causes.height:
        out.append("No failures diagnosed.")
        return out
    new_col = s.baseline is not None
    out.append(
        "| jobs | category | pattern | cause (first example) | example jobs | "
        "fingerprint |" + (" new |" if new_col else "")
    )
    out.append("|---:|---|---|---|---|---|" + ("---|" if new_col else ""))
    for r in s.causes.iter_rows(named=True):
        cells = [
            str(r["jobs"]),
            md_escape(r["category"]),
            md_escape(r["pattern_id"]),
            md_escape(one_line(r["cause"], 300)),
            md_escape(", ".join(r["examples"])),
            f"`{r['fingerprint']}`",
        ]
        if new_col:
            cells.append("**new**" if r.get("new") else "")
        out.append("| " + " | ".join(cells) + " |")
    return out


def _nodes_section(s: Summary) -> list[str]:
    """Node implication: a table of hosts that failed several jobs."""
    out = ["## Node implication", ""]
    if not s.nodes.height:
        out.append("No node is the failing node of several jobs.")
        return out
    out.append(
        f"Nodes that are the failing node of at least {MIN_NODE_JOBS} jobs (candidates to drain):"
    )
    out.append("")
    out.append("| node | jobs | categories | example jobs |")
    out.append("|---|---:|---|---|")
    for r in s.nodes.iter_rows(named=True):
        out.append(
            f"| {md_escape(r['node'])} | {r['jobs']} | "
            f"{md_escape(', '.join(c for c in r['categories'] if c))} | "
            f"{md_escape(', '.join(r['examples']))} |"
        )
    return out


def _unknown_section(s: Summary) -> list[str]:
    """The unknown share, the unknown-failure templates and the undiagnosed jobs."""
    out = ["## Unknown", "", md_escape(unknown_summary_line(s))]
    if s.unknowns is not None:
        out.append("")
        out += [f"- {md_escape(line)}" for line in unknown_lines(s)]
    if s.listed_jobs():
        out.append("")
        for r in s.listed_jobs():
            out.append(
                f"- {md_escape(r['status'])}: {md_escape(r['label'])} "
                f"({md_escape(r['path'])}): {md_escape(one_line(r['note']))}"
            )
    return out


def _baseline_section(s: Summary) -> list[str]:
    """New and vanished fingerprints against the baseline (nothing without one)."""
    if s.baseline is None:
        return []
    out = [
        "",
        "## New and vanished",
        "",
        md_escape(f"Against {s.baseline}: {len(s.new)} new fingerprint(s)."),
        "",
    ]
    for fp in s.new:
        out.append(f"- new `{fp}`")
    if s.vanished is not None and s.vanished.height:
        for r in s.vanished.iter_rows(named=True):
            out.append(
                f"- vanished `{r['fingerprint']}` ({r['jobs']} job(s) before): "
                f"{md_escape(r['category'])}: {md_escape(one_line(r['cause']))}"
            )
    return out


def render_markdown(s: Summary) -> str:
    """The summary as GitHub-flavoured Markdown."""
    out = ["# Triage summary", "", md_escape(headline(s)), ""]
    out += _causes_section(s)
    out += ["", *_nodes_section(s)]
    out += ["", *_unknown_section(s)]
    out += _baseline_section(s)
    for n in s.notes:
        out += ["", f"> {md_escape(n)}"]
    return "\n".join(out) + "\n"

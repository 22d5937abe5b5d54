"""The Markdown report (``--format markdown``): for issues, chat and Markdown mail.

Same content as the terminal report. Log text is untrusted: in running text it is
HTML-escaped (Markdown renderers pass raw HTML through) and its Markdown punctuation is
backslash-escaped; verbatim log lines go in code fences longer than any backtick run they hold.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import regex

from analyzer.report.grid import text_rows
from analyzer.report.model import EvidenceView, ReportModel, build_model
from analyzer.util.safe import shorten

if TYPE_CHECKING:
    from analyzer.api import Analysis

GRID_WIDTH = 100
_MD_PUNCT = regex.compile(r"([\\`*_\[\]|~])")
_TICKS = regex.compile(r"`+")
_STATUS = {"fail": "failed", "unknown": "failed, cause unknown", "ok": "no failure found"}


def md(text: str) -> str:
    """``text`` safe in running Markdown: one line, no HTML, no emphasis/links/tables."""
    s = " ".join(text.split())
    s = html.escape(s, quote=False)
    s = _MD_PUNCT.sub(r"\\\1", s)
    # A line starting with "-", "1." or ">" would become a list or a quote.
    return regex.sub(r"^(\d+)\.", r"\1\\.", s)


def code(text: str) -> str:
    """``text`` as an inline code span (for identifiers such as categories and file:line)."""
    s = " ".join(text.split())
    longest = max((len(t) for t in _TICKS.findall(s)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def prose(text: str) -> str:
    """Running text with its ``code`` spans kept as code spans (everything else escaped)."""
    from analyzer.util.safe import code_spans

    out = []
    for is_code, part in code_spans(text):
        if is_code:
            out.append(code(part))
        else:  # md() trims: keep the spaces around code spans
            lead = " " if part[:1].isspace() else ""
            trail = " " if part[-1:].isspace() and part.strip() else ""
            out.append(lead + md(part) + trail)
    return "".join(out)


def fence(lines: list[str], info: str = "text") -> str:
    """A fenced code block that no line inside can close."""
    body = "\n".join(lines)
    longest = max((len(t) for t in _TICKS.findall(body)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{body}\n{ticks}"


def _evidence(e: EvidenceView, verbose: bool) -> list[str]:
    head = f"**{code(e.location)}**" + (f" — {md(e.who)}" if e.who else "")
    lines: list[str] = []
    if e.context:
        first, hidden, last = (e.context, 0, []) if verbose else e.collapsed()
        lines += first
        if hidden:
            lines.append(f"… {hidden} more traceback lines …")
            lines += last
    lines.append(e.text if verbose else shorten(e.text, 2000))
    return [head, "", fence(lines), ""]


def _grid(m: ReportModel) -> list[str]:
    g = m.grid
    rows = text_rows(g, GRID_WIDTH)
    lw = max(len(r[0]) for r in rows)
    body = [
        f"{label:>{lw}} " + " ".join("".join(c.mark for c in b) for b in blocks)
        for label, blocks in rows
    ]
    legend = "   ".join(f"{k.mark} {k.label}" for k in g.keys)
    return [
        "## Rank grid",
        "",
        md(g.summary),
        "",
        fence([*body, "", legend]),
        "",
    ]


def _heading(m: ReportModel) -> list[str]:
    """The title line and the one-line job status."""
    title = code(m.category) + (f" — {md(m.title)}" if m.title else "")
    return [f"# mcore-diagnose: {title}", "", f"*Job {_STATUS[m.severity]}.*", ""]


def _verdict(m: ReportModel) -> list[str]:
    """The verdict table: category, first failing rank, time, cause, fix, confidence."""
    out = ["| Verdict | Value |", "|---|---|", f"| **Category** | {code(m.category)} |"]
    if m.status != "ok":
        who = md(m.who) + (f" <br>*{prose(m.rank_note)}*" if m.rank_note else "")
        out.append(f"| **First failing** | {who} |")
        if m.time:
            out.append(f"| **Time** | {md(m.time)} |")
    out.append(f"| **Cause** | {prose(m.cause)} |")
    if m.fix:
        out.append(f"| **Fix** | {prose(m.fix)} |")
    conf = f"{m.confidence:.2f}" + (f" (pattern {code(m.pattern_id)})" if m.pattern_id else "")
    return [*out, f"| **Confidence** | {conf} |", ""]


def _evidence_section(m: ReportModel, verbose: bool) -> list[str]:
    """The evidence lines of a failure, each with its traceback."""
    if m.status == "ok" or not m.evidence:
        return []
    out = ["## Evidence", ""]
    for e in m.evidence:
        out += _evidence(e, verbose)
    return out


def _symptoms(m: ReportModel) -> list[str]:
    """The downstream symptoms of a failure, one bullet each."""
    if m.status == "ok" or not m.symptoms:
        return []
    return ["## Downstream symptoms", "", *(f"- {md(s)}" for s in m.symptoms), ""]


def _advisories(m: ReportModel) -> list[str]:
    """The launch advisories with their fixes and evidence."""
    if not m.advisories:
        return []
    out = ["## Launch advisories", ""]
    for x in m.advisories:
        out.append(f"- **{md(x.severity)}** {prose(x.line)}  ")
        out.append(f"  fix: {code(x.fix)}")
        out += [f"  - {md(v)}" for v in x.evidence]
    return [*out, ""]


def _job(m: ReportModel) -> list[str]:
    """The job's facts and the logs read."""
    rows = [f"| {md(k)} | {md(v)} |" for k, v in m.facts]
    return ["## Job", "", "| Fact | Value |", "|---|---|", *rows, f"| logs | {md(m.logs)} |", ""]


def _grid_section(m: ReportModel) -> list[str]:
    """The rank grid, when there are ranks to show."""
    return _grid(m) if m.grid.cells else []


def _flight_recorder(m: ReportModel) -> list[str]:
    """The Flight Recorder table, when there were dumps."""
    if not m.flight_recorder:
        return []
    return ["## Flight Recorder", "", fence(m.flight_recorder), ""]


def _timeline(m: ReportModel, verbose: bool) -> list[str]:
    """Each rank's first event (``--verbose`` only)."""
    if not (verbose and m.timeline):
        return []
    rows = [
        f"| {r.rank} | {md(r.node)} | {md(r.time or '—')} | {md(r.role or '—')} | "
        f"{md(r.category or '—')} |"
        for r in m.timeline
    ]
    return [
        "## Per-rank timeline",
        "",
        "| rank | node | first event | role | category |",
        "|---:|---|---|---|---|",
        *rows,
        "",
    ]


def _attempts(m: ReportModel) -> list[str]:
    """The verdict of each restart attempt."""
    if not m.attempts:
        return []
    items = [
        f"- attempt {a.attempt}: {code(a.category)} (rank {a.rank}, {a.confidence:.2f}): "
        f"{prose(a.cause)}"
        for a in m.attempts
    ]
    return ["## Per-attempt verdicts", "", *items, ""]


def _alternatives(m: ReportModel) -> list[str]:
    """Up to three other explanations that were weighed."""
    if not m.alternatives:
        return []
    items = [
        f"- {code(a.category)} (rank {a.rank}, {a.confidence:.2f}): {prose(a.cause)}"
        for a in m.alternatives[:3]
    ]
    return ["## Also considered", "", *items, ""]


def _notes(m: ReportModel) -> list[str]:
    """What went wrong while reading, as quoted notes."""
    if not m.problems:
        return []
    return [*(f"> note: {md(p)}" for p in m.problems), ""]


def render_markdown(m: ReportModel, *, verbose: bool = False) -> str:
    """The Markdown report of ``m``."""
    out = [
        *_heading(m),
        *_verdict(m),
        *_evidence_section(m, verbose),
        *_symptoms(m),
        *_advisories(m),
        *_job(m),
        *_grid_section(m),
        *_flight_recorder(m),
        *_timeline(m, verbose),
        *_attempts(m),
        *_alternatives(m),
        *_notes(m),
    ]
    return "\n".join(out).rstrip("\n") + "\n"


def to_markdown(a: Analysis, *, verbose: bool = False) -> str:
    """The Markdown report of ``a``."""
    return render_markdown(build_model(a), verbose=verbose)

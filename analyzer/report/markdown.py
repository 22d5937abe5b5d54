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
    from analyzer.report.input import ReportInput

GRID_WIDTH = 100
_MD_PUNCT = regex.compile(r"([\\`*_\[\]|~])")
_TICKS = regex.compile(r"`+")
_STATUS = {"fail": "failed", "unknown": "failed, cause unknown", "ok": "no failure found",
           "mistake": "ran, with a launch mistake"}


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


WIDTH = 100
"""Markdown source lines wrap at this width (a paragraph's soft line breaks render as spaces);
tables hold only short values, since a table row cannot wrap."""
_BLOCK_START = regex.compile(
    r"(?:[-+*]|#{1,6}|\d{1,9}[.)]|[-=_*]+)$|[>|<]|```|~~~"
)
"""What must not begin a wrapped line: it would start a list, quote, heading, table or fence."""


def wrap(text: str, first: str = "", rest: str = "", width: int = WIDTH) -> list[str]:
    """``text`` (already escaped) as lines of at most ``width`` columns where the words allow,
    the first led by ``first``, the others by ``rest`` (a list item's or quote's indent). A
    line never starts with what Markdown would read as the start of a block."""
    lines: list[list[str]] = [[]]
    for word in text.split(" "):
        cur = lines[-1]
        lead = len(first if len(lines) == 1 else rest)
        if cur and lead + len(" ".join([*cur, word])) > width:
            if not _BLOCK_START.match(word):
                lines.append([word])
                continue
            if len(cur) > 1 and not _BLOCK_START.match(cur[-1]):  # carry the word before along
                lines.append([cur.pop(), word])
                continue
        cur.append(word)
    return [(first if i == 0 else rest) + " ".join(ws) for i, ws in enumerate(lines)]


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
    return [*wrap(head), "", fence(lines), ""]


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
        *wrap(md(g.summary)),
        "",
        fence([*body, "", legend]),
        "",
    ]


def _heading(m: ReportModel) -> list[str]:
    """The title line and the one-line job status."""
    title = code(m.category) + (f" — {md(m.title)}" if m.title else "")
    return [f"# mcore-diagnose: {title}", "", f"*Job {_STATUS[m.severity]}.*", ""]


def _verdict(m: ReportModel) -> list[str]:
    """The verdict table (category, first failing rank, time, confidence), then the note on the
    rank, the cause and the fix as paragraphs."""
    out = ["| Verdict | Value |", "|---|---|", f"| **Category** | {code(m.category)} |"]
    if m.status != "ok":
        out.append(f"| **First failing** | {md(m.who)} |")
        if m.time:
            out.append(f"| **Time** | {md(m.time)} |")
    conf = f"{m.confidence:.2f}" + (f" (pattern {code(m.pattern_id)})" if m.pattern_id else "")
    out += [f"| **Confidence** | {conf} |", ""]
    # the long texts as paragraphs below the table: a table row cannot wrap
    if m.status != "ok" and m.rank_note:
        out += [*wrap(f"*{prose(m.rank_note)}*"), ""]
    out += [*wrap(f"**Cause:** {prose(m.cause)}"), ""]
    if m.fix:
        out += [*wrap(f"**Fix:** {prose(m.fix)}"), ""]
    return out


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
    items = [line for s in m.symptoms for line in wrap(md(s), "- ", "  ")]
    return ["## Downstream symptoms", "", *items, ""]


def _advisories(m: ReportModel) -> list[str]:
    """The launch advisories with their fixes and evidence."""
    if not m.advisories:
        return []
    out = ["## Launch advisories", ""]
    for x in m.advisories:
        out += wrap(f"**{md(x.severity)}** {prose(x.line)}", "- ", "  ")
        out[-1] += "  "  # a line break before the fix
        out += wrap(f"fix: {code(x.fix)}", "  ", "  ")
        out += [line for v in x.evidence for line in wrap(md(v), "  - ", "    ")]
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
        line
        for a in m.attempts
        for line in wrap(f"attempt {a.attempt}: {code(a.category)} (rank {a.rank}, "
                         f"{a.confidence:.2f}): {prose(a.cause)}", "- ", "  ")
    ]
    return ["## Per-attempt verdicts", "", *items, ""]


def _alternatives(m: ReportModel) -> list[str]:
    """Up to three other explanations that were weighed."""
    if not m.alternatives:
        return []
    items = [
        line
        for a in m.alternatives[:3]
        for line in wrap(f"{code(a.category)} (rank {a.rank}, {a.confidence:.2f}): "
                         f"{prose(a.cause)}", "- ", "  ")
    ]
    return ["## Also considered", "", *items, ""]


def _notes(m: ReportModel) -> list[str]:
    """What went wrong while reading, as quoted notes."""
    if not m.problems:
        return []
    return [*(line for p in m.problems for line in wrap(f"note: {md(p)}", "> ", "> ")), ""]


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


def to_markdown(d: ReportInput, *, verbose: bool = False) -> str:
    """The Markdown report of a diagnosis."""
    return render_markdown(build_model(d), verbose=verbose)

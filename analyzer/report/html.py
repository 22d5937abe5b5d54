"""The HTML report (``--format html``): one self-contained page to attach to a failure mail.

No script, no external stylesheet, font or image: one ``<style>`` block and plain HTML, so it
renders the same in a browser, a mail client or an archive years later. A Content-Security-Policy
meta tag forbids scripts and remote loads as a second line of defence. Every log-derived string
goes through :func:`html.escape`. The rank grid is HTML (one ``<span>`` per rank with a ``title``
tooltip, grouped by node) rather than SVG, which many mail clients drop; each cell also carries
its letter, so the grid still reads when colours are lost.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import regex

from analyzer.report.grid import KIND_LABEL, Grid, Kind
from analyzer.report.model import AdvisoryView, EvidenceView, ReportModel, build_model
from analyzer.util.safe import html_text, shorten
from analyzer.version import __version__

if TYPE_CHECKING:
    from analyzer.report.input import ReportInput

_SEVERITY = {
    "fail": ("#c62828", "#fdecea", "Job failed"),
    "unknown": ("#b26a00", "#fff4e0", "Job failed — no catalog pattern names the cause"),
    "ok": ("#2e7d32", "#e8f5e9", "No failure found"),
    "mistake": ("#b26a00", "#fff4e0", "Job ran, with a launch mistake"),
}

CSS = """
body{margin:0;padding:24px 12px;background:#eef1f4;color:#1d232a;
font:14px/1.45 -apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
.page{max-width:1000px;margin:0 auto;background:#fff;border:1px solid #d5dbe1;border-radius:8px;
overflow:hidden}
.verdict{padding:16px 22px;border-left:8px solid var(--accent)}
.kicker{font-size:12px;letter-spacing:.06em;text-transform:uppercase;color:var(--accent);
font-weight:700;margin:0 0 2px}
h1{font-size:22px;margin:0 0 10px;line-height:1.25}
h1 .cat{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92em;
background:#f0f2f4;padding:0 .25em;border-radius:3px}
h1 .title{font-weight:400;color:#3b4652}
h2{font-size:15px;margin:22px 0 8px;padding-bottom:4px;border-bottom:1px solid #e3e7eb}
section{padding:0 22px}
table.kv{border-collapse:collapse;width:100%}
table.kv th{text-align:left;vertical-align:top;white-space:nowrap;padding:3px 14px 3px 0;
color:#4a5561;font-weight:600;width:1%}
table.kv td{padding:3px 0;vertical-align:top}
.note{color:#5f6b77;font-size:12px}
.loc{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px;
color:#0b5cad;margin:10px 0 4px}
.loc .who{color:#5f6b77;font-family:inherit}
pre{margin:0;padding:6px 10px;background:#f6f8fa;white-space:pre-wrap;overflow-wrap:anywhere;
font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color:#3b4652}
pre.hit{background:#fdecea;color:#7f1d1d;font-weight:600;border-left:3px solid #c62828}
details summary{cursor:pointer;font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
color:#5f6b77;background:#f6f8fa;padding:2px 10px}
ul.sym{margin:0;padding-left:20px}
.summary{margin:0 0 8px}
.grid{line-height:0}
.node{display:inline-block;vertical-align:top;margin:0 8px 6px 0;line-height:normal}
.node .nl{display:block;font:10px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
color:#5f6b77;max-width:120px;overflow:hidden;white-space:nowrap;text-overflow:ellipsis}
.cells{display:block;max-width:112px;line-height:0}
.c,.cells>span{display:inline-block;width:12px;height:12px;margin:0 1px 1px 0;border-radius:2px;
font:bold 9px/12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;text-align:center;
vertical-align:top}
.legend{margin-top:6px;font-size:12px;color:#3b4652}
.legend span.item{display:inline-block;margin:0 14px 4px 0;white-space:nowrap}
.legend .c{margin-right:4px}
table.tl{border-collapse:collapse;font-size:12px}
table.tl th,table.tl td{padding:2px 10px 2px 0;text-align:left;white-space:nowrap}
footer{padding:14px 22px 0;color:#8a95a0;font-size:11px}
.nw{white-space:nowrap}
""".strip()

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'"


def e(text: object) -> str:
    """HTML-escape a string for text and attribute context (quotes included)."""
    return html_text(text)


_TOKEN = regex.compile(r"\S+")
_HYPHEN = regex.compile(r"\w-\w|(?:^|\W)--?\w")
"""A flag (``--use-distributed-optimizer``) or a hyphenated word (``out-of-memory``)."""


def nobreak(text: str) -> str:
    """Escaped text whose flags and hyphenated words stay on one line: a browser breaks a line
    after a hyphen, and a flag split there reads as two."""
    out, at = [], 0
    for m in _TOKEN.finditer(text):
        word = m.group()
        if len(word) > 60 or not _HYPHEN.search(word):
            continue
        out.append(e(text[at : m.start()]))
        out.append(f'<span class="nw">{e(word)}</span>')
        at = m.end()
    out.append(e(text[at:]))
    return "".join(out)


def prose(text: object) -> str:
    """Escaped running text whose ``code`` spans become ``<code>`` elements; hyphenated words
    and flags do not break at a hyphen."""
    from analyzer.util.safe import code_spans

    return "".join(
        f"<code>{nobreak(part)}</code>" if is_code else nobreak(part)
        for is_code, part in code_spans(str(text))
    )


def _kv(rows: list[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="kv">{body}</table>'


def _verdict(m: ReportModel) -> str:
    accent, bg, kicker = _SEVERITY[m.severity]
    rows: list[tuple[str, str]] = []
    if m.status != "ok":
        who = e(m.who)
        if m.rank_note:
            who += f'<div class="note">{prose(m.rank_note)}</div>'
        rows.append(("First failing", who))
        if m.time:
            rows.append(("Time", e(m.time)))
    rows.append(("Cause", prose(m.cause)))
    if m.fix:
        rows.append(("Fix", prose(m.fix)))
    conf = f"{m.confidence:.2f}"
    if m.pattern_id:
        conf += f' <span class="note">pattern {e(m.pattern_id)}</span>'
    rows.append(("Confidence", conf))
    title = f' <span class="title">— {e(m.title)}</span>' if m.title else ""
    return (
        f'<div class="verdict" style="--accent:{accent};border-left-color:{accent};'
        f'background:{bg}">'
        f'<p class="kicker" style="color:{accent}">{kicker}</p>'
        f'<h1><span class="cat">{e(m.category)}</span>{title}</h1>{_kv(rows)}</div>'
    )


def _pre(lines: list[str], cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return f"<pre{c}>" + e("\n".join(lines)) + "</pre>"


def _evidence_block(ev: EvidenceView, verbose: bool) -> str:
    who = f' <span class="who">— {e(ev.who)}</span>' if ev.who else ""
    out = [f'<div class="loc">{e(ev.location)}{who}</div>']
    if ev.context:
        first, hidden, last = (ev.context, 0, []) if verbose else ev.collapsed()
        out.append(_pre(first))
        if hidden:
            mid = ev.context[len(first) : len(ev.context) - len(last)]
            out.append(
                f"<details><summary>… {hidden} more traceback lines</summary>{_pre(mid)}</details>"
            )
            out.append(_pre(last))
    out.append(_pre([ev.text if verbose else shorten(ev.text, 4000)], "hit"))
    return "".join(out)


def _cell(c_mark: str, cls: str, title: str) -> str:
    return f'<span class="c {cls}" title="{e(title)}">{e(c_mark)}</span>'


def _grid_style(g: Grid) -> str:
    return "".join(
        f".k{i}{{background:{k.color[0]};color:{k.color[1]}}}" for i, k in enumerate(g.keys)
    )


def _short_tooltip(c: Any, day: str | None) -> str:
    """The cell's tooltip without what its row already says (the node) and, for symptom and
    quiet ranks, without the day every event shares: a 1,024-rank page stays under 100 KB,
    the size at which mail clients start to clip."""
    if c.kind not in (Kind.NONE, Kind.SYMPTOM):
        return str(c.tooltip)
    parts = [f"rank {c.rank}"]
    # a symptom's letter is lower-case and the legend says so: the category is enough
    parts.append(KIND_LABEL[Kind.NONE] if c.kind == Kind.NONE else str(c.category))
    if c.time:
        parts.append(c.time[len(day) + 1 :] if day and c.time.startswith(day + " ") else c.time)
    return " · ".join(parts)


def _grid(g: Grid) -> str:
    by_val = {(k.kind, k.category): i for i, k in enumerate(g.keys)}
    days = Counter(c.time.split(" ", 1)[0] for c in g.cells if c.time)
    day = days.most_common(1)[0][0] if days else None
    nodes = []
    for n in g.nodes:
        cells = "".join(
            f'<span class="k{by_val[(c.key.kind, c.key.category)]}" '
            f'title="{e(_short_tooltip(c, day))}">{e(c.mark)}</span>'
            for c in n.cells
        )
        nodes.append(
            f'<div class="node" title="node {e(n.label)} ({len(n.cells)} ranks)">'
            f'<span class="nl">{e(n.label)}</span><span class="cells">{cells}</span></div>'
        )
    legend = "".join(
        f'<span class="item">{_cell(k.mark, f"k{i}", k.label)}{e(k.label)} '
        f'<span class="note">({k.count:,})</span></span>'
        for i, k in enumerate(g.keys)
    )
    return (
        f'<p class="summary">{e(g.summary)}</p><div class="grid">{"".join(nodes)}</div>'
        f'<div class="legend">{legend}</div>'
        '<p class="note">One cell per rank, grouped by node, marked by the rank\'s first event; '
        "hover a cell for its rank, event and time.</p>"
    )


def _timeline(m: ReportModel) -> str:
    rows = "".join(
        f"<tr><td>{r.rank}</td><td>{e(r.node)}</td><td>{e(r.time or '—')}</td>"
        f"<td>{e(r.role or '—')}</td><td>{e(r.category or '—')}</td></tr>"
        for r in m.timeline
    )
    return (
        '<table class="tl"><tr><th>rank</th><th>node</th><th>first event</th><th>role</th>'
        f"<th>category</th></tr>{rows}</table>"
    )


def _section(title: str, body: str) -> str:
    """A ``<section>``: its ``<h2>`` title, then ``body`` (HTML)."""
    return f"<section><h2>{title}</h2>{body}</section>"


def _evidence_section(m: ReportModel, verbose: bool) -> list[str]:
    """The evidence lines of a failure (one page part per line, between the section tags)."""
    if m.status == "ok" or not m.evidence:
        return []
    blocks = [_evidence_block(ev, verbose) for ev in m.evidence]
    return ["<section><h2>Evidence</h2>", *blocks, "</section>"]


def _symptoms(m: ReportModel) -> list[str]:
    """The downstream symptoms of a failure."""
    if m.status == "ok" or not m.symptoms:
        return []
    items = "".join(f"<li>{e(s)}</li>" for s in m.symptoms)
    return [_section("Downstream symptoms", f'<ul class="sym">{items}</ul>')]


def _advisory(x: AdvisoryView) -> str:
    """One launch advisory: severity, rule and message, then its fix and evidence."""
    evidence = "".join(f"\n{e(v)}" for v in x.evidence)
    return f"<li><b>{e(x.severity)}</b> {prose(x.line)}<pre>fix: {e(x.fix)}{evidence}</pre></li>"


def _advisories(m: ReportModel) -> list[str]:
    """The launch advisories."""
    if not m.advisories:
        return []
    items = "".join(_advisory(x) for x in m.advisories)
    return [_section("Launch advisories", f"<ul>{items}</ul>")]


def _job(m: ReportModel) -> list[str]:
    """The job's facts and the logs read."""
    facts = [(e(k), e(v)) for k, v in m.facts] + [("logs", e(m.logs))]
    return [_section("Job", _kv(facts))]


def _grid_section(m: ReportModel) -> list[str]:
    """The rank grid, when there are ranks to show."""
    return [_section("Rank grid", _grid(m.grid))] if m.grid.cells else []


def _flight_recorder(m: ReportModel) -> list[str]:
    """The Flight Recorder table, when there were dumps."""
    return [_section("Flight Recorder", _pre(m.flight_recorder))] if m.flight_recorder else []


def _timeline_section(m: ReportModel, verbose: bool) -> list[str]:
    """Each rank's first event (``--verbose`` only)."""
    return [_section("Per-rank timeline", _timeline(m))] if verbose and m.timeline else []


def _attempts(m: ReportModel) -> list[str]:
    """The verdict of each restart attempt."""
    if not m.attempts:
        return []
    items = "".join(
        f"<li>attempt {a.attempt}: <b>{e(a.category)}</b> (rank {e(a.rank)}, "
        f"{a.confidence:.2f}): {prose(a.cause)}</li>"
        for a in m.attempts
    )
    return [_section("Per-attempt verdicts", f"<ul>{items}</ul>")]


def _alternatives(m: ReportModel) -> list[str]:
    """Up to three other explanations that were weighed."""
    if not m.alternatives:
        return []
    items = "".join(
        f"<li><b>{e(a.category)}</b> (rank {e(a.rank)}, {a.confidence:.2f}): {prose(a.cause)}</li>"
        for a in m.alternatives[:3]
    )
    return [_section("Also considered", f"<ul>{items}</ul>")]


def _notes(m: ReportModel) -> list[str]:
    """What went wrong while reading."""
    if not m.problems:
        return []
    items = "".join(f"<li>{e(p)}</li>" for p in m.problems)
    return [_section("Notes", f'<ul class="note">{items}</ul>')]


def _page(m: ReportModel, body: str, version: str) -> str:
    """The whole document around ``body``: head, style, CSP and footer."""
    title = f"mcore-diagnose: {m.category}"
    if m.rank is not None:
        title += f" on rank {m.rank}"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light">\n'
        f"<title>{e(title)}</title>\n"
        f"<style>\n{CSS}\n{_grid_style(m.grid)}\n</style>\n"
        '</head><body><div class="page">\n'
        + body
        + f"\n<footer>mcore-diagnose {e(version)} — post-mortem of {e(m.logs)}</footer>\n"
        "</div></body></html>\n"
    )


def render_html(m: ReportModel, *, verbose: bool = False, version: str = __version__) -> str:
    """The HTML page of ``m``."""
    parts = [
        _verdict(m),
        *_evidence_section(m, verbose),
        *_symptoms(m),
        *_advisories(m),
        *_job(m),
        *_grid_section(m),
        *_flight_recorder(m),
        *_timeline_section(m, verbose),
        *_attempts(m),
        *_alternatives(m),
        *_notes(m),
    ]
    return _page(m, "\n".join(parts), version)


def to_html(d: ReportInput, *, verbose: bool = False) -> str:
    """The HTML page of a diagnosis."""
    return render_html(build_model(d), verbose=verbose)

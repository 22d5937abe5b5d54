"""The triage summary as one self-contained HTML page (``html.escape`` on everything that came
from the logs; no scripts, no external resources)."""

from __future__ import annotations

from typing import Any

from analyzer.triage.model import (
    MIN_NODE_JOBS,
    Summary,
    headline,
    unknown_lines,
    unknown_summary_line,
)
from analyzer.util.safe import html_text

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em;color:#1b1f24}
table{border-collapse:collapse;margin:1em 0;font-size:14px}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa} td.n{text-align:right} code{font-size:12px}
.new{color:#b42318;font-weight:bold} .note{color:#57606a}
"""


def _h(text: Any) -> str:
    """Log-derived text escaped for HTML."""
    return html_text(text)


def _job_links(r: dict[str, Any]) -> str:
    """Example job ids linked to their directories (``file://`` links: open them in the
    browser, or copy the path)."""
    from pathlib import Path

    links = []
    paths = r.get("example_paths") or []
    for i, job in enumerate(r["examples"]):
        path = paths[i] if i < len(paths) else None
        if isinstance(path, str) and path.startswith("/"):
            links.append(f'<a href="{_h(Path(path).as_uri())}" title="{_h(path)}">{_h(job)}</a>')
        else:
            links.append(_h(job))
    return ", ".join(links)


def render_html(s: Summary) -> str:
    """The summary as one self-contained HTML page (no scripts, no external resources)."""
    new_col = s.baseline is not None
    p: list[str] = [
        '<!DOCTYPE html><html><head><meta charset="utf-8">',
        "<title>mcore-diagnose triage</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Triage summary</h1>",
        f"<p>{_h(headline(s))}</p>",
        "<h2>Causes by count</h2>",
    ]
    if s.causes.height:
        p.append(
            "<table><tr><th>jobs</th><th>category</th><th>pattern</th>"
            "<th>cause (first example)</th><th>example jobs</th><th>fingerprint</th>"
            + ("<th>new</th>" if new_col else "")
            + "</tr>"
        )
        for r in s.causes.iter_rows(named=True):
            p.append(
                f'<tr><td class="n">{r["jobs"]}</td><td>{_h(r["category"])}</td>'
                f"<td>{_h(r['pattern_id'])}</td><td>{_h(r['cause'])}</td>"
                f"<td>{_job_links(r)}</td><td><code>{_h(r['fingerprint'])}"
                "</code></td>"
                + (f'<td class="new">{"new" if r.get("new") else ""}</td>' if new_col else "")
                + "</tr>"
            )
        p.append("</table>")
    else:
        p.append("<p>No failures diagnosed.</p>")
    p.append("<h2>Node implication</h2>")
    if s.nodes.height:
        p.append(
            f"<p>Nodes that are the failing node of at least {MIN_NODE_JOBS} jobs "
            "(candidates to drain):</p>"
        )
        p.append(
            "<table><tr><th>node</th><th>jobs</th><th>categories</th><th>example jobs</th></tr>"
        )
        for r in s.nodes.iter_rows(named=True):
            p.append(
                f'<tr><td>{_h(r["node"])}</td><td class="n">{r["jobs"]}</td>'
                f"<td>{_h(', '.join(c for c in r['categories'] if c))}</td>"
                f"<td>{_job_links(r)}</td></tr>"
            )
        p.append("</table>")
    else:
        p.append("<p>No node is the failing node of several jobs.</p>")
    p.append(f"<h2>Unknown</h2><p>{_h(unknown_summary_line(s))}</p>")
    if s.unknowns is not None:
        p.append("<ul>" + "".join(f"<li>{_h(line)}</li>" for line in unknown_lines(s)) + "</ul>")
    if s.listed_jobs():
        p.append("<ul>")
        for r in s.listed_jobs():
            p.append(
                f"<li>{_h(r['status'])}: {_h(r['label'])} (<code>{_h(r['path'])}"
                f"</code>): {_h(r['note'])}</li>"
            )
        p.append("</ul>")
    if s.baseline is not None:
        p.append(
            f"<h2>New and vanished</h2><p>{_h(f'Against {s.baseline}')}: "
            f"{len(s.new)} new fingerprint(s).</p><ul>"
        )
        for fp in s.new:
            p.append(f'<li class="new">new <code>{_h(fp)}</code></li>')
        if s.vanished is not None:
            for r in s.vanished.iter_rows(named=True):
                p.append(
                    f"<li>vanished <code>{_h(r['fingerprint'])}</code> ({r['jobs']} "
                    f"job(s) before): {_h(r['category'])}: {_h(r['cause'])}</li>"
                )
        p.append("</ul>")
    for n in s.notes:
        p.append(f'<p class="note">{_h(n)}</p>')
    p.append("</body></html>")
    return "\n".join(p) + "\n"

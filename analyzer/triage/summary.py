"""The triage summary: causes by count, node implication, unknown share, new versus recurring.

Rendered for the terminal (rich, every piece of log-derived text wrapped in ``Text`` so that
markup in a job path or a cause is printed, never interpreted), as Markdown (escaped) and as one
self-contained HTML page (``html.escape`` on everything that came from the logs).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.decide.fingerprint import FINGERPRINT_VERSION
from analyzer.report.markdown import md
from analyzer.util.safe import clean, html_text

if TYPE_CHECKING:
    import polars as pl

EXAMPLES = 3
"""Example jobs listed per cause and per node."""
MIN_NODE_JOBS = 2
"""A node is implicated when it is the failing node of at least this many jobs."""
UNDIAGNOSED = ("error", "timeout")
META_KEY = "mcore_diagnose_triage"


class TableError(ValueError):
    """A table or part that cannot be read or does not look like a triage table."""


@dataclass
class Summary:
    """Everything the summary shows; the frames are small (one row per cause or node)."""

    total: int
    by_status: dict[str, int]
    causes: pl.DataFrame
    nodes: pl.DataFrame
    undiagnosed: pl.DataFrame
    unknown_cause: int
    unreadable: int
    baseline: str | None = None
    new: list[str] = field(default_factory=list)
    vanished: pl.DataFrame | None = None
    notes: list[str] = field(default_factory=list)
    unknowns: pl.DataFrame | None = None
    """Failures no pattern knows, grouped by template fingerprint (``analyzer.decide.unknown``)."""

    @property
    def failed(self) -> int:
        return self.by_status.get("failed", 0)

    @property
    def left_unknown(self) -> int:
        """Jobs whose cause is not known: unknown cause, nothing readable, error or timeout."""
        return self.unknown_cause + self.unreadable + self.undiagnosed.height

    @property
    def unknown_share(self) -> float:
        return self.left_unknown / self.total if self.total else 0.0


# ------------------------------------------------------------------------------------------
# Reading and writing tables
# ------------------------------------------------------------------------------------------


def table_format(path: Path) -> str:
    """``parquet``, ``csv`` or ``json`` from a file name; ValueError for anything else."""
    suffix = path.suffix.lower()
    fmt = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json"}.get(suffix)
    if fmt is None:
        raise ValueError(
            f"{path}: unknown table format {suffix or '(none)'}; use .parquet, .csv or .json"
        )
    return fmt


def write_table(df: pl.DataFrame, path: Path, meta: dict[str, Any] | None = None) -> None:
    """Write the triage table (format from the suffix; parquet carries ``meta``)."""
    import polars as pl

    from analyzer.util.timefmt import POLARS_FORMAT

    fmt = table_format(path)
    if fmt == "parquet":
        df.write_parquet(path, metadata={META_KEY: json.dumps(meta or {}, sort_keys=True)})
        return
    flat = df.with_columns(
        pl.col(c).dt.to_string(POLARS_FORMAT)
        for c, t in df.schema.items()
        if isinstance(t, pl.Datetime)
    )
    if fmt == "csv":
        flat.write_csv(path)
    else:
        path.write_text(json.dumps(flat.to_dicts(), indent=1, default=str) + "\n", encoding="utf-8")


def read_table(path: Path) -> pl.DataFrame:
    """Read a triage table (parquet, CSV or JSON) into the canonical schema."""
    import polars as pl

    from analyzer.triage.run import polars_schema

    fmt = table_format(path)
    try:
        if fmt == "parquet":
            df = pl.read_parquet(path)
        elif fmt == "csv":
            df = pl.read_csv(path, infer_schema=False)
        else:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, list):
                raise TableError(f"{path}: expected a JSON list of rows")
            df = pl.from_dicts(data, infer_schema_length=None) if data else pl.DataFrame()
    except TableError:
        raise
    except Exception as exc:
        raise TableError(f"{path}: cannot read ({type(exc).__name__}: {exc})") from None
    missing = [c for c in ("path", "status", "fingerprint") if c not in df.columns]
    if missing and df.height:
        raise TableError(f"{path}: not a triage table (no column {', '.join(missing)})")
    schema = polars_schema()
    cols = []
    for c, t in schema.items():
        if c not in df.columns:
            cols.append(pl.lit(None, dtype=t).alias(c))
        elif isinstance(t, pl.Datetime) and not isinstance(df.schema[c], pl.Datetime):
            # CSV/JSON, or a table written before time was a datetime: any ISO 8601 form
            cols.append(pl.lit(_parse_times(df[c])).alias(c))
        else:
            cols.append(pl.col(c).cast(t, strict=False))
    return df.select(cols) if df.width else pl.DataFrame(schema=schema)


def _parse_times(col: pl.Series) -> pl.Series:
    """ISO 8601 strings (``T`` or space, any fraction, an offset dropped) -> naive datetimes."""
    import polars as pl

    from analyzer.lines.timestamps import parse_iso

    stamps = [parse_iso(v) if isinstance(v, str) else None for v in col.cast(pl.Utf8).to_list()]
    values = [s.to_datetime(1970) if s is not None else None for s in stamps]
    return pl.Series(col.name, values, dtype=pl.Datetime("us"))


def read_meta(path: Path) -> dict[str, Any]:
    """The triage metadata of a parquet part (empty when there is none)."""
    import polars as pl

    try:
        raw = pl.read_parquet_metadata(path).get(META_KEY)
        return json.loads(raw) if raw else {}
    except Exception:
        return {}


def merge_tables(paths: list[Path]) -> tuple[pl.DataFrame, list[str]]:
    """Concatenate parts; returns the table (sorted by path) and warnings (missing shards,
    jobs present in several parts)."""
    import polars as pl

    warnings: list[str] = []
    frames = [read_table(p) for p in paths]
    df = pl.concat(frames, how="vertical") if frames else read_table_empty()
    shards: dict[int, set[int]] = {}
    for p in paths:
        spec = read_meta(p).get("shard")
        if spec:
            i, n = (int(x) for x in str(spec).split("/"))
            shards.setdefault(n, set()).add(i)
    if len(shards) > 1:
        warnings.append(
            "the parts come from different shardings (N = "
            + ", ".join(str(n) for n in sorted(shards))
            + ")"
        )
    for n, seen in sorted(shards.items()):
        missing = sorted(set(range(n)) - seen)
        if missing:
            warnings.append(
                f"shard(s) {', '.join(f'{i}/{n}' for i in missing)} missing: "
                "their jobs are not in the table"
            )
    dup = df.group_by("path").len().filter(pl.col("len") > 1)
    if dup.height:
        warnings.append(f"{dup.height} job(s) appear in more than one part; kept the first")
        df = df.unique(subset="path", keep="first", maintain_order=True)
    return df.sort("path"), warnings


def read_table_empty() -> pl.DataFrame:
    import polars as pl

    from analyzer.triage.run import polars_schema

    return pl.DataFrame(schema=polars_schema())


# ------------------------------------------------------------------------------------------
# Summarising
# ------------------------------------------------------------------------------------------


def is_host(node: str | None) -> bool:
    """A node value names a host (not a bare node index, which is local to one job)."""
    return bool(node) and not str(node).isdigit()


def _by_fingerprint(df: pl.DataFrame, *extra: pl.Expr) -> pl.DataFrame:
    """One row per fingerprint: job count, category, pattern, cause, example job ids."""
    import polars as pl

    return (
        df.group_by("fingerprint", maintain_order=True)
        .agg(
            pl.len().alias("jobs"),
            pl.col("category").first(),
            pl.col("pattern_id").first(),
            pl.col("cause").first(),
            pl.col("job_id").head(EXAMPLES).alias("examples"),
            pl.col("path").head(EXAMPLES).alias("example_paths"),
            *extra,
        )
        .sort(["jobs", "fingerprint"], descending=[True, False])
    )


def summarize(
    df: pl.DataFrame,
    baseline: pl.DataFrame | None = None,
    baseline_name: str | None = None,
    min_node_jobs: int = MIN_NODE_JOBS,
) -> Summary:
    """The summary of a triage table (and, with a baseline, what is new and what vanished)."""
    import polars as pl

    by_status = dict(
        sorted(
            (str(s), int(c)) for s, c in df.group_by("status").len().iter_rows() if s is not None
        )
    )
    failed = df.filter(pl.col("status") == "failed").sort("path")
    causes = _by_fingerprint(
        failed.filter(pl.col("fingerprint").is_not_null()),
        pl.col("node").filter(pl.col("node").is_not_null()).n_unique().alias("nodes"),
    )
    host_rows = failed.filter(pl.col("node").is_not_null() & ~pl.col("node").str.contains(r"^\d+$"))
    nodes = (
        host_rows.group_by("node")
        .agg(
            pl.col("path").n_unique().alias("jobs"),
            pl.col("job_id").head(EXAMPLES).alias("examples"),
            pl.col("path").head(EXAMPLES).alias("example_paths"),
            pl.col("category").unique(maintain_order=True).alias("categories"),
            pl.col("fingerprint").n_unique().alias("fingerprints"),
        )
        .filter(pl.col("jobs") >= min_node_jobs)
        .sort(["jobs", "node"], descending=[True, False])
    )
    undiagnosed = (
        df.filter(pl.col("status").is_in(list(UNDIAGNOSED)))
        .select("job_id", "path", "status", "note")
        .sort("path")
    )
    s = Summary(
        total=df.height,
        by_status=by_status,
        causes=causes,
        nodes=nodes,
        undiagnosed=undiagnosed,
        unknown_cause=failed.filter(pl.col("category") == "unknown").height,
        unreadable=by_status.get("unknown", 0),
    )
    s.unknowns = _unknown_groups(failed)
    if baseline is not None:
        _compare(s, failed, baseline, baseline_name or "baseline")
    return s


def _unknown_groups(failed: pl.DataFrame) -> pl.DataFrame | None:
    """One row per unknown-line template: jobs, first seen (time and job), examples."""
    import polars as pl

    if "unknown_fingerprint" not in failed.columns:
        return None
    rows = failed.filter(pl.col("unknown_fingerprint").is_not_null())
    if not rows.height:
        return None
    return (
        rows.sort(["time", "path"], nulls_last=True)
        .group_by("unknown_fingerprint", maintain_order=True)
        .agg(
            pl.len().alias("jobs"),
            pl.col("unknown_template").first().alias("template"),
            pl.col("time").first().alias("first_time"),
            pl.col("job_id").first().alias("first_job"),
            pl.col("job_id").head(EXAMPLES).alias("examples"),
        )
        .sort(["jobs", "unknown_fingerprint"], descending=[True, False])
    )


def unknown_lines(s: Summary) -> list[str]:
    """One sentence per unknown-failure template, most jobs first (plain, unescaped text)."""
    if s.unknowns is None:
        return []
    out = []
    for r in s.unknowns.iter_rows(named=True):
        n = r["jobs"]
        what = f"the same unknown failure in {n} jobs" if n > 1 else "an unknown failure in 1 job"
        when = f"{r['first_time']} " if r["first_time"] else ""
        out.append(
            f"{what}, first seen {when}in job {r['first_job']} "
            f"({r['unknown_fingerprint']}): {_one_line(r['template'], 160)}"
        )
    return out


def _compare(s: Summary, failed: pl.DataFrame, baseline: pl.DataFrame, name: str) -> None:
    import polars as pl

    s.baseline = name
    versions = {int(v) for v in baseline["fingerprint_version"].drop_nulls().unique().to_list()}
    if versions - {FINGERPRINT_VERSION}:
        s.notes.append(
            f"{name} uses fingerprint scheme v{', v'.join(str(v) for v in sorted(versions))}, "
            f"this run v{FINGERPRINT_VERSION}: fingerprints are not comparable, new/vanished "
            "not computed"
        )
        s.baseline = None
        return
    before = baseline.filter((pl.col("status") == "failed") & pl.col("fingerprint").is_not_null())
    old = set(before["fingerprint"].to_list())
    now = set(failed["fingerprint"].drop_nulls().to_list())
    s.new = sorted(now - old)
    s.vanished = _by_fingerprint(
        before.filter(pl.col("fingerprint").is_in(sorted(old - now))).sort("path")
    )
    s.causes = s.causes.with_columns(pl.col("fingerprint").is_in(s.new).alias("new"))


def mark_new(df: pl.DataFrame, s: Summary) -> pl.DataFrame:
    """The table with a ``new`` column (failed rows: fingerprint absent from the baseline)."""
    import polars as pl

    return df.with_columns(
        pl.when(pl.col("status") == "failed")
        .then(pl.col("fingerprint").is_in(s.new))
        .otherwise(None)
        .alias("new")
    )


# ------------------------------------------------------------------------------------------
# Rendering
# ------------------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _headline(s: Summary) -> str:
    order = ["failed", "ok", "unknown", "error", "timeout"]
    keys = order + sorted(k for k in s.by_status if k not in order)
    parts = [f"{s.by_status[k]} {k}" for k in keys if s.by_status.get(k)]
    return f"{s.total} jobs: " + (", ".join(parts) if parts else "none")


def _unknown_line(s: Summary) -> str:
    return (
        f"left unknown: {s.left_unknown} of {s.total} jobs ({_pct(s.unknown_share)}): "
        f"{s.unknown_cause} failed with an unknown cause, {s.unreadable} with nothing "
        f"readable, {s.undiagnosed.height} triage error/timeout"
    )


def _one_line(text: Any, limit: int = 160) -> str:
    t = " ".join(str(text or "").split())
    return t if len(t) <= limit else t[: limit - 1] + "…"


def render_terminal(s: Summary, color: bool = False, width: int = 120) -> str:
    """The summary for a terminal (plain text when ``color`` is False)."""
    import io

    from rich import box
    from rich.console import Console
    from rich.table import Table
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
    con.print(Text("Triage: " + _headline(s), style="bold"))
    has_new = s.baseline is not None
    if s.causes.height:
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
                Text(_one_line(r["cause"], 110)),
                Text(", ".join(r["examples"])),
                fp,
            )
        con.print(t)
    else:
        con.print(Text("No failures diagnosed."))
    if s.nodes.height:
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
        con.print(t)
    else:
        con.print(Text("Node implication: no node is the failing node of several jobs."))
    con.print(Text(_unknown_line(s)))
    for line in unknown_lines(s):
        con.print(Text(f"  {line}"))
    for r in s.undiagnosed.head(10).iter_rows(named=True):
        con.print(Text(f"  {r['status']}: {r['job_id']} ({r['path']}): {_one_line(r['note'])}"))
    if s.undiagnosed.height > 10:
        con.print(Text(f"  ... and {s.undiagnosed.height - 10} more"))
    if s.baseline is not None:
        vanished = s.vanished.height if s.vanished is not None else 0
        con.print(
            Text(f"Against {s.baseline}: {len(s.new)} new fingerprint(s), {vanished} vanished")
        )
        if s.vanished is not None:
            for r in s.vanished.iter_rows(named=True):
                con.print(
                    Text(
                        f"  vanished {r['fingerprint']} ({r['jobs']} job(s) before): "
                        f"{r['category']}: {_one_line(r['cause'], 120)}"
                    )
                )
    for n in s.notes:
        con.print(Text(f"note: {n}"))
    out = buf.getvalue()
    if not color:  # piped text: rich pads table cells to the full width
        out = "\n".join(line.rstrip() for line in out.split("\n"))
    return out


def md_escape(text: Any) -> str:
    """Untrusted text for a Markdown table cell: one line, special characters escaped."""
    return md(clean(text if text is not None else ""))


def render_markdown(s: Summary) -> str:
    """The summary as GitHub-flavoured Markdown."""
    out = ["# Triage summary", "", md_escape(_headline(s)), ""]
    out += ["## Causes by count", ""]
    if s.causes.height:
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
                md_escape(_one_line(r["cause"], 300)),
                md_escape(", ".join(r["examples"])),
                f"`{r['fingerprint']}`",
            ]
            if new_col:
                cells.append("**new**" if r.get("new") else "")
            out.append("| " + " | ".join(cells) + " |")
    else:
        out.append("No failures diagnosed.")
    out += ["", "## Node implication", ""]
    if s.nodes.height:
        out.append(
            f"Nodes that are the failing node of at least {MIN_NODE_JOBS} jobs "
            "(candidates to drain):"
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
    else:
        out.append("No node is the failing node of several jobs.")
    out += ["", "## Unknown", "", md_escape(_unknown_line(s))]
    if s.unknowns is not None:
        out.append("")
        out += [f"- {md_escape(line)}" for line in unknown_lines(s)]
    if s.undiagnosed.height:
        out.append("")
        for r in s.undiagnosed.iter_rows(named=True):
            out.append(
                f"- {md_escape(r['status'])}: {md_escape(r['job_id'])} "
                f"({md_escape(r['path'])}): {md_escape(_one_line(r['note']))}"
            )
    if s.baseline is not None:
        out += [
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
                    f"{md_escape(r['category'])}: {md_escape(_one_line(r['cause']))}"
                )
    for n in s.notes:
        out += ["", f"> {md_escape(n)}"]
    return "\n".join(out) + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em;color:#1b1f24}
table{border-collapse:collapse;margin:1em 0;font-size:14px}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa} td.n{text-align:right} code{font-size:12px}
.new{color:#b42318;font-weight:bold} .note{color:#57606a}
"""


def _h(text: Any) -> str:
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
        f"<p>{_h(_headline(s))}</p>",
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
    p.append(f"<h2>Unknown</h2><p>{_h(_unknown_line(s))}</p>")
    if s.unknowns is not None:
        p.append("<ul>" + "".join(f"<li>{_h(line)}</li>" for line in unknown_lines(s)) + "</ul>")
    if s.undiagnosed.height:
        p.append("<ul>")
        for r in s.undiagnosed.iter_rows(named=True):
            p.append(
                f"<li>{_h(r['status'])}: {_h(r['job_id'])} (<code>{_h(r['path'])}"
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


def summary_format(path: Path) -> str:
    """``markdown``, ``html`` or ``text`` from a summary file's name."""
    suffix = path.suffix.lower()
    if suffix in (".md", ".markdown"):
        return "markdown"
    if suffix in (".html", ".htm"):
        return "html"
    if suffix in (".txt", ".text"):
        return "text"
    raise ValueError(f"{path}: unknown summary format {suffix or '(none)'}; use .md, .html or .txt")


def render(s: Summary, fmt: str) -> str:
    """The summary in ``terminal``/``text``, ``markdown`` or ``html``."""
    if fmt == "markdown":
        return render_markdown(s)
    if fmt == "html":
        return render_html(s)
    return render_terminal(s, color=fmt == "terminal")

"""The triage summary's data model: what the summary shows, computed from a triage table.

Causes by count (one row per fingerprint), node implication (hosts that are the failing node of
several jobs), the unknown share, unknown-failure templates, and, against a baseline table,
new and vanished fingerprints. The renderers (``text_report``, ``markdown_report``,
``html_report``) only format a :class:`Summary`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from analyzer.decide.fingerprint import FINGERPRINT_VERSION

if TYPE_CHECKING:
    import polars as pl

EXAMPLES = 3
"""Example jobs listed per cause and per node."""
MIN_NODE_JOBS = 2
"""A node is implicated when it is the failing node of at least this many jobs."""
UNDIAGNOSED = ("error", "timeout")


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
    unreadable_jobs: pl.DataFrame | None = None
    """The jobs with no log content (status ``unknown``): label, path, status, note."""

    def listed_jobs(self) -> list[dict[str, Any]]:
        """The jobs the summary names one by one: no log content first (with the advice to
        check the log path), then triage errors and timeouts."""
        rows: list[dict[str, Any]] = []
        if self.unreadable_jobs is not None:
            for r in self.unreadable_jobs.iter_rows(named=True):
                why = r["note"] or "no log content"
                rows.append({**r, "status": "unknown",
                             "note": f"{why}; check the log path"})
        rows += list(self.undiagnosed.iter_rows(named=True))
        return rows

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
# Summarising
# ------------------------------------------------------------------------------------------


def is_host(node: str | None) -> bool:
    """A node value names a host (not a bare node index, which is local to one job)."""
    return bool(node) and not str(node).isdigit()


def job_labels(job_ids: list[str | None], paths: list[str]) -> list[str]:
    """How the summary names each job: its id when no other job has it, else the id and the
    end of its path, as many directories as tell the jobs of that id apart (``11 (a)``,
    ``11 (b)``; a requeue's ``11 (attempt_1)``)."""
    by_id: dict[str, list[int]] = {}
    for i, j in enumerate(job_ids):
        by_id.setdefault(str(j or ""), []).append(i)
    out = [str(j or p.rstrip("/").rsplit("/", 1)[-1]) for j, p in zip(job_ids, paths, strict=True)]
    for jid, idx in by_id.items():
        if len(idx) < 2 and jid:
            continue
        parts = [paths[i].rstrip("/").split("/") for i in idx]
        depth = max(len(x) for x in parts)
        k = next((k for k in range(1, depth + 1)
                  if len({"/".join(x[-k:]) for x in parts}) == len(idx)), depth)
        for i, x in zip(idx, parts, strict=True):
            tail = "/".join(x[-k:])
            named = not jid or tail == jid or tail.endswith("/" + jid)  # the id is the dir
            out[i] = tail if named else f"{jid} ({tail})"
    return out


def with_labels(df: pl.DataFrame) -> pl.DataFrame:
    """The table with a ``label`` column (:func:`job_labels`)."""
    import polars as pl

    labels = job_labels(df["job_id"].to_list(), df["path"].to_list())
    return df.with_columns(pl.Series("label", labels, dtype=pl.Utf8))


def _by_fingerprint(df: pl.DataFrame, *extra: pl.Expr) -> pl.DataFrame:
    """One row per fingerprint: job count, category, pattern, cause, example jobs (labels)."""
    import polars as pl

    return (
        df.group_by("fingerprint", maintain_order=True)
        .agg(
            pl.len().alias("jobs"),
            pl.col("category").first(),
            pl.col("pattern_id").first(),
            pl.col("cause").first(),
            pl.col("label").head(EXAMPLES).alias("examples"),
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

    df = with_labels(df)
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
            pl.col("label").head(EXAMPLES).alias("examples"),
            pl.col("path").head(EXAMPLES).alias("example_paths"),
            pl.col("category").unique(maintain_order=True).alias("categories"),
            pl.col("fingerprint").n_unique().alias("fingerprints"),
        )
        .filter(pl.col("jobs") >= min_node_jobs)
        .sort(["jobs", "node"], descending=[True, False])
    )
    undiagnosed = (
        df.filter(pl.col("status").is_in(list(UNDIAGNOSED)))
        .select("job_id", "label", "path", "status", "note")
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
    s.unreadable_jobs = (
        df.filter(pl.col("status") == "unknown").select("job_id", "label", "path", "status", "note")
        .sort("path")
    )
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
            pl.col("label").first().alias("first_job"),
            pl.col("label").head(EXAMPLES).alias("examples"),
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
            f"({r['unknown_fingerprint']}): {one_line(r['template'], 160)}"
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
    before = with_labels(baseline).filter(
        (pl.col("status") == "failed") & pl.col("fingerprint").is_not_null()
    )
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
# Text shared by the renderers
# ------------------------------------------------------------------------------------------


def pct(x: float) -> str:
    """A share as a percentage with one decimal."""
    return f"{100 * x:.1f}%"


def headline(s: Summary) -> str:
    """``N jobs: A failed, B ok, ...`` (the statuses in a fixed order, then the rest)."""
    order = ["failed", "ok", "unknown", "error", "timeout"]
    keys = order + sorted(k for k in s.by_status if k not in order)
    parts = [f"{s.by_status[k]} {k}" for k in keys if s.by_status.get(k)]
    return f"{s.total} job{'s' if s.total != 1 else ''}: " + (", ".join(parts) if parts else "none")


def unknown_summary_line(s: Summary) -> str:
    """How many jobs are left without a known cause, and why."""
    return (
        f"left unknown: {s.left_unknown} of {s.total} job{'s' if s.total != 1 else ''} "
        f"({pct(s.unknown_share)}): "
        f"{s.unknown_cause} failed with an unknown cause, {s.unreadable} with no log "
        f"content, {s.undiagnosed.height} triage error/timeout"
    )


def one_line(text: Any, limit: int = 160) -> str:
    """Text on one line (whitespace collapsed), cut to ``limit`` characters with an ellipsis."""
    t = " ".join(str(text or "").split())
    return t if len(t) <= limit else t[: limit - 1] + "…"

"""The event table as plain text for a terminal or a pipe.

Wide: one row per event (or per rank), Markdown-style columns. When that is wider than the line
(``width``, the terminal's width on the command line), narrow: one block per record, a heading
line (job, rank, node, time) and one indented ``field  value`` line per column, every line cut
to the width.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

_COLS = [
    "time",
    "node",
    "rank",
    "local_rank",
    "role",
    "category",
    "pattern_id",
    "file",
    "line",
    "message",
]
_RANK_COLS = [
    "rank",
    "node",
    "local_rank",
    "first_time",
    "first_role",
    "first_category",
    "events",
    "last_line",
]
_HEAD = ("job", "rank", "node", "local_rank", "time", "first_time")
"""Columns of a narrow block's heading line, in order (the rest get a line each)."""
_HEAD_LABEL = {"local_rank": "local", "first_time": "first", "time": ""}


def table_text(df: pl.DataFrame, *, by_rank: bool = False, width: int | None = None) -> str:
    """Fixed-width rows, one per event (or per rank); long messages are cut. With ``width``,
    a table wider than ``width`` is written one block per record instead (no line longer)."""
    import polars as pl

    first = ["job"] if "job" in df.columns else []  # several jobs in one table
    cols = first + [c for c in (_RANK_COLS if by_rank else _COLS) if c in df.columns]
    extra = [c for c in df.columns if by_rank and c not in cols and c not in ("pattern_id",)]
    view = df.select(cols + extra)
    with pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        fmt_str_lengths=90,
        tbl_width_chars=250,
        tbl_hide_dataframe_shape=True,
        tbl_formatting="ASCII_MARKDOWN",
        tbl_hide_column_data_types=True,
    ):
        wide = str(view) + "\n"
    if width is None or max(map(len, wide.splitlines()), default=0) <= width:
        return wide
    counts = [c for c in extra if view.schema[c].is_integer()]
    if "file" in view.columns and "line" in view.columns:  # one ``at file:line`` field
        at = pl.concat_str(pl.col("file"), pl.col("line").cast(pl.Utf8), separator=":")
        view = view.with_columns(at.alias("file")).drop("line").rename({"file": "at"})
    return narrow_text(view, width, counts=counts)


def cut(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the last one an ellipsis when cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


def hanging(label: str, value: str, width: int | None, exact: bool = False) -> str:
    """``label`` + ``value`` on one line, or wrapped to ``width`` columns with the wrapped lines
    indented under the value (a hanging indent); ``width`` None (a pipe): one line. ``exact``:
    cut at the width rather than at spaces, so the lines joined give the value to the
    character (a regex, a path)."""
    if width is None or len(label) + len(value) <= width:
        return label + value
    import textwrap

    room = max(width - len(label), 20)
    if exact:
        cuts = [value[i : i + room] for i in range(0, len(value), room)]
        return "\n".join((label if i == 0 else " " * len(label)) + c for i, c in enumerate(cuts))
    return textwrap.fill(
        value, len(label) + room, initial_indent=label, subsequent_indent=" " * len(label),
        break_on_hyphens=False, break_long_words=True,
    )


def _value(v: Any) -> str:
    if v is None:
        return "—"
    if hasattr(v, "isoformat"):
        return str(v.isoformat(sep=" ")).removesuffix(".000000").removesuffix("000")
    return " ".join(str(v).split())


def _heading(row: dict[str, Any]) -> str:
    parts = []
    for c in _HEAD:
        if c in row and row[c] is not None and c != "job":
            label = _HEAD_LABEL.get(c, c)
            parts.append(f"{label} {_value(row[c])}".strip())
    return " · ".join(parts) or "—"


def narrow_text(view: pl.DataFrame, width: int, counts: list[str] | None = None) -> str:
    """One block per record, no line longer than ``width``: a heading line (rank, node, local
    rank, time), then ``field  value`` per column; ``counts`` (per-category event counts of the
    by-rank table) share one line, zeros left out. Rows of several jobs get a ``job`` line
    whenever the job changes."""
    width = max(width, 20)
    counts = counts or []
    fields = [c for c in view.columns if c not in _HEAD and c not in counts]
    label_w = max((len(c) for c in fields), default=0)
    if counts:
        label_w = max(label_w, len("by category"))
    out: list[str] = []
    job = None
    for row in view.iter_rows(named=True):
        if row.get("job") is not None and row["job"] != job:
            job = row["job"]
            out.append(cut(f"job {_value(job)}", width))
        elif out:
            out.append("")
        out.append(cut(_heading(row), width))
        for c in fields:
            out.append(cut(f"  {c:<{label_w}}  {_value(row[c])}", width))
        if counts:
            nz = ", ".join(f"{c} {row[c]}" for c in counts if row[c])
            out.append(cut(f"  {'by category':<{label_w}}  {nz or '—'}", width))
    return "\n".join(out) + "\n"

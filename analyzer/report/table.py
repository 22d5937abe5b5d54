"""The event table as plain text for a terminal or a pipe."""

from __future__ import annotations

from typing import TYPE_CHECKING

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


def table_text(df: pl.DataFrame, *, by_rank: bool = False) -> str:
    """Fixed-width rows, one per event (or per rank); long messages are cut."""
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
        return str(view) + "\n"

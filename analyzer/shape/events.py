"""The rank × event table: one polars row per matched line or assembled traceback."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from analyzer.model.event import COLUMN_TYPES, EMPTY, Event, Role, new_event
from analyzer.shape.attribute import Attributed

if TYPE_CHECKING:
    import polars as pl

BASE_COLUMNS: dict[str, str] = COLUMN_TYPES
"""The structural columns and their types (``analyzer.model.event.COLUMN_TYPES``)."""


def build_events(att: Attributed) -> list[Event]:
    """The table's records, in file then line order: each raw event joined to its
    attribution (``analyzer.model.event``). Takes the pairs out of ``att.events`` (which is left
    empty): a large job's raw events are freed as their records are made."""
    out = []
    roles = att.roles
    pairs: list[Any] = att.events
    att.events = []
    for i in range(len(pairs)):
        ev, a = pairs[i]
        pairs[i] = None  # the raw event and its attribution go as their record comes
        out.append(
            new_event(  # Event's fields in order (``model.event.new_event``)
                ev.file,
                ev.line,
                ev.pattern_id,
                ev.category,
                ev.role,
                ev.text,
                ev.offset,
                a.node,
                a.node_index,
                a.host,
                a.rank,
                a.local_rank,
                ev.attempt,
                a.time,
                ev.stamp_inherited,
                ev.stream,
                ev.title,
                ev.level,
                ev.message,
                ev.traceback,
                ev.repeats,
                ev.fields or EMPTY,
                roles.names(ev.pattern_id),
                roles.tags(ev),
                ev.cause,
                ev.fix,
                False,
                a.rank_assumed,
            )
        )
    return out


def to_frame(
    events: Sequence[Event],
    capture_types: Mapping[str, str] | None = None,
    *,
    columns_of: Sequence[Event] | None = None,
) -> pl.DataFrame:
    """The event table as a DataFrame with stable column types.

    Captures get the type the catalog declares (``int`` → Int64; ``float``, ``size`` in bytes
    and ``duration`` in seconds → Float64; a value that does not parse is null); undeclared
    captures stay strings. ``columns_of``: the events whose captures make the columns (default
    ``events``): a table of some of a job's events with the columns of all of them.
    """
    import polars as pl

    from analyzer.catalog.model import convert

    types = {"str": pl.Utf8, "int": pl.Int64, "datetime": pl.Datetime("us"), "bool": pl.Boolean}
    declared = capture_types or {}
    schema: dict[str, Any] = {k: types[v] for k, v in BASE_COLUMNS.items()}
    kinds: dict[str, str] = {}
    for e in events if columns_of is None else columns_of:
        for k in e.captures:
            if k not in schema:
                kind = declared.get(k, "str")
                kinds[k] = kind
                schema[k] = {"str": pl.Utf8, "int": pl.Int64}.get(kind, pl.Float64)
    # One column at a time, each list dropped once it is a Series: the peak is the table plus
    # one column of Python objects, not the whole table twice.
    columns = []
    for k, dtype in schema.items():
        if k in kinds:
            kind = kinds[k]
            values = [convert(kind, e.captures.get(k)) for e in events]
        else:
            values = [getattr(e, k) for e in events]
        columns.append(pl.Series(k, values, dtype=dtype))
        del values
    return pl.DataFrame(columns)


def _lines(ev: pl.DataFrame) -> pl.Expr:
    """Matched lines per event: its ``repeats`` (1 in a table written before the column)."""
    import polars as pl

    if "repeats" in ev.columns:
        return pl.col("repeats").fill_null(1).cast(pl.Int64)
    return pl.lit(1, dtype=pl.Int64)


def by_rank(events: pl.DataFrame) -> pl.DataFrame:
    """One row per rank: node, local rank, first event time and category, counts per category."""
    import polars as pl

    if events.is_empty():
        return pl.DataFrame(
            schema={"rank": pl.Int64, "node": pl.Utf8, "local_rank": pl.Int64, "events": pl.Int64}
        )
    # A rank's first event: the earliest, a root event before a symptom of the same time, then
    # file and line (decide.summary.logged_order is the same order for the grid and JSON).
    ev = (
        events.filter(pl.col("role") != Role.CONTEXT.value)
        .with_columns((pl.col("role") != Role.ROOT.value).alias("_later"))
        .sort(["time", "_later", "file", "line"], nulls_last=True)
        .drop("_later")
    )
    first = ev.group_by("rank", maintain_order=True).agg(
        pl.col("node").drop_nulls().first().alias("node"),
        pl.col("local_rank").drop_nulls().first().alias("local_rank"),
        pl.col("time").first().alias("first_time"),
        pl.col("category").first().alias("first_category"),
        pl.col("role").first().alias("first_role"),
        pl.col("pattern_id").first().alias("first_pattern"),
        _lines(ev).sum().alias("events"),
        pl.col("text").last().alias("last_line"),
    )
    counts = ev.with_columns(_lines(ev).alias("_n")).pivot(
        on="category", index="rank", values="_n", aggregate_function="sum"
    )
    return first.join(counts, on="rank", how="left", nulls_equal=True).sort("rank", nulls_last=True)

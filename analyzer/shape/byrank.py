"""The by-rank view over the whole world: one row per rank, ranks without events included."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analyzer.shape.events import by_rank

if TYPE_CHECKING:
    import polars as pl

    from analyzer.shape.geometry import Geometry


def world_by_rank(events: pl.DataFrame, geo: Geometry | None) -> pl.DataFrame:
    """``shape.events.by_rank`` with one row for every rank of the world (``0 .. world_size-1``) and
    for every other rank an event names, and no row for events without a rank.

    A rank without events has ``events`` and every count 0, null first event, and its node and
    local rank from the launch geometry when the logs show it (host name when known).
    """
    import polars as pl

    base = by_rank(events).filter(pl.col("rank").is_not_null())
    ranks = set(base["rank"].to_list())
    ws = geo.world if geo else None
    if ws:
        ranks.update(range(ws))
    if not ranks:
        return base
    world = pl.DataFrame({"rank": sorted(ranks)}, schema={"rank": base.schema["rank"]})
    per = geo.nproc_per_node if geo else None
    if per:
        labels = _node_labels(events, geo)
        world = world.with_columns(
            pl.Series(
                "_node", [labels.get(r // per) or str(r // per) for r in world["rank"]], pl.Utf8
            ),
            pl.Series("_local", [r % per for r in world["rank"]], base.schema["local_rank"]),
        )
    out = world.join(base, on="rank", how="left")
    if per:
        out = out.with_columns(
            pl.coalesce("node", "_node").alias("node"),
            pl.coalesce("local_rank", "_local").alias("local_rank"),
        ).drop("_node", "_local")
    counts = [c for c in out.columns if c not in _FIRST_COLUMNS]
    out = out.with_columns(pl.col(c).fill_null(0) for c in counts).sort("rank")
    # a category seen only on lines without a rank has no count on any rank
    empty = [c for c in counts if c != "events" and out[c].sum() == 0]
    return out.drop(empty)


def _node_labels(events: pl.DataFrame, geo: Geometry | None) -> dict[int, str]:
    """Node index -> the label the event table uses for it (a host name when known)."""
    labels: dict[int, str] = {}
    if {"node_index", "node"} <= set(events.columns):
        pairs = events.select("node_index", "node").drop_nulls().unique().sort("node_index", "node")
        for idx, node in pairs.iter_rows():
            # A node some of whose lines name its host is that host, whatever the order.
            if labels.get(int(idx), str(idx)) == str(idx):
                labels[int(idx)] = str(node)
    hosts = geo.task_hosts if geo else {}
    if hosts and len(set(hosts.values())) == len(hosts):  # distinct: real host names
        for idx, host in hosts.items():
            labels.setdefault(idx, host)
    return labels


_FIRST_COLUMNS = {
    "job",
    "rank",
    "node",
    "local_rank",
    "first_time",
    "first_category",
    "first_role",
    "first_pattern",
    "last_line",
}


COUNT_EXCLUDED = frozenset(_FIRST_COLUMNS)
"""Columns of the by-rank view that are not counts."""

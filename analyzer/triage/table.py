"""The triage table: its columns, the rows of jobs, and reading, writing and merging tables.

One row per job (:data:`COLUMNS`); written as parquet (with the run's metadata), CSV or JSON,
and read back from any of them into the canonical schema.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.triage.find import Job

if TYPE_CHECKING:
    import polars as pl

META_KEY = "mcore_diagnose_triage"
"""The parquet metadata key of the run's metadata (jobs, roots, shard, fingerprint version)."""

COLUMNS: dict[str, str] = {
    "job_id": "str",
    "path": "str",
    "status": "str",
    "category": "str",
    "pattern_id": "str",
    "rank": "int",
    "rank_certainty": "str",
    "node": "str",
    "time": "datetime",
    "fingerprint": "str",
    "fingerprint_version": "int",
    "cause": "str",
    "fix": "str",
    "phase": "str",
    "world_size": "int",
    "tp": "int",
    "pp": "int",
    "cp": "int",
    "dp": "int",
    "duration_s": "float",
    "last_iteration": "int",
    "confidence": "float",
    "job_name": "str",
    "user": "str",
    "partition": "str",
    "slurm_state": "str",
    "start": "datetime",
    "end": "datetime",
    "note": "str",
    "unknown_fingerprint": "str",
    "unknown_template": "str",
}
"""The triage table's columns, in order. ``time`` is a datetime (the wall clock of the logs; in
JSON and CSV the ISO 8601 form of ``analyzer.util.timefmt``)."""


def polars_schema() -> dict[str, Any]:
    """:data:`COLUMNS` as a polars schema."""
    import polars as pl

    types = {"str": pl.Utf8, "int": pl.Int64, "float": pl.Float64, "datetime": pl.Datetime("us")}
    return {k: types[t] for k, t in COLUMNS.items()}


def empty_row(job: Job) -> dict[str, Any]:
    """A row with only the job's identity filled in."""
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row["job_id"] = job.job_id
    row["path"] = job.key
    return row


def problem_row(job: Job, status: str, note: str) -> dict[str, Any]:
    """The row of a job that could not be diagnosed (``error`` or ``timeout``)."""
    row = empty_row(job)
    row["status"] = status
    row["note"] = note[:1000]
    return row


def to_frame(rows: list[dict[str, Any]]) -> Any:
    """Rows -> the triage table (a polars DataFrame with the columns of :data:`COLUMNS`),
    sorted by path."""
    import polars as pl

    schema = polars_schema()
    data = {k: [r.get(k) for r in rows] for k in schema}
    return pl.DataFrame(data, schema=schema).sort("path")


class TableError(ValueError):
    """A table or part that cannot be read or does not look like a triage table."""


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
    """An empty triage table (no rows, the canonical schema)."""
    import polars as pl

    return pl.DataFrame(schema=polars_schema())

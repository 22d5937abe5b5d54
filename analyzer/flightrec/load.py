"""Read PyTorch Flight Recorder dumps without executing them.

A dump is a pickle (``_dump_fr_trace()``, what the NCCL watchdog writes) or JSON
(``_dump_fr_trace_json()``). Pickles are untrusted input: they are read by a restricted
unpickler whose ``find_class`` refuses every class and function, so only the builtin containers
and scalars a dump holds (dict, list, tuple, str, int, float, bool, None) can come out of it,
and the size of the file and the nesting of what it holds are bounded. Every problem is one
clear line, never a traceback.
"""

from __future__ import annotations

import io
import json
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex

MAX_DUMP_BYTES = 64 << 20
"""Largest dump read (a full 20,000-entry buffer with frames is a few MiB)."""
MAX_DEPTH = 32
"""Deepest nesting of containers accepted (a dump needs about 6)."""
MAX_ITEMS = 5_000_000
"""Most containers and scalars accepted in one dump."""

DUMP_NAME = regex.compile(r"^(?P<prefix>.*?_?trace_rank_)(?P<rank>\d{1,7})(?P<json>\.json)?$")
"""``<prefix>_trace_rank_<N>`` (torch's default ``nccl_trace_rank_``), optionally ``.json``."""
PICKLE_PROTOCOLS = (b"\x02", b"\x03", b"\x04", b"\x05")
_REQUIRED = ("entries",)


class DumpError(ValueError):
    """A dump that cannot be used, with a one-line reason."""


class _Refusing(pickle.Unpickler):
    """An unpickler that resolves no global: classes, functions and modules are refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise DumpError(
            f"refers to {module}.{name}: a Flight Recorder dump holds only plain data, "
            "so this pickle is not one (it was not run)"
        )

    def persistent_load(self, pid: Any) -> Any:
        raise DumpError("uses persistent ids: not a Flight Recorder dump (it was not run)")


@dataclass
class Dump:
    """One rank's dump, as read."""

    rank: int
    path: str
    """Path as given to the loader (relative to the job directory when discovered)."""
    fmt: str
    """``pickle`` or ``json``."""
    version: str
    entries: list[dict[str, Any]]
    pg_config: dict[str, dict[str, Any]] = field(default_factory=dict)
    pg_status: dict[str, dict[str, Any]] = field(default_factory=dict)
    mtime: float | None = None


@dataclass
class DumpSet:
    """Every dump found for a job, and what went wrong."""

    dumps: dict[int, Dump] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    duplicates: list[tuple[int, str]] = field(default_factory=list)
    """(rank, path) of JSON dumps not used because the same rank's pickle was there."""

    @property
    def ranks(self) -> list[int]:
        """Ranks with a usable dump."""
        return sorted(self.dumps)

    @property
    def versions(self) -> list[str]:
        """Dump format versions seen (``version`` key), sorted."""
        return sorted({d.version for d in self.dumps.values()})


def _check_shape(obj: Any) -> None:
    """Bound nesting depth and item count; only plain containers and scalars pass."""
    stack: list[tuple[Any, int]] = [(obj, 0)]
    seen = 0
    while stack:
        o, depth = stack.pop()
        seen += 1
        if seen > MAX_ITEMS:
            raise DumpError(f"holds more than {MAX_ITEMS:,} values: refused as too large")
        if isinstance(o, (str, int, float, bool, bytes)) or o is None:
            continue
        if depth >= MAX_DEPTH:
            raise DumpError(f"nested deeper than {MAX_DEPTH} levels: refused")
        if isinstance(o, dict):
            for k, v in o.items():
                stack.append((k, depth + 1))
                stack.append((v, depth + 1))
        elif isinstance(o, (list, tuple)):
            stack.extend((x, depth + 1) for x in o)
        else:
            raise DumpError(f"holds a {type(o).__name__}: not plain data")


def parse_dump(data: bytes) -> tuple[dict[str, Any], str]:
    """Decode a dump's bytes (pickle or JSON) into a dict; ``DumpError`` if that fails."""
    if len(data) > MAX_DUMP_BYTES:
        raise DumpError(f"{len(data):,} bytes, over the {MAX_DUMP_BYTES >> 20} MiB limit")
    if data[:1] == b"\x80" and data[1:2] in PICKLE_PROTOCOLS:
        fmt = "pickle"
        try:
            obj = _Refusing(io.BytesIO(data)).load()
        except DumpError:
            raise
        except RecursionError:
            raise DumpError(f"nested deeper than {MAX_DEPTH} levels: refused") from None
        except (pickle.UnpicklingError, EOFError) as exc:
            raise DumpError(f"truncated or corrupt pickle ({exc})") from None
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, MemoryError) as exc:
            raise DumpError(f"corrupt pickle ({type(exc).__name__}: {exc})") from None
    elif data.lstrip()[:1] == b"{":
        fmt = "json"
        try:
            obj = json.loads(data)
        except RecursionError:
            raise DumpError(f"nested deeper than {MAX_DEPTH} levels: refused") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DumpError(f"truncated or corrupt JSON ({exc})") from None
    else:
        raise DumpError("neither a pickle nor JSON: not a Flight Recorder dump")
    _check_shape(obj)
    if not isinstance(obj, dict) or not all(k in obj for k in _REQUIRED):
        raise DumpError("no 'entries' key: not a Flight Recorder dump")
    return obj, fmt


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.lstrip("-").isdecimal():
        return int(v)
    return None


def _clean_entries(raw: Any) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise DumpError("'entries' is not a list")
    return [e for e in raw if isinstance(e, dict)]


def load_dump(path: Path, rank: int | None = None, shown: str | None = None) -> Dump:
    """Read one dump file; the rank comes from the file name unless given."""
    shown = shown or str(path)
    if rank is None:
        m = DUMP_NAME.match(path.name)
        if not m:
            raise DumpError(f"{shown}: cannot tell the rank from the name (want *_trace_rank_N)")
        rank = int(m["rank"])
    try:
        size = path.stat().st_size
        if size > MAX_DUMP_BYTES:
            raise DumpError(f"{size:,} bytes, over the {MAX_DUMP_BYTES >> 20} MiB limit")
        with open(path, "rb") as fh:  # never more than the limit, even if it grew
            data = fh.read(MAX_DUMP_BYTES + 1)
        mtime = path.stat().st_mtime
    except OSError as exc:
        raise DumpError(f"cannot read ({exc.strerror or exc})") from None
    obj, fmt = parse_dump(data)
    pg_config = obj.get("pg_config")
    pg_status = obj.get("pg_status")
    if not isinstance(pg_config, dict):
        pg_config = {}
    if not isinstance(pg_status, dict):
        pg_status = {}
    return Dump(
        rank=rank,
        path=shown,
        fmt=fmt,
        version=str(obj.get("version", "?")),
        entries=_clean_entries(obj["entries"]),
        pg_config={str(k): v for k, v in pg_config.items() if isinstance(v, dict)},
        pg_status={str(k): v for k, v in pg_status.items() if isinstance(v, dict)},
        mtime=mtime,
    )


def is_dump_name(name: str) -> bool:
    """Whether a file name follows the Flight Recorder pattern ``*_trace_rank_<N>[.json]``."""
    return DUMP_NAME.match(name) is not None


def looks_like_dump(head: bytes, name: str) -> bool:
    """Whether a file (its first KiB and its name) is a Flight Recorder dump candidate."""
    pickled = head[:1] == b"\x80" and head[1:2] in PICKLE_PROTOCOLS
    if is_dump_name(name):
        return pickled or head.lstrip()[:1] == b"{"
    return pickled and b"version" in head and (b"pg_config" in head or b"entries" in head)


def find_dumps(root: Path) -> list[Path]:
    """Dump files under ``root`` (a directory or one file), by name, sorted."""
    if root.is_file():
        return [root]
    out = []
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            if is_dump_name(f):
                out.append(Path(dirpath) / f)
    return sorted(out)


def load_dumps(paths: list[tuple[Path, str]]) -> DumpSet:
    """Load dumps given as (path, shown name); the same rank twice keeps the newer file."""
    out = DumpSet()
    for path, shown in paths:
        try:
            d = load_dump(path, shown=shown)
        except DumpError as exc:
            msg = str(exc)
            out.problems.append(msg if msg.startswith(shown) else f"{shown}: {msg}")
            continue
        old = out.dumps.get(d.rank)
        if old is None:
            out.dumps[d.rank] = d
        elif old.fmt != d.fmt:  # the same buffer as pickle and JSON: the pickle has frames
            keep = old if old.fmt == "pickle" else d
            out.dumps[d.rank] = keep
            out.duplicates.append((d.rank, (d if keep is old else old).path))
        else:
            keep, drop = (d, old) if (d.mtime or 0) >= (old.mtime or 0) else (old, d)
            out.problems.append(
                f"{drop.path}: a second dump of rank {d.rank}; using the newer {keep.path}"
            )
            out.dumps[d.rank] = keep
    return out


def status_int(d: Dump, pg_id: str, key: str) -> int | None:
    """A ``pg_status`` counter as an int (JSON dumps write them as strings)."""
    return _as_int(d.pg_status.get(pg_id, {}).get(key))

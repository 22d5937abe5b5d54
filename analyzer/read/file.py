"""Read one log file and turn its candidate lines into raw events.

The reader has three parts, as ripgrep separates searcher, matcher and sink:

- ``search.py``, the searcher: the file in blocks of whole lines (gzip as a stream, giant lines
  in pieces), line numbers and file offsets, and the stream's clock (the timestamp an undated
  line inherits, looked up across block boundaries);
- ``match.py``, the matcher: a byte-level prefilter finds the lines holding a catalog needle;
  only those are decoded, stripped of prefixes and asked of the patterns whose needles they
  hold (with bounded caches for lines that repeat verbatim);
- ``builder.py``, the event builder: raw events from matched lines, Python tracebacks assembled
  into one event by a state machine that carries across blocks, and repeated events bounded
  per writer and pattern (``fold.py``), so memory does not grow with the number of hits.

:class:`FileScanner` wires them together for one catalog and reuses them for every file.
"""

from __future__ import annotations

import functools
import gzip
import json
import zlib
from collections.abc import Iterable

from analyzer.catalog.model import Catalog, Pattern
from analyzer.read.builder import EventBuilder
from analyzer.read.discover import LogFile
from analyzer.read.match import CACHE_LINES, CACHE_MAX_LINE, LineMatcher
from analyzer.read.notebook import is_notebook, plain_block
from analyzer.read.prefilter import Prefilter, StampSieve
from analyzer.read.records import FileScan, RawEvent
from analyzer.read.search import MAX_LINE_BYTES, Block, Searcher, StreamClock
from analyzer.read.tracebacks import EXC_LINE, TRACEBACK_MAX_LINES, TRACEBACK_START
from analyzer.read.wrap import hard_wrap_width, unwrap_block

BLOCK_BYTES = 8 << 20
"""Bytes read at a time (a parameter of :class:`FileScanner`; tests use tiny blocks)."""

__all__ = [
    "BLOCK_BYTES",
    "CACHE_LINES",
    "CACHE_MAX_LINE",
    "EXC_LINE",
    "MAX_LINE_BYTES",
    "TRACEBACK_MAX_LINES",
    "TRACEBACK_START",
    "FileScan",
    "FileScanner",
    "RawEvent",
    "traceback_pattern",
]


def traceback_pattern(catalog: Catalog | None = None) -> Pattern:
    """The pattern of the event the reader assembles for a traceback no other pattern claims
    (``Catalog.traceback``: tag ``uncatalogued``, ``python.traceback``): ``catalog``'s, else
    the built-in catalog's."""
    return (_builtin_catalog() if catalog is None else catalog).traceback


@functools.cache
def _builtin_catalog() -> Catalog:
    from analyzer.catalog.load import load_catalog

    return load_catalog(use_env=False)


def read_problem(lf: LogFile, exc: BaseException, bytes_read: int) -> str:
    """The one-line warning for a file whose reading stopped at ``exc`` after ``bytes_read``
    bytes (decompressed bytes for a ``.gz``), which were read."""
    if lf.compressed and isinstance(exc, EOFError):
        what = "compressed file ends early (cut short before gzip's end-of-stream marker)"
    elif lf.compressed:
        what = f"compressed file is corrupt ({exc})"
    else:
        what = f"read error ({getattr(exc, 'strerror', None) or exc})"
    if not bytes_read:
        return f"{lf.rel}: {what}; nothing in it could be read"
    unit = "bytes that decompressed" if lf.compressed else "bytes before it"
    return f"{lf.rel}: {what}; read the {bytes_read:,} {unit}"


class FileScanner:
    """Scan files with one catalog and prefilter (build once, reuse for every file)."""

    def __init__(self, catalog: Catalog, block_bytes: int | None = None) -> None:
        self.catalog = catalog
        self.block_bytes = block_bytes
        """None: the module's ``BLOCK_BYTES`` at scan time."""
        self.matcher = LineMatcher(catalog)
        self.stamps = StampSieve()

    @property
    def prefilter(self) -> Prefilter:
        """The matcher's byte-level prefilter."""
        return self.matcher.prefilter

    def scan(self, lf: LogFile) -> FileScan:
        """Scan one file; unreadable or corrupt input becomes ``FileScan.problem``."""
        out = FileScan(lf)
        if lf.is_error_json:
            self._read_error_json(lf, out)
        else:
            self._read_log(lf, out)
        out.disabled = self.matcher.disabled
        return out

    def _read_log(self, lf: LogFile, out: FileScan) -> None:
        search = Searcher(lf, self.block_bytes or BLOCK_BYTES)
        clock = StreamClock(self.stamps)
        builder = EventBuilder(lf, self.matcher, clock)

        matcher = self.matcher
        matcher.quoted = False
        matcher.pasted = ""
        matcher.numbered = False
        matcher.notebook = False

        wrap: list[int | None] = [None]

        def read(blocks: Iterable[Block]) -> None:
            for blk in blocks:
                if blk.offset == 0:
                    matcher.notebook = is_notebook(blk.data)
                if matcher.notebook:
                    blk.data = plain_block(blk.data)
                if blk.offset == 0:
                    wrap[0] = hard_wrap_width(blk.data)
                if wrap[0]:
                    blk.data = unwrap_block(blk.data, wrap[0])
                if blk.offset == 0:  # a paste's margin or a wrapper's tag, on whole lines
                    matcher.read_head(blk.data)
                builder.block(blk, matcher.candidates(blk.data))
                clock.end_block(blk)

        try:
            read(search.blocks(clock))
        except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
            out.problem = read_problem(lf, exc, search.bytes_read)
            read(search.rest(clock))
        out.events = builder.finish()
        out.bytes_read = search.bytes_read
        out.years = clock.years

    def _read_error_json(self, lf: LogFile, out: FileScan) -> None:
        try:
            raw = (
                lf.path.read_bytes() if not lf.compressed else gzip.decompress(lf.path.read_bytes())
            )
            out.bytes_read = len(raw)
            out.error_json = json.loads(raw.decode("utf-8", errors="replace"))
            from analyzer.read.errorjson import error_json_event

            ev = error_json_event(lf, out.error_json or {}, self.catalog)
            if ev is not None:
                out.events.append(ev)
        except (OSError, ValueError, EOFError, zlib.error, AttributeError) as exc:
            out.problem = f"{lf.rel}: not a readable torchelastic error.json ({exc})"

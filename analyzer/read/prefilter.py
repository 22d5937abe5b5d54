"""Find the lines worth a regex: one multi-literal search over raw bytes.

Hyperscan (Intel's SIMD literal matcher) does the search where it is installed; elsewhere
``ahocorasick_rs`` (a Rust Aho-Corasick automaton, wheels for every platform) if installed,
else a single ``regex`` alternation: slower, with the same lines found. Measured on the
benchmark job with 368 needles, one core: Hyperscan 1.3 GB/s, ahocorasick_rs 0.17 GB/s,
``regex`` alternation under 1 MB/s (``benchmarks/bench.py --engines``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

import regex

_hs: Any = None
_ac: Any = None
try:  # pragma: no cover - depends on the platform wheel
    import hyperscan

    _hs = hyperscan
except ImportError:  # pragma: no cover
    pass

try:  # pragma: no cover - optional
    import ahocorasick_rs

    _ac = ahocorasick_rs
except ImportError:  # pragma: no cover
    pass

_D = rb"(?:[0-9]|[\x80-\xff]{2,4})"
STAMP_SIGNATURE = (
    _D + _D + rb":" + _D + _D + rb":" + _D + _D + rb"|[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]"
)
"""Bytes every line with a parsable timestamp contains: ``\\d\\d:\\d\\d:\\d\\d`` in UTF-8 (a
Unicode digit is an ASCII digit or 2-4 bytes >= 0x80), or a C0/C1 control character (ESC and
CSI included) that ``clean_line`` may remove from between the digits."""

STAMP_SUPERSET = rb":[0-9\x80-\xff][0-9\x80-\xff]:|[\x00-\x08\x0b-\x1f\x7f-\xff]"
"""What the sieve looks for without Hyperscan: a superset of ``STAMP_SIGNATURE`` (its middle
``:dd:``, or any byte that is not printable ASCII), which Python's ``re`` finds about five times
faster than the signature itself (22 against 4 MB/s on NCCL INFO lines). Only speed depends on
the choice: the lines it names are parsed all the same."""

ENGINE_ENV = "MCORE_DIAGNOSE_PREFILTER"
"""Environment variable naming the engine to use (``hyperscan``, ``ahocorasick`` or
``regex``) where more than one is installed: the benchmark times the non-Hyperscan path
this way on a machine that has Hyperscan. An engine that is not installed, or any other
value, leaves the default (the fastest installed)."""


def _engines() -> tuple[Any, Any]:
    """(hyperscan, ahocorasick_rs) modules to use, each None when not installed or not
    chosen (``ENGINE_ENV``)."""
    want = os.environ.get(ENGINE_ENV, "").strip().lower()
    if want == "ahocorasick" and _ac is not None:
        return None, _ac
    if want == "regex":
        return None, None
    return _hs, _ac


class Prefilter:
    """Report the byte offsets of needle occurrences in a buffer."""

    def __init__(self, needles: Sequence[str]) -> None:
        self.needles = [n.encode("utf-8") for n in needles]
        self.engine = "none"
        self._db = None
        self._ac = None
        self._rx = None
        if not self.needles:
            return
        hs, ac = _engines()
        if hs is not None:
            db = hs.Database(mode=hs.HS_MODE_BLOCK)
            exprs = [regex.escape(n, literal_spaces=True) for n in self.needles]
            db.compile(
                expressions=exprs,
                ids=list(range(len(exprs))),
                elements=len(exprs),
                flags=[0] * len(exprs),
            )
            self._db = db
            self.engine = "hyperscan"
        elif ac is not None:
            self._ac = ac.BytesAhoCorasick(self.needles)
            self.engine = "ahocorasick"
        else:
            alt = b"|".join(regex.escape(n) for n in sorted(self.needles, key=len, reverse=True))
            self._rx = regex.compile(alt)
            self.engine = "regex"

    def find(self, data: bytes) -> list[int]:
        """End offsets of needle occurrences in ``data`` (unsorted, may repeat per line)."""
        if self._db is not None:
            ends: list[int] = []

            def on_match(_id: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
                ends.append(to)

            self._db.scan(data, match_event_handler=on_match)
            return ends
        if self._ac is not None:
            return [e for _i, _s, e in self._ac.find_matches_as_indexes(data, overlapping=True)]
        if self._rx is not None:
            return [m.end() for m in self._rx.finditer(data)]
        return []

    def find_all(self, data: bytes) -> list[tuple[int, int]] | None:
        """``(end offset, needle index)`` of *every* occurrence, overlapping ones included.

        None where the engine cannot promise that (the ``regex`` fallback reports
        non-overlapping matches only); callers then use :meth:`find`.
        """
        if self._ac is not None:
            return [(e, i) for i, _s, e in self._ac.find_matches_as_indexes(data, overlapping=True)]
        if self._db is None:
            return None
        hits: list[tuple[int, int]] = []

        def on_match(nid: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            hits.append((to, nid))

        self._db.scan(data, match_event_handler=on_match)
        return hits


class StampSieve:
    """Where in a buffer a line may carry a timestamp (a superset: the lines it names still
    have to be parsed): Hyperscan where it is installed, else one ``re`` pass for
    ``STAMP_SUPERSET`` (no match crosses a newline, so every line holding a signature is named
    either way)."""

    def __init__(self) -> None:
        self._db = None
        self._rx: Any = None
        hs = _engines()[0]
        if hs is not None:
            db = hs.Database(mode=hs.HS_MODE_BLOCK)
            db.compile(expressions=[STAMP_SIGNATURE], ids=[0], elements=1, flags=[0])
            self._db = db
        else:
            self._rx = re.compile(STAMP_SUPERSET)

    @property
    def available(self) -> bool:
        """Whether :meth:`ends` works here (always: Hyperscan or ``re``)."""
        return self._db is not None or self._rx is not None

    def ends(self, data: bytes) -> list[int] | None:
        """End offsets of signature matches in ``data``: at least one on every line that
        holds one (every match with Hyperscan)."""
        if self._db is None:
            return [m.end() for m in self._rx.finditer(data)] if self._rx is not None else None
        ends: list[int] = []

        def on_match(_id: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            ends.append(to)

        self._db.scan(data, match_event_handler=on_match)
        return ends

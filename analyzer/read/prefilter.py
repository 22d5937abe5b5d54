"""Find the lines worth a regex: one multi-literal search over raw bytes.

Hyperscan (Intel's SIMD literal matcher) does the search where it is installed; elsewhere
``ahocorasick_rs`` (a Rust Aho-Corasick automaton, wheels for every platform) if installed,
else a single ``regex`` alternation: slower, with the same lines found. Measured on the
benchmark job with 368 needles, one core: Hyperscan 1.3 GB/s, ahocorasick_rs 0.17 GB/s,
``regex`` alternation under 1 MB/s (``benchmarks/bench.py --engines``).
"""

from __future__ import annotations

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
        if _hs is not None:
            db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
            exprs = [regex.escape(n, literal_spaces=True) for n in self.needles]
            db.compile(
                expressions=exprs,
                ids=list(range(len(exprs))),
                elements=len(exprs),
                flags=[0] * len(exprs),
            )
            self._db = db
            self.engine = "hyperscan"
        elif _ac is not None:
            self._ac = _ac.BytesAhoCorasick(self.needles)
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
    have to be parsed). Hyperscan only; ``ends`` returns None without it."""

    def __init__(self) -> None:
        self._db = None
        if _hs is not None:
            db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
            db.compile(expressions=[STAMP_SIGNATURE], ids=[0], elements=1, flags=[0])
            self._db = db

    @property
    def available(self) -> bool:
        """Whether :meth:`ends` works here (Hyperscan is installed)."""
        return self._db is not None

    def ends(self, data: bytes) -> list[int] | None:
        """End offsets of every signature match in ``data``, or None when unavailable."""
        if self._db is None:
            return None
        ends: list[int] = []

        def on_match(_id: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            ends.append(to)

        self._db.scan(data, match_event_handler=on_match)
        return ends

"""Find the lines worth a regex: one multi-literal search over raw bytes.

Hyperscan (Intel's SIMD literal matcher) does the search where it is installed; elsewhere a
single ``regex`` alternation does, slower but with the same results.
"""

from __future__ import annotations

from collections.abc import Sequence

import regex

try:  # pragma: no cover - depends on the platform wheel
    import hyperscan as _hs
except ImportError:  # pragma: no cover
    _hs = None


class Prefilter:
    """Report the byte offsets of needle occurrences in a buffer."""

    def __init__(self, needles: Sequence[str]) -> None:
        self.needles = [n.encode("utf-8") for n in needles]
        self.engine = "none"
        self._db = None
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
        if self._rx is not None:
            return [m.end() for m in self._rx.finditer(data)]
        return []

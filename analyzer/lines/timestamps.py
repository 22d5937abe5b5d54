"""Parse the timestamps that launchers, loggers and schedulers print.

Formats: ISO-8601 and its cousins (SLURM ``2026-12-02T15:44:25``, torchelastic
``2026-12-02_15:34:58``, Python logging ``2026-12-02 15:34:58,803``, Megatron/NCCL
``[2026-12-02 15:34:58.123456]``) and the glog-style stamps of PyTorch's C++ and Python loggers
(``E1202 15:34:58.764000``, no year; the C++ month-day is not zero-padded: ``E709``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import regex

_ISO = regex.compile(
    r"(?<!\d)(?P<y>20\d\d)-(?P<mo>\d\d)-(?P<d>\d\d)[T _](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
    r"(?:[.,](?P<f>\d{1,9}))?"
)
_GLOG = regex.compile(
    r"(?<![\w])[FEWIVC](?P<md>\d{3,4}) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)\.(?P<f>\d{6,9})\b"
)


@dataclass(frozen=True, slots=True)
class Stamp:
    """A wall-clock time as printed; ``year`` is None for glog-style stamps."""

    year: int | None
    month: int
    day: int
    hour: int
    minute: int
    second: int
    micro: int = 0

    def to_datetime(self, default_year: int) -> datetime | None:
        """The stamp as a naive datetime, with ``default_year`` where none was printed."""
        try:
            return datetime(
                self.year or default_year,
                self.month,
                self.day,
                self.hour,
                self.minute,
                self.second,
                self.micro,
            )
        except ValueError:
            return None


def _fraction_to_micro(frac: str | None) -> int:
    if not frac:
        return 0
    return int((frac + "000000")[:6])


def parse_iso(text: str) -> Stamp | None:
    """The first ISO-like timestamp in ``text``."""
    m = _ISO.search(text)
    if not m:
        return None
    return Stamp(
        int(m["y"]),
        int(m["mo"]),
        int(m["d"]),
        int(m["h"]),
        int(m["mi"]),
        int(m["s"]),
        _fraction_to_micro(m["f"]),
    )


def parse_glog(text: str) -> Stamp | None:
    """The first glog-style stamp (``E1202 15:34:58.764000``) in ``text``.

    A 9-digit fraction comes from PyTorch's C++ logger, which takes it from the monotonic
    clock: it is dropped, only the seconds are wall-clock time.
    """
    m = _GLOG.search(text)
    if not m:
        return None
    md = int(m["md"])
    micro = 0 if len(m["f"]) == 9 else _fraction_to_micro(m["f"])
    month, day = divmod(md, 100)
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    return Stamp(None, month, day, int(m["h"]), int(m["mi"]), int(m["s"]), micro)


def find_stamp(text: str, limit: int = 160) -> Stamp | None:
    """A timestamp near the start of ``text`` (ISO first, then glog), or None."""
    head = text[:limit]
    return parse_iso(head) or parse_glog(head)

"""Read an event's captures by the role its pattern declares, and its pattern's tags."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType

import regex

from analyzer.catalog.model import Catalog, Pattern
from analyzer.read.file import RawEvent

_ADDRESS = regex.compile(r"[\d.]+|[0-9a-fA-F:]+")


class Roles:
    """Read an event's captures by their declared role and its pattern's tags."""

    def __init__(self, catalog: Catalog | None) -> None:
        self._by_id: dict[str, Pattern] = dict(catalog.by_id) if catalog else {}
        self._names: dict[str, Mapping[str, str]] = {}
        """Per pattern id: role -> the name of the capture declaring it (the catalog allows
        one per role), built once per pattern instead of once per event."""

    def tags(self, ev: RawEvent) -> frozenset[str]:
        """The tags of the event's pattern."""
        p = self._by_id.get(ev.pattern_id)
        return p.tags if p else frozenset()

    def names(self, pattern_id: str) -> Mapping[str, str]:
        """Role -> the name of the pattern's capture that declares it (one shared table per
        pattern; ``Event.role_names``)."""
        table = self._names.get(pattern_id)
        if table is None:
            p = self._by_id.get(pattern_id)
            found = {c.role: c.name for c in p.captures.values() if c.role} if p else {}
            table = self._names[pattern_id] = MappingProxyType(found)
        return table

    def get(self, ev: RawEvent, role: str) -> str | None:
        """The captured value with this role, or None."""
        table = self._names.get(ev.pattern_id)
        if table is None:
            table = self.names(ev.pattern_id)
        name = table.get(role)
        return (ev.fields.get(name) or None) if name else None

    def int(self, ev: RawEvent, role: str) -> int | None:
        """The captured value with this role as an integer, or None."""
        v = self.get(ev, role)
        try:
            return int(v) if v is not None else None
        except ValueError:
            return None


def task_ids(spec: str) -> list[int]:
    """srun task ids from ``3``, ``0,2-3`` or ``[0-1]``."""
    out: list[int] = []
    for part in spec.strip("[]").split(","):
        lo, _, hi = part.partition("-")
        if lo.isdecimal() and (not hi or hi.isdecimal()):
            out.extend(range(int(lo), int(hi or lo) + 1))
    return out


@lru_cache(maxsize=4096)
def short_host(host: str | None) -> str | None:
    """SLURM and NCCL print short hostnames, torchrun the FQDN: compare the short form."""
    if not host or _ADDRESS.fullmatch(host):
        return host
    return host.split(".", 1)[0]

"""The rank grid: one cell per rank, grouped by node, by each rank's first event."""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.verdict import Diagnosis

CATEGORY_STYLE = {
    "root": "bold white on red",
    "symptom": "yellow",
    "none": "green",
    "unseen": "dim",
}


@dataclass(frozen=True)
class Cell:
    """One rank's cell."""

    rank: int
    kind: str
    """``root`` (the verdict's rank), ``symptom``, ``none`` (no event), ``unseen``."""
    category: str | None

    @property
    def mark(self) -> str:
        """One character for text grids."""
        return {"root": "X", "symptom": "s", "none": "·", "unseen": "?"}[self.kind]


def grid_cells(d: Diagnosis) -> list[tuple[str, list[Cell]]]:
    """Cells grouped by node label, nodes and ranks in order."""
    culprit = d.verdict.rank
    groups: dict[str, list[Cell]] = {}
    for rk, info in sorted(d.ranks.items()):
        if rk == culprit:
            kind = "root"
        elif info.get("role") in ("root", "symptom"):
            kind = "symptom"
        elif info.get("role") is None:
            kind = "none"
        else:
            kind = "symptom"
        node = info.get("node") or "?"
        groups.setdefault(str(node), []).append(Cell(rk, kind, info.get("category")))
    return sorted(groups.items(), key=lambda kv: min(c.rank for c in kv[1]))

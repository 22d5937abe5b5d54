"""The rank grid: one cell per rank, grouped by node, marked by each rank's first event.

A cell's *kind* is ``culprit`` (the verdict's rank), ``root`` (another rank whose first event
could be a cause), ``symptom`` (its first event followed a failure elsewhere) or ``none`` (no
event: the rank ran on, hung silently, or left no line). Each (kind, category) pair gets one
character, so the grid reads the same in plain text as in colour: ``X`` is the culprit,
upper-case letters other root events, lower-case letters symptoms, ``·`` no event.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from analyzer.decide.verdict import RankRow
from analyzer.model.event import Role
from analyzer.report.input import ReportInput, diagnosis_of
from analyzer.util.safe import clean
from analyzer.util.timefmt import iso

CULPRIT_MARK = "X"
NONE_MARK = "·"



class Kind(StrEnum):
    """What a rank's cell shows, in the legend's order: the first failing rank, a rank whose
    first event is a root or a symptom, a rank without events."""

    CULPRIT = "culprit"
    ROOT = "root"
    SYMPTOM = "symptom"
    NONE = "none"


KIND_LABEL = {
    Kind.CULPRIT: "first failing rank",
    Kind.ROOT: "other root event",
    Kind.SYMPTOM: str(Kind.SYMPTOM),
    Kind.NONE: "no event",
}

# Rich styles for the terminal and colours for HTML, per kind, then by category order.
CULPRIT_STYLE = "bold white on red"
ROOT_STYLES = ("bold red", "bold magenta", "red", "magenta")
SYMPTOM_STYLES = ("yellow", "cyan", "blue", "bright_magenta", "bright_yellow", "bright_cyan")
NONE_STYLE = "green"

CULPRIT_COLOR = ("#c62828", "#ffffff")
ROOT_COLORS = (("#ef9a9a", "#4a0000"), ("#f48fb1", "#4a0024"), ("#ffab91", "#4a1500"))
SYMPTOM_COLORS = (
    ("#ffd54f", "#3e2a00"),
    ("#80deea", "#00363a"),
    ("#90caf9", "#0d2a4a"),
    ("#ce93d8", "#2e003e"),
    ("#bcaaa4", "#2b1d18"),
)
NONE_COLOR = ("#c8e6c9", "#1b3d1e")


@dataclass(frozen=True)
class Key:
    """One legend entry: a kind and category with its mark, styles and count."""

    kind: Kind
    category: str | None
    mark: str
    style: str
    color: tuple[str, str]
    """(background, foreground) for HTML."""
    count: int

    @property
    def label(self) -> str:
        """``collective_timeout (symptom)`` / ``first failing rank: cuda_oom``."""
        if self.kind == Kind.CULPRIT:
            label = KIND_LABEL[Kind.CULPRIT]
            return f"{label} ({self.category})" if self.category else label
        if self.kind == Kind.NONE:
            return KIND_LABEL[Kind.NONE]
        return f"{self.category} ({KIND_LABEL[self.kind]})"


@dataclass(frozen=True)
class Cell:
    """One rank's cell."""

    rank: int
    node: str
    kind: Kind
    category: str | None
    role: str | None
    time: str | None
    key: Key

    @property
    def mark(self) -> str:
        """One character for text grids."""
        return self.key.mark

    @property
    def tooltip(self) -> str:
        """``rank 5 · node 1 · cuda_oom (first failing rank) · 2025-03-04 10:00:03``."""
        parts = [f"rank {self.rank}", f"node {self.node}"]
        if self.kind == Kind.NONE:
            parts.append("no event")
        else:
            parts.append(f"{self.category or '?'} ({KIND_LABEL[self.kind]})")
        if self.time:
            parts.append(self.time)
        return " · ".join(parts)


@dataclass
class NodeGroup:
    """The cells of one node, in rank order."""

    label: str
    cells: list[Cell]


@dataclass
class Grid:
    """All cells, grouped by node, with the legend."""

    nodes: list[NodeGroup] = field(default_factory=list)
    keys: list[Key] = field(default_factory=list)
    culprit: Cell | None = None

    @property
    def cells(self) -> list[Cell]:
        """Every cell in node order."""
        return [c for n in self.nodes for c in n.cells]

    @property
    def summary(self) -> str:
        """``8 ranks on 2 nodes: 1 first failing (rank 5, node 1), 7 collective_timeout ...``."""
        cells = self.cells
        if not cells:
            return "no ranks seen"
        nn = len(self.nodes)
        head = f"{len(cells):,} rank{'s' if len(cells) != 1 else ''} on {nn:,} node"
        head += "s" if nn != 1 else ""
        parts = []
        for k in self.keys:
            if k.kind == Kind.CULPRIT and self.culprit is not None:
                where = f" (node {self.culprit.node})" if self.culprit.node != "?" else ""
                parts.append(f"rank {self.culprit.rank} first failing{where}")
            elif k.kind == Kind.NONE:
                parts.append(f"{k.count:,} with no event")
            else:
                parts.append(f"{k.count:,} {k.category} ({KIND_LABEL[k.kind]})")
        return head + ": " + ", ".join(parts)


def _kind(rank: int, info: RankRow, culprit: int | None) -> Kind:
    if rank == culprit:
        return Kind.CULPRIT
    role = info.role
    if role == Role.ROOT:
        return Kind.ROOT
    if role is None:
        return Kind.NONE
    return Kind.SYMPTOM


def _assign_marks(counts: Counter[tuple[Kind, str | None]]) -> dict[tuple[Kind, str | None], Key]:
    used = {CULPRIT_MARK, NONE_MARK}
    keys: dict[tuple[Kind, str | None], Key] = {}
    order = sorted(
        counts.items(),
        key=lambda kv: (list(Kind).index(kv[0][0]), -kv[1], kv[0]),
    )
    n_root = n_sym = 0
    for (kind, cat), count in order:
        if kind == Kind.CULPRIT:
            keys[(kind, cat)] = Key(kind, cat, CULPRIT_MARK, CULPRIT_STYLE, CULPRIT_COLOR, count)
            continue
        if kind == Kind.NONE:
            keys[(kind, cat)] = Key(kind, None, NONE_MARK, NONE_STYLE, NONE_COLOR, count)
            continue
        word = (cat or "unknown").replace("_", "")
        letters = [c for c in word if c.isalpha()] + list("abcdefghijklmnopqrstuvwyz")
        if kind == Kind.ROOT:
            mark = next((c.upper() for c in letters if c.upper() not in used), "?")
            style = ROOT_STYLES[n_root % len(ROOT_STYLES)]
            color = ROOT_COLORS[n_root % len(ROOT_COLORS)]
            n_root += 1
        else:
            mark = next((c.lower() for c in letters if c.lower() not in used), "?")
            style = SYMPTOM_STYLES[n_sym % len(SYMPTOM_STYLES)]
            color = SYMPTOM_COLORS[n_sym % len(SYMPTOM_COLORS)]
            n_sym += 1
        used.add(mark)
        keys[(kind, cat)] = Key(kind, cat, mark, style, color, count)
    return keys


def _node_labels(
    ranks: Mapping[int, RankRow], gpn: int | None, hosts: dict[int, str]
) -> dict[int, str]:
    """Each rank's node label; ranks the logs never placed are put by ``rank // gpn``."""
    by_index: dict[int, str] = {}
    labels: dict[int, str] = {}
    for rk, info in sorted(ranks.items()):
        node = info.node
        if node is not None:
            labels[rk] = clean(node)
            if gpn:
                by_index.setdefault(rk // gpn, labels[rk])
    # Next to host names a bare "0" reads like a host; number inferred nodes "#0" then.
    numeric = all(v.isdigit() for v in labels.values())
    for rk in ranks:
        if rk in labels:
            continue
        if gpn:
            idx = rk // gpn
            fallback = str(idx) if numeric else f"#{idx}"
            labels[rk] = by_index.get(idx) or clean(hosts.get(idx) or fallback)
        else:
            labels[rk] = "?"
    return labels


def build_grid(d: ReportInput) -> Grid:
    """The grid of a diagnosis (its rank table, verdict and launch geometry)."""
    d = diagnosis_of(d)
    geo = d.shape
    gpn = geo.nproc_per_node if geo.nproc_per_node and geo.nproc_per_node > 0 else None
    return grid_from(d.ranks, d.verdict.rank, d.verdict.category, gpn, dict(geo.task_hosts))


def grid_from(
    ranks: Mapping[int, RankRow],
    culprit: int | None,
    culprit_category: str | None = None,
    gpn: int | None = None,
    hosts: dict[int, str] | None = None,
) -> Grid:
    """The grid for per-rank first events (``Diagnosis.ranks``) and the culprit rank."""
    if not ranks:
        return Grid()
    labels = _node_labels(ranks, gpn, hosts or {})
    kinds = {rk: _kind(rk, info, culprit) for rk, info in ranks.items()}

    def cat_of(rk: int) -> str | None:
        if kinds[rk] == Kind.CULPRIT:
            return clean(culprit_category) if culprit_category else None
        if kinds[rk] == Kind.NONE:
            return None
        return clean(ranks[rk].category or "unknown")

    counts: Counter[tuple[Kind, str | None]] = Counter((kinds[rk], cat_of(rk)) for rk in ranks)
    keys = _assign_marks(counts)
    groups: dict[str, list[Cell]] = {}
    culprit_cell = None
    for rk in sorted(ranks):
        info = ranks[rk]
        t = iso(info.time)
        cell = Cell(
            rank=rk,
            node=labels[rk],
            kind=kinds[rk],
            category=cat_of(rk),
            role=info.role,
            time=clean(t).replace("T", " ", 1).removesuffix(".000000") if t else None,
            key=keys[(kinds[rk], cat_of(rk))],
        )
        if cell.kind == Kind.CULPRIT:
            culprit_cell = cell
        groups.setdefault(labels[rk], []).append(cell)
    nodes = [NodeGroup(label, cells) for label, cells in groups.items()]
    nodes.sort(key=lambda n: n.cells[0].rank)
    return Grid(nodes=nodes, keys=list(keys.values()), culprit=culprit_cell)


def text_rows(grid: Grid, width: int) -> list[tuple[str, list[list[Cell]]]]:
    """Rows of the text grid for a line ``width`` characters wide.

    Small jobs get one node per row, labelled with the node; big ones pack several nodes per
    row (a space between nodes), labelled with the row's first node, so 1,024 ranks on 128
    nodes of 8 fit in about fifteen rows.
    """
    if not grid.nodes:
        return []
    label_w = min(max(len(n.label) for n in grid.nodes), 18)
    room = max(width - label_w - 3, 8)
    widest = max(len(n.cells) for n in grid.nodes)
    per_row = 1 if len(grid.nodes) <= 16 else max(1, room // (min(widest, room) + 1))
    rows: list[tuple[str, list[list[Cell]]]] = []
    for i in range(0, len(grid.nodes), per_row):
        chunk = grid.nodes[i : i + per_row]
        label = chunk[0].label[:label_w]
        blocks: list[list[Cell]] = []
        for n in chunk:
            # A node with more ranks than fit on a line is split over several rows.
            for j in range(0, len(n.cells), room):
                blocks.append(n.cells[j : j + room])
        if len(chunk) == 1 and len(blocks) > 1:
            for j, b in enumerate(blocks):
                rows.append((label if j == 0 else "", [b]))
        else:
            rows.append((label, blocks))
    return rows


def nodes_per_row(rows: list[tuple[str, list[list[Cell]]]]) -> int:
    """How many nodes the widest row holds (1 for small jobs)."""
    return max((len(r[1]) for r in rows), default=1)

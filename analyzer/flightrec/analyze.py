"""Compare the ranks' Flight Recorder dumps: who is missing, odd, late or behind.

The dumps' process groups are built (``groups.build_groups``: entries aligned by
``collective_seq_id``, group-local ranks mapped to global ones); each group is searched by the
rules (``rules.RULES``: mismatch by majority, the members missing from the frontier, late,
behind, no dump); the strongest suspect that names a rank is the culprit, and the per-rank
sequence table (``table.rank_table``) shows where every member stopped. What the dumps cannot
tell is said in ``notes``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex

from analyzer.flightrec.groups import (
    Entry,
    Group,
    build_groups,
    op_name,
    ordered,
    parse_ranks,
    to_int,
)
from analyzer.flightrec.load import DumpSet, load_dumps
from analyzer.flightrec.rules import Suspect, group_findings, short_ranks
from analyzer.flightrec.sequences import RankState, rank_table

__all__ = [
    "KIND_CONFIDENCE",
    "Entry",
    "FrFinding",
    "Group",
    "RankState",
    "analyze_dumps",
    "build_groups",
    "op_name",
    "parse_ranks",
]

_TORCH_FRAME = regex.compile(r"(?:^|/)torch/(?:distributed|autograd|_tensor|nn/parallel)")

KIND_CONFIDENCE = {"mismatch": 0.85, "missing": 0.85, "late": 0.75, "behind": 0.7, "no_dump": 0.55}


@dataclass
class FrFinding:
    """What the dumps say: the culprit (or None), how it was found, and the picture."""

    rank: int | None
    kind: str | None
    """``mismatch``, ``missing``, ``late``, ``behind``, ``no_dump`` or None."""
    reason: str
    confidence: float
    group: str | None = None
    seq: int | None = None
    op: str | None = None
    others_op: str | None = None
    record_id: int | None = None
    """The culprit's entry in its dump (``record_id``), when it has one."""
    stack: list[str] = field(default_factory=list)
    """The culprit's Python stack at the stuck call (pickle dumps only), innermost first."""
    table: list[RankState] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    ranks_with_dumps: list[int] = field(default_factory=list)
    ranks_without_dumps: list[int] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)
    dump_files: dict[int, str] = field(default_factory=dict)
    suspects: list[dict[str, Any]] = field(default_factory=list)
    """Every rule that fired, strongest first (the first one is the verdict)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "rank": self.rank,
            "kind": self.kind,
            "reason": self.reason,
            "confidence": round(self.confidence, 2),
            "group": self.group,
            "seq": self.seq,
            "op": self.op,
            "others_op": self.others_op,
            "record_id": self.record_id,
            "stack": self.stack,
            "table": [r.as_dict() for r in self.table],
            "notes": self.notes,
            "problems": self.problems,
            "ranks_with_dumps": self.ranks_with_dumps,
            "ranks_without_dumps": self.ranks_without_dumps,
            "versions": self.versions,
            "suspects": self.suspects,
        }


# ------------------------------------------------------------------------------------------
# notes
# ------------------------------------------------------------------------------------------
def _notes_on_coverage(ds: DumpSet, without: list[int], notes: list[str]) -> None:
    """Duplicate dumps, mixed versions and the ranks that left none."""
    if ds.duplicates:
        notes.append(
            f"{len(ds.duplicates)} JSON dump(s) duplicate pickle dumps of the same ranks; the "
            "pickles (with stack frames) were used"
        )
    versions = ds.versions
    if len(versions) > 1:
        notes.append(f"the dumps come from different format versions ({', '.join(versions)})")
    if without:
        notes.append(
            f"no dump from rank{'s' if len(without) > 1 else ''} {short_ranks(without)}: where "
            f"{'they' if len(without) > 1 else 'it'} stopped is unknown"
        )


def _notes_on_content(ds: DumpSet, notes: list[str]) -> None:
    """What these dumps cannot tell: gloo's states, JSON's frames, clocks, wrapped buffers, p2p."""
    dumps = list(ds.dumps.values())
    gloo = any(
        str(e.get("profiling_name", "")).startswith("gloo:") for d in dumps for e in d.entries[:5]
    )
    if gloo:
        notes.append(
            "gloo dumps: every entry's state is 'scheduled' and a collective that timed out is "
            "retired, so they cannot tell started from completed; only enqueued counts"
        )
    if any(d.fmt == "json" for d in dumps):
        notes.append("JSON dumps carry no stack frames: the stuck call's Python stack is unknown")
    notes.append(
        "entry creation times are each host's wall clock: lateness is only as exact as the "
        "hosts' clock sync"
    )
    for d in dumps:
        ids = [to_int(e.get("record_id")) for e in d.entries]
        if ids and ids[0] not in (0, None):
            notes.append(
                f"rank {d.rank}'s buffer wrapped (first record {ids[0]}): older collectives are "
                "not compared"
            )
    if any(e.get("is_p2p") for d in dumps for e in d.entries):
        notes.append("point-to-point operations (send/recv) are not compared, only collectives")


# ------------------------------------------------------------------------------------------
# the verdict
# ------------------------------------------------------------------------------------------
def _describe_stack(e: Entry) -> list[str]:
    out = []
    for f in e.frames[:12]:
        name, line, file = f.get("name"), f.get("line"), str(f.get("filename", ""))
        out.append(f"{file}:{line} in {name}")
    return out


def _user_frame(e: Entry) -> str | None:
    for f in e.frames:
        file = str(f.get("filename", ""))
        if file and not _TORCH_FRAME.search(file) and "c10d_logger" not in file:
            return f"{file.rsplit('/', 1)[-1]}:{f.get('line')} in {f.get('name')}"
    return None


def _suspects(groups: dict[str, Group], ds: DumpSet) -> tuple[list[Suspect], dict[str, int | None]]:
    """Every group's suspects, strongest first, and each group's stuck (frontier) seq."""
    suspects: list[Suspect] = []
    stuck: dict[str, int | None] = {}
    for g in ordered(groups.values()):
        found, stuck[g.name] = group_findings(g, ds)
        suspects += found
    suspects.sort(key=Suspect.strength)
    return suspects, stuck


def _name_culprit(out: FrFinding, s: Suspect, rank: int) -> None:
    """``out`` names ``rank``, the suspect ``s``'s, with its call and its stack."""
    g = s.group
    out.rank, out.kind, out.reason = rank, s.kind, s.reason
    out.confidence = KIND_CONFIDENCE[s.kind]
    out.group, out.seq, out.op, out.others_op = g.name, s.seq, s.op, s.others_op
    e = s.entry
    if e is not None:
        out.record_id = e.record_id
        out.stack = _describe_stack(e)
        where = _user_frame(e)
        if where and s.kind in ("missing", "behind"):
            out.reason += f"; its last collective (#{e.seq}, {e.op}) came from {where}"
        elif where:
            out.reason += f"; its call: {where}"
    local = g.local_rank(rank)
    if local is not None and local != rank:
        out.reason += f" (group-local rank {local})"


def analyze_dumps(ds: DumpSet, world: set[int] | None = None) -> FrFinding:
    """The dumps' verdict on a hang: culprit, how it was found, the per-rank picture, notes."""
    groups, notes = build_groups(ds, world)
    everyone = set(ds.dumps) | set(world or ())
    for g in groups.values():
        everyone |= set(g.members)
    without = sorted(everyone - set(ds.dumps))
    _notes_on_coverage(ds, without, notes)
    out = FrFinding(
        None,
        None,
        "no usable Flight Recorder dump",
        0.0,
        notes=notes,
        problems=list(ds.problems),
        ranks_without_dumps=without,
        versions=ds.versions,
    )
    if not ds.dumps:
        return out
    suspects, stuck = _suspects(groups, ds)
    _notes_on_content(ds, notes)
    out.reason, out.confidence = "the dumps do not single out a rank", 0.5
    out.ranks_with_dumps = ds.ranks
    out.dump_files = {r: d.path for r, d in ds.dumps.items()}
    out.suspects = [s.as_dict() for s in suspects]
    top = suspects[0] if suspects else None
    if top is not None:
        stuck[top.group.name] = top.seq or stuck[top.group.name]
    out.table = rank_table(groups, stuck, ds)
    if top is None:
        return out
    if top.rank is None:
        out.reason = top.reason
        return out
    _name_culprit(out, top, top.rank)
    return out


def read_finding(dumps: list[tuple[Path, str]], world: set[int] | None) -> FrFinding | None:
    """Read the dumps ``(path, path shown)`` found with the logs and compare them against every
    rank of the job (``world``); None when there are none. The only place the job's dumps are
    read: the diagnosis takes the finding as it is."""
    if not dumps:
        return None
    return analyze_dumps(load_dumps(dumps), world)

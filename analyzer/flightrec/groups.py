"""The dumps' process groups: each rank's entries aligned by ``collective_seq_id``.

Per process group, entries are keyed by ``collective_seq_id`` (the n-th collective of that
group on every member). Group-local ranks map to global ranks through the ``pg_config`` ranks
list; gloo writes that config under an empty key (the group is named after the backend is
built), so the name is taken from the entries instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import regex

from analyzer.flightrec.load import DumpSet

_RANKS_LIST = regex.compile(r"^\s*\[\s*(?:\d+\s*(?:,\s*\d+\s*)*)?,?\s*\]\s*$")
_INT = regex.compile(r"\d+")
_BACKENDS = regex.compile(r"^(?:nccl|gloo|ucc|mpi|xccl|fake)[:_]", regex.I)
_GLOO_REPAIR_NOTE = (
    "the dumps' pg_config is keyed by '' (gloo names the group after building the "
    "backend): group names were taken from the entries"
)
_FROM_ENTRIES = "the ranks whose dumps have entries for it"


@dataclass
class Entry:
    """One collective as one rank recorded it."""

    rank: int
    seq: int
    op: str
    in_sizes: tuple[Any, ...]
    out_sizes: tuple[Any, ...]
    dtypes: tuple[str, ...]
    created_ns: int | None
    timeout_ms: int | None
    retired: bool | None
    state: str | None
    frames: list[dict[str, Any]]
    record_id: int | None

    def sizes(self) -> str:
        """``[[4, 8]]`` (input sizes), or ``[[4, 8]]->[[16, 8]]`` when the output differs."""
        i, o = _plain(self.in_sizes or []), _plain(self.out_sizes or [])
        return str(i) if i == o else f"{i}->{o}"


@dataclass
class Group:
    """A process group seen in the dumps."""

    name: str
    desc: str
    members: list[int]
    """Global ranks, in group-local order (local rank i = members[i])."""
    members_from: str
    """``pg_config`` or where the list came from when the config had none."""
    entries: dict[int, dict[int, Entry]] = field(default_factory=dict)
    """global rank -> seq -> entry."""
    pg_ids: set[str] = field(default_factory=set)

    def local_rank(self, global_rank: int) -> int | None:
        """The group-local rank of a global rank (None if not a member)."""
        return self.members.index(global_rank) if global_rank in self.members else None

    def op_at(self, rank: int, seq: int | None) -> str | None:
        """The op of ``rank``'s entry ``seq``, when it has one."""
        e = self.entries.get(rank, {}).get(seq) if seq else None
        return e.op if e is not None else None


# ------------------------------------------------------------------------------------------
# normalisation
# ------------------------------------------------------------------------------------------
def to_int(v: Any) -> int | None:
    """An int from a dump's value (a JSON dump writes some as strings); None for anything else."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdecimal():
        # isdecimal, not isdigit: "²".isdigit() is true, int("²") raises; and str.strip()
        # takes separators (\x1c-\x1f) that int() does not, so "0\x1f" raises too
        try:
            return int(v)
        except ValueError:
            return None
    return None


def _freeze(v: Any) -> Any:
    """Lists (JSON) and tuples (pickle) compare equal once frozen."""
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, (dict, set)):  # not in a real dump; hashable for the comparisons
        return repr(v)
    return v


def _plain(v: Any) -> Any:
    return [_plain(x) for x in v] if isinstance(v, (list, tuple)) else v


def op_name(profiling_name: Any) -> str:
    """``nccl:all_reduce`` / ``gloo:all_reduce`` -> ``all_reduce``."""
    s = str(profiling_name or "?")
    return _BACKENDS.sub("", s)


def parse_ranks(text: Any) -> list[int] | None:
    """The ``ranks`` of a pg_config entry (``'[0, 1]'`` or a list), never evaluated as code."""
    if isinstance(text, (list, tuple)):
        vals = [to_int(x) for x in text]
        return None if any(v is None for v in vals) else [v for v in vals if v is not None]
    if isinstance(text, str) and _RANKS_LIST.match(text):
        return [int(x) for x in _INT.findall(text)]
    return None


def _pg(e: dict[str, Any]) -> tuple[str, str]:
    pg = e.get("process_group")
    if isinstance(pg, (list, tuple)) and pg:
        name = str(pg[0])
        desc = str(pg[1]) if len(pg) > 1 else ""
        return name, desc
    pid = e.get("pg_id")
    return (str(pid) if pid is not None else "?", "")


def _entry(rank: int, e: dict[str, Any]) -> Entry | None:
    if e.get("is_p2p"):
        return None
    seq = to_int(e.get("collective_seq_id"))
    if seq is None or seq <= 0:
        return None
    created = to_int(e.get("time_created_ns"))
    frames = e.get("frames")
    if not isinstance(frames, list):
        frames = []
    return Entry(
        rank=rank,
        seq=seq,
        op=op_name(e.get("profiling_name")),
        in_sizes=_freeze(e.get("input_sizes")),
        out_sizes=_freeze(e.get("output_sizes")),
        dtypes=_freeze(e.get("input_dtypes")) or (),
        created_ns=created if created else None,
        timeout_ms=to_int(e.get("timeout_ms")),
        retired=e.get("retired") if isinstance(e.get("retired"), bool) else None,
        state=str(e["state"]) if e.get("state") is not None else None,
        frames=[f for f in frames if isinstance(f, dict)],
        record_id=to_int(e.get("record_id")),
    )


# ------------------------------------------------------------------------------------------
# the groups
# ------------------------------------------------------------------------------------------
def ordered(groups: Iterable[Group]) -> list[Group]:
    """The default group first, then the others by name."""
    return sorted(groups, key=lambda g: (g.desc != "default_pg", g.name))


def _configs(ds: DumpSet) -> tuple[dict[str, list[int]], bool]:
    """Each named group's ranks from the dumps' ``pg_config`` (the first dump that has them),
    and whether a config was keyed by ``''`` (gloo)."""
    configs: dict[str, list[int]] = {}
    gloo_repair = False
    for d in ds.dumps.values():
        for key, cfg in d.pg_config.items():
            ranks = parse_ranks(cfg.get("ranks"))
            name = str(cfg.get("name") or key)
            if name == "":
                gloo_repair = True
                continue
            if ranks:
                configs.setdefault(name, ranks)
    return configs, gloo_repair


def _collect(ds: DumpSet) -> dict[str, Group]:
    """The groups the entries name, each with every rank's collectives (members not set)."""
    groups: dict[str, Group] = {}
    for d in ds.dumps.values():
        for raw in d.entries:
            name, desc = _pg(raw)
            e = _entry(d.rank, raw)
            if e is None:
                continue
            g = groups.get(name)
            if g is None:
                g = groups[name] = Group(name=name, desc=desc, members=[], members_from="")
            if raw.get("pg_id") is not None:
                g.pg_ids.add(str(raw.get("pg_id")))
            g.entries.setdefault(d.rank, {})[e.seq] = e
    return groups


def _set_members(
    groups: dict[str, Group], configs: dict[str, list[int]], everyone: set[int]
) -> None:
    """Members from the config; the default group spans the job; else the ranks that used it."""
    for g in groups.values():
        if g.name in configs:
            g.members, g.members_from = configs[g.name], "pg_config"
        elif g.desc == "default_pg" or (g.name == "0" and len(groups) == 1):
            g.members, g.members_from = sorted(everyone), "default group: every rank of the job"
        else:
            g.members = sorted(g.entries)
            g.members_from = _FROM_ENTRIES


def build_groups(ds: DumpSet, world: set[int] | None = None) -> tuple[dict[str, Group], list[str]]:
    """Process groups with their members and each rank's entries, plus notes."""
    configs, gloo_repair = _configs(ds)
    groups = _collect(ds)
    _set_members(groups, configs, set(ds.dumps) | set(world or ()))
    notes = [_GLOO_REPAIR_NOTE] if gloo_repair else []
    notes += [
        f"group {g.name} ({g.desc or 'no description'}) has no membership in the dumps: "
        "a member that never used it would not be seen"
        for g in groups.values()
        if g.members_from == _FROM_ENTRIES
    ]
    return groups, notes

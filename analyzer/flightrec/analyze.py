"""Compare the ranks' Flight Recorder dumps: who is missing, odd, late or behind.

Per process group, entries are aligned by ``collective_seq_id`` (the n-th collective of that
group on every member). At each sequence id the ranks' op types, sizes and dtypes are compared
and the odd one out is named **by majority** (never "whoever differs from the first file").
At the group's frontier (the highest sequence id any member enqueued) the members that never
enqueued it are named, and a member whose entry there was created long after the others' is
late. Group-local ranks map to global ranks through the ``pg_config`` ranks list; gloo writes
that config under an empty key (the group is named after the backend is built), so the name
is taken from the entries instead. What the dumps cannot tell is said in ``notes``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import regex

from analyzer.flightrec.load import Dump, DumpSet, status_int

LATE_MIN_S = 5.0
"""A rank is late when its entry was created at least this long after the others' ..."""
LATE_TIMEOUT_SHARE = 0.05
"""... and at least this share of the collective's timeout."""
_RANKS_LIST = regex.compile(r"^\s*\[\s*(?:\d+\s*(?:,\s*\d+\s*)*)?,?\s*\]\s*$")
_INT = regex.compile(r"\d+")
_BACKENDS = regex.compile(r"^(?:nccl|gloo|ucc|mpi|xccl|fake)[:_]", regex.I)
_SIZES_AGREE = regex.compile(
    r"^_?(?:all_?reduce|allreduce_coalesced|broadcast|reduce|all_?gather(?:_into_tensor)?"
    r"|_?allgather_base|reduce_scatter(?:_tensor)?|_?reduce_scatter_base|barrier)$"
)
"""Ops whose sizes must agree on every rank (gather/scatter/all_to_all may differ)."""
_TORCH_FRAME = regex.compile(r"(?:^|/)torch/(?:distributed|autograd|_tensor|nn/parallel)")

KIND_CONFIDENCE = {"mismatch": 0.85, "missing": 0.85, "late": 0.75, "behind": 0.7, "no_dump": 0.55}


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


@dataclass
class RankState:
    """One row of the per-rank sequence table."""

    rank: int
    group: str
    local_rank: int | None
    last_enqueued: int | None
    last_started: int | None
    last_completed: int | None
    op_at_stuck: str | None
    sizes_at_stuck: str | None
    created_offset_s: float | None
    """Seconds after the earliest member created the entry at the stuck seq."""
    dump: str | None

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return dict(self.__dict__)


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
# normalisation
# ------------------------------------------------------------------------------------------
def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdecimal():
        return int(v)  # isdecimal, not isdigit: "²".isdigit() is true, int("²") raises
    return None


def _freeze(v: Any) -> Any:
    """Lists (JSON) and tuples (pickle) compare equal once frozen."""
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, (dict, set)):  # not in a real dump; hashable for the comparisons
        return repr(v)
    return v


def op_name(profiling_name: Any) -> str:
    """``nccl:all_reduce`` / ``gloo:all_reduce`` -> ``all_reduce``."""
    s = str(profiling_name or "?")
    return _BACKENDS.sub("", s)


def parse_ranks(text: Any) -> list[int] | None:
    """The ``ranks`` of a pg_config entry (``'[0, 1]'`` or a list), never evaluated as code."""
    if isinstance(text, (list, tuple)):
        vals = [_int(x) for x in text]
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
    seq = _int(e.get("collective_seq_id"))
    if seq is None or seq <= 0:
        return None
    created = _int(e.get("time_created_ns"))
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
        timeout_ms=_int(e.get("timeout_ms")),
        retired=e.get("retired") if isinstance(e.get("retired"), bool) else None,
        state=str(e["state"]) if e.get("state") is not None else None,
        frames=[f for f in frames if isinstance(f, dict)],
        record_id=_int(e.get("record_id")),
    )


def build_groups(ds: DumpSet, world: set[int] | None = None) -> tuple[dict[str, Group], list[str]]:
    """Process groups with their members and each rank's entries, plus notes."""
    notes: list[str] = []
    groups: dict[str, Group] = {}
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
    everyone = set(ds.dumps) | set(world or ())
    for g in groups.values():
        if g.name in configs:
            g.members, g.members_from = configs[g.name], "pg_config"
        elif g.desc == "default_pg" or (g.name == "0" and len(groups) == 1):
            g.members, g.members_from = sorted(everyone), "default group: every rank of the job"
        else:
            g.members = sorted(g.entries)
            g.members_from = "the ranks whose dumps have entries for it"
    if gloo_repair:
        notes.append(
            "the dumps' pg_config is keyed by '' (gloo names the group after building the "
            "backend): group names were taken from the entries"
        )
    for g in groups.values():
        if g.members_from.startswith("the ranks whose"):
            notes.append(
                f"group {g.name} ({g.desc or 'no description'}) has no membership in the dumps: "
                "a member that never used it would not be seen"
            )
    return groups, notes


# ------------------------------------------------------------------------------------------
# the rules
# ------------------------------------------------------------------------------------------
def _plain(v: Any) -> Any:
    return [_plain(x) for x in v] if isinstance(v, (list, tuple)) else v


def _sizes(e: Entry) -> str:
    """``[[4, 8]]`` (input sizes), or ``[[4, 8]]->[[16, 8]]`` when the output differs."""
    i, o = _plain(e.in_sizes or []), _plain(e.out_sizes or [])
    return str(i) if i == o else f"{i}->{o}"


def _odd_one(values: dict[int, Any]) -> tuple[list[int], Any, Any] | None:
    """Ranks whose value is not the majority's: (odd ranks, majority value, odd value)."""
    counts = Counter(values.values())
    if len(counts) < 2:
        return None
    (top, n_top), (_second, n_second) = counts.most_common(2)
    if n_top == n_second:
        return None
    odd = sorted(r for r, v in values.items() if v != top)
    return odd, top, values[odd[0]]


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


def _group_findings(g: Group, ds: DumpSet) -> tuple[list[dict[str, Any]], int | None]:
    """Suspects in one group (strongest first) and the group's stuck (frontier) seq."""
    found: list[dict[str, Any]] = []
    dumped = [r for r in g.members if r in ds.dumps]
    if not dumped:
        return found, None
    last = {r: max(g.entries.get(r, {}), default=0) for r in dumped}
    first = {r: min(g.entries.get(r, {}), default=0) for r in dumped}
    frontier = max(last.values())
    if frontier <= 0:
        return found, None
    # 1. mismatch by majority at the earliest seq where the present ranks disagree
    lo = max(first.values()) if all(first.values()) else 1
    # the seq ids present (a dump is untrusted: never a range over its numbers)
    for seq in sorted({s for r in dumped for s in g.entries.get(r, {}) if s >= lo}):
        here = {r: g.entries[r][seq] for r in dumped if seq in g.entries.get(r, {})}
        if len(here) < 2:
            continue
        checks: list[tuple[str, Any]] = [("op", lambda e: e.op)]
        if all(_SIZES_AGREE.match(e.op) for e in here.values()):
            checks.append(("sizes", lambda e: (e.in_sizes, e.out_sizes)))
        checks.append(("dtypes", lambda e: e.dtypes))
        for what, key in checks:
            odd = _odd_one({r: key(e) for r, e in here.items()})
            if odd is None:
                if len({key(e) for e in here.values()}) > 1:
                    vals = ", ".join(f"rank {r}: {_show(what, e)}" for r, e in sorted(here.items()))
                    found.append(
                        {
                            "kind": "mismatch",
                            "rank": None,
                            "seq": seq,
                            "reason": f"group {g.name} seq {seq}: the ranks disagree on {what} "
                            f"({vals}) with no majority to say which is wrong",
                        }
                    )
                    return found, frontier
                continue
            ranks, top, _v = odd
            if len(ranks) * 2 >= len(here):
                continue
            r = ranks[0]
            e = here[r]
            maj = next(x for x in here.values() if key(x) == top)
            found.append(
                {
                    "kind": "mismatch",
                    "rank": r if len(ranks) == 1 else None,
                    "ranks": ranks,
                    "seq": seq,
                    "op": e.op,
                    "others_op": maj.op,
                    "entry": e,
                    "reason": (
                        f"at collective #{seq} of group {g.name} "
                        f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))} "
                        f"ran {_show(what, e)} while the other "
                        f"{len(here) - len(ranks)} ran {_show(what, maj)}"
                    ),
                }
            )
            return found, frontier
    # 2. members that never enqueued the frontier collective
    behind = sorted(r for r in dumped if last[r] < frontier)
    at_front = [r for r in dumped if last[r] == frontier]
    front_op = g.entries[at_front[0]][frontier].op
    if behind and len(behind) * 2 >= len(dumped):
        found.append(
            {
                "kind": "behind",
                "rank": None,
                "seq": frontier,
                "reason": (
                    f"only rank{'s' if len(at_front) > 1 else ''} {_short(at_front)} enqueued "
                    f"collective #{frontier} of group {g.name}; the other {len(behind)} stopped "
                    "earlier, so no single rank is behind the rest (a rank can run ahead)"
                ),
            }
        )
    elif behind:
        if len(behind) == 1:
            r = behind[0]
            found.append(
                {
                    "kind": "missing",
                    "rank": r,
                    "seq": frontier,
                    "op": _op_at(g, r, last[r]),
                    "others_op": front_op,
                    "entry": g.entries.get(r, {}).get(last[r]),
                    "reason": (
                        f"rank {r} never enqueued collective #{frontier} of group {g.name} "
                        f"({front_op}) that the other {len(at_front)} wait in; its last was "
                        f"#{last[r]}"
                    ),
                }
            )
        else:
            low = min(last[r] for r in behind)
            lowest = [r for r in behind if last[r] == low]
            found.append(
                {
                    "kind": "behind",
                    "rank": lowest[0] if len(lowest) == 1 else None,
                    "ranks": behind,
                    "seq": frontier,
                    "others_op": front_op,
                    "entry": g.entries.get(lowest[0], {}).get(low),
                    "reason": (
                        f"ranks {', '.join(map(str, behind))} never enqueued collective "
                        f"#{frontier} of group {g.name} ({front_op}); "
                        + (
                            f"rank {lowest[0]} is furthest behind (last #{low})"
                            if len(lowest) == 1
                            else f"ranks {', '.join(map(str, lowest))} are furthest behind "
                            f"(last #{low})"
                        )
                    ),
                }
            )
    # 3. a late rank: its entry at the frontier was created long after the others'
    created: dict[int, int] = {}
    for r in at_front:
        ns = g.entries[r][frontier].created_ns
        if ns is not None:
            created[r] = ns
    if len(created) >= 3:
        timeout = max((g.entries[r][frontier].timeout_ms or 0) for r in created) / 1000
        limit = max(LATE_MIN_S, LATE_TIMEOUT_SHARE * timeout)
        for r, t in sorted(created.items()):
            others = [x for q, x in created.items() if q != r]
            gap = (t - max(others)) / 1e9
            if gap >= limit:
                found.append(
                    {
                        "kind": "late",
                        "rank": r,
                        "seq": frontier,
                        "op": g.entries[r][frontier].op,
                        "entry": g.entries[r][frontier],
                        "reason": (
                            f"rank {r} enqueued collective #{frontier} of group {g.name} "
                            f"({g.entries[r][frontier].op}) {gap:.1f} s after the last of the "
                            f"others"
                            + (
                                f", past their {timeout:g} s timeout"
                                if timeout and gap > timeout
                                else ""
                            )
                        ),
                    }
                )
    # 4. members without a dump, when the dumps agree on everything else
    missing_dumps = [r for r in g.members if r not in ds.dumps]
    if len(missing_dumps) == 1 and not found:
        r = missing_dumps[0]
        found.append(
            {
                "kind": "no_dump",
                "rank": r,
                "seq": frontier,
                "others_op": front_op,
                "reason": (
                    f"rank {r} is the only member of group {g.name} that left no dump, and the "
                    f"{len(dumped)} dumps agree up to collective #{frontier} ({front_op}): it "
                    "probably died or aborted first (its log should say how)"
                ),
            }
        )
    return found, frontier


def _show(what: str, e: Entry) -> str:
    if what == "op":
        return e.op
    if what == "sizes":
        return f"{e.op} of sizes {_sizes(e)}"
    dtypes = e.dtypes if isinstance(e.dtypes, tuple) else (e.dtypes,)
    return f"{e.op} of dtype {', '.join(map(str, dtypes)) or '?'}"


_ORDER = {"mismatch": 0, "missing": 1, "late": 2, "behind": 3, "no_dump": 4}


def analyze_dumps(ds: DumpSet, world: set[int] | None = None) -> FrFinding:
    """The dumps' verdict on a hang: culprit, how it was found, the per-rank picture, notes."""
    groups, notes = build_groups(ds, world)
    problems = list(ds.problems)
    everyone = set(ds.dumps) | set(world or ())
    for g in groups.values():
        everyone |= set(g.members)
    without = sorted(everyone - set(ds.dumps))
    versions = ds.versions
    if ds.duplicates:
        notes.append(
            f"{len(ds.duplicates)} JSON dump(s) duplicate pickle dumps of the same ranks; the "
            "pickles (with stack frames) were used"
        )
    if len(versions) > 1:
        notes.append(f"the dumps come from different format versions ({', '.join(versions)})")
    if without:
        notes.append(
            f"no dump from rank{'s' if len(without) > 1 else ''} {_short(without)}: where "
            f"{'they' if len(without) > 1 else 'it'} stopped is unknown"
        )
    if not ds.dumps:
        return FrFinding(
            None,
            None,
            "no usable Flight Recorder dump",
            0.0,
            notes=notes,
            problems=problems,
            ranks_without_dumps=without,
            versions=versions,
        )
    suspects: list[tuple[dict[str, Any], Group]] = []
    stuck: dict[str, int | None] = {}
    for g in sorted(groups.values(), key=lambda g: (g.desc != "default_pg", g.name)):
        fs, frontier = _group_findings(g, ds)
        stuck[g.name] = frontier
        suspects += [(f, g) for f in fs]
    suspects.sort(key=lambda fg: (_ORDER[fg[0]["kind"]], fg[0]["rank"] is None))
    _notes_on_content(ds, notes)
    out = FrFinding(
        None,
        None,
        "the dumps do not single out a rank",
        0.5,
        notes=notes,
        problems=problems,
        ranks_with_dumps=ds.ranks,
        ranks_without_dumps=without,
        versions=versions,
        dump_files={r: d.path for r, d in ds.dumps.items()},
        suspects=[
            {k: v for k, v in f.items() if k != "entry"} | {"group": g.name} for f, g in suspects
        ],
    )
    named = [(f, g) for f, g in suspects if f.get("rank") is not None]
    if suspects:
        stuck[suspects[0][1].name] = suspects[0][0].get("seq") or stuck[suspects[0][1].name]
    out.table = _table(groups, stuck, ds)
    if suspects and (not named or suspects[0][0].get("rank") is None):
        out.reason = suspects[0][0]["reason"]
        return out
    if named:
        f, g = named[0]
        out.rank, out.kind, out.reason = f["rank"], f["kind"], f["reason"]
        out.confidence = KIND_CONFIDENCE[f["kind"]]
        out.group, out.seq, out.op, out.others_op = (
            g.name,
            f.get("seq"),
            f.get("op"),
            f.get("others_op"),
        )
        e: Entry | None = f.get("entry")
        if e is not None:
            out.record_id = e.record_id
            out.stack = _describe_stack(e)
            where = _user_frame(e)
            if where and f["kind"] in ("missing", "behind"):
                out.reason += f"; its last collective (#{e.seq}, {e.op}) came from {where}"
            elif where:
                out.reason += f"; its call: {where}"
        local = g.local_rank(f["rank"])
        if local is not None and local != f["rank"]:
            out.reason += f" (group-local rank {local})"
    return out


def _notes_on_content(ds: DumpSet, notes: list[str]) -> None:
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
    hosts_note = (
        "entry creation times are each host's wall clock: lateness is only as exact as the "
        "hosts' clock sync"
    )
    notes.append(hosts_note)
    for d in dumps:
        ids = [_int(e.get("record_id")) for e in d.entries]
        if ids and ids[0] not in (0, None):
            notes.append(
                f"rank {d.rank}'s buffer wrapped (first record {ids[0]}): older collectives are "
                "not compared"
            )
    if any(e.get("is_p2p") for d in dumps for e in d.entries):
        notes.append("point-to-point operations (send/recv) are not compared, only collectives")


def _op_at(g: Group, rank: int, seq: int | None) -> str | None:
    """The op of ``rank``'s entry ``seq`` in ``g``, when it has one."""
    e = g.entries.get(rank, {}).get(seq) if seq else None
    return e.op if e is not None else None


def _table(groups: dict[str, Group], stuck: dict[str, int | None], ds: DumpSet) -> list[RankState]:
    rows: list[RankState] = []
    for g in sorted(groups.values(), key=lambda g: (g.desc != "default_pg", g.name)):
        s = stuck.get(g.name)
        created = [
            ns
            for r in g.entries
            if s is not None and s in g.entries[r] and (ns := g.entries[r][s].created_ns)
        ]
        t0 = min(created) if created else None
        for r in g.members:
            d: Dump | None = ds.dumps.get(r)
            mine = g.entries.get(r, {})
            pid = next(iter(sorted(g.pg_ids)), g.name)
            enq = status_int(d, pid, "last_enqueued_collective") if d else None
            started = status_int(d, pid, "last_started_collective") if d else None
            done = status_int(d, pid, "last_completed_collective") if d else None
            if d is not None and enq is None and mine:
                enq = max(mine)
            e = mine.get(s) if s is not None else None
            rows.append(
                RankState(
                    rank=r,
                    group=g.name,
                    local_rank=g.local_rank(r),
                    last_enqueued=enq,
                    last_started=started if started is None or started >= 0 else None,
                    last_completed=done if done is None or done >= 0 else None,
                    op_at_stuck=e.op if e else None,
                    sizes_at_stuck=_sizes(e) if e else None,
                    created_offset_s=(
                        round((e.created_ns - t0) / 1e9, 3)
                        if e is not None and e.created_ns and t0
                        else None
                    ),
                    dump=d.path if d else None,
                )
            )
    return rows


def _short(ranks: list[int]) -> str:
    if len(ranks) <= 8:
        return ", ".join(map(str, ranks))
    return ", ".join(map(str, ranks[:8])) + f", … ({len(ranks)} in all)"

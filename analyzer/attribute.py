"""Attribute every event to a node, a global rank and a wall-clock time.

Global ranks come from the logs alone: a ``[rankN]:`` prefix, a ChildFailedError block, or
node index × processes-per-node + local rank once the job's geometry is visible (a line that
carries the srun label, the torchrun header and ``[rankN]:`` together, Megatron's world size
over the number of nodes, or torchrun's own summary). Without geometry the rank stays null.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

import regex

from analyzer.scan import FileScan, RawEvent

_CF_HOST = regex.compile(r"^\s*host\s*:\s*(?P<host>\S+)")
_CF_RANK = regex.compile(r"^\s*rank\s*:\s*(?P<rank>\d+)\s*\(local_rank:\s*(?P<lr>\d+)\)")
_CF_EXIT = regex.compile(r"^\s*exitcode\s*:\s*(?P<code>-?\d+)(?:\s*\(pid:\s*(?P<pid>\d+)\))?")
_CF_TIME = regex.compile(r"^\s*time\s*:\s*(?P<t>\S+)")
_SRUN_TASKS = regex.compile(r"srun: error: (?P<host>[\w.\[\],-]+): tasks? (?P<spec>[\d,-]+): ")
"""srun's task-exit line: which hosts and task ids (one task per node = node indices)."""
_CF_PREFIX = "torchelastic.childfailed."
_ADDRESS = regex.compile(r"[\d.]+|[0-9a-fA-F:]+")


def short_host(host: str | None) -> str | None:
    """SLURM and NCCL print short hostnames, torchrun the FQDN: compare the short form."""
    if not host or _ADDRESS.fullmatch(host):
        return host
    return host.split(".", 1)[0]


@dataclass
class Geometry:
    """What the logs reveal about the job's shape."""

    nproc_per_node: int | None = None
    nnodes: int | None = None
    world_size: int | None = None
    task_hosts: dict[int, str] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)


@dataclass
class ChildFailure:
    """One failure listed in a torchrun ChildFailedError block."""

    file: str
    line: int
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    exitcode: int | None = None
    pid: int | None = None
    time: str | None = None
    is_root: bool = False
    task: int | None = None
    events: list[RawEvent] = field(default_factory=list)


def child_failures(scans: list[FileScan]) -> list[ChildFailure]:
    """Reassemble torchrun's ChildFailedError blocks from their field lines."""
    out: list[ChildFailure] = []
    for sc in scans:
        cur: ChildFailure | None = None
        root_next = False
        for ev in sc.events:
            if not ev.pattern_id.startswith(_CF_PREFIX):
                continue
            part = ev.pattern_id[len(_CF_PREFIX) :]
            msg = ev.message
            if part.startswith("rootcause"):
                root_next = True
                continue
            if part.startswith("header"):
                root_next = False
                cur = None
                continue
            if part.startswith("time") or cur is None or ev.line - cur.line > 10:
                cur = ChildFailure(ev.file, ev.line, is_root=root_next, task=ev.task)
                root_next = False
                out.append(cur)
            cur.events.append(ev)
            if m := _CF_TIME.match(msg):
                cur.time = m["t"]
            if m := _CF_HOST.match(msg):
                cur.host = m["host"]
            if m := _CF_RANK.match(msg):
                cur.rank, cur.local_rank = int(m["rank"]), int(m["lr"])
            if m := _CF_EXIT.match(msg):
                cur.exitcode = int(m["code"])
                cur.pid = int(m["pid"]) if m["pid"] else None
    return out


def _geometry(scans: list[FileScan], failures: list[ChildFailure]) -> Geometry:
    g = Geometry()
    votes: Counter[int] = Counter()
    tasks: set[int] = set()
    world: Counter[int] = Counter()
    for sc in scans:
        for ev in sc.events:
            if ev.task is not None:
                tasks.add(ev.task)
            if ev.rank is not None and ev.local_rank is not None and ev.task:
                d, r = divmod(ev.rank - ev.local_rank, ev.task)
                if r == 0 and d > 0:
                    votes[d] += 1
            ws = ev.fields.get("world_size")
            if ws is None and ev.fields.get("arg") == "world_size":
                ws = ev.fields.get("value")
            if ws and ws.isdigit():
                world[int(ws)] += 1
            if m := _SRUN_TASKS.search(ev.message):
                spec = m["spec"]
                if spec.isdigit() and "[" not in m["host"] and "," not in m["host"]:
                    g.task_hosts.setdefault(int(spec), m["host"])
                for part in spec.split(","):
                    lo, _, hi = part.partition("-")
                    if lo.isdigit():
                        tasks.update(range(int(lo), int(hi or lo) + 1))
    for cf in failures:
        if cf.rank is not None and cf.local_rank is not None and cf.task:
            d, r = divmod(cf.rank - cf.local_rank, cf.task)
            if r == 0 and d > 0:
                votes[d] += 1
    if world:
        g.world_size = world.most_common(1)[0][0]
    tasks |= set(g.task_hosts)
    if tasks:
        g.nnodes = max(tasks) + 1
    if votes:
        g.nproc_per_node = votes.most_common(1)[0][0]
        g.evidence.append("lines carrying srun label, torchrun header and [rankN] together")
    elif g.world_size and g.nnodes and g.world_size % g.nnodes == 0 and g.nnodes > 1:
        g.nproc_per_node = g.world_size // g.nnodes
        g.evidence.append(f"world size {g.world_size} over {g.nnodes} srun tasks")
    elif g.world_size and g.nnodes == 1:
        g.nproc_per_node = g.world_size
        g.evidence.append(f"world size {g.world_size} on one node")
    if g.nproc_per_node and g.world_size and not g.nnodes:
        g.nnodes = max(1, g.world_size // g.nproc_per_node)
    return g


def job_year(scans: list[FileScan]) -> int:
    """The year for stamps that print none: the most common year printed in the job."""
    years: Counter[int] = Counter()
    for sc in scans:
        years.update(sc.years)
    if years:
        return years.most_common(1)[0][0]
    mtimes = []
    for sc in scans:
        try:
            mtimes.append(sc.file.path.stat().st_mtime)
        except OSError:
            continue
    return datetime.fromtimestamp(min(mtimes)).year if mtimes else datetime.now().year


@dataclass
class Attributed:
    """Events with node, rank and time resolved, plus the geometry that allowed it."""

    events: list[tuple[RawEvent, dict[str, object]]]
    geometry: Geometry
    failures: list[ChildFailure]
    year: int


def attribute(scans: list[FileScan]) -> Attributed:
    """Resolve node, global rank and time for every event of the job."""
    failures = child_failures(scans)
    geo = _geometry(scans, failures)
    year = job_year(scans)
    # Worker pids: torchrun names them with their local rank; NCCL prints them in its prefix.
    pid_local: dict[int, int] = {}
    pid_rank: dict[int, int] = {}
    for sc in scans:
        for ev in sc.events:
            p, lr = ev.fields.get("pid", ""), ev.fields.get("local_rank", "")
            if p.isdigit() and lr.isdigit():
                pid_local[int(p)] = int(lr)
    for cf in failures:
        if cf.pid is not None and cf.rank is not None:
            pid_rank[cf.pid] = cf.rank
        if cf.pid is not None and cf.local_rank is not None:
            pid_local[cf.pid] = cf.local_rank
    cf_of: dict[int, ChildFailure] = {}
    for cf in failures:
        for ev in cf.events:
            cf_of[id(ev)] = cf
    out: list[tuple[RawEvent, dict[str, object]]] = []
    for sc in scans:
        # A per-rank file (torchrun --log-dir) holds one rank: a [rankN] on any line names it.
        file_rank = None
        if sc.file.local_rank is not None:
            ranks = {ev.rank for ev in sc.events if ev.rank is not None}
            if len(ranks) == 1:
                file_rank = ranks.pop()
        for ev in sc.events:
            rank = ev.rank if ev.rank is not None else file_rank
            if rank is None and (g := ev.fields.get("global_rank", "")).isdigit():
                rank = int(g)
            local_rank = ev.local_rank
            if local_rank is None and (lr := ev.fields.get("local_rank", "")).isdigit():
                local_rank = int(lr)
            wpid = ev.fields.get("pid", "")
            if rank is None and wpid.isdigit() and int(wpid) in pid_rank:
                rank = pid_rank[int(wpid)]  # e.g. "Sending process P closing signal SIGTERM"
            if ev.nccl_pid is not None:
                if rank is None:
                    rank = pid_rank.get(ev.nccl_pid)
                if local_rank is None:
                    local_rank = pid_local.get(ev.nccl_pid)
            node_index = ev.task
            host = ev.nccl_host or sc.file.node_hint
            cf = cf_of.get(id(ev))
            if cf is not None:
                rank, local_rank = cf.rank, cf.local_rank
                host = cf.host or host
            n = geo.nproc_per_node
            if rank is None and n and local_rank is not None and node_index is not None:
                rank = node_index * n + local_rank
            if n and rank is not None:
                if node_index is None or cf is not None:
                    node_index = rank // n
                if local_rank is None:
                    local_rank = rank % n
            if host is None and node_index is not None:
                host = geo.task_hosts.get(node_index)
            host = short_host(host)
            t = ev.stamp.to_datetime(year) if ev.stamp else None
            out.append(
                (
                    ev,
                    {
                        "rank": rank,
                        "local_rank": local_rank,
                        "node_index": node_index,
                        "host": host,
                        "time": t,
                    },
                )
            )
    return Attributed(out, geo, failures, year)


def ranks_by_node(attributed: Attributed) -> dict[int, set[int]]:
    """Global ranks seen per node index."""
    out: dict[int, set[int]] = defaultdict(set)
    for _ev, a in attributed.events:
        if a["node_index"] is not None and a["rank"] is not None:
            out[a["node_index"]].add(a["rank"])  # type: ignore[index,arg-type]
    return out

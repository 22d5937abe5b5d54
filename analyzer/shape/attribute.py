"""Attribute every event to a node, a global rank and a wall-clock time.

Global ranks come from the logs alone: a ``[rankN]:`` prefix, a ChildFailedError block, or
node index × processes-per-node + local rank once the job's geometry is visible (a line that
carries the srun label, the torchrun header and ``[rankN]:`` together, Megatron's world size
over the number of nodes, or torchrun's own summary). Without geometry the rank stays null.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType

import regex

from analyzer.catalog.model import Catalog, Pattern
from analyzer.lines.timestamps import Stamp
from analyzer.read.commranks import Claim, CommRanks, comm_ranks
from analyzer.read.file import TRACEBACK_MAX_LINES, FileScan, RawEvent

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
    task_is_rank: bool = False
    """One srun task per GPU (no torchrun): an srun task id is the global rank, not a node."""
    distinct_hosts: bool = True
    """Host names tell nodes apart (one host per node index, no host on two indices)."""
    one_node: bool = False
    """Nothing in the logs shows a second node (see ``_one_node``): a local rank is the global
    rank."""

    def node_label(self, host: str | None, node_index: int | None) -> str | None:
        """What every view calls a node: its host name when hosts tell nodes apart, else its
        index (a test box standing in for several nodes, or torchrun's FQDN ``localhost``)."""
        if host and (self.distinct_hosts or node_index is None):
            return host
        if node_index is not None:
            return str(node_index)
        return host

    def resolve(self, facts_world_size: object, facts_nproc: object) -> None:
        """Settle world size, processes per node and node count once, from geometry and the
        job's facts; every later stage reads these fields instead of recomputing them."""
        if isinstance(facts_world_size, int) and facts_world_size > 0:
            self.world_size = facts_world_size
        if not self.nproc_per_node and isinstance(facts_nproc, int) and facts_nproc > 0:
            self.nproc_per_node = facts_nproc
        if not self.world_size and self.nproc_per_node and self.nnodes:
            self.world_size = self.nproc_per_node * self.nnodes
        if self.world_size and self.nproc_per_node and not self.nnodes:
            self.nnodes = max(1, self.world_size // self.nproc_per_node)


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


def child_failures(scans: list[FileScan], roles: Roles) -> list[ChildFailure]:
    """Reassemble torchrun's ChildFailedError blocks from their tagged field lines."""
    out: list[ChildFailure] = []
    for sc in scans:
        cur: ChildFailure | None = None
        root_next = False
        for ev in sc.events:
            tags = roles.tags(ev)
            if "childfailed-rootcause" in tags:
                root_next = True
                continue
            if "childfailed-header" in tags:
                root_next = False
                cur = None
                continue
            if "childfailed-field" not in tags:
                continue
            if "childfailed-start" in tags or cur is None or ev.line - cur.line > 10:
                cur = ChildFailure(ev.file, ev.line, is_root=root_next, task=ev.task)
                root_next = False
                out.append(cur)
            cur.events.append(ev)
            cur.time = roles.get(ev, "time") or cur.time
            cur.host = roles.get(ev, "host") or cur.host
            if (rank := roles.int(ev, "global_rank")) is not None:
                cur.rank, cur.local_rank = rank, roles.int(ev, "local_rank")
            if (code := roles.int(ev, "exit_code")) is not None:
                cur.exitcode = code
                cur.pid = roles.int(ev, "pid")
    return out


def _geometry(scans: list[FileScan], failures: list[ChildFailure], roles: Roles) -> Geometry:
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
            ws = roles.get(ev, "world_size")
            if ws is None and ev.fields.get("arg") == "world_size":
                ws = ev.fields.get("value")  # Megatron's argument block: "world_size .... 16"
            if ws and ws.isdecimal():
                world[int(ws)] += 1
            if spec := roles.get(ev, "task"):  # srun's task lines: which tasks ran where
                host = roles.get(ev, "host") or ""
                ids = task_ids(spec)
                if spec.isdecimal() and host and not any(c in host for c in "[],"):
                    g.task_hosts.setdefault(int(spec), host)
                tasks.update(ids)
    for cf in failures:
        if cf.rank is not None and cf.local_rank is not None and cf.task:
            d, r = divmod(cf.rank - cf.local_rank, cf.task)
            if r == 0 and d > 0:
                votes[d] += 1
    if world:
        g.world_size = world.most_common(1)[0][0]
    if _one_task_per_rank(scans, votes):
        g.task_is_rank = True
        g.evidence.append("srun task ids are global ranks (one srun task per GPU, no torchrun)")
        return g
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
    seen = _seen(scans, failures, roles)
    if _one_node(seen, g):
        g.one_node = True
        g.evidence.append("one node: no srun label, one host, no rank beyond a local rank")
    if g.world_size is None and _one_worker(seen, g):
        g.world_size = 1
        g.evidence.append("one worker: the launcher killed a single subprocess, on one host")
    return g


_LOOPBACK = ("localhost", "127.0.0.1")


@dataclass
class _Seen:
    """What the events say about the job's extent, gathered in one pass for the single-node
    and single-worker tests."""

    task: bool = False
    """Some line carries an srun label."""
    mismatch: bool = False
    """Some line or ChildFailedError record gives a global rank other than its local rank."""
    hosts: set[str] = field(default_factory=set)
    """Host names (loopback names left out: torchrun's FQDN ``localhost`` names no node)."""
    locals: set[int] = field(default_factory=set)
    globals: set[int] = field(default_factory=set)
    killed: set[int] = field(default_factory=set)
    """Worker pids a launcher's teardown names (tag ``subprocess-kill``)."""


def _seen(scans: list[FileScan], failures: list[ChildFailure], roles: Roles) -> _Seen:
    out = _Seen()
    for sc in scans:
        if sc.file.node_hint:
            out.hosts.add(short_host(sc.file.node_hint) or "")
        for ev in sc.events:
            out.task = out.task or ev.task is not None
            h = roles.get(ev, "host") or ev.nccl_host
            if h and h not in _LOOPBACK:
                out.hosts.add(short_host(h) or h)
            lr = ev.local_rank if ev.local_rank is not None else roles.int(ev, "local_rank")
            r = ev.rank if ev.rank is not None else roles.int(ev, "global_rank")
            if lr is not None:
                out.locals.add(lr)
            if r is not None:
                out.globals.add(r)
                out.mismatch = out.mismatch or (lr is not None and lr != r)
            if "subprocess-kill" in roles.tags(ev) and (pid := roles.int(ev, "pid")) is not None:
                out.killed.add(pid)
    for cf in failures:
        if cf.rank is not None and cf.local_rank is not None and cf.rank != cf.local_rank:
            out.mismatch = True
        if cf.host and cf.host not in _LOOPBACK:
            out.hosts.add(short_host(cf.host) or cf.host)
    return out


def _many_nodes(seen: _Seen, g: Geometry) -> bool:
    """Any sign of a second node: an srun label or task line, two host names, a global rank
    other than its local rank, or a global rank no local rank reaches."""
    return (
        bool(g.task_hosts)
        or g.task_is_rank
        or seen.task
        or seen.mismatch
        or len(seen.hosts) > 1
        or bool(seen.globals and seen.locals and max(seen.globals) > max(seen.locals))
    )


def _one_worker(seen: _Seen, g: Geometry) -> bool:
    """Whether the launcher started one worker in all: its teardown names every worker it
    started, and here it names one pid, with no sign of a second node or of a rank above 0."""
    if (g.nnodes or 1) > 1 or _many_nodes(seen, g):
        return False
    return len(seen.killed) == 1 and not any(x > 0 for x in seen.locals | seen.globals)


def _one_node(seen: _Seen, g: Geometry) -> bool:
    """Whether the logs show a single-node job, so that local rank N is global rank N.

    Any sign of a second node says no (``_many_nodes``), as do a node count or a world size
    above the processes per node. A paste of one node's log from a multi-node job usually
    shows one of these (NCCL's and torchrun's prefixes name the host; ``[rankN]`` prefixes give
    global ranks)."""
    if g.nnodes is not None:
        return g.nnodes == 1
    if g.world_size and g.nproc_per_node and g.world_size > g.nproc_per_node:
        return False
    if _many_nodes(seen, g):
        return False
    if g.world_size and seen.locals and g.world_size <= max(seen.locals):
        return False
    return bool(seen.locals)


def _one_task_per_rank(scans: list[FileScan], votes: Counter[int]) -> bool:
    """One srun task per GPU: lines that carry both an srun label and a ``[rankN]`` prefix show
    task id = rank on at least two tasks, and never differ. (Several tasks on one host are not
    enough: a test box standing in for several nodes looks the same.)"""
    if votes:
        return False
    same: set[int] = set()
    for sc in scans:
        for ev in sc.events:
            if ev.task is not None and ev.rank is not None:
                if ev.task != ev.rank:
                    return False
                same.add(ev.task)
    return len(same) >= 2


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


@dataclass(frozen=True, slots=True)
class Attribution:
    """Where and when one event happened, as attribution resolved it."""

    rank: int | None
    local_rank: int | None
    node_index: int | None
    host: str | None
    time: datetime | None
    node: str | None = None
    """The label every view shows (host name or node index, see ``Geometry.node_label``)."""
    rank_assumed: bool = False
    """The rank is the local rank, assumed because the logs show a single node."""


@dataclass
class Attributed:
    """Events with node, rank and time resolved, plus the geometry that allowed it."""

    events: list[tuple[RawEvent, Attribution]]
    geometry: Geometry
    failures: list[ChildFailure]
    year: int
    roles: Roles = field(default_factory=lambda: Roles(None))


def attribute(scans: list[FileScan], catalog: Catalog | None = None) -> Attributed:
    """Resolve node, global rank and time for every event of the job.

    Captures are read by the role the catalog declares for them (``global_rank``, ``pid``,
    ``host`` ...), never by their name or by re-parsing the message.
    """
    roles = Roles(catalog)
    failures = child_failures(scans, roles)
    geo = _geometry(scans, failures, roles)
    year = job_year(scans)
    # Worker pids: torchrun names them with their local rank; NCCL prints them in its prefix.
    pid_local: dict[int, int] = {}
    pid_rank: dict[int, int] = {}
    for sc in scans:
        for ev in sc.events:
            p, lr = roles.int(ev, "pid"), roles.int(ev, "local_rank")
            if p is not None and lr is not None:
                pid_local[p] = lr
    for cf in failures:
        if cf.pid is not None and cf.rank is not None:
            pid_rank[cf.pid] = cf.rank
        if cf.pid is not None and cf.local_rank is not None:
            pid_local[cf.pid] = cf.local_rank
    comm = _comm_ranks(scans, roles, geo)
    cf_of: dict[int, ChildFailure] = {}
    for cf in failures:
        for ev in cf.events:
            cf_of[id(ev)] = cf
    out: list[tuple[RawEvent, Attribution]] = []
    # Events of one process at one printed second share one time and one attribution object
    # (a large job has a hundred times more events than distinct attributions).
    times: dict[Stamp, datetime | None] = {}
    alike: dict[tuple[object, ...], Attribution] = {}
    for sc in scans:
        # A per-rank file (torchrun --log-dir) holds one rank: a [rankN] on any line names it.
        file_rank = None
        if sc.file.local_rank is not None:
            ranks = {ev.rank for ev in sc.events if ev.rank is not None}
            if len(ranks) == 1:
                file_rank = ranks.pop()
        owner: tuple[int, int] | None = None  # (local rank, line) of a traceback's owner
        for ev in sc.events:
            rank = ev.rank if ev.rank is not None else file_rank
            if rank is None:
                rank = roles.int(ev, "global_rank")
            local_rank = ev.local_rank
            if local_rank is None:
                local_rank = roles.int(ev, "local_rank")
            # mp.spawn prints "-- Process N terminated with the following error:" and then
            # process N's traceback: its events are process N's, up to another writer's line.
            if "traceback-owner" in roles.tags(ev) and local_rank is not None:
                owner = (local_rank, ev.line)
            elif owner is not None:
                if ev.rank is not None or ev.local_rank is not None or ev.task is not None:
                    owner = None
                elif rank is None and local_rank is None:
                    if ev.line - owner[1] <= TRACEBACK_MAX_LINES:
                        local_rank = owner[0]
                    else:
                        owner = None
            wpid = roles.int(ev, "pid")
            if wpid is None:
                wpid = ev.prefix_pid  # a Ray actor's pid= names the process that wrote the line
            if rank is None and wpid is not None and wpid in pid_rank:
                rank = pid_rank[wpid]  # e.g. "Sending process P closing signal SIGTERM"
            if ev.nccl_pid is not None:
                if rank is None:
                    rank = pid_rank.get(ev.nccl_pid)
                if local_rank is None:
                    local_rank = pid_local.get(ev.nccl_pid)
            if rank is None and comm and ev.nccl_pid is not None:
                rank = comm.rank_of(short_host(ev.nccl_host), ev.nccl_pid, ev.nccl_dev)
            node_index = ev.task
            host = roles.get(ev, "host") or ev.nccl_host or ev.prefix_host or sc.file.node_hint
            if geo.task_is_rank and ev.task is not None:
                rank = ev.task if rank is None else rank
                host = host or geo.task_hosts.get(ev.task)
                node_index = None
            block = cf_of.get(id(ev))
            if block is not None:
                rank, local_rank = block.rank, block.local_rank
                host = block.host or host
            assumed = False
            if rank is None and local_rank is not None and geo.one_node and block is None:
                rank, assumed = local_rank, True
            n = geo.nproc_per_node
            if rank is None and n and local_rank is not None and node_index is not None:
                rank = node_index * n + local_rank
            if n and rank is not None:
                if node_index is None or block is not None:
                    node_index = rank // n
                if local_rank is None:
                    local_rank = rank % n
            if host is None and node_index is not None:
                host = geo.task_hosts.get(node_index)
            host = short_host(host)
            stamp = ev.stamp
            if stamp is None:
                t = None
            else:
                t = times.get(stamp)
                if t is None:
                    t = times[stamp] = stamp.to_datetime(year)
            key = (rank, local_rank, node_index, host, t, assumed)
            a = alike.get(key)
            if a is None:
                a = alike[key] = Attribution(rank, local_rank, node_index, host, t, None, assumed)
            out.append((ev, a))
    alike.clear()
    geo.distinct_hosts = _hosts_tell_nodes_apart(out, geo)
    labelled: dict[int, Attribution] = {}
    for i, (ev, a) in enumerate(out):  # in place
        got = labelled.get(id(a))
        if got is None:
            got = labelled[id(a)] = replace(a, node=geo.node_label(a.host, a.node_index))
        out[i] = (ev, got)
    return Attributed(out, geo, failures, year, roles)


def _comm_ranks(scans: list[FileScan], roles: Roles, geo: Geometry) -> CommRanks:
    """The process -> rank map that NCCL's init and channel lines give (``commranks.py``)."""
    claims: list[Claim] = []
    for sc in scans:
        for ev in sc.events:
            rank = roles.int(ev, "comm_rank")
            host = short_host(roles.get(ev, "host") or ev.nccl_host)
            pid = roles.int(ev, "pid")
            if rank is None or host is None or pid is None:
                continue
            claims.append(
                Claim(host, pid, roles.int(ev, "cuda_dev"), rank, roles.int(ev, "comm_size"))
            )
    return comm_ranks(claims, geo.world_size) if claims else CommRanks()


def _hosts_tell_nodes_apart(events: list[tuple[RawEvent, Attribution]], geo: Geometry) -> bool:
    pairs: dict[int, set[str]] = {}
    for _ev, a in events:
        if a.node_index is not None and a.host:
            pairs.setdefault(a.node_index, set()).add(a.host)
    for task, host in geo.task_hosts.items():
        pairs.setdefault(task, set()).add(host)
    # One host per node index and no host on two indices; a test box standing in for several
    # nodes, or torchrun's FQDN "localhost", do not tell nodes apart.
    single = [next(iter(hs)) for hs in pairs.values() if len(hs) == 1]
    return not pairs or (len(single) == len(pairs) and len(set(single)) == len(single))

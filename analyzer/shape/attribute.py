"""Attribute every event to a node, a global rank and a wall-clock time.

Global ranks come from the logs alone: a ``[rankN]:`` prefix, a ChildFailedError block, or
node index × processes-per-node + local rank once the job's geometry is visible (a line that
carries the srun label, the torchrun header and ``[rankN]:`` together, Megatron's world size
over the number of nodes, or torchrun's own summary). Without geometry the rank stays null.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime

import regex

from analyzer.catalog.claims import MessageClaims, Strength, message_claims
from analyzer.catalog.model import Catalog
from analyzer.lines.timestamps import Stamp
from analyzer.read.commranks import Claim, CommRanks, comm_ranks
from analyzer.read.file import TRACEBACK_MAX_LINES, FileScan, RawEvent
from analyzer.shape.childfailed import ChildFailure, child_failures
from analyzer.shape.geometry import Geometry, resolve_geometry
from analyzer.shape.roles import Roles, short_host

__all__ = ["Attributed", "Attribution", "Geometry", "Roles", "attribute", "job_year"]


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
    ``host`` ...), never by their name or by re-parsing the message. The job's shape is
    settled first (``resolve_geometry``), from every event; then each event is placed.
    """
    roles = Roles(catalog)
    failures = child_failures(scans, roles)
    geo = resolve_geometry(scans, failures, roles)
    ctx = _Context(roles, geo, job_year(scans), *_worker_pids(scans, failures, roles))
    ctx.comm = _comm_ranks(scans, roles, geo)
    ctx.blocks = {id(ev): cf for cf in failures for ev in cf.events}
    out: list[tuple[RawEvent, Attribution]] = []
    for sc in scans:
        _attribute_file(sc, ctx, out)
    for cf in failures:  # placed: their events live on in ``out`` alone (freed as records come)
        cf.events = []
    geo.distinct_hosts = _hosts_tell_nodes_apart(out, geo)
    labelled: dict[int, Attribution] = {}
    for i, (ev, a) in enumerate(out):  # in place
        got = labelled.get(id(a))
        if got is None:
            got = labelled[id(a)] = replace(a, node=geo.node_label(a.host, a.node_index))
        out[i] = (ev, got)
    return Attributed(out, geo, failures, ctx.year, roles)


@dataclass
class _Context:
    """What placing one event needs to know of the whole job."""

    roles: Roles
    geo: Geometry
    year: int
    pid_local: dict[int, int]
    """Worker pid -> local rank (torchrun names them together)."""
    pid_rank: dict[int, int]
    """Worker pid -> global rank (ChildFailedError records)."""
    comm: CommRanks = field(default_factory=CommRanks)
    claims: MessageClaims = field(default_factory=message_claims)
    """The declared message claims (``patterns/claims/ranks.toml``)."""
    blocks: dict[int, ChildFailure] = field(default_factory=dict)
    """id(raw event) -> the ChildFailedError record it belongs to."""
    times: dict[Stamp, datetime | None] = field(default_factory=dict)
    alike: dict[tuple[object, ...], Attribution] = field(default_factory=dict)
    """Events of one process at one printed second share one attribution object (a large job
    has a hundred times more events than distinct attributions)."""


def _worker_pids(
    scans: list[FileScan], failures: list[ChildFailure], roles: Roles
) -> tuple[dict[int, int], dict[int, int]]:
    """Worker pid -> local rank and pid -> global rank: torchrun names pids with their local
    rank, ChildFailedError records with both."""
    pid_local: dict[int, int] = {}
    pid_rank: dict[int, int] = {}
    declared = roles.names
    for sc in scans:
        for ev in sc.events:
            if "local_rank" not in declared(ev.pattern_id):
                continue  # most events: a pattern with no local rank to give
            lr = roles.int(ev, "local_rank")  # the rarer of the two: asked first
            if lr is None:
                continue
            p = roles.int(ev, "pid")
            if p is not None:
                pid_local[p] = lr
    for cf in failures:
        if cf.pid is not None and cf.rank is not None:
            pid_rank[cf.pid] = cf.rank
        if cf.pid is not None and cf.local_rank is not None:
            pid_local[cf.pid] = cf.local_rank
    return pid_local, pid_rank


def _file_rank(sc: FileScan) -> int | None:
    """A per-rank file holds one rank: the one its name gives (``rank0.log`` among
    ``rank1.log``…: ``read.filerank``), or, in torchrun's --log-dir, a [rankN] on any line."""
    if sc.file.rank is not None:
        return sc.file.rank
    if sc.file.local_rank is None:
        return None
    ranks = {ev.rank for ev in sc.events if ev.rank is not None}
    return ranks.pop() if len(ranks) == 1 else None


def default_pg_rank(ev: RawEvent) -> int | None:
    """The rank a ProcessGroupNCCL line names inside the default process group
    (``[PG ID 0 PG GUID 0(default_pg) Rank 3]``, ``[PG 0 Rank 3]``): there the group's rank
    is the global rank. A subgroup's rank, or ``[Rank 3]`` with no group, names no global
    rank."""
    f = ev.fields
    pg_rank = f.get("pg_rank")
    if pg_rank and pg_rank.isdecimal():
        if f.get("pg_desc") == "default_pg" or f.get("pg_id") == "0":
            return int(pg_rank)
        return None
    m = _DEFAULT_PG.search(ev.text) if "Rank " in ev.text else None
    return int(m[1]) if m else None


_DEFAULT_PG = regex.compile(r"\[PG (?:ID )?0 (?:PG GUID 0(?:\(default_pg\))? )?Rank (\d+)\]")
"""ProcessGroupNCCL's prefix of a default-group message inside any line (a ``what():`` line
another pattern claims): ``[PG ID 0 PG GUID 0(default_pg) Rank 2]``, ``[PG 0 Rank 2]``."""


def _attribute_file(sc: FileScan, ctx: _Context, out: list[tuple[RawEvent, Attribution]]) -> None:
    """Place every event of one file, in order (a traceback's owner carries over lines)."""
    file_rank = _file_rank(sc)
    owner: tuple[int, int] | None = None  # (local rank, line) of a traceback's owner
    roles = ctx.roles
    for ev in sc.events:
        declared = roles.names(ev.pattern_id)  # empty for most events: no role to look up
        rank = ev.rank if ev.rank is not None else file_rank
        if rank is None and declared:
            rank = roles.int(ev, "global_rank")
        if rank is None:
            rank = default_pg_rank(ev)
        local_rank = ev.local_rank
        if local_rank is None and declared:
            local_rank = roles.int(ev, "local_rank")
        local_rank, owner = _owned(ev, rank, local_rank, owner, roles)
        rank, local_rank = _by_worker(ev, rank, local_rank, ctx)
        claimed = False
        if rank is None and local_rank is None:
            rank, claimed = _claimed(ev, ctx.claims)
        out.append((ev, _place(ev, sc, rank, local_rank, ctx, claimed)))


def _claimed(ev: RawEvent, claims: MessageClaims) -> tuple[int | None, bool]:
    """The rank a message claim reads from a line no prefix, capture or worker names a rank
    for, and whether it is only assumed global (a process group's own ``[Rank N]``)."""
    got = claims.rank_of(ev.message)
    if got is None:
        return None, False
    rank, claim = got
    return rank, claim.strength == Strength.ASSUMED


def _owned(
    ev: RawEvent,
    rank: int | None,
    local_rank: int | None,
    owner: tuple[int, int] | None,
    roles: Roles,
) -> tuple[int | None, tuple[int, int] | None]:
    """mp.spawn prints "-- Process N terminated with the following error:" and then process
    N's traceback: its events are process N's, up to another writer's line. Returns the
    event's local rank and the owner for the next line."""
    if "traceback-owner" in roles.tags(ev) and local_rank is not None:
        return local_rank, (local_rank, ev.line)
    if owner is None:
        return local_rank, None
    if ev.rank is not None or ev.local_rank is not None or ev.task is not None:
        return local_rank, None
    if rank is None and local_rank is None:
        if ev.line - owner[1] <= TRACEBACK_MAX_LINES:
            return owner[0], owner
        return local_rank, None
    return local_rank, owner


def _by_worker(
    ev: RawEvent, rank: int | None, local_rank: int | None, ctx: _Context
) -> tuple[int | None, int | None]:
    """Rank and local rank from the worker's pid (the launcher's, Ray's or NCCL's prefix) and
    from NCCL's communicator lines."""
    wpid = ctx.roles.int(ev, "pid")
    if wpid is None:
        wpid = ev.prefix_pid  # a Ray actor's pid= names the process that wrote the line
    if rank is None and wpid is not None and wpid in ctx.pid_rank:
        rank = ctx.pid_rank[wpid]  # e.g. "Sending process P closing signal SIGTERM"
    if ev.nccl_pid is not None:
        if rank is None:
            rank = ctx.pid_rank.get(ev.nccl_pid)
        if local_rank is None:
            local_rank = ctx.pid_local.get(ev.nccl_pid)
    if rank is None and ctx.comm and ev.nccl_pid is not None:
        rank = ctx.comm.rank_of(short_host(ev.nccl_host), ev.nccl_pid, ev.nccl_dev)
    return rank, local_rank


def _place(
    ev: RawEvent,
    sc: FileScan,
    rank: int | None,
    local_rank: int | None,
    ctx: _Context,
    claimed: bool = False,
) -> Attribution:
    """The event's attribution: its ChildFailedError record first, then the job's shape
    (one node: local rank is global; node index × processes per node + local rank)."""
    geo = ctx.geo
    host = ctx.roles.get(ev, "host") or ev.nccl_host or ev.prefix_host or sc.file.node_hint
    own = "step-daemon" not in ctx.roles.tags(ev)
    rank, node_index, host, from_task = _by_task(geo, ev, rank, host, own)
    block = ctx.blocks.get(id(ev))
    if block is not None:
        rank, local_rank = block.rank, block.local_rank
        host = block.host or host
    assumed = rank is None and local_rank is not None and geo.one_node and block is None
    if assumed:
        rank = local_rank
    elif from_task and block is None:
        assumed = geo.task_rank_assumed  # the task id taken as the rank from the shape alone
    elif claimed and block is None:
        assumed = True  # a message claim whose rank is global only in the default group
    rank, local_rank, node_index = _by_shape(geo, rank, local_rank, node_index, block)
    if host is None and node_index is not None:
        host = geo.task_hosts.get(node_index)
    key = (rank, local_rank, node_index, short_host(host), _time(ev, ctx), assumed)
    a = ctx.alike.get(key)
    if a is None:
        a = ctx.alike[key] = Attribution(*key[:5], None, assumed)
    return a


def _by_task(
    geo: Geometry, ev: RawEvent, rank: int | None, host: str | None, own: bool = True
) -> tuple[int | None, int | None, str | None, bool]:
    """(rank, node index, host, whether the rank is the srun task id) of an event: the task
    id is the node index, or the rank when each srun task is a rank (``task_is_rank``). A line
    that is not the task's own (``own``: slurmstepd's message in that task's stream) gives its
    node only."""
    if not geo.task_is_rank or ev.task is None:
        return rank, ev.task, host, False
    if rank is not None or not own:
        return rank, None, host or geo.task_hosts.get(ev.task), False
    return ev.task, None, host or geo.task_hosts.get(ev.task), True


def _by_shape(
    geo: Geometry,
    rank: int | None,
    local_rank: int | None,
    node_index: int | None,
    block: ChildFailure | None,
) -> tuple[int | None, int | None, int | None]:
    """Rank, local rank and node index completed from the processes per node."""
    n = geo.nproc_per_node
    if not n:
        return rank, local_rank, node_index
    if rank is None and local_rank is not None and node_index is not None:
        rank = node_index * n + local_rank
    if rank is not None:
        if node_index is None or block is not None:
            node_index = rank // n
        if local_rank is None:
            local_rank = rank % n
    return rank, local_rank, node_index


def _time(ev: RawEvent, ctx: _Context) -> datetime | None:
    """The event's wall-clock time (one ``datetime`` per distinct stamp)."""
    stamp = ev.stamp
    if stamp is None:
        return None
    t = ctx.times.get(stamp)
    if t is None:
        t = ctx.times[stamp] = stamp.to_datetime(ctx.year)
    return t


def _comm_ranks(scans: list[FileScan], roles: Roles, geo: Geometry) -> CommRanks:
    """The process -> rank map that NCCL's init and channel lines give (``commranks.py``)."""
    claims: list[Claim] = []
    declared = roles.names
    for sc in scans:
        for ev in sc.events:
            if "comm_rank" not in declared(ev.pattern_id):
                continue
            rank = roles.int(ev, "comm_rank")
            if rank is None:
                continue  # a claim pattern's line without a rank: no host or pid to look up
            host = short_host(roles.get(ev, "host") or ev.nccl_host)
            pid = roles.int(ev, "pid")
            if host is None or pid is None:
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

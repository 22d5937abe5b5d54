"""The job's shape: world size, nodes, processes per node and node labels, settled once.

Resolved from all the evidence before any rank is attributed: srun labels and task lines,
lines carrying the srun label, the torchrun header and ``[rankN]`` together, world sizes and
the launcher's and Megatron's arguments, ChildFailedError records, host names.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from analyzer.read.file import FileScan, RawEvent
from analyzer.shape.childfailed import ChildFailure
from analyzer.shape.roles import Roles, short_host, task_ids

MAX_WORLD = 1_000_000
"""A larger world size is a misread number, not a job."""


class HasRank(Protocol):
    """Anything with a (global) rank: an event, a record."""

    @property
    def rank(self) -> int | None: ...


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
    task_rank_assumed: bool = False
    """``task_is_rank`` read from the job's shape alone (two tasks on one host, no launcher
    inside srun), not from lines that show task = rank: a rank taken so is *assumed*."""
    distinct_hosts: bool = True
    """Host names tell nodes apart (one host per node index, no host on two indices)."""
    one_node: bool = False
    """Nothing in the logs shows a second node (see ``_one_node``): a local rank is the global
    rank."""

    @property
    def world(self) -> int | None:
        """The world size when it is known (and sane), else None."""
        ws = self.world_size
        return ws if isinstance(ws, int) and 0 < ws <= MAX_WORLD else None

    def ranks(self, rows: Iterable[HasRank]) -> set[int]:
        """Every rank of the job: ``range(world size)`` when it is known, else the ranks that
        ``rows`` name."""
        ws = self.world
        if ws is not None:
            return set(range(ws))
        return {r.rank for r in rows if r.rank is not None}

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
class _Extent:
    """What the events say of the job's size, gathered in one pass."""

    votes: Counter[int] = field(default_factory=Counter)
    """Processes per node, as lines with an srun label and both ranks imply them."""
    tasks: set[int] = field(default_factory=set)
    world: Counter[int] = field(default_factory=Counter)
    declared: dict[str, int] = field(default_factory=dict)
    """The first world size, processes per node and node count the job's arguments state
    (Megatron's argument block, a ``world_size`` capture): the job's facts say the same."""


def _vote(votes: Counter[int], rank: int | None, local_rank: int | None, task: int | None) -> None:
    """A line (or record) with a global rank, a local rank and an srun task implies the
    processes per node: (rank - local rank) / task."""
    if rank is not None and local_rank is not None and task:
        d, r = divmod(rank - local_rank, task)
        if r == 0 and d > 0:
            votes[d] += 1


def _world_size_of(ev: RawEvent, roles: Roles) -> str | None:
    ws = roles.get(ev, "world_size")
    if ws is None and ev.fields.get("arg") == "world_size":
        ws = ev.fields.get("value")  # Megatron's argument block: "world_size .... 16"
    if ws is not None and counts_agents(ev.traceback):
        return None  # the agents' rendezvous store counts launchers (nodes), not workers
    return ws


AGENT_STORE = "torch/distributed/elastic/rendezvous/"
"""A store error raised inside torchrun's own rendezvous (``static_tcp_rendezvous``,
``c10d_rendezvous_backend``): its ``1/2 clients joined`` counts the agents, one per node, not
the workers."""


def counts_agents(traceback: str | None) -> bool:
    """Whether a line's world size was raised inside torchrun's own rendezvous
    (``AGENT_STORE``): a count of agents, never the job's world size."""
    return AGENT_STORE in (traceback or "")


_DECLARED_ARGS = ("world_size", "nproc_per_node", "nnodes")


def _declare(declared: dict[str, int], ev: RawEvent) -> None:
    """The sizes an argument line or a ``world_size`` capture states, first seen kept."""
    arg, value = ev.fields.get("arg"), ev.fields.get("value")
    if arg in _DECLARED_ARGS and value is not None:
        _keep(declared, str(arg), value)
    ws = ev.fields.get("world_size")
    if ws and not counts_agents(ev.traceback):
        _keep(declared, "world_size", ws)


def _keep(declared: dict[str, int], key: str, value: str) -> None:
    v = value.strip()
    if key not in declared and v.isdecimal() and int(v) > 0:
        declared[key] = int(v)


def _extent(
    scans: list[FileScan], failures: list[ChildFailure], roles: Roles, g: Geometry
) -> _Extent:
    """Votes for the processes per node, the srun tasks seen, the world sizes printed; srun's
    task lines also fill ``g.task_hosts`` (which tasks ran where)."""
    out = _Extent()
    for sc in scans:
        for ev in sc.events:
            if ev.task is not None:
                out.tasks.add(ev.task)
            _vote(out.votes, ev.rank, ev.local_rank, ev.task)
            if not ev.fields:
                continue  # no capture: no world size, argument or task to read
            ws = _world_size_of(ev, roles)
            if ws and ws.isdecimal():
                out.world[int(ws)] += 1
            _declare(out.declared, ev)
            if spec := roles.get(ev, "task"):
                host = roles.get(ev, "host") or ""
                if spec.isdecimal() and host and not any(c in host for c in "[],"):
                    g.task_hosts.setdefault(int(spec), host)
                out.tasks.update(task_ids(spec))
    for cf in failures:
        _vote(out.votes, cf.rank, cf.local_rank, cf.task)
    return out


def _nodes_and_processes(g: Geometry, ext: _Extent) -> None:
    """Node count from the srun tasks; processes per node from the votes, else from the world
    size over the nodes."""
    tasks = ext.tasks | set(g.task_hosts)
    if tasks:
        g.nnodes = max(tasks) + 1
    if ext.votes:
        g.nproc_per_node = ext.votes.most_common(1)[0][0]
        g.evidence.append("lines carrying srun label, torchrun header and [rankN] together")
    elif g.world_size and g.nnodes and g.world_size % g.nnodes == 0 and g.nnodes > 1:
        g.nproc_per_node = g.world_size // g.nnodes
        g.evidence.append(f"world size {g.world_size} over {g.nnodes} srun tasks")
    elif g.world_size and g.nnodes == 1:
        g.nproc_per_node = g.world_size
        g.evidence.append(f"world size {g.world_size} on one node")
    if g.nproc_per_node and g.world_size and not g.nnodes:
        g.nnodes = max(1, g.world_size // g.nproc_per_node)


def resolve_geometry(scans: list[FileScan], failures: list[ChildFailure], roles: Roles) -> Geometry:
    """The job's shape from every event and ChildFailedError record, before any rank is
    attributed: what the lines show, then what the job's arguments state."""
    g = Geometry()
    ext = _extent(scans, failures, roles, g)
    if ext.world:
        g.world_size = ext.world.most_common(1)[0][0]
    if _one_task_per_rank(scans, ext.votes, roles):
        g.task_is_rank = True
        g.evidence.append("srun task ids are global ranks (one srun task per GPU, no torchrun)")
    elif (
        len(ext.tasks) >= 2
        and not ext.votes
        and "nproc_per_node" not in ext.declared
        and _mpi_tasks(scans, failures, roles)
    ):
        g.task_is_rank = g.task_rank_assumed = True
        g.evidence.append(
            "srun task ids taken as global ranks: an MPI job (Open MPI or UCX lines) and no line "
            "shows a launcher inside srun (no local rank, no rank label)"
        )
    else:
        _nodes_and_processes(g, ext)
        _single(g, _seen(scans, failures, roles))
    g.resolve(ext.declared.get("world_size"), ext.declared.get("nproc_per_node"))
    return g


def _single(g: Geometry, seen: _Seen) -> None:
    """One node (a local rank is the global rank), or one worker in all."""
    if _one_node(seen, g):
        g.one_node = True
        g.evidence.append("one node: no srun label, one host, no rank beyond a local rank")
    if g.world_size is None and _one_worker(seen, g):
        g.world_size = 1
        g.evidence.append("one worker: the launcher killed a single subprocess, on one host")


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
    listed: set[int] = field(default_factory=set)
    """Local ranks seen outside a launcher's death records (which name only the dead)."""
    globals: set[int] = field(default_factory=set)
    killed: set[int] = field(default_factory=set)
    """Worker pids a launcher's teardown names (tag ``subprocess-kill``)."""


def _see(out: _Seen, ev: RawEvent, roles: Roles) -> None:
    """Add one event's hosts, ranks and teardown pids to ``out``."""
    out.task = out.task or ev.task is not None
    declared = roles.names(ev.pattern_id)  # empty for most events: no role to look up
    h = (declared and roles.get(ev, "host")) or ev.nccl_host
    if h and h not in _LOOPBACK:
        out.hosts.add(short_host(h) or h)
    lr = ev.local_rank
    if lr is None and declared:
        lr = roles.int(ev, "local_rank")
    r = ev.rank
    if r is None and declared:
        r = roles.int(ev, "global_rank")
    if lr is not None:
        out.locals.add(lr)
        if "death-record" not in roles.tags(ev):
            out.listed.add(lr)
    if r is not None:
        out.globals.add(r)
        out.mismatch = out.mismatch or (lr is not None and lr != r)
    killed = declared and "subprocess-kill" in roles.tags(ev)
    if killed and (pid := roles.int(ev, "pid")) is not None:
        out.killed.add(pid)


def _seen(scans: list[FileScan], failures: list[ChildFailure], roles: Roles) -> _Seen:
    out = _Seen()
    for sc in scans:
        if sc.file.node_hint:
            out.hosts.add(short_host(sc.file.node_hint) or "")
        for ev in sc.events:
            _see(out, ev, roles)
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
        or _beyond_locals(seen)
    )


def _beyond_locals(seen: _Seen) -> bool:
    """A global rank no local rank reaches. A launcher's death records name only the workers
    that died, so when they are the only local ranks seen, the global ranks count only when
    they do not start at 0 (a later node's ranks): a node's first worker is global rank 0 only
    on the first node, where every local rank is its global rank."""
    if not seen.globals or not seen.locals:
        return False
    if seen.listed:
        return max(seen.globals) > max(seen.listed)
    return max(seen.globals) > max(seen.locals) and min(seen.globals) > 0


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


def _mpi_tasks(scans: list[FileScan], failures: list[ChildFailure], roles: Roles) -> bool:
    """An MPI job launched by srun itself (the caller has seen two srun tasks or more): lines
    only an MPI process prints (tag ``mpi-process``) and none of a launcher inside srun, so
    each srun task is one MPI rank (one task holding every line is mpirun inside srun)."""
    if _launcher_inside(scans, failures, roles):
        return False  # first: in a torchrun job the first ranked line says so
    return any("mpi-process" in roles.tags(ev) for sc in scans for ev in sc.events)


def _launcher_inside(scans: list[FileScan], failures: list[ChildFailure], roles: Roles) -> bool:
    """Any sign in the lines of a launcher that starts workers inside an srun task (torchrun,
    DeepSpeed, accelerate): a local rank, a ``[rankN]``/``[defaultN]`` label, a
    ChildFailedError record. (Its arguments, ``--nproc-per-node``, are the caller's test.)"""
    if failures:
        return True
    for sc in scans:
        for ev in sc.events:
            if ev.rank is not None or ev.local_rank is not None:
                return True
            if roles.int(ev, "local_rank") is not None or roles.int(ev, "global_rank") is not None:
                return True
    return False


def _one_task_per_rank(scans: list[FileScan], votes: Counter[int], roles: Roles) -> bool:
    """One srun task per GPU: lines that carry both an srun label and a rank of their own (a
    ``[rankN]`` prefix, or a process announcing its global rank: Lightning's ``Initializing
    distributed: GLOBAL_RANK: 2`` in MLPerf submissions of Lambda, v4.0, part N, and of
    mlcommons v5.0 and v5.1, part M) show task id = rank on at least two tasks, and never
    differ. (Several tasks on one host are not enough: a test box standing in for several
    nodes looks the same.)"""
    if votes:
        return False
    same: set[int] = set()
    for sc in scans:
        for ev in sc.events:
            if ev.task is None:
                continue
            rank = ev.rank if ev.rank is not None else roles.int(ev, "global_rank")
            if rank is not None:
                if ev.task != rank:
                    return False
                same.add(ev.task)
    return len(same) >= 2

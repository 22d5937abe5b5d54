"""The launch facts a fix step's condition reads, derived from the job's events.

Whether every node used the same MASTER_PORT (``ports_agree``), whether the store host a
rendezvous error names is the allocation's master (``store_on_master``: a port check is advice
for that host only), whether the checkpoints were on node-local storage
(``checkpoints_node_local``) and whether ``uv`` itself is missing where the job runs
(``uv_missing``). Each is True, False or None (the logs do not tell); None never rules a step
out. Read by capture and tag only, never by pattern id.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import regex

from analyzer.decide.nodefacts import printed_facts
from analyzer.decide.rowmemo import per_rows
from analyzer.model.event import Event
from analyzer.shape.attribute import Geometry

NODE_LOCAL = regex.compile(r"^(?:/tmp\b|/local\b|/dev/shm\b|/scratch/local\b|/var/tmp\b|"
                           r"\$\{?TMPDIR\b|/local/scratch\b)")
"""Paths that are node-local by convention (what a job's ``TMPDIR`` points at)."""

_LOOPBACK = regex.compile(r"^(?:127\.\d+\.\d+\.\d+|localhost|::1|\[::1\])$", regex.I)
_IP = regex.compile(r"^\[?[\d.:a-f]+\]?$", regex.I)


def is_address(host: str) -> bool:
    """An IP address (which host it is, a line does not say)."""
    return bool(_IP.match(host.strip()))


def _node_key(r: Event) -> str | None:
    if r.node_index is not None:
        return str(r.node_index)
    return str(r.node) if r.node is not None else None


_PORT_CAPTURES = frozenset({"arg", "endpoint", "port"})
"""The captures ``_ports_of`` reads."""


def _ports_of(r: Event) -> set[str]:
    """The MASTER_PORTs a line shows: torchrun's ``rdzv_endpoint``/``master_port`` argument,
    the rendezvous endpoint an error names, or the store port a client reached for (or a
    server failed to listen on)."""
    arg, value = r.cap("arg"), str(r.cap("value") or "")
    if arg == "master_port" and value.isdigit():
        return {value}
    if arg != "rdzv_endpoint":
        value = str(r.cap("endpoint") or "")  # a rendezvous endpoint an error names
    if arg in ("rdzv_endpoint", None) and ":" in value and value.rsplit(":", 1)[1].isdigit():
        return {value.rsplit(":", 1)[1]}
    port = str(r.cap("port") or "")
    return {port} if port.isdigit() else set()


@per_rows
def node_ports(rows: Sequence[Event]) -> dict[str, set[str]]:
    """node -> the MASTER_PORTs its lines show."""
    per: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        if _PORT_CAPTURES.isdisjoint(r.captures):
            continue  # most lines: no capture a port could be read from
        node = _node_key(r)
        ports = _ports_of(r) if node is not None else set()
        if node is not None and ports:
            per[node] |= ports
    for node, (port, _) in printed_facts(rows).per_node("master_port").items():
        if port.isdigit():  # the MASTER_PORT the node's task printed (echo line, env dump)
            per[node].add(port)
    return dict(per)


def ports_agree(rows: Sequence[Event]) -> bool | None:
    """True when two or more nodes show their port and it is the same one, False when the
    ports differ, None when fewer than two nodes show one."""
    per = node_ports(rows)
    if len(per) < 2:
        return None
    return len(set().union(*per.values())) == 1


def _short(host: str) -> str:
    host = host.strip().strip("[]()").lower()
    return host if _IP.match(host) else host.split(".")[0]


def allocation_hosts(rows: Sequence[Event], geo: Geometry) -> set[str]:
    """The hosts the job's lines show it ran on (srun labels, host prefixes, slurmstepd)."""
    hosts = {_short(h) for h in geo.task_hosts.values() if h}
    hosts |= {_short(str(h)) for h in {r.host for r in rows} if h}  # each distinct host once
    return hosts


def _master_host(rows: Sequence[Event], geo: Geometry) -> str | None:
    if geo.task_hosts.get(0):
        return _short(geo.task_hosts[0])
    return next((_short(str(r.host)) for r in rows if r.node_index == 0 and r.host), None)


def store_on_master(row: Event, rows: Sequence[Event], geo: Geometry) -> bool | None:
    """Whether the store host ``row`` names is the master: False for a host outside the
    allocation the logs show, for another node than the master, and for the loopback address
    of a node other than the master; None when the logs do not tell."""
    named = row.cap("store_host") or row.cap("addr")
    if not named:
        return None
    host = _short(str(named))
    if _LOOPBACK.match(host):  # the reporting node itself
        master = _master_host(rows, geo)
        if geo.distinct_hosts and row.host and master:
            return _short(str(row.host)) == master
        return None if row.node_index is None else row.node_index == 0
    if _IP.match(host):
        return None  # an address: which host it is the logs do not say
    hosts = allocation_hosts(rows, geo)
    if not hosts:
        return None
    if host not in hosts:
        return False
    master = _master_host(rows, geo)
    return None if master is None else host == master


@per_rows
def checkpoints_node_local(rows: Sequence[Event]) -> bool:
    """Megatron loaded from or saved to a node-local path (``/tmp``, ``$TMPDIR`` ...)."""
    return any(NODE_LOCAL.match(str(r.cap("path") or "")) for r in rows
               if r.tagged("checkpoint-load") or r.tagged("checkpoint-save-begin"))


@per_rows
def uv_missing(rows: Sequence[Event]) -> bool:
    """The shell or slurmstepd could not find ``uv`` itself (an image or node without it)."""
    return any(
        "path" in r.captures
        and str(r.cap("path") or "").rsplit("/", 1)[-1] == "uv"
        and regex.search(r"command not found|execve|No such file", r.text or "")
        for r in rows
    )


@per_rows
def gpus_per_node(rows: Sequence[Event]) -> int | None:
    """The GPUs one node lists (nvidia-smi's table rows or ``--query-gpu`` CSV lines: a GPU
    index with its name), the most any node lists; None when no node lists its GPUs."""
    per: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        if "gpu_name" not in r.captures:
            continue
        gpu = r.cap("gpu")
        if r.cap("gpu_name") and gpu is not None and str(gpu).isdigit():
            per[_node_key(r) or r.host or r.file or "?"].add(str(gpu))
    return max((len(v) for v in per.values()), default=None)


def launch_facts(row: Event, rows: Sequence[Event], geo: Geometry) -> dict[str, Any]:
    """The launch facts of a fix's conditions for the verdict's ``row``."""
    return {
        "gpus_per_node": gpus_per_node(rows),
        "ports_agree": ports_agree(rows),
        "store_on_master": store_on_master(row, rows, geo),
        "checkpoints_node_local": checkpoints_node_local(rows) or None,
        "uv_missing": uv_missing(rows) or None,
    }

"""Global ranks from NCCL's own lines: which process is which rank of the job's communicator.

NCCL prefixes every line with ``host:pid:tid [dev]`` and names no rank. Two of its INFO lines
do: ``comm 0x… rank R nranks N cudaDev D … - Init START|COMPLETE`` (``nccl.ctx.comm_init``)
and the channel lines ``Channel 00/0 : R[…] -> P[…] via …`` (``nccl.ctx.channel``; the
writer's rank first, or second on ``[receive]`` lines). Their rank is the rank in *that*
communicator, which is the global rank only for a communicator spanning the whole job, so
the claims are used only when they read as one such communicator:

- a communicator line of fewer ranks than the largest one seen is a subgroup and is left out
  (split communicators never match the pattern); when the job's world size is known, the
  largest communicator must have that size;
- every process (host, pid, device) claims one rank, and no rank is claimed by two
  processes; a channel rank must be below the communicator size when one is known.

Any conflict drops every claim: a log that mixes communicators names no rank this way.

A line then takes the rank of its process (host, pid, device; or host and pid when the
process drives one GPU). A process with no claim of its own takes ``device + k`` when the
other processes of its host agree on one offset ``k`` between rank and device (two at least,
on distinct devices): launchers give a node a block of consecutive ranks, device = local rank.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import regex

NCCL_PREFIX = regex.compile(
    r"(?:\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[^\]]*\] )?"
    r"(?P<host>[A-Za-z0-9][\w.-]*):(?P<pid>\d+):\d+ \[(?P<dev>\d+)\]"
)
"""NCCL's line prefix (``[time] `` on 2.26+ WARN lines), as the reader leaves it in the
message."""


@dataclass(frozen=True, slots=True)
class Claim:
    """One NCCL line saying which communicator rank its process holds."""

    host: str
    pid: int
    dev: int | None
    rank: int
    size: int | None = None
    """The communicator's rank count (init lines); None for channel lines."""


@dataclass
class CommRanks:
    """Process -> global rank, as NCCL's lines of the job's communicator give it."""

    by_proc: dict[tuple[str, int, int | None], int] = field(default_factory=dict)
    by_pid: dict[tuple[str, int], int] = field(default_factory=dict)
    offset: dict[str, int] = field(default_factory=dict)
    """Host -> rank minus device, where the host's processes agree on it."""

    def rank_of(self, host: str | None, pid: int | None, dev: int | None) -> int | None:
        """The global rank of the process that wrote an NCCL line, or None."""
        if host is None or pid is None:
            return None
        r = self.by_proc.get((host, pid, dev))
        if r is None:
            r = self.by_pid.get((host, pid))
        if r is None and dev is not None and host in self.offset:
            r = dev + self.offset[host]
        return r

    def __bool__(self) -> bool:
        return bool(self.by_proc)


def nccl_writer(message: str) -> tuple[str, int, int] | None:
    """(host, pid, device) of an NCCL line, from its prefix; None for any other line."""
    m = NCCL_PREFIX.match(message)
    return (m["host"], int(m["pid"]), int(m["dev"])) if m else None


def comm_ranks(claims: Iterable[Claim], world_size: int | None = None) -> CommRanks:
    """The process -> rank map of the job-wide communicator, or an empty map when the claims
    do not read as one (see the module docstring)."""
    kept = _job_wide(list(claims), world_size)
    by_proc = _one_rank_each(kept) if kept else None
    if not by_proc:
        return CommRanks()
    return CommRanks(by_proc, _by_pid(by_proc), _offsets(by_proc))


_Proc = tuple[str, int, int | None]
"""A process: (host, pid, device)."""


def _job_wide(claims: list[Claim], world_size: int | None) -> list[Claim]:
    """The claims about the largest communicator (none when its size is not the job's world
    size): its init lines, and the channel lines whose rank fits in it."""
    sizes = [c.size for c in claims if c.size]
    top = max(sizes) if sizes else None
    if top is not None and world_size and top != world_size:
        return []
    return [
        c for c in claims
        if (c.size == top if c.size is not None else top is None or c.rank < top)
    ]


def _one_rank_each(kept: list[Claim]) -> dict[_Proc, int] | None:
    """Process -> rank when every process claims one rank and no rank is claimed by two
    processes; None otherwise (more than one communicator)."""
    procs: dict[_Proc, set[int]] = defaultdict(set)
    for c in kept:
        procs[(c.host, c.pid, c.dev)].add(c.rank)
    owner: dict[int, _Proc] = {}
    by_proc: dict[_Proc, int] = {}
    for key, ranks in procs.items():
        if len(ranks) != 1:
            return None  # one process, two ranks: more than one communicator
        (r,) = ranks
        if owner.setdefault(r, key) != key:
            return None  # one rank, two processes: more than one communicator
        by_proc[key] = r
    return by_proc


def _by_pid(by_proc: dict[_Proc, int]) -> dict[tuple[str, int], int]:
    """(host, pid) -> rank for the processes whose lines all name one rank."""
    per_pid: dict[tuple[str, int], set[int]] = defaultdict(set)
    for (host, pid, _dev), r in by_proc.items():
        per_pid[(host, pid)].add(r)
    return {k: next(iter(v)) for k, v in per_pid.items() if len(v) == 1}


def _offsets(by_proc: dict[_Proc, int]) -> dict[str, int]:
    """Host -> rank minus device, where two processes or more of the host on distinct
    devices agree on it."""
    per_host: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for (host, _pid, dev), r in by_proc.items():
        if dev is not None:
            per_host[host].append((dev, r))
    out: dict[str, int] = {}
    for host, pairs in per_host.items():
        devs = {d for d, _r in pairs}
        offsets = {r - d for d, r in pairs}
        if len(devs) == len(pairs) >= 2 and len(offsets) == 1:
            out[host] = offsets.pop()
    return out

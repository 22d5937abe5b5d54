"""What NCCL prints at ``NCCL_DEBUG=INFO`` while a Megatron job's communicators start (the
``nccl-info`` benchmark profile, ``generate.py --nccl-info``).

Every line follows NCCL 2.21.5's format strings (``src/init.cc``, ``src/graph/connect.cc``,
``src/graph/rings.cc``, ``src/graph/tuning.cc``, ``src/transport/p2p.cc``,
``src/transport/net.cc``, ``src/transport/net_ib.cc``; the same text from 2.18 to 2.27, which
adds the function name in front of ``comm %p`` and an ``Init timings`` line): per communicator
of a rank, in the order NCCL prints them,

- ``ncclCommInitRank comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx
  - Init START``;
- ``comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d``;
- on the communicator's rank 0, ``Channel %02d/%02d :`` and the ring's first ranks
  (``rings.cc`` ``dumpLine``, cut at 128 characters with ``...``);
- ``Trees [c] d0/d1/d2->rank->up ...`` (one line, every channel);
- ``P2P Chunksize set to %d``;
- the ring's connections, one line per channel: ``Channel %02d/0 : a[da] -> b[db] via
  P2P/CUMEM/read`` to a peer on the node, else ``... [send] via NET/IB/%d/GDRDMA`` and the
  ``[receive]`` line from the previous rank; ``Connected all rings``; the trees' connections
  across nodes (the same forms); ``Connected all trees``;
- ``threadThresholds %ld/%ld/%ld | %ld/%ld/%ld | %ld | %ld``;
- ``%d coll channels, %d collnet channels, %d nvls channels, %d p2p channels, %d p2p channels
  per peer``;
- ``ncclCommInitRank comm %p ... - Init COMPLETE``.

A Megatron job with tensor parallelism 8 (a node), pipeline parallelism 2 and data
parallelism world/16 creates tens of communicators per rank: the default group (world), and
tensor-, pipeline-, data-, model- and embedding-parallel groups of sizes 8, 2, world/8 and so on
(``COMM_SIZES``). Later, as pipeline stages start sending, NCCL connects point-to-point
channels with ``connIndex`` 1: ``Channel %02d/1 : a[da] -> b[db] [send] via NET/IB/%d/GDRDMA``
(``p2p_lines``).
"""

from __future__ import annotations

import random

COMM_SIZES = ("world", 8, 2, "world/8")
"""Sizes of a rank's communicators, in creation order, repeated to ``COMMS`` of them."""
COMMS = 24
"""Communicators per rank (the default group first)."""
CHANNELS_NVLINK = 24
"""Channels of a communicator inside one node (NVLink)."""
CHANNELS_NET = 16
"""Channels of a communicator across nodes (8 NICs x 2)."""
P2P_CHANNELS = 8
"""Point-to-point channels per peer opened during training (``Channel NN/1``)."""
THRESHOLDS = "8/8/64 | 8192/8/64 | 512 | 512"


def _size(kind: str | int, world: int) -> int:
    if kind == "world":
        return world
    if kind == "world/8":
        return max(1, world // 8)
    return min(int(kind), world)


def _members(size: int, rank: int, world: int, gpus: int) -> list[int]:
    """The global ranks of ``rank``'s communicator of ``size``: the node (size <= gpus), the
    ranks of one local rank across nodes (world/8 and the like), else a stride across the
    job (pipeline pairs)."""
    if size >= world:
        return list(range(world))
    if size <= gpus and gpus % size == 0:
        base = rank - rank % size
        return list(range(base, base + size))
    stride = world // size
    first = rank % stride
    return [first + i * stride for i in range(size)]


def _ptr(rnd: random.Random) -> str:
    return f"0x{rnd.getrandbits(44) | (0x55 << 40):x}"


def startup_lines(
    host: str, pid: int, lr: int, rank: int, world: int, gpus: int, rnd: random.Random
) -> list[str]:
    """Every INFO line ``rank`` prints while its communicators start (without newlines)."""
    nodes = max(1, world // gpus)
    pre = f"{host}:{pid}:{pid} [{lr}] NCCL INFO "
    bus = f"{lr + 1:x}9000" if lr < 8 else f"{lr:x}000"
    hca = lr % 8
    out = [
        f"{pre}Bootstrap : Using ib0:10.3.{rank // gpus % 256}.{lr}<0>",
        f"{pre}NCCL version 2.21.5+cuda12.4",
        f"{pre}NET/IB : Using [0]mlx5_{hca}:1/IB [1]mlx5_{(hca + 1) % 8}:1/IB [RO]; "
        f"OOB ib0:10.3.{rank // gpus % 256}.{lr}<0>",
        f"{pre}Using network IB",
        f"{pre}DMA-BUF is available on GPU device {lr}",
        f"{pre}Setting affinity for GPU {lr} to ffff,ffffffff,00000000,0000ffff",
    ]
    kinds = [COMM_SIZES[i % len(COMM_SIZES)] for i in range(COMMS)]
    for kind in kinds:
        size = _size(kind, world)
        members = _members(size, rank, world, gpus)
        out += _comm_lines(pre, members, rank, gpus, nodes, lr, bus, hca, rnd)
    return out


def _dev(r: int, gpus: int) -> int:
    return r % gpus


def _comm_lines(
    pre: str,
    members: list[int],
    rank: int,
    gpus: int,
    nodes: int,
    lr: int,
    bus: str,
    hca: int,
    rnd: random.Random,
) -> list[str]:
    """One communicator's start, as ``rank`` prints it."""
    n = len(members)
    me = members.index(rank)
    comm = _ptr(rnd)
    cid = f"0x{rnd.getrandbits(64):x}"
    node_of = {r: r // gpus for r in members}
    n_nodes = len(set(node_of.values()))
    local = sum(1 for r in members if node_of[r] == node_of[rank])
    local_rank = sum(1 for r in members[:me] if node_of[r] == node_of[rank])
    nch = CHANNELS_NVLINK if n_nodes == 1 else CHANNELS_NET
    if n == 1:
        nch = 32
    head = f"comm {comm} rank {me} nranks {n} cudaDev {lr} nvmlDev {lr} busId {bus} commId {cid}"
    out = [f"{pre}ncclCommInitRank {head} - Init START"]
    out.append(
        f"{pre}comm {comm} rank {me} nRanks {n} nNodes {n_nodes} localRanks {local} "
        f"localRank {local_rank} MNNVL 0"
    )
    if me == 0:
        width = len(str(n - 1))
        for c in range(nch):
            line = f"Channel {c:02d}/{nch:02d} :"
            for i in range(n):  # snprintf into 128 bytes; an overflow ends in "..."
                if len(line) >= 127:
                    break
                line += f" {(i + c) % n:>{width}}"
            if len(line) >= 128:
                line = line[:124] + "..."
            out.append(pre + line)
    nxt, prv = (me + 1) % n, (me - 1) % n
    up = -1 if me == 0 else (me - 1) // 2
    downs = [d for d in (2 * me + 1, 2 * me + 2) if d < n]
    d0, d1 = [*downs, -1, -1][:2]
    trees = "".join(f" [{c}] {d0}/{d1}/-1->{me}->{up}" for c in range(nch))
    out.append(f"{pre}Trees{trees}"[: len(pre) + 1023])
    out.append(f"{pre}P2P Chunksize set to 131072")
    if n > 1:
        peer_n, peer_p = members[nxt], members[prv]
        for c in range(nch):
            out += _connect(pre, c, 0, me, rank, nxt, peer_n, prv, peer_p, gpus, hca)
    out.append(f"{pre}Connected all rings")
    if n > 1 and n_nodes > 1:
        for c in range(nch):
            for d in downs:
                out += _connect(pre, c, 0, me, rank, d, members[d], d, members[d], gpus, hca)
    out.append(f"{pre}Connected all trees")
    out.append(f"{pre}threadThresholds {THRESHOLDS}")
    out.append(
        f"{pre}{nch} coll channels, {nch} collnet channels, 0 nvls channels, 32 p2p channels, "
        "32 p2p channels per peer"
    )
    out.append(f"{pre}ncclCommInitRank {head} - Init COMPLETE")
    return out


def _connect(
    pre: str,
    c: int,
    conn: int,
    me: int,
    rank: int,
    to: int,
    to_global: int,
    frm: int,
    frm_global: int,
    gpus: int,
    hca: int,
) -> list[str]:
    """The connection lines of one channel: send to ``to``, receive from ``frm`` (comm
    ranks; ``*_global`` their global ranks, for the node and device)."""
    dev = rank % gpus
    ch = f"Channel {c:02d}/{conn}"
    if to_global // gpus == rank // gpus:
        return [f"{pre}{ch} : {me}[{dev}] -> {to}[{to_global % gpus}] via P2P/CUMEM/read"]
    return [
        f"{pre}{ch} : {me}[{dev}] -> {to}[{to_global % gpus}] [send] via NET/IB/{hca}/GDRDMA",
        f"{pre}{ch} : {frm}[{frm_global % gpus}] -> {me}[{dev}] [receive] via NET/IB/{hca}/GDRDMA",
    ]


def p2p_lines(
    host: str, pid: int, tid: int, lr: int, rank: int, world: int, gpus: int
) -> list[str]:
    """The point-to-point connections a pipeline stage opens to its peer stage when training
    starts (``connIndex`` 1, across nodes): send and receive lines per channel."""
    pre = f"{host}:{pid}:{tid} [{lr}] NCCL INFO "
    half = max(1, world // 2)
    peer = (rank + half) % world
    me, other = (0, 1) if rank < half else (1, 0)
    out = []
    for c in range(P2P_CHANNELS):
        out += _connect(pre, c, 1, me, rank, other, peer, other, peer, gpus, lr % 8)
    return out

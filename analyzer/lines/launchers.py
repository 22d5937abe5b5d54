"""The launchers' prefixes inside srun's / pdsh's: Open MPI's ``--tag-output``, a Ray actor or
SkyPilot's per-node prefix, Determined's ``[rank=N]`` and a launcher tag (NeMo-Run's
``i.pretrain/0 ``). ``analyzer.lines.prefixes.split_prefixes`` peels them after the outer
prefixes; each is one declared rank claim (``patterns/claims/ranks.toml``) with its examples."""

from __future__ import annotations

import regex

from analyzer.lines.chars import LETTERS

_OMPI = regex.compile(r"\[(?:\d+,)?(\d{1,6})\]<(?:stdout|stderr|stddiag)>: ?")
_RAY = regex.compile(
    r"\((?:[A-Za-z_][\w.:-]*(?:\[rank=(?P<rank>\d{1,6})\]| rank=(?P<rank>\d{1,6}))? )?"
    r"pid=(?P<pid>\d+)(?:, ip=(?P<ip>[0-9A-Fa-f.:]+))?\) "
)
"""A Ray actor's prefix: ``(RayTrainWorker pid=1193, ip=10.244.4.193) ``; an actor whose name
carries its rank (NeMo-RL's ``(MegatronPolicyWorker[rank=8] pid=4154549) ``) names it, as does
vLLM's multiprocess worker prefix in the same shape (``(VllmWorker rank=5 pid=50999) ``)."""
_SKY = regex.compile(
    r"\((?:head|worker\d{1,6}), rank=(?P<node>\d{1,6}), (?:ip=(?P<ip>[0-9A-Fa-f.:]+), )?"
    r"pid=(?P<pid>\d+)(?:, ip=(?P<ip2>[0-9A-Fa-f.:]+))?\) "
)
"""SkyPilot's per-node prefix (``(head, rank=0, pid=27079) ``, ``(worker1, rank=1, pid=2769,
ip=10.100.10.12) ``): the rank is the node's (``SKYPILOT_NODE_RANK``), a node index like srun's
task id, not a process's global rank."""
_DETERMINED = regex.compile(r"(?:\[[\w.:-]*\] )?\[rank=(\d{1,6})\] ")
"""Determined's trial log prefix ``[container] [rank=N] `` (N is the global rank)."""
_TAG = regex.compile(r"[A-Za-z][\w.-]*/\d+ (?=\[)|[A-Za-z]\w{0,15}: (?=\[rank\d{1,6}\]:)")
"""A launcher tag in front of a bracket (NeMo-Run's ``i.pretrain/0 ``), or a one-word label a
CI harness puts in front of c10d's rank prefix (``Error: [rank0]: Traceback …``)."""
def launchers(
    line: str, pos: int, host: str | None
) -> tuple[int, int | None, int | None, str | None, int | None]:
    """OpenMPI's ``--tag-output``, a Ray actor or SkyPilot's node prefix, Determined's
    ``[rank=N]``, a launcher tag: (where the rest starts, rank, worker pid, host, node index)."""
    rank: int | None = None
    worker_pid: int | None = None
    node: int | None = None
    c = line[pos : pos + 1]
    if c == "[" or c >= "\x80":
        m = _OMPI.match(line, pos)
        if m:
            rank = int(m[1])
            pos = m.end()
            c = line[pos : pos + 1]
    if c == "(" or c >= "\x80":
        m = _RAY.match(line, pos)
        if m:
            worker_pid = int(m["pid"])
            host = m["ip"] or host
            rank = int(m["rank"]) if m["rank"] else rank
            pos = m.end()
            c = line[pos : pos + 1]
        else:
            m = _SKY.match(line, pos)
            if m:
                worker_pid, node = int(m["pid"]), int(m["node"])
                host = m["ip"] or m["ip2"] or host
                pos = m.end()
                m = _OMPI.match(line, pos)  # mpirun inside SkyPilot: (head, …) [1,0]<stdout>:
                if m:
                    rank = int(m[1])
                    pos = m.end()
                c = line[pos : pos + 1]
    if c == "[" or c >= "\x80":
        m = _DETERMINED.match(line, pos)
        if m:
            rank = int(m[1])
            pos = m.end()
            c = line[pos : pos + 1]
    if c in LETTERS or c >= "\x80":
        m = _TAG.match(line, pos)
        if m:
            pos = m.end()
    return pos, rank, worker_pid, host, node



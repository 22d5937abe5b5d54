"""Launch mistakes the logs show by their content, with or without the batch script.

Independent worlds with no srun label to tell the nodes apart (argument blocks and iteration
lines printed once per world), a launcher's ``--nnodes`` other than the allocation's node count,
the workers' own output missing (a ``--log-dir`` on a node-local path), and MASTER_ADDR set on
each node. Each finding is a :class:`Found`; ``analyzer.decide.advisories`` turns it into an
advisory. Events are read by tag, capture role and well-known field only.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from analyzer.decide.fixfacts import NODE_LOCAL
from analyzer.decide.nodefacts import printed_facts
from analyzer.model.event import CANDIDATE, CONTEXT, ROOT, Event

NOT_MASTER_ADVICE = frozenset({"master-addr", "master-port", "port-free", "find-first",
                               "missing-nodes"})
"""Fix topics a launch mistake that is not about the store's address makes irrelevant."""


@dataclass
class Found:
    """One launch mistake the logs show."""

    rule: str
    message: str
    fix: str
    evidence: list[str]
    severity: str = "warning"
    explains: frozenset[str] = frozenset()
    """Verdict categories this mistake explains."""
    drops: frozenset[str] = frozenset()
    """Topics of the verdict's fix this mistake makes irrelevant."""
    patterns: tuple[str, ...] = field(default_factory=tuple)


def where(r: Event) -> str:
    """``file:line: text`` of an event (an advisory's evidence)."""
    return f"{r.file}:{r.line}: {(r.text or '').strip()}"


def _tagged(rows: Sequence[Event], tag: str) -> list[Event]:
    return [r for r in rows if r.tagged(tag)]


def _copies(progress: list[Event]) -> tuple[int, int]:
    """(lines per iteration, how often the last iteration was printed) of the progress lines
    (folded lines counted by their ``repeats``)."""
    its = [int(str(r.cap("iteration"))) for r in progress]
    if not its:
        return 0, 0
    span = max(its) - min(its) + 1
    lines = sum(r.repeats for r in progress)
    last = sum(r.repeats for r, n in zip(progress, its, strict=True) if n == max(its))
    return lines // span, last


def _blocks(rows: Sequence[Event]) -> tuple[Any, str, list[Event]]:
    """(attempt, world size, its reports): the world size Megatron reported most often in
    one attempt (folded lines counted by their ``repeats``)."""
    by: dict[tuple[Any, str], list[Event]] = defaultdict(list)
    for r in _tagged(rows, "world-size-report"):
        ws = str(r.role_of("world_size") or "")
        if ws.isdigit():
            by[(r.attempt, ws)].append(r)
    if not by:
        return None, "", []
    (attempt, ws), blocks = max(by.items(), key=lambda kv: sum(r.repeats for r in kv[1]))
    return attempt, ws, blocks


def _saved_twice(rows: Sequence[Event], attempt: Any) -> list[tuple[Any, Any]]:
    """(path, iteration) of the checkpoint saves started twice in ``attempt``."""
    saves = Counter((r.cap("path"), r.cap("iteration")) for r in
                    _tagged(rows, "checkpoint-save-begin")
                    if r.attempt == attempt and r.cap("path"))
    return [k for k, c in saves.items() if c > 1]


def independent_worlds(rows: Sequence[Event]) -> Found | None:
    """Megatron's argument block printed two or more times with the same world size in one
    run, and every iteration (down to the last one) or a checkpoint save printed as often:
    the nodes each ran their own world (``--standalone`` or ``--nnodes=1``) though no srun
    label tells them apart. A restart from scratch prints the block again too, but does not
    end on the same iteration twice."""
    attempt, ws, blocks = _blocks(rows)
    n = sum(r.repeats for r in blocks)
    if n < 2:
        return None
    progress = [r for r in _tagged(rows, "progress") if r.attempt == attempt
                and str(r.cap("iteration") or "").isdigit()]
    per, last = _copies(progress)
    twice = _saved_twice(rows, attempt)
    side_by_side = per >= n and last >= n
    if not (side_by_side or twice):
        return None
    said = [f"Megatron's argument block printed {n} times with world size {ws}"]
    if side_by_side:
        said.append(f"every iteration printed {n} times, the last one too")
    if twice:
        said.append(f"{len(twice)} checkpoint(s) saved twice to the same path ({twice[0][0]})")
    return Found(
        "worker-group",
        f"{', '.join(said)}: the nodes ran {n} independent worlds of {ws} ranks (each its own "
        "--standalone or --nnodes=1 launcher), each training its own copy of the model",
        '--nnodes "$SLURM_NNODES" --node-rank "$SLURM_NODEID" --master-addr "$MASTER_ADDR" '
        "(no --standalone)",
        [where(r) for r in blocks[:1]] + [where(r) for r in progress[-2:]],
    )


def _launcher_nnodes(rows: Sequence[Event], job: Any) -> tuple[int, str] | None:
    """(nodes, where) the launcher was told: the script's ``--nnodes``, else torchrun's
    ``min_nodes`` (printed with LOGLEVEL=INFO)."""
    srun = getattr(job, "main_srun", None)
    if srun is not None and srun.launchers:
        opt = srun.launchers[0].opts.get("nnodes")
        value = opt.value.split(":")[-1] if opt is not None else ""
        if value.isdigit():
            return int(value), f"--nnodes {opt.value} in the script"
    for r in rows:
        if r.cap("arg") == "min_nodes" and str(r.cap("value") or "").isdigit():
            return int(str(r.cap("value"))), where(r)
    for _, (value, r) in sorted(printed_facts(rows).per_node("nnodes").items()):
        if value.isdigit():
            return int(value), where(r)
    return None


def _nodes_launched(rows: Sequence[Event]) -> int | None:
    """How many nodes the logs show launching: the allocation the job printed
    (``SLURM_NNODES``), else the distinct node ranks its tasks printed."""
    facts = printed_facts(rows)
    alloc = [int(v) for v in facts.values("allocation_nodes") if v.isdigit()]
    ranks = len(facts.node_ranks())
    return max([*alloc, ranks]) if alloc or ranks > 1 else None


def _trained_alone(rows: Sequence[Event], k: int) -> tuple[str, list[str]]:
    """What the nodes of a world smaller than the allocation did: who trained, how far."""
    progress = [r for r in _tagged(rows, "progress") if str(r.cap("iteration") or "").isdigit()]
    trained = sorted({str(r.node_index) for r in progress if r.node_index is not None})
    last = max((int(str(r.cap("iteration"))) for r in progress), default=None)
    who = f"node {', '.join(trained)}" if trained else f"{k} node(s)"
    msg = (f"{who} trained alone" + (f" (to iteration {last})" if last else "")
           + f" while the other node(s) had no place in a {k}-node world")
    return msg, [where(r) for r in progress[-1:]]


def nnodes_mismatch(rows: Sequence[Event], job: Any, alloc: int | None) -> Found | None:
    """The launcher's ``--nnodes`` is not the allocation's node count (the srun tasks the logs
    show, else the script's ``--nodes``)."""
    told = _launcher_nnodes(rows, job)
    nodes = getattr(job, "nodes", None)
    alloc = alloc or (nodes[0] if nodes else None) or _nodes_launched(rows)
    if told is None or not alloc or told[0] == alloc:
        return None
    k, said = told
    if k < alloc:
        what, ev = _trained_alone(rows, k)
    else:
        what = f"the rendezvous waited for {k} nodes and only {alloc} came"
        ev = [where(r) for r in rows if r.role_of("joined")][:1]
    return Found(
        "worker-group", f"the launcher was given --nnodes {k} on a {alloc}-node allocation: {what}",
        f'--nnodes "$SLURM_NNODES" (here {alloc}) --node-rank "$SLURM_NODEID" on every node',
        [said, *ev], "error", explains=frozenset({"rendezvous", "collective_timeout", "network"}),
        drops=NOT_MASTER_ADVICE,
    )


def _log_options(job: Any) -> dict[str, str]:
    """The launcher's ``--log-dir``, ``--redirects`` and ``--tee`` in the script."""
    srun = getattr(job, "main_srun", None)
    if srun is None or not srun.launchers:
        return {}
    opts = srun.launchers[0].opts
    out = {}
    for name in ("log-dir", "log_dir", "redirects", "tee"):
        o = opts.get(name)
        if o is not None:
            out[name.replace("_", "-")] = str(o.value)
    return out


_WORKER_LINES = ("progress", "megatron-start", "world-size-report")
"""Tags of lines only a worker prints: none of them in the logs means no worker output."""


def _silent_exits(rows: Sequence[Event]) -> list[Event]:
    """Workers' exit records with an error code, when no line says why (no root, no
    traceback or error line outside the launcher's own records)."""
    exits = [r for r in rows if str(r.role_of("exit_code") or "").isdigit()
             and str(r.role_of("exit_code")) != "0"]
    said = any(
        r.role == ROOT or (r.role != CONTEXT and (r.traceback or r.cap("exc_type")))
        for r in rows
    )
    return [] if said else exits


def _where_told(rows: Sequence[Event], job: Any) -> tuple[str, str | None] | None:
    """(what the launcher was told, the log directory) when its workers' output goes
    elsewhere than the job's logs: ``--redirects``/``--log-dir`` without ``--tee`` in the
    script, or no worker line at all and torchrun's ``log_dir`` in the logs."""
    opts = _log_options(job)
    logged = next((str(r.cap("value")) for r in rows if r.cap("arg") == "log_dir"), None)
    if opts.keys() & {"log-dir", "redirects"} and "tee" not in opts:
        return ", ".join(f"--{k} {v}" for k, v in opts.items()), opts.get("log-dir") or logged
    quiet = not any(r.tagged(t) for r in rows for t in _WORKER_LINES) and not any(
        r.role == CANDIDATE for r in rows)
    if quiet and logged:
        return f"log_dir {logged} (torchrun's own line)", logged
    return None


def worker_output_missing(rows: Sequence[Event], job: Any) -> Found | None:
    """Workers exited non-zero and no line of theirs says why, and the launcher was told to
    keep their output elsewhere (``--redirects``/``--log-dir``, a node-local path)."""
    exits = _silent_exits(rows)
    told = _where_told(rows, job) if exits else None
    if told is None:
        return None
    how, log_dir = told
    msg = ("the workers exited with an error but none of their own output is in the job's "
           f"logs (no traceback): the launcher was told {how}")
    if log_dir and NODE_LOCAL.match(log_dir):
        msg += f", and {log_dir} is node-local, so their output stayed on the nodes"
    elif log_dir:
        msg += f": their output is in {log_dir}, not in the job's .out/.err"
    return Found(
        "worker-output", msg,
        "keep the workers' output: add --tee 3 (it then also reaches the job's .out/.err), put "
        "--log-dir on shared storage (e.g. $SLURM_SUBMIT_DIR/torchrun-logs), and wrap the entry "
        "point in torch.distributed.elastic.multiprocessing.errors.record so error_file holds "
        "the traceback",
        [where(r) for r in exits[:2]], "error", explains=frozenset({"unknown"}),
        drops=frozenset({"add-pattern"}),
    )


def _host(value: str) -> str:
    """The host of ``host:port`` (IPv6 in brackets kept whole)."""
    value = value.strip().strip("()")
    if value.startswith("["):
        return value.split("]")[0] + "]"
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value.split(",")[0].strip()


def _master_of(r: Event) -> str | None:
    """The MASTER_ADDR host a line names: torchrun's ``rdzv_endpoint``/``master_addr``
    argument, or the store host a client reached for."""
    if r.cap("arg") in ("rdzv_endpoint", "master_addr") and r.cap("value"):
        return _host(str(r.cap("value")))
    if r.cap("store_host"):
        return _host(str(r.cap("store_host")))
    return None


def _master_per_node(rows: Sequence[Event]) -> dict[str, tuple[str, Event]]:
    """node -> (the MASTER_ADDR host its first such line names, that line): torchrun's and
    the store's lines of a labelled node, else the MASTER_ADDR the node's task printed."""
    per: dict[str, tuple[str, Event]] = {}
    for r in rows:
        node = r.node_index if r.node_index is not None else r.node
        if node is None:
            continue
        host = _master_of(r)
        if host is not None:
            per.setdefault(str(node), (host, r))
    for node, (host, r) in printed_facts(rows).per_node("master_addr").items():
        if host:
            per.setdefault(node, (host, r))
    return per


def master_addr_per_node(rows: Sequence[Event]) -> Found | None:
    """The nodes were given different MASTER_ADDRs (torchrun's ``rdzv_endpoint``/``master_addr``
    or the store host a client reached for, per node), or a node other than the first one used
    its own host name: MASTER_ADDR was set on each node instead of once for the job. Where
    the addresses agree, the ports the nodes printed (:func:`master_port_per_node`)."""
    per = _master_per_node(rows)
    hosts = {h for h, _ in per.values()}
    own = [n for n, (h, r) in per.items() if n != "0" and r.host and h == r.host]
    if len(hosts) < 2 and not own:
        return master_port_per_node(rows)
    shown = ", ".join(f"node {n}: {h}" + (" (its own host name)" if n in own else "")
                      for n, (h, _) in sorted(per.items()))
    what = "the nodes used different MASTER_ADDRs" if len(hosts) > 1 else \
        "a node other than the first reached for the store on itself"
    return Found(
        "master-addr",
        f"{what} ({shown}): MASTER_ADDR was set on each node (e.g. "
        "`$(hostname)` inside srun) instead of once for the job, so a node looked for the "
        "store where none listens",
        'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1) once '
        "in the sbatch script, before srun (not inside the srun command)",
        [where(r) for _, r in sorted(per.values(), key=lambda hr: str(hr[1].node))][:3],
        "error", explains=frozenset({"rendezvous", "network"}),
        drops=frozenset({"port-free", "master-addr"}),
    )


def master_port_per_node(rows: Sequence[Event]) -> Found | None:
    """The nodes printed different MASTER_PORTs (echo lines, an env dump): the port was
    computed on each node instead of set once for the job."""
    per = printed_facts(rows).per_node("master_port")
    ports = {p for p, _ in per.values() if p.isdigit()}
    if len(ports) < 2:
        return None
    shown = ", ".join(f"node {n}: {p}" for n, (p, _) in sorted(per.items()))
    return Found(
        "master-addr",
        f"the nodes used different MASTER_PORTs ({shown}): the port was set on each node "
        "instead of once for the job, so a node looked for the store on a port where none "
        "listens",
        "set MASTER_PORT once for the whole job in the sbatch script, before srun "
        "(`export MASTER_PORT=29500`), never from $SLURM_PROCID or $SLURM_NODEID",
        [where(r) for _, r in sorted(per.values(), key=lambda pr: str(pr[1].node))][:3],
        "error", explains=frozenset({"rendezvous", "network"}),
        drops=frozenset({"port-free", "master-port", "same-port", "master-addr"}),
    )

"""The launch advisories the events raise, with the script's finding of the same rule.

A failed chdir and ``can't open file`` (worktree not shared), the raw node list as rendezvous
endpoint, ``uv`` building ``.venv`` inside the job, Megatron starting from random, Megatron's
CUDA_DEVICE_MAX_CONNECTIONS warnings, several rank-0 outputs (independent worlds).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from analyzer.decide.advisory import Advise, Advisory, LintedScript, ids, nodes, tagged, where
from analyzer.decide.fixfacts import NODE_LOCAL
from analyzer.decide.nodefacts import printed_facts
from analyzer.model.event import Event


def _on(events: list[Event]) -> str:
    """Which nodes ``events`` come from, in words (no '?' for a line no label names)."""
    named = [n for n in nodes(events) if n != "?"]
    return "node(s) " + ", ".join(named) if named else "the nodes (no srun label names them)"


def _endpoint_nodes(ep: list[Event], rows: list[Event], host: str) -> int:
    """How many nodes the raw endpoint hit: the nodes its lines name, else the nodes whose
    task printed that MASTER_ADDR (0: unknown)."""
    named = [n for n in nodes(ep) if n != "?"]
    if named:
        return len(named)
    printed = printed_facts(rows).per_node("master_addr")
    return sum(1 for v, _ in printed.values() if v == host)


def _worktree(rows: list[Event], sc: LintedScript) -> Advisory | None:
    """A failed chdir or a training script python could not open: the worktree is not shared."""
    chdir = tagged(rows, "workdir-missing")
    cant = tagged(rows, "script-missing")
    if not (chdir or cant):
        return None
    f = sc.finding("node-local-path", "worktree") or sc.finding("node-local-path")
    paths = sorted({str(r.cap("path")) for r in chdir if r.cap("path")})
    on = _on(chdir or cant)
    msg = (f"the job's directory {', '.join(paths)} is missing on {on}: slurmstepd ran the "
           "tasks from /tmp" if chdir else
           f"the training script is missing on {on}")
    if cant:
        msg += f", and python could not open {cant[0].cap('path')}"
    msg += "; the worktree is not on storage every node sees"
    ev = sc.evidence_of(f) + [where(r) for r in (chdir[:1] + cant[:1])]
    return Advisory("node-local-path", msg, f.fix if f else
                    "cd into a Megatron-LM worktree on shared storage (NFS, Lustre) "
                    "in the sbatch script", tuple(ev), "error", patterns=ids(chdir + cant))


def _endpoint(rows: list[Event], sc: LintedScript) -> Advisory | None:
    """The rendezvous endpoint is the raw node list (or no host name at all)."""
    ep = tagged(rows, "endpoint-hostname")
    if not ep:
        return None
    f = sc.finding("master-addr")
    endpoint = str(ep[0].cap("endpoint") or "")
    raw = "[" in endpoint or "," in endpoint
    msg = (f"the rendezvous endpoint {endpoint} is the raw SLURM node list"
           if raw else f"the rendezvous endpoint {endpoint} is not a host name")
    n = _endpoint_nodes(ep, rows, endpoint.rsplit(":", 1)[0])
    msg += (f" (on {n} node(s))" if n else "") + ": MASTER_ADDR is not taken from scontrol"
    ev = sc.evidence_of(f) + [where(r) for r in ep[:2]]
    return Advisory("master-addr", msg, f.fix if f else
                    'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" '
                    "| head -n1)", tuple(ev), "error", patterns=ids(ep))


GUIDE_UV_FIX = ("run `uv sync` once in the worktree before sbatch; launch with `uv run --no-sync` "
                "under srun")


def _venv(rows: list[Event], sc: LintedScript) -> Advisory | None:
    """uv built the virtual environment inside the job."""
    # the venvs created (a `path`) first, then the packages installed
    uv = sorted(tagged(rows, "venv-build"), key=lambda r: r.cap("path") is None)
    if not uv:
        return None
    f = sc.finding("uv-sync")
    n = len(nodes(uv))
    msg = (f"uv built the virtual environment inside the job on {n} node(s) "
           "(`Creating virtual environment`, `Installed N packages`): every run pays for it, "
           "and nodes racing on one .venv can break it")
    ev = sc.evidence_of(f) + [where(r) for r in uv[:3]]
    # the script's launch line rewritten, unless the lint could only sketch it (`uv run
    # --no-sync ...`): then the guide's instruction in words
    fix = f.fix if f and "..." not in f.fix else GUIDE_UV_FIX
    return Advisory("uv-sync", msg, fix, tuple(ev))


def _fresh_start(rows: list[Event], sc: LintedScript) -> Advisory | None:
    """Megatron found no checkpoint and started from random."""
    missing = [r for r in tagged(rows, "checkpoint-load") if r.cap("no_checkpoint")]
    if not missing:
        return None
    f = sc.finding("node-local-path", "--load") or sc.finding("node-local-path", "--save")
    path = missing[0].cap("path")
    msg = (f"Megatron found no checkpoint ({path}) and started from random: training "
           "restarted from iteration 1")
    local = f is not None or bool(NODE_LOCAL.match(str(path or "")))
    if local:
        msg += "; --load/--save are on node-local storage, so a requeue on other nodes "\
            "finds nothing"
    ev = sc.evidence_of(f) + [where(r) for r in missing[:1]]
    return Advisory("node-local-path" if f else "restart-from-scratch", msg,
                    f.fix if f else "check --load points at the directory --save "
                    "wrote, on shared storage; add --exit-on-missing-checkpoint to "
                    "fail instead of starting over", tuple(ev),
                    explains=frozenset({"slurm_time_limit"}),
                    # no checkpoint to resubmit from when they stayed on the nodes
                    drops=frozenset({"resubmit-checkpoint"}) if local else frozenset())


def _maxconn(rows: list[Event], sc: LintedScript) -> Advisory | None:
    """Megatron warned about CUDA_DEVICE_MAX_CONNECTIONS."""
    warn = tagged(rows, "maxconn-warning")
    if not warn:
        return None
    f = sc.finding("max-connections")
    return Advisory(
        "max-connections",
        "Megatron warned about CUDA_DEVICE_MAX_CONNECTIONS: the parallelism settings want "
        "conflicting values, so one of them runs slower",
        f.fix if f else _maxconn_fix(" ".join(r.text or "" for r in warn)),
        tuple(sc.evidence_of(f) + [where(r) for r in warn[:1]]),
    )


def _maxconn_fix(text: str) -> str:
    """The launch guide's value for what the warning names: 32 with MoE overlap (whatever TP
    is), unset or > 1 with FSDP, else 1 for TP/CP on pre-Blackwell GPUs."""
    if "overlap_moe" in text or "1 or 32" in text:
        return ("export CUDA_DEVICE_MAX_CONNECTIONS=32 in the sbatch script (the launch guide's "
                "rule with --overlap-moe-expert-parallel-comm: 32, whatever TP is)")
    if "GTP workloads" in text:
        return ("export CUDA_DEVICE_MAX_CONNECTIONS=32 (or 16) in the sbatch script, before "
                "the processes start, as Megatron asks for GTP workloads")
    if "FSDP" in text:
        return ("with FSDP, do not export CUDA_DEVICE_MAX_CONNECTIONS=1: unset it or set it "
                "above 1 (the launch guide's rule: FSDP wins over TP/CP)")
    return ("export CUDA_DEVICE_MAX_CONNECTIONS=1 in the sbatch script on pre-Blackwell GPUs "
            "with TP or CP > 1 and no FSDP (on Blackwell it has no effect)")


def _worlds(rows: list[Event], sc: LintedScript) -> Advisory | None:
    """Several rank-0 outputs in one attempt: independent worlds."""
    starts = [r for r in tagged(rows, "megatron-start") if r.cap("world_init")]
    worlds: dict[Any, set[Any]] = defaultdict(set)
    for r in starts:
        worlds[r.attempt].add((r.host, r.node_index, r.file))
    many = {k: v for k, v in worlds.items() if len(v) > 1}
    if not many:
        return None
    f = sc.finding("worker-group")
    n = max(len(v) for v in many.values())
    return Advisory(
        "worker-group",
        f"{n} rank-0 outputs in one run: the nodes started {n} independent worlds, each "
        "training its own copy of the model",
        f.fix if f else '--nnodes "$NNODES" --node-rank "$SLURM_NODEID" --master-addr '
        '"$MASTER_ADDR" (no --standalone)',
        tuple(sc.evidence_of(f) + [where(r) for r in starts[:n]]),
    )


FROM_EVENTS: tuple[Advise, ...] = (_worktree, _endpoint, _venv, _fresh_start, _maxconn, _worlds)
"""The advisories the events alone can raise, in their order in the report."""


def from_events(rows: list[Event], sc: LintedScript) -> list[Advisory]:
    """The advisories the events raise, in report order."""
    found = (advise(rows, sc) for advise in FROM_EVENTS)
    return [a for a in found if a is not None]

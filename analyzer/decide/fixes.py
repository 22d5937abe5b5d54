"""Fixes that fit the job: the catalog's fix, made specific with the job's own numbers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import regex

from analyzer.model.event import Event
from analyzer.shape.attribute import Geometry
from analyzer.shape.facts import JobFacts

_NUM = regex.compile(r"\d+")


def _sentence_key(text: str) -> str:
    return regex.sub(r"\W+", " ", text).strip().lower()


def compose(base: str, *extra: tuple[str, str]) -> str:
    """The catalog's fix, then each extra sentence whose key phrase the fix does not yet carry.

    ``extra`` holds ``(key phrase, sentence)`` pairs: the pattern's own fix is always used and
    never repeated by a tailored sentence that says the same thing.
    """
    out = base.strip() if base.strip() not in ("", "-") else ""
    for key, sentence in extra:
        if _sentence_key(key) not in _sentence_key(out):
            out = f"{out} {sentence}".strip()
    return out


_WORD = regex.compile(r"[a-z0-9_]{4,}")


def merge_fix(tailored: str, base: str) -> str:
    """The tailored fix, then the catalog fix's sentences that it does not already say."""
    tailored = tailored.strip()
    if base.strip() in ("", "-"):
        return tailored
    have = set(_WORD.findall(tailored.lower()))
    keep = []
    for sentence in regex.split(r"(?<=[.!?])\s+", base.strip()):
        words = set(_WORD.findall(sentence.lower()))
        if words and len(words & have) / len(words) < 0.6:
            keep.append(sentence)
            have |= words
    return " ".join([tailored, *keep]).strip()


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _ws(facts: JobFacts, geo: Geometry) -> int | None:
    return geo.world_size or _int(facts.get("world_size"))


def _oom(row: Event, facts: JobFacts) -> str:
    par = ", ".join(f"{k.upper()}={facts.get(k)}" for k in ("tp", "pp", "cp", "dp") if facts.get(k))
    mbs = _int(facts.get("micro_batch"))
    steps = []
    if mbs and mbs > 1:
        steps.append(f"lower --micro-batch-size from {mbs} to {max(1, mbs // 2)}")
    else:
        steps.append("lower --micro-batch-size (or --seq-length)")
    if not facts.get("recompute") or facts.get("recompute") == "None":
        steps.append("enable activation recomputation (--recompute-granularity selective)")
    tp = _int(facts.get("tp")) or 1
    pp = _int(facts.get("pp")) or 1
    steps.append(f"shard the model further (TP {tp}→{tp * 2} or PP {pp}→{pp * 2})")
    steps.append("set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True if reserved ≫ allocated")
    if row.cap("in_use") and "Process" in (row.text or ""):
        steps.insert(
            0, "check for a second process on that GPU (a stale job or two ranks on one device)"
        )
    sizes = (("tried", row.cap("tried")), ("total", row.cap("total")), ("free", row.cap("free")))
    figures = ", ".join(f"{k} {v}" for k, v in sizes if v)
    rank = row.rank
    head = f"Rank {rank}" if rank is not None else "The rank that ran out of memory"
    if figures:
        head += f" ({figures})"
    if par:
        head += f" with {par}"
    return head + ": " + "; ".join(steps) + "."


def _heads_fix(heads: int, tp: int | None, pp: int, cp: int, ws: int | None) -> str:
    ok = [d for d in _divisors(heads) if not ws or ws % (d * pp * cp) == 0]
    return (
        f"num_attention_heads={heads} is not divisible by tensor-model-parallel size "
        f"{tp}. Use --tensor-model-parallel-size in {ok} (divides {heads} heads"
        + (f" and the world size {ws}" if ws else "")
        + f"), or change --num-attention-heads to a multiple of {tp}."
    )


def _world_fix(ws: int, tp: int | None, pp: int, cp: int) -> str:
    model = (tp or 1) * pp * cp
    ok_tp = [d for d in _divisors(ws) if ws % (d * pp * cp) == 0]
    return (
        f"World size {ws} is not divisible by TP×PP×CP = {tp or 1}×{pp}×{cp} = {model}. "
        f"With PP={pp}, CP={cp} valid --tensor-model-parallel-size values are {ok_tp}; or "
        f"change the node count so that the world size is a multiple of {model} "
        f"(e.g. {model * max(1, -(-ws // model))} GPUs)."
    )


def _config(row: Event, facts: JobFacts, geo: Geometry, base: str) -> str:
    text = row.message or ""
    ws = _int(row.cap("world_size")) or _ws(facts, geo)
    tp = _int(row.cap("tp")) or _int(facts.get("tp"))
    pp = _int(row.cap("pp")) or _int(facts.get("pp")) or 1
    cp = _int(row.cap("cp")) or _int(facts.get("cp")) or 1
    heads = _int(row.cap("heads")) or _int(facts.get("heads"))
    if ("heads" in text or "num_attention_heads" in text) and heads:
        return _heads_fix(heads, tp, pp, cp, ws)
    if ws and ("world" in text or "world_size" in text):
        return _world_fix(ws, tp, pp, cp)
    return base


def _max_connections(row: Event, facts: JobFacts) -> str:
    text = (row.message or "") + " " + (row.text or "")
    gen = facts.get("gpu_generation")
    sm = _int(facts.get("sm"))
    blackwell = gen == "Blackwell" or (sm is not None and sm >= 100)
    where = f" on {gen}" if gen else ""
    if "FSDP" in text or facts.get("use_torch_fsdp2") or facts.get("use_megatron_fsdp"):
        return (
            "FSDP (Torch-FSDP2 or Megatron-FSDP) needs CUDA_DEVICE_MAX_CONNECTIONS unset or > 1"
            f"{where}: delete the line `export CUDA_DEVICE_MAX_CONNECTIONS=1` from the sbatch "
            "script (launch rule: never export it unconditionally)."
        )
    if "overlap_moe_expert_parallel_comm" in text or facts.get("moe_overlap") is True:
        return (
            "With --overlap-moe-expert-parallel-comm set `export CUDA_DEVICE_MAX_CONNECTIONS=32` "
            "in the sbatch script (or 1 if TP/CP overlap matters more on pre-Blackwell GPUs)."
        )
    if "UCC" in text:
        return "The UCC pipeline backend needs `export CUDA_DEVICE_MAX_CONNECTIONS=32` (> 1)."
    if blackwell:
        return (
            "On Blackwell (sm_100+) the variable has no effect and Megatron should not require "
            "it; this assertion comes from the core_v0.12 precedence bug: upgrade megatron-core "
            "to ≥ 0.13, or set `export CUDA_DEVICE_MAX_CONNECTIONS=1` as a workaround."
        )
    tp, cp = facts.get("tp"), facts.get("cp")
    par = ", ".join(f"{k}={v}" for k, v in (("TP", tp), ("CP", cp)) if v)
    return (
        f"Tensor/context parallelism{f' ({par})' if par else ''}{where or ' on pre-Blackwell GPUs'}"
        " needs `export CUDA_DEVICE_MAX_CONNECTIONS=1` in the sbatch script before the srun "
        "line (launch rule: pre-Blackwell, TP>1 or CP>1, no FSDP ⇒ 1)."
    )


def _fix_oom(row: Event, base: str, facts: JobFacts, geo: Geometry) -> str:
    return merge_fix(_oom(row, facts), base)


def _fix_config(row: Event, base: str, facts: JobFacts, geo: Geometry) -> str:
    return merge_fix(_config(row, facts, geo, base), base)


def _fix_max_connections(row: Event, base: str, facts: JobFacts, geo: Geometry) -> str:
    return merge_fix(_max_connections(row, facts), base)


def _fix_import(row: Event, base: str, facts: JobFacts, geo: Geometry) -> str:
    node = row.node
    return compose(
        base,
        (
            "torch.distributed.run",
            "Launch with `uv run python -m torch.distributed.run` (not a bare `torchrun`).",
        ),
        ("uv sync", "Run `uv sync` once before sbatch."),
        (
            "worktree",
            "Check PYTHONPATH and that the worktree and its .venv are on storage every "
            "node sees"
            + (f" (the error was printed on node {node})." if node is not None else "."),
        ),
    )


def _fix_rendezvous(row: Event, base: str, facts: JobFacts, geo: Geometry) -> str:
    store = row.cap("store_host") or row.cap("addr")
    port = row.cap("port")
    extra: list[tuple[str, str]] = []
    if port:
        where = f" on {store}" if store else " on the master host"
        extra.append(
            (
                f"port {port} is free",
                f"Check that port {port} is free{where} (`ss -ltnp | grep :{port}`).",
            )
        )
    extra.append(
        (
            "first host of the allocation",
            "MASTER_ADDR must be the first host of the allocation "
            "(`scontrol show hostnames $SLURM_JOB_NODELIST | head -n1`).",
        )
    )
    extra.append(("MASTER_PORT", "Every node must get the same MASTER_PORT."))
    return compose(base, *extra)


def _fix_hardware(row: Event, base: str, facts: JobFacts, geo: Geometry) -> str:
    node = row.node or row.host
    if not node:
        return base
    return (
        f"{base} Drain the node: `scontrol update NodeName={node} State=DRAIN "
        f'Reason="GPU fault"` and resubmit excluding it (`--exclude={node}`).'
    ).strip()


def _fix_collective_timeout(row: Event, base: str, facts: JobFacts, geo: Geometry) -> str:
    return (
        "Look at the culprit rank's own log for what it was doing; rerun with "
        "TORCH_NCCL_TRACE_BUFFER_SIZE=2000 and TORCH_NCCL_DUMP_ON_TIMEOUT=1 (flight recorder)"
        " and NCCL_DEBUG=WARN to see where each rank stopped. " + base
    ).strip()


_FIXES: dict[str, Callable[[Event, str, JobFacts, Geometry], str]] = {
    "cuda_oom": _fix_oom,
    "config": _fix_config,
    "cuda_device_max_connections": _fix_max_connections,
    "import_error": _fix_import,
    "rendezvous": _fix_rendezvous,
    "hardware": _fix_hardware,
    "collective_timeout": _fix_collective_timeout,
}
"""The fix of each category that the job's own numbers make specific (others keep the
catalog's)."""


def tailor_fix(row: Event, base: str, facts: JobFacts, geo: Geometry) -> str:
    """The fix for this event, specific to the job where the category allows."""
    fix = _FIXES.get(row.category)
    return fix(row, base, facts, geo) if fix is not None else base

"""Fixes that fit the job: the catalog's fix, made specific with the job's own numbers."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import regex

from analyzer.decide.fixfacts import launch_facts
from analyzer.decide.fixsteps import (
    Step,
    When,
    assemble,
    catalog_steps,
    megatron_version,
    sentences,
    step,
)
from analyzer.decide.rowmemo import per_rows
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


def _oom(row: Event, facts: JobFacts) -> list[Step]:
    """One sentence with the job's parallelism and the steps that fit it."""
    par = ", ".join(f"{k.upper()}={facts.get(k)}" for k in ("tp", "pp", "cp", "dp") if facts.get(k))
    mbs = _int(facts.get("micro_batch"))
    steps = []
    if mbs and mbs > 1:
        steps.append(f"lower --micro-batch-size from {mbs} to {max(1, mbs // 2)}")
    else:
        steps.append("lower --micro-batch-size (or --seq-length)")
    recompute = facts.get("recompute")
    if not recompute or recompute == "None":
        steps.append("enable activation recomputation (--recompute-granularity selective)")
    elif recompute == "selective":
        steps.append("recompute more (--recompute-granularity full)")
    tp = _int(facts.get("tp")) or 1
    pp = _int(facts.get("pp")) or 1
    steps.append(f"shard the model further (TP {tp}→{tp * 2} or PP {pp}→{pp * 2})")
    if facts.get("use_distributed_optimizer") is not True:
        steps.append("use the distributed optimizer (--use-distributed-optimizer)")
    steps.append("set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True if reserved ≫ allocated")
    topics = ["micro-batch", "recompute", "shard", "distributed-optimizer", "alloc-conf"]
    if row.cap("in_use") and "Process" in (row.text or ""):
        steps.insert(
            0, "check for a second process on that GPU (a stale job or two ranks on one device)"
        )
        topics.append("gpu-shared")
    # the cause already gives the rank and its figures (tried, free, total): not said again
    text = "; ".join(steps) + "."
    text = f"With {par}: {text}" if par else text[0].upper() + text[1:]
    return [step(text, *topics)]


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


_BLACKWELL = frozenset({"Blackwell"})


def _max_connections(row: Event, facts: JobFacts) -> list[Step]:
    """The launch guide's rule table for the GPU generation and parallelism in the logs."""
    text = (row.message or "") + " " + (row.text or "")
    gen = facts.get("gpu_generation")
    sm = _int(facts.get("sm"))
    blackwell = gen == "Blackwell" or (sm is not None and sm >= 100)
    where = f" on {gen}" if gen else ""
    by_feature = _max_connections_feature(text, facts, where)
    if by_feature is not None:
        return by_feature
    if blackwell:
        return _max_connections_blackwell(row, facts)
    tp, cp = facts.get("tp"), facts.get("cp")
    par = ", ".join(f"{k}={v}" for k, v in (("TP", tp), ("CP", cp)) if v)
    return [step(
        f"Tensor/context parallelism{f' ({par})' if par else ''}{where or ' on pre-Blackwell GPUs'}"
        " needs `export CUDA_DEVICE_MAX_CONNECTIONS=1` in the sbatch script before the srun "
        "line (launch rule: pre-Blackwell, TP>1 or CP>1, no FSDP ⇒ 1).", "maxconn-export")]


def _max_connections_feature(text: str, facts: JobFacts, where: str) -> list[Step] | None:
    """The launch guide's rule for a feature that needs more than one connection (FSDP, MoE
    overlap, the UCC pipeline backend), or None."""
    if "FSDP" in text or facts.get("use_torch_fsdp2") or facts.get("use_megatron_fsdp"):
        return [step(
            "FSDP (Torch-FSDP2 or Megatron-FSDP) needs CUDA_DEVICE_MAX_CONNECTIONS unset or > 1"
            f"{where}: delete the line `export CUDA_DEVICE_MAX_CONNECTIONS=1` from the sbatch "
            "script (launch rule: never export it unconditionally).", "maxconn-unset",
            "maxconn-export")]
    if "overlap_moe_expert_parallel_comm" in text or facts.get("moe_overlap") is True:
        return [step(
            "With --overlap-moe-expert-parallel-comm set `export CUDA_DEVICE_MAX_CONNECTIONS=32` "
            "in the sbatch script (the launch guide's rule: 32 whenever MoE overlap is on).",
            "maxconn-export")]
    if "UCC" in text:
        return [step("The UCC pipeline backend needs `export CUDA_DEVICE_MAX_CONNECTIONS=32` "
                     "(> 1).", "maxconn-export", "maxconn-unset")]
    return None


_TP_CP_ASSERT = "Using tensor model parallelism or context parallelism require"


def _megatron_shown(facts: JobFacts) -> str:
    """The Megatron-core version as the logs show it (a version, or the series of its
    world-size line's format)."""
    if facts.get("megatron_version"):
        return f"megatron-core {facts.get('megatron_version')} in the logs"
    return (f"megatron-core {facts.get('megatron_series')}, by the format of its world-size "
            "line")


def _max_connections_blackwell(row: Event, facts: JobFacts) -> list[Step]:
    """On Blackwell the variable has no effect: core 0.12's precedence bug asserts anyway (TP/CP
    message), and only an affected version is told to upgrade."""
    ver = megatron_version(facts)
    out = [step(
        "On Blackwell (sm_100+) the variable has no effect, so `export "
        "CUDA_DEVICE_MAX_CONNECTIONS=1` in the sbatch script is a safe workaround.",
        "maxconn-export")]
    if _TP_CP_ASSERT not in (row.message or "") + (row.text or ""):
        return out  # a check without a GPU condition: no version removes it
    if ver is not None and ver <= (0, 12):
        return [step(
            f"This assertion is megatron-core 0.12's operator-precedence bug "
            f"({_megatron_shown(facts)}): upgrade megatron-core to ≥ 0.13.",
            "maxconn-blackwell-bug",
            when=When(gpu=_BLACKWELL, megatron_at_most=(0, 12), version_known=True)), *out]
    other = step(
        f"{_megatron_shown(facts)[:1].upper()}{_megatron_shown(facts)[1:]} is past 0.12's "
        "precedence bug: the check comes from another code path (e.g. a YAML config), so set "
        "the variable." if ver is not None else
        "The logs name no megatron-core version: other code paths than 0.12's precedence bug "
        "(e.g. a YAML config) assert this too, so set the variable.", "maxconn-blackwell-bug")
    return [*out, other]


def _fix_oom(row: Event, facts: JobFacts, geo: Geometry) -> list[Step]:
    return _oom(row, facts)


def _fix_config(row: Event, facts: JobFacts, geo: Geometry) -> list[Step]:
    fix = _config(row, facts, geo, "")
    return [step(s) for s in sentences(fix)]


def _fix_max_connections(row: Event, facts: JobFacts, geo: Geometry) -> list[Step]:
    return _max_connections(row, facts)


_UV_MISSING = step(
    "`uv` itself is missing where the job runs (a container image or node without it): install "
    "uv in the image (or on the nodes), or launch with the image's own interpreter (`python -m "
    "torch.distributed.run`) instead of `uv run`.", "uv-missing", "uv-launcher", "uv-sync")


def _fix_import(row: Event, facts: JobFacts, geo: Geometry) -> list[Step]:
    node = row.node
    uv = When(uv=True)
    missing = [_UV_MISSING] if str(row.cap("path") or "").rsplit("/", 1)[-1] == "uv" else []
    return [
        *missing,
        step("Launch with `uv run python -m torch.distributed.run` (not a bare `torchrun`).",
             "uv-launcher", when=uv),
        step("Run `uv sync` once before sbatch.", "uv-sync", when=uv),
        step("Launch with the job environment's own interpreter (`python -m "
             "torch.distributed.run` from that conda env or container, not a `torchrun` that "
             "comes first on PATH), and rebuild compiled extensions against its torch.",
             "env-launcher", when=When(not_uv=True)),
        step("Check PYTHONPATH and that the worktree and its environment are on storage every "
             "node sees" + (f" (the error was printed on node {node})." if node is not None
                            else "."), "pythonpath"),
    ]


_LISTEN = regex.compile(r"server socket has failed to listen|EADDRINUSE|address already in use")


def _fix_rendezvous(row: Event, facts: JobFacts, geo: Geometry) -> list[Step]:
    store = row.cap("store_host") or row.cap("addr")
    port = row.cap("port")
    out: list[Step] = []
    if port:
        where = f" on {store}" if store else " on the master host"
        out.append(step(f"Check that port {port} is free{where} (`ss -ltnp | grep :{port}`).",
                        "port-free", when=When(on_master=True)))
    if not _LISTEN.search(row.text or ""):  # a store that failed to listen is on its host
        out.append(step("MASTER_ADDR must be the first host of the allocation "
                        "(`scontrol show hostnames $SLURM_JOB_NODELIST | head -n1`).",
                        "master-addr"))
    out.append(step("Every node must get the same MASTER_PORT.", "master-port", "same-port",
                    when=When(ports_differ=True)))
    return out


def _fix_hardware(row: Event, facts: JobFacts, geo: Geometry) -> list[Step]:
    node = row.node or row.host
    if not node:
        return []
    return [step(f"Drain the node: `scontrol update NodeName={node} State=DRAIN "
                 f'Reason="GPU fault"` and resubmit excluding it (`--exclude={node}`).', "drain")]


def _fix_collective_timeout(row: Event, facts: JobFacts, geo: Geometry) -> list[Step]:
    return [
        step("Look at the culprit rank's own log for what it was doing.", "culprit-log"),
        step("Rerun with TORCH_NCCL_TRACE_BUFFER_SIZE=2000 and TORCH_NCCL_DUMP_ON_TIMEOUT=1 "
             "(Flight Recorder) and NCCL_DEBUG=WARN to see where each rank stopped.",
             "fr-rerun", when=When(no_dumps=True)),
        step("The Flight Recorder dumps show where each rank stopped: read the per-rank table "
             "of the report (`torchfrtrace` reads the same files).", "fr-read",
             when=When(dumps=True)),
    ]


def _fix_cuda_error(row: Event, facts: JobFacts, geo: Geometry) -> list[Step]:
    """An invalid device ordinal: the value the logs show for --nproc-per-node against the GPUs
    per node (when the logs show them), not the rule alone."""
    if "invalid device ordinal" not in f"{row.message or ''} {row.text or ''}":
        return []
    asked = geo.nproc_per_node or _int(facts.get("nproc_per_node"))
    gpus = _int(facts.get("gpus_per_node"))
    if asked and gpus and asked != gpus:
        return [step(f"Set --nproc-per-node {gpus} (the GPUs per node the logs show), not "
                     f"{asked}: a process per GPU, no more.", "nproc-value")]
    if asked:
        return [step(f"--nproc-per-node is {asked} here: set it to the number of GPUs each node "
                     "has (`nvidia-smi -L` on a node lists them).", "nproc-value")]
    return []


_FIXES: dict[str, Callable[[Event, JobFacts, Geometry], list[Step]]] = {
    "cuda_oom": _fix_oom,
    "config": _fix_config,
    "cuda_device_max_connections": _fix_max_connections,
    "import_error": _fix_import,
    "rendezvous": _fix_rendezvous,
    "hardware": _fix_hardware,
    "collective_timeout": _fix_collective_timeout,
    "cuda_error": _fix_cuda_error,
}
"""The steps of each category that the job's own numbers make specific (the catalog's fix
follows them, less what they already say)."""

_LEAD = frozenset({"cuda_oom", "config", "cuda_device_max_connections",
                   "collective_timeout", "cuda_error"})
"""Categories whose tailored steps come before the catalog's (the others add to it)."""


@dataclass(frozen=True)
class _Facts:
    """The job's facts as the step conditions read them, with whether dumps were read and the
    launch facts of the verdict's event (``fixfacts.launch_facts``)."""

    facts: JobFacts
    dumps: bool
    launch: Mapping[str, Any] = field(default_factory=dict)

    def get(self, key: str) -> Any:
        if key == "flight_recorder_dumps":
            return self.dumps
        if key in self.launch:
            return self.launch[key]
        return self.facts.get(key)


def _with(facts: JobFacts, launch: Mapping[str, Any]) -> JobFacts:
    """``facts`` and the launch facts it does not have (the logs' GPUs per node)."""
    extra = {k: v for k, v in launch.items() if v is not None and facts.get(k) is None}
    return replace(facts, values={**facts.values, **extra}) if extra else facts


def fix_steps(row: Event, base: str, facts: JobFacts, geo: Geometry,
              launch: Mapping[str, Any] | None = None) -> list[Step]:
    """The steps of this event's fix: the tailored ones and the catalog's, in order
    (``launch``: the launch facts of ``fixfacts.launch_facts``)."""
    launch = launch or {}
    fix = _FIXES.get(row.category)
    tailored = fix(row, _with(facts, launch), geo) if fix is not None else []
    catalog = catalog_steps(base)
    return [*tailored, *catalog] if row.category in _LEAD else [*catalog, *tailored]


@per_rows
def _has_dumps(rows: Sequence[Event]) -> bool:
    """Whether the rows hold Flight Recorder dump entries."""
    return any("fr_group" in r.captures and r.cap("fr_group") for r in rows)


def tailor_fix(row: Event, base: str, facts: JobFacts, geo: Geometry,
               rows: Sequence[Event] = ()) -> str:
    """The fix for this event, specific to the job where the category allows: de-duplicated
    steps, none whose condition the job's facts (and ``rows``: Flight Recorder dumps)
    contradict."""
    dumps = _has_dumps(rows)
    launch = launch_facts(row, rows, geo)
    return assemble(fix_steps(row, base, facts, geo, launch), _Facts(facts, dumps, launch))

"""Facts of the job that a person asks first: size, parallelism, GPU, versions, progress."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import regex

from analyzer.model.event import Event
from analyzer.shape.geometry import counts_agents

_ARG_MAP = {
    "world_size": "world_size",
    "tensor_model_parallel_size": "tp",
    "pipeline_model_parallel_size": "pp",
    "context_parallel_size": "cp",
    "data_parallel_size": "dp",
    "expert_model_parallel_size": "ep",
    "micro_batch_size": "micro_batch",
    "global_batch_size": "global_batch",
    "seq_length": "seq_length",
    "num_attention_heads": "heads",
    "num_layers": "layers",
    "num_query_groups": "query_groups",
    "use_torch_fsdp2": "use_torch_fsdp2",
    "use_megatron_fsdp": "use_megatron_fsdp",
    "use_custom_fsdp": "use_megatron_fsdp",
    "overlap_moe_expert_parallel_comm": "moe_overlap",
    "recompute_granularity": "recompute",
    "sequence_parallel": "sequence_parallel",
    "train_iters": "train_iters",
    "nproc_per_node": "nproc_per_node",
    "nnodes": "nnodes",
}
_FIELD_FACTS = (
    "world_size",
    "tp",
    "pp",
    "cp",
    "dp",
    "ep",
    "torch_version",
    "nccl_version",
    "megatron_version",
    "gpu_name",
    "train_iters",
    "cuda_max_connections",
)
_FIELD_FACT_NAMES = frozenset(_FIELD_FACTS)
_SM = regex.compile(r"\bsm_?(\d{2,3})\b|compute capability (\d+)\.(\d)", regex.I)
_GPU_GEN = (
    (regex.compile(r"\b(?:GB200|GB300|B200|B300|B100|RTX PRO 6000 Blackwell)\b"), "Blackwell", 100),
    (regex.compile(r"\b(?:H100|H200|H800|H20|GH200)\b"), "Hopper", 90),
    (regex.compile(r"\b(?:A100|A800|A30|A10G?|A40|A6000)\b"), "Ampere", 80),
    (regex.compile(r"\bL40S?|L4\b|RTX 40\d0\b"), "Ada", 89),
    (regex.compile(r"\bV100\b"), "Volta", 70),
)
_PYTHON_ENV = (
    ("venv", regex.compile(r"/\.venv/")),
    ("conda", regex.compile(r"/(?:opt/)?(?:mini|ana)?conda\d?/|/envs/[\w.-]+/lib/python")),
    ("system", regex.compile(r"/dist-packages/")),
)
"""Where the job's python comes from, by the paths its tracebacks and launchers print: a venv
(``uv sync``'s ``.venv``), conda, or a system/container python (Debian's ``dist-packages``)."""
_PYTHON_ENV_NEEDLES = ("/.venv/", "conda", "/envs/", "/dist-packages/")
"""A literal each of the paths above holds."""
_MEGATRON_SERIES = (
    ("0.10-0.12", regex.compile(r"hierarchical context-parallel sizes: \S*?tensor-model-parallel")),
    ("0.13+", regex.compile(r"hierarchical context-parallel sizes: [^,]*, tensor-model-parallel")),
)
"""Megatron-core's series by the format of its ``using world size:`` line: core 0.10 to 0.12
print ``hierarchical context-parallel sizes: {}tensor-model-parallel size`` (no ", "), 0.13 and
later add the ", " (megatron/training/arguments.py at core_v0.12.1 and core_v0.13.0)."""


@dataclass
class JobFacts:
    """Everything the logs reveal about the job (None when they do not say)."""

    values: dict[str, Any] = field(default_factory=dict)
    last_iteration: int | None = None
    last_iteration_by_rank: dict[int, int] = field(default_factory=dict)
    iteration_times: list[Any] = field(default_factory=list)
    checkpoint_saving: bool = False
    """A save started and did not report success before the end of the log."""

    def get(self, key: str) -> Any:
        """One fact, or None."""
        return self.values.get(key)

    def as_dict(self) -> dict[str, Any]:
        """Facts for the JSON report."""
        out = dict(sorted(self.values.items()))
        out["last_iteration"] = self.last_iteration
        return out


def _intish(v: str) -> Any:
    v = v.strip()
    if regex.fullmatch(r"-?\d+", v):
        return int(v)
    if v in ("True", "False"):
        return v == "True"
    return v


def gpu_generation(name: str | None, sm: int | None = None) -> tuple[str | None, int | None]:
    """(generation name, sm major×10) from a device name or an sm number."""
    if name:
        for rx, gen, smv in _GPU_GEN:
            if rx.search(name):
                return gen, smv
    if sm:
        if sm >= 100:
            return "Blackwell", sm
        if sm >= 90:
            return "Hopper", sm
        if sm >= 80:
            return "Ampere", sm
    return None, sm


def collect_facts(rows: list[Event]) -> JobFacts:
    """Gather facts from the event rows (context events carry most of them)."""
    f = JobFacts()
    saving = False
    for r in rows:
        _stated(f, r)
        _progress(f, r)
        tags = r.tags
        if "checkpoint-save-begin" in tags:
            saving = True
        elif "checkpoint-save-end" in tags:
            saving = False
        if "sm" not in f.values:
            _compute_capability(f, r)
        if "python_env" not in f.values:
            _python_env(f, r)
        if "megatron_series" not in f.values and r.tagged("world-size-report"):
            _megatron_series(f, r)
    f.checkpoint_saving = saving
    _derived(f)
    return f


def _stated(f: JobFacts, r: Event) -> None:
    """Facts a line states: an argument of Megatron's block, or a capture named for a fact;
    the first statement of each is kept."""
    arg, value = r.cap("arg"), r.cap("value")
    if arg and value is not None:
        key = _ARG_MAP.get(arg)
        if key and key not in f.values:
            f.values[key] = _intish(value)
    if _FIELD_FACT_NAMES.isdisjoint(r.captures):
        return  # most events (one look at their few captures, not one per fact)
    for k in _FIELD_FACTS:
        v = r.cap(k)
        if v and k not in f.values:
            if k == "world_size" and counts_agents(r.traceback):
                continue  # torchrun's own rendezvous store counts its agents, not the workers
            f.values[k] = _intish(v)


def _progress(f: JobFacts, r: Event) -> None:
    """The last iteration, overall and per rank, and when iterations were logged."""
    it = r.cap("iteration")
    if not (it and it.strip().isdecimal()):
        return
    n = int(it)
    f.last_iteration = max(f.last_iteration or 0, n)
    if r.rank is not None:
        rk = r.rank
        f.last_iteration_by_rank[rk] = max(f.last_iteration_by_rank.get(rk, 0), n)
    if r.time is not None:
        f.iteration_times.append(r.time)


def _python_env(f: JobFacts, r: Event) -> None:
    """``python_env``: venv, conda or system, from the first path a line or traceback shows."""
    if not any(n in (r.text or "") or n in (r.traceback or "") for n in _PYTHON_ENV_NEEDLES):
        return  # none of the paths below (most lines: no regex, no joined copy)
    text = (r.text or "") + "\n" + (r.traceback or "")
    for name, rx in _PYTHON_ENV:
        if rx.search(text):
            f.values["python_env"] = name
            return


def _megatron_series(f: JobFacts, r: Event) -> None:
    """``megatron_series`` (0.10-0.12 or 0.13+) from the world-size line's format."""
    for name, rx in _MEGATRON_SERIES:
        if rx.search(r.text or ""):
            f.values["megatron_series"] = name
            return


def _compute_capability(f: JobFacts, r: Event) -> None:
    """The GPU's compute capability as ``sm``: a capture, else ``sm_90`` or ``compute
    capability 9.0`` in the message."""
    cc = r.cap("compute_cap")
    if cc and regex.fullmatch(r"\d+\.\d+", cc):
        major, minor = cc.split(".")
        f.values["sm"] = int(major) * 10 + int(minor[:1])
        return
    msg = r.message
    if not msg or ("sm" not in (low := msg.casefold()) and "capab" not in low):
        return  # neither form in the message (most lines: no regex search)
    m = _SM.search(msg)
    if m:
        f.values["sm"] = int(m[1]) if m[1] else int(m[2]) * 10 + int(m[3])


def _derived(f: JobFacts) -> None:
    """The GPU generation from its name or ``sm``; data parallelism from the world size over
    TP x PP x CP when the logs do not state it."""
    gen, sm = gpu_generation(f.values.get("gpu_name"), f.values.get("sm"))
    if gen:
        f.values["gpu_generation"] = gen
    if sm:
        f.values["sm"] = sm
    if "dp" not in f.values and f.values.get("world_size") and f.values.get("tp"):
        denom = (f.values.get("tp") or 1) * (f.values.get("pp") or 1) * (f.values.get("cp") or 1)
        ws = f.values["world_size"]
        if isinstance(ws, int) and denom and ws % denom == 0:
            f.values["dp"] = ws // denom

"""The public vocabulary: failure categories, event roles and evidence strength."""

from __future__ import annotations

CATEGORIES: tuple[str, ...] = (
    "python_exception",
    "native_crash",
    "cuda_oom",
    "host_oom",
    "cuda_error",
    "hardware",
    "network",
    "nccl_error",
    "collective_timeout",
    "cuda_device_max_connections",
    "rendezvous",
    "config",
    "import_error",
    "storage",
    "checkpoint",
    "nan_loss",
    "slurm_time_limit",
    "slurm_preempted",
    "slurm_node_fail",
    "slurm_cancelled",
    "unknown",
    "none",
)
"""Every category word of the JSON contract (``categories.md``); never rename one."""

ROLES: tuple[str, ...] = ("root", "symptom", "context", "candidate")
"""``root`` can be the cause; ``symptom`` follows an earlier failure; ``context`` carries facts;
``candidate`` is an error-like line no other pattern claims (``patterns/candidates.toml``), never
a verdict by itself: ``analyzer.unknown`` ranks candidates when the verdict is only a cascade."""

SLURM_END_CATEGORIES: frozenset[str] = frozenset(
    {"slurm_time_limit", "slurm_preempted", "slurm_node_fail", "slurm_cancelled"}
)

# Tie-break order for root events at the same time (higher wins): hardware beats CUDA/OOM,
# which beat explicit exceptions, which beat NCCL errors.
_STRENGTH: dict[str, int] = {
    "hardware": 90,
    "slurm_node_fail": 85,
    "cuda_oom": 80,
    "cuda_error": 80,
    "host_oom": 78,
    "cuda_device_max_connections": 70,
    "config": 70,
    "import_error": 70,
    "rendezvous": 66,
    "storage": 65,
    "checkpoint": 64,
    "nan_loss": 62,
    "python_exception": 60,
    "native_crash": 55,
    "network": 50,
    "nccl_error": 45,
    "slurm_time_limit": 40,
    "slurm_preempted": 40,
    "slurm_cancelled": 35,
    "collective_timeout": 20,
    "unknown": 0,
    "none": 0,
}


def strength(category: str) -> int:
    """Evidence strength of a category, used to break ties between simultaneous root events."""
    return _STRENGTH.get(category, 10)

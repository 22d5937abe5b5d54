"""The launch rules, one function each, checked against a :class:`~analyzer.lint.launchplan.Job`.

:data:`RULES` is the one registry: each rule's id, title, the launch guide's reason
(``launch-rules.md``: how a correct Megatron-LM job is launched on SLURM) and its check. The
checks live in modules by what they look at: :mod:`.launch` (the launcher and its worker group),
:mod:`.world` (the master address and the world size), :mod:`.max_connections`
(CUDA_DEVICE_MAX_CONNECTIONS) and :mod:`.storage` (shared paths, container mounts, the venv);
:mod:`.base` holds :class:`Finding`, :class:`Rule` and the reasons.
"""

from __future__ import annotations

from analyzer.lint.rules.base import (
    LAUNCH_FIX,
    MASTER_FIX,
    REASONS,
    SEVERITIES,
    Finding,
    Rule,
)
from analyzer.lint.rules.launch import check_launcher, check_tasks_per_node, check_worker_group
from analyzer.lint.rules.max_connections import check_max_connections, gpu_generation
from analyzer.lint.rules.storage import (
    check_container_mounts,
    check_node_local_path,
    check_sbatch_output,
    check_uv_sync,
)
from analyzer.lint.rules.world import check_allocation, check_master_addr

RULES: tuple[Rule, ...] = (
    Rule("tasks-per-node", "One srun task per node", REASONS["tasks-per-node"],
         check_tasks_per_node),
    Rule("launcher", "uv run python -m torch.distributed.run", REASONS["launcher"],
         check_launcher),
    Rule("worker-group", "One worker group across all nodes", REASONS["worker-group"],
         check_worker_group),
    Rule("master-addr", "MASTER_ADDR from scontrol show hostnames", REASONS["master-addr"],
         check_master_addr),
    Rule("allocation", "Sizes derived from the allocation", REASONS["allocation"],
         check_allocation),
    Rule("max-connections", "CUDA_DEVICE_MAX_CONNECTIONS by GPU and parallelism",
         REASONS["max-connections"], check_max_connections),
    Rule("node-local-path", "Everything on shared storage", REASONS["node-local-path"],
         check_node_local_path),
    Rule("sbatch-output", "Log paths sbatch can expand", REASONS["sbatch-output"],
         check_sbatch_output),
    Rule("container-mounts", "Containers mount the worktree", REASONS["container-mounts"],
         check_container_mounts),
    Rule("uv-sync", "The venv is built once, before submission", REASONS["uv-sync"],
         check_uv_sync),
)
RULE_IDS = tuple(r.id for r in RULES)

__all__ = [
    "LAUNCH_FIX", "MASTER_FIX", "REASONS", "RULES", "RULE_IDS", "SEVERITIES", "Finding", "Rule",
    "check_allocation", "check_container_mounts", "check_launcher", "check_master_addr",
    "check_max_connections", "check_node_local_path", "check_sbatch_output",
    "check_tasks_per_node", "check_uv_sync",
    "check_worker_group", "gpu_generation",
]

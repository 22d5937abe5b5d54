"""The scenarios, one module per failure family; SCENARIOS maps a directory name to its builder."""

from __future__ import annotations

from collections.abc import Callable

from ..model import Job, Meta
from . import gpu_faults, hangs, memory, network, startup, training

SCENARIOS: dict[str, Callable[[], tuple[Job, Meta]]] = {
    "cuda-oom-cascade": memory.cuda_oom_cascade,
    "pure-hang-missing-rank": hangs.pure_hang,
    "hang-lowest-last-enqueued": hangs.hang_lowest_enqueued,
    "collective-mismatch": hangs.collective_mismatch,
    "ib-completion-error": network.ib_completion,
    "illegal-memory-access": gpu_faults.illegal_memory_access,
    "xid79-node-failure": gpu_faults.xid79,
    "duplicate-gpu": startup.duplicate_gpu,
    "max-connections-hopper-tp": startup.max_connections_tp,
    "fsdp-max-connections-one": startup.fsdp_max_connections,
    "nan-loss-rerun": training.nan_rerun,
    "host-oom-kill": memory.host_oom,
    "old-torch-1.13-watchdog": memory.old_torch,
    "nccl-timeout-torch-2.12-slurm-25": training.dataloader_valueerror,
}

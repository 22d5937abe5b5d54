"""Format-built job directories for failures that need GPUs to reproduce.

Every log line is assembled from the templates in the project's message-format reference
(PyTorch c10d / elastic, CUDA caching allocator, NCCL, Megatron-LM, Slurm, NVIDIA Xid), for the
exact version combination named in each scenario. Nothing here runs a GPU; the output is meant to
be indistinguishable in *format* from the job directory a real multi-node SLURM job would leave.

Run ``python -m harness.format_fixtures --out sample_logs/formats``. The output is deterministic:
a fixed seed per scenario, fixed dates, no reads of the clock or the environment.

Modules: ``versions`` (version combinations, per-release source line numbers), ``model`` (the
simulated job and its events), ``loglines`` (each logger's line prefix, tracebacks),
``messages`` (message texts), ``torchrun``, ``watchdog`` (ProcessGroupNCCL), ``megatron``,
``prelude`` (start-up and training log), ``scenarios`` (one module per failure family) and
``output`` (files, expected.toml, FIXTURE.md).
"""

from __future__ import annotations

from .output import generate
from .scenarios import SCENARIOS

__all__ = ["SCENARIOS", "generate"]

"""The public vocabulary: failure categories, event roles and evidence strength."""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.model.event import STRUCTURAL

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
a verdict by itself: ``analyzer.decide.unknown`` ranks candidates when the verdict is only a
cascade."""

STRUCTURAL_NAMES: frozenset[str] = frozenset(STRUCTURAL)
"""Columns every event has, set by attribution: a pattern's capture may not use these names.
``{rank}``, ``{local_rank}``, ``{node}`` and ``{host}`` may still appear in cause and fix text,
where they mean the attributed values."""

TAGS: dict[str, str] = {
    "death": "a worker died (exit code or signal reported by the launcher)",
    "death-record": "says how a worker died (exit code, signal, scheduler OOM record): may be "
    "promoted to the verdict when no root line exists",
    "restart": "the launcher restarts the worker group (starts a new attempt)",
    "task-exit": "srun reports a task's exit (the task id is in the `task` capture)",
    "checkpoint-save-begin": "a checkpoint save started",
    "checkpoint-save-end": "a checkpoint save finished",
    "rank-claim": "a process announces the global rank it takes: one rank claimed twice in one "
    "file and attempt means two launchers assigned the same ranks (a rendezvous fault)",
    "frame": 'matches a traceback\'s frame line (`File "...", line N, in f`): a traceback no '
    "pattern claims that runs through it takes the pattern's category (an exception raised "
    "under save_checkpoint is a checkpoint failure)",
    "subprocess-kill": "a launcher kills one of the workers it started while tearing the job "
    "down (DeepSpeed, torch.distributed.launch 1.x); it names every worker it started",
    "traceback-owner": "names the process whose traceback follows (mp.spawn's `-- Process N "
    "terminated with the following error:`): that traceback's events are its process's",
    "childfailed-header": "the first line of torchrun's ChildFailedError block",
    "childfailed-rootcause": "the 'Root Cause (first observed failure)' line of that block",
    "childfailed-field": "a field line of one failure in that block",
    "childfailed-start": "the field line that opens one failure's record in that block",
    "fallback": "claims a line only when no pattern without this tag matches it (a catch-all "
    "such as the generic exception line: a specific pattern, built-in or user, always wins)",
    "uniform": "every rank hits it alike (the same checkpoint, arguments or code on every "
    "rank): one rank's copy names no culprit unless other ranks are seen without it",
    "progress": "a line every rank prints every step (Megatron's iteration line): the reader "
    "keeps only each writer's first and last line and the lines holding the smallest and "
    "largest of each integer capture (the other lines are counted in `repeats`)",
    "uncatalogued": "an event the reader assembled that no catalog pattern claims (a bare "
    "traceback): lower confidence",
}
"""Pattern tags: the meaning that code acts on, declared in the catalog (never in pattern ids)."""

CAPTURE_TYPES: tuple[str, ...] = ("str", "int", "float", "size", "duration")
"""Declared capture types: ``size`` ("20.00 GiB" → bytes), ``duration`` ("600000ms" → seconds)."""

CAPTURE_ROLES: dict[str, str] = {
    "global_rank": "the global rank the line is about",
    "local_rank": "the local rank (on its node) the line is about",
    "pid": "the worker process id the line is about",
    "host": "the host the line is about (not a peer it talks to)",
    "exit_code": "a process exit code (negative: killed by that signal)",
    "signal": "a signal name or number",
    "world_size": "the job's world size",
    "joined": "workers that joined a barrier or rendezvous: more than the world size on the "
    "same line means two jobs (or a stale file store) share one store, a rendezvous fault",
    "task": "srun task ids (one number, a list or a range)",
    "time": "a time printed inside the message",
    "comm_rank": "the rank of the writing process in an NCCL communicator (a global rank only "
    "for the communicator that spans the job: see ``analyzer/read/commranks.py``)",
    "comm_size": "the number of ranks of that NCCL communicator",
    "cuda_dev": "the CUDA device index the writing process uses (NCCL's ``[dev]``)",
}
"""Roles a capture can declare; attribution and reasoning read captures by role, not by name."""


@dataclass(frozen=True, slots=True)
class CategoryInfo:
    """What reasoning needs to know of a category, in one row."""

    strength: int
    """Tie-break between simultaneous roots (higher wins)."""
    startup: bool = False
    """A failure of this category happens while the job starts (its phase is start-up)."""
    slurm_end: bool = False
    """SLURM ended the job (a consequence when something failed or hung before)."""
    kin: tuple[str, ...] = ()
    """A root of this category without a rank may take it from these categories' events."""
    promotable: bool = False
    """A death record of this category may become the verdict when no root line exists."""
    before_end: bool = False
    """As a symptom before a SLURM end, it is the cause the end only confirmed."""
    confidence: float = 0.9
    """Confidence of a catalogued root of this category."""
    evident: bool = False
    """Its symptoms alone name the cause when no root, SLURM end, death record or hang
    explains the failure: a diverging loss, a rendezvous, network or NCCL error is the problem
    whatever stopped the job, where other symptoms only show where a failure arrived."""
    uniform: bool = False
    """Every rank raises it alike (same arguments, code and environment): one rank's copy names
    no culprit unless other ranks are seen without it."""


CATEGORY_TABLE: dict[str, CategoryInfo] = {
    "hardware": CategoryInfo(90, kin=("cuda_error",), promotable=True),
    "slurm_node_fail": CategoryInfo(85, slurm_end=True),
    "cuda_oom": CategoryInfo(80, promotable=True),
    "cuda_error": CategoryInfo(80, promotable=True),
    "host_oom": CategoryInfo(78, promotable=True, before_end=True),
    "cuda_device_max_connections": CategoryInfo(70, startup=True, uniform=True),
    "config": CategoryInfo(70, startup=True, uniform=True),
    "import_error": CategoryInfo(70, startup=True, uniform=True),
    "rendezvous": CategoryInfo(66, startup=True, before_end=True, evident=True),
    "storage": CategoryInfo(65),
    "checkpoint": CategoryInfo(64),
    "nan_loss": CategoryInfo(62, promotable=True, before_end=True, evident=True),
    "python_exception": CategoryInfo(60),
    "native_crash": CategoryInfo(55, promotable=True, before_end=True),
    "network": CategoryInfo(50, kin=("nccl_error",), evident=True),
    "nccl_error": CategoryInfo(45, evident=True),
    "slurm_time_limit": CategoryInfo(40, slurm_end=True),
    "slurm_preempted": CategoryInfo(40, slurm_end=True),
    "slurm_cancelled": CategoryInfo(35, slurm_end=True),
    "collective_timeout": CategoryInfo(20, before_end=True),
    "unknown": CategoryInfo(0, confidence=0.2),
    "none": CategoryInfo(0, confidence=0.8),
}
"""One row per category of the contract; reasoning reads these instead of its own constants."""

SLURM_END_CATEGORIES: frozenset[str] = frozenset(
    c for c, info in CATEGORY_TABLE.items() if info.slurm_end
)


def info(category: str) -> CategoryInfo:
    """The table row of a category (a weak default for a category the table lacks)."""
    return CATEGORY_TABLE.get(category) or CategoryInfo(10)


def strength(category: str) -> int:
    """Evidence strength of a category, used to break ties between simultaneous root events."""
    return info(category).strength

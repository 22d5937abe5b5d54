"""The public vocabulary: failure categories, event roles and evidence strength."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from analyzer.model.event import STRUCTURAL, Role


class Category(StrEnum):
    """The failure categories of the JSON contract (``categories.md``); never rename one.
    A member is its word (``Category.CUDA_OOM == "cuda_oom"``)."""

    PYTHON_EXCEPTION = "python_exception"
    NATIVE_CRASH = "native_crash"
    CUDA_OOM = "cuda_oom"
    HOST_OOM = "host_oom"
    CUDA_ERROR = "cuda_error"
    HARDWARE = "hardware"
    NETWORK = "network"
    NCCL_ERROR = "nccl_error"
    COLLECTIVE_TIMEOUT = "collective_timeout"
    CUDA_DEVICE_MAX_CONNECTIONS = "cuda_device_max_connections"
    RENDEZVOUS = "rendezvous"
    CONFIG = "config"
    IMPORT_ERROR = "import_error"
    STORAGE = "storage"
    CHECKPOINT = "checkpoint"
    NAN_LOSS = "nan_loss"
    SLURM_TIME_LIMIT = "slurm_time_limit"
    SLURM_PREEMPTED = "slurm_preempted"
    SLURM_NODE_FAIL = "slurm_node_fail"
    SLURM_CANCELLED = "slurm_cancelled"
    UNKNOWN = "unknown"
    NONE = "none"


CATEGORIES: tuple[str, ...] = tuple(c.value for c in Category)
"""Every category word of the JSON contract (``categories.md``); never rename one."""

ROLES: tuple[str, ...] = tuple(r.value for r in Role)
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
    "stops-silently": "a launcher's record of the first worker it saw die, from a launcher that "
    "then stops the others without a line (mp.spawn's join terminates them): the workers it "
    "stopped are not in view, so copies of one error above the record are not outnumbered by it",
    "link-end": "a rank reports it could not connect to a peer: it is one end of a link, and "
    "the peer or the link is as likely at fault, so its own line names it only as possible",
    "launch-start": "a launcher's line printed once as it starts (torchrun's OMP_NUM_THREADS "
    "banner, DeepSpeed's world info): a second one from the same writer further down a file is "
    "a later launch appended to it",
    "step-daemon": "a message of slurmstepd (the node's step daemon) that it writes into one "
    "task's stream: an srun label on it names the stream's node, not the task it is about",
    "failed-report": "a launcher says its workers failed (torchrun's ChildFailedError, `train.py "
    "FAILED`) without saying how: a job whose log has only this failed, cause unknown",
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
    "failing-rank": "a line that names the rank an exception came from (torch RPC's `On "
    "WorkerInfo(id=N, …):`): the rank rule named-above lends it to the unranked error below it",
    "uncatalogued": "the event the reader assembles from a whole traceback that no other "
    "pattern claims (`python.traceback`, one pattern at most): never matched line by line; "
    "lower confidence",
    "generic-exception": "the catch-all for a Python exception line (`Type: message`): inside "
    "a traceback the reader drops it, the traceback it assembles says more",
    "workdir-missing": "slurmstepd could not chdir into the job's directory on a node (the `path` "
    "capture): the launch advisories read it as a worktree not on storage every node sees",
    "script-missing": "python could not open the training script (the `path` capture): the launch "
    "advisories read it as a worktree not on storage every node sees",
    "endpoint-hostname": "the rendezvous endpoint is not a host name (the `endpoint` capture, e.g. "
    "the raw SLURM node list): the launch advisories tie it to MASTER_ADDR",
    "venv-build": "uv builds the virtual environment inside the job (creates `.venv`, installs "
    "packages): the launch advisories say to run `uv sync` once before sbatch",
    "checkpoint-load": "Megatron loads (or finds no) checkpoint: a line with the `no_checkpoint` "
    "capture (no metadata file) means training started from random (a launch advisory)",
    "maxconn-warning": "Megatron warns about CUDA_DEVICE_MAX_CONNECTIONS: the launch advisories "
    "tie it to the max-connections rule",
    "megatron-start": "Megatron's start-up progress line (the `value` capture): several lines "
    "with the `world_init` capture (`> initializing torch distributed`) in one attempt are "
    "independent worlds (a launch advisory)",
    "world-size-report": "Megatron prints the world size it runs with (the `world_size` capture): "
    "the launch advisories compare it with the logs' geometry and the script's allocation",
    "level-gated": "a candidate that matches any logger message: kept only when the logger "
    "prefix's level is E or F",
    "native-crash": "a candidate line of a native crash, abort or panic: a verdict inferred from "
    "it has category native_crash",
    "mpi-process": "a line only a process of an MPI library prints (Open MPI's signal handler, "
    "UCX): under srun, each task of such a job is one MPI rank (no launcher inside srun)",
    "port-in-use": "a store or socket could not bind its port (EADDRINUSE): with several srun "
    "tasks on one host, the launch advisories read it as several launchers per node",
    "launcher-interrupt": "the launcher itself got SIGINT or SIGHUP (a person's stop): below "
    "the launcher's own earlier stop on another signal it is that shutdown's, not the cause",
    "launcher-stop": "the launcher itself got a stop signal (SIGTERM: a scheduler, a kill) and "
    "shuts its workers down",
    "reasonless-cancel": "a cancellation banner that gives no reason: below an srun task's "
    "own exit in the same file it is srun's teardown, not a person's scancel",
    "store-lost": "an agent lost the rendezvous store: after a worker's own death it is the "
    "store's host agent exiting, not a rendezvous fault",
    "exception-ignored": "CPython's 'Exception ignored in …' header: the traceback under it was "
    "printed and ignored, the process went on",
    "training-done": "the training loop finished (Megatron's '[after training is done]'): an "
    "error above it was survived",
    "group-succeeded": "the launcher's agent says its worker group finished successfully "
    "(torch elastic's 'worker group successfully finished'): an error above it was survived, "
    "after a restart if the group was restarted",
}
"""Pattern tags: the meaning that code acts on, declared in the catalog (never in pattern ids)."""

DECISION_TAGS: dict[str, str] = {
    "survived": "a root after which its writer kept training (a later iteration line or "
    "finished checkpoint save): not the cause, listed as a note (`decide/promote.py`)",
    "srun-teardown": "a reasonless cancellation banner below an srun task's own exit: srun's "
    "teardown of the step, never the verdict by itself (`decide/promote.py`)",
    "earlier-run": "a failure of an earlier launch in a file the job was launched again into: "
    "a note, one per file with the number of others (`decide/promote_end.py`)",
}
"""Tags the decision sets on events, never a pattern (the catalog refuses them)."""

FOLDED_TAGS: frozenset[str] = frozenset(
    {"venv-build", "checkpoint-load", "maxconn-warning", "megatron-start", "world-size-report"}
)
"""Tags of context patterns whose lines code reads as the job's whole set (a launch advisory),
never line by line: unlike other tagged context lines, a fact said again still folds into
``repeats`` (see :mod:`analyzer.read.fold`)."""

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

FIELDS: dict[str, tuple[str | None, str]] = {
    # name: (the type a pattern must declare for it, or None for any; meaning)
    "op": ("str", "the collective or operation (ALLREDUCE, _ALLGATHER_BASE ...)"),
    "seq": ("int", "a collective's sequence number (NCCL's SeqNum)"),
    "pg_id": ("str", "a process group's id or name (0: the default group)"),
    "pg_desc": ("str", "a process group's description (`default_pg`: the default group)"),
    "pg_rank": (None, "a rank within a process group (not a global rank)"),
    "src_rank": ("int", "the peer rank a message names (a store client, a sender)"),
    "last_enqueued": ("int", "the last work sequence number a rank enqueued"),
    "near_miss": ("str", "set by the reader, never a pattern: the line is cut before the end of "
                  "what its pattern matches (a near miss, lower confidence)"),
    "last_completed": ("int", "the last work sequence number a rank completed"),
    "fr_group": ("str", "set by the reader of Flight Recorder dumps, never a pattern: the "
                 "process group of a rank's state (the job's dumps were read)"),
    "lagging_ranks": ("str", "the ranks PyTorch's own report names as the ones the others wait "
                      "for (a desync report, monitored_barrier)"),
    "exc_type": ("str", "an exception's type (the reader sets it on a traceback too)"),
    "exc_msg": ("str", "an exception's message"),
    "frame": (None, "a traceback's innermost frame (set by the reader)"),
    "path": ("str", "a file or directory path"),
    "addr": ("str", "a network address"),
    "port": ("int", "a TCP port"),
    "endpoint": ("str", "a rendezvous endpoint (host:port)"),
    "in_use": ("str", "what holds an address already in use"),
    "tried": (None, "the GPU memory an allocation asked for (CUDA out of memory)"),
    "total": (None, "the GPU's total memory (CUDA out of memory)"),
    "free": (None, "the GPU memory free when an allocation failed (CUDA out of memory)"),
    "store_host": ("str", "the host of the rendezvous store (TCPStore) a client reached for"),
    "value": (None, "a logged value: a Megatron argument's, a counter"),
    "arg": ("str", "an argument's name in Megatron's argument block"),
    "iteration": ("int", "a training iteration"),
    "world_init": ("str", "Megatron's `> initializing torch distributed ...`: a world's rank 0 "
                   "starts (several in one attempt are independent worlds)"),
    "no_checkpoint": ("str", "Megatron found no checkpoint to load (`could not find the metadata "
                      "file`): training starts from random"),
    "world_size": ("int", "the job's world size (also a capture role)"),
    "tp": ("int", "tensor-parallel size"),
    "pp": ("int", "pipeline-parallel size"),
    "cp": ("int", "context-parallel size"),
    "heads": ("int", "attention heads"),
    "compute_cap": ("str", "a GPU's compute capability"),
    "max_restarts": ("int", "torchrun's --max-restarts"),
    "attempts_left": ("int", "restarts torchrun has left"),
    "exitcode": (None, "a process exit code (as torchrun prints it)"),
    "gpu": (None, "a GPU index or bus id"),
    "gpu_name": (None, "a GPU's model name as nvidia-smi lists it"),
    "hca": (None, "an InfiniBand HCA (mlx5_0 ...)"),
    "job_id": (None, "a scheduler job id"),
    "pci": (None, "a PCI bus id"),
    "peer": (None, "a peer host or rank a link error names"),
    "step": (None, "a training step"),
    "xid": (None, "an NVIDIA Xid error number"),
}
"""Capture names that code reads by name (``Event.cap``): their meaning, and the type a
pattern must declare for one (the loader refuses another). Every other capture is text for
causes and fixes only; generic meanings are read by role (``CAPTURE_ROLES``)."""

FACTS: dict[str, str] = {
    "world_size": "processes in the job",
    "nproc_per_node": "processes per node",
    "nnodes": "nodes",
    "tp": "tensor-parallel size",
    "pp": "pipeline-parallel size",
    "cp": "context-parallel size",
    "dp": "data-parallel size",
    "ep": "expert-parallel size",
    "micro_batch": "micro-batch size",
    "global_batch": "global batch size",
    "seq_length": "sequence length",
    "heads": "attention heads",
    "layers": "transformer layers",
    "query_groups": "query groups (GQA)",
    "use_torch_fsdp2": "torch FSDP2 is on",
    "use_megatron_fsdp": "Megatron FSDP is on",
    "moe_overlap": "MoE expert-parallel communication overlap is on",
    "recompute": "activation recomputation granularity",
    "sequence_parallel": "sequence parallelism is on",
    "train_iters": "iterations the run was to train",
    "last_iteration": "the last iteration logged",
    "torch_version": "PyTorch version",
    "nccl_version": "NCCL version",
    "megatron_version": "Megatron-LM / megatron-core version",
    "megatron_series": "megatron-core 0.10-0.12 or 0.13+, by the format of its world-size line",
    "gpu_name": "GPU model",
    "gpu_generation": "GPU generation (Ampere, Hopper, Blackwell ...)",
    "sm": "compute capability as sm_NN",
    "cuda_max_connections": "CUDA_DEVICE_MAX_CONNECTIONS as logged",
    "python_env": "where the job's python comes from, by the paths it printed: venv, conda, system",
    "slurm_job_id": "SLURM job id",
    "slurm_state": "SLURM job state",
    "slurm_exit_code": "SLURM exit code",
    "slurm_nodelist": "SLURM node list",
    "slurm_num_nodes": "SLURM node count",
    "slurm_work_dir": "SLURM working directory",
    "slurm_reason": "SLURM's reason for the job's state",
}
"""The job's facts by name (``JobFacts``, ``Diagnosis.fact``): what the report and the rules
may ask of a job."""


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

"""What every launch rule shares: :class:`Finding`, :class:`Rule`, the guide's reasons, and
small helpers to word a finding and its fix.

Every rule states the launch guide's reason (``launch-rules.md``: how a correct Megatron-LM job
is launched on SLURM) and gives a fix that shows the corrected script line. Severities: ``error``
— the job will fail or hang; ``warning`` — it runs, but wrong or slow; ``note`` — worth a look.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from analyzer.lint.config import LintConfig
from analyzer.lint.expand import Var
from analyzer.lint.launchplan import Job, Launcher
from analyzer.lint.script import Field

SEVERITIES = ("error", "warning", "note")


@dataclass(frozen=True)
class Finding:
    """One broken rule at one line."""

    rule: str
    severity: str
    line: int
    message: str
    fix: str
    reason: str
    file: str = ""

    def as_dict(self) -> dict[str, object]:
        """The JSON form."""
        return {"rule": self.rule, "severity": self.severity, "line": self.line,
                "message": self.message, "fix": self.fix, "reason": self.reason,
                "file": self.file}


@dataclass(frozen=True)
class Rule:
    """A rule's identity and the guide's reason for it."""

    id: str
    title: str
    reason: str
    check: Callable[[Job, LintConfig], list[Finding]]


MASTER_FIX = 'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)'
FIRST_HOST = '"$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)"'
LAUNCH_FIX = "uv run python -m torch.distributed.run"
NODELIST_VAR = re.compile(r"\$\{?SLURM_(JOB_)?NODELIST")
RAW_NODELIST = re.compile(r"[\w.-]*\[[\d,-]+\][\w.-]*(:\d+)?|[\w.-]+(,[\w.-]+)+")
HOSTNAME = re.compile(r"\$\(\s*hostname|`\s*hostname|\$\{?HOSTNAME\b")
LOOPBACK = ("127.0.0.1", "localhost", "::1")

REASONS = {
    "tasks-per-node": (
        "One srun task per node (--ntasks-per-node=1); each task runs one worker-group launcher "
        "that starts the node's GPU workers. Several launchers on one node fight over the store "
        "port and claim the same node rank."
    ),
    "launcher": (
        "Workers are started with `uv run python -m torch.distributed.run`, not bare `torchrun`: "
        "a bare torchrun can start an interpreter that does not see the venv's packages, which "
        "gives import errors on some or all nodes."
    ),
    "worker-group": (
        "torch.distributed.run gets --nnodes --nproc-per-node --node-rank --master-addr "
        "--master-port: one worker group across all nodes, never independent single-node jobs."
    ),
    "master-addr": (
        "MASTER_ADDR is the first host of the allocation: "
        '`scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1`; MASTER_PORT is set.'
    ),
    "allocation": (
        "NNODES=$SLURM_NNODES, GPUS_PER_NODE = the GPUs visible per node, WORLD_SIZE = "
        "NNODES × GPUS_PER_NODE: derived from the allocation, never hard-coded apart from it."
    ),
    "max-connections": (
        "CUDA_DEVICE_MAX_CONNECTIONS depends on GPU generation and parallelism: 1 on "
        "pre-Blackwell with TP or CP > 1 and no FSDP (Megatron asserts otherwise); not 1 under "
        "Torch-FSDP2 or Megatron-FSDP; 32 with --overlap-moe-expert-parallel-comm; not needed "
        "on Blackwell. It must not be exported unconditionally."
    ),
    "node-local-path": (
        "The job works in a Megatron-LM worktree on a shared filesystem every node sees; code, "
        "data, checkpoints and logs all live there. A node-local path exists on one node only, "
        "and logs written there vanish when the job ends."
    ),
    "sbatch-output": (
        "Logs live on the shared filesystem, e.g. `#SBATCH --output=logs/%x-%j.out`. sbatch reads "
        "#SBATCH lines itself, not through a shell: it replaces its filename symbols (%j job id, "
        "%x job name, %u user, %N host, %A/%a array job and index) and leaves `$VAR` as it is."
    ),
    "container-mounts": (
        "Code, venv, data, checkpoints and logs live in the shared worktree; a container sees "
        "them only if the worktree (and its .venv) is mounted into it."
    ),
    "uv-sync": (
        "The venv is materialised once with `uv sync` before submission; if it is missing, every "
        "node rebuilds it inside srun, costing minutes per job."
    ),
}


def finding(job: Job, rule: str, severity: str, line: int, message: str, fix: str) -> Finding:
    """A finding of ``rule`` in ``job``'s script, with the guide's reason."""
    return Finding(rule, severity, line, message, fix, REASONS[rule], job.script.path)


def corrected(job: Job, line: int, pattern: str, repl: str, fallback: str) -> str:
    """Line ``line`` with ``pattern`` replaced (the corrected line), else ``fallback``."""
    text = job.script.line_text(line)
    new, n = re.subn(pattern, lambda _m: repl, text, count=1)
    return new.strip() if n else fallback


def as_int(value: str | None) -> int | None:
    """``value`` as a number, None when it is not all digits."""
    return int(value) if value is not None and value.strip().isdigit() else None


def on_line(job: Job, f: Field, *names: str) -> bool:
    """True when one of the option ``names`` is written on the line ``f`` came from."""
    text = job.script.line_text(f.line)
    return any(n in text or "--" + n.removeprefix("--").replace("-", "_") in text for n in names)


def multi_node(job: Job) -> bool:
    """True unless the job is known to run on one node."""
    n = job.nodes
    return n is None or n[0] > 1


def is_node_list(value: str) -> bool:
    """True when ``value`` is SLURM's raw node list (``node[001-002]``), not one host name."""
    if "scontrol show hostname" in value:
        return False
    return bool(NODELIST_VAR.search(value) or RAW_NODELIST.fullmatch(value))


def launch_var(job: Job, lz: Launcher, name: str) -> Var | None:
    """The variable ``name`` where ``lz`` starts: set in its own shell, else in the batch script.

    A launcher inside ``srun bash -c '...'`` sees only exported variables; the batch script's
    variable is still returned (unexported), so a rule can say that it is not passed on."""
    var = lz.step.env.get(name)
    if var is not None:
        return var
    srun = next((s for s in job.sruns if lz in s.launchers), None)
    return srun.step.env.get(name) if srun is not None else None


def _master_addr_usable(var: Var | None) -> bool:
    """True when ``$MASTER_ADDR`` would give the launcher one host every node can reach."""
    if var is None or not var.exported:
        return False
    v = var.value
    return not (is_node_list(v) or HOSTNAME.search(v) or v in LOOPBACK or not v)


def master_value(job: Job, lz: Launcher) -> str:
    """What ``--master-addr`` of ``lz`` should be: ``"$MASTER_ADDR"`` when the script exports it
    as one host, else the allocation's first host from scontrol."""
    return ('"$MASTER_ADDR"' if _master_addr_usable(launch_var(job, lz, "MASTER_ADDR"))
            else FIRST_HOST)


def rank_fix(job: Job, lz: Launcher) -> str:
    """``--nnodes --node-rank --master-addr --master-port`` for ``lz``, each a value it has.

    ``$MASTER_ADDR`` only when the script sets it to one host (never a raw node list),
    ``$NNODES`` / ``$MASTER_PORT`` only when the script exports them; else the allocation's
    own values (``$SLURM_NNODES``, the first host from scontrol, the default port 29500)."""
    nnodes = launch_var(job, lz, "NNODES")
    port = launch_var(job, lz, "MASTER_PORT")
    addr = master_value(job, lz)
    return (f'--nnodes "${"NNODES" if nnodes is not None and nnodes.exported else "SLURM_NNODES"}" '
            f'--node-rank "$SLURM_NODEID" --master-addr {addr} --master-port '
            + ('"$MASTER_PORT"' if port is not None and port.exported else "29500"))

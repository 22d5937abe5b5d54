"""The launch rules, one function each, checked against a :class:`~analyzer.lint.job.Job`.

Every rule states the launch guide's reason (``launch-rules.md``: how a correct Megatron-LM job
is launched on SLURM) and gives a fix that shows the corrected script line. Severities: ``error``
— the job will fail or hang; ``warning`` — it runs, but wrong or slow; ``note`` — worth a look.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from analyzer.lint.config import LintConfig
from analyzer.lint.job import Job, Launcher
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
LAUNCH_FIX = "uv run python -m torch.distributed.run"

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
    "container-mounts": (
        "Code, venv, data, checkpoints and logs live in the shared worktree; a container sees "
        "them only if the worktree (and its .venv) is mounted into it."
    ),
    "uv-sync": (
        "The venv is materialised once with `uv sync` before submission; if it is missing, every "
        "node rebuilds it inside srun, costing minutes per job."
    ),
}


def _f(job: Job, rule: str, severity: str, line: int, message: str, fix: str) -> Finding:
    return Finding(rule, severity, line, message, fix, REASONS[rule], job.script.path)


def _sub(job: Job, line: int, pattern: str, repl: str, fallback: str) -> str:
    """Line ``line`` with ``pattern`` replaced (the corrected line), else ``fallback``."""
    text = job.script.line_text(line)
    new, n = re.subn(pattern, lambda _m: repl, text, count=1)
    return new.strip() if n else fallback


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.strip().isdigit() else None


def _on_line(job: Job, f: Field, *names: str) -> bool:
    """True when one of the option ``names`` is written on the line ``f`` came from."""
    text = job.script.line_text(f.line)
    return any(n in text or n.replace("-", "_") in text for n in names)


def _multi_node(job: Job) -> bool:
    n = job.nodes
    return n is None or n[0] > 1


# --- tasks-per-node ----------------------------------------------------------------------------


def check_tasks_per_node(job: Job, cfg: LintConfig) -> list[Finding]:
    """More than one srun task per node, or a launcher not started by srun on a multi-node job."""
    out: list[Finding] = []
    srun = job.main_srun
    if srun is not None and srun.launchers:
        tpn = job.option(srun, "ntasks-per-node")
        nodes = job.nodes
        if tpn and (_int(tpn[0]) or 0) > 1:
            out.append(_f(
                job, "tasks-per-node", "error", tpn[1],
                f"{tpn[0]} srun tasks per node: each starts its own launcher, so {tpn[0]} "
                "worker groups share every node (store port in use, duplicate node ranks)",
                _sub(job, tpn[1], r"--ntasks-per-node[= ]\S+", "--ntasks-per-node=1",
                     "#SBATCH --ntasks-per-node=1"),
            ))
        elif tpn is None:
            nt = job.option(srun, "ntasks")
            n = _int(nt[0]) if nt else None
            if nt and n and n > 1 and (nodes is None or n > nodes[0]):
                per = f"{n} tasks on {nodes[0]} node(s)" if nodes else f"{n} tasks, no --nodes"
                out.append(_f(
                    job, "tasks-per-node", "error", nt[1],
                    f"{per}: more than one launcher per node",
                    _sub(job, nt[1], r"(--ntasks[= ]\S+|-n\s*\S+)", "--ntasks-per-node=1",
                         "#SBATCH --ntasks-per-node=1"),
                ))
    for lz in job.launchers:
        if lz.step.in_srun or any(lz in s.launchers for s in job.sruns):
            continue
        if _multi_node(job):
            out.append(_f(
                job, "tasks-per-node", "error", lz.first.at,
                "the launcher is not started by srun: it runs on the batch host only, the other "
                "nodes of the allocation get no workers",
                "srun --ntasks-per-node=1 bash -c '" + LAUNCH_FIX + " ...'",
            ))
    return out


# --- launcher -----------------------------------------------------------------------------------

_VENV_PY = re.compile(r"(^|/)\.?venv/bin/python|\$VIRTUAL_ENV/|\$\{VIRTUAL_ENV\}/")


def _direct_python(job: Job) -> Field | None:
    """The interpreter of an srun that runs a training script with no launcher at all."""
    for s in job.sruns:
        if s.launchers:
            continue
        for st in [s.step, *s.inner]:
            fields = s.program if st is s.step else st.fields
            for k, f in enumerate(fields[:-1]):
                if _PYTHON_WORD.search(f.value) and fields[k + 1].value.endswith(".py"):
                    return f
    return None


_PYTHON_WORD = re.compile(r"(^|/)python[0-9.]*$")


def check_launcher(job: Job, cfg: LintConfig) -> list[Finding]:
    """A worker launcher other than ``uv run python -m torch.distributed.run``."""
    out: list[Finding] = []
    direct = None if job.launchers else _direct_python(job)
    if direct is not None:
        out.append(_f(
            job, "launcher", "warning", direct.at or direct.line,
            "srun starts the training script directly, one task per GPU, with no "
            "torch.distributed.run: RANK, WORLD_SIZE and MASTER_ADDR are whatever the script "
            "sets by hand",
            "srun --ntasks-per-node=1 bash -c '" + LAUNCH_FIX + " --nnodes \"$NNODES\" "
            '--nproc-per-node "$GPUS_PER_NODE" --node-rank "$SLURM_NODEID" ... '
            "pretrain_gpt.py ...'",
        ))
    for lz in job.launchers:
        line = lz.first.at
        if lz.kind == "launch":
            msg = ("python -m torch.distributed.launch is the deprecated launcher"
                   + ("" if lz.uv else ", and it runs outside uv"))
            pat = r"[^\s'\"]*python[\w.]*[^\s'\"]*(\s+-\S+)*\s+-m\s+torch\.distributed\.launch"
        elif lz.uv:
            continue
        elif lz.kind == "torchrun":
            msg = "bare torchrun: it can start an interpreter that does not see the venv"
            pat = r"[^\s'\"]*torchrun"
        elif lz.python is not None and _VENV_PY.search(lz.python.value):
            continue
        else:
            py = lz.python.value if lz.python else "python"
            msg = f"{py} -m torch.distributed.run outside uv: the interpreter may not be the venv's"
            pat = r"[^\s'\"]*python[\w.]*[^\s'\"]*(\s+-\S+)*\s+-m\s+torch\.distributed\.run"
        text = job.script.line_text(line)
        new = re.sub(pat, LAUNCH_FIX, text, count=1, flags=re.I)
        out.append(_f(job, "launcher", "warning", line, msg,
                      new.strip() if new != text else LAUNCH_FIX + " ..."))
    return out


# --- worker-group -------------------------------------------------------------------------------

_RANK_FIX = '--nnodes "$NNODES" --node-rank "$SLURM_NODEID" --master-addr "$MASTER_ADDR" ' \
    '--master-port "$MASTER_PORT"'


def _direct_in_srun(job: Job, lz: Launcher) -> bool:
    return any(lz in s.launchers and lz.step is s.step for s in job.sruns)


def check_worker_group(job: Job, cfg: LintConfig) -> list[Finding]:
    """``--standalone``, ``--nnodes`` apart from the allocation, node ranks that collide."""
    out: list[Finding] = []
    nodes = job.nodes
    for lz in job.launchers:
        o = lz.opts
        if "standalone" in o:
            if nodes is None or nodes[0] > 1:
                out.append(_f(
                    job, "worker-group", "warning", o["standalone"].line,
                    "--standalone on a multi-node job: every node starts its own single-node "
                    "world and trains its own copy of the model (the job exits 0)",
                    _sub(job, o["standalone"].line, r"--standalone", _RANK_FIX, _RANK_FIX),
                ))
            continue
        nn = o.get("nnodes")
        if nn is None:
            if nodes is not None and nodes[0] > 1:
                out.append(_f(
                    job, "worker-group", "error", lz.first.at,
                    f"no --nnodes on a {nodes[0]}-node job: torch.distributed.run defaults to "
                    "one node, so each node forms its own world",
                    LAUNCH_FIX + " " + _RANK_FIX + " ...",
                ))
        elif _on_line(job, nn, "--nnodes") and (n := _int(nn.value.split(":")[-1])) is not None:
            if nodes is not None and n != nodes[0]:
                what = ("independent single-node jobs" if n == 1
                        else "a world that never completes" if n > nodes[0]
                        else "node ranks beyond --nnodes")
                out.append(_f(
                    job, "worker-group", "error", nn.line,
                    f"--nnodes {n} but the allocation has {nodes[0]} node(s): {what}",
                    _sub(job, nn.line, r"--nnodes[= ]\S+", '--nnodes "$SLURM_NNODES"',
                         '--nnodes "$SLURM_NNODES"'),
                ))
            elif nodes is None and n == 1 and "node-rank" in o:
                out.append(_f(
                    job, "worker-group", "error", nn.line,
                    "--nnodes 1 with a --node-rank: every node is its own world, and a node "
                    "rank above 0 waits for ranks that never come",
                    _sub(job, nn.line, r"--nnodes[= ]\S+", '--nnodes "$SLURM_NNODES"',
                         '--nnodes "$SLURM_NNODES"'),
                ))
        nr = o.get("node-rank")
        if nr is not None and _direct_in_srun(job, lz) and re.search(
            r"\$\{?SLURM_(NODEID|PROCID|LOCALID)", nr.value
        ):
            out.append(_f(
                job, "worker-group", "error", nr.line,
                f"--node-rank {nr.value} is expanded once by the batch shell, before srun starts "
                "the tasks: every node gets node rank 0",
                "srun bash -c '" + LAUNCH_FIX + ' --node-rank "$SLURM_NODEID" ...\'',
            ))
        backend = o.get("rdzv-backend")
        if nr is None and (nodes is None or nodes[0] > 1) and nn is not None and (
            _int(nn.value) or 2) > 1 and (backend is None or backend.value == "static"):
            out.append(_f(
                job, "worker-group", "error", lz.first.at,
                "no --node-rank with the static rendezvous: every node takes node rank 0",
                LAUNCH_FIX + ' --node-rank "$SLURM_NODEID" ...',
            ))
    return out


# --- master-addr --------------------------------------------------------------------------------


def _per_task(job: Job, lz: Launcher, line: int) -> bool:
    """True when ``line`` lies in the body srun runs on every node (evaluated per task)."""
    for s in job.sruns:
        if lz in s.launchers and s.step.cmd.line < line <= s.step.cmd.end_line:
            return True
    return False


def check_master_addr(job: Job, cfg: LintConfig) -> list[Finding]:
    """MASTER_ADDR not taken from ``scontrol show hostnames`` (raw nodelist, hostname, unset)."""
    out: list[Finding] = []
    for lz in job.launchers:
        o = lz.opts
        if "standalone" in o:
            continue
        addr = o.get("master-addr") or o.get("rdzv-endpoint")
        if addr is None:
            if _multi_node(job) and (job.nodes is not None or lz.opts.get("nnodes")):
                out.append(_f(
                    job, "master-addr", "error", lz.first.at,
                    "no --master-addr: every node uses 127.0.0.1 and waits for a store that "
                    "only its own agent serves",
                    MASTER_FIX,
                ))
            continue
        v = addr.value
        line = addr.line
        fix = (_sub(job, line, r"MASTER_ADDR=.*", MASTER_FIX.removeprefix("export "), MASTER_FIX)
               if "MASTER_ADDR=" in job.script.line_text(line) else MASTER_FIX)
        if "scontrol show hostname" in v:
            continue
        if re.search(r"\$\{?SLURM_(JOB_)?NODELIST", v) or re.fullmatch(
            r"[\w.-]*\[[\d,-]+\][\w.-]*(:\d+)?|[\w.-]+(,[\w.-]+)+", v
        ):
            out.append(_f(
                job, "master-addr", "error", line,
                "MASTER_ADDR is the raw node list (e.g. node[001-002]), not a host name: the "
                "rendezvous rejects it on every node",
                fix,
            ))
        elif not _multi_node(job):
            continue
        elif re.search(r"\$\(\s*hostname|`\s*hostname|\$\{?HOSTNAME\b", v):
            if _per_task(job, lz, line):
                out.append(_f(
                    job, "master-addr", "error", line,
                    "MASTER_ADDR from hostname inside the srun task: each node names itself "
                    "the master, so the nodes never meet in one world",
                    fix,
                ))
            else:
                out.append(_f(
                    job, "master-addr", "warning", line,
                    "MASTER_ADDR from hostname on the batch host: right only while the batch "
                    "host is the allocation's first node and its hostname is the name the "
                    "other nodes reach it by",
                    fix,
                ))
        elif v in ("127.0.0.1", "localhost", "::1"):
            out.append(_f(
                job, "master-addr", "error", line,
                f"MASTER_ADDR={v} on a multi-node job: each node waits on its own loopback",
                fix,
            ))
        elif re.fullmatch(r"\$\{?MASTER_ADDR\}?", v):
            out.append(_f(
                job, "master-addr", "error", line,
                "--master-addr uses $MASTER_ADDR, which the script never sets",
                MASTER_FIX,
            ))
        elif not addr.symbolic and "$" not in v:
            out.append(_f(
                job, "master-addr", "warning", line,
                f"MASTER_ADDR is the fixed host {v}: right only when that node happens to be "
                "the first of the allocation",
                fix,
            ))
    return out


# --- allocation ---------------------------------------------------------------------------------

_NODE_VARS = ("NNODES", "NUM_NODES", "N_NODES", "NODES")
_GPU_VARS = ("GPUS_PER_NODE", "NPROC_PER_NODE", "NGPUS", "NUM_GPUS", "GPUS")


def check_allocation(job: Job, cfg: LintConfig) -> list[Finding]:
    """NNODES / GPUS_PER_NODE / WORLD_SIZE hard-coded to numbers the allocation does not have."""
    out: list[Finding] = []
    nodes = job.nodes
    gpn = job.gpus_per_node()
    seen: set[int] = set()

    def add(line: int, sev: str, msg: str, fix: str) -> None:
        if line not in seen:
            seen.add(line)
            out.append(_f(job, "allocation", sev, line, msg, fix))

    for lz in job.launchers:
        nn = lz.opts.get("nnodes")
        if nodes and nn is not None and not _on_line(job, nn, "--nnodes"):
            n = _int(nn.value)
            if n is not None and n != nodes[0]:
                add(nn.line, "error",
                    f"NNODES is hard-coded to {n} but --nodes asks for {nodes[0]} "
                    f"(line {nodes[1]}): the world never completes or leaves nodes out",
                    _sub(job, nn.line, r"=\S+", "=$SLURM_NNODES", "export NNODES=$SLURM_NNODES"))
        npn = lz.opts.get("nproc-per-node") or lz.opts.get("nproc_per_node")
        if gpn and npn is not None:
            n = _int(npn.value)
            if n is not None and n != gpn[0]:
                sev = "error" if n > gpn[0] else "warning"
                what = ("more workers than GPUs: invalid device ordinal" if n > gpn[0]
                        else "GPUs left idle")
                pat = r"=\S+" if not _on_line(job, npn, "--nproc-per-node") else \
                    r"(?<=--nproc-per-node[= ])\S+|(?<=--nproc_per_node[= ])\S+"
                add(npn.line, sev,
                    f"{n} workers per node but the allocation has {gpn[0]} GPUs per node "
                    f"(line {gpn[1]}): {what}",
                    _sub(job, npn.line, pat, "=" + str(gpn[0]) if pat == r"=\S+" else
                         str(gpn[0]), f"export GPUS_PER_NODE={gpn[0]}"))
    env = job.steps[-1].env if job.steps else None
    if env is None:
        return out
    for name in _NODE_VARS:
        var = env.get(name)
        n = _int(var.value) if var else None
        if var and nodes and n is not None and n != nodes[0]:
            add(var.line, "error",
                f"{name}={n} but --nodes asks for {nodes[0]} (line {nodes[1]})",
                _sub(job, var.line, rf"{name}=\S+", f"{name}=$SLURM_NNODES",
                     f"export {name}=$SLURM_NNODES"))
    for name in _GPU_VARS:
        var = env.get(name)
        n = _int(var.value) if var else None
        if var and gpn and n is not None and n != gpn[0]:
            add(var.line, "error" if n > gpn[0] else "warning",
                f"{name}={n} but the allocation has {gpn[0]} GPUs per node (line {gpn[1]})",
                _sub(job, var.line, rf"{name}=\S+", f"{name}={gpn[0]}",
                     f"export {name}={gpn[0]}"))
    ws = env.get("WORLD_SIZE")
    n = _int(ws.value) if ws else None
    if ws and nodes and gpn and n is not None and n != nodes[0] * gpn[0] and re.search(
        r"WORLD_SIZE=['\"]?\d", job.script.line_text(ws.line)
    ):
        add(ws.line, "error",
            f"WORLD_SIZE={n} but nodes × GPUs per node = {nodes[0]} × {gpn[0]} = "
            f"{nodes[0] * gpn[0]}",
            _sub(job, ws.line, r"WORLD_SIZE=\S+", "WORLD_SIZE=$((NNODES * GPUS_PER_NODE))",
                 "export WORLD_SIZE=$((NNODES * GPUS_PER_NODE))"))
    return out


# --- max-connections ----------------------------------------------------------------------------

_BLACKWELL = re.compile(r"(?<![a-z0-9])(g?b[123]00\w*|blackwell|sm_?1[0-2]\d|rtx.?pro.?6000|"
                        r"rtx.?50[6-9]0|thor)(?![a-z0-9])", re.I)
_PRE_BLACKWELL = re.compile(
    r"(?<![a-z0-9])(a100\w*|a800|a30|a40|a10g?|a16|a2|h100\w*|h200\w*|h800|h20|gh200|l4|l40s?|"
    r"v100\w*|t4|p100|p40|ampere|hopper|volta|ada|turing|sm_?[5-9]\d|rtx.?[2-4]0[6-9]0\w*|"
    r"a[456]000|rtx.?[a-z]?[456]000)(?![a-z0-9])", re.I)


def gpu_generation(job: Job, cfg: LintConfig) -> tuple[str | None, str]:
    """("blackwell" | "pre-blackwell" | None, how we know) for the job's GPUs."""
    cands = [(name, f"{src} {name} (line {line})") for name, line, src in job.gpu_types()]
    part = job.option(job.main_srun, "partition")
    if part:
        for p in part[0].split(","):
            if p in cfg.partitions:
                cands.append((cfg.partitions[p],
                              f"partition {p} = {cfg.partitions[p]} in {cfg.source or 'config'}"))
    if cfg.gpu_hint:
        cands.append((cfg.gpu_hint, f"the job's logs show {cfg.gpu_hint}"))
    for name, why in cands:
        if _BLACKWELL.search(name):
            return "blackwell", why
        if _PRE_BLACKWELL.search(name):
            return "pre-blackwell", why
    return None, "unknown GPU type"


def _mc_fix(job: Job, var: Field | None, value: str | None) -> str:
    if value is None:
        return "unset CUDA_DEVICE_MAX_CONNECTIONS   # or delete the export"
    text = f"export CUDA_DEVICE_MAX_CONNECTIONS={value}"
    if var is not None and "CUDA_DEVICE_MAX_CONNECTIONS=" in job.script.line_text(var.line):
        return _sub(job, var.line, r"CUDA_DEVICE_MAX_CONNECTIONS=\S*",
                    f"CUDA_DEVICE_MAX_CONNECTIONS={value}", text)
    return text


def check_max_connections(job: Job, cfg: LintConfig) -> list[Finding]:
    """CUDA_DEVICE_MAX_CONNECTIONS against GPU generation, TP/CP, FSDP and MoE overlap."""
    out: list[Finding] = []
    gen, why = gpu_generation(job, cfg)
    for lz in job.launchers:
        a = lz.args
        if lz.script is None:
            continue
        tp = _int(a["tensor-model-parallel-size"].value) if "tensor-model-parallel-size" in a \
            else 1
        cp = _int(a["context-parallel-size"].value) if "context-parallel-size" in a else 1
        tp_cp = (tp or 2) > 1 or (cp or 2) > 1 if ("tensor-model-parallel-size" in a or
                                                    "context-parallel-size" in a) else False
        fsdp = next((k for k in ("use-torch-fsdp2", "use-megatron-fsdp", "use-custom-fsdp")
                     if k in a), None)
        moe = "overlap-moe-expert-parallel-comm" in a
        f = lz.env_value("CUDA_DEVICE_MAX_CONNECTIONS")
        var = lz.step.env.get("CUDA_DEVICE_MAX_CONNECTIONS")
        uncond = f is not None and (var is None or not var.conditional or
                                    "CUDA_DEVICE_MAX_CONNECTIONS" in lz.step.prefix)
        val = f.value if f is not None else None
        line = f.line if f is not None else lz.first.at
        megatron = tp_cp or fsdp or moe or any(k.startswith(("num-layers", "save", "load"))
                                               for k in a)
        if not megatron:
            continue
        if moe:
            if val != "32" and not (val == "1" and tp_cp and gen != "blackwell"):
                out.append(_f(
                    job, "max-connections", "warning", line,
                    "--overlap-moe-expert-parallel-comm wants CUDA_DEVICE_MAX_CONNECTIONS=32 "
                    f"(it is {'unset' if val is None else val}): the overlap streams serialise",
                    _mc_fix(job, f, "32"),
                ))
            elif val == "1":
                out.append(_f(
                    job, "max-connections", "note", line,
                    "TP/CP > 1 with MoE overlap on pre-Blackwell: =1 favours TP/CP, =32 the MoE "
                    "overlap; Megatron warns that the two conflict",
                    _mc_fix(job, f, "32"),
                ))
            continue
        if fsdp:
            if val == "1":
                out.append(_f(
                    job, "max-connections", "error", line,
                    f"CUDA_DEVICE_MAX_CONNECTIONS=1 with --{fsdp}: Megatron asserts that FSDP "
                    "needs it unset or > 1",
                    _mc_fix(job, f, None),
                ))
            continue
        if tp_cp:
            what = f"TP={tp}" + (f", CP={cp}" if cp and cp > 1 else "")
            if gen == "blackwell":
                if val is not None and uncond:
                    out.append(_f(
                        job, "max-connections", "note", line,
                        f"CUDA_DEVICE_MAX_CONNECTIONS is not needed on Blackwell ({why}); "
                        "exported unconditionally it has no effect",
                        _mc_fix(job, f, None),
                    ))
            elif val != "1":
                have = "unset" if val is None else val
                if gen == "pre-blackwell":
                    out.append(_f(
                        job, "max-connections", "error", line,
                        f"{what} on pre-Blackwell GPUs ({why}) and CUDA_DEVICE_MAX_CONNECTIONS "
                        f"is {have}: Megatron asserts at start-up",
                        _mc_fix(job, f, "1"),
                    ))
                else:
                    out.append(_f(
                        job, "max-connections", "warning", line,
                        f"{what} and CUDA_DEVICE_MAX_CONNECTIONS is {have}; the GPU type is not "
                        "named (--gres=gpu:TYPE:N, --constraint, or a partition map in the "
                        "config): Megatron asserts on pre-Blackwell GPUs",
                        _mc_fix(job, f, "1"),
                    ))
            continue
        if val is not None and uncond:
            out.append(_f(
                job, "max-connections", "note", line,
                "CUDA_DEVICE_MAX_CONNECTIONS is exported but nothing needs it (TP = CP = 1, no "
                "FSDP, no MoE overlap)",
                _mc_fix(job, f, None),
            ))
    return out


# --- node-local-path ----------------------------------------------------------------------------


def _node_local(cfg: LintConfig, path: str) -> str | None:
    p = re.sub(r"\$\{(\w+)(:?[-=][^}]*)?\}", r"$\1", path.strip("'\""))
    for s in cfg.shared:
        if p == s or p.startswith(s.rstrip("/") + "/"):
            return None
    for pre in cfg.node_local:
        if p == pre or p.startswith(pre.rstrip("/") + "/"):
            return pre
    return None


def check_node_local_path(job: Job, cfg: LintConfig) -> list[Finding]:
    """Worktree, checkpoints, logs or venv on a path only one node sees."""
    out: list[Finding] = []
    shared = job.cwd.value if job.cwd is not None and _node_local(cfg, job.cwd.value) is None \
        and job.cwd.value.startswith(("/", "$")) else "/shared/project"

    def flag(f: Field, what: str, sev: str, consequence: str) -> None:
        pre = _node_local(cfg, f.value)
        if pre is None:
            return
        text = job.script.line_text(f.line)
        fixed = text
        for cand in (f.value, pre, "${" + pre[1:] + "}" if pre.startswith("$") else pre):
            if cand in text:
                fixed = text.replace(cand, shared if cand == pre else
                                     shared + f.value[len(pre):], 1)
                break
        out.append(_f(job, "node-local-path", sev, f.line,
                      f"{what} {f.value} is on node-local storage ({pre}): {consequence}",
                      fixed.strip() if fixed != text else f"use a path under {shared}"))

    multi = _multi_node(job)
    worktree_sev = "error" if multi else "warning"
    if job.cwd is not None:
        flag(job.cwd, "the worktree", worktree_sev,
             "the other nodes cannot chdir there and run from /tmp" if multi
             else "it vanishes with the node's scratch space")
    srun = job.main_srun
    for opt in ("chdir",):
        got = job.option(srun, opt)
        if got:
            flag(Field(got[0], got[1]), f"--{opt}", worktree_sev, "the other nodes cannot cd there")
    for opt in ("output", "error"):
        got = job.option(srun, opt)
        if got:
            flag(Field(got[0], got[1]), f"--{opt}", "warning",
                 "the job's log vanishes with the node")
    for lz in job.launchers:
        for key, what, why in (
            ("save", "--save", "each node keeps its own shards and a requeue starts from random"),
            ("load", "--load", "a restart on other nodes finds no checkpoint"),
            ("tensorboard-dir", "--tensorboard-dir", "the logs vanish with the node"),
            ("wandb-save-dir", "--wandb-save-dir", "the logs vanish with the node"),
        ):
            if key in lz.args and lz.args[key].value:
                flag(lz.args[key], what, "warning", why)
        if "log-dir" in lz.opts and lz.opts["log-dir"].value:
            flag(lz.opts["log-dir"], "--log-dir", "warning", "the worker logs vanish with the node")
        if lz.python is not None:
            flag(lz.python, "the interpreter", worktree_sev if multi else "warning",
                 "the other nodes do not have it")
        for name in ("UV_PROJECT_ENVIRONMENT", "VIRTUAL_ENV"):
            v = lz.env_value(name)
            if v is not None:
                flag(v, name, "warning", "every node builds its own venv inside the job")
    return out


# --- container-mounts ---------------------------------------------------------------------------


def _under(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root + "/") or root == "/"


def check_container_mounts(job: Job, cfg: LintConfig) -> list[Finding]:
    """A container (pyxis ``--container-image``) that does not mount the worktree and its venv."""
    out: list[Finding] = []
    for srun in job.sruns:
        img = srun.opts.get("container-image")
        if img is None:
            continue
        mounts = srun.opts.get("container-mounts")
        sources = [m.split(":", 1)[0] for m in mounts.value.split(",")] if mounts else []
        need: list[tuple[str, str]] = []
        if job.cwd is not None:
            need.append(("the worktree", job.cwd.value))
        for lz in srun.launchers:
            for name in ("UV_PROJECT_ENVIRONMENT", "VIRTUAL_ENV"):
                v = lz.env_value(name)
                if v is not None and v.value.startswith(("/", "$")):
                    need.append(("the venv", v.value))
        missing = [(w, p) for w, p in need if not any(_under(p, s) for s in sources if s)]
        line = mounts.line if mounts else img.line
        text = job.script.line_text(line)
        if missing:
            add = ",".join(f"{p}:{p}" for _, p in missing)
            fix = (text.replace(mounts.value, mounts.value + "," + add, 1).strip() if mounts
                   else re.sub(r"(--container-image[= ]\S+)", rf"\1 --container-mounts={add}",
                               text, count=1).strip())
            out.append(_f(
                job, "container-mounts", "error", line,
                "the container does not mount "
                + " and ".join(f"{w} {p}" for w, p in missing)
                + ": the workers cannot see the code or its .venv",
                fix,
            ))
        elif not need and not sources:
            out.append(_f(
                job, "container-mounts", "warning", line,
                "the container mounts nothing and the script does not cd into a worktree: "
                "the workers see only the image",
                re.sub(r"(--container-image[= ]\S+)",
                       r'\1 --container-mounts="$PWD:$PWD" --container-workdir="$PWD"',
                       text, count=1).strip(),
            ))
    return out


# --- uv-sync ------------------------------------------------------------------------------------


def check_uv_sync(job: Job, cfg: LintConfig) -> list[Finding]:
    """``uv run`` that would build the venv on every node, or ``uv sync`` inside srun."""
    out: list[Finding] = []
    for srun in job.sruns:
        for st in [srun.step, *srun.inner]:
            vals = [f.value for f in (st.fields if st is not srun.step else srun.program)]
            for i in range(len(vals) - 1):
                if vals[i].rsplit("/", 1)[-1] == "uv" and vals[i + 1] == "sync":
                    line = (st.fields if st is not srun.step else srun.program)[i].line
                    out.append(_f(
                        job, "uv-sync", "warning", line,
                        "uv sync inside srun: every node rebuilds the venv at the same time",
                        "uv sync   # once, before sbatch, in the worktree",
                    ))
    for lz in job.launchers:
        if not lz.uv or "--no-sync" in lz.uv_opts:
            continue
        nosync = lz.env_value("UV_NO_SYNC")
        if nosync is not None and nosync.value not in ("", "0", "false"):
            continue
        if job.uv_sync:
            continue
        line = lz.first.at
        out.append(_f(
            job, "uv-sync", "warning", line,
            "uv run without --no-sync and no uv sync beforehand: every node resolves and "
            "installs the venv inside the job (`Creating virtual environment at: .venv`)",
            _sub(job, line, r"uv\s+run", "uv run --no-sync", "uv run --no-sync ...")
            + "   # after `uv sync` before sbatch",
        ))
    return out


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
    Rule("container-mounts", "Containers mount the worktree", REASONS["container-mounts"],
         check_container_mounts),
    Rule("uv-sync", "The venv is built once, before submission", REASONS["uv-sync"],
         check_uv_sync),
)
RULE_IDS = tuple(r.id for r in RULES)

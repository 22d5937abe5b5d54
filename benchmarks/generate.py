"""Generate a large, realistic failed-job directory for the benchmark (deterministic).

Layout (torchrun ``--redirects 3 --log-dir`` under ``srun --label``)::

    OUT/
      slurm-4242.out                                   # srun output: every node's torchrun agent
      torchrun/node000/4242_k2j8x0ab/attempt_0/0/stdout.log
      torchrun/node000/4242_k2j8x0ab/attempt_0/0/stderr.log
      ...                                              # NODES x GPUS_PER_NODE ranks

What happens in the job: training runs with ``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL``
(the bulk of the bytes: NCCL INFO lines), Megatron iteration lines on the last rank,
UserWarnings, c10 warnings and benign lines that contain the words "error" and "timeout"
(``--dense``: every rank prints its iteration line, the hit-dense profile). At
``T_OOM`` one rank (``oom_rank``) raises ``torch.OutOfMemoryError``; its process does not exit
(it hangs in teardown), so every other rank waits in the next all-reduce and its NCCL watchdog
fires ten minutes later; each node's torchrun reports its children's deaths (the OOM node's
"Root Cause" is a SIGABRT sibling, as torchrun only sees exit times) and srun ends the step.

Line formats follow PyTorch 2.7 / NCCL 2.21 / Megatron core 0.16 / Slurm 24.11.

    python benchmarks/generate.py --size-gb 1 --out bench-data/job-1g
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ncclinfo

JOB_ID = 4242
T0 = datetime(2026, 8, 20, 11, 2, 7)
"""Job start."""
T_OOM = datetime(2026, 8, 20, 14, 3, 11, 482113)
"""The OOM; the watchdogs fire ``TIMEOUT_S`` later."""
TIMEOUT_S = 600
CHUNK_LINES = 256
"""Noise lines written with one timestamp (the file's clock advances chunk by chunk)."""
SITE = "/usr/local/lib/python3.12/dist-packages"
MEG = "/workspace/Megatron-LM"
HCAS = ("mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11")
OPS = ("AllReduce", "AllGather", "ReduceScatter", "Broadcast")


@dataclass(frozen=True)
class Spec:
    """What to generate; ``oom_rank`` defaults to a rank in the middle of the job."""

    out: str
    size_gb: float = 1.0
    nodes: int = 128
    gpus_per_node: int = 8
    seed: int = 7
    oom_rank: int = -1
    dense: bool = False
    """Hit-dense: every rank prints its iteration/loss line every step (as many training
    scripts do), not only Megatron's last rank."""
    failure: str = "cuda_oom"
    """What the failing rank (``oom_rank``) raises: a key of :data:`FAILURES`."""
    job_id: int = JOB_ID
    """The SLURM job id (``slurm-<id>.out``, torchrun's run id)."""
    first_node: int = 0
    """The job's first host is ``node<first_node>`` (jobs of one night land on different
    nodes of the cluster)."""
    nccl_info: bool = False
    """NCCL_DEBUG=INFO as NCCL prints it (``ncclinfo.py``): every rank's communicators start
    (tens per rank, hundreds of lines each), then training without NCCL's COLL lines."""

    @property
    def world(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def oom(self) -> int:
        if self.oom_rank >= 0:
            return self.oom_rank
        return (self.world * 5) // 8 + self.gpus_per_node // 2 + 1

    @property
    def total_bytes(self) -> int:
        return int(self.size_gb * (1 << 30))

    def host(self, node: int) -> str:
        """Host name of the job's ``node``-th node."""
        return host(self.first_node + node)


def host(node: int) -> str:
    return f"node{node:03d}"


def _cpp_stamp(t: datetime, level: str, rnd: random.Random) -> str:
    """c10 logger time: MMDD without zero padding, nanoseconds from a monotonic clock."""
    return f"{level}{t.month * 100 + t.day} {t:%H:%M:%S}.{rnd.randrange(10**9):09d}"


def _py_stamp(t: datetime, level: str) -> str:
    return f"{level}{t:%m%d %H:%M:%S}.{t.microsecond // 1000:03d}000"


# -- noise ---------------------------------------------------------------------------------
# Templates are pre-rendered per rank with "\x01" for the C++ time stamp, "\x02" for the
# Megatron time stamp and "\x03" for a counter, then stamped chunk by chunk (fast).


def _stdout_templates(spec: Spec, rank: int, rnd: random.Random) -> list[tuple[str, int]]:
    lr = rank % spec.gpus_per_node
    node = rank // spec.gpus_per_node
    pid = 180000 + rank * 7
    nccl = f"{spec.host(node)}:{pid}:{pid + 61} [{lr}] NCCL INFO "
    comm = f"0x{rnd.getrandbits(44):x}"
    nxt = (rank + 1) % spec.world
    prv = (rank - 1) % spec.world
    if spec.nccl_info:
        return _info_templates(spec, rank)
    t: list[tuple[str, int]] = [
        (
            f"{nccl}{op}: opCount \x03 sendbuff 0x7f{rnd.getrandbits(40):010x} recvbuff "
            f"0x7f{rnd.getrandbits(40):010x} count {rnd.choice((1, 1259621, 50331648, 4096))} "
            f"datatype {rnd.choice((7, 9))} op 0 root 0 comm {comm} [nranks={spec.world}] "
            f"stream 0x{rnd.getrandbits(32):x}",
            30,
        )
        for op in OPS
    ]
    t += [
        (
            f"{nccl}Channel \x03/32 : {rank}[{lr}] -> {nxt}[{nxt % spec.gpus_per_node}] "
            "via P2P/CUMEM/read",
            8,
        ),
        (
            f"{nccl}Channel \x03/0 : {prv}[{prv % spec.gpus_per_node}] -> {rank}[{lr}] [receive] "
            f"via NET/IB/{lr}/GDRDMA",
            6,
        ),
        (f"{nccl}Trees [0] {nxt}/-1/-1->{rank}->{prv} [1] {nxt}/-1/-1->{rank}->{prv}", 3),
        (f"{nccl}Connected all rings, use ring PXN 0 GDR 1", 2),
        (f"{nccl}Connected all trees", 2),
        (f"{nccl}threadThresholds 8/8/64 | 8192/8/64 | 512 | 512", 1),
        (
            f"{nccl}32 coll channels, 32 collnet channels, 0 nvls channels, 32 p2p channels, "
            "32 p2p channels per peer",
            1,
        ),
        (f"{nccl}NCCL_IB_TIMEOUT set by environment to 22.", 1),
        (f"{nccl}NCCL_IB_RETRY_CNT set by environment to 7.", 1),
        (
            f"{nccl}ncclCommInitRank comm 0x\x03 rank {rank} nranks {spec.world} cudaDev {lr} "
            f"nvmlDev {lr} busId {lr:x}9000 commId 0x{rnd.getrandbits(60):x} - Init COMPLETE",
            1,
        ),
        (
            f"{nccl}Init timings - ncclCommInitRank: rank {rank} nranks {spec.world} total 1.21 "
            "(kernels 0.15, alloc 0.02, bootstrap 0.81, allgathers 0.01, topo 0.10, graphs 0.01, "
            "connections 0.11, rest 0.00)",
            1,
        ),
        (f"{nccl}comm {comm} rank {rank} nranks {spec.world} - Destroy COMPLETE", 1),
        # Benign lines with "error" / "timeout" in them (what naive grep for errors finds).
        (f"{nccl}NCCL_IB_AR_THRESHOLD set by environment to 0 (no error correction change)", 1),
        (
            " [\x02] data loader: step \x03 prefetch ok, 0 worker errors, worker timeout 120 s",
            2,
        ),
        (" > rerun state machine: 0 errors injected (error_injection_rate 0), timeout 600", 1),
    ]
    if spec.dense or rank == spec.world - 1:  # Megatron's training_log: the last rank
        t.append(
            (
                " [\x02] iteration \x03/  500000 | consumed samples:     \x03 | elapsed time per "
                "iteration (ms): 8123.5 | throughput per GPU (TFLOP/s/GPU): 431.3 | learning "
                "rate: 2.999400E-04 | global batch size:  1024 | lm loss: 2.345679E+00 | loss "
                "scale: 1.0 | grad norm: 0.812 | number of skipped iterations:   0 | number of "
                "nan iterations:   0 |",
                40,
            )
        )
    return t


def _info_templates(spec: Spec, rank: int) -> list[tuple[str, int]]:
    """Training noise of a job run with NCCL_DEBUG=INFO and no COLL subsystem: NCCL is
    quiet once its communicators are up; Megatron's lines remain."""
    t = [
        (
            " [\x02] data loader: step \x03 prefetch ok, 0 worker errors, worker timeout 120 s",
            2,
        ),
        (" > rerun state machine: 0 errors injected (error_injection_rate 0), timeout 600", 1),
    ]
    if spec.dense or rank == spec.world - 1:
        t.append(
            (
                " [\x02] iteration \x03/  500000 | consumed samples:     \x03 | elapsed time per "
                "iteration (ms): 8123.5 | throughput per GPU (TFLOP/s/GPU): 431.3 | learning "
                "rate: 2.999400E-04 | global batch size:  1024 | lm loss: 2.345679E+00 | loss "
                "scale: 1.0 | grad norm: 0.812 | number of skipped iterations:   0 | number of "
                "nan iterations:   0 |",
                40,
            )
        )
    return t


def _stderr_templates(spec: Spec, rank: int, rnd: random.Random) -> list[tuple[str, int]]:
    return [
        (
            f"{SITE}/torch/utils/checkpoint.py:92: UserWarning: None of the inputs have "
            "requires_grad=True. Gradients will be None\n  warnings.warn(",
            6,
        ),
        (
            f"{SITE}/transformer_engine/pytorch/cpp_extensions/gemm.py:201: UserWarning: "
            "TE/cuBLAS workspace of 33554432 bytes is too small, error-free fallback to "
            "cublasLt heuristic 3\n  warnings.warn(",
            3,
        ),
        (
            f"{MEG}/megatron/core/tensor_parallel/layers.py:609: UserWarning: "
            "async_grad_allreduce is deprecated, not in use anymore and will be removed in a "
            "future release\n  warnings.warn(",
            3,
        ),
        (
            f"{SITE}/torch/distributed/distributed_c10d.py:4631: FutureWarning: "
            "`torch.distributed._reduce_scatter_base` is a private function and will be "
            "deprecated. Please use `torch.distributed.reduce_scatter_tensor` instead.\n"
            "  warnings.warn(",
            2,
        ),
        (
            f"[rank{rank}]:[\x01 ProcessGroupNCCL.cpp:4561] Warning: "
            "TORCH_NCCL_AVOID_RECORD_STREAMS=1 has no effect for point-to-point collectives. "
            "(function operator())",
            4,
        ),
        (
            f"[rank{rank}]:[\x01 CUDAGuardImpl.h:119] Warning: CUDA warning: driver shutting "
            "down, no error reported for stream \x03 (function destroyEvent)",
            1,
        ),
        (
            "INFO:megatron.core.dist_checkpointing.strategies.async_utils:async save: "
            "timeout 600 s, \x03 chunks, 0 errors",
            1,
        ),
    ]


def _expand(templates: list[tuple[str, int]], rnd: random.Random, n: int) -> list[str]:
    lines = [t for t, _ in templates]
    weights = [w for _, w in templates]
    return rnd.choices(lines, weights=weights, k=n)


def _noise(
    fh,
    templates: list[tuple[str, int]],
    budget: int,
    t_end: datetime,
    rnd: random.Random,
    distinct: bool = False,
) -> None:
    """Write about ``budget`` bytes of noise whose clock runs from ``T0`` to ``t_end``. With
    ``distinct`` every counter differs (each iteration line is a new line, as in a real run);
    otherwise a chunk of lines shares one counter and one stamp (fast to write)."""
    avg = sum(len(s) * w for s, w in templates) / sum(w for _, w in templates) + 12
    per = max(1, min(CHUNK_LINES, int(budget / avg)))
    span = (t_end - T0).total_seconds()
    written = 0
    counter = rnd.randrange(1000)
    pool = _expand(templates, rnd, CHUNK_LINES * 8)
    while written < budget:
        t = T0 + timedelta(seconds=span * min(1.0, (written + avg * per) / budget))
        start = rnd.randrange(len(pool) - per)
        text = "\n".join(pool[start : start + per]) + "\n"
        counter += per
        text = text.replace("\x01", _cpp_stamp(t, "W", rnd))
        if distinct:
            parts = text.split("\x03")
            text = "".join(p + str(counter + i) for i, p in enumerate(parts[:-1])) + parts[-1]
            counter += len(parts)
            stamp = f"{t:%Y-%m-%d %H:%M:%S}."
            parts = text.split("\x02")
            text = "".join(f"{p}{stamp}{rnd.randrange(10**6):06d}" for p in parts[:-1]) + parts[-1]
        else:
            text = text.replace(
                "\x02", f"{t:%Y-%m-%d %H:%M:%S}.{rnd.randrange(10**6):06d}"
            ).replace("\x03", str(counter))
        data = text.encode()
        if written + len(data) > budget:  # end on a whole line near the budget
            cut = data.rfind(b"\n", 0, max(1, budget - written)) + 1
            data = data[: cut or len(data)]
        fh.write(data)
        written += len(data)
        if written >= budget - avg:
            break


# -- failures ------------------------------------------------------------------------------

OOM_TB_FRAMES = [
    (f"{MEG}/pretrain_gpt.py", 283, "<module>", "pretrain("),
    (
        f"{MEG}/megatron/training/training.py",
        386,
        "pretrain",
        "iteration, num_floating_point_operations_so_far = train(",
    ),
    (f"{MEG}/megatron/training/training.py", 1412, "train", "train_step(forward_step_func,"),
    (
        f"{MEG}/megatron/training/training.py",
        745,
        "train_step",
        "losses_reduced = forward_backward_func(",
    ),
    (
        f"{MEG}/megatron/core/pipeline_parallel/schedules.py",
        1271,
        "forward_backward_pipelining_without_interleaving",
        "output_tensor, num_tokens = forward_step(",
    ),
    (
        f"{MEG}/megatron/core/transformer/mlp.py",
        131,
        "forward",
        "intermediate_parallel = self.activation_func(intermediate_parallel)",
    ),
    (f"{SITE}/torch/nn/functional.py", 2401, "gelu", "return torch._C._nn.gelu(input)"),
]


def oom_traceback(rank: int, lr: int) -> str:
    p = f"[rank{rank}]: "
    out = [f"{p}Traceback (most recent call last):"]
    for f, ln, fn, code in OOM_TB_FRAMES:
        out.append(f'{p}  File "{f}", line {ln}, in {fn}')
        out.append(f"{p}    {code}")
    out.append(
        f"{p}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {lr} "
        "has a total capacity of 79.10 GiB of which 1.21 GiB is free. Including non-PyTorch "
        "memory, this process has 77.88 GiB memory in use. Of the allocated memory 74.02 GiB "
        "is allocated by PyTorch, and 2.31 GiB is reserved by PyTorch but unallocated. If "
        "reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
        "documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )
    return "\n".join(out) + "\n"


def _traceback(rank: int, frames: list[tuple[str, int, str, str]], last: list[str]) -> str:
    """An uncaught exception as torch >= 2.4's excepthook prints it: every line prefixed with
    ``[rank<R>]: `` (message-formats.md 0.3)."""
    p = f"[rank{rank}]: "
    out = [f"{p}Traceback (most recent call last):"]
    for f, ln, fn, code in frames:
        out.append(f'{p}  File "{f}", line {ln}, in {fn}')
        out.append(f"{p}    {code}")
    out += [f"{p}{line}" for line in last]
    return "\n".join(out) + "\n"


def cuda_error_traceback(rank: int, lr: int) -> str:
    """An illegal memory access raised in backward: torch 2.4-2.7's CUDA error text
    (``RuntimeError``, the trailer without a period after ``CUDA_LAUNCH_BLOCKING=1``;
    message-formats.md 7.1)."""
    frames = [
        *OOM_TB_FRAMES[:5],
        (
            f"{MEG}/megatron/core/pipeline_parallel/schedules.py",
            386,
            "backward_step",
            "custom_backward(output_tensor[0], output_tensor_grad[0])",
        ),
        (
            f"{MEG}/megatron/core/pipeline_parallel/schedules.py",
            147,
            "custom_backward",
            "Variable._execution_engine.run_backward(",
        ),
    ]
    return _traceback(
        rank,
        frames,
        [
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "CUDA kernel errors might be asynchronously reported at some other API call, so the "
            "stacktrace below might be incorrect.",
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
            "",
        ],
    )


def index_error_traceback(rank: int, lr: int) -> str:
    """A data bug: an ``IndexError`` from tensor indexing in the batch code (the message as
    torch prints it, cf. sample_logs/real/max-restarts)."""
    frames = [
        *OOM_TB_FRAMES[:5],
        (
            f"{MEG}/pretrain_gpt.py",
            203,
            "forward_step",
            "tokens, labels, loss_mask, attention_mask, position_ids = get_batch(data_iterator)",
        ),
        (f"{MEG}/pretrain_gpt.py", 142, "get_batch", "batch = get_batch_on_this_tp_rank(data)"),
        (
            f"{MEG}/megatron/training/utils.py",
            498,
            "get_batch_on_this_tp_rank",
            "'labels': data['labels'][:, idx].cuda(non_blocking=True),",
        ),
    ]
    size = 4096 << (rank % 3)
    msg = f"IndexError: index {size} is out of bounds for dimension 0 with size {size}"
    return _traceback(rank, frames, [msg])


FAILURES = {
    "cuda_oom": ("cuda_oom", oom_traceback),
    "cuda_error": ("cuda_error", cuda_error_traceback),
    "python_exception": ("python_exception", index_error_traceback),
}
"""Failure kinds of the failing rank: (expected verdict category, its stderr tail). Every other
rank's NCCL watchdog times out ten minutes later, whatever the kind."""


def _frames(rnd: random.Random) -> list[str]:
    libs = ("libc10.so", "libtorch_cuda.so", "libtorch_cuda.so", "libtorch.so", "libc.so.6")
    funcs = (
        "c10::Error::Error(c10::SourceLocation, std::string)",
        "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration"
        "<long, std::ratio<1l, 1000l> > >)",
        "c10d::ProcessGroupNCCL::watchdogHandler()",
        "c10d::ProcessGroupNCCL::ncclCommWatchdog()",
        "<unknown function>",
    )
    return [
        f"frame #{i}: {fn} + 0x{rnd.randrange(16, 4096):x} (0x7f{rnd.getrandbits(40):010x} in "
        f"{SITE}/torch/lib/{lib})"
        for i, (fn, lib) in enumerate(zip(funcs, libs, strict=True))
    ]


def watchdog_tail(spec: Spec, rank: int, t: datetime, seq: int, rnd: random.Random) -> str:
    """The timeout cascade of one waiting rank (torch 2.7): about 20 lines."""
    work = (
        f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1259621, NumelOut=1259621, "
        f"Timeout(ms)={TIMEOUT_S * 1000})"
    )
    ran = TIMEOUT_S * 1000 + rnd.randrange(2, 90)
    caught = (
        f"[Rank {rank}] Watchdog caught collective operation timeout: {work} ran for {ran} "
        "milliseconds before timing out."
    )
    pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"

    def c(line: int, msg: str, dt: float = 0.0) -> str:
        return (
            f"[rank{rank}]:[{_cpp_stamp(t + timedelta(seconds=dt), 'E', rnd)} "
            f"ProcessGroupNCCL.cpp:{line}] {msg}"
        )

    raised = (
        "Exception raised from checkTimeout at "
        "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:635 (most recent call first):"
    )
    out = [
        c(632, caught),
        c(
            1834,
            f"{pg}  failure detected by watchdog at work sequence id: {seq} PG status: "
            f"last enqueued work: {seq}, last completed work: {seq - 1}",
        ),
        c(
            1873,
            f"{pg} Stack trace of the failed collective not found, potentially because "
            "FlightRecorder is disabled. You can enable it by setting "
            "TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
        ),
        c(
            684,
            f"[Rank {rank}] Some NCCL operations have failed or timed out. Due to the "
            "asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
            "corrupted/incomplete data.",
            0.001,
        ),
        c(
            690,
            f"[Rank {rank}] To avoid data inconsistency, we are taking the entire process down.",
            0.001,
        ),
        c(1623, f"{pg} Process group watchdog thread terminated with exception: {caught}", 0.002),
        raised,
        *_frames(rnd),
        "",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  {pg} Process group watchdog thread terminated with exception: {caught}",
        raised,
        *_frames(rnd),
        "",
        "Fatal Python error: Aborted",
        "",
    ]
    return "\n".join(out) + "\n"


def _rank_files(spec: Spec, node: int, lr: int, rank_dir: Path, quota: int) -> None:
    rank = node * spec.gpus_per_node + lr
    rnd = random.Random(spec.seed * 1_000_003 + rank)
    seq = 20585
    stdout_t = _stdout_templates(spec, rank, rnd)
    stderr_t = _stderr_templates(spec, rank, rnd)
    t_stop = T_OOM - timedelta(seconds=1 + rnd.random())
    rank_dir.mkdir(parents=True, exist_ok=True)
    with open(rank_dir / "stdout.log", "wb", buffering=1 << 20) as fh:
        budget = int(quota * 0.78)
        if spec.nccl_info:  # every communicator's start, as NCCL 2.21 prints it
            pid = 180000 + rank * 7
            lines = ncclinfo.startup_lines(
                spec.host(node), pid, lr, rank, spec.world, spec.gpus_per_node, rnd
            )
            head = ("\n".join(lines) + "\n").encode()
            budget = max(0, budget - len(head))
        else:  # printed once per process, when NCCL initialises
            nccl = f"{spec.host(node)}:{180000 + rank * 7}:{180000 + rank * 7} [{lr}] NCCL INFO "
            hca = HCAS[lr % len(HCAS)]
            head = (
                f"{nccl}NCCL version 2.21.5+cuda12.4\n"
                f"{nccl}NET/IB : Using [0]{hca}:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.3.{node}.{lr}<0>\n"
                f"{nccl}Setting affinity for GPU {lr} to ffff,ffffffff,00000000,0000ffff\n"
            ).encode()
        fh.write(head)
        if rank == 0:
            dp = max(1, spec.world // 32)
            fh.write(
                (
                    f"using world size: {spec.world}, data-parallel size: {dp}, "
                    "context-parallel size: 1, "
                    "hierarchical context-parallel sizes: None, tensor-model-parallel size: 8, "
                    "pipeline-model-parallel size: 4\n"
                    "> initializing torch distributed ...\n"
                ).encode()
            )
        if spec.nccl_info:  # the pipeline's point-to-point channels open as training starts
            pid = 180000 + rank * 7
            p2p = ncclinfo.p2p_lines(
                spec.host(node), pid, pid + 61, lr, rank, spec.world, spec.gpus_per_node
            )
            fh.write(("\n".join(p2p) + "\n").encode())
        _noise(fh, stdout_t, budget, t_stop, rnd, spec.dense)
    with open(rank_dir / "stderr.log", "wb", buffering=1 << 20) as fh:
        fh.write(
            f"[rank{rank}]:[{_cpp_stamp(T0, 'W', rnd)} Utils.hpp:164] Warning: Environment "
            "variable NCCL_ASYNC_ERROR_HANDLING is deprecated; use "
            "TORCH_NCCL_ASYNC_ERROR_HANDLING instead (function getCvarInt)\n".encode()
        )
        _noise(fh, stderr_t, int(quota * 0.22), t_stop, rnd)
        # The file's clock right before the failure (what an undated traceback inherits).
        fh.write(
            f"[rank{rank}]:[{_cpp_stamp(T_OOM - timedelta(seconds=0.4), 'W', rnd)} "
            "ProcessGroupNCCL.cpp:4561] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS=1 has no "
            "effect for point-to-point collectives. (function operator())\n".encode()
        )
        if rank == spec.oom:
            fh.write(FAILURES[spec.failure][1](rank, lr).encode())
        else:
            t = T_OOM + timedelta(seconds=TIMEOUT_S + rnd.random() * 0.9)
            fh.write(watchdog_tail(spec, rank, t, seq, rnd).encode())


def _agent_lines(spec: Spec, node: int, rnd: random.Random) -> tuple[list[str], list[str]]:
    """(start-up lines, failure lines) of one node's torchrun agent, without the srun label."""
    apid = 170000 + node * 3
    api = f"{apid} site-packages/torch/distributed/elastic/multiprocessing/api.py"
    start = [
        f"{_py_stamp(T0, 'W')} {apid} site-packages/torch/distributed/run.py:792] ",
        f"{_py_stamp(T0, 'W')} {apid} site-packages/torch/distributed/run.py:792] "
        "*****************************************",
        f"{_py_stamp(T0, 'W')} {apid} site-packages/torch/distributed/run.py:792] Setting "
        "OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid "
        "your system being overloaded, please further tune the variable for optimal "
        "performance in your application as needed. ",
        f"{_py_stamp(T0, 'W')} {apid} site-packages/torch/distributed/run.py:792] "
        "*****************************************",
    ]
    t_fail = T_OOM + timedelta(seconds=TIMEOUT_S + 1.2 + rnd.random())
    ranks = [node * spec.gpus_per_node + i for i in range(spec.gpus_per_node)]
    first_lr = 0 if spec.oom != ranks[0] else 1
    fail = [
        f"{_py_stamp(t_fail, 'E')} {api}:869] failed (exitcode: -6) local_rank: {first_lr} "
        f"(pid: {180000 + ranks[first_lr] * 7}) of binary: /usr/bin/python3",
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        f'  File "{SITE}/torch/distributed/elastic/multiprocessing/errors/__init__.py", '
        "line 355, in wrapper",
        "    return f(*args, **kwargs)",
        f'  File "{SITE}/torch/distributed/run.py", line 918, in main',
        "    run(args)",
        f'  File "{SITE}/torch/distributed/launcher/api.py", line 286, in launch_agent',
        "    raise ChildFailedError(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    ]
    failures = []
    for i, r in enumerate(ranks):
        if r == spec.oom:
            code, sig, tb = (
                "1",
                "",
                "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
            )
            t = t_fail + timedelta(seconds=2)
        else:
            code, sig, tb = (
                "-6",
                "  (SIGABRT)",
                f"Signal 6 (SIGABRT) received by PID {180000 + r * 7}",
            )
            t = t_fail + timedelta(seconds=0 if i == first_lr else 1)
        failures.append((t, i, r, code, sig, tb))
    failures.sort()
    w = 55
    block = ["=" * w, "pretrain_gpt.py FAILED", "-" * w, "Failures:"]

    def item(idx: int, f: tuple) -> list[str]:
        t, i, r, code, sig, tb = f
        return [
            f"[{idx}]:",
            f"  time      : {t:%Y-%m-%d_%H:%M:%S}",
            f"  host      : {spec.host(node)}.cluster",
            f"  rank      : {r} (local_rank: {i})",
            f"  exitcode  : {code} (pid: {180000 + r * 7}){sig}",
            "  error_file: <N/A>",
            f"  traceback : {tb}",
        ]

    for k, f in enumerate(failures[1:], start=1):
        block += item(k, f)
    block += ["-" * w, "Root Cause (first observed failure):", *item(0, failures[0]), "=" * w]
    return start, fail + block


def _slurm_out(spec: Spec, path: Path, quota: int) -> None:
    rnd = random.Random(spec.seed)
    width = len(str(spec.nodes - 1))
    with open(path, "wb", buffering=1 << 20) as fh:

        def w(task: int | None, line: str) -> None:
            lab = f"{task:>{width}}: " if task is not None else ""
            fh.write(f"{lab}{line}\n".encode())

        w(None, f"srun: job {spec.job_id} queued and waiting for resources")
        w(None, f"srun: job {spec.job_id} has been allocated resources")
        per_node = [_agent_lines(spec, n, random.Random(spec.seed + n)) for n in range(spec.nodes)]
        for n, (start, _) in enumerate(per_node):
            for line in start:
                w(n, line)
        # The agents' own INFO chatter while training runs (keeps the file near its quota).
        filler = [
            (
                n,
                f"{_py_stamp(T0, 'I')} {170000 + n * 3} site-packages/torch/distributed/elastic/"
                f"agent/server/api.py:{rnd.choice((879, 904))}] [default] worker group healthy, "
                "monitor interval 5.0 s, no errors",
            )
            for n in range(spec.nodes)
        ]
        size = fh.tell()
        while size < quota:
            n, line = filler[rnd.randrange(len(filler))]
            w(n, line)
            size += len(line) + width + 3
        order = list(range(spec.nodes))
        rnd.shuffle(order)
        for n in order:
            for line in per_node[n][1]:
                w(n, line)
        for n in order:
            w(None, f"srun: error: {spec.host(n)}: task {n}: Exited with exit code 1")
        w(None, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
        t_end = T_OOM + timedelta(seconds=TIMEOUT_S + 5)
        w(
            None,
            f"slurmstepd: error: *** STEP {spec.job_id}.0 ON {spec.host(0)} CANCELLED AT "
            f"{t_end:%Y-%m-%dT%H:%M:%S} ***",
        )


def _node_job(args: tuple[Spec, int, int]) -> int:
    spec, node, quota = args
    run_id = f"{spec.job_id}_{_rand8(spec.seed + node)}"
    run = Path(spec.out) / "torchrun" / spec.host(node) / run_id
    for lr in range(spec.gpus_per_node):
        _rank_files(spec, node, lr, run / "attempt_0" / str(lr), quota)
    return node


def _rand8(seed: int) -> str:
    rnd = random.Random(seed)
    return "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz0123456789_") for _ in range(8))


def generate(spec: Spec, workers: int | None = None) -> Path:
    """Write the job directory; returns it. An existing directory is replaced."""
    out = Path(spec.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    slurm_quota = max(64 << 10, spec.total_bytes // 400)
    quota = max(2048, (spec.total_bytes - slurm_quota) // spec.world)
    _slurm_out(spec, out / f"slurm-{spec.job_id}.out", slurm_quota)
    jobs = [(spec, n, quota) for n in range(spec.nodes)]
    n = workers or len(os.sched_getaffinity(0))
    if n > 1 and spec.total_bytes > (64 << 20):
        with ProcessPoolExecutor(n) as pool:
            list(pool.map(_node_job, jobs))
    else:
        for j in jobs:
            _node_job(j)
    meta = {
        **asdict(spec),
        "oom_rank": spec.oom,
        "oom_node": spec.host(spec.oom // spec.gpus_per_node),
        "category": FAILURES[spec.failure][0],
        "world": spec.world,
        "bytes": sum(p.stat().st_size for p in out.rglob("*") if p.is_file()),
    }
    (out / "generator.json").write_text(json.dumps(meta, indent=2) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory to create (replaced if present)")
    ap.add_argument("--size-gb", type=float, default=1.0, help="total size (default 1)")
    ap.add_argument("--nodes", type=int, default=128)
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--oom-rank", type=int, default=-1, help="default: one in the middle")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument(
        "--dense", action="store_true", help="every rank prints its iteration line every step"
    )
    ap.add_argument(
        "--failure", choices=sorted(FAILURES), default="cuda_oom", help="what the failing rank does"
    )
    ap.add_argument(
        "--nccl-info",
        action="store_true",
        help="NCCL_DEBUG=INFO start-up of every communicator (ncclinfo.py), no COLL lines",
    )
    ap.add_argument("--job-id", type=int, default=JOB_ID)
    ap.add_argument("--first-node", type=int, default=0, help="number of the job's first host")
    a = ap.parse_args(argv)
    spec = Spec(
        a.out,
        a.size_gb,
        a.nodes,
        a.gpus_per_node,
        a.seed,
        a.oom_rank,
        a.dense,
        a.failure,
        a.job_id,
        a.first_node,
        a.nccl_info,
    )
    if not 0 <= spec.oom < spec.world:
        ap.error(f"--oom-rank must be in 0..{spec.world - 1}")
    out = generate(spec, a.workers)
    meta = json.loads((out / "generator.json").read_text())
    print(
        f"{out}: {meta['bytes'] / 1e6:.1f} MB, {spec.world} ranks on {spec.nodes} nodes, "
        f"{spec.failure} on rank {spec.oom} ({meta['oom_node']})",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

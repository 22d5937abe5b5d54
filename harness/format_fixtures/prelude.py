"""A job's normal start-up and training log up to the moment a scenario's failure begins."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .loglines import cpp, nccl_info
from .megatron import args_block, iteration_line, print_datetime, world_size_line
from .messages import WARN_NCCL_ENV
from .model import Job, ms
from .torchrun import agent_banner

# Scenario failure times are placed at job start + this + N iterations (illustrative).
ITERATION_CLOCK_START_MS = 72_000


@dataclass(frozen=True, kw_only=True)
class Train:
    """The training run as the logs show it: parallelism, pace, and what start-up prints."""

    tp: int = 1
    pp: int = 1
    gbs: int = 256  # global batch size
    ms_per_it: float = 8123.4
    first_it: int = 1
    nccl_debug: str = ""  # "", "WARN" or "INFO"
    env_warn: bool = False  # the deprecated NCCL_ASYNC_ERROR_HANDLING warning at init
    extra_args: dict[str, object] = field(default_factory=dict)
    tflops: float | None = None  # throughput column of the iteration lines (core_v0.5+)

    def time_after(self, job: Job, *, iterations: int, plus_ms: float = 0.0) -> datetime:
        """``plus_ms`` after ``iterations`` iterations of this run's pace."""
        return job.start + ms(ITERATION_CLOCK_START_MS + iterations * self.ms_per_it + plus_ms)


def std_batch(job: Job, extra: list[str] | None = None) -> list[str]:
    """The batch script's own first lines (``extra`` after them)."""
    return [
        f"Job {job.jobid} on {job.nnodes} nodes: {job.hostlist}",
        f"MASTER_ADDR={job.hosts[0]} MASTER_PORT=29500 NNODES={job.nnodes} "
        f"GPUS_PER_NODE={job.gpn} WORLD_SIZE={job.world}",
        *(extra or []),
    ]


def prelude(
    job: Job, tr: Train, *, until: datetime, batch_lines: list[str] | None = None
) -> datetime:
    """Start-up noise and iteration lines up to ``until``; returns the training start time."""
    t0 = job.start
    for i, ln in enumerate(batch_lines or []):
        job.batch(t0 + ms(i), ln)
    for n in range(job.nnodes):
        agent_banner(job, t0 + ms(2100 + 37 * n), node=n)
    r0 = 0
    t = t0 + ms(9200)
    job.worker(t, r0, world_size_line(job, tp=tr.tp, pp=tr.pp), "out")
    job.worker(t, r0, args_block(job, tp=tr.tp, pp=tr.pp, extra=tr.extra_args), "out")
    t_init = t0 + ms(10100)
    job.worker(t_init, r0, "> initializing torch distributed ...", "out")
    job.pg_initialised.update(range(job.world))
    if tr.env_warn and job.v.t >= (2, 2):
        for r in range(job.world):
            tw = t_init + ms(40 + 3 * r)
            cpp(job, tw, r, severity="W", file="Utils.hpp", line=164, msg=WARN_NCCL_ENV)
    job.worker(
        t_init + ms(900),
        r0,
        f"> initialized tensor model parallel with size {tr.tp}\n"
        f"> initialized pipeline model parallel with size {tr.pp}\n"
        "> setting random seeds to 1234 ...",
        "out",
    )
    if tr.nccl_debug == "INFO":
        nccl_init_info(job, t_init + ms(1500))
    job.worker(t_init + ms(2100), r0, "> compiling dataset index builder ...", "out")
    job.worker(
        t_init + ms(2400),
        r0,
        ">>> done with dataset index builder. Compilation time: 0.061 seconds",
        "out",
    )
    t_ready = t_init + ms(24_000)
    job.worker(
        t_ready,
        r0,
        "time to initialize megatron (seconds): 23.912\n"
        + print_datetime(job, t_ready, "after megatron is initialized"),
        "out",
    )
    job.worker(t_ready + ms(300), r0, "building GPT model ...", "out")
    t_model = t_ready + ms(21_000)
    job.worker(
        t_model,
        r0,
        print_datetime(
            job, t_model, "after model, optimizer, and learning rate scheduler are built"
        ),
        "out",
    )
    job.worker(t_model + ms(200), r0, "> building train, validation, and test datasets ...", "out")
    t_data = t_model + ms(9_000)
    job.worker(
        t_data,
        r0,
        print_datetime(job, t_data, "after dataloaders are built")
        + "\ndone with setup ...\ntraining ...",
        "out",
    )
    t_train = t_data + ms(800)
    job.worker(
        t_train, r0, print_datetime(job, t_train, "before the start of training step"), "out"
    )
    last = job.world - 1
    it = tr.first_it
    ti = t_train
    loss = 6.8 if tr.first_it < 100 else 2.61
    while True:
        ti = ti + ms(tr.ms_per_it)
        if ti >= until:
            break
        if it % 10 == 0:
            loss = loss * 0.985 + 0.011
            gn = 1.9 - 0.0007 * (it % 97) + 0.13 * ((it // 10) % 3)
            job.worker(
                ti,
                last,
                iteration_line(
                    job,
                    ti,
                    it=it,
                    gbs=tr.gbs,
                    ms_per_it=tr.ms_per_it,
                    lr=3e-4 * min(1.0, it / 2000),
                    loss=loss,
                    grad_norm=gn,
                    tflops=tr.tflops,
                ),
                "out",
            )
        it += 1
    return t_train


def nccl_init_info(job: Job, t: datetime) -> None:
    """NCCL_DEBUG=INFO start-up lines of every rank (reference §5.1)."""
    v = job.v
    for r in range(job.world):
        n, lr = job.node_of(r), job.lr_of(r)
        tr = t + ms(11 * r)
        if r == 0:
            nccl_info(job, tr, r, f"NCCL version {v.nccl}+cuda{v.cuda}")
        nccl_info(job, tr, r, f"Bootstrap : Using ib0:{job.ips[n]}<0>")
        nccl_info(job, tr, r, "NET/Plugin: No plugin found (libnccl-net.so)")
        nccl_info(
            job,
            tr,
            r,
            "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB "
            f"[3]mlx5_3:1/IB ; OOB ib0:{job.ips[n]}<0>",
        )
        nccl_info(job, tr, r, "Using network IB")
        comm = 0x55D1C2A30000 + 0x1F0 * r
        nccl_info(
            job,
            tr + ms(40),
            r,
            f"comm 0x{comm:x} rank {r} nranks {job.world} cudaDev {lr} "
            f"nvmlDev {lr} busId {job.bus[lr]} commId 0x3f9e1b2c44d0a817"
            " - Init START",
        )
        nccl_info(
            job,
            tr + ms(420),
            r,
            f"comm 0x{comm:x} rank {r} nranks {job.world} cudaDev {lr} "
            f"busId {job.bus[lr]} commId 0x3f9e1b2c44d0a817 - "
            f"localRank {lr} localRanks {job.gpn} - Init COMPLETE",
        )

"""Start-up failures: two ranks on one GPU, CUDA_DEVICE_MAX_CONNECTIONS with TP and FSDP."""

from __future__ import annotations

from datetime import datetime, timedelta

from ..loglines import frame, nccl_warn, traceback
from ..megatron import args_block, init_frames, world_size_line
from ..model import Job, Meta, ms
from ..prelude import std_batch
from ..torchrun import (
    agent_banner,
    agent_failed,
    agent_sigterm,
    child_failed,
    node_failure,
    srun_exit,
)
from ..versions import MEGATRON_DIR, Versions


def duplicate_gpu() -> tuple[Job, Meta]:
    v = Versions(
        torch="2.3.1",
        nccl="2.20.5",
        cuda="12.1",
        megatron="core_v0.7.0",
        slurm="23.02.7",
        python="3.11",
    )
    job = Job(
        name="duplicate-gpu",
        jobid=55120,
        nnodes=2,
        gpus_per_node=4,
        versions=v,
        seed=808,
        start=datetime(2025, 3, 17, 11, 5, 30),
        layout="combined",
    )
    # NCCL_DEBUG=WARN; start-up written here (not by prelude): it ends before training starts
    batch = std_batch(job, ["srun --kill-on-bad-exit=1 --label ..."])
    for i, ln in enumerate(batch):
        job.batch(job.start + ms(i), ln)
    for n in range(job.nnodes):
        agent_banner(job, job.start + ms(2100 + 37 * n), node=n)
    t = job.start + ms(9200)
    job.worker(t, 0, world_size_line(job, tp=1, pp=1), "out")
    job.worker(t, 0, args_block(job, tp=1, pp=1, extra={"distributed_timeout_minutes": 10}), "out")
    t_init = job.start + ms(10100)
    job.worker(t_init, 0, "> initializing torch distributed ...", "out")
    job.pg_initialised.update(range(job.world))
    job.worker(
        t_init + ms(900),
        0,
        "> initialized tensor model parallel with size 1\n"
        "> initialized pipeline model parallel with size 1\n"
        "> setting random seeds to 1234 ...\n> compiling dataset index builder ...",
        "out",
    )
    job.worker(
        t_init + ms(1300),
        0,
        ">>> done with dataset index builder. Compilation time: 0.058 seconds\n"
        "> compiling and loading fused kernels ...",
        "out",
    )
    t_dup = t_init + ms(2810)
    md = MEGATRON_DIR
    for r, other in ((4, 5), (5, 4)):
        tw = t_dup + ms(3 if r == 5 else 0)
        msg = f"Duplicate GPU detected : rank {r} and rank {other} both on CUDA device 18000"
        nccl_warn(job, tw, r, msg, file="init.cc", line=871, dev=0)
        tb = ["Traceback (most recent call last):"]
        tb += frame(job, f"{md}/pretrain_gpt.py", line=243, func="<module>", src="pretrain(")
        tb += frame(
            job,
            f"{md}/megatron/training/training.py",
            line=223,
            func="pretrain",
            src="initialize_megatron(",
        )
        tb += frame(
            job,
            f"{md}/megatron/training/initialize.py",
            line=97,
            func="initialize_megatron",
            src="_compile_dependencies()",
        )
        tb += frame(
            job,
            f"{md}/megatron/training/initialize.py",
            line=164,
            func="_compile_dependencies",
            src="torch.distributed.barrier()",
        )
        tb += frame(
            job,
            f"{job.sp}/torch/distributed/c10d_logger.py",
            line=75,
            func="wrapper",
            src="return func(*args, **kwargs)",
        )
        tb += frame(
            job,
            f"{job.sp}/torch/distributed/distributed_c10d.py",
            line=3696,
            func="barrier",
            src="work = default_pg.barrier(opts=opts)",
        )
        tb.append(
            "torch.distributed.DistBackendError: NCCL error in: "
            "../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, invalid usage (run with "
            f"NCCL_DEBUG=WARN for details), NCCL version {v.nccl}"
        )
        tb += [
            "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
            "Last error:",
            msg,
        ]
        traceback(job, tw + ms(60), r, tb)
    t_d1 = t_dup + ms(610)
    fails = [job.failure(4, exitcode=1), job.failure(5, exitcode=1)]
    node_failure(job, t_d1, node=1, failures=fails, running=[2, 3])
    srun_exit(job, t_d1 + ms(1020), node=1)
    t_k = t_d1 + ms(1030)
    job.srun(t_k, f"srun: Terminating StepId={job.jobid}.0")
    job.stepd(
        t_k + ms(35),
        f"*** STEP {job.jobid}.0 ON {job.hosts[0]} CANCELLED AT "
        f"{t_k + ms(35):%Y-%m-%dT%H:%M:%S} ***",
    )
    job.srun(
        t_k + ms(50), "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."
    )
    agent_sigterm(job, t_k + ms(110), node=0, local_ranks=range(4))
    meta = Meta(
        category="nccl_error",
        rank=-1,
        node=job.hosts[1],
        cause="Two ranks on gpu-node-002 (global ranks 4 and 5) were bound to the same GPU (CUDA "
        "device 0, busId 18000); NCCL refused to build the communicator (ncclInvalidUsage).",
        format_source=[
            "src/init.cc",
            "src/debug.cc",
            "torch/csrc/distributed/c10d/NCCLUtils.hpp",
            "torch/distributed/distributed_c10d.py",
            "torch/distributed/elastic/agent/server/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "src/srun/launch.c",
            "src/slurmd/slurmstepd/req.c",
        ],
        notes="Both ranks of the pair print the WARN, each naming itself first (`rank 4 and rank 5`, "
        "`rank 5 and rank 4`): the check in init.cc runs on every rank against all peers, so "
        "the message is symmetric and neither rank is more at fault. The fault is the node's "
        "rank-to-GPU binding, hence rank = -1 with the node named. torch 2.3: C++ lines carry "
        "`[rankN]:`, but Python tracebacks are not prefixed (excepthook from 2.4), so only "
        "torchrun's `[defaultN]:` tee prefix attributes them. torchrun's ChildFailedError names "
        "rank 4 as 'Root Cause' only because both failures share one detection second and rank "
        "4 comes first in dict order. Rule: §5.5 (Duplicate GPU = RC, invalid usage), §1.9 "
        "(`Last error:` carries the WARN body), categories.md (null rank when no single rank).",
        sections={
            f"slurm-{job.jobid}.out": [
                "0.2 (2.3 thread id)",
                "0.3 (<2.4 no prefix)",
                "1.9",
                "2.2",
                "2.3",
                "2.7",
                "5.1",
                "5.5",
                "6.1",
                "6.2",
                "6.4",
                "6.5 (23.02+)",
                "6.6",
            ]
        },
    )
    return job, meta


def max_connections_tp() -> tuple[Job, Meta]:
    v = Versions(
        torch="2.7.1", nccl="2.26.2", cuda="12.8", megatron="core_v0.14.0", slurm="24.05.4"
    )
    job = Job(
        name="max-connections-tp",
        jobid=90017,
        nnodes=2,
        gpus_per_node=8,
        versions=v,
        seed=909,
        start=datetime(2026, 2, 3, 8, 15, 0),
        layout="combined",
    )
    smi = ["index, name, compute_cap"] + [f"{i}, NVIDIA H100 80GB HBM3, 9.0" for i in range(8)]
    job.batch(
        job.start,
        "\n".join(
            std_batch(
                job,
                [
                    "CUDA_DEVICE_MAX_CONNECTIONS=<unset>",
                    "launching: uv run python -m torch.distributed.run --nnodes 2 --nproc-per-node 8 "
                    "--tee 3 pretrain_gpt.py --tensor-model-parallel-size 2 --pipeline-model-parallel-size "
                    "1 ...",
                    "$ nvidia-smi --query-gpu=index,name,compute_cap --format=csv",
                    *smi,
                ],
            )
        ),
    )
    for n in range(job.nnodes):
        agent_banner(job, job.start + ms(2100 + 41 * n), node=n)
    t = job.start + ms(8800)
    job.worker(t, 0, world_size_line(job, tp=2, pp=1), "out")
    md = MEGATRON_DIR
    for r in range(job.world):
        tb = init_frames(job)
        tb += frame(
            job,
            f"{md}/megatron/training/arguments.py",
            line=963,
            func="validate_args",
            src="assert os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS') == \"1\", \\",
        )
        tb.append("           " + "^" * 52)
        tb.append(
            "AssertionError: Using tensor model parallelism or context parallelism require "
            "setting the environment variable CUDA_DEVICE_MAX_CONNECTIONS to 1"
        )
        traceback(job, t + ms(5 + 2 * r), r, tb)
    for n in range(job.nnodes):
        t_d = t + ms(700 + 40 * n)
        fails = job.node_failures(n, exitcode=1)
        agent_failed(job, t_d, fails[0], node=n)
        child_failed(job, t_d + ms(40), fails, node=n, detected=t_d)
        srun_exit(job, t_d + ms(1100), node=n)
    meta = Meta(
        category="cuda_device_max_connections",
        rank=-1,
        node="",
        cause="TP=2 on H100 (sm_90) without CUDA_DEVICE_MAX_CONNECTIONS=1: Megatron's validate_args "
        "asserts on every rank at start-up. Export CUDA_DEVICE_MAX_CONNECTIONS=1 for this job.",
        format_source=[
            "megatron/training/arguments.py",
            "megatron/training/initialize.py",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "torch/distributed/elastic/multiprocessing/tail_log.py",
            "src/srun/launch.c",
        ],
        notes="All 16 ranks raise the same AssertionError within milliseconds, before "
        "init_process_group (validate_args runs before _initialize_distributed), so there is no "
        "`[rankN]:` prefix; attribution comes from the srun label and `[defaultN]:`. The GPU "
        "model and compute capability come from the batch script's nvidia-smi query. Each "
        "torchrun lists all 8 local failures (exit code 1, same detection second) and calls the "
        "lowest rank its root cause. Rule: §4.1 (0.13+ AssertionError, arch < 10 and TP > 1), "
        "launch-rules CUDA_DEVICE_MAX_CONNECTIONS table, categories.md (same failure on every "
        "rank at start-up ⇒ rank null).",
        sections={
            f"slurm-{job.jobid}.out": [
                "4.1 (core_v0.13+)",
                "4.2 (0.14+ world-size line)",
                "0.3",
                "2.1",
                "2.3",
                "2.6",
                "2.7",
                "6.4",
                "6.6",
            ]
        },
    )
    return job, meta


def fsdp_max_connections() -> tuple[Job, Meta]:
    v = Versions(
        torch="2.6.0", nccl="2.21.5", cuda="12.6", megatron="core_v0.12.1", slurm="23.11.10"
    )
    job = Job(
        name="fsdp-max-connections",
        jobid=90518,
        nnodes=2,
        gpus_per_node=8,
        versions=v,
        seed=1010,
        start=datetime(2025, 6, 19, 14, 2, 9),
        layout="split",
        tee=False,
    )
    job.batch(job.start, "+ export CUDA_DEVICE_MAX_CONNECTIONS=1", "err")
    job.batch(
        job.start + ms(1),
        "\n".join(
            std_batch(
                job,
                [
                    "$ nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader | sort | uniq -c",
                    "      8 NVIDIA A100-SXM4-80GB, 8.0",
                ],
            )
        ),
    )
    for n in range(job.nnodes):
        agent_banner(job, job.start + ms(2100 + 41 * n), node=n)
    t = job.start + ms(8600)
    job.worker(t, 0, world_size_line(job, tp=1, pp=1), "out")
    md = MEGATRON_DIR
    tbs: dict[int, list[str]] = {}
    for r in range(job.world):
        tb = init_frames(job)
        tb += frame(
            job,
            f"{md}/megatron/training/arguments.py",
            line=626,
            func="validate_args",
            src="assert os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS') != \"1\", \\",
        )
        tb.append("           " + "^" * 52)
        tb.append(
            "AssertionError: FSDP always requires CUDA_DEVICE_MAX_CONNECTIONS value large than one"
        )
        tbs[r] = tb
    # pairs of ranks on one node write their tracebacks at the same moment: lines interleave
    for r in range(0, job.world, 2):
        a, b = tbs[r], tbs[r + 1]
        base = t + ms(4 + 3 * r)
        for i in range(max(len(a), len(b))):
            for rr, tb in ((r, a), (r + 1, b)):
                if i < len(tb):
                    traceback(job, base + timedelta(microseconds=10 * i), rr, [tb[i]])
    for n in range(job.nnodes):
        t_d = t + ms(650 + 50 * n)
        fails = job.node_failures(n, exitcode=1)
        agent_failed(job, t_d, fails[0], node=n)
        child_failed(job, t_d + ms(40), fails, node=n, detected=t_d)
        srun_exit(job, t_d + ms(1000), node=n)
    meta = Meta(
        category="cuda_device_max_connections",
        rank=-1,
        node="",
        cause="--use-torch-fsdp2 with CUDA_DEVICE_MAX_CONNECTIONS=1 exported by the batch script: "
        "Megatron asserts on every rank. Unset it (or set it > 1) for FSDP2 jobs.",
        format_source=[
            "megatron/training/arguments.py",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "src/srun/launch.c",
        ],
        notes="The `(sic)` assertion text `value large than one` (core_v0.12+ torch-FSDP2 branch) on "
        "all 16 ranks before any process group exists: no `[rankN]:`, no torchrun tee, only the "
        "srun node label; same-node tracebacks interleave line by line in the .err file. The "
        "0.10-0.12 world-size line keeps its missing `, ` (`sizes: Nonetensor-model-parallel`). "
        "The `+ export CUDA_DEVICE_MAX_CONNECTIONS=1` xtrace line is the fix location. Rule: "
        "§4.1 FSDP row, launch-rules table (FSDP ⇒ must not be 1), rank null (every rank).",
        sections={
            f"fsdp-max-connections-{job.jobid}.out": ["4.2 (0.10-0.12 variant)", "6.6"],
            f"fsdp-max-connections-{job.jobid}.err": [
                "4.1 (FSDP row)",
                "0.2",
                "0.3 (pre-init, no prefix)",
                "2.1",
                "2.3",
                "2.6",
                "6.4",
                "6.6",
            ],
        },
    )
    return job, meta

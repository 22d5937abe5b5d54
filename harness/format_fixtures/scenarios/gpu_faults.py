"""GPU faults: an illegal memory access and an Xid 79 (GPU fell off the bus)."""

from __future__ import annotations

from datetime import datetime

from ..loglines import agent_log, c10_backtrace, frame, pg_prefix, traceback
from ..megatron import megatron_train_frames
from ..messages import cuda_error_text
from ..model import WATCH, Job, Meta, ProcessGroup, Work, ms
from ..prelude import Train, prelude, std_batch
from ..torchrun import (
    MP_API,
    agent_close,
    agent_failed,
    agent_sigterm,
    child_failed,
    node_failure,
    srun_exit,
)
from ..versions import MEGATRON_DIR, Versions
from ..watchdog import C10_ERROR_FRAME, LIBC_TAIL, timeouts_for, watchdog_death


def illegal_memory_access() -> tuple[Job, Meta]:
    v = Versions(
        torch="2.8.0", nccl="2.27.3", cuda="12.8", megatron="core_v0.14.0", slurm="24.05.4"
    )
    job = Job(
        name="illegal-memory-access",
        jobid=83310,
        nnodes=3,
        gpus_per_node=4,
        versions=v,
        seed=606,
        start=datetime(2025, 11, 14, 18, 20, 5),
        layout="logdir",
        tee=False,
    )
    tr = Train(tp=4, ms_per_it=2870.0)
    t_err = tr.time_after(job, iterations=4310)
    prelude(job, tr, until=t_err, batch_lines=std_batch(job))
    r = 9
    err = cuda_error_text(
        v, error="an illegal memory access was encountered", enum="cudaErrorIllegalAddress"
    )
    bt = c10_backtrace(
        job,
        func="c10_cuda_check_implementation",
        file="c10/cuda/CUDAException.cpp",
        line=42,
        frames=[
            C10_ERROR_FRAME,
            (
                "c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string "
                "const&)",
                "0xe0",
                "libc10.so",
            ),
            (
                "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)",
                "0x3d2",
                "libc10_cuda.so",
            ),
            (
                "c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const",
                "0x56",
                "libtorch_cuda.so",
            ),
            ("c10d::ProcessGroupNCCL::WorkNCCL::isCompleted()", "0x90", "libtorch_cuda.so"),
            ("c10d::ProcessGroupNCCL::Watchdog::runLoop()", "0x1d1", "libtorch_cuda.so"),
            ("c10d::ProcessGroupNCCL::Watchdog::run()", "0xde", "libtorch_cuda.so"),
            *LIBC_TAIL,
        ],
    )
    tp_group = ProcessGroup(local_id=3, guid=3, desc="TENSOR_MODEL_PARALLEL_GROUP")
    pgp = pg_prefix(job, r, tp_group, group_rank=1)
    watchdog_death(job, t_err, r, pgp, err + "\n" + bt)
    tb = megatron_train_frames(job)[:-2]  # down to the schedule, then into backward
    sched = f"{MEGATRON_DIR}/megatron/core/pipeline_parallel/schedules.py"
    tb += frame(
        job,
        sched,
        line=522,
        func="forward_backward_no_pipelining",
        src="backward_step(input_tensor, output_tensor, output_tensor_grad, model_type, config)",
    )
    tb += frame(
        job,
        sched,
        line=386,
        func="backward_step",
        src="custom_backward(output_tensor[0], output_tensor_grad[0])",
    )
    tb += frame(
        job, sched, line=147, func="custom_backward", src="Variable._execution_engine.run_backward("
    )
    tb.append("torch.AcceleratorError: " + err)
    traceback(job, t_err + ms(31), r, tb)
    t_d2 = t_err + ms(870)
    node_failure(job, t_d2, node=2, failures=[job.failure(r, exitcode=-6)], running=[0, 2, 3])
    srun_exit(job, t_d2 + ms(1400), node=2)
    t_to = t_err + ms(599_700)
    timeouts_for(
        job,
        list(range(8)),
        t_to,
        Work(seq=17241, op="_REDUCE_SCATTER_BASE", numel_in=100663296, numel_out=33554432),
        tp=tr.tp,
    )
    for n in (0, 1):
        t_d = t_to + ms(1000 + 90 * n)
        node_failure(job, t_d, node=n, failures=job.node_failures(n, exitcode=-6), running=[])
        srun_exit(job, t_d + ms(2000), node=n)
    meta = Meta(
        category="cuda_error",
        rank=9,
        node=job.hosts[2],
        cause="CUDA illegal memory access on rank 9 (gpu-node-003, local rank 1), first seen by its "
        "NCCL watchdog and then raised as torch.AcceleratorError in backward.",
        format_source=[
            "c10/cuda/CUDAException.cpp",
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "torch/distributed/distributed_c10d.py",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "src/srun/launch.c",
        ],
        notes="torch 2.8: CUDA error text with the 2.4-2.8 trailer (no period after "
        "CUDA_LAUNCH_BLOCKING=1, trailing newline), class torch.AcceleratorError (2.8+). The "
        "watchdog line on rank 9's TP group comes first (PG rank 1), then the Python traceback, "
        "then `terminate called ... c10::DistBackendError` (SIGABRT). Ranks 0-7 time out 10 "
        "minutes later on their data-parallel groups. Rule: §1.6 (the CUDA error inside the "
        "watchdog exception is the RC) and §8 (CUDA error beats timeouts).",
        sections={
            "torchrun-logs/*/*/attempt_0/<local_rank>/stderr.log": [
                "0.1",
                "0.3",
                "1.1",
                "1.3",
                "1.4",
                "1.5",
                "1.6",
                "7.1 (2.4-2.8, AcceleratorError)",
                "2.8",
            ],
            f"illegal-memory-access-{job.jobid}.out": ["0.2", "2.1", "2.3", "6.4", "6.6"],
        },
    )
    return job, meta


def dmesg_ts(t: datetime) -> str:
    return f"[{t:%a %b} {t.day:>2} {t:%H:%M:%S %Y}]"


def xid79() -> tuple[Job, Meta]:
    v = Versions(
        torch="2.4.1", nccl="2.20.5", cuda="12.4", megatron="core_v0.8.0", slurm="23.11.10"
    )
    job = Job(
        name="xid79",
        jobid=33211,
        nnodes=2,
        gpus_per_node=4,
        versions=v,
        seed=707,
        start=datetime(2025, 10, 7, 1, 12, 40),
        layout="combined",
        bus_ids=["01000", "41000", "81000", "c1000"],
    )
    tr = Train(tp=1, ms_per_it=812.0, nccl_debug="INFO")
    t_x = tr.time_after(job, iterations=15022)
    prelude(
        job,
        tr,
        until=t_x,
        batch_lines=std_batch(
            job,
            [
                "starting GPU kernel-log watcher: srun --overlap --ntasks-per-node=1 --label "
                "dmesg -T -w --level=err,warn"
            ],
        ),
    )
    xid_node = 1  # gpu-node-002, as the watcher's srun label shows it
    uuid = "GPU-3f1c9a52-7d41-6be0-9f2e-0a6c5e1d8b47"
    for i, ln in enumerate(
        [
            f"NVRM: GPU at PCI:0000:41:00: {uuid}",
            "NVRM: GPU Board Serial Number: 1652322004419",
            "NVRM: Xid (PCI:0000:41:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the "
            "bus.",
            "NVRM: GPU 0000:41:00.0: GPU has fallen off the bus.",
            "NVRM: GPU 0000:41:00.0: GPU serial number is 1652322004419.",
            "NVRM: A GPU crash dump has been created. If possible, please run",
            "NVRM: nvidia-bug-report.sh as root to collect this data before",
            "NVRM: the NVIDIA kernel module is unloaded.",
        ]
    ):
        tx = t_x + ms(i)
        job.add(tx + ms(300), WATCH, "out", f"{dmesg_ts(tx)} {ln}", node=xid_node)
    r = 5  # node 1, local rank 1 = busId 41000
    err = cuda_error_text(v, error="unspecified launch failure", enum="cudaErrorLaunchFailure")
    bt = c10_backtrace(
        job,
        func="c10_cuda_check_implementation",
        file="c10/cuda/CUDAException.cpp",
        line=43,
        frames=[
            ("c10::Error::Error(c10::SourceLocation, std::string)", "0x96", "libc10.so"),
            (
                "c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string "
                "const&)",
                "0x64",
                "libc10.so",
            ),
            (
                "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)",
                "0x118",
                "libc10_cuda.so",
            ),
            (
                "c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const",
                "0x56",
                "libtorch_cuda.so",
            ),
            ("c10d::ProcessGroupNCCL::WorkNCCL::isCompleted()", "0xa0", "libtorch_cuda.so"),
            ("c10d::ProcessGroupNCCL::watchdogHandler()", "0x1f8", "libtorch_cuda.so"),
            ("c10d::ProcessGroupNCCL::ncclCommWatchdog()", "0x14d", "libtorch_cuda.so"),
            ("<unknown function>", "0xdc253", "/lib/x86_64-linux-gnu/libstdc++.so.6"),
            ("<unknown function>", "0x94ac3", "/lib/x86_64-linux-gnu/libc.so.6"),
            ("<unknown function>", "0x126850", "/lib/x86_64-linux-gnu/libc.so.6"),
        ],
    )
    t_e = t_x + ms(1640)
    watchdog_death(job, t_e, r, pg_prefix(job, r), err + "\n" + bt)
    t_d1 = t_e + ms(700)
    agent_close(job, t_d1, node=1, local_ranks=[0, 2, 3])
    agent_log(
        job,
        t_d1 + ms(30_010),
        1,
        level="WARNING",
        path=MP_API,
        key="close",
        msg=f"Unable to shutdown process {job.pid[1][2]} via 15, forcefully exiting via 9",
        delta=18,
    )
    f = job.failure(r, exitcode=-6)
    agent_failed(job, t_d1 + ms(30_300), f, node=1)
    child_failed(job, t_d1 + ms(30_340), [f], node=1, detected=t_d1)
    srun_exit(job, t_d1 + ms(31_400), node=1)
    t_nf = t_x + ms(96_000)
    job.stepd(
        t_nf,
        f"*** JOB {job.jobid} ON {job.hosts[0]} CANCELLED AT "
        f"{t_nf:%Y-%m-%dT%H:%M:%S} DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR "
        "DETAILS ***",
    )
    job.srun(t_nf + ms(20), f"srun: error: Node failure on {job.hosts[1]}")
    job.srun(
        t_nf + ms(25), "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."
    )
    agent_sigterm(job, t_nf + ms(140), node=0, local_ranks=range(4))
    meta = Meta(
        category="hardware",
        rank=5,
        node=job.hosts[1],
        cause="GPU 0000:41:00 on gpu-node-002 fell off the bus (Xid 79); rank 5, the rank on that "
        "GPU, failed with `unspecified launch failure` and Slurm then lost the node.",
        format_source=[
            "kernel_rc.c (open-gpu-kernel-modules, R535)",
            "osapi.c",
            "c10/cuda/CUDAException.cpp",
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "src/slurmd/slurmstepd/req.c",
            "src/srun/srun_job.c",
            "src/api/step_launch.c",
            "torch/distributed/elastic/multiprocessing/api.py",
        ],
        notes="The job captured the node's kernel log through a background `srun --overlap --label "
        "dmesg -T -w` watcher (label `1:` = gpu-node-002). The Xid line uses the R515-R565 form "
        "with `pid='<unknown>', name=<unknown>`. NCCL INFO `busId 41000` maps PCI 0000:41:00 to "
        "local rank 1 = global rank 5, which fails 1.6 s later (2.4 PG prefix `[PG 0 "
        "(default_pg) Rank 5]`, CUDA trailer without period). The JOB banner says NODE FAILURE. "
        "Rule: §8 precedence, hardware (Xid 79, node failure) beats everything; §7.2 table.",
        sections={
            f"slurm-{job.jobid}.out": [
                "7.2 (R515-R565)",
                "7.1 (2.4-2.8)",
                "0.1 (2.4)",
                "0.2 (2.3-2.4 thread id)",
                "1.1 (2.4)",
                "1.6",
                "2.1",
                "2.3",
                "5.1",
                "6.2",
                "6.5",
                "6.6",
            ]
        },
    )
    return job, meta

"""Hangs: one rank missing from a collective, the lowest last-enqueued trap, a mismatch."""

from __future__ import annotations

from datetime import datetime

from ..loglines import cpp, pg_prefix
from ..messages import DUMP_REASON
from ..model import Job, Meta, Work, ms
from ..prelude import Train, prelude, std_batch
from ..torchrun import node_failure, srun_exit
from ..versions import Versions
from ..watchdog import watchdog_timeout


def pure_hang() -> tuple[Job, Meta]:
    v = Versions(
        torch="2.5.1", nccl="2.21.5", cuda="12.4", megatron="core_v0.11.0", slurm="24.05.4"
    )
    job = Job(
        name="pure-hang",
        jobid=52007,
        nnodes=2,
        gpus_per_node=4,
        versions=v,
        seed=202,
        start=datetime(2025, 8, 8, 4, 11, 3),
        layout="split",
        tee=False,
    )
    tr = Train(tp=1, ms_per_it=1012.0, extra_args={"exit_duration_in_mins": 230}, tflops=388.0)
    t_hang = tr.time_after(job, iterations=3961)
    prelude(job, tr, until=t_hang, batch_lines=std_batch(job))
    # every rank but 6 enters the all-reduce; rank 6 never does
    work = Work(seq=3962, op="ALLREDUCE", numel_in=1, numel_out=1)
    others = [0, 1, 2, 3, 4, 5, 7]
    t_to = t_hang + ms(work.timeout_ms)
    for i, r in enumerate(others):
        watchdog_timeout(job, t_to + ms(23 * i + 5 * r), r, work, overrun_ms=23 * i + 9)
    t_d1 = t_to + ms(900)
    node_failure(
        job, t_d1, node=1, failures=[job.failure(r, exitcode=-6) for r in (4, 5, 7)], running=[2]
    )
    t_d0 = t_to + ms(1040)
    node_failure(
        job, t_d0, node=0, failures=[job.failure(r, exitcode=-6) for r in (0, 2)], running=[1, 3]
    )
    srun_exit(job, t_d1 + ms(2300), node=1)
    srun_exit(job, t_d0 + ms(2600), node=0)
    meta = Meta(
        category="collective_timeout",
        rank=6,
        node=job.hosts[1],
        cause="Rank 6 never joined ALLREDUCE SeqNum 3962 on the default process group; the seven "
        "other ranks waited 10 minutes and their NCCL watchdogs aborted them.",
        format_source=[
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "c10/util/Logging.cpp",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "torch/_logging/_internal.py",
            "src/srun/launch.c",
            "src/common/write_labelled_message.c",
            "megatron/training/training.py",
        ],
        notes="Every rank except 6 prints `Watchdog caught collective operation timeout` for the same "
        "WorkNCCL(SeqNum=3962, OpType=ALLREDUCE, NumelIn=1, NumelOut=1) and the 2.4-2.5 summary "
        "`Exception (either an error or timeout) detected by watchdog at work: 3962, last "
        "enqueued NCCL work: 3962, last completed NCCL work: 3961.`. Rank 6 prints nothing and "
        "dies by the agent's SIGTERM (it is not in the ChildFailedError block). No earlier "
        "error anywhere. Rule: §1.3 interpretation + §1.12 RC rule (2), the rank absent from the "
        "timeout list. Split .out/.err with `srun --label` but no torchrun tee: per-rank "
        "attribution only from `[rankN]:`.",
        sections={
            f"pure-hang-{job.jobid}.out": ["4.2", "4.3", "4.4", "6.6"],
            f"pure-hang-{job.jobid}.err": [
                "0.1",
                "0.2 (2.5+)",
                "1.1 (2.5+)",
                "1.3",
                "1.4 (2.4-2.5 variant)",
                "1.5",
                "1.6",
                "2.1",
                "2.3",
                "2.6",
                "6.4",
                "6.6",
            ],
        },
    )
    return job, meta


def hang_lowest_enqueued() -> tuple[Job, Meta]:
    v = Versions(
        torch="2.7.1", nccl="2.26.2", cuda="12.8", megatron="core_v0.14.0", slurm="24.11.1"
    )
    job = Job(
        name="hang-lowest-enqueued",
        jobid=60441,
        nnodes=2,
        gpus_per_node=8,
        versions=v,
        seed=303,
        start=datetime(2026, 1, 5, 22, 40, 12),
        layout="logdir",
        label=False,
        tee=False,
    )
    tr = Train(tp=1, ms_per_it=2220.0, nccl_debug="INFO")
    t_hang = tr.time_after(job, iterations=811)
    prelude(job, tr, until=t_hang, batch_lines=std_batch(job))
    work = Work(seq=812, op="ALLREDUCE", numel_in=1, numel_out=1)
    t_to = t_hang + ms(work.timeout_ms)
    order = [9, 0, 1, 2, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15]  # rank 9's watchdog fires first
    for i, r in enumerate(order):
        watchdog_timeout(job, t_to + ms(17 * i + 2 * r), r, work, overrun_ms=17 * i + 4)
    # rank 3 never enqueued 812: its heartbeat monitor sees the TCPStore dump signal (§1.7)
    pgp = pg_prefix(job, 3)
    t3 = t_to + ms(350)
    cpp(
        job,
        t3,
        3,
        severity="E",
        file="ProcessGroupNCCL.cpp",
        line=1439,
        msg=f"{pgp}Observed flight recorder dump signal from another rank via TCPStore.",
    )
    cpp(
        job,
        t3 + ms(1),
        3,
        severity="E",
        file="ProcessGroupNCCL.cpp",
        line=1492,
        msg=f"{pgp}Received a dump signal due to a collective timeout from  rank 9 and we will "
        "try our best to dump the debug info. Last enqueued NCCL work: 811, last completed "
        f"NCCL work: 811.{DUMP_REASON}",
    )
    t_d0 = t_to + ms(930)
    node_failure(
        job,
        t_d0,
        node=0,
        failures=[job.failure(r, exitcode=-6) for r in (0, 1, 2, 4, 5, 6, 7)],
        running=[3],
    )
    t_d1 = t_to + ms(880)
    node_failure(job, t_d1, node=1, failures=job.node_failures(1, exitcode=-6), running=[])
    srun_exit(job, t_d1 + ms(2200), node=1)
    srun_exit(job, t_d0 + ms(2500), node=0)
    meta = Meta(
        category="collective_timeout",
        rank=3,
        node=job.hosts[0],
        cause="Rank 3 never issued collective #812 on the default process group (its last enqueued "
        "work is 811 while all 15 other ranks enqueued 812); the others timed out waiting.",
        format_source=[
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "c10/util/Logging.cpp",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "torch/_logging/_internal.py",
            "src/debug.cc",
            "src/srun/launch.c",
        ],
        notes="15 ranks print the 2.6+ summary `failure detected by watchdog at work sequence id: 812 "
        "PG status: last enqueued work: 812, last completed work: 811`. Rank 3 has no pending "
        "work (a collective it never issued cannot time out on it), so the lower `last "
        "enqueued` value appears in its heartbeat-monitor line `Received a dump signal due to a "
        "collective timeout from  rank 9 ... Last enqueued NCCL work: 811, last completed NCCL "
        "work: 811.` (§1.7). The dump source `rank 9` is only the first watchdog to fire, not "
        "the culprit. Rule: §1.4 reading (lowest last-enqueued) and §1.12 RC rule (2). Layout: "
        "torchrun `--log-dir` tree with `--redirects 3`, no tee; the sbatch output only holds "
        "agent and srun lines.",
        sections={
            "torchrun-logs/*/*/attempt_0/<local_rank>/stderr.log": [
                "0.1 (2.4+)",
                "1.1 (2.5+)",
                "1.3",
                "1.4 (2.6-2.12)",
                "1.5",
                "1.6",
                "1.7 (2.5+)",
                "2.8",
            ],
            "torchrun-logs/*/*/attempt_0/<local_rank>/stdout.log": ["4.2", "4.3", "4.4", "5.1"],
            f"hang-lowest-enqueued-{job.jobid}.out": ["0.2", "2.1", "2.3", "2.6", "6.4"],
        },
    )
    return job, meta


def collective_mismatch() -> tuple[Job, Meta]:
    v = Versions(
        torch="2.9.1", nccl="2.27.3", cuda="12.8", megatron="core_v0.14.0", slurm="24.05.4"
    )
    job = Job(
        name="collective-mismatch",
        jobid=71020,
        nnodes=2,
        gpus_per_node=4,
        versions=v,
        seed=404,
        start=datetime(2025, 10, 21, 9, 2, 44),
        layout="combined",
    )
    tr = Train(tp=1, ms_per_it=1630.0, env_warn=True)
    t_hang = tr.time_after(job, iterations=2209)
    prelude(job, tr, until=t_hang, batch_lines=std_batch(job))
    allreduce = Work(seq=2210, op="ALLREDUCE", numel_in=1, numel_out=1)
    allgather = Work(seq=2210, op="ALLGATHER", numel_in=1, numel_out=8)  # rank 2 only
    t_to = t_hang + ms(allreduce.timeout_ms)
    for i, r in enumerate([0, 1, 3, 4, 5, 6, 7, 2]):
        work = allgather if r == 2 else allreduce
        watchdog_timeout(job, t_to + ms(29 * i + r), r, work, overrun_ms=29 * i + 3)
    t_d0 = t_to + ms(1100)
    node_failure(
        job, t_d0, node=0, failures=[job.failure(r, exitcode=-6) for r in (0, 1, 3)], running=[2]
    )
    t_d1 = t_to + ms(1180)
    node_failure(job, t_d1, node=1, failures=job.node_failures(1, exitcode=-6), running=[])
    srun_exit(job, t_d0 + ms(2100), node=0)
    srun_exit(job, t_d1 + ms(2150), node=1)
    meta = Meta(
        category="collective_timeout",
        rank=2,
        node=job.hosts[0],
        cause="Collective mismatch at SeqNum 2210 on the default process group: rank 2 issued "
        "ALLGATHER while every other rank issued ALLREDUCE, so the collective never completed.",
        format_source=[
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "torch/csrc/distributed/c10d/Work.hpp",
            "c10/util/Logging.cpp",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "src/srun/launch.c",
            "src/common/write_labelled_message.c",
        ],
        notes="All eight ranks time out on SeqNum 2210 with identical last enqueued/completed "
        "(2210/2209), so the lowest-enqueued rule does not separate them; the WorkNCCL "
        "descriptions do: rank 2's is OpType=ALLGATHER, NumelOut=8 against ALLREDUCE, "
        "NumelOut=1 on the seven others. Rule: §1.2 (OpType/Numel fields), §1.7 desync reading "
        "('wrong sizes used across ranks, the order of collectives is not same'). Rank 2 is "
        "also the last to report, so 'earliest timeout' would point elsewhere.",
        sections={
            f"slurm-{job.jobid}.out": [
                "0.1",
                "0.2",
                "1.1",
                "1.2",
                "1.3",
                "1.4 (2.6-2.12)",
                "1.5",
                "1.6 (2.8+ Watchdog::run frames)",
                "2.1",
                "2.3",
                "2.7",
                "6.4",
                "6.6",
            ]
        },
    )
    return job, meta

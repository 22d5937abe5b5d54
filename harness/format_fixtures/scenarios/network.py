"""Network: an InfiniBand completion error (transport retry counter exceeded)."""

from __future__ import annotations

from datetime import datetime

from ..loglines import nccl_warn
from ..messages import nccl_remote_error_text
from ..model import Job, Meta, Work, ms
from ..prelude import Train, prelude, std_batch
from ..torchrun import agent_sigterm, node_failure, srun_exit
from ..versions import Versions
from ..watchdog import async_nccl_error, dp_group


def ib_completion() -> tuple[Job, Meta]:
    v = Versions(
        torch="2.5.1",
        nccl="2.21.5",
        cuda="12.4",
        megatron="core_v0.11.0",
        slurm="23.11.10",
        python="3.10",
    )
    job = Job(
        name="ib-completion",
        jobid=61217,
        nnodes=4,
        gpus_per_node=4,
        versions=v,
        seed=505,
        start=datetime(2025, 9, 30, 3, 1, 7),
        layout="split",
        tee=False,
    )
    tr = Train(tp=2, ms_per_it=1530.0, nccl_debug="WARN")
    t_err = tr.time_after(job, iterations=731)
    prelude(
        job,
        tr,
        until=t_err,
        batch_lines=std_batch(job, ["srun --kill-on-bad-exit=1 --label ..."]),
    )
    r, peer = 6, 10
    work = Work(seq=5848, op="_REDUCE_SCATTER_BASE", numel_in=109051904, numel_out=13631488)
    wc = (
        f"NET/IB : Got completion from peer {job.ips[2]}<56412> with status=12 opcode=0 len=0 "
        f"vendor err 129 (Send) localGid ::ffff:{job.ips[1]} remoteGids::ffff:{job.ips[2]}"
    )
    nccl_warn(job, t_err, r, wc, file="transport/net_ib.cc", line=1696, tid=job.rpid(r) + 519)
    pg, gr = dp_group(job, r, tp=tr.tp)
    async_nccl_error(
        job,
        t_err + ms(412),
        r,
        work,
        text=nccl_remote_error_text(v, wc),
        pg=pg,
        group_rank=gr,
    )
    t_d1 = t_err + ms(1290)
    node_failure(job, t_d1, node=1, failures=[job.failure(r, exitcode=-6)], running=[0, 1, 3])
    # the peer on node 2 sees its QP flushed after rank 6's side tore down
    wc2 = (
        f"NET/IB : Got completion from peer {job.ips[1]}<50118> with status=5 opcode=128 "
        f"len=0 vendor err 249 (Recv) localGid ::ffff:{job.ips[2]} remoteGids::ffff:"
        f"{job.ips[1]}"
    )
    t_p = t_err + ms(1370)
    nccl_warn(job, t_p, peer, wc2, file="transport/net_ib.cc", line=1696, tid=job.rpid(peer) + 522)
    pg, gr = dp_group(job, peer, tp=tr.tp)
    async_nccl_error(
        job,
        t_p + ms(401),
        peer,
        work,
        text=nccl_remote_error_text(v, wc2),
        pg=pg,
        group_rank=gr,
    )
    srun_exit(job, t_d1 + ms(1050), node=1)
    t_d2 = t_p + ms(1300)
    node_failure(job, t_d2, node=2, failures=[job.failure(peer, exitcode=-6)], running=[0, 1, 3])
    t_kill = t_d1 + ms(1090)
    job.srun(t_kill, f"srun: Terminating StepId={job.jobid}.0")
    job.stepd(
        t_kill + ms(40),
        f"*** STEP {job.jobid}.0 ON {job.hosts[0]} CANCELLED AT "
        f"{t_kill + ms(40):%Y-%m-%dT%H:%M:%S} ***",
    )
    job.srun(
        t_kill + ms(60), "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."
    )
    for n in (0, 3):
        agent_sigterm(job, t_kill + ms(120 + 30 * n), node=n, local_ranks=range(4))
    meta = Meta(
        category="network",
        rank=6,
        node=job.hosts[1],
        cause="InfiniBand transport retry counter exceeded (status=12) on rank 6's link to "
        "gpu-node-003 during a data-parallel reduce-scatter; the peers failed because of it.",
        format_source=[
            "src/transport/net_ib.cc",
            "src/debug.cc",
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "torch/csrc/distributed/c10d/NCCLUtils.cpp",
            "torch/distributed/elastic/agent/server/api.py",
            "torch/distributed/elastic/multiprocessing/api.py",
            "src/slurmd/slurmstepd/req.c",
            "src/srun/launch.c",
        ],
        notes="NCCL 2.21 prints the WARN without a timestamp (`NET/IB : ` with a space, `status=12`, "
        "`remoteGids` without a space) after a blank line. Rank 6's watchdog reports it as an "
        "async ncclRemoteError whose `Last error:` repeats the WARN. Rank 10 on the far side then "
        "sees status=5 (IBV_WC_WR_FLUSH_ERR, a follow-on) and the same DistBackendError. "
        "`--kill-on-bad-exit=1` makes srun cancel the step, so nodes 0 and 3 end with "
        "`Received Signals.SIGTERM death signal` (torch 2.5 + Python 3.10) and SignalException. "
        "Rule: §5.2 (status 12 = RC on the reporting rank's link, status 5 = follow-on) and §8 "
        "(network error naming a peer beats the signal/cancel symptoms).",
        sections={
            f"ib-completion-{job.jobid}.out": [
                "4.2",
                "4.3",
                "4.4",
                "5.1 (<=2.25)",
                "5.2 (2.20-2.21)",
                "6.6",
            ],
            f"ib-completion-{job.jobid}.err": [
                "0.1",
                "0.2",
                "1.1",
                "1.5",
                "1.6",
                "1.9 (async)",
                "2.1",
                "2.2 (Python 3.10)",
                "2.3",
                "6.2",
                "6.4",
                "6.5",
                "6.6",
            ],
        },
    )
    return job, meta

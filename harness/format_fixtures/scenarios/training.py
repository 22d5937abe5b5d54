"""Failures inside training: a NaN loss (rerun state machine) and a DataLoader ValueError."""

from __future__ import annotations

from datetime import datetime

from ..loglines import frame, nccl_warn, traceback
from ..megatron import megatron_train_frames
from ..messages import nccl_remote_error_text
from ..model import Job, Meta, Work, ms
from ..prelude import Train, prelude, std_batch
from ..torchrun import agent_failed, child_failed, node_failure, srun_exit
from ..versions import MEGATRON_DIR, Versions
from ..watchdog import async_nccl_error, destruct_warning, dp_group, timeouts_for


def nan_rerun() -> tuple[Job, Meta]:
    v = Versions(
        torch="2.7.1", nccl="2.26.2", cuda="12.8", megatron="core_v0.14.0", slurm="24.11.1"
    )
    job = Job(
        name="nan-loss-rerun",
        jobid=77402,
        nnodes=4,
        gpus_per_node=4,
        versions=v,
        seed=1111,
        start=datetime(2026, 4, 22, 6, 30, 0),
        layout="combined",
    )
    tr = Train(
        tp=1,
        ms_per_it=1840.0,
        extra_args={"rerun_mode": "validate_results", "check_for_nan_in_loss_and_grad": True},
    )
    t_nan = tr.time_after(job, iterations=1499, plus_ms=900)
    prelude(job, tr, until=t_nan, batch_lines=std_batch(job))
    job.worker(tr.time_after(job, iterations=2), 0, "Result validation enabled")
    r = 12
    host = job.hosts[3]
    job.worker(
        t_nan,
        r,
        "Unexpected result tensor(nan, device='cuda:0') on rank 12 at "
        "iteration #1500 invocation #1 (message='found NaN in local forward loss "
        "calculation')",
    )
    t_re = t_nan + ms(tr.ms_per_it + 120)  # the rerun of the same iteration
    job.worker(
        t_re,
        r,
        f"Rank 12, node {host}, device 0, iteration #1500: First rerun: "
        "unexpected result is not reproducible within the tolerance "
        "(tensor(2.4187, device='cuda:0') != tensor(nan, device='cuda:0'))!",
    )
    job.worker(
        t_re + ms(1),
        r,
        f"Rank 12, node {host}, device 0, iteration #1500: Possible transient error!",
    )
    t_exit = t_re + ms(260)
    job.worker(t_exit, 0, "Exiting now. The job can be resumed from a previous checkpoint")
    for rr in range(job.world):
        destruct_warning(job, t_exit + ms(400 + 7 * rr), rr)
    for n in range(job.nnodes):
        t_d = t_exit + ms(1300 + 60 * n)
        fails = job.node_failures(n, exitcode=17)  # every rank exits 17
        agent_failed(job, t_d, fails[0], node=n)
        child_failed(job, t_d + ms(40), fails, node=n, detected=t_d)
        srun_exit(job, t_d + ms(1100), node=n)
    meta = Meta(
        category="nan_loss",
        rank=12,
        node=host,
        cause="NaN in the forward loss on rank 12 (gpu-node-004, GPU 0) at iteration 1500; the "
        "in-place rerun gave a finite loss (possible transient/SDC error) and Megatron exited "
        "with code 17.",
        format_source=[
            "megatron/core/rerun_state_machine.py",
            "pretrain_gpt.py",
            "megatron/training/training.py",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
        ],
        notes="core_v0.14 defaults to --rerun-mode validate_results: first detection `Unexpected result "
        "... on rank 12 at iteration #1500 invocation #1 (message='found NaN in local forward "
        "loss calculation')` (0.14+ wording, bare logger line: Megatron installs no handler). The "
        "validated value is the 0-dim CUDA loss tensor, so it renders as `tensor(nan, "
        "device='cuda:0')`. Every rank then exits 17 (EXIT_CODE_FAILED_ON_RESULT_VALIDATION), so "
        "every ChildFailedError shows exitcode 17 and names its lowest rank — the rank must come "
        "from the Megatron line. Rule: §4.5 (rerun state machine, exit 16/17 signature).",
        sections={
            f"slurm-{job.jobid}.out": [
                "4.5 (validate_results, 0.14+)",
                "4.4",
                "0.1",
                "2.1",
                "2.3",
                "2.7",
                "1.11 (destroy warning)",
                "6.4",
                "6.6",
            ]
        },
    )
    return job, meta


def dataloader_valueerror() -> tuple[Job, Meta]:
    v = Versions(
        torch="2.12.1", nccl="2.27.7", cuda="13.0", megatron="core_v0.15.0", slurm="25.05.3"
    )
    job = Job(
        name="dataloader-valueerror",
        jobid=91234,
        nnodes=4,
        gpus_per_node=4,
        versions=v,
        seed=1414,
        start=datetime(2026, 3, 11, 9, 3, 17),
        layout="split",
        tee=False,
    )
    tr = Train(tp=2, ms_per_it=1710.0, nccl_debug="WARN")
    t_err = tr.time_after(job, iterations=6020, plus_ms=700)
    prelude(
        job,
        tr,
        until=t_err,
        batch_lines=std_batch(job, ["srun ... || scancel $SLURM_JOB_ID"]),
    )
    r = 13
    md = MEGATRON_DIR
    sp = job.sp
    tb = megatron_train_frames(job)
    tb += frame(
        job,
        f"{md}/pretrain_gpt.py",
        line=301,
        func="forward_step",
        src="tokens, labels, loss_mask, attention_mask, position_ids = get_batch("
        "data_iterator, vp_stage)",
    )
    tb += frame(
        job,
        f"{md}/pretrain_gpt.py",
        line=168,
        func="get_batch",
        src="batch = get_batch_on_this_tp_rank(data_iterator)",
    )
    tb += frame(
        job,
        f"{md}/megatron/training/utils.py",
        line=512,
        func="get_batch_on_this_tp_rank",
        src="data = next(data_iterator)",
    )
    dl = f"{sp}/torch/utils/data/dataloader.py"
    tb += frame(job, dl, line=741, func="__next__", src="data = self._next_data()")
    tb += frame(
        job, dl, line=1548, func="_next_data", src="return self._process_data(data, worker_id)"
    )
    tb += frame(job, dl, line=1586, func="_process_data", src="data.reraise()")
    tb += frame(job, f"{sp}/torch/_utils.py", line=775, func="reraise", src="raise exception")
    tb += [
        "ValueError: Caught ValueError in DataLoader worker process 1.",
        "Original Traceback (most recent call last):",
    ]
    tb += frame(
        job,
        f"{sp}/torch/utils/data/_utils/worker.py",
        line=349,
        func="_worker_loop",
        src="data = fetcher.fetch(index)  # type: ignore[possibly-undefined]",
    )
    tb += [
        f'  File "{sp}/torch/utils/data/_utils/fetch.py", line 52, in fetch',
        "    data = [self.dataset[idx] for idx in possibly_batched_index]",
        "            ~~~~~~~~~~~~^^^^^",
    ]
    tb += frame(
        job,
        f"{md}/megatron/core/datasets/gpt_dataset.py",
        line=168,
        func="__getitem__",
        src="text, _ = self._query_document_sample_shuffle_index(idx)",
    )
    tb += frame(
        job,
        f"{md}/megatron/core/datasets/gpt_dataset.py",
        line=281,
        func="_query_document_sample_shuffle_index",
        src="self.dataset.get(",
    )
    tb += frame(
        job,
        f"{md}/megatron/core/datasets/indexed_dataset.py",
        line=735,
        func="get",
        src="sequence = self.bin_reader.read(",
    )
    tb += frame(
        job,
        f"{md}/megatron/core/datasets/indexed_dataset.py",
        line=381,
        func="read",
        src="return numpy.frombuffer(",
    )
    tb += ["ValueError: offset must be non-negative and no greater than buffer length (2147483647)"]
    traceback(job, t_err, r, tb)
    destruct_warning(job, t_err + ms(880), r)
    t_d3 = t_err + ms(1420)
    node_failure(job, t_d3, node=3, failures=[job.failure(r, exitcode=1)], running=[0, 2, 3])
    srun_exit(job, t_d3 + ms(1000), node=3)
    # rank 11 was sending to rank 13 when its process vanished: IB retry exceeded ~30 s later
    r11 = 11
    t_ib = t_err + ms(33_480)
    wc = (
        f"NET/IB: Got completion from peer {job.ips[3]}<49122> with status=12 opcode=0 len=0 "
        f"vendor err 129 (Send) localGid ::ffff:{job.ips[2]} remoteGids::ffff:{job.ips[3]} "
        "hca mlx5_3"
    )
    nccl_warn(job, t_ib, r11, wc, file="transport/net_ib.cc", line=1705, tid=job.rpid(r11) + 611)
    work = Work(seq=18069, op="_REDUCE_SCATTER_BASE", numel_in=125829120, numel_out=15728640)
    pg, gr = dp_group(job, r11, tp=tr.tp)
    async_nccl_error(
        job,
        t_ib + ms(380),
        r11,
        work,
        text=nccl_remote_error_text(v, wc),
        pg=pg,
        group_rank=gr,
    )
    t_d2 = t_ib + ms(1250)
    node_failure(job, t_d2, node=2, failures=[job.failure(r11, exitcode=-6)], running=[0, 1, 2])
    srun_exit(job, t_d2 + ms(1000), node=2)
    t_to = t_err + ms(599_800)
    timeouts_for(job, list(range(8)), t_to, work, tp=tr.tp)  # nodes 0-1, in the same collective
    for n in (0, 1):
        t_d = t_to + ms(1050 + 70 * n)
        node_failure(job, t_d, node=n, failures=job.node_failures(n, exitcode=-6), running=[])
        srun_exit(job, t_d + ms(1900), node=n)
    t_c = t_to + ms(3600)
    job.stepd(
        t_c,
        f"*** JOB {job.jobid} ON {job.hosts[0]} CANCELLED AT "
        f"{t_c:%Y-%m-%dT%H:%M:%S} DUE to SIGNAL Terminated ***",
    )
    meta = Meta(
        category="python_exception",
        rank=13,
        node=job.hosts[3],
        cause="ValueError in a DataLoader worker of rank 13 (gpu-node-004, local rank 1) while "
        "reading a sample from the indexed dataset (offset beyond the .bin buffer).",
        format_source=[
            "torch/distributed/distributed_c10d.py",
            "torch/utils/data/dataloader.py",
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "src/transport/net_ib.cc",
            "src/debug.cc",
            "src/common/log.c",
            "src/slurmd/slurmstepd/req.c",
            "src/srun/launch.c",
        ],
        notes="Newest formats: ChildFailedError 2.12+ exitcode line (`(pid: N)  (SIGABRT)` with two "
        "spaces; a trailing space after `(pid: N)` for exit code 1), `/pytorch` build path, "
        "NCCL 2.27 WARN with `[YYYY-MM-DD HH:MM:SS] ` and `NET/IB:` without a space, Slurm 25.05 "
        "`[ISO-ms] error:` prefix and `DUE to SIGNAL Terminated` (from the batch script's "
        "`|| scancel`). The IB status=12 on rank 11 33 s later and the 10-minute timeouts on "
        "nodes 0-1 are consequences of rank 13's process exiting. Rule: categories.md ('NCCL "
        "timeouts after one rank's exception are python_exception'), §8 (per-rank software "
        "error beats network and timeouts; earliest wins).",
        sections={
            f"dataloader-valueerror-{job.jobid}.err": [
                "0.1 (2.4+)",
                "0.2 (2.5+)",
                "0.3",
                "1.1",
                "1.3",
                "1.4",
                "1.5",
                "1.6",
                "1.9 (async)",
                "2.1",
                "2.3 (2.12+)",
                "6.1 (25.05)",
                "6.2 (25.05 DUE to SIGNAL)",
                "6.4",
                "6.6",
            ],
            f"dataloader-valueerror-{job.jobid}.out": [
                "4.2",
                "4.4",
                "5.1 (2.26+ WARN timestamp)",
                "5.2 (2.24-2.28.3)",
                "6.6",
            ],
        },
    )
    return job, meta

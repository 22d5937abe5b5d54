"""Memory: a CUDA OOM cascade (torch 2.6 and torch 1.13 formats) and a host OOM kill."""

from __future__ import annotations

from datetime import datetime

from ..loglines import frame, traceback
from ..megatron import megatron_train_frames, module_frames
from ..messages import oom_text
from ..model import Job, Meta, ProcessGroup, Work, ms
from ..prelude import Train, prelude, std_batch
from ..torchrun import node_failure, srun_exit
from ..versions import MEGATRON_DIR, Versions
from ..watchdog import destruct_warning, timeouts_for, watchdog_timeout


def cuda_oom_cascade() -> tuple[Job, Meta]:
    v = Versions(
        torch="2.6.0", nccl="2.21.5", cuda="12.4", megatron="core_v0.12.0", slurm="23.02.7"
    )
    job = Job(
        name="cuda-oom-cascade",
        jobid=48213,
        nnodes=2,
        gpus_per_node=4,
        versions=v,
        seed=101,
        start=datetime(2025, 12, 2, 15, 34, 51),
        layout="combined",
    )
    tr = Train(tp=2, ms_per_it=8123.4, nccl_debug="INFO", env_warn=True, tflops=412.6)
    t_oom = tr.time_after(job, iterations=57, plus_ms=2100)
    prelude(job, tr, until=t_oom, batch_lines=std_batch(job))
    # rank 5 (node 1, local rank 1): OOM in the loss computation, 2.4+ template, [rank5]: prefix
    r = 5
    md = MEGATRON_DIR
    tb = megatron_train_frames(job)
    tb += frame(
        job,
        f"{md}/pretrain_gpt.py",
        line=279,
        func="forward_step",
        src="output_tensor = model(tokens, position_ids, attention_mask, labels=labels, "
        "loss_mask=loss_mask)",
    )
    tb += module_frames(job)
    tb += frame(
        job,
        f"{md}/megatron/core/models/gpt/gpt_model.py",
        line=358,
        func="forward",
        src="loss = self.compute_language_model_loss(labels, logits)",
    )
    tb += frame(
        job,
        f"{md}/megatron/core/models/common/language_module/language_module.py",
        line=93,
        func="compute_language_model_loss",
        src="loss = tensor_parallel.vocab_parallel_cross_entropy(logits, labels)",
    )
    tb += frame(
        job,
        f"{md}/megatron/core/tensor_parallel/cross_entropy.py",
        line=232,
        func="vocab_parallel_cross_entropy",
        src="return _VocabParallelCrossEntropy.apply(vocab_parallel_logits, target, label_smoothing)",
    )
    tb += frame(
        job,
        f"{job.sp}/torch/autograd/function.py",
        line=575,
        func="apply",
        src="return super().apply(*args, **kwargs)  # type: ignore[misc]",
    )
    tb += frame(
        job,
        f"{md}/megatron/core/tensor_parallel/cross_entropy.py",
        line=139,
        func="forward",
        src="vocab_parallel_logits, logits_max = VocabParallelCrossEntropy.calculate_logits_max(",
    )
    tb += frame(
        job,
        f"{md}/megatron/core/tensor_parallel/cross_entropy.py",
        line=27,
        func="calculate_logits_max",
        src="vocab_parallel_logits = vocab_parallel_logits.float()",
    )
    tb.append(
        "torch.OutOfMemoryError: "
        + oom_text(
            v,
            tried="7.82 GiB",
            gpu=1,
            capacity="79.10 GiB",
            free="3.21 GiB",
            in_use="75.87 GiB",
            allocated="68.49 GiB",
            unallocated="5.96 GiB",
        )
    )
    traceback(job, t_oom, r, tb)
    destruct_warning(job, t_oom + ms(910), r)
    # node 1 agent: rank 5 exited 1, SIGTERM to the siblings
    t_det1 = t_oom + ms(1530)
    node_failure(job, t_det1, node=1, failures=[job.failure(5, exitcode=1)], running=[0, 2, 3])
    srun_exit(job, t_det1 + ms(1100), node=1)
    # node 0: ranks 0-3 wait in the DP reduce-scatter with the dead node's ranks
    t_to = t_oom + ms(599_480)
    timeouts_for(
        job,
        [2, 0, 3, 1],
        t_to,
        Work(seq=1147, op="_REDUCE_SCATTER_BASE", numel_in=218103808, numel_out=54525952),
        tp=tr.tp,
    )
    t_det0 = t_to + ms(1210)
    fails = [job.failure(r, exitcode=-6) for r in (0, 2, 3)]
    node_failure(job, t_det0, node=0, failures=fails, running=[1])
    srun_exit(job, t_det0 + ms(1900), node=0)
    meta = Meta(
        category="cuda_oom",
        rank=5,
        node=job.hosts[1],
        cause="Rank 5 (gpu-node-002, local rank 1) ran out of GPU memory (tried to allocate 7.82 GiB "
        "in the fp32 cast of the vocab-parallel logits); everything after is a consequence.",
        format_source=[
            "c10/cuda/CUDACachingAllocator.cpp",
            "torch/distributed/distributed_c10d.py",
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "c10/util/Logging.cpp",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "torch/_logging/_internal.py",
            "torch/distributed/run.py",
            "megatron/training/training.py",
            "src/debug.cc",
            "src/srun/launch.c",
            "src/common/write_labelled_message.c",
        ],
        notes="The OOM traceback (2.4+ template, every line prefixed `[rank5]: ` by the 2.4+ "
        "excepthook) is the earliest non-collective error. Node 1's torchrun SIGTERMs ranks 4, 6, "
        "7 within ~1.5 s, so only node 0's ranks 0-3 reach the 10-minute watchdog timeout on "
        "their data-parallel group (group ranks in `[Rank N]`, global ranks in `[rankN]:`). "
        "Node 0's ChildFailedError names rank 0 (SIGABRT) as its root cause, a symptom. Rule: "
        "§8 precedence + §1.12 RC rule (1): an earlier non-NCCL error beats every timeout.",
        sections={
            f"slurm-{job.jobid}.out": [
                "0.1 (2.4+ C++ prefix, unpadded MMDD)",
                "0.2 (2.5+ pid)",
                "0.3",
                "1.1 (2.5+ PG prefix)",
                "1.2",
                "1.3",
                "1.4 (2.6)",
                "1.5",
                "1.6",
                "1.11",
                "2.1",
                "2.3 (<=2.11)",
                "2.6",
                "2.7",
                "3.1 (2.4-2.9)",
                "4.2",
                "4.3",
                "4.4 (0.6-0.15)",
                "5.1",
                "6.4",
                "6.6",
            ]
        },
    )
    return job, meta


def host_oom() -> tuple[Job, Meta]:
    v = Versions(
        torch="2.5.1", nccl="2.21.5", cuda="12.4", megatron="core_v0.12.0", slurm="23.02.7"
    )
    job = Job(
        name="host-oom",
        jobid=70013,
        nnodes=2,
        gpus_per_node=4,
        versions=v,
        seed=1212,
        start=datetime(2025, 5, 28, 19, 44, 18),
        layout="logdir",
        tee=False,
    )
    tr = Train(tp=1, ms_per_it=2950.0, env_warn=True, extra_args={"num_workers": 16})
    t_k = tr.time_after(job, iterations=911)
    prelude(
        job,
        tr,
        until=t_k,
        batch_lines=std_batch(job),
    )
    r = 6
    t_d1 = t_k + ms(310)
    node_failure(job, t_d1, node=1, failures=[job.failure(r, exitcode=-9)], running=[0, 1, 3])
    t_end1 = t_d1 + ms(1900)
    job.stepd(
        t_end1,
        f"Detected 1 oom_kill event in StepId={job.jobid}.0. Some of the step tasks "
        "have been OOM Killed.",
    )
    srun_exit(job, t_end1 + ms(30), node=1, what="Out Of Memory")
    t_to = t_k + ms(599_600)
    timeouts_for(
        job,
        [0, 1, 2, 3],
        t_to,
        Work(seq=7289, op="_REDUCE_SCATTER_BASE", numel_in=67108864, numel_out=8388608),
    )
    t_d0 = t_to + ms(980)
    node_failure(job, t_d0, node=0, failures=job.node_failures(0, exitcode=-6), running=[])
    srun_exit(job, t_d0 + ms(2000), node=0)
    meta = Meta(
        category="host_oom",
        rank=6,
        node=job.hosts[1],
        cause="The kernel's cgroup OOM killer SIGKILLed rank 6 (gpu-node-002, local rank 2): host "
        "memory, not GPU memory (16 data-loader workers per rank).",
        format_source=[
            "src/plugins/task/cgroup/task_cgroup_memory.c",
            "src/srun/launch.c",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
        ],
        notes="Rank 6's own log just stops; the evidence is torchrun `failed (exitcode: -9) local_rank: "
        "2`, the ChildFailedError `Signal 9 (SIGKILL)`, slurmstepd's 23.02+ wording `Detected 1 "
        "oom_kill event in StepId=70013.0. Some of the step tasks have been OOM Killed.` and "
        "`srun: error: gpu-node-002: task 1: Out Of Memory`. Node 0 times out 10 minutes later. "
        "Rule: §3.2 host OOM, §6.3, §8 (oom_kill is a scheduler-class RC, beats timeouts).",
        sections={
            f"host-oom-{job.jobid}.out": ["6.3 (23.02+)", "6.4", "2.1", "2.3 (<=2.11)", "0.2"],
            "torchrun-logs/*/*/attempt_0/<local_rank>/stderr.log": [
                "0.1",
                "1.1",
                "1.3",
                "1.4 (2.4-2.5)",
                "1.5",
                "1.6",
            ],
            "torchrun-logs/*/*/attempt_0/<local_rank>/stdout.log": ["4.2", "4.3", "4.4"],
        },
    )
    return job, meta


def old_torch() -> tuple[Job, Meta]:
    v = Versions(
        torch="1.13.1", nccl="2.14.3", cuda="11.7", megatron="23.04", slurm="22.05.9", python="3.10"
    )
    job = Job(
        name="old-torch",
        jobid=18842,
        nnodes=2,
        gpus_per_node=4,
        versions=v,
        seed=1313,
        start=datetime(2023, 5, 9, 10, 0, 4),
        layout="combined",
    )
    tr = Train(tp=1, ms_per_it=1290.0, gbs=256)
    t_oom = tr.time_after(job, iterations=2986, plus_ms=500)
    prelude(
        job,
        tr,
        until=t_oom,
        batch_lines=std_batch(job, ["NCCL_ASYNC_ERROR_HANDLING=1"]),
    )
    r = 2
    md = MEGATRON_DIR
    tb = megatron_train_frames(job)
    tb += frame(
        job,
        f"{md}/pretrain_gpt.py",
        line=93,
        func="forward_step",
        src="output_tensor = model(tokens, position_ids, attention_mask,",
    )
    tb += frame(
        job,
        f"{job.sp}/torch/nn/modules/module.py",
        line=1194,
        func="_call_impl",
        src="return forward_call(*input, **kwargs)",
    )
    tb += frame(
        job,
        f"{md}/megatron/model/transformer.py",
        line=1268,
        func="forward",
        src="hidden_states = layer(",
    )
    tb += frame(
        job,
        f"{job.sp}/torch/nn/modules/module.py",
        line=1194,
        func="_call_impl",
        src="return forward_call(*input, **kwargs)",
    )
    tb += frame(
        job,
        f"{md}/megatron/model/transformer.py",
        line=793,
        func="forward",
        src="mlp_output, mlp_bias = self.mlp(layernorm_output)",
    )
    tb += frame(
        job,
        f"{job.sp}/torch/nn/modules/module.py",
        line=1194,
        func="_call_impl",
        src="return forward_call(*input, **kwargs)",
    )
    tb += frame(
        job,
        f"{md}/megatron/model/transformer.py",
        line=108,
        func="forward",
        src="intermediate_parallel = self.activation_func(intermediate_parallel)",
    )
    tb.append(
        "torch.cuda.OutOfMemoryError: "
        + oom_text(
            v,
            tried="448.00 MiB",
            gpu=2,
            capacity="79.15 GiB",
            free="301.25 MiB",
            allocated="76.52 GiB",
            reserved="77.93 GiB",
        )
    )
    traceback(job, t_oom, r, tb)
    t_d0 = t_oom + ms(4900)
    node_failure(job, t_d0, node=0, failures=[job.failure(r, exitcode=1)], running=[0, 1, 3])
    srun_exit(job, t_d0 + ms(1200), node=0)
    t_to = t_oom + ms(599_300)
    for i, rr in enumerate([4, 5, 6, 7]):
        watchdog_timeout(
            job,
            t_to + ms(41 * i),
            rr,
            Work(seq=2987, op="ALLREDUCE", numel_in=0, numel_out=0),
            overrun_ms=431 + 41 * i,
            pg=ProcessGroup(local_id=1, guid=1, desc=""),
            group_rank=rr,
        )
    t_d1 = t_to + ms(5300)
    node_failure(
        job,
        t_d1,
        node=1,
        failures=job.node_failures(1, exitcode=-6),
        running=[],
    )
    srun_exit(job, t_d1 + ms(1300), node=1)
    meta = Meta(
        category="cuda_oom",
        rank=2,
        node=job.hosts[0],
        cause="Rank 2 (gpu-node-001, local rank 2) ran out of GPU memory in the MLP activation; "
        "node 1's ranks then hit the NCCL watchdog timeout on the gradient all-reduce.",
        format_source=[
            "c10/cuda/CUDACachingAllocator.cpp",
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "c10/util/Logging.cpp",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "torch/distributed/elastic/multiprocessing/tail_log.py",
            "megatron/training.py",
            "src/plugins/launch/slurm/launch_slurm.c",
        ],
        notes="torch 1.13 formats throughout: C++ prefix `[E ProcessGroupNCCL.cpp:NNN] ` with no date "
        "and no `[rankN]:`; WorkNCCL without Numel fields; handleException lines without a "
        "`[Rank N] ` prefix; `terminate called after throwing an instance of "
        "'std::runtime_error'`; the parenthesised 1.13-2.0 OOM template raised as "
        "torch.cuda.OutOfMemoryError; unprefixed tracebacks; BASIC_FORMAT torchrun lines "
        "(`WARNING:torch.distributed.run:` etc.). Rank attribution only from srun `--label` and "
        "torchrun `[defaultN]:`. NCCL_ASYNC_ERROR_HANDLING=1 is set in the batch script (1.13 "
        "only tears down with it). Rule: §8 + §1.12 RC rule (1).",
        sections={
            f"slurm-{job.jobid}.out": [
                "0.1 (<=2.1)",
                "0.2 (1.13-2.0 BASIC_FORMAT)",
                "0.3 (<2.4)",
                "1.2 (1.13-2.0)",
                "1.3 (old)",
                "1.5 (<=2.2)",
                "1.6",
                "2.1",
                "2.3",
                "2.6",
                "2.7",
                "3.1 (1.13-2.0)",
                "4.2 (23.04)",
                "4.3",
                "4.4 (23.04, no timestamp)",
                "6.4",
                "6.6",
            ]
        },
    )
    return job, meta

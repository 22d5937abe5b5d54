# ruff: noqa: E501  (real log lines are quoted whole)
"""Issue 40, parts 3 and 4: causes by the kind of failure, not the surface of the line.

Each test runs the analyzer on a job built only from real log lines, copied verbatim from the
public source its docstring names (a few lines of each; ``***`` and ``<cluster_name>`` are the
posters' own redactions), and asserts the category and the status. Each failed before the
change it covers.
"""

from __future__ import annotations

from pathlib import Path

from analyzer.api import analyze
from analyzer.catalog.model import Catalog
from tests.helpers import MakeJob


def _verdict(job: Path, catalog: Catalog) -> tuple[str, str]:
    d = analyze([job], catalog=catalog, workers=1).diagnosis
    return d.verdict.category, d.status


# --- 1. An exception wrapper takes the category of the exception it names ----------------

# https://github.com/ganler/code-r1 README.md ("Memory Issues During Training"): verl on Ray;
# the paste is cut before the worker's own `torch.OutOfMemoryError` line.
CODE_R1_RAY_OOM = """\
Traceback (most recent call last):
  File "/home/***/github/code-r1/verl/trainer/main_ppo.py", line 25, in main
    run_ppo(config)
  File "/home/***/github/code-r1/verl/trainer/main_ppo.py", line 33, in run_ppo
    ray.get(main_task.remote(config, compute_score))
  File "/opt/conda/envs/code/lib/python3.10/site-packages/ray/_private/worker.py", line 906, in get_objects
    raise value.as_instanceof_cause()
ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() (pid=399789, ip=10.128.0.9)
  File "/home/***/github/code-r1/verl/trainer/main_ppo.py", line 128, in main_task
    trainer.fit()
  File "/home/***/github/code-r1/verl/single_controller/ray/base.py", line 42, in func
    output = ray.get(output)
ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_update_actor() (pid=400862, ip=10.128.0.9, actor_id=87523c02ec964b128fbc710001000000, repr=<verl.single_controller.ray.base.WorkerDict object at 0x7edde69d7850>)
  File "/home/***/github/code-r1/verl/workers/actor/dp_actor.py", line 313, in update_policy
    loss.backward()
  File "/opt/conda/envs/code/lib/python3.10/site-packages/torch/_tensor.py", line 521, in backward
    torch.autograd.backward(
"""

# https://github.com/real-stanford/flingbot/issues/11: Ray's own memory-monitor kill, the end of
# the driver's traceback. Put under code-r1's wrapper header (a composition of two real pastes,
# the shape Ray prints when a nested task's worker is killed), its message line decides.
FLINGBOT_RAY_HOST_OOM = """\
  File "/home/zcs/miniconda3/envs/flingbot/lib/python3.6/site-packages/ray/_private/worker.py", line 2523, in get
    raise value
ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.
"""


def test_ray_task_error_naming_torch_oom_is_cuda_oom(make_job: MakeJob, catalog: Catalog) -> None:
    job = make_job({"slurm-1.out": CODE_R1_RAY_OOM})
    assert _verdict(job, catalog) == ("cuda_oom", "failed")


def test_wrapped_exception_own_line_decides(make_job: MakeJob, catalog: Catalog) -> None:
    """The wrapper names OutOfMemoryError, but the wrapped exception's own line says Ray's
    memory monitor killed the task: host memory, not the GPU."""
    header = "".join(CODE_R1_RAY_OOM.splitlines(keepends=True)[:8])
    job = make_job({"slurm-1.out": header + FLINGBOT_RAY_HOST_OOM})
    assert _verdict(job, catalog) == ("host_oom", "failed")


# --- 2. A traceback fragment in a failed log is a failure, never `none` -----------------

# https://github.com/RootedTime/EasyR1/issues/9 (EasyR1, a copy of its issue 9): the driver logs
# an actor's error behind its `(Runner pid=N)` prefix; the paste stops inside the traceback.
EASYR1_RAY_FRAGMENT = """\
(Runner pid=104449) current_batch_size=128 >= rollout_batch_size=128. Finish generating.
(WorkerDict pid=118271) Before vllm offload in sharding manager: 58.32 GB / 79.19 GB.
(WorkerDict pid=118271) After vllm offload in sharding manager: 13.54 GB / 79.19 GB.
(Runner pid=104449) Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::WorkerDict.actor_rollout_ref_update_actor() (pid=118847, ip=10.130.71.7, actor_id=ee9c9085442695cbd58f2c1f01000000, repr=<verl.single_controller.ray.base.WorkerDict object at 0x7419a03337c0>)
(Runner pid=104449)   File "/workspaces/EasyR1/verl/single_controller/ray/base.py", line 432, in func
(Runner pid=104449)     return getattr(self.worker_dict[key], name)(*args, **kwargs)
(Runner pid=104449)   File "/workspaces/EasyR1/verl/single_controller/base/decorator.py", line 207, in inner
(Runner pid=104449)     return func(*args, **kwargs)
(Runner pid=104449)   File "/workspaces/EasyR1/verl/workers/fsdp_workers.py", line 504, in update_actor
(Runner pid=104449)     metrics = self.actor.update_policy(data=data)
"""


def test_ray_unhandled_error_fragment_is_a_failure(make_job: MakeJob, catalog: Catalog) -> None:
    job = make_job({"slurm-1.out": EASYR1_RAY_FRAGMENT})
    assert _verdict(job, catalog) == ("python_exception", "failed")


# --- 3. A missing file: the path says whether it is data (storage) or a checkpoint ---------


def test_missing_dataset_file_is_storage(make_job: MakeJob, catalog: Catalog) -> None:
    """https://github.com/shibing624/CodeAssist/issues/3: HF datasets' wording for a data file
    that is not there (before: a generic exception)."""
    line = "FileNotFoundError: Unable to find 'D:\\work\\workspace\\gpt\\webui\\data/code_alpaca_20k_50.jsonl' at D:\\work\\workspace\\gpt\\webui\n"
    job = make_job({"slurm-1.out": line})
    assert _verdict(job, catalog) == ("storage", "failed")


def test_missing_checkpoint_file_is_checkpoint(make_job: MakeJob, catalog: Catalog) -> None:
    """https://github.com/hiyouga/LlamaFactory/issues/1860 (HF Trainer's checkpoint-N) and
    https://github.com/Ram81/goat-bench/issues/27 (a weights file under a checkpoints
    directory): a checkpoint's path (before: storage)."""
    for i, line in enumerate(
        (
            "FileNotFoundError: [Errno 2] No such file or directory: 'saves/Yi-34B/lora/RL_Med_Yi-34B-200K_20231211142535/tmp-checkpoint-1000/trainer_state.json'\n",
            "FileNotFoundError: [Errno 2] No such file or directory: 'data/new_checkpoints/.habitat-resume-stateeval.pth'\n",
        )
    ):
        job = make_job({"slurm-1.out": line}, name=f"job{i}")
        assert _verdict(job, catalog) == ("checkpoint", "failed"), line


# --- 4. A plugin that failed to initialise, after which NCCL fell back: not a cause -------

# https://github.com/aws/aws-ofi-nccl/issues/715: the plugin failed and NCCL used sockets.
AWS_OFI_FALLBACK = """\
algo-1:17774:17853 [1] nccl_net_ofi_create_plugin:259 NCCL WARN NET/OFI aws-ofi-nccl initialization failed
algo-1:17780:17851 [7] NCCL INFO NET/Socket : Using [0]eth0:10.0.227.37<0>
algo-1:17774:17853 [1] NCCL INFO NCCL_IB_DISABLE set by environment to 1.
algo-1:17780:17851 [7] NCCL INFO Using non-device net plugin version 0
algo-1:17780:17851 [7] NCCL INFO Using network Socket
"""


def test_plugin_init_failure_with_fallback_is_not_a_failure(
    make_job: MakeJob, catalog: Catalog
) -> None:
    job = make_job({"slurm-1.out": AWS_OFI_FALLBACK})
    assert _verdict(job, catalog) == ("none", "ok")


# --- 5. Older logs: connect failures between hosts, crashed DataLoader workers -------------


def test_gloo_connect_refused_is_network(make_job: MakeJob, catalog: Catalog) -> None:
    """https://github.com/pytorch/examples/issues/812 and
    https://github.com/Megvii-BaseDetection/YOLOX/issues/1167 (before: a collective timeout)."""
    for i, line in enumerate(
        (
            "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:769] connect [127.0.1.1]:25472: Connection refused\n",
            "RuntimeError: [/opt/conda/conda-bld/pytorch_1607370120218/work/third_party/gloo/gloo/transport/tcp/pair.cc:769] connect [127.0.1.1]:3496: Connection refused\n",
        )
    ):
        job = make_job({"slurm-1.out": line}, name=f"job{i}")
        assert _verdict(job, catalog) == ("network", "failed"), line


def test_old_nccl_socket_connect_failure_is_network(make_job: MakeJob, catalog: Catalog) -> None:
    """NCCL 2.0 (https://github.com/NVIDIA/nccl/issues/111): `include/socket.h` names no
    function (before: `none`, a failed log with no cause)."""
    log = (
        "*server name* [0] include/socket.h:185 WARN Call to connect failed : Connection refused\n"
        "NCCL failure *MyProgram*.cu:110 'unhandled system error'\n"
    )
    job = make_job({"slurm-1.out": log})
    assert _verdict(job, catalog) == ("network", "failed")


def test_dataloader_worker_segfault_is_native_crash(make_job: MakeJob, catalog: Catalog) -> None:
    """https://github.com/STVIR/pysot/issues/140: the RuntimeError reports a worker's SIGSEGV
    (before: a generic exception)."""
    log = """\
  File "/home/public/anaconda3/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 227, in handler
    _error_if_any_worker_fails()
RuntimeError: DataLoader worker (pid 1657) is killed by signal: Segmentation fault. Details are lost due to multiprocessing. Rerunning with num_workers=0 may give better error trace.
"""
    job = make_job({"slurm-1.out": log})
    assert _verdict(job, catalog) == ("native_crash", "failed")

"""Megatron-LM's own output (reference §4): start-up lines, the training log, traceback frames."""

from __future__ import annotations

from datetime import datetime

from .loglines import frame
from .model import Job
from .versions import CKPT_DIR, DATA_PREFIX, MEGATRON_DIR


def world_size_line(job: Job, *, tp: int, pp: int, cp: int = 1) -> str:
    """`using world size: ...` (reference §4.2), worded per Megatron release."""
    ws = job.world
    dp = ws // (tp * pp * cp)
    m = job.v.m
    if m <= (0, 3):
        return (
            f"using world size: {ws}, data-parallel-size: {dp}, tensor-model-parallel size: "
            f"{tp}, pipeline-model-parallel size: {pp} "
        )
    if m <= (0, 8):
        return (
            f"using world size: {ws}, data-parallel size: {dp}, context-parallel size: {cp} "
            f"tensor-model-parallel size: {tp}, pipeline-model-parallel size: {pp} "
        )
    if m <= (0, 12):
        return (
            f"using world size: {ws}, data-parallel size: {dp}, context-parallel size: {cp}, "
            f"hierarchical context-parallel sizes: Nonetensor-model-parallel size: {tp}, "
            f"pipeline-model-parallel size: {pp}"
        )
    return (
        f"using world size: {ws}, data-parallel size: {dp}, context-parallel size: {cp}, "
        f"hierarchical context-parallel sizes: None, tensor-model-parallel size: {tp}, "
        f"pipeline-model-parallel size: {pp}"
    )


def args_block(job: Job, *, tp: int, pp: int, extra: dict[str, object]) -> str:
    """The `arguments` block; ``extra`` overrides or adds arguments."""
    ws = job.world
    args: dict[str, object] = {
        "accumulate_allreduce_grads_in_fp32": True,
        "adam_beta1": 0.9,
        "adam_beta2": 0.95,
        "bf16": True,
        "clip_grad": 1.0,
        "context_parallel_size": 1,
        "data_parallel_size": ws // (tp * pp),
        "data_path": [DATA_PREFIX],
        "distributed_backend": "nccl",
        "distributed_timeout_minutes": 10,
        "eval_interval": 1000,
        "eval_iters": 10,
        "ffn_hidden_size": 14336,
        "fp16": False,
        "global_batch_size": 256,
        "hidden_size": 4096,
        "load": CKPT_DIR,
        "log_interval": 10,
        "lr": 0.0003,
        "lr_decay_style": "cosine",
        "lr_warmup_iters": 2000,
        "micro_batch_size": 1,
        "min_lr": 3e-05,
        "num_attention_heads": 32,
        "num_layers": 32,
        "params_dtype": "torch.bfloat16",
        "pipeline_model_parallel_size": pp,
        "rank": 0,
        "save": CKPT_DIR,
        "save_interval": 500,
        "seed": 1234,
        "seq_length": 4096,
        "sequence_parallel": tp > 1,
        "tensor_model_parallel_size": tp,
        "tokenizer_type": "GPT2BPETokenizer",
        "train_iters": 500000,
        "use_distributed_optimizer": True,
        "weight_decay": 0.1,
        "world_size": ws,
    }
    args.update(extra)
    lines = ["-" * 24 + " arguments " + "-" * 24]
    for k in sorted(args, key=str.lower):
        lines.append("  {} {} {}".format(k, "." * (48 - len(k)), args[k]))
    lines.append("-" * 20 + " end of arguments " + "-" * 21)
    return "\n".join(lines)


def print_datetime(job: Job, t: datetime, label: str) -> str:
    """Megatron's `[label] datetime: ...` line (fractional seconds from core_v0.16)."""
    frac = f".{t.microsecond:06d}" if job.v.m >= (0, 16) else ""
    return f"[{label}] datetime: {t:%Y-%m-%d %H:%M:%S}{frac} "


def iteration_line(
    job: Job,
    t: datetime,
    *,
    it: int,
    gbs: int,
    ms_per_it: float,
    lr: float,
    loss: float | None,
    grad_norm: float,
    tflops: float | None = None,
) -> str:
    """One `iteration N/ 500000 | ...` training-log line (reference §4.4)."""
    m = job.v.m
    head = "" if m < (0, 6) else f" [{t:%Y-%m-%d %H:%M:%S}]"
    if m >= (0, 16):
        head = f" [{t:%Y-%m-%d %H:%M:%S.%f}]"
    s = f"{head} iteration {it:8d}/  500000 | consumed samples: {it * gbs:12d} | "
    s += f"elapsed time per iteration (ms): {ms_per_it:.1f} | "
    if tflops is not None and m >= (0, 5):
        s += f"throughput per GPU (TFLOP/s/GPU): {tflops:.1f} | "
    s += f"learning rate: {lr:.3E} | " if m < (0, 6) else f"learning rate: {lr:.6E} | "
    s += f"global batch size: {gbs:5d} | "
    if loss is not None:
        s += f"lm loss: {loss:.6E} | "
    s += f"loss scale: 1.0 | grad norm: {grad_norm:.3f} | "
    s += "number of skipped iterations:   0 | number of nan iterations:   0 |"
    return s


def megatron_train_frames(job: Job) -> list[str]:
    """pretrain_gpt.py down to the forward step (Python 3.11+ carets come from frame())."""
    md = MEGATRON_DIR
    new = job.v.m >= (0, 10)
    if job.v.m >= (0, 6):
        tr = f"{md}/megatron/training/training.py"
    else:
        tr = f"{md}/megatron/training.py"
    sched = f"{md}/megatron/core/pipeline_parallel/schedules.py"
    out = ["Traceback (most recent call last):"]
    out += frame(
        job, f"{md}/pretrain_gpt.py", line=349 if new else 243, func="<module>", src="pretrain("
    )
    out += frame(
        job,
        tr,
        line=878 if new else 261,
        func="pretrain",
        src="iteration, num_floating_point_operations_so_far = train(",
    )
    out += frame(job, tr, line=2101 if new else 1045, func="train", src=") = train_step(")
    out += frame(
        job,
        tr,
        line=1241 if new else 571,
        func="train_step",
        src="losses_reduced = forward_backward_func(",
    )
    out += frame(
        job,
        sched,
        line=500,
        func="forward_backward_no_pipelining",
        src="output_tensor, num_tokens = forward_step(",
    )
    out += frame(
        job,
        sched,
        line=289,
        func="forward_step",
        src="output_tensor, loss_func = forward_step_func(data_iterator, model)",
    )
    return out


def module_frames(job: Job) -> list[str]:
    """torch.nn.Module.__call__ (2.x) between two model frames."""
    mod = f"{job.sp}/torch/nn/modules/module.py"
    out = frame(
        job,
        mod,
        line=1751,
        func="_wrapped_call_impl",
        src="return self._call_impl(*args, **kwargs)",
    )
    out += frame(job, mod, line=1762, func="_call_impl", src="return forward_call(*args, **kwargs)")
    return out


def init_frames(job: Job) -> list[str]:
    """pretrain_gpt.py down to validate_args (start-up argument checks)."""
    md = MEGATRON_DIR
    new = job.v.m >= (0, 10)
    if job.v.m >= (0, 6):
        tr = f"{md}/megatron/training/training.py"
    else:
        tr = f"{md}/megatron/training.py"
    ini = f"{md}/megatron/training/initialize.py"
    out = ["Traceback (most recent call last):"]
    out += frame(
        job, f"{md}/pretrain_gpt.py", line=349 if new else 243, func="<module>", src="pretrain("
    )
    out += frame(job, tr, line=647 if new else 223, func="pretrain", src="initialize_megatron(")
    return out + frame(
        job,
        ini,
        line=86 if new else 77,
        func="initialize_megatron",
        src="validate_args(args, args_defaults)",
    )

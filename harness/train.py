"""A tiny CPU "pretraining" program that logs like Megatron-LM and fails on demand.

Launched by ``python -m torch.distributed.run`` (it reads RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT from torchrun). Uses the gloo backend, a tiny language model wrapped
in ``DistributedDataParallel`` and random tokens. Start-up and iteration lines follow the
shapes Megatron-LM prints (``> initializing torch distributed ...``, the arguments block,
``using world size: ...``, `` [ts] iteration    3/   20 | ...``); rank 0 prints the start-up
lines, the last rank prints the iteration lines, as in Megatron.

Faults (``--fault`` or env ``MCORE_FAULT``; rank ``--fault-rank``/``MCORE_FAULT_RANK``,
iteration ``--fault-iter``/``MCORE_FAULT_ITER``):

``none``              train to the end and exit 0
``exception``         an out-of-bounds index on one rank (a real ``IndexError`` from torch),
                      ``MCORE_FAULT_PAUSE`` seconds (default 0) into the iteration: torchrun
                      ``--tee`` relays stdout and stderr by separate threads, so without a pause
                      the previous iteration's line can land after the traceback
``hang``              one rank sleeps forever before the gradient all-reduce; the others hit
                      the gloo timeout (``--distributed-timeout-seconds``)
``sigkill``           one rank SIGKILLs itself, as the kernel OOM killer would
``megatron-tp``       ``megatron.core.parallel_state.initialize_model_parallel`` with a TP size
                      that does not divide the world size (real megatron-core RuntimeError)
``megatron-heads``    ``megatron.core.transformer.TransformerConfig`` with heads % TP != 0
                      (real megatron-core ValueError)
``wrong-op``          one rank calls ``broadcast`` where the others all-reduce the loss
``late``              one rank sleeps ``MCORE_FAULT_DELAY`` seconds (default 18) before the
                      loss all-reduce: it arrives after the others timed out
``size-bigger``       one rank all-reduces a loss tensor of 2 elements instead of 1
``size-smaller``      one rank all-reduces an empty loss tensor instead of 1 element
``size-huge``         one rank all-reduces 1000 elements instead of 1: its ring neighbour
                      aborts in gloo's I/O thread (``gloo::EnforceNotMet``, SIGABRT)
``slow-save``         one rank prints Megatron's checkpoint line after the loss all-reduce of
                      the fault iteration and then sleeps ``MCORE_FAULT_DELAY`` seconds
                      (default 600), standing for a checkpoint save that never ends: the
                      others log that iteration and wait in the next one's all-reduce
``loader-fatal``      one rank's data-loading library (a made-up ``shardio``, not in the
                      catalog) prints one fatal line on stderr and exits 1: no exception, no
                      traceback; the others then fail in their collectives

Flight Recorder (``TORCH_FR_DUMP_TEMP_FILE`` set, e.g. ``$JOB_DIR/fr/gloo_trace_rank_``): gloo
records every collective but never dumps by itself, so the script writes
``<prefix><rank>`` (pickle; ``MCORE_FR_FORMAT=json`` for JSON, ``both`` for both, the JSON
in a sibling ``<dir>-json``) with
``torch._C._distributed_c10d._dump_fr_trace()``: when a collective raises, on SIGTERM from
torchrun, and from a watchdog thread once no iteration finished for ``MCORE_FR_WATCHDOG_S``
seconds. After a collective's exception it waits ``MCORE_FR_EXIT_GRACE`` seconds (default 8)
before exiting, as NCCL's watchdog waits for the other ranks' dumps.

Without Flight Recorder, a rank whose collective fails prints its error at once and exits 1
``MCORE_EXIT_GRACE`` seconds later (default 3). Gloo tells a rank at once that its peer is gone,
where an NCCL rank waits in its collective until the watchdog; exiting at once would race the
faulty rank's own exit, and torchrun, which names the lowest local rank among the failures of
one poll, could name the victim.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import signal
import sys
import threading
import time
import zlib
from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

FAULTS = (
    "none",
    "exception",
    "hang",
    "sigkill",
    "megatron-tp",
    "megatron-heads",
    "wrong-op",
    "late",
    "size-bigger",
    "size-smaller",
    "size-huge",
    "loader-fatal",
    "slow-save",
)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    env = os.environ
    p = argparse.ArgumentParser(description="tiny Megatron-style CPU training with faults")
    p.add_argument("--num-layers", type=int, default=2)
    p.add_argument("--hidden-size", type=int, default=64)
    p.add_argument("--num-attention-heads", type=int, default=4)
    p.add_argument("--seq-length", type=int, default=32)
    p.add_argument("--max-position-embeddings", type=int, default=32)
    p.add_argument("--vocab-size", type=int, default=256)
    p.add_argument("--micro-batch-size", type=int, default=2)
    p.add_argument("--global-batch-size", type=int, default=8)
    p.add_argument("--tensor-model-parallel-size", type=int, default=1)
    p.add_argument("--pipeline-model-parallel-size", type=int, default=1)
    p.add_argument("--context-parallel-size", type=int, default=1)
    p.add_argument("--train-iters", type=int, default=20)
    p.add_argument("--lr", type=float, default=3.0e-4)
    p.add_argument("--min-lr", type=float, default=3.0e-5)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--log-interval", type=int, default=1)
    p.add_argument(
        "--iter-sleep",
        type=float,
        default=0.2,
        help="extra seconds per iteration (keeps the logs readable)",
    )
    p.add_argument(
        "--log-all-ranks",
        action="store_true",
        default=env.get("MCORE_LOG_ALL_RANKS", "") not in ("", "0"),
        help="every rank prints its iteration line (Megatron: only the last rank)",
    )
    p.add_argument("--distributed-backend", default="gloo")
    p.add_argument(
        "--distributed-timeout-seconds", type=int, default=int(env.get("MCORE_PG_TIMEOUT", "60"))
    )
    p.add_argument("--fault", choices=FAULTS, default=env.get("MCORE_FAULT", "none"))
    p.add_argument("--fault-rank", type=int, default=int(env.get("MCORE_FAULT_RANK", "3")))
    p.add_argument("--fault-iter", type=int, default=int(env.get("MCORE_FAULT_ITER", "5")))
    return p.parse_args(argv)


# --------------------------------------------------------------------------------------
# Megatron-style printing
# --------------------------------------------------------------------------------------
def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


def _world() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def print_rank_0(msg: str) -> None:
    if _rank() == 0:
        print(msg, flush=True)


def print_rank_last(msg: str) -> None:
    if _rank() == _world() - 1:
        print(msg, flush=True)


def print_every_rank(msg: str) -> None:
    print(msg, flush=True)


def print_datetime(label: str) -> None:
    if dist.is_initialized():
        dist.barrier()
    now = dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")
    print_rank_0(f"[{label}] datetime: {now} ")


def print_args(args: argparse.Namespace) -> None:
    print_rank_0("------------------------ arguments ------------------------")
    lines = []
    for name, value in vars(args).items():
        dots = "." * (48 - len(name))
        lines.append(f"  {name} {dots} {value}")
    for line in sorted(lines, key=lambda s: s.lower()):
        print_rank_0(line)
    print_rank_0("-------------------- end of arguments ---------------------")


def megatron_args(args: argparse.Namespace, world_size: int) -> argparse.Namespace:
    """The namespace Megatron would print: CLI args plus derived values."""
    model = args.tensor_model_parallel_size * args.pipeline_model_parallel_size
    model *= args.context_parallel_size
    full: dict[str, Any] = {
        k: v
        for k, v in vars(args).items()
        if not k.startswith(("fault", "iter_sleep", "log_all_ranks"))
    }
    full.update(
        world_size=world_size,
        rank=0,
        data_parallel_size=max(world_size // model, 1),
        params_dtype="torch.float32",
        bf16=False,
        fp16=False,
        ffn_hidden_size=4 * args.hidden_size,
        kv_channels=args.hidden_size // max(args.num_attention_heads, 1),
        lr_decay_style="cosine",
        optimizer="adam",
        adam_beta1=0.9,
        adam_beta2=0.95,
        weight_decay=0.1,
        clip_grad=1.0,
        sequence_parallel=False,
        use_distributed_optimizer=False,
        transformer_impl="local",
        tokenizer_type="NullTokenizer",
        mock_data=True,
        save=None,
        load=None,
        exit_signal_handler=False,
        distributed_timeout_minutes=max(args.distributed_timeout_seconds // 60, 1),
    )
    return argparse.Namespace(**full)


# --------------------------------------------------------------------------------------
# Flight Recorder dumps (gloo keeps the buffer; the script writes it)
# --------------------------------------------------------------------------------------
_progress = [time.monotonic()]


def fr_dump(why: str) -> None:
    """Write this rank's Flight Recorder buffer to ``$TORCH_FR_DUMP_TEMP_FILE<rank>``."""
    prefix = os.environ.get("TORCH_FR_DUMP_TEMP_FILE")
    if not prefix or not dist.is_initialized():
        return
    c10d = torch._C._distributed_c10d
    fmt = os.environ.get("MCORE_FR_FORMAT", "pickle")
    targets = []
    if fmt in ("pickle", "both"):
        targets.append((f"{prefix}{_rank()}", c10d._dump_fr_trace))
    if fmt in ("json", "both"):
        # JSON next to the pickles would break torchfrtrace's name parsing: a sibling dir
        head, base = os.path.split(prefix)
        where = head + "-json" if fmt == "both" else head
        os.makedirs(where, exist_ok=True)
        targets.append((os.path.join(where, f"{base}{_rank()}.json"), c10d._dump_fr_trace_json))
    for path, dump in targets:
        try:
            data = dump()
        except Exception as exc:  # the dump must never hide the failure itself
            print(
                f"[rank{_rank()}]: flight recorder dump failed: {exc}", file=sys.stderr, flush=True
            )
            return
        tmp = f"{path}.tmp"
        with open(tmp, "wb") as out:
            out.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
        print(
            f"[rank{_rank()}]: flight recorder dump ({why}) written to {path}",
            file=sys.stderr,
            flush=True,
        )


def install_fr_dumps() -> None:
    """Dump on SIGTERM and from a watchdog thread when iterations stop."""
    if not os.environ.get("TORCH_FR_DUMP_TEMP_FILE"):
        return

    def on_sigterm(signum: int, _frame: Any) -> None:
        fr_dump("SIGTERM")
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, on_sigterm)
    limit = float(os.environ.get("MCORE_FR_WATCHDOG_S", "0") or 0)
    if limit > 0:

        def watch() -> None:
            dumped_at = 0.0
            while True:
                time.sleep(0.5)
                last = _progress[0]
                if time.monotonic() - last > limit and dumped_at != last:
                    dumped_at = last
                    fr_dump(f"watchdog: no progress for {limit:g} s")

        threading.Thread(target=watch, name="fr-watchdog", daemon=True).start()


# --------------------------------------------------------------------------------------
# model / data
# --------------------------------------------------------------------------------------
class TinyLM(nn.Module):
    def __init__(self, vocab: int, hidden: int, layers: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(
            nn.Sequential(
                nn.LayerNorm(hidden),
                nn.Linear(hidden, 4 * hidden),
                nn.GELU(),
                nn.Linear(4 * hidden, hidden),
            )
            for _ in range(layers)
        )
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embedding(tokens)
        for layer in self.layers:
            x = x + layer(x)
        return self.head(x)


def get_batch(
    gen: torch.Generator, args: argparse.Namespace, iteration: int, rank: int
) -> tuple[torch.Tensor, torch.Tensor]:
    tokens = torch.randint(
        0, args.vocab_size, (args.micro_batch_size, args.seq_length + 1), generator=gen
    )
    if args.fault == "exception" and rank == args.fault_rank and iteration == args.fault_iter:
        time.sleep(float(os.environ.get("MCORE_FAULT_PAUSE", "0")))  # see the docstring
        # a data-pipeline bug: a sample index one past the end of the shard
        shard = torch.arange(args.global_batch_size * args.train_iters)
        _ = shard[len(shard)]
    if args.fault == "loader-fatal" and rank == args.fault_rank and iteration == args.fault_iter:
        loader_fatal(rank, iteration)
    return tokens[:, :-1], tokens[:, 1:]


def loader_fatal(rank: int, iteration: int) -> None:
    """What a native data-loading library does on a corrupt shard: one line on stderr, then
    ``exit(1)`` from C (no Python exception, no traceback, no atexit handlers)."""
    shard = 7 * rank + iteration
    offset = (iteration * 131 + rank) * 4096
    crc = zlib.crc32(f"{rank}:{iteration}".encode())
    sys.stdout.flush()
    sys.stderr.write(
        f"shardio: FATAL: corrupt record header in /data/tokens/train-{shard:05d}.bin at offset "
        f"{offset} (crc 0x{crc:08x} != 0x00000000); cannot continue\n"
    )
    sys.stderr.flush()
    os._exit(1)


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------
def initialize(args: argparse.Namespace) -> None:
    world_size = _world()
    rank = _rank()
    margs = megatron_args(args, world_size)
    model = args.tensor_model_parallel_size * args.pipeline_model_parallel_size
    if rank == 0:
        print(
            f"using world size: {world_size}, data-parallel size: {margs.data_parallel_size}, "
            f"context-parallel size: {args.context_parallel_size}, "
            "hierarchical context-parallel sizes: None, "
            f"tensor-model-parallel size: {args.tensor_model_parallel_size}, "
            f"pipeline-model-parallel size: {args.pipeline_model_parallel_size} ",
            flush=True,
        )
    print_args(margs)
    print_rank_0("> initializing torch distributed ...")
    dist.init_process_group(
        backend=args.distributed_backend,
        timeout=dt.timedelta(seconds=args.distributed_timeout_seconds),
    )
    if model > 1 or args.fault in ("megatron-tp", "megatron-heads"):
        from megatron.core import parallel_state

        parallel_state.initialize_model_parallel(
            tensor_model_parallel_size=args.tensor_model_parallel_size,
            pipeline_model_parallel_size=args.pipeline_model_parallel_size,
            context_parallel_size=args.context_parallel_size,
        )
    print_rank_0(f"> initialized tensor model parallel with size {args.tensor_model_parallel_size}")
    print_rank_0(
        f"> initialized pipeline model parallel with size {args.pipeline_model_parallel_size}"
    )
    print_rank_0(f"> setting random seeds to {args.seed} ...")
    torch.manual_seed(args.seed)


def build_model(args: argparse.Namespace) -> nn.Module:
    print_rank_0("building GPT model ...")
    if args.fault == "megatron-heads" or args.tensor_model_parallel_size > 1:
        from megatron.core.transformer import TransformerConfig

        TransformerConfig(
            num_layers=args.num_layers,
            hidden_size=args.hidden_size,
            num_attention_heads=args.num_attention_heads,
            tensor_model_parallel_size=args.tensor_model_parallel_size,
            pipeline_model_parallel_size=args.pipeline_model_parallel_size,
        )
    model = TinyLM(args.vocab_size, args.hidden_size, args.num_layers)
    n_params = sum(p.numel() for p in model.parameters())
    print_rank_0(
        f" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): {n_params}"
    )
    return model


def reduce_loss(args: argparse.Namespace, reduced: torch.Tensor, iteration: int, rank: int) -> None:
    """All-reduce the loss for the log line; the collective faults strike here."""
    if rank != args.fault_rank or iteration != args.fault_iter:
        dist.all_reduce(reduced)
    elif args.fault == "wrong-op":
        dist.broadcast(reduced, src=0)  # a code path only this rank takes
    elif args.fault == "late":
        time.sleep(float(os.environ.get("MCORE_FAULT_DELAY", "18")))
        dist.all_reduce(reduced)
    elif args.fault == "size-bigger":
        dist.all_reduce(torch.cat([reduced.reshape(1), reduced.reshape(1)]))
    elif args.fault == "size-smaller":
        dist.all_reduce(reduced.reshape(1)[:0])
    elif args.fault == "size-huge":
        dist.all_reduce(torch.ones(1000))
    else:
        dist.all_reduce(reduced)


def slow_save(iteration: int) -> None:
    """A checkpoint save that does not end (a hung filesystem, say): this rank goes silent
    while the others move on into the next iteration's all-reduce."""
    save_dir = os.path.join(os.environ.get("JOB_DIR", "."), "checkpoints")
    line = f"saving checkpoint at iteration {iteration:7d} to {save_dir} in torch format"
    print(line, flush=True)
    time.sleep(float(os.environ.get("MCORE_FAULT_DELAY", "600")))


def train(args: argparse.Namespace, model: nn.Module) -> None:
    rank = _rank()
    world = _world()
    ddp = DistributedDataParallel(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    gen = torch.Generator().manual_seed(args.seed + rank)
    print_datetime("after model, optimizer, and learning rate scheduler are built")
    print_datetime("after dataloaders are built")
    print_rank_0("done with setup ...")
    print_rank_0("training ...")
    print_datetime("before the start of training step")
    consumed = 0
    last = time.perf_counter()
    for iteration in range(1, args.train_iters + 1):
        tokens, labels = get_batch(gen, args, iteration, rank)
        if args.fault == "hang" and rank == args.fault_rank and iteration == args.fault_iter:
            # stuck before the gradient all-reduce (a dead-locked data loader, say)
            while True:
                time.sleep(3600)
        if args.fault == "sigkill" and rank == args.fault_rank and iteration == args.fault_iter:
            # what the kernel OOM killer does: SIGKILL, no traceback, no message
            ballast = [bytearray(64 << 20) for _ in range(4)]
            del ballast
            os.kill(os.getpid(), signal.SIGKILL)
        logits = ddp(tokens)
        loss = F.cross_entropy(logits.reshape(-1, args.vocab_size), labels.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()  # DDP all-reduces the gradients here (gloo)
        grad_norm = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        opt.step()
        reduced = loss.detach().clone()
        reduce_loss(args, reduced, iteration, rank)
        if args.fault == "slow-save" and rank == args.fault_rank and iteration == args.fault_iter:
            slow_save(iteration)
        reduced /= world
        _progress[0] = time.monotonic()
        consumed += args.global_batch_size
        if args.iter_sleep:
            time.sleep(args.iter_sleep)
        if iteration % args.log_interval == 0:
            now = time.perf_counter()
            elapsed_ms = (now - last) * 1000.0 / args.log_interval
            last = now
            ts = dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")
            log = print_every_rank if args.log_all_ranks else print_rank_last
            log(
                f" [{ts}] iteration {iteration:8d}/{args.train_iters:8d} |"
                f" consumed samples: {consumed:12d} |"
                f" elapsed time per iteration (ms): {elapsed_ms:.1f} |"
                f" learning rate: {args.lr:.6E} |"
                f" global batch size: {args.global_batch_size:5d} |"
                f" lm loss: {reduced.item():.6E} |"
                f" loss scale: 1.0 |"
                f" grad norm: {float(grad_norm):.3f} |"
                f" number of skipped iterations:   0 |"
                f" number of nan iterations:   0 |"
            )
    print_datetime("after training is done")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.time()
    initialize(args)
    print_rank_0(f"time to initialize megatron (seconds): {time.time() - start:.3f}")
    print_datetime("after megatron is initialized")
    model = build_model(args)
    install_fr_dumps()
    try:
        train(args, model)
    except (RuntimeError, dist.DistBackendError) as exc:
        if os.environ.get("TORCH_FR_DUMP_TEMP_FILE"):
            fr_dump(f"collective failed: {type(exc).__name__}")
            time.sleep(float(os.environ.get("MCORE_FR_EXIT_GRACE", "8")))
            raise
        # the error now (through torch's excepthook: the same [rankN]: lines), the exit later
        sys.excepthook(type(exc), exc, exc.__traceback__)
        sys.stderr.flush()
        time.sleep(float(os.environ.get("MCORE_EXIT_GRACE", "3")))
        return 1
    print_datetime(f"exiting program at iteration {args.train_iters}")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Format-built job directories for failures that need GPUs to reproduce.

Every log line is assembled from the templates in the project's message-format reference
(PyTorch c10d / elastic, CUDA caching allocator, NCCL, Megatron-LM, Slurm, NVIDIA Xid), for the
exact version combination named in each scenario. Nothing here runs a GPU; the output is meant to
be indistinguishable in *format* from the job directory a real multi-node SLURM job would leave.

Run ``python -m harness.format_fixtures --out sample_logs/formats``. The output is deterministic:
a fixed seed per scenario, fixed dates, no reads of the clock or the environment.
"""

from __future__ import annotations

import argparse
import random
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

# --------------------------------------------------------------------------------------------
# Versions and fixed paths
# --------------------------------------------------------------------------------------------

MEGATRON_DIR = "/lustre/fsw/llm/Megatron-LM"
DATA_PREFIX = "/lustre/fsw/llm/data/fineweb-edu/gpt2_text_document"
CKPT_DIR = "/lustre/fsw/llm/checkpoints/gpt-8b"
LOG_ROOT = "/lustre/fsw/llm/jobs"
FQDN_SUFFIX = ".hpc.internal"

Ver = tuple[int, ...]


@dataclass(frozen=True)
class Versions:
    torch: str  # "2.6.0"
    nccl: str  # "2.21.5"
    cuda: str  # "12.4"
    megatron: str  # "core_v0.12.0" or "23.04"
    slurm: str  # "23.02.7"
    python: str = "3.12"

    @property
    def t(self) -> Ver:
        return _ver(self.torch)[:2]

    @property
    def n(self) -> Ver:
        return _ver(self.nccl)

    @property
    def s(self) -> Ver:
        return _ver(self.slurm)[:2]

    @property
    def m(self) -> Ver:
        """Megatron version as (0, minor); release 23.04 maps to (0, 3)."""
        if self.megatron.startswith("core_v"):
            return _ver(self.megatron[len("core_v") :])[:2]
        return (0, 3)

    @property
    def py(self) -> Ver:
        return _ver(self.python)

    def describe(self) -> str:
        mega = self.megatron
        if not mega.startswith("core_v"):
            mega = f"{mega} (pre-core)"
        return (
            f"torch {self.torch}, NCCL {self.nccl}, Megatron {mega}, "
            f"Slurm {self.slurm}, Python {self.python}"
        )


def _ver(s: str) -> Ver:
    return tuple(int(p) for p in s.split("."))


# Per-release source line numbers. They differ per release and must never be relied on by
# the analyzer; the values are plausible for each release, not asserted by the reference.
PGNCCL_LINES: dict[Ver, dict[str, int]] = {
    (1, 13): {"timeout": 821, "handle": 455, "handle2": 460},
    (2, 3): {"timeout": 1316, "summary": 1553, "handle": 1606, "handle2": 1612, "wdterm": 1401},
    (2, 4): {
        "timeout": 607,
        "summary": 1664,
        "handle": 577,
        "handle2": 583,
        "wdterm": 1515,
        "destruct": 1168,
    },
    (2, 5): {
        "timeout": 616,
        "summary": 1785,
        "handle": 630,
        "handle2": 636,
        "wdterm": 1595,
        "destruct": 1250,
        "async": 1780,
    },
    (2, 6): {
        "timeout": 632,
        "summary": 2271,
        "stack": 2291,
        "handle": 618,
        "handle2": 624,
        "wdterm": 1664,
        "destruct": 1476,
        "async": 2262,
    },
    (2, 7): {
        "timeout": 635,
        "summary": 2314,
        "stack": 2334,
        "handle": 621,
        "handle2": 627,
        "wdterm": 1906,
        "destruct": 1538,
        "async": 2305,
    },
    (2, 8): {
        "timeout": 684,
        "summary": 2099,
        "stack": 2119,
        "handle": 670,
        "handle2": 676,
        "wdterm": 2023,
        "destruct": 1512,
        "async": 2090,
    },
    (2, 9): {
        "timeout": 696,
        "summary": 2127,
        "stack": 2147,
        "handle": 682,
        "handle2": 688,
        "wdterm": 2051,
        "destruct": 1530,
        "async": 2118,
    },
    (2, 12): {
        "timeout": 713,
        "summary": 2203,
        "stack": 2223,
        "handle": 699,
        "handle2": 705,
        "wdterm": 2127,
        "destruct": 1561,
        "async": 2194,
    },
}

# torch/distributed/run.py, elastic api.py, errors/__init__.py, launcher/api.py,
# agent/server/api.py line numbers per release (see the note on PGNCCL_LINES).
ELASTIC_LINES: dict[Ver, dict[str, int]] = {
    (1, 13): {
        "banner": 766,
        "close": 328,
        "failed": 492,
        "run_module": 765,
        "wrapper": 346,
        "main": 762,
        "run": 753,
        "call": 131,
        "launch": 245,
        "agent_run": 123,
        "metrics": 125,
        "invoke": 850,
        "sleep": 709,
        "handler": 62,
        "received": 729,
    },
    (2, 3): {
        "banner": 757,
        "close": 833,
        "failed": 840,
        "run_module": 883,
        "wrapper": 347,
        "main": 879,
        "run": 870,
        "call": 132,
        "launch": 263,
        "agent_run": 254,
        "metrics": 123,
        "invoke": 727,
        "sleep": 876,
        "handler": 76,
        "received": 734,
    },
    (2, 4): {
        "banner": 757,
        "close": 858,
        "failed": 833,
        "run_module": 905,
        "wrapper": 348,
        "main": 901,
        "run": 892,
        "call": 133,
        "launch": 264,
        "agent_run": 260,
        "metrics": 123,
        "invoke": 733,
        "sleep": 870,
        "handler": 79,
        "received": 740,
    },
    (2, 5): {
        "banner": 793,
        "close": 897,
        "failed": 869,
        "run_module": 923,
        "wrapper": 355,
        "main": 919,
        "run": 910,
        "call": 138,
        "launch": 269,
        "agent_run": 260,
        "metrics": 137,
        "invoke": 696,
        "sleep": 855,
        "handler": 84,
        "received": 705,
    },
    (2, 6): {
        "banner": 793,
        "close": 897,
        "failed": 869,
        "run_module": 923,
        "wrapper": 355,
        "main": 919,
        "run": 910,
        "call": 138,
        "launch": 269,
        "agent_run": 260,
        "metrics": 137,
        "invoke": 696,
        "sleep": 855,
        "handler": 84,
        "received": 705,
    },
    (2, 7): {
        "banner": 766,
        "close": 900,
        "failed": 874,
        "run_module": 896,
        "wrapper": 355,
        "main": 892,
        "run": 883,
        "call": 139,
        "launch": 270,
        "agent_run": 261,
        "metrics": 138,
        "invoke": 711,
        "sleep": 870,
        "handler": 84,
        "received": 720,
    },
    (2, 8): {
        "banner": 770,
        "close": 908,
        "failed": 882,
        "run_module": 901,
        "wrapper": 357,
        "main": 897,
        "run": 888,
        "call": 143,
        "launch": 277,
        "agent_run": 268,
        "metrics": 138,
        "invoke": 715,
        "sleep": 874,
        "handler": 84,
        "received": 724,
    },
    (2, 9): {
        "banner": 810,
        "close": 918,
        "failed": 892,
        "run_module": 940,
        "wrapper": 362,
        "main": 936,
        "run": 927,
        "call": 152,
        "launch": 289,
        "agent_run": 280,
        "metrics": 138,
        "invoke": 722,
        "sleep": 881,
        "handler": 84,
        "received": 731,
    },
    (2, 12): {
        "banner": 866,
        "close": 1011,
        "failed": 985,
        "run_module": 1024,
        "wrapper": 367,
        "main": 1020,
        "run": 1011,
        "call": 194,
        "launch": 375,
        "agent_run": 366,
        "metrics": 138,
        "invoke": 751,
        "sleep": 910,
        "handler": 84,
        "received": 760,
    },
}


def _table(table: dict[Ver, dict[str, int]], v: Ver) -> dict[str, int]:
    best = max(k for k in table if k <= v)
    return table[best]


# --------------------------------------------------------------------------------------------
# Event model
# --------------------------------------------------------------------------------------------

WORKER, AGENT, SRUN, STEPD, BATCH, WATCH = "worker", "agent", "srun", "stepd", "batch", "watch"


@dataclass
class Event:
    t: datetime
    seq: int
    kind: str
    stream: str  # "out" | "err"
    text: str
    node: int = -1
    lr: int = -1


@dataclass
class Failure:
    rank: int
    lr: int
    exitcode: int
    pid: int


@dataclass
class Meta:
    category: str
    rank: int
    node: str
    cause: str
    format_source: list[str]
    notes: str
    sections: dict[str, list[str]] = field(default_factory=dict)


SIGNALS = {6: "SIGABRT", 9: "SIGKILL", 15: "SIGTERM", 11: "SIGSEGV"}
STRSIGNAL = {6: "Aborted", 9: "Killed", 15: "Terminated"}

WARN_NCCL_ENV = (
    "Warning: Environment variable NCCL_ASYNC_ERROR_HANDLING is deprecated; use "
    "TORCH_NCCL_ASYNC_ERROR_HANDLING instead (function getCvarInt)"
)
DESTRUCT_WARN = (
    "Warning: WARNING: process group has NOT been destroyed before we destruct "
    "ProcessGroupNCCL. On normal program exit, the application should call "
    "destroy_process_group to ensure that any pending NCCL operations have finished in this "
    "process. In rare cases this process can exit before this point and block the progress of "
    "another member of the process group. This constraint has always been present,  but this "
    "warning has only been added since PyTorch 2.4 (function operator())"
)
HANDLE1 = (
    "Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA "
    "kernels, subsequent GPU operations might run on corrupted/incomplete data."
)
HANDLE2 = "To avoid data inconsistency, we are taking the entire process down."
FR_MISSING = (
    "Stack trace of the failed collective not found, potentially because FlightRecorder is "
    "disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value."
)
DUMP_REASON = (
    "This is most likely caused by incorrect usages of collectives, e.g., wrong sizes used "
    "across ranks, the order of collectives is not same for all ranks or the scheduled "
    "collective, for some reason, didn't run. Additionally, this can be caused by GIL deadlock "
    "or other reasons such as network errors or bugs in the communications library (e.g. "
    "NCCL), etc. "
)
ELASTIC_DOC = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"


class Job:
    """One simulated SLURM job: nodes, ranks, pids and a time-ordered list of output events."""

    def __init__(
        self,
        name: str,
        jobid: int,
        nnodes: int,
        gpn: int,
        v: Versions,
        seed: int,
        start: datetime,
        layout: str,
        *,
        label: bool = True,
        tee: bool = True,
        bus_ids: list[str] | None = None,
    ) -> None:
        self.name = name
        self.jobid = jobid
        self.nnodes = nnodes
        self.gpn = gpn
        self.v = v
        self.rng = random.Random(seed)
        self.start = start
        self.layout = layout  # "combined" | "split" | "logdir"
        self.label = label
        self.tee = tee
        self.hosts = [f"gpu-node-{i + 1:03d}" for i in range(nnodes)]
        self.ips = [f"10.10.1.{11 + i}" for i in range(nnodes)]
        self.bus = (
            bus_ids
            or ["18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000"][:gpn]
        )
        self.agent_pid = [self.rng.randrange(1_200_000, 3_900_000) for _ in range(nnodes)]
        self.pid = [[self.agent_pid[n] + 64 + lr for lr in range(gpn)] for n in range(nnodes)]
        self.mono_off = [self.rng.randrange(0, 10**9) for _ in range(nnodes)]
        self.events: list[Event] = []
        self._seq = 0
        self.run_id = str(jobid)
        self.logdir_rand = [
            "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz0123456789_") for _ in range(8))
            for _ in range(nnodes)
        ]
        self.venv = f"{MEGATRON_DIR}/.venv"
        self.sp = f"{self.venv}/lib/python{v.python}/site-packages"
        self.python_bin = f"{self.venv}/bin/python3"
        self.pg_initialised: set[int] = set()

    # ---- ranks ---------------------------------------------------------------------------
    @property
    def world(self) -> int:
        return self.nnodes * self.gpn

    def rank(self, node: int, lr: int) -> int:
        return node * self.gpn + lr

    def node_of(self, rank: int) -> int:
        return rank // self.gpn

    def lr_of(self, rank: int) -> int:
        return rank % self.gpn

    def rpid(self, rank: int) -> int:
        return self.pid[self.node_of(rank)][self.lr_of(rank)]

    def fqdn(self, node: int) -> str:
        return self.hosts[node] + FQDN_SUFFIX

    # ---- raw emission ----------------------------------------------------------------------
    def add(
        self, t: datetime, kind: str, stream: str, text: str, node: int = -1, lr: int = -1
    ) -> None:
        for line in text.split("\n"):
            self.events.append(Event(t, self._seq, kind, stream, line, node, lr))
            self._seq += 1

    def worker(self, t: datetime, rank: int, text: str, stream: str = "err") -> None:
        self.add(t, WORKER, stream, text, self.node_of(rank), self.lr_of(rank))

    def agent(self, t: datetime, node: int, text: str) -> None:
        self.add(t, AGENT, "err", text, node)

    def srun(self, t: datetime, text: str) -> None:
        self.add(t, SRUN, "err", text)

    def batch(self, t: datetime, text: str, stream: str = "out") -> None:
        self.add(t, BATCH, stream, text)

    def stepd(self, t: datetime, msg: str) -> None:
        if self.v.s >= (25, 5):
            self.add(
                t, STEPD, "err", f"[{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond // 1000:03d}] error: {msg}"
            )
        else:
            self.add(t, STEPD, "err", f"slurmstepd: error: {msg}")

    # ---- PyTorch C++ logger (reference §0.1) ------------------------------------------------
    def cpp_prefix(self, t: datetime, rank: int | None, sev: str, file: str, line: int) -> str:
        tv = self.v.t
        rp = f"[rank{rank}]:" if rank is not None and tv >= (2, 2) else ""
        if tv < (2, 4):
            return f"{rp}[{sev} {file}:{line}] "
        node = self.node_of(rank) if rank is not None else 0
        wall_ns = t.microsecond * 1000 + self.rng.randrange(0, 1000)
        frac = (wall_ns + self.mono_off[node]) % 10**9
        return f"{rp}[{sev}{t.month * 100 + t.day} {t:%H:%M:%S}.{frac:09d} {file}:{line}] "

    def cpp(self, t: datetime, rank: int, sev: str, file: str, line: int, msg: str) -> None:
        r = rank if rank in self.pg_initialised else None
        self.worker(t, rank, self.cpp_prefix(t, r, sev, file, line) + msg)

    def pgl(self, key: str) -> int:
        return _table(PGNCCL_LINES, self.v.t)[key]

    def pg_prefix(
        self,
        rank: int,
        pg_id: int = 0,
        guid: int = 0,
        desc: str = "default_pg",
        group_rank: int | None = None,
    ) -> str:
        r = rank if group_rank is None else group_rank
        tv = self.v.t
        if tv <= (2, 2):
            return f"[Rank {r}] "
        if tv == (2, 3):
            return f"[PG {guid} Rank {r}] "
        if tv == (2, 4):
            return f"[PG {guid} ({desc}) Rank {r}] " if desc else f"[PG {guid} Rank {r}] "
        if desc:
            return f"[PG ID {pg_id} PG GUID {guid}({desc}) Rank {r}] "
        return f"[PG ID {pg_id} PG GUID {guid} Rank {r}] "

    def work(self, seq: int, op: str, nin: int, nout: int, timeout_ms: int) -> str:
        if self.v.t <= (2, 0):
            return f"WorkNCCL(SeqNum={seq}, OpType={op}, Timeout(ms)={timeout_ms})"
        return (
            f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={nin}, NumelOut={nout}, "
            f"Timeout(ms)={timeout_ms})"
        )

    def build_path(self) -> str:
        tv = self.v.t
        if tv <= (2, 5):
            return ".."
        if tv <= (2, 12):
            return "/pytorch"
        return "/__w/pytorch/pytorch"

    def cxx_frames(self, rank: int, frames: list[tuple[str, str, str]]) -> list[str]:
        out = []
        lib = f"{self.sp}/torch/lib"
        for i, (sym, off, so) in enumerate(frames):
            addr = f"0x7f{self.rng.randrange(0x10_0000_0000, 0xFF_FFFF_FFFF):010x}"
            path = so if so.startswith("/lib") else f"{lib}/{so}"
            out.append(f"frame #{i}: {sym} + {off} ({addr} in {path})")
        return out

    # ---- Python logger (reference §0.2) ----------------------------------------------------
    def pylog(
        self,
        t: datetime,
        level: str,
        path: str,
        lineno: int,
        logger: str,
        msg: str,
        pid: int,
        tid: int,
    ) -> str:
        tv = self.v.t
        lines = msg.split("\n")
        if tv <= (2, 0):
            return f"{level}:{logger}:{msg}"
        if tv <= (2, 2):
            pre = f"[{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}] {logger}: [{level}]"
            return "\n".join(f"{pre} {ln}" for ln in lines)
        usec = (t.microsecond // 1000) * 1000
        ident = tid if tv <= (2, 4) else pid
        rel = f"site-packages/{path}" if tv >= (2, 5) else path
        pre = f"{level[0]}{t:%m%d %H:%M:%S}.{usec:06d} {ident} {rel}:{lineno}]"
        return "\n".join(f"{pre} {ln}" for ln in lines)

    def agent_log(
        self,
        t: datetime,
        node: int,
        level: str,
        key: str,
        path: str,
        logger: str,
        msg: str,
        delta: int = 0,
    ) -> None:
        lineno = _table(ELASTIC_LINES, self.v.t)[key] + delta
        tid = 139_900_000_000_000 + self.agent_pid[node] * 7
        self.agent(
            t, node, self.pylog(t, level, path, lineno, logger, msg, self.agent_pid[node], tid)
        )

    # ---- NCCL (reference §5.1) -------------------------------------------------------------
    def nccl_info(self, t: datetime, rank: int, msg: str, tid: int | None = None) -> None:
        pid = self.rpid(rank)
        h = self.hosts[self.node_of(rank)]
        self.worker(t, rank, f"{h}:{pid}:{tid or pid} [{self.lr_of(rank)}] NCCL INFO {msg}", "out")

    def nccl_warn(
        self,
        t: datetime,
        rank: int,
        file: str,
        line: int,
        msg: str,
        tid: int | None = None,
        func: str = "",
        dev: int | None = None,
    ) -> None:
        pid = self.rpid(rank)
        h = self.hosts[self.node_of(rank)]
        d = self.lr_of(rank) if dev is None else dev
        ts = f"[{t:%Y-%m-%d %H:%M:%S}] " if self.v.n >= (2, 26) else ""
        fn = f" ({func})" if self.v.n >= (2, 30, 7) and func else ""
        self.worker(t, rank, "", "out")
        self.worker(
            t, rank, f"{ts}{h}:{pid}:{tid or pid} [{d}] {file}:{line}{fn} NCCL WARN {msg}", "out"
        )

    # ---- Python tracebacks (reference §0.3) -------------------------------------------------
    def traceback(self, t: datetime, rank: int, lines: list[str]) -> None:
        prefixed = rank in self.pg_initialised and self.v.t >= (2, 4)
        for ln in (part for chunk in lines for part in chunk.split("\n")):
            text = f"[rank{rank}]: {ln}" if prefixed and ln != "" else ln
            self.worker(t, rank, text)

    def frame(self, path: str, line: int, func: str, src: str | None) -> list[str]:
        out = [f'  File "{path}", line {line}, in {func}']
        if src is None:
            return out
        out.append(f"    {src}")
        if self.v.py >= (3, 11):
            start = 0
            if src.startswith("return "):
                start = len("return ")
            elif " = " in src and "(" in src and src.index(" = ") < src.index("("):
                start = src.index(" = ") + 3
            if 0 < start < len(src) and not src.endswith(("(", ",")):
                out.append("    " + " " * start + "^" * (len(src) - start))
        return out

    def runpy_frames(self) -> list[str]:
        if self.v.py >= (3, 11):
            return [
                '  File "<frozen runpy>", line 198, in _run_module_as_main',
                '  File "<frozen runpy>", line 88, in _run_code',
            ]
        return [
            '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
            "    return _run_code(code, main_globals, None,",
            '  File "/usr/lib/python3.10/runpy.py", line 86, in _run_code',
            "    exec(code, run_globals)",
        ]

    # ---- torchrun agent (reference §2) ------------------------------------------------------
    def agent_banner(self, t: datetime, node: int) -> None:
        msg = (
            "\n*****************************************\n"
            "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
            "to avoid your system being overloaded, please further tune the variable for "
            "optimal performance in your application as needed. \n"
            "*****************************************"
        )
        self.agent_log(
            t, node, "WARNING", "banner", "torch/distributed/run.py", "torch.distributed.run", msg
        )

    def agent_close(self, t: datetime, node: int, lrs: Iterable[int]) -> None:
        for lr in lrs:
            self.agent_log(
                t,
                node,
                "WARNING",
                "close",
                "torch/distributed/elastic/multiprocessing/api.py",
                "torch.distributed.elastic.multiprocessing.api",
                f"Sending process {self.pid[node][lr]} closing signal SIGTERM",
            )

    def agent_failed(self, t: datetime, node: int, f: Failure) -> None:
        self.agent_log(
            t,
            node,
            "ERROR",
            "failed",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch.distributed.elastic.multiprocessing.api",
            f"failed (exitcode: {f.exitcode}) local_rank: {f.lr} (pid: {f.pid}) "
            f"of binary: {self.python_bin}",
        )

    def _launcher_frames(self) -> list[str]:
        el = _table(ELASTIC_LINES, self.v.t)
        sp = self.sp
        out = ["Traceback (most recent call last):", *self.runpy_frames()]
        out += self.frame(f"{sp}/torch/distributed/run.py", el["run_module"], "<module>", "main()")
        out += self.frame(
            f"{sp}/torch/distributed/elastic/multiprocessing/errors/__init__.py",
            el["wrapper"],
            "wrapper",
            "return f(*args, **kwargs)",
        )
        out += self.frame(f"{sp}/torch/distributed/run.py", el["main"], "main", "run(args)")
        out += self.frame(f"{sp}/torch/distributed/run.py", el["run"], "run", "elastic_launch(")
        if self.v.t >= (2, 9):
            out += self.frame(
                f"{sp}/torch/distributed/launcher/api.py",
                el["call"],
                "__call__",
                "return launch_agent(",
            )
        else:
            out += self.frame(
                f"{sp}/torch/distributed/launcher/api.py",
                el["call"],
                "__call__",
                "return launch_agent(self._config, self._entrypoint, list(args))",
            )
        return out

    def child_failed(
        self, t: datetime, node: int, failures: list[Failure], detect: datetime
    ) -> None:
        """The torchrun ChildFailedError block (reference §2.3), failures in dict order."""
        el = _table(ELASTIC_LINES, self.v.t)
        lines = self._launcher_frames()
        lines += self.frame(
            f"{self.sp}/torch/distributed/launcher/api.py",
            el["launch"],
            "launch_agent",
            "raise ChildFailedError(",
        )
        ts = detect.strftime("%Y-%m-%d_%H:%M:%S")
        blocks: list[str] = []
        width = len("pretrain_gpt.py FAILED")
        for idx, f in enumerate(failures):
            if f.exitcode < 0:
                name = SIGNALS[-f.exitcode]
                msg = f"Signal {-f.exitcode} ({name}) received by PID {f.pid}"
                sig = f" ({name})"
            else:
                msg, sig = ELASTIC_DOC, ""
            if self.v.t >= (2, 12):
                exit_line = f"  exitcode  : {f.exitcode} (pid: {f.pid}) {sig}"
            else:
                exit_line = f"  exitcode  : {f.exitcode} (pid: {f.pid})"
            block = "\n".join(
                [
                    f"[{idx}]:",
                    f"  time      : {ts}",
                    f"  host      : {self.fqdn(node)}",
                    f"  rank      : {f.rank} (local_rank: {f.lr})",
                    exit_line,
                    "  error_file: <N/A>",
                    f"  traceback : {msg}",
                ]
            )
            width = max(width, *(len(x) for x in block.split("\n")))
            blocks.append(block)
        width = min(width, 60)
        root, others = blocks[0], blocks[1:]  # same detection second: the first in dict order
        text = "\n".join(
            [
                "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
                "=" * width,
                "pretrain_gpt.py FAILED",
                "-" * width,
                "Failures:",
                "\n".join(others) if others else "  <NO_OTHER_FAILURES>",
                "-" * width,
                "Root Cause (first observed failure):",
                root,
                "=" * width,
            ]
        )
        for ln in lines:
            self.agent(t, node, ln)
        self.agent(t, node, text)

    def agent_sigterm(self, t: datetime, node: int, lrs: Iterable[int]) -> None:
        """Agent killed from outside (reference §2.2)."""
        old = self.v.t <= (2, 0) or self.v.py >= (3, 11)
        sig = "15" if old else "Signals.SIGTERM"
        self.agent_log(
            t,
            node,
            "WARNING",
            "received",
            "torch/distributed/elastic/agent/server/api.py",
            "torch.distributed.elastic.agent.server.api",
            f"Received {sig} death signal, shutting down workers",
        )
        self.agent_close(t, node, lrs)
        el = _table(ELASTIC_LINES, self.v.t)
        sp = self.sp
        tb = self._launcher_frames()
        tb += self.frame(
            f"{sp}/torch/distributed/launcher/api.py",
            el["launch"],
            "launch_agent",
            "result = agent.run()",
        )
        tb += self.frame(
            f"{sp}/torch/distributed/elastic/metrics/api.py",
            el["metrics"],
            "wrapper",
            "result = f(*args, **kwargs)",
        )
        tb += self.frame(
            f"{sp}/torch/distributed/elastic/agent/server/api.py",
            el["agent_run"],
            "run",
            "result = self._invoke_run(role)",
        )
        tb += self.frame(
            f"{sp}/torch/distributed/elastic/agent/server/api.py",
            el["sleep"],
            "_invoke_run",
            "time.sleep(monitor_interval)",
        )
        tb += self.frame(
            f"{sp}/torch/distributed/elastic/multiprocessing/api.py",
            el["handler"],
            "_terminate_process_handler",
            'raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)',
        )
        tb.append(
            "torch.distributed.elastic.multiprocessing.api.SignalException: Process "
            f"{self.agent_pid[node]} got signal: 15"
        )
        for ln in tb:
            self.agent(t + timedelta(milliseconds=400), node, ln)

    def node_failure(
        self, t_detect: datetime, node: int, failures: list[Failure], running: list[int]
    ) -> None:
        """Agent notices failed workers: SIGTERM the rest, log the failure, ChildFailedError."""
        self.agent_close(t_detect, node, running)
        self.agent_failed(t_detect + timedelta(milliseconds=468), node, failures[0])
        self.child_failed(t_detect + timedelta(milliseconds=512), node, failures, t_detect)

    def srun_exit(self, t: datetime, node: int, what: str) -> None:
        self.srun(t, f"srun: error: {self.hosts[node]}: task {node}: {what}")

    # ---- rendering -------------------------------------------------------------------------
    def _label(self, ev: Event) -> str:
        if not self.label or ev.kind not in (WORKER, AGENT, WATCH):
            return ""
        w = len(str(self.nnodes - 1))
        return f"{ev.node:>{w}}: "

    def _line(self, ev: Event, tee: bool) -> str:
        tee_pre = f"[default{ev.lr}]:" if (tee and ev.kind == WORKER) else ""
        return self._label(ev) + tee_pre + ev.text

    def render(self) -> dict[str, str]:
        evs = sorted(self.events, key=lambda e: (e.t, e.seq))
        files: dict[str, list[str]] = {}
        if self.layout == "combined":
            files[f"slurm-{self.jobid}.out"] = [self._line(e, self.tee) for e in evs]
        elif self.layout == "split":
            files[f"{self.name}-{self.jobid}.out"] = [
                self._line(e, self.tee) for e in evs if e.stream == "out"
            ]
            files[f"{self.name}-{self.jobid}.err"] = [
                self._line(e, self.tee) for e in evs if e.stream == "err"
            ]
        else:
            files[f"{self.name}-{self.jobid}.out"] = [
                self._line(e, False) for e in evs if e.kind != WORKER
            ]
            for n in range(self.nnodes):
                base = (
                    f"torchrun-logs/{self.hosts[n]}/{self.run_id}_{self.logdir_rand[n]}/attempt_0"
                )
                for lr in range(self.gpn):
                    for stream, fname in (("out", "stdout.log"), ("err", "stderr.log")):
                        files[f"{base}/{lr}/{fname}"] = [
                            e.text
                            for e in evs
                            if e.kind == WORKER
                            and e.node == n
                            and e.lr == lr
                            and e.stream == stream
                        ]
        return {k: "".join(ln + "\n" for ln in v) for k, v in files.items()}

    def logdir_base(self, node: int) -> str:
        return f"torchrun-logs/{self.hosts[node]}/{self.run_id}_{self.logdir_rand[node]}/attempt_0"


# --------------------------------------------------------------------------------------------
# Shared building blocks
# --------------------------------------------------------------------------------------------


def ms(x: float) -> timedelta:
    return timedelta(milliseconds=x)


def hostlist(job: Job) -> str:
    return f"gpu-node-[001-{job.nnodes:03d}]"


def cuda_error_text(v: Versions, err: str, enum: str) -> str:
    """PyTorch's CUDA error text (reference §7.1); ends with a newline from 2.0 on."""
    tv = v.t
    if tv <= (1, 13):
        return (
            f"CUDA error: {err}\nCUDA kernel errors might be asynchronously reported at some "
            "other API call,so the stacktrace below might be incorrect.\nFor debugging "
            "consider passing CUDA_LAUNCH_BLOCKING=1."
        )
    lead = f"CUDA error: {err}\n"
    if tv >= (2, 9):
        lead += (
            f"Search for `{enum}' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
            "group__CUDART__TYPES.html for more information.\n"
        )
    period = "." if tv <= (2, 3) else ""
    return (
        lead + "CUDA kernel errors might be asynchronously reported at some other API call, "
        "so the stacktrace below might be incorrect.\nFor debugging consider passing "
        f"CUDA_LAUNCH_BLOCKING=1{period}\nCompile with `TORCH_USE_CUDA_DSA` to enable "
        "device-side assertions.\n"
    )


def oom_text(
    v: Versions,
    req: str,
    dev: int,
    total: str,
    free: str,
    inuse: str,
    alloc: str,
    unalloc: str,
    reserved: str = "",
) -> str:
    """Caching-allocator OOM message (reference §3.1)."""
    tv = v.t
    if tv <= (2, 0):
        return (
            f"CUDA out of memory. Tried to allocate {req} (GPU {dev}; {total} total capacity; "
            f"{alloc} already allocated; {free} free; {reserved} reserved in total by "
            "PyTorch) If reserved memory is >> allocated memory try setting "
            "max_split_size_mb to avoid fragmentation.  See documentation for Memory "
            "Management and PYTORCH_CUDA_ALLOC_CONF"
        )
    proc = f"Including non-PyTorch memory, this process has {inuse} memory in use. "
    hint = (
        "If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
        "documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )
    return (
        f"CUDA out of memory. Tried to allocate {req}. GPU {dev} has a total capacity of "
        f"{total} of which {free} is free. {proc}Of the allocated memory {alloc} is allocated "
        f"by PyTorch, and {unalloc} is reserved by PyTorch but unallocated. {hint}"
    )


def world_size_line(job: Job, tp: int, pp: int, cp: int) -> str:
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


def args_block(job: Job, tp: int, pp: int, extra: dict[str, object]) -> str:
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
    frac = f".{t.microsecond:06d}" if job.v.m >= (0, 16) else ""
    return f"[{label}] datetime: {t:%Y-%m-%d %H:%M:%S}{frac} "


def iteration_line(
    job: Job,
    t: datetime,
    it: int,
    gbs: int,
    ms_per_it: float,
    lr: float,
    loss: float | None,
    gn: float,
    tflops: float | None = None,
) -> str:
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
    s += f"loss scale: 1.0 | grad norm: {gn:.3f} | "
    s += "number of skipped iterations:   0 | number of nan iterations:   0 |"
    return s


@dataclass
class Train:
    tp: int = 1
    pp: int = 1
    gbs: int = 256
    ms_per_it: float = 8123.4
    first_it: int = 1
    nccl_debug: str = ""  # "", "WARN" or "INFO"
    env_warn: bool = False
    extra_args: dict[str, object] = field(default_factory=dict)
    tflops: float | None = None


def prelude(
    job: Job, t0: datetime, tr: Train, stop: datetime, *, batch_lines: list[str] | None = None
) -> datetime:
    """Start-up noise up to the first training iterations; returns the training start time."""
    for i, ln in enumerate(batch_lines or []):
        job.batch(t0 + ms(i), ln)
    for n in range(job.nnodes):
        job.agent_banner(t0 + ms(2100 + 37 * n), n)
    r0 = 0
    t = t0 + ms(9200)
    job.worker(t, r0, world_size_line(job, tr.tp, tr.pp, 1), "out")
    job.worker(t, r0, args_block(job, tr.tp, tr.pp, tr.extra_args), "out")
    t_init = t0 + ms(10100)
    job.worker(t_init, r0, "> initializing torch distributed ...", "out")
    job.pg_initialised.update(range(job.world))
    if tr.env_warn and job.v.t >= (2, 2):
        for r in range(job.world):
            tw = t_init + ms(40 + 3 * r)
            job.worker(tw, r, job.cpp_prefix(tw, r, "W", "Utils.hpp", 164) + WARN_NCCL_ENV)
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
        if ti >= stop:
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
                    it,
                    tr.gbs,
                    tr.ms_per_it,
                    3e-4 * min(1.0, it / 2000),
                    loss,
                    gn,
                    tr.tflops,
                ),
                "out",
            )
        it += 1
    return t_train


def nccl_init_info(job: Job, t: datetime) -> None:
    v = job.v
    for r in range(job.world):
        n, lr = job.node_of(r), job.lr_of(r)
        tr = t + ms(11 * r)
        if r == 0:
            job.nccl_info(tr, r, f"NCCL version {v.nccl}+cuda{v.cuda}")
        job.nccl_info(tr, r, f"Bootstrap : Using ib0:{job.ips[n]}<0>")
        job.nccl_info(tr, r, "NET/Plugin: No plugin found (libnccl-net.so)")
        job.nccl_info(
            tr,
            r,
            "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB "
            f"[3]mlx5_3:1/IB ; OOB ib0:{job.ips[n]}<0>",
        )
        job.nccl_info(tr, r, "Using network IB")
        comm = 0x55D1C2A30000 + 0x1F0 * r
        job.nccl_info(
            tr + ms(40),
            r,
            f"comm 0x{comm:x} rank {r} nranks {job.world} cudaDev {lr} "
            f"nvmlDev {lr} busId {job.bus[lr]} commId 0x3f9e1b2c44d0a817"
            " - Init START",
        )
        job.nccl_info(
            tr + ms(420),
            r,
            f"comm 0x{comm:x} rank {r} nranks {job.world} cudaDev {lr} "
            f"busId {job.bus[lr]} commId 0x3f9e1b2c44d0a817 - "
            f"localRank {lr} localRanks {job.gpn} - Init COMPLETE",
        )


def checktimeout_frames(job: Job) -> list[tuple[str, str, str]]:
    return [
        ("c10::Error::Error(c10::SourceLocation, std::string)", "0x98", "libc10.so"),
        (
            "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration"
            "<long, std::ratio<1l, 1000l> > >)",
            "0x1d2",
            "libtorch_cuda.so",
        ),
        (
            "c10d::ProcessGroupNCCL::watchdogHandler()"
            if job.v.t < (2, 8)
            else "c10d::ProcessGroupNCCL::Watchdog::runLoop()",
            "0x233",
            "libtorch_cuda.so",
        ),
        (
            "c10d::ProcessGroupNCCL::ncclCommWatchdog()"
            if job.v.t < (2, 8)
            else "c10d::ProcessGroupNCCL::Watchdog::run()",
            "0x14d",
            "libtorch_cuda.so",
        ),
        ("<unknown function>", "0xecdb4", "/lib/x86_64-linux-gnu/libstdc++.so.6"),
        ("<unknown function>", "0x9caa4", "/lib/x86_64-linux-gnu/libc.so.6"),
        ("<unknown function>", "0x129c3c", "/lib/x86_64-linux-gnu/libc.so.6"),
    ]


def outer_frames() -> list[tuple[str, str, str]]:
    return [
        ("c10::Error::Error(c10::SourceLocation, std::string)", "0x98", "libc10.so"),
        ("<unknown function>", "0x11b4a6e", "libtorch_cuda.so"),
        ("<unknown function>", "0xecdb4", "/lib/x86_64-linux-gnu/libstdc++.so.6"),
        ("<unknown function>", "0x9caa4", "/lib/x86_64-linux-gnu/libc.so.6"),
        ("<unknown function>", "0x129c3c", "/lib/x86_64-linux-gnu/libc.so.6"),
    ]


def c10_backtrace(
    job: Job, rank: int, func: str, file: str, line: int, frames: list[tuple[str, str, str]]
) -> str:
    bp = job.build_path()
    head = f"Exception raised from {func} at {bp}/{file}:{line} (most recent call first):"
    return "\n".join([head, *job.cxx_frames(rank, frames)]) + "\n"


def watchdog_death(job: Job, t: datetime, rank: int, pgp: str, inner_what: str) -> None:
    """`Process group watchdog thread terminated` (§1.6), `terminate called`, SIGABRT."""
    tv = job.v.t
    wd_func = "ncclCommWatchdog" if tv < (2, 8) else "run"
    if tv <= (2, 0):
        job.worker(t, rank, "terminate called after throwing an instance of 'std::runtime_error'")
        job.worker(t, rank, f"  what():  {inner_what.rstrip(chr(10))}")
        return
    if tv <= (2, 2):
        exit_msg = f"{pgp}NCCL watchdog thread terminated with exception: {inner_what}"
    else:
        exit_msg = f"{pgp}Process group watchdog thread terminated with exception: {inner_what}"
    job.cpp(t, rank, "E", "ProcessGroupNCCL.cpp", job.pgl("wdterm"), exit_msg)
    outer = c10_backtrace(
        job,
        rank,
        wd_func,
        "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
        job.pgl("wdterm") + 4,
        outer_frames(),
    )
    tt = t + ms(3)
    job.worker(tt, rank, "terminate called after throwing an instance of 'c10::DistBackendError'")
    job.worker(tt, rank, f"  what():  {exit_msg}\n{outer}".rstrip("\n"))


def watchdog_timeout(
    job: Job,
    t: datetime,
    rank: int,
    seq: int,
    op: str,
    nin: int,
    nout: int,
    last_enq: int,
    last_done: int,
    *,
    ran_ms: int,
    timeout_ms: int = 600000,
    pg: tuple[int, int, str] = (0, 0, "default_pg"),
    group_rank: int | None = None,
) -> None:
    """The full per-rank timeout cascade of reference §1.3 – §1.6 for this torch version."""
    tv = job.v.t
    gr = rank if group_rank is None else group_rank
    pgp = job.pg_prefix(rank, pg[0], pg[1], pg[2], gr)
    wp = f"[Rank {gr}] "
    work = job.work(seq, op, nin, nout, timeout_ms)
    body = (
        f"{wp}Watchdog caught collective operation timeout: {work} ran for {ran_ms} "
        "milliseconds before timing out."
    )
    job.cpp(t, rank, "E", "ProcessGroupNCCL.cpp", job.pgl("timeout"), body)
    if (2, 3) <= tv <= (2, 3):
        job.cpp(
            t,
            rank,
            "E",
            "ProcessGroupNCCL.cpp",
            job.pgl("summary"),
            f"{pgp}Timeout at NCCL work: {seq}, last enqueued NCCL work: {last_enq}, "
            f"last completed NCCL work: {last_done}.",
        )
    elif (2, 4) <= tv <= (2, 5):
        job.cpp(
            t,
            rank,
            "E",
            "ProcessGroupNCCL.cpp",
            job.pgl("summary"),
            f"{pgp}Exception (either an error or timeout) detected by watchdog at work: "
            f"{seq}, last enqueued NCCL work: {last_enq}, last completed NCCL work: "
            f"{last_done}.",
        )
    elif tv >= (2, 6):
        job.cpp(
            t,
            rank,
            "E",
            "ProcessGroupNCCL.cpp",
            job.pgl("summary"),
            f"{pgp} failure detected by watchdog at work sequence id: {seq} PG status: "
            f"last enqueued work: {last_enq}, last completed work: {last_done}",
        )
        job.cpp(t, rank, "E", "ProcessGroupNCCL.cpp", job.pgl("stack"), FR_MISSING)
    hp = wp if tv >= (2, 3) else ""
    job.cpp(t, rank, "E", "ProcessGroupNCCL.cpp", job.pgl("handle"), hp + HANDLE1)
    job.cpp(t, rank, "E", "ProcessGroupNCCL.cpp", job.pgl("handle2"), hp + HANDLE2)
    if tv <= (2, 0):
        watchdog_death(job, t + ms(2), rank, pgp, body)
        return
    inner = (
        body
        + "\n"
        + c10_backtrace(
            job,
            rank,
            "checkTimeout",
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            job.pgl("timeout") + 3,
            checktimeout_frames(job),
        )
    )
    watchdog_death(job, t + ms(2), rank, pgp, inner)


def nccl_error_text(job: Job, err: str, detail: str, last: str) -> str:
    return f"NCCL error: {err}, NCCL version {job.v.nccl}\n{detail}\nLast error:\n{last}"


def async_nccl_error(
    job: Job,
    t: datetime,
    rank: int,
    seq: int,
    op: str,
    nin: int,
    nout: int,
    text: str,
    *,
    pg: tuple[int, int, str],
    group_rank: int,
) -> None:
    """Watchdog finds an asynchronous NCCL error (§1.9) and tears the process down."""
    pgp = job.pg_prefix(rank, pg[0], pg[1], pg[2], group_rank)
    work = job.work(seq, op, nin, nout, 600000)
    what = (
        text
        + "\n"
        + c10_backtrace(
            job,
            rank,
            "checkForNCCLErrorsInternal",
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            job.pgl("async") + 217,
            [
                ("c10::Error::Error(c10::SourceLocation, std::string)", "0x98", "libc10.so"),
                (
                    "c10d::ProcessGroupNCCL::checkForNCCLErrorsInternal(std::shared_ptr<c10d::NCCLComm>"
                    "&)",
                    "0x2d9",
                    "libtorch_cuda.so",
                ),
                (
                    "c10d::ProcessGroupNCCL::WorkNCCL::checkAndSetException()",
                    "0x7b",
                    "libtorch_cuda.so",
                ),
                ("c10d::ProcessGroupNCCL::watchdogHandler()", "0x213", "libtorch_cuda.so"),
                ("c10d::ProcessGroupNCCL::ncclCommWatchdog()", "0x14d", "libtorch_cuda.so"),
                ("<unknown function>", "0xecdb4", "/lib/x86_64-linux-gnu/libstdc++.so.6"),
                ("<unknown function>", "0x9caa4", "/lib/x86_64-linux-gnu/libc.so.6"),
                ("<unknown function>", "0x129c3c", "/lib/x86_64-linux-gnu/libc.so.6"),
            ],
        )
    )
    job.cpp(
        t,
        rank,
        "E",
        "ProcessGroupNCCL.cpp",
        job.pgl("async"),
        f"[Rank {group_rank}] Collective {work} raised the following async exception: {what}",
    )
    wp = f"[Rank {group_rank}] "
    job.cpp(t, rank, "E", "ProcessGroupNCCL.cpp", job.pgl("handle"), wp + HANDLE1)
    job.cpp(t, rank, "E", "ProcessGroupNCCL.cpp", job.pgl("handle2"), wp + HANDLE2)
    watchdog_death(job, t + ms(2), rank, pgp, what)


def destruct_warning(job: Job, t: datetime, rank: int) -> None:
    if job.v.t >= (2, 4):
        job.cpp(t, rank, "W", "ProcessGroupNCCL.cpp", job.pgl("destruct"), DESTRUCT_WARN)


# Megatron training-loop frames (Python 3.11+ carets are derived by Job.frame)
def megatron_train_frames(job: Job) -> list[str]:
    md = MEGATRON_DIR
    m = job.v.m
    tr = f"{md}/megatron/training/training.py" if m >= (0, 6) else f"{md}/megatron/training.py"
    out = ["Traceback (most recent call last):"]
    out += job.frame(f"{md}/pretrain_gpt.py", 349 if m >= (0, 10) else 243, "<module>", "pretrain(")
    out += job.frame(
        tr,
        878 if m >= (0, 10) else 261,
        "pretrain",
        "iteration, num_floating_point_operations_so_far = train(",
    )
    out += job.frame(tr, 2101 if m >= (0, 10) else 1045, "train", ") = train_step(")
    out += job.frame(
        tr, 1241 if m >= (0, 10) else 571, "train_step", "losses_reduced = forward_backward_func("
    )
    sched = f"{md}/megatron/core/pipeline_parallel/schedules.py"
    out += job.frame(
        sched, 500, "forward_backward_no_pipelining", "output_tensor, num_tokens = forward_step("
    )
    out += job.frame(
        sched,
        289,
        "forward_step",
        "output_tensor, loss_func = forward_step_func(data_iterator, model)",
    )
    return out


def module_frames(job: Job) -> list[str]:
    mod = f"{job.sp}/torch/nn/modules/module.py"
    out = job.frame(mod, 1751, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)")
    out += job.frame(mod, 1762, "_call_impl", "return forward_call(*args, **kwargs)")
    return out


# --------------------------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------------------------


def std_batch(job: Job, extra: list[str] | None = None) -> list[str]:
    return [
        f"Job {job.jobid} on {job.nnodes} nodes: {hostlist(job)}",
        f"MASTER_ADDR={job.hosts[0]} MASTER_PORT=29500 NNODES={job.nnodes} "
        f"GPUS_PER_NODE={job.gpn} WORLD_SIZE={job.world}",
        *(extra or []),
    ]


def dp_groups(job: Job, tp: int) -> dict[int, tuple[int, int, int]]:
    """rank -> (pg_local_id, pg_guid, group_rank) of its data-parallel group (TP-major)."""
    return {r: (2, 2 + r % tp, r // tp) for r in range(job.world)}


def timeouts_for(
    job: Job,
    ranks: list[int],
    t: datetime,
    seq: int,
    op: str,
    nin: int,
    nout: int,
    *,
    tp: int = 1,
    desc: str = "DATA_PARALLEL_GROUP_WITH_CP",
    default_pg: bool = False,
    step_ms: float = 37.0,
) -> None:
    groups = dp_groups(job, tp)
    for i, r in enumerate(ranks):
        tr = t + ms(step_ms * i + 3 * (r % 5))
        ran = 600000 + 11 + int(step_ms * i) % 97
        if default_pg:
            watchdog_timeout(job, tr, r, seq, op, nin, nout, seq, seq - 1, ran_ms=ran)
        else:
            pid, guid, gr = groups[r]
            watchdog_timeout(
                job,
                tr,
                r,
                seq,
                op,
                nin,
                nout,
                seq,
                seq - 1,
                ran_ms=ran,
                pg=(pid, guid, desc),
                group_rank=gr,
            )


def s_cuda_oom_cascade() -> tuple[Job, Meta]:
    v = Versions("2.6.0", "2.21.5", "12.4", "core_v0.12.0", "23.02.7")
    job = Job(
        "cuda-oom-cascade", 48213, 2, 4, v, 101, datetime(2025, 12, 2, 15, 34, 51), "combined"
    )
    tr = Train(tp=2, nccl_debug="INFO", env_warn=True, tflops=412.6)
    t_start = job.start + ms(72_000)
    t_oom = t_start + ms(57 * 8123.4 + 2100)
    prelude(job, job.start, tr, t_oom, batch_lines=std_batch(job))
    # rank 5 (node 1, local rank 1): OOM in the loss computation, 2.4+ template, [rank5]: prefix
    r = 5
    md = MEGATRON_DIR
    tb = megatron_train_frames(job)
    tb += job.frame(
        f"{md}/pretrain_gpt.py",
        279,
        "forward_step",
        "output_tensor = model(tokens, position_ids, attention_mask, labels=labels, "
        "loss_mask=loss_mask)",
    )
    tb += module_frames(job)
    tb += job.frame(
        f"{md}/megatron/core/models/gpt/gpt_model.py",
        358,
        "forward",
        "loss = self.compute_language_model_loss(labels, logits)",
    )
    tb += job.frame(
        f"{md}/megatron/core/models/common/language_module/language_module.py",
        93,
        "compute_language_model_loss",
        "loss = tensor_parallel.vocab_parallel_cross_entropy(logits, labels)",
    )
    tb += job.frame(
        f"{md}/megatron/core/tensor_parallel/cross_entropy.py",
        232,
        "vocab_parallel_cross_entropy",
        "return _VocabParallelCrossEntropy.apply(vocab_parallel_logits, target, label_smoothing)",
    )
    tb += job.frame(
        f"{job.sp}/torch/autograd/function.py",
        575,
        "apply",
        "return super().apply(*args, **kwargs)  # type: ignore[misc]",
    )
    tb += job.frame(
        f"{md}/megatron/core/tensor_parallel/cross_entropy.py",
        139,
        "forward",
        "vocab_parallel_logits, logits_max = VocabParallelCrossEntropy.calculate_logits_max(",
    )
    tb += job.frame(
        f"{md}/megatron/core/tensor_parallel/cross_entropy.py",
        27,
        "calculate_logits_max",
        "vocab_parallel_logits = vocab_parallel_logits.float()",
    )
    tb.append(
        "torch.OutOfMemoryError: "
        + oom_text(v, "7.82 GiB", 1, "79.10 GiB", "3.21 GiB", "75.87 GiB", "68.49 GiB", "5.96 GiB")
    )
    job.traceback(t_oom, r, tb)
    destruct_warning(job, t_oom + ms(910), r)
    # node 1 agent: rank 5 exited 1, SIGTERM to the siblings
    t_det1 = t_oom + ms(1530)
    job.node_failure(t_det1, 1, [Failure(5, 1, 1, job.rpid(5))], [0, 2, 3])
    job.srun_exit(t_det1 + ms(1100), 1, "Exited with exit code 1")
    # node 0: ranks 0-3 wait in the DP reduce-scatter with the dead node's ranks
    t_to = t_oom + ms(599_480)
    timeouts_for(job, [2, 0, 3, 1], t_to, 1147, "_REDUCE_SCATTER_BASE", 218103808, 54525952, tp=2)
    t_det0 = t_to + ms(1210)
    fails = [Failure(r, r, -6, job.rpid(r)) for r in (0, 2, 3)]
    job.node_failure(t_det0, 0, fails, [1])
    job.srun_exit(t_det0 + ms(1900), 0, "Exited with exit code 1")
    meta = Meta(
        "cuda_oom",
        5,
        job.hosts[1],
        "Rank 5 (gpu-node-002, local rank 1) ran out of GPU memory (tried to allocate 7.82 GiB "
        "in the fp32 cast of the vocab-parallel logits); everything after is a consequence.",
        [
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
        "The OOM traceback (2.4+ template, every line prefixed `[rank5]: ` by the 2.4+ "
        "excepthook) is the earliest non-collective error. Node 1's torchrun SIGTERMs ranks 4, 6, "
        "7 within ~1.5 s, so only node 0's ranks 0-3 reach the 10-minute watchdog timeout on "
        "their data-parallel group (group ranks in `[Rank N]`, global ranks in `[rankN]:`). "
        "Node 0's ChildFailedError names rank 0 (SIGABRT) as its root cause, a symptom. Rule: "
        "§8 precedence + §1.12 RC rule (1): an earlier non-NCCL error beats every timeout.",
        {
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


def s_pure_hang() -> tuple[Job, Meta]:
    v = Versions("2.5.1", "2.21.5", "12.4", "core_v0.11.0", "24.05.4")
    job = Job("pure-hang", 52007, 2, 4, v, 202, datetime(2025, 8, 8, 4, 11, 3), "split", tee=False)
    tr = Train(tp=1, extra_args={"exit_duration_in_mins": 230})
    t_hang = job.start + ms(72_000 + 3961 * 1012.0)
    prelude(
        job,
        job.start,
        Train(tp=1, ms_per_it=1012.0, extra_args=tr.extra_args, tflops=388.0),
        t_hang,
        batch_lines=std_batch(job),
    )
    seq = 3962
    others = [0, 1, 2, 3, 4, 5, 7]
    t_to = t_hang + ms(600_000)
    for i, r in enumerate(others):
        watchdog_timeout(
            job,
            t_to + ms(23 * i + 5 * r),
            r,
            seq,
            "ALLREDUCE",
            1,
            1,
            seq,
            seq - 1,
            ran_ms=600000 + 23 * i + 9,
        )
    t_d1 = t_to + ms(900)
    job.node_failure(t_d1, 1, [Failure(r, r - 4, -6, job.rpid(r)) for r in (4, 5, 7)], [2])
    t_d0 = t_to + ms(1040)
    job.node_failure(t_d0, 0, [Failure(r, r, -6, job.rpid(r)) for r in (0, 2)], [1, 3])
    job.srun_exit(t_d1 + ms(2300), 1, "Exited with exit code 1")
    job.srun_exit(t_d0 + ms(2600), 0, "Exited with exit code 1")
    meta = Meta(
        "collective_timeout",
        6,
        job.hosts[1],
        "Rank 6 never joined ALLREDUCE SeqNum 3962 on the default process group; the seven "
        "other ranks waited 10 minutes and their NCCL watchdogs aborted them.",
        [
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "c10/util/Logging.cpp",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "torch/_logging/_internal.py",
            "src/srun/launch.c",
            "src/common/write_labelled_message.c",
            "megatron/training/training.py",
        ],
        "Every rank except 6 prints `Watchdog caught collective operation timeout` for the same "
        "WorkNCCL(SeqNum=3962, OpType=ALLREDUCE, NumelIn=1, NumelOut=1) and the 2.4-2.5 summary "
        "`Exception (either an error or timeout) detected by watchdog at work: 3962, last "
        "enqueued NCCL work: 3962, last completed NCCL work: 3961.`. Rank 6 prints nothing and "
        "dies by the agent's SIGTERM (it is not in the ChildFailedError block). No earlier "
        "error anywhere. Rule: §1.3 interpretation + §1.12 RC rule (2), the rank absent from the "
        "timeout list. Split .out/.err with `srun --label` but no torchrun tee: per-rank "
        "attribution only from `[rankN]:`.",
        {
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


def s_hang_lowest_enqueued() -> tuple[Job, Meta]:
    v = Versions("2.7.1", "2.26.2", "12.8", "core_v0.14.0", "24.11.1")
    job = Job(
        "hang-lowest-enqueued",
        60441,
        2,
        8,
        v,
        303,
        datetime(2026, 1, 5, 22, 40, 12),
        "logdir",
        label=False,
        tee=False,
    )
    t_hang = job.start + ms(72_000 + 811 * 2220.0)
    prelude(
        job,
        job.start,
        Train(tp=1, ms_per_it=2220.0, nccl_debug="INFO"),
        t_hang,
        batch_lines=std_batch(job),
    )
    seq = 812
    t_to = t_hang + ms(600_000)
    order = [9, 0, 1, 2, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15]
    for i, r in enumerate(order):
        watchdog_timeout(
            job,
            t_to + ms(17 * i + 2 * r),
            r,
            seq,
            "ALLREDUCE",
            1,
            1,
            seq,
            seq - 1,
            ran_ms=600000 + 17 * i + 4,
        )
    # rank 3 never enqueued 812: its heartbeat monitor sees the TCPStore dump signal (§1.7)
    pgp = job.pg_prefix(3)
    t3 = t_to + ms(350)
    job.cpp(
        t3,
        3,
        "E",
        "ProcessGroupNCCL.cpp",
        1439,
        f"{pgp}Observed flight recorder dump signal from another rank via TCPStore.",
    )
    job.cpp(
        t3 + ms(1),
        3,
        "E",
        "ProcessGroupNCCL.cpp",
        1492,
        f"{pgp}Received a dump signal due to a collective timeout from  rank 9 and we will "
        "try our best to dump the debug info. Last enqueued NCCL work: 811, last completed "
        f"NCCL work: 811.{DUMP_REASON}",
    )
    t_d0 = t_to + ms(930)
    job.node_failure(t_d0, 0, [Failure(r, r, -6, job.rpid(r)) for r in (0, 1, 2, 4, 5, 6, 7)], [3])
    t_d1 = t_to + ms(880)
    job.node_failure(t_d1, 1, [Failure(r, r - 8, -6, job.rpid(r)) for r in range(8, 16)], [])
    job.srun_exit(t_d1 + ms(2200), 1, "Exited with exit code 1")
    job.srun_exit(t_d0 + ms(2500), 0, "Exited with exit code 1")
    meta = Meta(
        "collective_timeout",
        3,
        job.hosts[0],
        "Rank 3 never issued collective #812 on the default process group (its last enqueued "
        "work is 811 while all 15 other ranks enqueued 812); the others timed out waiting.",
        [
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "c10/util/Logging.cpp",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "torch/_logging/_internal.py",
            "src/debug.cc",
            "src/srun/launch.c",
        ],
        "15 ranks print the 2.6+ summary `failure detected by watchdog at work sequence id: 812 "
        "PG status: last enqueued work: 812, last completed work: 811`. Rank 3 has no pending "
        "work (a collective it never issued cannot time out on it), so the lower `last "
        "enqueued` value appears in its heartbeat-monitor line `Received a dump signal due to a "
        "collective timeout from  rank 9 ... Last enqueued NCCL work: 811, last completed NCCL "
        "work: 811.` (§1.7). The dump source `rank 9` is only the first watchdog to fire, not "
        "the culprit. Rule: §1.4 reading (lowest last-enqueued) and §1.12 RC rule (2). Layout: "
        "torchrun `--log-dir` tree with `--redirects 3`, no tee; the sbatch output only holds "
        "agent and srun lines.",
        {
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


def s_collective_mismatch() -> tuple[Job, Meta]:
    v = Versions("2.9.1", "2.27.3", "12.8", "core_v0.14.0", "24.05.4")
    job = Job(
        "collective-mismatch", 71020, 2, 4, v, 404, datetime(2025, 10, 21, 9, 2, 44), "combined"
    )
    t_hang = job.start + ms(72_000 + 2209 * 1630.0)
    prelude(
        job,
        job.start,
        Train(tp=1, ms_per_it=1630.0, env_warn=True),
        t_hang,
        batch_lines=std_batch(job),
    )
    seq = 2210
    t_to = t_hang + ms(600_000)
    for i, r in enumerate([0, 1, 3, 4, 5, 6, 7, 2]):
        op, nout = ("ALLGATHER", 8) if r == 2 else ("ALLREDUCE", 1)
        watchdog_timeout(
            job,
            t_to + ms(29 * i + r),
            r,
            seq,
            op,
            1,
            nout,
            seq,
            seq - 1,
            ran_ms=600000 + 29 * i + 3,
        )
    t_d0 = t_to + ms(1100)
    job.node_failure(t_d0, 0, [Failure(r, r, -6, job.rpid(r)) for r in (0, 1, 3)], [2])
    t_d1 = t_to + ms(1180)
    job.node_failure(t_d1, 1, [Failure(r, r - 4, -6, job.rpid(r)) for r in (4, 5, 6, 7)], [])
    job.srun_exit(t_d0 + ms(2100), 0, "Exited with exit code 1")
    job.srun_exit(t_d1 + ms(2150), 1, "Exited with exit code 1")
    meta = Meta(
        "collective_timeout",
        2,
        job.hosts[0],
        "Collective mismatch at SeqNum 2210 on the default process group: rank 2 issued "
        "ALLGATHER while every other rank issued ALLREDUCE, so the collective never completed.",
        [
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "torch/csrc/distributed/c10d/Work.hpp",
            "c10/util/Logging.cpp",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "src/srun/launch.c",
            "src/common/write_labelled_message.c",
        ],
        "All eight ranks time out on SeqNum 2210 with identical last enqueued/completed "
        "(2210/2209), so the lowest-enqueued rule does not separate them; the WorkNCCL "
        "descriptions do: rank 2's is OpType=ALLGATHER, NumelOut=8 against ALLREDUCE, "
        "NumelOut=1 on the seven others. Rule: §1.2 (OpType/Numel fields), §1.7 desync reading "
        "('wrong sizes used across ranks, the order of collectives is not same'). Rank 2 is "
        "also the last to report, so 'earliest timeout' would point elsewhere.",
        {
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


def s_ib_completion() -> tuple[Job, Meta]:
    v = Versions("2.5.1", "2.21.5", "12.4", "core_v0.11.0", "23.11.10", python="3.10")
    job = Job(
        "ib-completion", 61217, 4, 4, v, 505, datetime(2025, 9, 30, 3, 1, 7), "split", tee=False
    )
    t_err = job.start + ms(72_000 + 731 * 1530.0)
    prelude(
        job,
        job.start,
        Train(tp=2, ms_per_it=1530.0, nccl_debug="WARN"),
        t_err,
        batch_lines=std_batch(job, ["srun --kill-on-bad-exit=1 --label ..."]),
    )
    r, peer = 6, 10
    groups = dp_groups(job, 2)
    wc = (
        f"NET/IB : Got completion from peer {job.ips[2]}<56412> with status=12 opcode=0 len=0 "
        f"vendor err 129 (Send) localGid ::ffff:{job.ips[1]} remoteGids::ffff:{job.ips[2]}"
    )
    job.nccl_warn(t_err, r, "transport/net_ib.cc", 1696, wc, tid=job.rpid(r) + 519)
    text = nccl_error_text(
        job,
        "remote process exited or there was a network error",
        "ncclRemoteError: A call failed possibly due to a network error or a "
        "remote process exiting prematurely.",
        wc,
    )
    pid, guid, gr = groups[r]
    async_nccl_error(
        job,
        t_err + ms(412),
        r,
        5848,
        "_REDUCE_SCATTER_BASE",
        109051904,
        13631488,
        text,
        pg=(pid, guid, "DATA_PARALLEL_GROUP_WITH_CP"),
        group_rank=gr,
    )
    t_d1 = t_err + ms(1290)
    job.node_failure(t_d1, 1, [Failure(r, 2, -6, job.rpid(r))], [0, 1, 3])
    # the peer on node 2 sees its QP flushed after rank 6's side tore down
    wc2 = (
        f"NET/IB : Got completion from peer {job.ips[1]}<50118> with status=5 opcode=128 "
        f"len=0 vendor err 249 (Recv) localGid ::ffff:{job.ips[2]} remoteGids::ffff:"
        f"{job.ips[1]}"
    )
    t_p = t_err + ms(1370)
    job.nccl_warn(t_p, peer, "transport/net_ib.cc", 1696, wc2, tid=job.rpid(peer) + 522)
    pid, guid, gr = groups[peer]
    async_nccl_error(
        job,
        t_p + ms(401),
        peer,
        5848,
        "_REDUCE_SCATTER_BASE",
        109051904,
        13631488,
        nccl_error_text(
            job,
            "remote process exited or there was a network error",
            "ncclRemoteError: A call failed possibly due to a network "
            "error or a remote process exiting prematurely.",
            wc2,
        ),
        pg=(pid, guid, "DATA_PARALLEL_GROUP_WITH_CP"),
        group_rank=gr,
    )
    job.srun_exit(t_d1 + ms(1050), 1, "Exited with exit code 1")
    t_d2 = t_p + ms(1300)
    job.node_failure(t_d2, 2, [Failure(peer, 2, -6, job.rpid(peer))], [0, 1, 3])
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
        job.agent_sigterm(t_kill + ms(120 + 30 * n), n, range(4))
    meta = Meta(
        "network",
        6,
        job.hosts[1],
        "InfiniBand transport retry counter exceeded (status=12) on rank 6's link to "
        "gpu-node-003 during a data-parallel reduce-scatter; the peers failed because of it.",
        [
            "src/transport/net_ib.cc",
            "src/debug.cc",
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "torch/csrc/distributed/c10d/NCCLUtils.cpp",
            "torch/distributed/elastic/agent/server/api.py",
            "torch/distributed/elastic/multiprocessing/api.py",
            "src/slurmd/slurmstepd/req.c",
            "src/srun/launch.c",
        ],
        "NCCL 2.21 prints the WARN without a timestamp (`NET/IB : ` with a space, `status=12`, "
        "`remoteGids` without a space) after a blank line. Rank 6's watchdog reports it as an "
        "async ncclRemoteError whose `Last error:` repeats the WARN. Rank 10 on the far side then "
        "sees status=5 (IBV_WC_WR_FLUSH_ERR, a follow-on) and the same DistBackendError. "
        "`--kill-on-bad-exit=1` makes srun cancel the step, so nodes 0 and 3 end with "
        "`Received Signals.SIGTERM death signal` (torch 2.5 + Python 3.10) and SignalException. "
        "Rule: §5.2 (status 12 = RC on the reporting rank's link, status 5 = follow-on) and §8 "
        "(network error naming a peer beats the signal/cancel symptoms).",
        {
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


def s_illegal_memory_access() -> tuple[Job, Meta]:
    v = Versions("2.8.0", "2.27.3", "12.8", "core_v0.14.0", "24.05.4")
    job = Job(
        "illegal-memory-access",
        83310,
        3,
        4,
        v,
        606,
        datetime(2025, 11, 14, 18, 20, 5),
        "logdir",
        tee=False,
    )
    tp = 4
    t_err = job.start + ms(72_000 + 4310 * 2870.0)
    prelude(job, job.start, Train(tp=tp, ms_per_it=2870.0), t_err, batch_lines=std_batch(job))
    r = 9
    err = cuda_error_text(v, "an illegal memory access was encountered", "cudaErrorIllegalAddress")
    bt = c10_backtrace(
        job,
        r,
        "c10_cuda_check_implementation",
        "c10/cuda/CUDAException.cpp",
        42,
        [
            ("c10::Error::Error(c10::SourceLocation, std::string)", "0x98", "libc10.so"),
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
            ("<unknown function>", "0xecdb4", "/lib/x86_64-linux-gnu/libstdc++.so.6"),
            ("<unknown function>", "0x9caa4", "/lib/x86_64-linux-gnu/libc.so.6"),
            ("<unknown function>", "0x129c3c", "/lib/x86_64-linux-gnu/libc.so.6"),
        ],
    )
    pgp = job.pg_prefix(r, 3, 3, "TENSOR_MODEL_PARALLEL_GROUP", 1)
    watchdog_death(job, t_err, r, pgp, err + "\n" + bt)
    tb = megatron_train_frames(job)[:1] + megatron_train_frames(job)[1:-2]
    sched = f"{MEGATRON_DIR}/megatron/core/pipeline_parallel/schedules.py"
    tb += job.frame(
        sched,
        522,
        "forward_backward_no_pipelining",
        "backward_step(input_tensor, output_tensor, output_tensor_grad, model_type, config)",
    )
    tb += job.frame(
        sched, 386, "backward_step", "custom_backward(output_tensor[0], output_tensor_grad[0])"
    )
    tb += job.frame(sched, 147, "custom_backward", "Variable._execution_engine.run_backward(")
    tb.append("torch.AcceleratorError: " + err)
    job.traceback(t_err + ms(31), r, tb)
    t_d2 = t_err + ms(870)
    job.node_failure(t_d2, 2, [Failure(r, 1, -6, job.rpid(r))], [0, 2, 3])
    job.srun_exit(t_d2 + ms(1400), 2, "Exited with exit code 1")
    t_to = t_err + ms(599_700)
    timeouts_for(
        job, list(range(8)), t_to, 17241, "_REDUCE_SCATTER_BASE", 100663296, 33554432, tp=tp
    )
    for n in (0, 1):
        t_d = t_to + ms(1000 + 90 * n)
        job.node_failure(
            t_d, n, [Failure(job.rank(n, lr), lr, -6, job.pid[n][lr]) for lr in range(4)], []
        )
        job.srun_exit(t_d + ms(2000), n, "Exited with exit code 1")
    meta = Meta(
        "cuda_error",
        9,
        job.hosts[2],
        "CUDA illegal memory access on rank 9 (gpu-node-003, local rank 1), first seen by its "
        "NCCL watchdog and then raised as torch.AcceleratorError in backward.",
        [
            "c10/cuda/CUDAException.cpp",
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "torch/distributed/distributed_c10d.py",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "src/srun/launch.c",
        ],
        "torch 2.8: CUDA error text with the 2.4-2.8 trailer (no period after "
        "CUDA_LAUNCH_BLOCKING=1, trailing newline), class torch.AcceleratorError (2.8+). The "
        "watchdog line on rank 9's TP group comes first (PG rank 1), then the Python traceback, "
        "then `terminate called ... c10::DistBackendError` (SIGABRT). Ranks 0-7 time out 10 "
        "minutes later on their data-parallel groups. Rule: §1.6 (the CUDA error inside the "
        "watchdog exception is the RC) and §8 (CUDA error beats timeouts).",
        {
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


def s_xid79() -> tuple[Job, Meta]:
    v = Versions("2.4.1", "2.20.5", "12.4", "core_v0.8.0", "23.11.10")
    job = Job(
        "xid79",
        33211,
        2,
        4,
        v,
        707,
        datetime(2025, 10, 7, 1, 12, 40),
        "combined",
        bus_ids=["01000", "41000", "81000", "c1000"],
    )
    t_x = job.start + ms(72_000 + 15022 * 812.0)
    prelude(
        job,
        job.start,
        Train(tp=1, ms_per_it=812.0, nccl_debug="INFO"),
        t_x,
        batch_lines=std_batch(
            job,
            [
                "starting GPU kernel-log watcher: srun --overlap --ntasks-per-node=1 --label "
                "dmesg -T -w --level=err,warn"
            ],
        ),
    )
    w = 1
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
        job.add(tx + ms(300), WATCH, "out", f"{dmesg_ts(tx)} {ln}", node=w)
    r = 5  # node 1, local rank 1 = busId 41000
    err = cuda_error_text(v, "unspecified launch failure", "cudaErrorLaunchFailure")
    bt = c10_backtrace(
        job,
        r,
        "c10_cuda_check_implementation",
        "c10/cuda/CUDAException.cpp",
        43,
        [
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
    watchdog_death(job, t_e, r, job.pg_prefix(r), err + "\n" + bt)
    t_d1 = t_e + ms(700)
    job.agent_close(t_d1, 1, [0, 2, 3])
    job.agent_log(
        t_d1 + ms(30_010),
        1,
        "WARNING",
        "close",
        "torch/distributed/elastic/multiprocessing/api.py",
        "torch.distributed.elastic.multiprocessing.api",
        f"Unable to shutdown process {job.pid[1][2]} via 15, forcefully exiting via 9",
        delta=18,
    )
    f = Failure(r, 1, -6, job.rpid(r))
    job.agent_failed(t_d1 + ms(30_300), 1, f)
    job.child_failed(t_d1 + ms(30_340), 1, [f], t_d1)
    job.srun_exit(t_d1 + ms(31_400), 1, "Exited with exit code 1")
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
    job.agent_sigterm(t_nf + ms(140), 0, range(4))
    meta = Meta(
        "hardware",
        5,
        job.hosts[1],
        "GPU 0000:41:00 on gpu-node-002 fell off the bus (Xid 79); rank 5, the rank on that "
        "GPU, failed with `unspecified launch failure` and Slurm then lost the node.",
        [
            "kernel_rc.c (open-gpu-kernel-modules, R535)",
            "osapi.c",
            "c10/cuda/CUDAException.cpp",
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "src/slurmd/slurmstepd/req.c",
            "src/srun/srun_job.c",
            "src/api/step_launch.c",
            "torch/distributed/elastic/multiprocessing/api.py",
        ],
        "The job captured the node's kernel log through a background `srun --overlap --label "
        "dmesg -T -w` watcher (label `1:` = gpu-node-002). The Xid line uses the R515-R565 form "
        "with `pid='<unknown>', name=<unknown>`. NCCL INFO `busId 41000` maps PCI 0000:41:00 to "
        "local rank 1 = global rank 5, which fails 1.6 s later (2.4 PG prefix `[PG 0 "
        "(default_pg) Rank 5]`, CUDA trailer without period). The JOB banner says NODE FAILURE. "
        "Rule: §8 precedence, hardware (Xid 79, node failure) beats everything; §7.2 table.",
        {
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


def init_frames(job: Job) -> list[str]:
    md = MEGATRON_DIR
    tr = (
        f"{md}/megatron/training/training.py" if job.v.m >= (0, 6) else f"{md}/megatron/training.py"
    )
    ini = f"{md}/megatron/training/initialize.py"
    out = ["Traceback (most recent call last):"]
    out += job.frame(
        f"{md}/pretrain_gpt.py", 243 if job.v.m < (0, 10) else 349, "<module>", "pretrain("
    )
    out += job.frame(tr, 223 if job.v.m < (0, 10) else 647, "pretrain", "initialize_megatron(")
    return out + job.frame(
        ini,
        77 if job.v.m < (0, 10) else 86,
        "initialize_megatron",
        "validate_args(args, args_defaults)",
    )


def s_duplicate_gpu() -> tuple[Job, Meta]:
    v = Versions("2.3.1", "2.20.5", "12.1", "core_v0.7.0", "23.02.7", python="3.11")
    job = Job("duplicate-gpu", 55120, 2, 4, v, 808, datetime(2025, 3, 17, 11, 5, 30), "combined")
    tr = Train(tp=1, nccl_debug="WARN")
    batch = std_batch(job, ["srun --kill-on-bad-exit=1 --label ..."])
    for i, ln in enumerate(batch):
        job.batch(job.start + ms(i), ln)
    for n in range(2):
        job.agent_banner(job.start + ms(2100 + 37 * n), n)
    t = job.start + ms(9200)
    job.worker(t, 0, world_size_line(job, 1, 1, 1), "out")
    job.worker(t, 0, args_block(job, 1, 1, {"distributed_timeout_minutes": 10}), "out")
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
        tr_ = t_dup + ms(3 if r == 5 else 0)
        msg = f"Duplicate GPU detected : rank {r} and rank {other} both on CUDA device 18000"
        job.nccl_warn(tr_, r, "init.cc", 871, msg, dev=0)
        tb = ["Traceback (most recent call last):"]
        tb += job.frame(f"{md}/pretrain_gpt.py", 243, "<module>", "pretrain(")
        tb += job.frame(
            f"{md}/megatron/training/training.py", 223, "pretrain", "initialize_megatron("
        )
        tb += job.frame(
            f"{md}/megatron/training/initialize.py",
            97,
            "initialize_megatron",
            "_compile_dependencies()",
        )
        tb += job.frame(
            f"{md}/megatron/training/initialize.py",
            164,
            "_compile_dependencies",
            "torch.distributed.barrier()",
        )
        tb += job.frame(
            f"{job.sp}/torch/distributed/c10d_logger.py",
            75,
            "wrapper",
            "return func(*args, **kwargs)",
        )
        tb += job.frame(
            f"{job.sp}/torch/distributed/distributed_c10d.py",
            3696,
            "barrier",
            "work = default_pg.barrier(opts=opts)",
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
        job.traceback(tr_ + ms(60), r, tb)
    t_d1 = t_dup + ms(610)
    fails = [Failure(4, 0, 1, job.rpid(4)), Failure(5, 1, 1, job.rpid(5))]
    job.node_failure(t_d1, 1, fails, [2, 3])
    job.srun_exit(t_d1 + ms(1020), 1, "Exited with exit code 1")
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
    job.agent_sigterm(t_k + ms(110), 0, range(4))
    _ = tr
    meta = Meta(
        "nccl_error",
        -1,
        job.hosts[1],
        "Two ranks on gpu-node-002 (global ranks 4 and 5) were bound to the same GPU (CUDA "
        "device 0, busId 18000); NCCL refused to build the communicator (ncclInvalidUsage).",
        [
            "src/init.cc",
            "src/debug.cc",
            "torch/csrc/distributed/c10d/NCCLUtils.hpp",
            "torch/distributed/distributed_c10d.py",
            "torch/distributed/elastic/agent/server/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "src/srun/launch.c",
            "src/slurmd/slurmstepd/req.c",
        ],
        "Both ranks of the pair print the WARN, each naming itself first (`rank 4 and rank 5`, "
        "`rank 5 and rank 4`): the check in init.cc runs on every rank against all peers, so "
        "the message is symmetric and neither rank is more at fault. The fault is the node's "
        "rank-to-GPU binding, hence rank = -1 with the node named. torch 2.3: C++ lines carry "
        "`[rankN]:`, but Python tracebacks are not prefixed (excepthook from 2.4), so only "
        "torchrun's `[defaultN]:` tee prefix attributes them. torchrun's ChildFailedError names "
        "rank 4 as 'Root Cause' only because both failures share one detection second and rank "
        "4 comes first in dict order. Rule: §5.5 (Duplicate GPU = RC, invalid usage), §1.9 "
        "(`Last error:` carries the WARN body), categories.md (null rank when no single rank).",
        {
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


def s_max_connections_tp() -> tuple[Job, Meta]:
    v = Versions("2.7.1", "2.26.2", "12.8", "core_v0.14.0", "24.05.4")
    job = Job("max-connections-tp", 90017, 2, 8, v, 909, datetime(2026, 2, 3, 8, 15, 0), "combined")
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
    for n in range(2):
        job.agent_banner(job.start + ms(2100 + 41 * n), n)
    t = job.start + ms(8800)
    job.worker(t, 0, world_size_line(job, 2, 1, 1), "out")
    md = MEGATRON_DIR
    for r in range(job.world):
        tb = init_frames(job)
        tb += job.frame(
            f"{md}/megatron/training/arguments.py",
            963,
            "validate_args",
            "assert os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS') == \"1\", \\",
        )
        tb.append("           " + "^" * 52)
        tb.append(
            "AssertionError: Using tensor model parallelism or context parallelism require "
            "setting the environment variable CUDA_DEVICE_MAX_CONNECTIONS to 1"
        )
        job.traceback(t + ms(5 + 2 * r), r, tb)
    for n in range(2):
        t_d = t + ms(700 + 40 * n)
        fails = [Failure(job.rank(n, lr), lr, 1, job.pid[n][lr]) for lr in range(8)]
        job.agent_failed(t_d, n, fails[0])
        job.child_failed(t_d + ms(40), n, fails, t_d)
        job.srun_exit(t_d + ms(1100), n, "Exited with exit code 1")
    meta = Meta(
        "cuda_device_max_connections",
        -1,
        "",
        "TP=2 on H100 (sm_90) without CUDA_DEVICE_MAX_CONNECTIONS=1: Megatron's validate_args "
        "asserts on every rank at start-up. Export CUDA_DEVICE_MAX_CONNECTIONS=1 for this job.",
        [
            "megatron/training/arguments.py",
            "megatron/training/initialize.py",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "torch/distributed/elastic/multiprocessing/tail_log.py",
            "src/srun/launch.c",
        ],
        "All 16 ranks raise the same AssertionError within milliseconds, before "
        "init_process_group (validate_args runs before _initialize_distributed), so there is no "
        "`[rankN]:` prefix; attribution comes from the srun label and `[defaultN]:`. The GPU "
        "model and compute capability come from the batch script's nvidia-smi query. Each "
        "torchrun lists all 8 local failures (exit code 1, same detection second) and calls the "
        "lowest rank its root cause. Rule: §4.1 (0.13+ AssertionError, arch < 10 and TP > 1), "
        "launch-rules CUDA_DEVICE_MAX_CONNECTIONS table, categories.md (same failure on every "
        "rank at start-up ⇒ rank null).",
        {
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


def s_fsdp_max_connections() -> tuple[Job, Meta]:
    v = Versions("2.6.0", "2.21.5", "12.6", "core_v0.12.1", "23.11.10")
    job = Job(
        "fsdp-max-connections",
        90518,
        2,
        8,
        v,
        1010,
        datetime(2025, 6, 19, 14, 2, 9),
        "split",
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
    for n in range(2):
        job.agent_banner(job.start + ms(2100 + 41 * n), n)
    t = job.start + ms(8600)
    job.worker(t, 0, world_size_line(job, 1, 1, 1), "out")
    md = MEGATRON_DIR
    tbs: dict[int, list[str]] = {}
    for r in range(job.world):
        tb = init_frames(job)
        tb += job.frame(
            f"{md}/megatron/training/arguments.py",
            626,
            "validate_args",
            "assert os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS') != \"1\", \\",
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
                    job.traceback(base + timedelta(microseconds=10 * i), rr, [tb[i]])
    for n in range(2):
        t_d = t + ms(650 + 50 * n)
        fails = [Failure(job.rank(n, lr), lr, 1, job.pid[n][lr]) for lr in range(8)]
        job.agent_failed(t_d, n, fails[0])
        job.child_failed(t_d + ms(40), n, fails, t_d)
        job.srun_exit(t_d + ms(1000), n, "Exited with exit code 1")
    meta = Meta(
        "cuda_device_max_connections",
        -1,
        "",
        "--use-torch-fsdp2 with CUDA_DEVICE_MAX_CONNECTIONS=1 exported by the batch script: "
        "Megatron asserts on every rank. Unset it (or set it > 1) for FSDP2 jobs.",
        [
            "megatron/training/arguments.py",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "src/srun/launch.c",
        ],
        "The `(sic)` assertion text `value large than one` (core_v0.12+ torch-FSDP2 branch) on "
        "all 16 ranks before any process group exists: no `[rankN]:`, no torchrun tee, only the "
        "srun node label; same-node tracebacks interleave line by line in the .err file. The "
        "0.10-0.12 world-size line keeps its missing `, ` (`sizes: Nonetensor-model-parallel`). "
        "The `+ export CUDA_DEVICE_MAX_CONNECTIONS=1` xtrace line is the fix location. Rule: "
        "§4.1 FSDP row, launch-rules table (FSDP ⇒ must not be 1), rank null (every rank).",
        {
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


def s_nan_rerun() -> tuple[Job, Meta]:
    v = Versions("2.7.1", "2.26.2", "12.8", "core_v0.14.0", "24.11.1")
    job = Job("nan-loss-rerun", 77402, 4, 4, v, 1111, datetime(2026, 4, 22, 6, 30, 0), "combined")
    ms_it = 1840.0
    t_nan = job.start + ms(72_000 + 1499 * ms_it + 900)
    prelude(
        job,
        job.start,
        Train(
            tp=1,
            ms_per_it=ms_it,
            extra_args={"rerun_mode": "validate_results", "check_for_nan_in_loss_and_grad": True},
        ),
        t_nan,
        batch_lines=std_batch(job),
    )
    job.worker(job.start + ms(72_000 + 2 * ms_it), 0, "Result validation enabled")
    r = 12
    host = job.hosts[3]
    job.worker(
        t_nan,
        r,
        "Unexpected result tensor(nan, device='cuda:0') on rank 12 at "
        "iteration #1500 invocation #1 (message='found NaN in local forward loss "
        "calculation')",
    )
    t_re = t_nan + ms(ms_it + 120)
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
        fails = [Failure(job.rank(n, lr), lr, 17, job.pid[n][lr]) for lr in range(4)]
        job.agent_failed(t_d, n, fails[0])
        job.child_failed(t_d + ms(40), n, fails, t_d)
        job.srun_exit(t_d + ms(1100), n, "Exited with exit code 1")
    meta = Meta(
        "nan_loss",
        12,
        host,
        "NaN in the forward loss on rank 12 (gpu-node-004, GPU 0) at iteration 1500; the "
        "in-place rerun gave a finite loss (possible transient/SDC error) and Megatron exited "
        "with code 17.",
        [
            "megatron/core/rerun_state_machine.py",
            "pretrain_gpt.py",
            "megatron/training/training.py",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
        ],
        "core_v0.14 defaults to --rerun-mode validate_results: first detection `Unexpected result "
        "... on rank 12 at iteration #1500 invocation #1 (message='found NaN in local forward "
        "loss calculation')` (0.14+ wording, bare logger line: Megatron installs no handler). The "
        "validated value is the 0-dim CUDA loss tensor, so it renders as `tensor(nan, "
        "device='cuda:0')`. Every rank then exits 17 (EXIT_CODE_FAILED_ON_RESULT_VALIDATION), so "
        "every ChildFailedError shows exitcode 17 and names its lowest rank — the rank must come "
        "from the Megatron line. Rule: §4.5 (rerun state machine, exit 16/17 signature).",
        {
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


def s_host_oom() -> tuple[Job, Meta]:
    v = Versions("2.5.1", "2.21.5", "12.4", "core_v0.12.0", "23.02.7")
    job = Job(
        "host-oom", 70013, 2, 4, v, 1212, datetime(2025, 5, 28, 19, 44, 18), "logdir", tee=False
    )
    t_k = job.start + ms(72_000 + 911 * 2950.0)
    prelude(
        job,
        job.start,
        Train(tp=1, ms_per_it=2950.0, env_warn=True, extra_args={"num_workers": 16}),
        t_k,
        batch_lines=std_batch(job),
    )
    r = 6
    t_d1 = t_k + ms(310)
    job.node_failure(t_d1, 1, [Failure(r, 2, -9, job.rpid(r))], [0, 1, 3])
    t_end1 = t_d1 + ms(1900)
    job.stepd(
        t_end1,
        f"Detected 1 oom_kill event in StepId={job.jobid}.0. Some of the step tasks "
        "have been OOM Killed.",
    )
    job.srun_exit(t_end1 + ms(30), 1, "Out Of Memory")
    t_to = t_k + ms(599_600)
    timeouts_for(job, [0, 1, 2, 3], t_to, 7289, "_REDUCE_SCATTER_BASE", 67108864, 8388608)
    t_d0 = t_to + ms(980)
    job.node_failure(t_d0, 0, [Failure(rr, rr, -6, job.rpid(rr)) for rr in range(4)], [])
    job.srun_exit(t_d0 + ms(2000), 0, "Exited with exit code 1")
    meta = Meta(
        "host_oom",
        6,
        job.hosts[1],
        "The kernel's cgroup OOM killer SIGKILLed rank 6 (gpu-node-002, local rank 2): host "
        "memory, not GPU memory (16 data-loader workers per rank).",
        [
            "src/plugins/task/cgroup/task_cgroup_memory.c",
            "src/srun/launch.c",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
        ],
        "Rank 6's own log just stops; the evidence is torchrun `failed (exitcode: -9) local_rank: "
        "2`, the ChildFailedError `Signal 9 (SIGKILL)`, slurmstepd's 23.02+ wording `Detected 1 "
        "oom_kill event in StepId=70013.0. Some of the step tasks have been OOM Killed.` and "
        "`srun: error: gpu-node-002: task 1: Out Of Memory`. Node 0 times out 10 minutes later. "
        "Rule: §3.2 host OOM, §6.3, §8 (oom_kill is a scheduler-class RC, beats timeouts).",
        {
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


def s_old_torch() -> tuple[Job, Meta]:
    v = Versions("1.13.1", "2.14.3", "11.7", "23.04", "22.05.9", python="3.10")
    job = Job("old-torch", 18842, 2, 4, v, 1313, datetime(2023, 5, 9, 10, 0, 4), "combined")
    ms_it = 1290.0
    t_oom = job.start + ms(72_000 + 2986 * ms_it + 500)
    prelude(
        job,
        job.start,
        Train(tp=1, ms_per_it=ms_it, gbs=256),
        t_oom,
        batch_lines=std_batch(job, ["NCCL_ASYNC_ERROR_HANDLING=1"]),
    )
    r = 2
    md = MEGATRON_DIR
    tb = megatron_train_frames(job)
    tb += job.frame(
        f"{md}/pretrain_gpt.py",
        93,
        "forward_step",
        "output_tensor = model(tokens, position_ids, attention_mask,",
    )
    tb += job.frame(
        f"{job.sp}/torch/nn/modules/module.py",
        1194,
        "_call_impl",
        "return forward_call(*input, **kwargs)",
    )
    tb += job.frame(
        f"{md}/megatron/model/transformer.py", 1268, "forward", "hidden_states = layer("
    )
    tb += job.frame(
        f"{job.sp}/torch/nn/modules/module.py",
        1194,
        "_call_impl",
        "return forward_call(*input, **kwargs)",
    )
    tb += job.frame(
        f"{md}/megatron/model/transformer.py",
        793,
        "forward",
        "mlp_output, mlp_bias = self.mlp(layernorm_output)",
    )
    tb += job.frame(
        f"{job.sp}/torch/nn/modules/module.py",
        1194,
        "_call_impl",
        "return forward_call(*input, **kwargs)",
    )
    tb += job.frame(
        f"{md}/megatron/model/transformer.py",
        108,
        "forward",
        "intermediate_parallel = self.activation_func(intermediate_parallel)",
    )
    tb.append(
        "torch.cuda.OutOfMemoryError: "
        + oom_text(v, "448.00 MiB", 2, "79.15 GiB", "301.25 MiB", "", "76.52 GiB", "", "77.93 GiB")
    )
    job.traceback(t_oom, r, tb)
    t_d0 = t_oom + ms(4900)
    job.node_failure(t_d0, 0, [Failure(r, 2, 1, job.rpid(r))], [0, 1, 3])
    job.srun_exit(t_d0 + ms(1200), 0, "Exited with exit code 1")
    t_to = t_oom + ms(599_300)
    for i, rr in enumerate([4, 5, 6, 7]):
        watchdog_timeout(
            job,
            t_to + ms(41 * i),
            rr,
            2987,
            "ALLREDUCE",
            0,
            0,
            2987,
            2986,
            ran_ms=600000 + 431 + 41 * i,
            pg=(1, 1, ""),
            group_rank=rr,
        )
    t_d1 = t_to + ms(5300)
    job.node_failure(t_d1, 1, [Failure(rr, rr - 4, -6, job.rpid(rr)) for rr in (4, 5, 6, 7)], [])
    job.srun_exit(t_d1 + ms(1300), 1, "Exited with exit code 1")
    meta = Meta(
        "cuda_oom",
        2,
        job.hosts[0],
        "Rank 2 (gpu-node-001, local rank 2) ran out of GPU memory in the MLP activation; "
        "node 1's ranks then hit the NCCL watchdog timeout on the gradient all-reduce.",
        [
            "c10/cuda/CUDACachingAllocator.cpp",
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "c10/util/Logging.cpp",
            "torch/distributed/elastic/multiprocessing/api.py",
            "torch/distributed/elastic/multiprocessing/errors/__init__.py",
            "torch/distributed/elastic/multiprocessing/tail_log.py",
            "megatron/training.py",
            "src/plugins/launch/slurm/launch_slurm.c",
        ],
        "torch 1.13 formats throughout: C++ prefix `[E ProcessGroupNCCL.cpp:NNN] ` with no date "
        "and no `[rankN]:`; WorkNCCL without Numel fields; handleException lines without a "
        "`[Rank N] ` prefix; `terminate called after throwing an instance of "
        "'std::runtime_error'`; the parenthesised 1.13-2.0 OOM template raised as "
        "torch.cuda.OutOfMemoryError; unprefixed tracebacks; BASIC_FORMAT torchrun lines "
        "(`WARNING:torch.distributed.run:` etc.). Rank attribution only from srun `--label` and "
        "torchrun `[defaultN]:`. NCCL_ASYNC_ERROR_HANDLING=1 is set in the batch script (1.13 "
        "only tears down with it). Rule: §8 + §1.12 RC rule (1).",
        {
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


def s_newest() -> tuple[Job, Meta]:
    v = Versions("2.12.1", "2.27.7", "13.0", "core_v0.15.0", "25.05.3")
    job = Job(
        "dataloader-valueerror",
        91234,
        4,
        4,
        v,
        1414,
        datetime(2026, 3, 11, 9, 3, 17),
        "split",
        tee=False,
    )
    tp = 2
    ms_it = 1710.0
    t_err = job.start + ms(72_000 + 6020 * ms_it + 700)
    prelude(
        job,
        job.start,
        Train(tp=tp, ms_per_it=ms_it, nccl_debug="WARN"),
        t_err,
        batch_lines=std_batch(job, ["srun ... || scancel $SLURM_JOB_ID"]),
    )
    r = 13
    md = MEGATRON_DIR
    sp = job.sp
    tb = megatron_train_frames(job)
    tb += job.frame(
        f"{md}/pretrain_gpt.py",
        301,
        "forward_step",
        "tokens, labels, loss_mask, attention_mask, position_ids = get_batch("
        "data_iterator, vp_stage)",
    )
    tb += job.frame(
        f"{md}/pretrain_gpt.py",
        168,
        "get_batch",
        "batch = get_batch_on_this_tp_rank(data_iterator)",
    )
    tb += job.frame(
        f"{md}/megatron/training/utils.py",
        512,
        "get_batch_on_this_tp_rank",
        "data = next(data_iterator)",
    )
    dl = f"{sp}/torch/utils/data/dataloader.py"
    tb += job.frame(dl, 741, "__next__", "data = self._next_data()")
    tb += job.frame(dl, 1548, "_next_data", "return self._process_data(data, worker_id)")
    tb += job.frame(dl, 1586, "_process_data", "data.reraise()")
    tb += job.frame(f"{sp}/torch/_utils.py", 775, "reraise", "raise exception")
    tb += [
        "ValueError: Caught ValueError in DataLoader worker process 1.",
        "Original Traceback (most recent call last):",
    ]
    tb += job.frame(
        f"{sp}/torch/utils/data/_utils/worker.py",
        349,
        "_worker_loop",
        "data = fetcher.fetch(index)  # type: ignore[possibly-undefined]",
    )
    tb += [
        f'  File "{sp}/torch/utils/data/_utils/fetch.py", line 52, in fetch',
        "    data = [self.dataset[idx] for idx in possibly_batched_index]",
        "            ~~~~~~~~~~~~^^^^^",
    ]
    tb += job.frame(
        f"{md}/megatron/core/datasets/gpt_dataset.py",
        168,
        "__getitem__",
        "text, _ = self._query_document_sample_shuffle_index(idx)",
    )
    tb += job.frame(
        f"{md}/megatron/core/datasets/gpt_dataset.py",
        281,
        "_query_document_sample_shuffle_index",
        "self.dataset.get(",
    )
    tb += job.frame(
        f"{md}/megatron/core/datasets/indexed_dataset.py",
        735,
        "get",
        "sequence = self.bin_reader.read(",
    )
    tb += job.frame(
        f"{md}/megatron/core/datasets/indexed_dataset.py", 381, "read", "return numpy.frombuffer("
    )
    tb += ["ValueError: offset must be non-negative and no greater than buffer length (2147483647)"]
    job.traceback(t_err, r, tb)
    destruct_warning(job, t_err + ms(880), r)
    t_d3 = t_err + ms(1420)
    job.node_failure(t_d3, 3, [Failure(r, 1, 1, job.rpid(r))], [0, 2, 3])
    job.srun_exit(t_d3 + ms(1000), 3, "Exited with exit code 1")
    # rank 11 was sending to rank 13 when its process vanished: IB retry exceeded ~30 s later
    r11 = 11
    t_ib = t_err + ms(33_480)
    wc = (
        f"NET/IB: Got completion from peer {job.ips[3]}<49122> with status=12 opcode=0 len=0 "
        f"vendor err 129 (Send) localGid ::ffff:{job.ips[2]} remoteGids::ffff:{job.ips[3]} "
        "hca mlx5_3"
    )
    job.nccl_warn(t_ib, r11, "transport/net_ib.cc", 1705, wc, tid=job.rpid(r11) + 611)
    pid, guid, gr = dp_groups(job, tp)[r11]
    async_nccl_error(
        job,
        t_ib + ms(380),
        r11,
        18069,
        "_REDUCE_SCATTER_BASE",
        125829120,
        15728640,
        nccl_error_text(
            job,
            "remote process exited or there was a network error",
            "ncclRemoteError: A call failed possibly due to a network error or a "
            "remote process exiting prematurely.",
            wc,
        ),
        pg=(pid, guid, "DATA_PARALLEL_GROUP_WITH_CP"),
        group_rank=gr,
    )
    t_d2 = t_ib + ms(1250)
    job.node_failure(t_d2, 2, [Failure(r11, 3, -6, job.rpid(r11))], [0, 1, 2])
    job.srun_exit(t_d2 + ms(1000), 2, "Exited with exit code 1")
    t_to = t_err + ms(599_800)
    timeouts_for(
        job, list(range(8)), t_to, 18069, "_REDUCE_SCATTER_BASE", 125829120, 15728640, tp=tp
    )
    for n in (0, 1):
        t_d = t_to + ms(1050 + 70 * n)
        job.node_failure(
            t_d, n, [Failure(job.rank(n, lr), lr, -6, job.pid[n][lr]) for lr in range(4)], []
        )
        job.srun_exit(t_d + ms(1900), n, "Exited with exit code 1")
    t_c = t_to + ms(3600)
    job.stepd(
        t_c,
        f"*** JOB {job.jobid} ON {job.hosts[0]} CANCELLED AT "
        f"{t_c:%Y-%m-%dT%H:%M:%S} DUE to SIGNAL Terminated ***",
    )
    meta = Meta(
        "python_exception",
        13,
        job.hosts[3],
        "ValueError in a DataLoader worker of rank 13 (gpu-node-004, local rank 1) while "
        "reading a sample from the indexed dataset (offset beyond the .bin buffer).",
        [
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
        "Newest formats: ChildFailedError 2.12+ exitcode line (`(pid: N)  (SIGABRT)` with two "
        "spaces; a trailing space after `(pid: N)` for exit code 1), `/pytorch` build path, "
        "NCCL 2.27 WARN with `[YYYY-MM-DD HH:MM:SS] ` and `NET/IB:` without a space, Slurm 25.05 "
        "`[ISO-ms] error:` prefix and `DUE to SIGNAL Terminated` (from the batch script's "
        "`|| scancel`). The IB status=12 on rank 11 33 s later and the 10-minute timeouts on "
        "nodes 0-1 are consequences of rank 13's process exiting. Rule: categories.md ('NCCL "
        "timeouts after one rank's exception are python_exception'), §8 (per-rank software "
        "error beats network and timeouts; earliest wins).",
        {
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


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------

SCENARIOS: dict[str, Callable[[], tuple[Job, Meta]]] = {
    "cuda-oom-cascade": s_cuda_oom_cascade,
    "pure-hang-missing-rank": s_pure_hang,
    "hang-lowest-last-enqueued": s_hang_lowest_enqueued,
    "collective-mismatch": s_collective_mismatch,
    "ib-completion-error": s_ib_completion,
    "illegal-memory-access": s_illegal_memory_access,
    "xid79-node-failure": s_xid79,
    "duplicate-gpu": s_duplicate_gpu,
    "max-connections-hopper-tp": s_max_connections_tp,
    "fsdp-max-connections-one": s_fsdp_max_connections,
    "nan-loss-rerun": s_nan_rerun,
    "host-oom-kill": s_host_oom,
    "old-torch-1.13-watchdog": s_old_torch,
    "nccl-timeout-torch-2.12-slurm-25": s_newest,
}

LAYOUTS = {
    "combined": "one sbatch output `slurm-<jobid>.out` (stdout and stderr together)",
    "split": "sbatch `--output <name>-<jobid>.out --error <name>-<jobid>.err`",
    "logdir": "torchrun `--log-dir <dir>/<hostname> --redirects 3` (no tee) plus the sbatch "
    "output holding the agent, srun and slurmstepd lines",
}


def toml_str(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def expected_toml(job: Job, meta: Meta) -> str:
    src = ", ".join(toml_str(s) for s in meta.format_source)
    return "".join(
        [
            'kind = "format-built"\n',
            f"category = {toml_str(meta.category)}\n",
            f"rank = {meta.rank}\n",
            f"node = {toml_str(meta.node)}\n",
            f"cause = {toml_str(meta.cause)}\n",
            f"format_source = [{src}]\n",
            f"format_versions = {toml_str(job.v.describe())}\n",
            f"notes = {toml_str(meta.notes)}\n",
        ]
    )


def fixture_md(name: str, job: Job, meta: Meta, files: list[str]) -> str:
    launch = ["srun, one task per node"]
    if job.label:
        launch.append("`--label`")
    launch.append("`python -m torch.distributed.run`")
    if job.layout == "logdir":
        launch.append("`--log-dir`, `--redirects 3`")
    elif job.tee:
        launch.append("`--tee 3`")
    lines = [
        f"# {name}",
        "",
        "**Format-built fixture, not a real run.** Every line was generated by "
        "`harness/format_fixtures.py` from the templates in the project's message-format "
        "reference (`message-formats.md`); no GPU job produced it. Regenerate with "
        "`python -m harness.format_fixtures --out sample_logs/formats`.",
        "",
        f"- Versions: {job.v.describe()}",
        f"- Job: {job.jobid}, {job.nnodes} nodes × {job.gpn} GPUs ({hostlist(job)}), "
        f"global rank = node_index × {job.gpn} + local_rank",
        f"- Launch: {', '.join(launch)}",
        f"- Layout: {LAYOUTS[job.layout]}",
        f"- Expected verdict: `{meta.category}`, rank {meta.rank}, node "
        f"`{meta.node or '-'}` (see `expected.toml`)",
        "",
        "## Sections of message-formats.md followed",
        "",
    ]
    for f, secs in meta.sections.items():
        lines.append(f"- `{f}`: §" + ", §".join(secs))
    lines += [
        "",
        "## Files",
        "",
        *[f"- `{f}`" for f in files],
        "",
        "## What is illustrative rather than taken from the reference",
        "",
        "- Source line numbers (`ProcessGroupNCCL.cpp:NNN`, `api.py:NNN`, Python frames) are "
        "plausible per release, not verified; never match on them.",
        "- NCCL INFO bodies, Megatron argument values, host names, IPs, pids, addresses and "
        "memory figures are invented; C++ log fractions are derived from a per-host monotonic "
        "offset (not the wall clock), as the real logger does.",
        "",
        "## Scenario",
        "",
        meta.cause,
        "",
        meta.notes,
        "",
    ]
    return "\n".join(lines)


def generate(out: Path, only: list[str] | None = None) -> list[str]:
    names = only or list(SCENARIOS)
    for name in names:
        job, meta = SCENARIOS[name]()
        d = out / name
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        files = job.render()
        for rel, text in sorted(files.items()):
            p = d / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8", newline="\n")
        (d / "expected.toml").write_text(expected_toml(job, meta), encoding="utf-8", newline="\n")
        (d / "FIXTURE.md").write_text(
            fixture_md(name, job, meta, sorted(files)), encoding="utf-8", newline="\n"
        )
    return names


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--out", type=Path, default=Path("sample_logs/formats"))
    ap.add_argument("--only", nargs="*", choices=sorted(SCENARIOS))
    a = ap.parse_args(argv)
    for name in generate(a.out, a.only):
        print(f"wrote {a.out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

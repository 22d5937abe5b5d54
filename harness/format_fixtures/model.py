"""The simulated job: topology, pids, a seeded RNG, time-stamped output events, and rendering."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .versions import FQDN_SUFFIX, MEGATRON_DIR, Versions

# Who wrote a line: a training process, its torchrun agent, srun, slurmstepd, the batch
# script itself, or a background watcher started by the batch script (dmesg).
WORKER, AGENT, SRUN, STEPD, BATCH, WATCH = "worker", "agent", "srun", "stepd", "batch", "watch"

LAYOUTS = ("combined", "split", "logdir")
DEFAULT_BUS_IDS = ("18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000")


def ms(x: float) -> timedelta:
    return timedelta(milliseconds=x)


@dataclass
class Event:
    t: datetime
    seq: int
    kind: str
    stream: str  # "out" | "err"
    text: str
    node: int = -1
    lr: int = -1


@dataclass(frozen=True, kw_only=True)
class Failure:
    """One entry of torchrun's ChildFailedError block."""

    rank: int
    local_rank: int
    exitcode: int  # negative: killed by that signal
    pid: int


@dataclass(kw_only=True)
class Meta:
    """What a scenario asserts about itself: expected.toml and the FIXTURE.md prose."""

    category: str
    rank: int  # -1: no single rank is at fault
    node: str  # "" when no node is
    cause: str
    format_source: list[str]
    notes: str
    sections: dict[str, list[str]] = field(default_factory=dict)  # file -> reference sections


@dataclass(frozen=True, kw_only=True)
class ProcessGroup:
    """A c10d process group as its log prefix names it."""

    local_id: int = 0  # "PG ID"
    guid: int = 0  # "PG GUID"
    desc: str = "default_pg"


DEFAULT_PG = ProcessGroup()


@dataclass(frozen=True, kw_only=True)
class Work:
    """A collective as a WorkNCCL(...) description shows it."""

    seq: int
    op: str
    numel_in: int
    numel_out: int
    timeout_ms: int = 600_000


class Job:
    """One simulated SLURM job: nodes, ranks, pids and a time-ordered list of output events."""

    def __init__(
        self,
        *,
        name: str,
        jobid: int,
        nnodes: int,
        gpus_per_node: int,
        versions: Versions,
        seed: int,
        start: datetime,
        layout: str,
        label: bool = True,
        tee: bool = True,
        bus_ids: list[str] | None = None,
    ) -> None:
        assert layout in LAYOUTS, layout
        self.name = name
        self.jobid = jobid
        self.nnodes = nnodes
        self.gpn = gpus_per_node
        self.v = versions
        self.rng = random.Random(seed)
        self.start = start
        self.layout = layout  # "combined" | "split" | "logdir"
        self.label = label  # srun --label
        self.tee = tee  # torchrun --tee 3
        self.hosts = [f"gpu-node-{i + 1:03d}" for i in range(nnodes)]
        self.ips = [f"10.10.1.{11 + i}" for i in range(nnodes)]
        self.bus = bus_ids or list(DEFAULT_BUS_IDS[:gpus_per_node])
        self.agent_pid = [self.rng.randrange(1_200_000, 3_900_000) for _ in range(nnodes)]
        self.pid = [[self.agent_pid[n] + 64 + lr for lr in range(self.gpn)] for n in range(nnodes)]
        self.mono_off = [self.rng.randrange(0, 10**9) for _ in range(nnodes)]
        self.events: list[Event] = []
        self._seq = 0
        self.run_id = str(jobid)
        self.logdir_rand = [
            "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz0123456789_") for _ in range(8))
            for _ in range(nnodes)
        ]
        self.venv = f"{MEGATRON_DIR}/.venv"
        self.sp = f"{self.venv}/lib/python{versions.python}/site-packages"
        self.python_bin = f"{self.venv}/bin/python3"
        self.pg_initialised: set[int] = set()

    # ---- ranks ---------------------------------------------------------------------------
    @property
    def world(self) -> int:
        return self.nnodes * self.gpn

    @property
    def hostlist(self) -> str:
        return f"gpu-node-[001-{self.nnodes:03d}]"

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

    def failure(self, rank: int, *, exitcode: int) -> Failure:
        return Failure(
            rank=rank, local_rank=self.lr_of(rank), exitcode=exitcode, pid=self.rpid(rank)
        )

    def node_failures(self, node: int, *, exitcode: int) -> list[Failure]:
        """Every local rank of ``node`` failed with ``exitcode``, in local-rank order."""
        return [self.failure(self.rank(node, lr), exitcode=exitcode) for lr in range(self.gpn)]

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
        """File name (relative to the job directory) -> contents."""
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
                base = self.logdir_base(n)
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

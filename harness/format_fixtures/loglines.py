"""Line prefixes of each logger (reference §0.1 – §0.3, §5.1) and Python / C++ stack traces."""

from __future__ import annotations

from datetime import datetime

from .model import DEFAULT_PG, Job, ProcessGroup
from .versions import Versions, elastic_line

CxxFrame = tuple[str, str, str]  # (symbol, offset, shared object)


# ---- PyTorch C++ logger (reference §0.1) ----------------------------------------------------
def cpp_prefix(
    job: Job, t: datetime, rank: int | None, *, severity: str, file: str, line: int
) -> str:
    tv = job.v.t
    rp = f"[rank{rank}]:" if rank is not None and tv >= (2, 2) else ""
    if tv < (2, 4):
        return f"{rp}[{severity} {file}:{line}] "
    node = job.node_of(rank) if rank is not None else 0
    wall_ns = t.microsecond * 1000 + job.rng.randrange(0, 1000)
    frac = (wall_ns + job.mono_off[node]) % 10**9
    return f"{rp}[{severity}{t.month * 100 + t.day} {t:%H:%M:%S}.{frac:09d} {file}:{line}] "


def cpp(job: Job, t: datetime, rank: int, *, severity: str, file: str, line: int, msg: str) -> None:
    """A C++ log line of ``rank``; `[rankN]:` only once its process group exists."""
    r = rank if rank in job.pg_initialised else None
    job.worker(t, rank, cpp_prefix(job, t, r, severity=severity, file=file, line=line) + msg)


def pg_prefix(
    job: Job, rank: int, pg: ProcessGroup = DEFAULT_PG, group_rank: int | None = None
) -> str:
    """ProcessGroupNCCL's log prefix (reference §1.1) for this torch version."""
    r = rank if group_rank is None else group_rank
    tv = job.v.t
    if tv <= (2, 2):
        return f"[Rank {r}] "
    if tv == (2, 3):
        return f"[PG {pg.guid} Rank {r}] "
    if tv == (2, 4):
        return f"[PG {pg.guid} ({pg.desc}) Rank {r}] " if pg.desc else f"[PG {pg.guid} Rank {r}] "
    if pg.desc:
        return f"[PG ID {pg.local_id} PG GUID {pg.guid}({pg.desc}) Rank {r}] "
    return f"[PG ID {pg.local_id} PG GUID {pg.guid} Rank {r}] "


def build_path(v: Versions) -> str:
    """Where the torch wheel was built, as `Exception raised from ... at <path>/...` shows it."""
    tv = v.t
    if tv <= (2, 5):
        return ".."
    if tv <= (2, 12):
        return "/pytorch"
    return "/__w/pytorch/pytorch"


def cxx_frames(job: Job, frames: list[CxxFrame]) -> list[str]:
    out = []
    lib = f"{job.sp}/torch/lib"
    for i, (sym, off, so) in enumerate(frames):
        addr = f"0x7f{job.rng.randrange(0x10_0000_0000, 0xFF_FFFF_FFFF):010x}"
        path = so if so.startswith("/lib") else f"{lib}/{so}"
        out.append(f"frame #{i}: {sym} + {off} ({addr} in {path})")
    return out


def c10_backtrace(job: Job, *, func: str, file: str, line: int, frames: list[CxxFrame]) -> str:
    """A c10::Error's `Exception raised from ...` block with its frames."""
    head = (
        f"Exception raised from {func} at {build_path(job.v)}/{file}:{line} "
        "(most recent call first):"
    )
    return "\n".join([head, *cxx_frames(job, frames)]) + "\n"


# ---- Python logger (reference §0.2) -----------------------------------------------------------
def pylog(
    v: Versions,
    t: datetime,
    *,
    level: str,
    path: str,
    lineno: int,
    logger: str,
    msg: str,
    pid: int,
    tid: int,
) -> str:
    tv = v.t
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
    job: Job, t: datetime, node: int, *, level: str, path: str, key: str, msg: str, delta: int = 0
) -> None:
    """A torchrun agent log line from module ``path`` at its per-release line ``key`` (+delta)."""
    lineno = elastic_line(job.v, key) + delta
    logger = path.removesuffix(".py").replace("/", ".")
    tid = 139_900_000_000_000 + job.agent_pid[node] * 7
    job.agent(
        t,
        node,
        pylog(
            job.v,
            t,
            level=level,
            path=path,
            lineno=lineno,
            logger=logger,
            msg=msg,
            pid=job.agent_pid[node],
            tid=tid,
        ),
    )


# ---- NCCL (reference §5.1) ----------------------------------------------------------------
def nccl_info(job: Job, t: datetime, rank: int, msg: str, tid: int | None = None) -> None:
    pid = job.rpid(rank)
    h = job.hosts[job.node_of(rank)]
    job.worker(t, rank, f"{h}:{pid}:{tid or pid} [{job.lr_of(rank)}] NCCL INFO {msg}", "out")


def nccl_warn(
    job: Job,
    t: datetime,
    rank: int,
    msg: str,
    *,
    file: str,
    line: int,
    tid: int | None = None,
    func: str = "",
    dev: int | None = None,
) -> None:
    """An NCCL WARN line (after the blank line NCCL prints first) from ``file``:``line``."""
    pid = job.rpid(rank)
    h = job.hosts[job.node_of(rank)]
    d = job.lr_of(rank) if dev is None else dev
    ts = f"[{t:%Y-%m-%d %H:%M:%S}] " if job.v.n >= (2, 26) else ""
    fn = f" ({func})" if job.v.n >= (2, 30, 7) and func else ""
    job.worker(t, rank, "", "out")
    job.worker(
        t, rank, f"{ts}{h}:{pid}:{tid or pid} [{d}] {file}:{line}{fn} NCCL WARN {msg}", "out"
    )


# ---- Python tracebacks (reference §0.3) ---------------------------------------------------
def traceback(job: Job, t: datetime, rank: int, lines: list[str]) -> None:
    """Write a traceback to ``rank``'s stderr, `[rankN]: `-prefixed from torch 2.4 on."""
    prefixed = rank in job.pg_initialised and job.v.t >= (2, 4)
    for ln in (part for chunk in lines for part in chunk.split("\n")):
        text = f"[rank{rank}]: {ln}" if prefixed and ln != "" else ln
        job.worker(t, rank, text)


def frame(job: Job, path: str, *, line: int, func: str, src: str | None) -> list[str]:
    """One traceback frame; Python 3.11+ adds the caret line under a call's arguments."""
    out = [f'  File "{path}", line {line}, in {func}']
    if src is None:
        return out
    out.append(f"    {src}")
    if job.v.py >= (3, 11):
        start = 0
        if src.startswith("return "):
            start = len("return ")
        elif " = " in src and "(" in src and src.index(" = ") < src.index("("):
            start = src.index(" = ") + 3
        if 0 < start < len(src) and not src.endswith(("(", ",")):
            out.append("    " + " " * start + "^" * (len(src) - start))
    return out


def runpy_frames(v: Versions) -> list[str]:
    if v.py >= (3, 11):
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

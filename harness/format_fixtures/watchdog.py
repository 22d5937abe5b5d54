"""ProcessGroupNCCL's watchdog: timeouts, async NCCL errors and the process teardown (§1)."""

from __future__ import annotations

from datetime import datetime

from .loglines import CxxFrame, c10_backtrace, cpp, pg_prefix
from .messages import DESTRUCT_WARN, FR_MISSING, HANDLE1, HANDLE2, work_text
from .model import DEFAULT_PG, Job, ProcessGroup, Work, ms
from .versions import pgnccl_line

PGNCCL_CPP = "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp"
DP_GROUP_DESC = "DATA_PARALLEL_GROUP_WITH_CP"

C10_ERROR_FRAME: CxxFrame = (
    "c10::Error::Error(c10::SourceLocation, std::string)",
    "0x98",
    "libc10.so",
)
LIBC_TAIL: list[CxxFrame] = [
    ("<unknown function>", "0xecdb4", "/lib/x86_64-linux-gnu/libstdc++.so.6"),
    ("<unknown function>", "0x9caa4", "/lib/x86_64-linux-gnu/libc.so.6"),
    ("<unknown function>", "0x129c3c", "/lib/x86_64-linux-gnu/libc.so.6"),
]


def pgnccl(job: Job, t: datetime, rank: int, key: str, msg: str, *, severity: str = "E") -> None:
    """A ProcessGroupNCCL.cpp log line at its per-release line ``key``."""
    line = pgnccl_line(job.v, key)
    cpp(job, t, rank, severity=severity, file="ProcessGroupNCCL.cpp", line=line, msg=msg)


def checktimeout_frames(job: Job) -> list[CxxFrame]:
    new = job.v.t >= (2, 8)  # the watchdog loop became the Watchdog class in 2.8
    return [
        C10_ERROR_FRAME,
        (
            "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration"
            "<long, std::ratio<1l, 1000l> > >)",
            "0x1d2",
            "libtorch_cuda.so",
        ),
        (
            "c10d::ProcessGroupNCCL::Watchdog::runLoop()"
            if new
            else "c10d::ProcessGroupNCCL::watchdogHandler()",
            "0x233",
            "libtorch_cuda.so",
        ),
        (
            "c10d::ProcessGroupNCCL::Watchdog::run()"
            if new
            else "c10d::ProcessGroupNCCL::ncclCommWatchdog()",
            "0x14d",
            "libtorch_cuda.so",
        ),
        *LIBC_TAIL,
    ]


OUTER_FRAMES: list[CxxFrame] = [
    C10_ERROR_FRAME,
    ("<unknown function>", "0x11b4a6e", "libtorch_cuda.so"),
    *LIBC_TAIL,
]

ASYNC_ERROR_FRAMES: list[CxxFrame] = [
    C10_ERROR_FRAME,
    (
        "c10d::ProcessGroupNCCL::checkForNCCLErrorsInternal(std::shared_ptr<c10d::NCCLComm>&)",
        "0x2d9",
        "libtorch_cuda.so",
    ),
    ("c10d::ProcessGroupNCCL::WorkNCCL::checkAndSetException()", "0x7b", "libtorch_cuda.so"),
    ("c10d::ProcessGroupNCCL::watchdogHandler()", "0x213", "libtorch_cuda.so"),
    ("c10d::ProcessGroupNCCL::ncclCommWatchdog()", "0x14d", "libtorch_cuda.so"),
    *LIBC_TAIL,
]


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
    pgnccl(job, t, rank, "wdterm", exit_msg)
    outer = c10_backtrace(
        job,
        func=wd_func,
        file=PGNCCL_CPP,
        line=pgnccl_line(job.v, "wdterm") + 4,
        frames=OUTER_FRAMES,
    )
    tt = t + ms(3)
    job.worker(tt, rank, "terminate called after throwing an instance of 'c10::DistBackendError'")
    job.worker(tt, rank, f"  what():  {exit_msg}\n{outer}".rstrip("\n"))


def watchdog_timeout(
    job: Job,
    t: datetime,
    rank: int,
    work: Work,
    *,
    overrun_ms: int,
    last_enqueued: int | None = None,
    last_completed: int | None = None,
    pg: ProcessGroup = DEFAULT_PG,
    group_rank: int | None = None,
) -> None:
    """The full per-rank timeout cascade of reference §1.3 – §1.6 for this torch version.

    The collective ran for its timeout plus ``overrun_ms``. The rank's last enqueued and
    last completed works default to ``work`` itself and the one before it (a rank waiting in
    ``work``); ``group_rank`` defaults to the global rank (the default process group).
    """
    tv = job.v.t
    enq = work.seq if last_enqueued is None else last_enqueued
    done = work.seq - 1 if last_completed is None else last_completed
    gr = rank if group_rank is None else group_rank
    pgp = pg_prefix(job, rank, pg, gr)
    wp = f"[Rank {gr}] "
    body = (
        f"{wp}Watchdog caught collective operation timeout: {work_text(job.v, work)} ran for "
        f"{work.timeout_ms + overrun_ms} milliseconds before timing out."
    )
    pgnccl(job, t, rank, "timeout", body)
    seq = work.seq
    if (2, 3) <= tv <= (2, 3):
        pgnccl(
            job,
            t,
            rank,
            "summary",
            f"{pgp}Timeout at NCCL work: {seq}, last enqueued NCCL work: {enq}, "
            f"last completed NCCL work: {done}.",
        )
    elif (2, 4) <= tv <= (2, 5):
        pgnccl(
            job,
            t,
            rank,
            "summary",
            f"{pgp}Exception (either an error or timeout) detected by watchdog at work: "
            f"{seq}, last enqueued NCCL work: {enq}, last completed NCCL work: {done}.",
        )
    elif tv >= (2, 6):
        pgnccl(
            job,
            t,
            rank,
            "summary",
            f"{pgp} failure detected by watchdog at work sequence id: {seq} PG status: "
            f"last enqueued work: {enq}, last completed work: {done}",
        )
        pgnccl(job, t, rank, "stack", FR_MISSING)
    hp = wp if tv >= (2, 3) else ""
    pgnccl(job, t, rank, "handle", hp + HANDLE1)
    pgnccl(job, t, rank, "handle2", hp + HANDLE2)
    if tv <= (2, 0):
        watchdog_death(job, t + ms(2), rank, pgp, body)
        return
    backtrace = c10_backtrace(
        job,
        func="checkTimeout",
        file=PGNCCL_CPP,
        line=pgnccl_line(job.v, "timeout") + 3,
        frames=checktimeout_frames(job),
    )
    watchdog_death(job, t + ms(2), rank, pgp, body + "\n" + backtrace)


def async_nccl_error(
    job: Job,
    t: datetime,
    rank: int,
    work: Work,
    *,
    text: str,
    pg: ProcessGroup,
    group_rank: int,
) -> None:
    """Watchdog finds an asynchronous NCCL error (§1.9) and tears the process down."""
    pgp = pg_prefix(job, rank, pg, group_rank)
    backtrace = c10_backtrace(
        job,
        func="checkForNCCLErrorsInternal",
        file=PGNCCL_CPP,
        line=pgnccl_line(job.v, "async") + 217,
        frames=ASYNC_ERROR_FRAMES,
    )
    what = text + "\n" + backtrace
    wp = f"[Rank {group_rank}] "
    pgnccl(
        job,
        t,
        rank,
        "async",
        f"{wp}Collective {work_text(job.v, work)} raised the following async exception: {what}",
    )
    pgnccl(job, t, rank, "handle", wp + HANDLE1)
    pgnccl(job, t, rank, "handle2", wp + HANDLE2)
    watchdog_death(job, t + ms(2), rank, pgp, what)


def destruct_warning(job: Job, t: datetime, rank: int) -> None:
    """The 2.4+ warning of a process exiting without destroy_process_group (§1.11)."""
    if job.v.t >= (2, 4):
        pgnccl(job, t, rank, "destruct", DESTRUCT_WARN, severity="W")


def dp_group(job: Job, rank: int, *, tp: int) -> tuple[ProcessGroup, int]:
    """``rank``'s data-parallel group (Megatron creates it third; TP-major) and group rank."""
    return ProcessGroup(local_id=2, guid=2 + rank % tp, desc=DP_GROUP_DESC), rank // tp


def timeouts_for(job: Job, ranks: list[int], t: datetime, work: Work, *, tp: int = 1) -> None:
    """``ranks`` (in this order, ~37 ms apart) time out in ``work`` on their DP groups."""
    step_ms = 37.0
    for i, r in enumerate(ranks):
        tr = t + ms(step_ms * i + 3 * (r % 5))
        pg, gr = dp_group(job, r, tp=tp)
        overrun = 11 + int(step_ms * i) % 97
        watchdog_timeout(job, tr, r, work, overrun_ms=overrun, pg=pg, group_rank=gr)

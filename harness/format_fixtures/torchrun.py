"""The torchrun agent's lines (reference §2) and srun's per-task exit lines (§6.4)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from .loglines import agent_log, frame, runpy_frames
from .messages import ELASTIC_DOC, SIGNALS
from .model import Failure, Job, ms
from .versions import ELASTIC_LINES, line_table

RUN_PY = "torch/distributed/run.py"
MP_API = "torch/distributed/elastic/multiprocessing/api.py"
AGENT_API = "torch/distributed/elastic/agent/server/api.py"
LAUNCHER_API = "torch/distributed/launcher/api.py"


def agent_banner(job: Job, t: datetime, *, node: int) -> None:
    """The OMP_NUM_THREADS banner every torchrun prints at start-up."""
    msg = (
        "\n*****************************************\n"
        "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
        "to avoid your system being overloaded, please further tune the variable for "
        "optimal performance in your application as needed. \n"
        "*****************************************"
    )
    agent_log(job, t, node, level="WARNING", path=RUN_PY, key="banner", msg=msg)


def agent_close(job: Job, t: datetime, *, node: int, local_ranks: Iterable[int]) -> None:
    """The agent SIGTERMs the workers still running on ``node``."""
    for lr in local_ranks:
        agent_log(
            job,
            t,
            node,
            level="WARNING",
            path=MP_API,
            key="close",
            msg=f"Sending process {job.pid[node][lr]} closing signal SIGTERM",
        )


def agent_failed(job: Job, t: datetime, f: Failure, *, node: int) -> None:
    agent_log(
        job,
        t,
        node,
        level="ERROR",
        path=MP_API,
        key="failed",
        msg=f"failed (exitcode: {f.exitcode}) local_rank: {f.local_rank} (pid: {f.pid}) "
        f"of binary: {job.python_bin}",
    )


def launcher_frames(job: Job) -> list[str]:
    """The traceback frames from `python -m torch.distributed.run` down to launch_agent."""
    el = line_table(ELASTIC_LINES, job.v.t)
    sp = job.sp
    out = ["Traceback (most recent call last):", *runpy_frames(job.v)]
    out += frame(job, f"{sp}/{RUN_PY}", line=el["run_module"], func="<module>", src="main()")
    out += frame(
        job,
        f"{sp}/torch/distributed/elastic/multiprocessing/errors/__init__.py",
        line=el["wrapper"],
        func="wrapper",
        src="return f(*args, **kwargs)",
    )
    out += frame(job, f"{sp}/{RUN_PY}", line=el["main"], func="main", src="run(args)")
    out += frame(job, f"{sp}/{RUN_PY}", line=el["run"], func="run", src="elastic_launch(")
    if job.v.t >= (2, 9):
        src = "return launch_agent("
    else:
        src = "return launch_agent(self._config, self._entrypoint, list(args))"
    out += frame(job, f"{sp}/{LAUNCHER_API}", line=el["call"], func="__call__", src=src)
    return out


def child_failed(
    job: Job, t: datetime, failures: list[Failure], *, node: int, detected: datetime
) -> None:
    """The torchrun ChildFailedError block (reference §2.3), failures in dict order."""
    el = line_table(ELASTIC_LINES, job.v.t)
    lines = launcher_frames(job)
    lines += frame(
        job,
        f"{job.sp}/{LAUNCHER_API}",
        line=el["launch"],
        func="launch_agent",
        src="raise ChildFailedError(",
    )
    ts = detected.strftime("%Y-%m-%d_%H:%M:%S")
    blocks: list[str] = []
    width = len("pretrain_gpt.py FAILED")
    for idx, f in enumerate(failures):
        if f.exitcode < 0:
            name = SIGNALS[-f.exitcode]
            msg = f"Signal {-f.exitcode} ({name}) received by PID {f.pid}"
            sig = f" ({name})"
        else:
            msg, sig = ELASTIC_DOC, ""
        if job.v.t >= (2, 12):
            exit_line = f"  exitcode  : {f.exitcode} (pid: {f.pid}) {sig}"
        else:
            exit_line = f"  exitcode  : {f.exitcode} (pid: {f.pid})"
        block = "\n".join(
            [
                f"[{idx}]:",
                f"  time      : {ts}",
                f"  host      : {job.fqdn(node)}",
                f"  rank      : {f.rank} (local_rank: {f.local_rank})",
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
        job.agent(t, node, ln)
    job.agent(t, node, text)


def agent_sigterm(job: Job, t: datetime, *, node: int, local_ranks: Iterable[int]) -> None:
    """Agent killed from outside (reference §2.2)."""
    old = job.v.t <= (2, 0) or job.v.py >= (3, 11)
    sig = "15" if old else "Signals.SIGTERM"
    agent_log(
        job,
        t,
        node,
        level="WARNING",
        path=AGENT_API,
        key="received",
        msg=f"Received {sig} death signal, shutting down workers",
    )
    agent_close(job, t, node=node, local_ranks=local_ranks)
    el = line_table(ELASTIC_LINES, job.v.t)
    sp = job.sp
    tb = launcher_frames(job)
    tb += frame(
        job,
        f"{sp}/{LAUNCHER_API}",
        line=el["launch"],
        func="launch_agent",
        src="result = agent.run()",
    )
    tb += frame(
        job,
        f"{sp}/torch/distributed/elastic/metrics/api.py",
        line=el["metrics"],
        func="wrapper",
        src="result = f(*args, **kwargs)",
    )
    tb += frame(
        job,
        f"{sp}/{AGENT_API}",
        line=el["agent_run"],
        func="run",
        src="result = self._invoke_run(role)",
    )
    tb += frame(
        job,
        f"{sp}/{AGENT_API}",
        line=el["sleep"],
        func="_invoke_run",
        src="time.sleep(monitor_interval)",
    )
    tb += frame(
        job,
        f"{sp}/{MP_API}",
        line=el["handler"],
        func="_terminate_process_handler",
        src='raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)',
    )
    tb.append(
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process "
        f"{job.agent_pid[node]} got signal: 15"
    )
    for ln in tb:
        job.agent(t + ms(400), node, ln)


def node_failure(
    job: Job, t_detect: datetime, *, node: int, failures: list[Failure], running: list[int]
) -> None:
    """Agent notices failed workers: SIGTERM the ``running`` local ranks, ChildFailedError."""
    agent_close(job, t_detect, node=node, local_ranks=running)
    agent_failed(job, t_detect + ms(468), failures[0], node=node)
    child_failed(job, t_detect + ms(512), failures, node=node, detected=t_detect)


def srun_exit(job: Job, t: datetime, *, node: int, what: str = "Exited with exit code 1") -> None:
    """srun reports task ``node`` (one task per node) ending."""
    job.srun(t, f"srun: error: {job.hosts[node]}: task {node}: {what}")

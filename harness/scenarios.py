"""The failure scenarios: one generated sbatch script each, with what the recording must show.

Every job is ``--nodes=1 --ntasks=2``: the two srun tasks stand in for two nodes of a real
allocation (``NODE_RANK=$SLURM_PROCID``), each running one
``python -m torch.distributed.run --nnodes 2 --nproc-per-node 2`` agent with two workers, so
global rank = node_rank x 2 + local_rank, world size 4.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass, field
from pathlib import Path

NPROC_PER_NODE = 2
NNODES = 2


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    # expected.toml
    category: str
    rank: int
    node: str
    cause: str
    must_contain: tuple[str, ...]
    expected_state: str  # final SLURM job state
    # log layout
    output: str = "combined"  # combined | split | per-task | per-task-split
    label: bool = False  # srun --label
    tee: bool = False  # torchrun --tee 3
    log_dir: bool = False  # torchrun --log-dir $JOB_DIR/torchrun-logs --redirects 3
    # the launch
    train_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    time_limit: str = "00:05:00"
    max_restarts: int = 0
    rdzv_timeout: int = 20
    bare_python_node: int | None = None  # this node's launcher uses a python without torch
    port_offset_per_node: bool = False  # node N is told MASTER_PORT + N
    hold_master_port: bool = False  # something already listens on the master port
    cancel_after: str | None = None  # regex: scancel the job once its logs match it
    max_seconds: float = 120  # how long the harness waits for the job to end
    light: bool = False  # mostly idle: may run next to the other scenarios
    flight_recorder: bool = False  # dump gloo's Flight Recorder buffer into $JOB_DIR/fr/
    logs_only_rank: int | None = None  # the culprit the logs alone name (-1: none), FR jobs
    srun_chdir: str | None = None  # srun --chdir=DIR (a worktree this node does not have)
    standalone: bool = False  # torchrun --standalone on every node (independent worlds)
    nnodes_arg: str = "$NNODES"  # what torchrun's --nnodes gets ("1": single-node jobs)
    master_addr: str = "127.0.0.1"  # what the script exports as MASTER_ADDR
    node_rank: str = "$SLURM_PROCID"  # torchrun's --node-rank ($SLURM_NODEID: 0 on both tasks)
    log_dir_path: str = "$JOB_DIR/torchrun-logs"  # torchrun --log-dir (with log_dir)
    node_master_addr: str | None = None  # node 1's own MASTER_ADDR, exported inside its task
    # how each task prints its launch facts: "" (not at all), "echo" (one
    # `MASTER_ADDR=... NODE_RANK=...` line) or "env" (an `env | grep` dump)
    print_facts: str = ""
    shape: str = ""  # the shape variant this scenario is (SHAPES), "" for the original
    # each task launches through `uv run --project <a project without .venv>`: uv creates the
    # venv and installs its one dependency inside the job (the guide's uv-sync rule broken)
    uv_run: bool = False

    @property
    def layout(self) -> str:
        parts = {
            "combined": "combined slurm-%j.out",
            "split": "split %x-%j.out / %x-%j.err",
            "per-task": "srun --output task-%t.out (+ slurm-%j.out for srun's own messages)",
            "per-task-split": "srun --output task-%t.out --error task-%t.err (+ slurm-%j.out)",
            "per-task-job": "srun --output slurm-%j-%t.out (+ slurm-%j.out)",
        }[self.output].split(" (")
        desc = [parts[0]]
        desc.append("srun --label" if self.label else "no srun label")
        if self.tee:
            desc.append("torchrun --tee 3")
        if self.log_dir:
            desc.append("torchrun --log-dir torchrun-logs --redirects 3 (per-rank files)")
        if self.print_facts == "echo":
            desc.append("each task echoes MASTER_ADDR/MASTER_PORT/NODE_RANK/NNODES")
        elif self.print_facts == "env":
            desc.append("each task dumps env | grep MASTER|NODE|SLURM")
        if len(parts) > 1:
            desc.append(parts[1].rstrip(")"))
        return "; ".join(desc)


def global_rank(node: int, local_rank: int) -> int:
    return node * NPROC_PER_NODE + local_rank


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="exception-cascade",
        description="rank 2 raises a real IndexError at iteration 5; the other ranks then fail "
        "in gloo collectives (connection closed by peer) and both agents report failures",
        category="python_exception",
        rank=2,
        node="1",
        cause="IndexError on rank 2 (node 1, local rank 0) at iteration 5; the gloo errors on "
        "the other ranks are its consequence",
        must_contain=(
            r"IndexError: index \d+ is out of bounds for dimension 0 with size \d+",
            r"failed \(exitcode: 1\) local_rank: 0 \(pid: \d+\) of binary: ",
            r"srun: error: node001: task 1: Exited with exit code 1",
        ),
        expected_state="FAILED",
        output="combined",
        label=True,
        env={"MCORE_FAULT": "exception", "MCORE_FAULT_RANK": "2", "MCORE_FAULT_ITER": "5"},
    ),
    Scenario(
        name="exception-tee-logdir",
        description="rank 1 raises a real IndexError at iteration 4 with torchrun --tee 3 and "
        "--log-dir: every worker line is echoed with a [defaultN]: prefix and kept in per-rank "
        "files",
        category="python_exception",
        rank=1,
        node="0",
        cause="IndexError on rank 1 (node 0, local rank 1) at iteration 4",
        must_contain=(
            r"\[default1\]:\[rank1\]: IndexError: index \d+ is out of bounds",
            r"failed \(exitcode: 1\) local_rank: 1 \(pid: \d+\) of binary: ",
        ),
        expected_state="FAILED",
        output="split",
        label=False,
        tee=True,
        log_dir=True,
        env={
            "MCORE_FAULT": "exception",
            "MCORE_FAULT_RANK": "1",
            "MCORE_FAULT_ITER": "4",
            "LOGLEVEL": "INFO",
        },
    ),
    Scenario(
        name="hang-before-collective",
        description="rank 1 stops before the gradient all-reduce of iteration 4; the other "
        "ranks wait in gloo until the 15 s process-group timeout",
        category="collective_timeout",
        rank=1,
        node="0",
        cause="rank 1 never reached the all-reduce of iteration 4; the others timed out in gloo "
        "after 15 s",
        must_contain=(
            r"Timed out waiting 15000ms for (recv|send) operation to complete",
            r"closing signal SIGTERM",
        ),
        expected_state="FAILED",
        output="split",
        label=False,
        train_args=("--distributed-timeout-seconds", "15"),
        env={"MCORE_FAULT": "hang", "MCORE_FAULT_RANK": "1", "MCORE_FAULT_ITER": "4"},
        max_seconds=150,
    ),
    Scenario(
        name="sigkill-rank",
        description="rank 3 is SIGKILLed at iteration 6 (what the kernel OOM killer does, with "
        "no message); torchrun reports exitcode -9; workers write per-rank files via "
        "torchrun --log-dir --redirects 3",
        category="host_oom",
        rank=3,
        node="1",
        cause="rank 3 (node 1, local rank 1) was killed by SIGKILL at iteration 6 with nothing "
        "earlier: the host OOM killer's signature",
        must_contain=(
            r"failed \(exitcode: -9\) local_rank: 1 \(pid: \d+\) of binary: ",
            r"Signal 9 \(SIGKILL\) received by PID \d+",
        ),
        expected_state="FAILED",
        output="combined",
        label=True,
        log_dir=True,
        env={"MCORE_FAULT": "sigkill", "MCORE_FAULT_RANK": "3", "MCORE_FAULT_ITER": "6"},
    ),
    Scenario(
        name="megatron-world-size-vs-tp",
        description="megatron.core.parallel_state.initialize_model_parallel with "
        "tensor_model_parallel_size=3 on a world of 4: every rank raises megatron-core's "
        "RuntimeError at start-up",
        category="config",
        rank=-1,
        node="",
        cause="world size 4 is not divisible by TP=3 (megatron-core initialize_model_parallel)",
        must_contain=(r"RuntimeError: world_size \(4\) is not divisible by 3",),
        expected_state="FAILED",
        output="combined",
        label=True,
        tee=True,
        train_args=("--tensor-model-parallel-size", "3"),
        env={"MCORE_FAULT": "megatron-tp"},
    ),
    Scenario(
        name="megatron-heads-vs-tp",
        description="megatron.core TransformerConfig with num_attention_heads=6 and "
        "tensor_model_parallel_size=4: every rank raises megatron-core's ValueError while "
        "building the model",
        category="config",
        rank=-1,
        node="",
        cause="num_attention_heads=6 is not a multiple of TP=4 (megatron-core TransformerConfig)",
        must_contain=(
            r"ValueError: num_attention_heads \(6\) must be a multiple of "
            r"tensor_model_parallel_size \(4\)\.",
        ),
        expected_state="FAILED",
        output="per-task",
        label=False,
        train_args=("--tensor-model-parallel-size", "4", "--num-attention-heads", "6"),
        env={"MCORE_FAULT": "megatron-heads"},
    ),
    Scenario(
        name="slurm-time-limit",
        description="healthy but slow training under #SBATCH --time=00:01:00; SLURM kills "
        "the job at its time limit (takes 60-100 s: slurmctld checks limits every ~30 s)",
        category="slurm_time_limit",
        rank=-1,
        node="",
        cause="the job reached its 1-minute SLURM time limit while still training",
        must_contain=(r"\*\*\* JOB \d+ ON node001 CANCELLED AT \S+ DUE TO TIME LIMIT \*\*\*",),
        expected_state="TIMEOUT",
        output="combined",
        label=True,
        tee=True,
        train_args=("--train-iters", "100000", "--iter-sleep", "1.0"),
        time_limit="00:01:00",
        max_seconds=200,
        light=True,
    ),
    Scenario(
        name="user-scancel",
        description="healthy training; the harness runs `scancel <jobid>` once iteration "
        "lines appear",
        category="slurm_cancelled",
        rank=-1,
        node="",
        cause="the job was cancelled with scancel while training normally",
        must_contain=(r"\*\*\* (JOB|STEP) [\d.]+ ON node001 CANCELLED AT \S+ \*\*\*",),
        expected_state="CANCELLED",
        output="split",
        label=True,
        train_args=("--train-iters", "100000", "--iter-sleep", "0.5"),
        cancel_after=r"iteration\s+3/",
        env={"TORCH_CPP_LOG_LEVEL": "INFO"},
    ),
    Scenario(
        name="bare-torchrun-no-torch",
        description="node 1's launcher is a python3 without torch (not the project venv): it "
        "dies at once with `No module named torch`; node 0 waits in the rendezvous until its "
        "20 s store timeout",
        category="import_error",
        rank=-1,
        node="1",
        cause="node 1 started `python3 -m torch.distributed.run` with an interpreter that has "
        "no torch (bare interpreter outside the venv)",
        must_contain=(
            r"Error while finding module specification for 'torch\.distributed\.run' "
            r"\(ModuleNotFoundError: No module named 'torch'\)",
            r"srun: error: node001: task 1: Exited with exit code 1",
        ),
        expected_state="FAILED",
        output="combined",
        label=False,
        bare_python_node=1,
        max_seconds=150,
    ),
    Scenario(
        name="master-port-in-use",
        description="a stale process already listens on MASTER_PORT: node 0's agent cannot "
        "create the TCPStore (EADDRINUSE); node 1 connects to the stale listener and times out",
        category="rendezvous",
        rank=-1,
        node="0",
        cause="MASTER_PORT is already in use on the master node (EADDRINUSE)",
        must_contain=(
            r"The server socket has failed to listen on any local network address\..*"
            r"EADDRINUSE",
        ),
        expected_state="FAILED",
        output="split",
        label=True,
        hold_master_port=True,
        env={"LOGLEVEL": "INFO"},
        max_seconds=150,
    ),
    Scenario(
        name="wrong-master-port",
        description="node 1 is given MASTER_PORT+1 (a per-node port formula): it cannot reach "
        "the store and its client socket times out; node 0 waits for it",
        category="rendezvous",
        rank=-1,
        node="1",
        cause="node 1 used a different master port than node 0 and could not reach the "
        "rendezvous store",
        must_contain=(r"The client socket has timed out after \S+ while trying to connect to",),
        expected_state="FAILED",
        output="per-task-split",
        label=False,
        port_offset_per_node=True,
        max_seconds=150,
    ),
    Scenario(
        name="max-restarts",
        description="torchrun --max-restarts 1 (static rendezvous): rank 0 raises at "
        "iteration 3; torchrun restarts the worker group once (attempt_1 under torchrun-logs) "
        "and the second attempt fails too -- with the same IndexError or, as the two agents "
        "restart a few seconds apart, with gloo/TCPStore connection errors",
        category="python_exception",
        rank=0,
        node="0",
        cause="IndexError on rank 0 (node 0, local rank 0) at iteration 3; the restarted "
        "worker group failed again",
        must_contain=(
            r"IndexError: index \d+ is out of bounds for dimension 0 with size \d+",
            r"Worker group FAILED\. 1/1 attempts left; will restart worker group",
        ),
        expected_state="FAILED",
        output="combined",
        label=False,
        tee=True,
        log_dir=True,
        max_restarts=1,
        train_args=("--distributed-timeout-seconds", "20"),
        env={
            "MCORE_FAULT": "exception",
            "MCORE_FAULT_RANK": "0",
            "MCORE_FAULT_ITER": "3",
            "LOGLEVEL": "INFO",
            # Both agents must restart within seconds of each other (static rendezvous): the
            # victims exit at once, as when this was recorded. No victim can be named before
            # the faulty rank here: it is local rank 0.
            "MCORE_EXIT_GRACE": "0",
        },
        max_seconds=180,
    ),
    Scenario(
        name="unknown-loader-fatal",
        description="rank 1's data-loading library (a made-up shardio, unknown to the catalog) "
        "prints one FATAL line at iteration 4 and exits 1, with no exception and no traceback; "
        "the other ranks fail in their gloo collectives and torchrun tears the job down",
        category="unknown",
        rank=1,
        node="0",
        cause="shardio's FATAL line on rank 1 (node 0, local rank 1) at iteration 4: a failure "
        "no catalog pattern knows, found as a rank-level candidate",
        must_contain=(
            r"shardio: FATAL: corrupt record header in /data/tokens/train-\d+\.bin at offset \d+",
            r"failed \(exitcode: 1\) local_rank: 1 \(pid: \d+\) of binary: ",
        ),
        expected_state="FAILED",
        output="combined",
        label=True,
        tee=True,
        env={"MCORE_FAULT": "loader-fatal", "MCORE_FAULT_RANK": "1", "MCORE_FAULT_ITER": "4"},
    ),
    Scenario(
        name="unknown-loader-fatal-again",
        description="the same unknown shardio failure in another job: rank 2, iteration 6, "
        "another shard and offset, split .out/.err files",
        category="unknown",
        rank=2,
        node="1",
        cause="shardio's FATAL line on rank 2 (node 1, local rank 0) at iteration 6: the same "
        "unknown failure as unknown-loader-fatal, with other numbers",
        must_contain=(
            r"shardio: FATAL: corrupt record header in /data/tokens/train-\d+\.bin at offset \d+",
            r"failed \(exitcode: 1\) local_rank: 0 \(pid: \d+\) of binary: ",
        ),
        expected_state="FAILED",
        output="split",
        label=True,
        tee=True,
        env={"MCORE_FAULT": "loader-fatal", "MCORE_FAULT_RANK": "2", "MCORE_FAULT_ITER": "6"},
    ),
    Scenario(
        name="worktree-not-shared",
        description="srun --chdir names a worktree the compute node does not have (the launch "
        "guide's shared-storage rule broken): slurmstepd falls back to /tmp, the agents start, "
        "and every worker fails with `can't open file '/tmp/harness/train.py'`",
        category="storage",
        rank=-1,
        node="",
        cause="the job's working directory does not exist on the node (worktree not on shared "
        "storage): slurmstepd ran the tasks from /tmp and python could not open the script",
        must_contain=(
            r"couldn't chdir to `/shared/jobs/worktree-not-shared/Megatron-LM': No such file "
            r"or directory: going to /tmp instead",
            r"can't open file '/tmp/harness/train.py': .Errno 2. No such file or directory",
        ),
        expected_state="FAILED",
        output="combined",
        label=True,
        srun_chdir="$JOB_DIR/Megatron-LM",
    ),
    Scenario(
        name="standalone-independent-worlds",
        description="torchrun --standalone on every node (the launch guide's one-worker-group "
        "rule broken): each node trains its own 2-rank world, both print rank-0 start-up "
        "lines, and the job completes with exit 0",
        category="none",
        rank=-1,
        node="",
        cause="no failure, but two independent worlds: each node trained its own model",
        must_contain=(
            r"using world size: 2, data-parallel size: 2",
            r"iteration\s+10/\s+10 \| consumed samples:",
        ),
        expected_state="COMPLETED",
        output="combined",
        label=True,
        standalone=True,
        train_args=("--train-iters", "10"),
    ),
    Scenario(
        name="nnodes-one-per-node",
        description="torchrun --nnodes 1 with --node-rank $SLURM_PROCID on every node (the launch "
        "guide's one-worker-group rule broken): node 0 trains alone, node 1 waits in the "
        "static rendezvous for ranks that never come",
        category="rendezvous",
        rank=-1,
        node="1",
        cause="--nnodes 1 on a multi-node job: node 1 (node rank 1) is outside a one-node world",
        must_contain=(r"iteration\s+10/\s+10 \| consumed samples:",),
        expected_state="FAILED",
        output="combined",
        label=True,
        nnodes_arg="1",
        train_args=("--train-iters", "10"),
        max_seconds=150,
    ),
    Scenario(
        name="master-addr-nodelist",
        description="MASTER_ADDR is the raw SLURM node list (node[001-002], what "
        "$SLURM_JOB_NODELIST holds on a 2-node allocation) instead of its first host: "
        "torch.distributed.run rejects the rendezvous endpoint on every node",
        category="rendezvous",
        rank=-1,
        node="",
        cause="MASTER_ADDR=node[001-002] is a node list, not a host name: every agent raised "
        "the rendezvous-endpoint ValueError",
        must_contain=(
            r"ValueError: The hostname of the rendezvous endpoint 'node\[001-002\]:\d+' must be "
            r"a dot-separated list of labels, an IPv4 address, or an IPv6 address\.",
        ),
        expected_state="FAILED",
        output="combined",
        label=True,
        master_addr="node[001-002]",
    ),
    Scenario(
        name="two-agents-per-node",
        description="two srun tasks on one node, each a torch.distributed.run agent with "
        "--node-rank $SLURM_NODEID (the launch guide's one-task-per-node rule broken): both "
        "agents claim node rank 0, the second cannot bind the store port (EADDRINUSE), the "
        "first waits for a node rank 1 that never comes",
        category="rendezvous",
        rank=-1,
        node="",
        cause="two launchers on one node with the same node rank: the store port was already "
        "in use",
        must_contain=(r"EADDRINUSE",),
        expected_state="FAILED",
        output="combined",
        label=True,
        node_rank="$SLURM_NODEID",
        env={"LOGLEVEL": "INFO"},
        max_seconds=150,
    ),
    Scenario(
        name="standalone-worlds-unlabelled",
        description="torchrun --standalone on every node, without srun --label: each node "
        "trains its own 2-rank world; the output shows two argument blocks with the same world "
        "size and every iteration twice, with nothing naming the node; the job exits 0",
        category="none",
        rank=-1,
        node="",
        cause="no failure, but two independent worlds: each node trained its own model",
        must_contain=(
            r"using world size: 2, data-parallel size: 2",
            r"iteration\s+10/\s+10 \| consumed samples:",
        ),
        expected_state="COMPLETED",
        output="combined",
        label=False,
        standalone=True,
        train_args=("--train-iters", "10"),
    ),
    Scenario(
        name="nnodes-above-allocation",
        description="torchrun --nnodes 3 on a 2-node job (the launch guide's NNODES=$SLURM_NNODES "
        "rule broken): both agents wait in the rendezvous for a third node that never comes "
        "until the rendezvous times out",
        category="rendezvous",
        rank=-1,
        node="",
        cause="--nnodes 3 on a 2-node job: the rendezvous waited for a third node",
        must_contain=(
            r"min_nodes\s+: 3",
            r"Timed out after \d+ seconds waiting for clients\. 2/3 clients joined\.",
        ),
        expected_state="FAILED",
        output="combined",
        label=True,
        nnodes_arg="3",
        env={"LOGLEVEL": "INFO"},
        max_seconds=200,
    ),
    Scenario(
        name="master-addr-per-node",
        description="MASTER_ADDR is set inside each node's task (as `$(hostname)` does on a real "
        "cluster): node 1 is given another address than node 0 (on this one-host stand-in, an "
        "address of the local subnet where no store listens), cannot reach the store and times "
        "out; node 0 waits for it",
        category="rendezvous",
        rank=-1,
        node="1",
        cause="node 1 used another MASTER_ADDR than node 0 and could not reach the rendezvous "
        "store",
        must_contain=(
            r"rdzv_endpoint\s+: 192\.0\.2\.77:\d+",
            r"The client socket has failed to connect to any network address of "
            r"\(192\.0\.2\.77, \d+\)",
        ),
        expected_state="FAILED",
        output="combined",
        label=True,
        node_master_addr="192.0.2.77",
        env={"LOGLEVEL": "INFO"},
        max_seconds=200,
    ),
    Scenario(
        name="worker-logs-node-local",
        description="rank 1 raises an IndexError at iteration 4, but torchrun was told "
        "--log-dir $TMPDIR/torchrun-logs --redirects 3 (a node-local path): the workers' own "
        "output, traceback included, stays on the node; the job's .out is empty and its .err "
        "holds only the agents' ChildFailedError blocks (exitcode 1, error_file <N/A>)",
        category="unknown",
        rank=1,
        node="0",
        cause="rank 1's IndexError went to a node-local --log-dir: the job's logs show only "
        "that workers exited 1, with no traceback",
        must_contain=(r"error_file: <N/A>",),
        expected_state="FAILED",
        output="split",
        label=True,
        log_dir=True,
        log_dir_path="$TMPDIR/torchrun-logs",
        env={"MCORE_FAULT": "exception", "MCORE_FAULT_RANK": "1", "MCORE_FAULT_ITER": "4"},
    ),
    Scenario(
        name="clean-success",
        description="a healthy run of 10 iterations that exits 0",
        category="none",
        rank=-1,
        node="",
        cause="no failure: the job completed",
        must_contain=(
            r"iteration\s+10/\s+10 \| consumed samples:",
            r"\[after training is done\] datetime:",
        ),
        expected_state="COMPLETED",
        output="combined",
        label=True,
        train_args=("--train-iters", "10"),
    ),
    Scenario(
        name="clean-success-verbose",
        description="a healthy run of 10 iterations with every log level turned up "
        "(LOGLEVEL=INFO, TORCH_CPP_LOG_LEVEL=INFO), torchrun --tee 3 and --log-dir: the "
        "false-alarm corpus for unknown-failure candidates (TORCH_DISTRIBUTED_DEBUG=DETAIL "
        "is left out: with it, every worker died of SIGSEGV (exitcode -11) right after DDP built "
        "its reducer)",
        category="none",
        rank=-1,
        node="",
        cause="no failure: the job completed",
        must_contain=(
            r"iteration\s+10/\s+10 \| consumed samples:",
            r"\[after training is done\] datetime:",
        ),
        expected_state="COMPLETED",
        output="combined",
        label=True,
        tee=True,
        log_dir=True,
        train_args=("--train-iters", "10"),
        env={
            "LOGLEVEL": "INFO",
            "TORCH_CPP_LOG_LEVEL": "INFO",
        },
    ),
)

_FR_ENV = {"MCORE_FR_EXIT_GRACE": "8"}


def _fr(name: str, fault: str, rank: int, **kw: object) -> Scenario:
    """A hang scenario whose ranks dump gloo's Flight Recorder buffer (harness/train.py)."""
    env = {"MCORE_FAULT": fault, "MCORE_FAULT_RANK": str(rank), "MCORE_FAULT_ITER": "4"}
    env.update(_FR_ENV)
    env.update(kw.pop("env", {}))  # type: ignore[arg-type]
    return Scenario(
        name=name,
        rank=rank,
        node=str(rank // NPROC_PER_NODE),
        expected_state="FAILED",
        train_args=("--distributed-timeout-seconds", "15"),
        env=env,
        max_seconds=150,
        flight_recorder=True,
        **kw,  # type: ignore[arg-type]
    )


FR_SCENARIOS: tuple[Scenario, ...] = (
    _fr(
        "fr-rank-stops",
        "hang",
        1,
        logs_only_rank=1,
        description="rank 1 stops calling collectives before the gradient all-reduce of "
        "iteration 4; the others time out in gloo after 15 s. Every rank dumps its Flight "
        "Recorder buffer from a watchdog thread (6 s without progress), the waiting ranks again "
        "on the collective's exception, rank 1 again on torchrun's SIGTERM; pickle and JSON",
        category="collective_timeout",
        cause="rank 1 never enqueued the gradient all-reduce the others waited in",
        must_contain=(
            r"Timed out waiting 15000ms for (recv|send) operation to complete",
            r"\[rank1\]: flight recorder dump \(SIGTERM\) written to",
            r"flight recorder dump \(watchdog: no progress for 6 s\)",
        ),
        output="split",
        env={"MCORE_FR_WATCHDOG_S": "6", "MCORE_FR_FORMAT": "both"},
    ),
    _fr(
        "fr-wrong-op",
        "wrong-op",
        2,
        logs_only_rank=2,
        description="at iteration 4 rank 2 calls broadcast where the others all-reduce the "
        "loss; the ranks time out in gloo and dump their Flight Recorder buffers on the "
        "exception",
        category="collective_timeout",
        cause="rank 2 called broadcast at the collective where the others called all_reduce",
        must_contain=(
            r"flight recorder dump \(collective failed: \w+\) written to",
            r"in reduce_loss\n.*dist\.broadcast\(reduced, src=0\)",
        ),
        output="combined",
        label=True,
    ),
    _fr(
        "fr-late-rank",
        "late",
        3,
        logs_only_rank=3,
        description="at iteration 4 rank 3 enters the loss all-reduce 18 s late, after the "
        "others' 15 s timeout (they wait 8 s for the dumps before exiting, as NCCL's watchdog "
        "does); every rank dumps its Flight Recorder buffer on the collective's exception",
        category="collective_timeout",
        cause="rank 3 entered the loss all-reduce 18 s after the others, past their 15 s timeout",
        must_contain=(r"flight recorder dump \(collective failed: \w+\) written to",),
        output="combined",
        label=True,
        env={"MCORE_FAULT_DELAY": "18"},
    ),
    _fr(
        "fr-size-bigger",
        "size-bigger",
        1,
        logs_only_rank=-1,
        description="at iteration 4 rank 1 all-reduces 2 elements where the others all-reduce "
        "a scalar loss; the ranks dump their Flight Recorder buffers on the exception",
        category="collective_timeout",
        cause="rank 1 all-reduced a tensor of 2 elements where the others all-reduced 1",
        must_contain=(r"flight recorder dump \(collective failed: \w+\) written to",),
        output="per-task",
    ),
    _fr(
        "fr-size-smaller",
        "size-smaller",
        2,
        logs_only_rank=-1,
        description="at iteration 4 rank 2 all-reduces an empty tensor where the others "
        "all-reduce a scalar loss; the ranks dump their Flight Recorder buffers on the "
        "exception",
        category="collective_timeout",
        cause="rank 2 all-reduced an empty tensor where the others all-reduced 1 element",
        must_contain=(r"flight recorder dump",),
        output="combined",
        label=True,
    ),
)
FR_SCENARIOS += (
    _fr(
        "fr-size-abort",
        "size-huge",
        1,
        logs_only_rank=-1,
        description="at iteration 4 rank 1 all-reduces 1000 elements where the others "
        "all-reduce a scalar loss: its ring neighbour aborts in gloo's I/O thread "
        "(gloo::EnforceNotMet, SIGABRT) without a dump; the others fail on the closed "
        "connection and dump their Flight Recorder buffers",
        category="collective_timeout",
        cause="rank 1 all-reduced 1000 elements where the others all-reduced 1; its neighbour "
        "aborted on the oversized message",
        must_contain=(
            r"terminate called after throwing an instance of 'gloo::EnforceNotMet'",
            r"Received data size doesn't match expected size",
            r"flight recorder dump \(collective failed: \w+\) written to",
        ),
        output="combined",
        label=True,
    ),
)
SCENARIOS = SCENARIOS + FR_SCENARIOS

UV_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="uv-sync-in-job",
        description="each srun task launches through `uv run` against a project whose .venv "
        "was never built with `uv sync` (the launch guide's uv-sync rule broken): uv creates "
        "the shared .venv and installs its package inside the job (the task that gets there "
        "first builds it, the other finds it built), then the training runs into the 1-minute "
        "time limit",
        category="slurm_time_limit",
        rank=-1,
        node="",
        cause="the job reached its time limit; uv built the venv inside the job, on every run "
        "of it, instead of once before sbatch",
        must_contain=(
            r"Creating virtual environment at: \S+\.venv",
            r"Installed \d+ packages? in",
            r"\*\*\* JOB \d+ ON node001 CANCELLED AT \S+ DUE TO TIME LIMIT \*\*\*",
        ),
        expected_state="TIMEOUT",
        output="combined",
        label=True,
        uv_run=True,
        train_args=("--train-iters", "100000", "--iter-sleep", "1.0"),
        time_limit="1",
        max_seconds=200,
        light=True,
    ),
)
SCENARIOS = SCENARIOS + UV_SCENARIOS

# Shapes: the same launch mistake printed another way (issue 41: a rule is covered post-mortem
# only when at least two recordings that print the facts differently show it).
SHAPES: dict[str, dict[str, object]] = {
    # no srun label, one combined file; each task echoes its MASTER_ADDR=... NODE_RANK=... line
    "unlabelled": {"label": False, "output": "combined", "print_facts": "echo"},
    # the same without torchrun's INFO lines (no `min_nodes :`/`rdzv_endpoint :` config dump)
    "quiet": {"label": False, "output": "combined", "print_facts": "echo", "quiet": True},
    # one file per srun task (slurm-%j-%t.out), no label: the file is all that names the task
    "per-task": {"label": False, "output": "per-task-job", "print_facts": "echo"},
    # each task dumps `env | grep` (MASTER_*, NODE_RANK, SLURM_*) instead of echo lines
    "env": {"label": True, "output": "combined", "print_facts": "env"},
}


def shaped(
    sc: Scenario, shape: str, drop: tuple[str, ...] = (), node: str | None = None
) -> Scenario:
    """``sc`` rendered in another ``shape`` (SHAPES), named ``<scenario>-<shape>``; ``drop``:
    must_contain patterns this shape cannot print (e.g. torchrun's INFO config dump); ``node``:
    the expected node where this shape changes it ("" where no line names the node)."""
    changes = dict(SHAPES[shape])
    name = f"{sc.name}-{shape}"
    env = dict(sc.env)
    if changes.pop("quiet", False):
        env.pop("LOGLEVEL", None)
    must = tuple(p.replace(sc.name, name) for p in sc.must_contain if p not in drop)
    return dataclasses.replace(
        sc,
        name=name,
        description=f"{sc.description} (the {shape} shape of {sc.name})",
        must_contain=must,
        env=env,
        shape=shape,
        node=sc.node if node is None else node,
        **changes,  # type: ignore[arg-type]
    )


_ORIGINAL = {s.name: s for s in SCENARIOS}
SHAPE_SCENARIOS: tuple[Scenario, ...] = (
    # unlabelled: the error lines name no node, so the verdict names none
    shaped(_ORIGINAL["master-addr-per-node"], "unlabelled", node=""),
    shaped(_ORIGINAL["master-addr-nodelist"], "unlabelled"),
    shaped(_ORIGINAL["wrong-master-port"], "env"),
    shaped(_ORIGINAL["wrong-master-port"], "unlabelled", node=""),
    shaped(_ORIGINAL["nnodes-one-per-node"], "unlabelled", node=""),
    shaped(_ORIGINAL["nnodes-above-allocation"], "quiet", (r"min_nodes\s+: 3",)),
    shaped(_ORIGINAL["two-agents-per-node"], "per-task"),
    shaped(_ORIGINAL["standalone-independent-worlds"], "per-task"),
    shaped(_ORIGINAL["worker-logs-node-local"], "per-task"),
    shaped(_ORIGINAL["worktree-not-shared"], "per-task"),
    shaped(_ORIGINAL["bare-torchrun-no-torch"], "per-task"),
    shaped(_ORIGINAL["master-port-in-use"], "unlabelled", node=""),
    shaped(_ORIGINAL["uv-sync-in-job"], "per-task"),
)
SCENARIOS = SCENARIOS + SHAPE_SCENARIOS

BY_NAME: dict[str, Scenario] = {s.name: s for s in SCENARIOS}


@dataclass(frozen=True)
class LaunchContext:
    """Machine-specific pieces the script needs (neutralised in the recording)."""

    repo: Path  # the checkout with harness/train.py
    python: Path  # interpreter with torch + megatron-core
    bare_python: Path | None  # interpreter without torch (bare-torchrun scenario)
    master_port: int
    uv: Path | None = None  # the uv binary (uv_run scenarios)
    uv_project: Path | None = None  # a tiny uv project whose .venv does not exist yet


def render_sbatch(sc: Scenario, ctx: LaunchContext) -> str:
    """The sbatch script for ``sc``. Submitted with the job dir as cwd, so relative
    ``--output`` paths and ``$SLURM_SUBMIT_DIR`` name the job dir."""
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={sc.name}",
        "#SBATCH --nodes=1",
        # the stand-in breaks two launch rules on purpose (docs/lint.md)
        "#SBATCH --ntasks=2"
        + ("  # mcore-diagnose: disable=tasks-per-node" if sc.node_rank == "$SLURM_PROCID" else ""),
        "#SBATCH --cpus-per-task=1",
        f"#SBATCH --time={sc.time_limit}",
    ]
    if sc.output == "split":
        lines += ["#SBATCH --output=%x-%j.out", "#SBATCH --error=%x-%j.err"]
    else:
        lines += ["#SBATCH --output=slurm-%j.out"]
    lines += [
        "",
        "# Two srun tasks on one host stand in for two nodes: NODE_RANK=$SLURM_PROCID.",
        "set -u",
        "export JOB_DIR=$SLURM_SUBMIT_DIR",
        f"cd {shlex.quote(str(ctx.repo))}",
        "",
        "export OMP_NUM_THREADS=1",
    ]
    for k, v in sc.env.items():
        lines.append(f"export {k}={shlex.quote(v)}")
    if sc.flight_recorder:
        lines += [
            "# gloo records every collective (TORCH_FR_BUFFER_SIZE, default 2000) but never dumps",
            "# by itself: harness/train.py writes $TORCH_FR_DUMP_TEMP_FILE<rank> on failure",
            "export TORCH_FR_BUFFER_SIZE=2000",
            "export TORCH_FR_DUMP_TEMP_FILE=$JOB_DIR/fr/gloo_trace_rank_",
            'mkdir -p "$JOB_DIR/fr"',
        ]
    lines += [
        *(
            ["# on a 2-node allocation $SLURM_JOB_NODELIST is a node-list expression like this"]
            if "[" in sc.master_addr
            else []
        ),
        f"export MASTER_ADDR={shlex.quote(sc.master_addr)}",
        f"export MASTER_PORT={ctx.master_port}",
        f"export NNODES={NNODES}  # mcore-diagnose: disable=allocation",
        f"export GPUS_PER_NODE={NPROC_PER_NODE}",
        f"export PYTHON={shlex.quote(str(ctx.python))}",
        "",
        'echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST: $NNODES x $GPUS_PER_NODE ranks, '
        'master $MASTER_ADDR:$MASTER_PORT"',
        "",
    ]
    launcher = '"$PYTHON"'
    if sc.uv_run:
        if ctx.uv is None or ctx.uv_project is None:
            raise ValueError(f"{sc.name} needs uv and a uv project")
        lines += [
            "# the project's venv was never built with `uv sync` before sbatch: `uv run`",
            "# creates it and installs the dependencies inside every srun task",
            f"export UV={shlex.quote(str(ctx.uv))}",
            f"export UV_PROJECT={shlex.quote(str(ctx.uv_project))}",
            'export UV_CACHE_DIR="$TMPDIR/uv-cache"',
            "",
        ]
        launcher = '"$UV" run --project "$UV_PROJECT" -- "$PYTHON"'
    if sc.bare_python_node is not None:
        if ctx.bare_python is None:
            raise ValueError(f"{sc.name} needs a python without torch")
        bare_dir = shlex.quote(str(ctx.bare_python.parent))
        lines += [
            "# the venv is only put on PATH for the first node; the others get the system",
            "# python3 that happens to be first on PATH",
            f"export PATH={bare_dir}:$PATH",
        ]
        launcher = (
            f'$( [ "$SLURM_PROCID" -ne {sc.bare_python_node} ] && echo "$PYTHON" || echo python3 )'
        )
    port = "$MASTER_PORT"
    if sc.port_offset_per_node:
        port = "$((MASTER_PORT + SLURM_PROCID))"
    facts: list[str] = []
    if sc.print_facts:
        # the task exports its own facts, then prints them (echo line or env dump)
        exports = [f"NODE_RANK={sc.node_rank}"]
        if sc.port_offset_per_node:
            exports.append(f"MASTER_PORT={port}")
            port = "$MASTER_PORT"
        facts.append("export " + " ".join(exports))
        if sc.print_facts == "env":
            facts.append("env | grep -E '^(MASTER_[A-Z]+|NODE_RANK|NNODES|GPUS_PER_NODE|SLURM_"
                         "(JOB_ID|JOB_NODELIST|NNODES|NODEID|PROCID))=' | sort")
        else:
            facts.append('echo "MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT '
                         f'NODE_RANK=$NODE_RANK NNODES={sc.nnodes_arg} '
                         'GPUS_PER_NODE=$GPUS_PER_NODE"')
    torchrun = [
        f"exec {launcher} -m torch.distributed.run",
        f"--nnodes {sc.nnodes_arg} --nproc-per-node $GPUS_PER_NODE --node-rank {sc.node_rank}",
        f"--master-addr $MASTER_ADDR --master-port {port}",
        f"--rdzv-conf timeout={sc.rdzv_timeout} --max-restarts {sc.max_restarts}",
    ]
    if sc.standalone:
        torchrun[1:3] = ["--standalone --nproc-per-node $GPUS_PER_NODE"]
    if sc.log_dir:
        torchrun.append(f"--rdzv-id $SLURM_JOB_ID --log-dir {sc.log_dir_path} --redirects 3")
    if sc.tee:
        torchrun.append("--tee 3")
    train_args = " ".join(shlex.quote(a) for a in sc.train_args)
    torchrun.append(f"harness/train.py {train_args}".rstrip())
    srun = ["srun"]
    if sc.label:
        srun.append("--label")
    if sc.srun_chdir:
        srun.append(f"--chdir={sc.srun_chdir}")
    if sc.output == "per-task":
        srun.append("--output=$JOB_DIR/task-%t.out")
    elif sc.output == "per-task-split":
        srun.append("--output=$JOB_DIR/task-%t.out --error=$JOB_DIR/task-%t.err")
    elif sc.output == "per-task-job":
        srun.append("--output=$JOB_DIR/slurm-%j-%t.out")
    body = " \\\n    ".join(torchrun)
    inner = ["  " + body.replace("'", "'\\''")]
    if facts:
        inner[:0] = ["  " + line.replace("'", "'\\''") for line in facts]
    if sc.node_master_addr is not None:
        # each node sets its own MASTER_ADDR inside its task (node 1 gets another address)
        addr = shlex.quote(sc.node_master_addr)
        echo = [] if facts else ['  echo "MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT"']
        inner[:0] = [
            line.replace("'", "'\\''")
            for line in [f'  [ "$SLURM_PROCID" -ne 0 ] && export MASTER_ADDR={addr}', *echo]
        ]
    lines += [" ".join(srun) + " bash -c '", *inner, "'", ""]
    return "\n".join(lines)

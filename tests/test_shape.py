"""The job's shape is settled once, from all the evidence, before any rank is attributed."""

from __future__ import annotations

from pathlib import Path

from analyzer.api import analyze
from tests.helpers import write_job

# Megatron's argument block (megatron/training/arguments.py _print_args) under srun's label
# and torchrun's --tee prefix, then one worker's traceback on the second node.
ARGS_THEN_TRACEBACK = """\
0: [default0]:  nproc_per_node .................................. 4
1: [default2]:Traceback (most recent call last):
1: [default2]:  File "train.py", line 3, in <module>
1: [default2]:    step()
1: [default2]:ValueError: bad batch
"""


def test_a_stated_processes_per_node_places_ranks_before_attribution(tmp_path: Path) -> None:
    """Before, the processes per node stated in the arguments reached the geometry only after
    the ranks were attributed, and the traceback of node 1's local rank 2 had no rank."""
    a = analyze(write_job(tmp_path / "job", {"slurm-1.out": ARGS_THEN_TRACEBACK}))
    g = a.attributed.geometry
    assert (g.nproc_per_node, g.nnodes, g.world_size) == (4, 2, 8)
    v = a.diagnosis.verdict
    assert (v.category, v.rank, v.local_rank, v.node) == ("python_exception", 6, 2, "1")


def test_the_geometry_is_not_resolved_again_after_the_facts(tmp_path: Path) -> None:
    """One place settles the shape: the facts agree with it and nothing changes it later."""
    a = analyze(write_job(tmp_path / "job", {"slurm-1.out": ARGS_THEN_TRACEBACK}))
    assert a.facts.get("nproc_per_node") == a.attributed.geometry.nproc_per_node == 4


def test_by_rank_node_labels_prefer_the_host_whatever_the_row_order() -> None:
    """A node some of whose lines carry its host name and some only its index is labelled by
    the host; before, the label depended on the order polars' unique() happened to give."""
    import polars as pl

    from analyzer.shape.byrank import _node_labels

    rows = [(2, "2"), (2, "gpu-node-003"), (1, "1")]
    for order in (rows, rows[::-1]):
        df = pl.DataFrame(order, schema={"node_index": pl.Int64, "node": pl.Utf8}, orient="row")
        assert _node_labels(df, None) == {1: "1", 2: "gpu-node-003"}


# ProcessGroupNCCL's watchdog line (torch 2.2-2.3 form, torch/csrc/distributed/c10d/
# ProcessGroupNCCL.cpp), printed without c10d's [rankN]: prefix (torch before 2.3 had none).
PG_LINE = (
    "[E ProcessGroupNCCL.cpp:1537] [PG {pg} Rank {rank}] Timeout at NCCL work: 5, last "
    "enqueued NCCL work: 5, last completed NCCL work: 4.\n"
)


def test_a_default_groups_rank_is_the_global_rank(tmp_path: Path) -> None:
    """``[PG 0 Rank 25]`` (the default group) names global rank 25; a subgroup's rank, or a
    bare ``[Rank N]``, names none."""
    job = write_job(
        tmp_path / "job",
        {"slurm-1.out": PG_LINE.format(pg=0, rank=25) + PG_LINE.format(pg=3, rank=1)},
    )
    rows = analyze(job).rows
    assert [(r.cap("pg_id"), r.rank) for r in rows if r.cap("pg_rank")] == [
        ("0", 25),
        ("3", None),
    ]


def test_a_default_groups_rank_inside_another_patterns_line(tmp_path: Path) -> None:
    """The ``what():`` line of a watchdog abort is claimed by the CUDA error it carries; its
    ``[PG ID 0 PG GUID 0(default_pg) Rank 2]`` still names global rank 2 (torch 2.4 form)."""
    line = (
        "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 2] Process group watchdog thread "
        "terminated with exception: CUDA error: an illegal memory access was encountered\n"
    )
    rows = analyze(write_job(tmp_path / "job", {"a.log": line})).rows
    assert [(r.category, r.rank) for r in rows if r.role == "root"] == [("cuda_error", 2)]


# tests/wild/f-megatron-exit6-pure-virtual-after-validation: two ranks on one node, then the
# torchrun agent reports the one worker that aborted (verbatim lines).
TEARDOWN_ABORT = [
    "[rank0]:[W1019 08:16:22.397556647 ProcessGroupNCCL.cpp:1477] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources. For more info, please see https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())",  # noqa: E501
    "[rank1]:[W1019 08:16:22.418489772 ProcessGroupNCCL.cpp:1477] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources. For more info, please see https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())",  # noqa: E501
    "pure virtual method called",
    "terminate called without an active exception",
    "E1019 08:21:39.599000 3036 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -6) local_rank: 0 (pid: 3042) of binary: /usr/bin/python",  # noqa: E501
]


def test_a_death_records_local_rank_does_not_bound_the_global_ranks(tmp_path: Path) -> None:
    """The agent's exit line names only the worker that died (local rank 0); global rank 1
    beyond it is the node's other worker, not a sign of a second node."""
    a = analyze(write_job(tmp_path / "job", {"slurm-1.out": "\n".join(TEARDOWN_ABORT) + "\n"}))
    assert a.attributed.geometry.one_node
    v = a.diagnosis.verdict
    assert (v.category, v.rank, v.rank_certainty) == ("native_crash", 0, "assumed")


def test_a_later_nodes_global_ranks_still_say_a_second_node(tmp_path: Path) -> None:
    """The same lines from ranks 8 and 9: local rank 0 is not global rank 0 there."""
    later = [x.replace("[rank0]", "[rank8]").replace("[rank1]", "[rank9]") for x in TEARDOWN_ABORT]
    a = analyze(write_job(tmp_path / "job", {"slurm-1.out": "\n".join(later) + "\n"}))
    assert not a.attributed.geometry.one_node
    assert a.diagnosis.verdict.rank is None


def test_facts_stated_by_captures_and_paths(tmp_path: Path) -> None:
    """A capture named for a fact (NCCL's version line, NCCL 2.21 src/init.cc) is a fact; the
    python a traceback's paths show (conda here) is ``python_env``; lines that state neither
    leave both out."""
    tb = (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/opt/conda/lib/python3.10/site-packages/torch/x.py", line 3, in f\n'
        "[rank1]: RuntimeError: boom\n"
    )
    nccl = "node001:1234:1234 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
    a = analyze(write_job(tmp_path / "a", {"slurm-1.out": nccl + tb}))
    assert a.facts.get("nccl_version") == "2.21.5+cuda12.4"
    assert a.facts.get("python_env") == "conda"
    b = analyze(write_job(tmp_path / "b", {"slurm-1.out": "[rank1]: RuntimeError: boom\n"}))
    assert b.facts.get("nccl_version") is None and b.facts.get("python_env") is None


def test_the_compute_capability_a_message_states_in_any_case() -> None:
    """``sm`` from ``sm_90``/``SM90`` or ``compute capability 9.0`` in a message, in any case
    (the regex is case-insensitive; a literal test before it must keep every such line)."""
    from analyzer.model.event import Event
    from analyzer.shape.facts import collect_facts

    def sm(message: str) -> object:
        row = Event(file="f", line=1, pattern_id="p", category="c", role="context",
                    text=message, message=message)
        return collect_facts([row]).values.get("sm")

    assert sm("built for sm_90 only") == 90
    assert sm("kernel image for SM80 missing") == 80
    assert sm("GPU with CUDA Compute Capability 8.6") == 86
    assert sm("compute capability 9.0 required") == 90
    assert sm("\u017fm_90 kernels") == 90  # LONG S: folds to "s" under IGNORECASE
    assert sm("small batch, capable device") is None
    assert sm("nothing here") is None

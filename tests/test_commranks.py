"""NCCL's init and channel lines map processes to global ranks (``analyzer/read/commranks.py``).

The log lines are real (the wild corpus cases named in each test); the claim lists are the
shapes that must name no rank."""

from __future__ import annotations

from pathlib import Path

from analyzer.api import analyze
from analyzer.decide.verdict import Verdict
from analyzer.read.commranks import Claim, comm_ranks, nccl_writer

DEEPSPEED_IB = [  # tests/wild/b-deepspeed-inference-ib-error-12 (NCCL 2.14.3, two nodes)
    "PHLRR4036:24142:24263 [3] NCCL INFO comm 0x5562191160f0 rank 3 nranks 16 cudaDev 3 busId 13000 - Init COMPLETE",  # noqa: E501
    "PHLRR4036:24148:24269 [6] NCCL INFO comm 0x55cede6d3870 rank 6 nranks 16 cudaDev 6 busId 8e000 - Init COMPLETE",  # noqa: E501
    "PHLRR4036:24139:24253 [0] NCCL INFO comm 0x5634028d2ec0 rank 0 nranks 16 cudaDev 0 busId 5000 - Init COMPLETE",  # noqa: E501
    "",
    "PHLRR4036:24141:24296 [2] ib_plugin.c:978 NCCL WARN NET/IB : Got completion from peer 10.226.98.98<48598> with error 12, opcode 0, len 0, vendor err 129",  # noqa: E501
    "PHLRR4036:24141:24296 [2] NCCL INFO include/net.h:35 -> 2",
]

SHM_CHANNELS = [  # tests/wild/b-nccl-enqueue-cuda-failure-oom (SHM transport, one host)
    "ins-7df6eojsifuykig9:3018453:3024011 [2] NCCL INFO Channel 01 : 2[1040] -> 0[1020] via SHM/direct/direct",  # noqa: E501
    "ins-7df6eojsifuykig9:3018454:3024009 [3] NCCL INFO Channel 01 : 3[1050] -> 1[1030] via SHM/direct/direct",  # noqa: E501
    "ins-7df6eojsifuykig9:3018451:3024010 [0] NCCL INFO Channel 00 : 0[1020] -> 2[1040] via SHM/direct/direct",  # noqa: E501
    "ins-7df6eojsifuykig9:3018452:3024012 [1] NCCL INFO Channel 00 : 1[1030] -> 0[1020] via SHM/direct/direct",  # noqa: E501
    "",
    "ins-7df6eojsifuykig9:3018451:3018451 [0] enqueue.cc:1085 NCCL WARN Cuda failure 'out of memory'",  # noqa: E501
]


def _verdict(tmp_path: Path, lines: list[str]) -> Verdict:
    log = tmp_path / "output.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return analyze([log]).diagnosis.verdict


def test_host_offset_names_the_rank_of_a_process_without_an_init_line(tmp_path: Path) -> None:
    """Three processes of PHLRR4036 hold rank = device; the fourth (device 2) reports the IB
    error and never printed its own init line: it is rank 2."""
    v = _verdict(tmp_path, DEEPSPEED_IB)
    assert (v.category, v.rank) == ("network", 2)


def test_channel_lines_name_the_rank_of_the_failing_pid(tmp_path: Path) -> None:
    v = _verdict(tmp_path, SHM_CHANNELS)
    assert (v.category, v.rank) == ("cuda_oom", 0)


def test_without_the_comm_lines_the_rank_stays_unknown(tmp_path: Path) -> None:
    assert _verdict(tmp_path, DEEPSPEED_IB[3:]).rank is None
    assert _verdict(tmp_path, SHM_CHANNELS[4:]).rank is None


def test_a_subgroup_of_the_paste_names_no_rank(tmp_path: Path) -> None:
    """Only pid 3018451's channel lines would give rank 0; a second process claiming rank 0
    (another communicator: a TP or DP group) makes the whole map unusable."""
    other = "ins-7df6eojsifuykig9:3018453:3024011 [2] NCCL INFO Channel 00 : 0[1040] -> 1[1050] via SHM/direct/direct"  # noqa: E501
    assert _verdict(tmp_path, [*SHM_CHANNELS[:4], other, *SHM_CHANNELS[4:]]).rank is None


def test_nccl_writer_reads_the_prefix() -> None:
    assert nccl_writer(SHM_CHANNELS[5]) == ("ins-7df6eojsifuykig9", 3018451, 0)
    ts = "[2026-06-02 03:14:07] node042:1893411:1894102 [3] transport/net_ib/p2p.cc:688 (ncclIbLogCompletionWithError) NCCL WARN NET/IB: Got completion"  # noqa: E501
    assert nccl_writer(ts) == ("node042", 1893411, 3)
    assert nccl_writer("RuntimeError: CUDA error: out of memory") is None


def test_smaller_communicators_are_subgroups_and_left_out() -> None:
    m = comm_ranks([
        Claim("n1", 10, 0, 0, 16), Claim("n1", 11, 1, 1, 16),
        Claim("n1", 10, 0, 0, 8), Claim("n1", 11, 1, 1, 8), Claim("n2", 20, 0, 0, 8),
    ])
    assert m.rank_of("n1", 11, 1) == 1
    assert m.rank_of("n2", 20, 0) is None


def test_a_process_with_two_ranks_or_a_rank_with_two_processes_drops_every_claim() -> None:
    assert not comm_ranks([Claim("n1", 10, 0, 0), Claim("n1", 10, 0, 4)])
    assert not comm_ranks([Claim("n1", 10, 0, 0), Claim("n2", 20, 0, 0)])


def test_a_known_world_size_must_be_the_communicator_size() -> None:
    claims = [Claim("n1", 10, 0, 0, 8), Claim("n1", 11, 1, 1, 8)]
    assert comm_ranks(claims, world_size=8).rank_of("n1", 10, 0) == 0
    assert not comm_ranks(claims, world_size=16)


def test_a_channel_rank_beyond_the_communicator_size_is_left_out() -> None:
    m = comm_ranks([Claim("n1", 10, 0, 0, 2), Claim("n1", 11, 1, 9)])
    assert m.rank_of("n1", 11, 1) is None


def test_host_offset_needs_two_devices_agreeing() -> None:
    one = comm_ranks([Claim("n2", 20, 0, 8, 16)])
    assert one.rank_of("n2", 21, 3) is None
    split = comm_ranks([Claim("n2", 20, 0, 8, 16), Claim("n2", 21, 1, 12, 16)])
    assert split.rank_of("n2", 22, 2) is None
    block = comm_ranks([Claim("n2", 20, 0, 8, 16), Claim("n2", 21, 1, 9, 16)])
    assert block.rank_of("n2", 22, 2) == 10
    assert block.rank_of("n3", 22, 2) is None


def test_one_gpu_per_process_devices_give_no_offset() -> None:
    """With CUDA_VISIBLE_DEVICES set per rank every process is device 0: pids still map, the
    host offset does not exist."""
    m = comm_ranks([Claim("n1", 10, 0, 4, 8), Claim("n1", 11, 0, 5, 8)])
    assert m.rank_of("n1", 11, 0) == 5
    assert m.rank_of("n1", 12, 0) is None


def test_one_process_driving_several_gpus_maps_by_device() -> None:
    """A single process with one communicator rank per GPU (ncclCommInitAll): the pid alone
    names no rank, its (pid, device) does."""
    m = comm_ranks([Claim("n1", 7, 0, 8, 16), Claim("n1", 7, 1, 9, 16)])
    assert m.rank_of("n1", 7, 1) == 9
    assert m.rank_of("n1", 7, None) is None

"""The benchmark's nccl-info profile: NCCL_DEBUG=INFO lines the catalog reads as NCCL prints
them, and a job diagnosed as the generator made it fail.

No timing here (``benchmarks/bench.py --profiles nccl-info`` measures).
"""

from __future__ import annotations

import importlib.util
import random
import sys
from collections import Counter
from pathlib import Path

from analyzer.api import analyze
from tests.helpers import ROOT, builtin_catalog


def _module(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / f"benchmarks/{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[f"bench_{name}"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_every_communicator_claims_its_rank_as_the_catalog_reads_it() -> None:
    """Rank 13 of a 16-node job (local rank 5 on node 1): 24 communicators, each with an Init
    START and COMPLETE line the catalog reads as that communicator's (rank, size), and
    channel 00 lines that claim the same rank."""
    info = _module("ncclinfo")
    world, gpus = 128, 8
    lines = info.startup_lines("node001", 4242, 5, 13, world, gpus, random.Random(1))
    cat = builtin_catalog()
    inits, channels = Counter(), set()
    for line in lines:
        pm = cat.match(line)
        if pm is None:
            continue
        if pm.pattern.id == "nccl.ctx.comm_init":
            inits[(int(pm.fields["comm_rank"]), int(pm.fields["nranks"]))] += 1
        elif pm.pattern.id == "nccl.ctx.channel":
            channels.add(int(pm.fields["comm_rank"]))
    # world: rank 13; the node's 8: local rank 5; the node's pairs (12, 13): 1; world/8 = 16
    # ranks of local rank 5 (5, 13, 21, ...): 1. START and COMPLETE of each communicator.
    assert inits == {(13, 128): 12, (5, 8): 12, (1, 2): 12, (1, 16): 12}
    assert channels == {13, 5, 1}


def test_a_channel_line_has_nccl_s_form() -> None:
    """``Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s`` (src/transport/net.cc)
    and ``... via P2P/CUMEM/read`` (src/transport/p2p.cc, cuMem and read enabled)."""
    info = _module("ncclinfo")
    lines = info.startup_lines("node000", 7, 0, 0, 128, 8, random.Random(2))
    assert "node000:7:7 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read" in lines
    assert "node000:7:7 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA" in (
        lines
    )
    rings = [line.split("NCCL INFO ", 1)[1] for line in lines if "/16 :" in line]
    assert len(rings) == 12 * 16  # the ring order, on rank 0 of each communicator across nodes
    assert all(len(r) <= 127 for r in rings)  # rings.cc's 128-byte buffer
    assert sum(len(r) == 127 for r in rings) == 6 * 16  # 128 ranks: cut where the buffer ends


def test_the_nccl_info_job_is_diagnosed_as_the_oom_rank(tmp_path: Path) -> None:
    gen = _module("generate")
    spec = gen.Spec(str(tmp_path / "job"), size_gb=0.006, nodes=2, gpus_per_node=8, nccl_info=True)
    job = gen.generate(spec, workers=1)
    a = analyze(job, workers=1)
    v = a.diagnosis.verdict
    assert (v.category, v.rank) == ("cuda_oom", spec.oom)

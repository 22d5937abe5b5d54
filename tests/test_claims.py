"""Rank claims (``patterns/claims/ranks.toml``): every declared claim reads its own example lines
with the reader it names, and the analysis takes the rank a claim gives, graded by its strength.

Example lines are real (each claim's ``refs`` say where they were printed); the end-to-end logs
below are copied from the public sources they cite."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.catalog.claims import ClaimKind, RankClaim, Reader, rank_claims
from analyzer.catalog.model import Catalog
from analyzer.lines.prefixes import split_prefixes

CLAIMS = rank_claims()


def _ids(kind: Reader) -> list[RankClaim]:
    return [c for c in CLAIMS if c.reader == kind]


def test_every_kind_of_claim_is_declared() -> None:
    assert {c.kind for c in CLAIMS} == set(ClaimKind)


def test_every_claim_cites_two_projects_or_says_why_it_is_narrow() -> None:
    for c in CLAIMS:
        assert len(c.refs) >= 2 or c.narrow or c.reader == Reader.CAPTURE, c.id


@pytest.mark.parametrize("claim", _ids(Reader.PREFIX), ids=lambda c: c.id)
def test_prefix_claims_read_their_examples(claim: RankClaim) -> None:
    assert claim.examples, claim.id
    for ex in claim.examples:
        assert getattr(split_prefixes(ex.line), claim.gives) == ex.value, ex.line
    for line in claim.counter:
        assert getattr(split_prefixes(line), claim.gives) is None, line


@pytest.mark.parametrize("claim", _ids(Reader.MESSAGE), ids=lambda c: c.id)
def test_message_claims_read_their_examples_and_nothing_else(claim: RankClaim) -> None:
    assert claim.examples and claim.counter, claim.id
    for ex in claim.examples:
        assert claim.read(split_prefixes(ex.line).message) == ex.value, ex.line
    for line in claim.counter:
        assert claim.read(line) is None, line


@pytest.mark.parametrize("claim", _ids(Reader.PATH), ids=lambda c: c.id)
def test_path_claims_name_each_file_of_a_set(claim: RankClaim, tmp_path: Path) -> None:
    """A path claim reads its example names and none of its ``not`` names. Discovery gives an
    example its rank beside a sibling that differs in that number only, and alone only when the
    claim says its name is specific enough (``alone``)."""
    from analyzer.read.discover import discover

    assert claim.examples and claim.counter, claim.id
    for name in claim.counter:
        assert claim.read(name) is None, name
    for n, ex in enumerate(claim.examples):
        assert claim.read(ex.line) == ex.value, ex.line
        m = claim.regex.search(ex.line) if claim.regex else None
        assert m is not None
        a, b = m.span("rank")
        sibling = ex.line[:a] + str(ex.value + 1) + ex.line[b:]
        for names, alone in (([ex.line, sibling], False), ([ex.line], True)):
            job = tmp_path / f"{n}-{len(names)}"
            job.mkdir()
            for name in names:
                (job / name).write_text("x\n", encoding="utf-8")
            files = {f.rel: f for f in discover([job]).files}
            got = files[ex.line].rank if claim.gives == "rank" else files[ex.line].local_rank
            want = ex.value if (not alone or claim.alone) else None
            assert got == want, (names, got)


@pytest.mark.parametrize("claim", _ids(Reader.CAPTURE), ids=lambda c: c.id)
def test_capture_claims_are_made_by_catalog_patterns(claim: RankClaim, catalog: Catalog) -> None:
    """A capture claim names a role or field that some built-in pattern declares."""
    makers = [
        p
        for p in catalog.patterns
        if any(
            (claim.role and getattr(spec, "role", None) == claim.role) or name == claim.field
            for name, spec in (p.captures or {}).items()
        )
    ]
    assert makers, claim.id


NEMO_RL = [  # NVIDIA-NeMo/RL worker output pasted in a committed note (a contiguous block)
    '(MegatronPolicyWorker[rank=9] pid=4154537) ERROR:megatron.core.utils:utils.py:2296: Exception in async function run_engine_with_coordinator: 7782',  # noqa: E501
    '(MegatronPolicyWorker[rank=9] pid=4154537) Traceback (most recent call last):',
    '(MegatronPolicyWorker[rank=9] pid=4154537)   File "/lustre/fs1/portfolios/coreai/projects/coreai_dlalgo_llm/users/shanmugamr/RL/3rdparty/Megatron-LM-workspace/Megatron-LM/megatron/core/utils.py", line 2294, in wrapper',  # noqa: E501
    '(MegatronPolicyWorker[rank=9] pid=4154537)     return await fn(*args, **kwargs)',
    '(MegatronPolicyWorker[rank=9] pid=4154537)            ^^^^^^^^^^^^^^^^^^^^^^^^^',
    '(MegatronPolicyWorker[rank=9] pid=4154537)   File "/lustre/fs1/portfolios/coreai/projects/coreai_dlalgo_llm/users/shanmugamr/RL/3rdparty/Megatron-LM-workspace/Megatron-LM/megatron/core/inference/engines/dynamic_engine.py", line 1660, in run_engine_with_coordinator',  # noqa: E501
    '(MegatronPolicyWorker[rank=9] pid=4154537)     await self.async_step()',
    '(MegatronPolicyWorker[rank=9] pid=4154537)   File "/lustre/fs1/portfolios/coreai/projects/coreai_dlalgo_llm/users/shanmugamr/RL/3rdparty/Megatron-LM-workspace/Megatron-LM/megatron/core/inference/engines/dynamic_engine.py", line 1356, in async_step',  # noqa: E501
    '(MegatronPolicyWorker[rank=9] pid=4154537)     last_step_data = await self.async_forward()',
    '(MegatronPolicyWorker[rank=9] pid=4154537)                      ^^^^^^^^^^^^^^^^^^^^^^^^^^',
    '(MegatronPolicyWorker[rank=9] pid=4154537)   File "/lustre/fs1/portfolios/coreai/projects/coreai_dlalgo_llm/users/shanmugamr/RL/3rdparty/Megatron-LM-workspace/Megatron-LM/megatron/core/inference/engines/dynamic_engine.py", line 1122, in async_forward',  # noqa: E501
    '(MegatronPolicyWorker[rank=9] pid=4154537)     raise EngineSuspendedError(self.step_count)',
    '(MegatronPolicyWorker[rank=9] pid=4154537) megatron.core.inference.engines.dynamic_engine.EngineSuspendedError: 7782',  # noqa: E501
]


def _analyze(tmp_path: Path, lines: list[str]) -> object:
    log = tmp_path / "output.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return analyze([log]).diagnosis.verdict


def test_a_ray_actor_prefix_that_carries_the_rank_names_it(tmp_path: Path) -> None:
    v = _analyze(tmp_path, NEMO_RL)
    assert (v.category, v.rank, v.rank_certainty) == ("python_exception", 9, "certain")


OLD_WATCHDOG = [  # torch <= 2.1 ProcessGroupNCCL, no [rankN]: prefix (a committed training log)
    "[E ProcessGroupNCCL.cpp:915] [Rank 0] NCCL watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered",  # noqa: E501
]


def test_a_process_groups_own_rank_is_taken_as_assumed(tmp_path: Path) -> None:
    """``[Rank N]`` is the rank in the process group that prints it (global only in the default
    group): with no prefix naming the rank, it names it, graded ``assumed``."""
    v = _analyze(tmp_path, OLD_WATCHDOG)
    assert (v.category, v.rank, v.rank_certainty) == ("cuda_error", 0, "assumed")


def test_a_prefix_rank_outweighs_the_process_groups_own(tmp_path: Path) -> None:
    """NeMo-RL: ``[rank9]:`` prefix, ``[Rank 1]`` of the tensor-parallel group: rank 9."""
    line = (
        "(MegatronPolicyWorker[rank=9] pid=3098846) [rank9]:[E129 16:38:47.714693059 "
        "ProcessGroupNCCL.cpp:683] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=49387, OpType=_ALLGATHER_BASE, NumelIn=442368, NumelOut=884736, "
        "Timeout(ms)=600000) ran for 600002 milliseconds before timing out."
    )
    assert split_prefixes(line).rank == 9

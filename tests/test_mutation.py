"""Remove the root-cause lines from a cascade and the verdict must turn honest.

Without its root cause a cascade is only timeouts and kills: the diagnosis must then say
``collective_timeout`` or ``unknown`` and name the true culprit or nobody, never a wrong rank.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.lines.prefixes import split_prefixes
from tests.helpers import SAMPLE_LOGS

CASCADES = [
    "formats/cuda-oom-cascade",
    "formats/nccl-timeout-torch-2.12-slurm-25",
    "formats/illegal-memory-access",
    "formats/old-torch-1.13-watchdog",
    "real/exception-cascade",
    "real/sigkill-rank",
]


def _strip_root(job: Path, tmp: Path) -> tuple[Path, int | None]:
    """Copy ``job`` without the lines of its verdict's events (and their tracebacks)."""
    a = analyze(job, workers=1)
    v = a.diagnosis.verdict
    culprit = v.rank
    doomed: dict[str, set[int]] = {}
    for r in a.rows:
        if r.pattern_id != v.pattern_id:
            continue
        lines = doomed.setdefault(r.file, set())
        lines.add(r.line)
        if r.traceback:
            depth = len(r.traceback.splitlines()) * 4 + 4
            lines.update(range(max(1, r.line - depth), r.line))
    copy = tmp / job.name
    shutil.copytree(job, copy)
    for rel, lines in doomed.items():
        p = copy / rel
        raw = p.read_bytes().split(b"\n")
        key = None
        kept = []
        for i, line in enumerate(raw, start=1):
            if i in lines:
                pre = split_prefixes(line.decode("utf-8", "replace"))
                # only the culprit's own lines, not another writer's interleaved ones
                if pre.rank in (None, culprit):
                    key = key or (pre.task, pre.local_rank, pre.rank)
                    continue
            kept.append(line)
        p.write_bytes(b"\n".join(kept))
    return copy, culprit


@pytest.mark.parametrize("name", CASCADES)
def test_cascade_without_its_root_is_honest(name: str, tmp_path: Path) -> None:
    job = SAMPLE_LOGS / name
    if not job.is_dir():
        pytest.skip(f"{name} is not recorded")
    before = analyze(job, workers=1).diagnosis.verdict
    mutated, culprit = _strip_root(job, tmp_path)
    after = analyze(mutated, workers=1).diagnosis.verdict
    assert after.pattern_id != before.pattern_id or after.category != before.category
    assert after.category in {
        "collective_timeout",
        "unknown",
        "nccl_error",
        "network",
        "host_oom",
        "native_crash",
        "slurm_cancelled",
    }, after.cause
    assert after.rank in (None, culprit), (after.rank, culprit, after.rank_note, after.cause)

"""Every fix reads as one piece of advice: no step said twice, none the job's facts rule out.

Checked on every bundled sample, every committed JSON snapshot and (slow) every wild case: the
verdict's fix and each advisory's fix are cut into sentences; no sentence may repeat an earlier
one (a topic already covered, or most of its words) and no sentence may state a condition the
job's facts contradict (a Blackwell/0.12 note on a Hopper job, `uv run` to a conda or container
python, "rerun with the Flight Recorder variables" when the dumps were read).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from analyzer.api import analyze
from analyzer.decide.fixsteps import catalog_steps, contradicted, repeats
from tests.helpers import ROOT, SAMPLES, WILD, builtin_catalog

SNAPSHOTS = ROOT / "tests" / "snapshots"


class _Facts:
    def __init__(self, values: dict[str, Any], dumps: bool) -> None:
        self.values, self.dumps = values, dumps

    def get(self, key: str) -> Any:
        return self.dumps if key == "flight_recorder_dumps" else self.values.get(key)


def problems(fixes: list[str], facts: _Facts) -> list[str]:
    out = []
    for fix in fixes:
        out += [f"repeats {b!r} after {a!r}" for a, b in repeats(fix)]
        out += [f"contradicted by the facts: {s.text!r}" for s in catalog_steps(fix)
                if contradicted(s.when, facts)]
    return out


def _job_problems(d: Path | list[Path]) -> list[str]:
    a = analyze(d, catalog=builtin_catalog(), workers=1)
    dumps = any(r.cap("fr_group") for r in a.rows)
    fixes = [a.diagnosis.verdict.fix] + [x.fix for x in a.diagnosis.advisories]
    return problems(fixes, _Facts(dict(a.facts.values), dumps))


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sample_fixes_are_coherent(sample: Path) -> None:
    assert _job_problems(sample) == []


@pytest.mark.parametrize("snap", sorted(SNAPSHOTS.glob("*.json")), ids=lambda p: p.name)
def test_snapshot_fixes_are_coherent(snap: Path) -> None:
    d = json.loads(snap.read_text())
    fixes = [d["verdict"]["fix"]] + [x["fix"] for x in d.get("advisories", [])]
    assert problems(fixes, _Facts(d.get("facts") or {}, False)) == []


def test_wild_fixes_are_coherent() -> None:
    cases = sorted(p.parent for p in WILD.glob("*/expected.toml"))
    assert len(cases) > 100
    logs = {d: sorted(p for p in d.iterdir() if p.is_file() and p.name != "expected.toml")
            for d in cases}
    bad = {d.name: p for d, files in logs.items() for p in [_job_problems(files)] if p}
    assert bad == {}


def test_the_check_finds_a_repeat_and_a_contradiction() -> None:
    """The check itself: the OOM fix's generic sentence after the tailored one, a Blackwell
    upgrade note on a Hopper job, `uv run` to a conda job, a rerun with dumps read."""
    oom = ("Rank 5: lower --micro-batch-size from 4 to 2; enable activation recomputation "
           "(--recompute-granularity selective). Reduce memory per GPU: lower "
           "--micro-batch-size, enable --recompute-granularity full.")
    assert problems([oom], _Facts({}, False))
    note = ("Megatron core 0.12.x also asserts with TP>1 on Blackwell (operator-precedence bug, "
            "fixed in 0.13): upgrade or set the variable.")
    assert problems([note], _Facts({"gpu_generation": "Hopper"}, False))
    assert problems([note], _Facts({"gpu_generation": "Blackwell"}, False))  # no version shown
    assert not problems([note], _Facts({"gpu_generation": "Blackwell",
                                        "megatron_version": "0.12.1"}, False))
    uv = "Launch with `uv run python -m torch.distributed.run` (not a bare `torchrun`)."
    assert problems([uv], _Facts({"python_env": "conda"}, False))
    assert not problems([uv], _Facts({"python_env": "venv"}, False))
    rerun = "Rerun with TORCH_NCCL_TRACE_BUFFER_SIZE=2000 and TORCH_NCCL_DUMP_ON_TIMEOUT=1."
    assert problems([rerun], _Facts({}, True)) and not problems([rerun], _Facts({}, False))

"""The benchmark's triage profile: its night of jobs is what it claims, and its check can fail.

No timing here (``benchmarks/bench.py --profiles triage`` measures): a handful of tiny jobs,
seconds in all.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.triage.find import find_jobs
from tests.helpers import ROOT


def _bench_module():
    spec = importlib.util.spec_from_file_location("bench_main", ROOT / "benchmarks/bench.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_main"] = mod
    spec.loader.exec_module(mod)
    return mod


bench = _bench_module()


@pytest.mark.parametrize("failure", sorted(bench.generate.FAILURES))
def test_each_failure_kind_is_diagnosed_on_its_rank(tmp_path: Path, failure: str) -> None:
    gen = bench.generate
    spec = gen.Spec(
        str(tmp_path / "job"),
        0.0002,
        2,
        8,
        seed=3,
        oom_rank=11,
        failure=failure,
        job_id=812345,
        first_node=40,
    )
    job = gen.generate(spec, workers=1)
    assert (job / "slurm-812345.out").is_file()
    v = analyze(job, workers=1).diagnosis.verdict
    assert (v.category, v.rank) == (gen.FAILURES[failure][0], 11)
    meta = json.loads((job / "generator.json").read_text())
    assert (meta["category"], meta["oom_node"]) == (gen.FAILURES[failure][0], "node041")


@pytest.fixture(scope="module")
def night(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    _base, roots = bench.ensure_triage(tmp_path_factory.mktemp("data"), [3, 7], seed=7)
    return roots


def test_each_size_root_holds_exactly_its_first_jobs(night: dict[int, Path]) -> None:
    assert sorted(night) == [3, 7]
    assert night[3].parent == night[7]
    for n, root in night.items():
        jobs = find_jobs([root])
        assert sorted(Path(j.path).name for j in jobs) == [f"job-{i:04d}" for i in range(n)]
        assert len({j.job_id for j in jobs}) == n
    want = bench.expected_jobs(night[7])
    assert len(want) == 7
    assert len(Counter(cat for cat, _ in want.values())) > 1, "one cause only: vary the mix"
    sizes = [json.loads((Path(p) / "generator.json").read_text())["bytes"] for p in want]
    assert max(sizes) < 1 << 20  # small jobs: 1,000 of them stay well under 1 GB


def test_generation_is_deterministic(tmp_path: Path, night: dict[int, Path]) -> None:
    _base, again = bench.ensure_triage(tmp_path, [3, 7], seed=7)
    for p in sorted(night[7].rglob("*.log"))[:40]:
        assert (again[7] / p.relative_to(night[7])).read_bytes() == p.read_bytes()


def test_the_check_passes_on_triage_and_fails_on_a_wrong_table(
    tmp_path: Path, night: dict[int, Path]
) -> None:
    root, out = night[7], tmp_path / "out"
    out.mkdir()
    run = bench.timed(bench.triage_cmd(root, out), sample=False)
    ok, what = bench.check_triage(run, root, out)
    assert ok, what
    want = Counter(cat for cat, _ in bench.expected_jobs(root).values())
    assert what == ", ".join(f"{k} {v}" for k, v in sorted(want.items()))

    table = out / "table.json"
    rows = json.loads(table.read_text())
    good = table.read_text()
    bad = [dict(rows[0], rank=rows[0]["rank"] + 1), *rows[1:]]
    table.write_text(json.dumps(bad))
    assert not bench.check_triage(run, root, out)[0]
    table.write_text(json.dumps(rows[1:]))
    assert "rows for" in bench.check_triage(run, root, out)[1]
    table.write_text(good)

    summary = out / "summary.md"
    text = summary.read_text()
    summary.write_text(text.replace("## Causes by count", "## Causes by count\n\n| 5 | hardware |"))
    assert "summary counts" in bench.check_triage(run, root, out)[1]
    summary.write_text(text)
    assert not bench.check_triage(bench.Run(1.0, 1.0, 0, 0, 2, b""), root, out)[0]
    assert bench.check_triage(run, root, out)[0]

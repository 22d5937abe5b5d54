"""The format-built fixtures in sample_logs/formats/ must match their generator byte for byte."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from harness.format_fixtures import SCENARIOS, generate
from tests.helpers import FORMATS

# Copied from the project's categories.md (a public contract; do not read it at test time).
CATEGORIES = {
    "python_exception", "native_crash", "cuda_oom", "host_oom", "cuda_error", "hardware",
    "network", "nccl_error", "collective_timeout", "cuda_device_max_connections", "rendezvous",
    "config", "import_error", "storage", "checkpoint", "nan_loss", "slurm_time_limit",
    "slurm_preempted", "slurm_node_fail", "slurm_cancelled", "unknown", "none",
}


def _tree(base: Path) -> dict[str, bytes]:
    return {p.relative_to(base).as_posix(): p.read_bytes()
            for p in sorted(base.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("formats")
    generate(out)
    return out


def test_at_least_ten_scenarios() -> None:
    assert len(SCENARIOS) >= 10
    assert sorted(p.name for p in FORMATS.iterdir() if p.is_dir()) == sorted(SCENARIOS)


def test_committed_fixtures_match_generator(regenerated: Path) -> None:
    fresh, committed = _tree(regenerated), _tree(FORMATS)
    assert sorted(fresh) == sorted(committed)
    drifted = [k for k in fresh if fresh[k] != committed[k]]
    assert not drifted, f"regenerate with python -m harness.format_fixtures: {drifted[:5]}"


def test_generation_is_deterministic(regenerated: Path, tmp_path: Path) -> None:
    generate(tmp_path, ["cuda-oom-cascade", "duplicate-gpu"])
    for name in ("cuda-oom-cascade", "duplicate-gpu"):
        assert _tree(tmp_path / name) == _tree(regenerated / name)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_expected_toml(name: str) -> None:
    data = tomllib.loads((FORMATS / name / "expected.toml").read_text(encoding="utf-8"))
    assert data["kind"] == "format-built"
    assert data["category"] in CATEGORIES
    assert isinstance(data["rank"], int) and data["rank"] >= -1
    assert isinstance(data["node"], str)
    if data["rank"] >= 0:
        assert re.fullmatch(r"gpu-node-\d{3}", data["node"])
    assert data["cause"] and "\n" not in data["cause"]
    assert isinstance(data["format_source"], list) and data["format_source"]
    assert all(isinstance(s, str) and s for s in data["format_source"])
    assert data["format_versions"].startswith("torch ")
    assert data["notes"]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_fixture_md(name: str) -> None:
    text = (FORMATS / name / "FIXTURE.md").read_text(encoding="utf-8")
    assert "not a real run" in text
    assert "message-formats.md" in text
    assert "Versions:" in text


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_no_machine_paths_or_markers_in_logs(name: str) -> None:
    for rel, data in _tree(FORMATS / name).items():
        text = data.decode("utf-8")
        for bad in ("/" + "work/", "/tmp/", "/" + "root/"):  # machine paths, spelt in two
            assert bad not in text, f"{rel} contains {bad}"
        if rel not in ("expected.toml", "FIXTURE.md"):
            assert "format-built" not in text and "fixture" not in text.lower(), rel


def test_version_specific_prefixes() -> None:
    oom = (FORMATS / "cuda-oom-cascade" / "slurm-48213.out").read_text(encoding="utf-8")
    # torch 2.4+: unpadded MMDD, 9-digit fraction, srun label + torchrun tee in front
    assert re.search(r"^0: \[default2\]:\[rank2\]:\[E1202 \d\d:\d\d:\d\d\.\d{9} "
                     r"ProcessGroupNCCL\.cpp:\d+\] \[PG ID 2 PG GUID 2"
                     r"\(DATA_PARALLEL_GROUP_WITH_CP\) Rank 1\]  failure detected by watchdog",
                     oom, re.M)
    assert "1: [default1]:[rank5]: torch.OutOfMemoryError: CUDA out of memory." in oom
    hang = (FORMATS / "pure-hang-missing-rank" / "pure-hang-52007.err").read_text("utf-8")
    assert re.search(r"\[rank0\]:\[E808 \d\d:", hang)  # 3-digit date quirk
    assert "[rank6]" not in hang
    old = (FORMATS / "old-torch-1.13-watchdog" / "slurm-18842.out").read_text("utf-8")
    assert "[rank" not in old
    assert "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1)" in old
    newest = (FORMATS / "nccl-timeout-torch-2.12-slurm-25"
              / "dataloader-valueerror-91234.err").read_text("utf-8")
    assert re.search(r"exitcode  : -6 \(pid: \d+\)  \(SIGABRT\)$", newest, re.M)
    assert re.search(r"exitcode  : 1 \(pid: \d+\) $", newest, re.M)
    assert re.search(r"^\[2026-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\] error: \*\*\* JOB 91234 .*"
                     r"DUE to SIGNAL Terminated \*\*\*$", newest, re.M)


def test_nccl_warn_preceded_by_blank_line() -> None:
    for log in FORMATS.rglob("*"):
        if not log.is_file() or log.name in ("expected.toml", "FIXTURE.md"):
            continue
        lines = log.read_text(encoding="utf-8").split("\n")
        for i, ln in enumerate(lines):
            if " NCCL WARN " in ln:
                prev = lines[i - 1]
                assert re.fullmatch(r"(\d+: )?(\[default\d+\]:)?", prev), (log, i)

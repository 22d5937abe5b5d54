"""Issue 41, the guide's uv-sync rule post-mortem: uv building the venv inside the job, on the
local SLURM cluster (``sample_logs/real/uv-sync-in-job``, ``srun --label`` in one file, and
``uv-sync-in-job-per-task``, per-task files without labels). The job then ran into its time
limit; the verdict is the time limit, led by the ``[uv-sync]`` finding and the guide's fix,
in both shapes and also from the directory alone (no batch script)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.decide.advise_events import GUIDE_UV_FIX
from tests.helpers import REAL

SHAPES = ("uv-sync-in-job", "uv-sync-in-job-per-task")


def _job(tmp_path: Path, name: str, script: bool) -> Path:
    if script:
        return REAL / name
    dest = tmp_path / name
    shutil.copytree(REAL / name, dest)
    (dest / "train.sbatch").unlink()
    return dest


@pytest.mark.parametrize("script", [True, False], ids=["with-script", "directory-alone"])
@pytest.mark.parametrize("name", SHAPES)
def test_the_rebuilt_venv_leads_the_time_limit(tmp_path: Path, name: str, script: bool) -> None:
    d = analyze(_job(tmp_path, name, script)).diagnosis
    v = d.verdict
    assert (d.status, v.category) == ("failed", "slurm_time_limit")
    [uv] = [a for a in d.advisories if a.rule == "uv-sync"]
    assert uv.explains_verdict and uv.fix == GUIDE_UV_FIX
    assert v.cause.startswith("Launch mistake: uv built the virtual environment inside the job")
    # the guide's fix first, in words (not the lint's sketch `uv run --no-sync ...   # …`)
    assert v.fix.startswith("Run `uv sync` once in the worktree before sbatch; launch with "
                            "`uv run --no-sync` under srun.")
    assert "..." not in v.fix
    # the evidence: uv's own lines in the job's output
    shown = " ".join(uv.evidence)
    assert "Creating virtual environment at: /shared/uv-project/.venv" in shown
    assert "Installed 1 package in" in shown


def test_both_shapes_give_the_same_finding() -> None:
    seen = set()
    for name in SHAPES:
        d = analyze(REAL / name).diagnosis
        seen.add((d.verdict.category, d.verdict.fix,
                  tuple(a.rule for a in d.advisories if a.explains_verdict)))
    assert len(seen) == 1, seen

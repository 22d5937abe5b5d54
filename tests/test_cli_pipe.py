"""A closed pipe (`| head -1`) ends the command quietly, whatever writer raised it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import write_job

# torchrun's real exit line (tests/wild), repeated on many ranks so the output outgrows a pipe.
LINE = (
    "[rank{r}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
    "GPU {r} has a total capacity of 79.10 GiB of which 1.06 GiB is free.\n"
)


@pytest.mark.parametrize("fmt", ["csv", "json", "table"])
def test_events_into_a_closed_pipe(tmp_path: Path, fmt: str) -> None:
    text = "".join(LINE.format(r=r) for r in range(4000))
    job = write_job(tmp_path / "job", {"slurm-1.out": text})
    p = subprocess.Popen(
        [sys.executable, "-m", "analyzer", "events", str(job), "-f", fmt, "--all"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    rc = p.wait()
    assert "Traceback" not in err and "Error" not in err, err
    assert rc == 0

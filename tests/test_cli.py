"""The command line as a user meets it: exit codes, formats, bad input, stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import MakeJob, cli_in_process

TB = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "train.py", line 9, in <module>\n'
    "[rank1]: KeyError: 'labels'\n"
)


def run(*args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    e = {**os.environ, **(env or {})}
    e.pop("FORCE_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        env=e,
        timeout=120,
    )


def run_here(*args: str) -> subprocess.CompletedProcess[str]:
    """``run`` in this process, for tests of formats and contents (not exit codes, pipes or
    standard input of a real process)."""
    return cli_in_process(*args, env={"FORCE_COLOR": None})


@pytest.fixture
def job(make_job: MakeJob) -> Path:
    return make_job({"slurm-7.out": "starting\n" + TB}, name="job-7")


def test_diagnosed_job_exits_0_and_json_follows_the_contract(job: Path) -> None:
    r = run(str(job), "--format", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["schema_version"] == 1 and d["status"] == "failed"
    v = d["verdict"]
    assert (v["category"], v["rank"]) == ("python_exception", 1)
    assert v["evidence"][0] == {"file": "slurm-7.out", "line": 4, "text": TB.splitlines()[-1],
                                "context": [ln.removeprefix("[rank1]: ")
                                            for ln in TB.splitlines()]}
    for key in ("pattern_id", "local_rank", "node", "time", "cause", "fix", "confidence"):
        assert key in v
    assert isinstance(d["alternatives"], list) and isinstance(d["symptoms"], dict)


def test_clean_log_exits_2(tmp_path: Path) -> None:
    (tmp_path / "slurm-1.out").write_text("iteration 1\ntraining done\n")
    r = run(str(tmp_path), "-q")
    assert r.returncode == 2
    assert r.stdout.startswith("none ")


def test_missing_path_exits_3_with_one_clear_line(tmp_path: Path) -> None:
    r = run(str(tmp_path / "nope"))
    assert r.returncode == 3
    assert "no such file or directory" in r.stderr
    assert "Traceback" not in r.stderr


def test_empty_directory_and_directory_without_logs(tmp_path: Path) -> None:
    r = run(str(tmp_path))
    assert r.returncode == 3 and "empty directory" in r.stderr
    (tmp_path / "model.pt").write_bytes(b"PK\x03\x04rest")
    r = run(str(tmp_path))
    assert r.returncode == 3 and "no log files" in r.stderr


def test_usage_error_has_its_own_exit_code(job: Path) -> None:
    r = run(str(job), "--format", "yaml")
    assert r.returncode == 64
    r = run()
    assert r.returncode == 64


def test_stdin(job: Path) -> None:
    r = run("-", "--format", "json", stdin=(job / "slurm-7.out").read_bytes())
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verdict"]["rank"] == 1


def test_pipe_output_has_no_ansi_and_no_color_is_respected(job: Path) -> None:
    for env in ({}, {"NO_COLOR": "1"}):
        r = run(str(job), env=env)
        assert "\x1b[" not in r.stdout
        assert "python_exception" in r.stdout


def test_output_file_goes_only_where_asked(job: Path, tmp_path: Path) -> None:
    before = sorted(p.name for p in job.iterdir())
    out = tmp_path / "report.json"
    r = run(str(job), "--format", "json", "-o", str(out))
    assert r.returncode == 0 and r.stdout == ""
    assert json.loads(out.read_text())["verdict"]["category"] == "python_exception"
    assert sorted(p.name for p in job.iterdir()) == before


def test_events_formats(job: Path, tmp_path: Path) -> None:
    r = run_here("events", str(job), "--format", "csv")
    assert r.returncode == 0, r.stderr
    header = r.stdout.splitlines()[0].split(",")
    for col in ("file", "line", "node", "rank", "local_rank", "attempt", "time", "stream",
                "pattern_id", "category", "role", "text"):
        assert col in header
    rows = json.loads(run_here("events", str(job), "--format", "json").stdout)
    assert rows[0]["rank"] == 1
    pq = tmp_path / "e.parquet"
    assert run_here("events", str(job), "--format", "parquet", "-o", str(pq)).returncode == 0
    import polars as pl

    assert pl.read_parquet(pq).height == 1
    br = run_here("events", str(job), "--by-rank")
    assert br.returncode == 0 and "python_exception" in br.stdout


def test_version_is_fast_to_start() -> None:
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "analyzer", "--version"],
        capture_output=True, text=True, timeout=60,
    )
    assert r.stdout.startswith("mcore-diagnose ")
    assert "polars" not in r.stderr and "regex" not in r.stderr.split()


def test_patterns_subcommands() -> None:
    assert run_here("patterns", "test").returncode == 0
    lst = run_here("patterns", "list")
    assert "python.traceback.start" in lst.stdout
    ex = run_here("patterns", "explain", "[rank3]: Traceback (most recent call last):")
    assert ex.returncode == 0 and "rank=3" in ex.stdout
    assert run_here("patterns", "show", "no.such.id").returncode == 64


@pytest.mark.parametrize("rows", [0, 1, 7])
def test_json_rows_are_write_json_whatever_the_slice(
    rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    import analyzer.cli.commands as cli
    from analyzer import analyze

    df = analyze("sample_logs/formats/cuda-oom-cascade", workers=1).events.head(rows)
    want = (df.write_json() + "\n").encode()
    for size in (1, 3, 7, 8192):
        monkeypatch.setattr(cli, "JSON_SLICE_ROWS", size)
        out = io.BytesIO()
        cli._json_rows(df, out)
        assert out.getvalue() == want, size


def test_events_table_is_the_full_table_less_context(tmp_path: Path) -> None:
    import polars as pl

    from analyzer import analyze

    job = "sample_logs/formats/cuda-oom-cascade"
    full = analyze(job, workers=1).events
    assert (full["role"] == "context").any()  # else the check below proves nothing
    pq = tmp_path / "e.parquet"
    assert run_here("events", job, "--format", "parquet", "-o", str(pq)).returncode == 0
    want = full.filter(pl.col("role") != "context")
    assert pl.read_parquet(pq).equals(want)  # the same rows, and every column of the job's
    assert run_here("events", job, "--all", "--format", "parquet", "-o", str(pq)).returncode == 0
    assert pl.read_parquet(pq).equals(full)

"""The ``ncclras`` report parser (analyzer/watch/ncclras.py) and the client runner.

Source of the format: NCCL's RAS client, ``src/ras/client_support.cc`` (NVIDIA/nccl, tags
v2.24.3-1 to v2.27.7-1, where these format strings are identical), and the user guide's
"RAS" page (NCCL 2.24+), which describes the report but prints no complete example. No real
``ncclras`` output was available, so the REPORT fixture below is NOT captured from a real job:
it is built line by line from those format strings (``rasOutAppend`` calls) with made-up
values (pids, node names, hashes): a 2-node, 8-process job where process 4321 died and rank 5's
process sent no data.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from analyzer.api import AnalyzeOptions
from analyzer.catalog.model import Catalog
from analyzer.watch.core import WatchConfig, Watcher
from analyzer.watch.detect import Thresholds
from analyzer.watch.ncclras import ask_ncclras, parse_ncclras
from tests.helpers import REAL, ROOT

# Synthetic, built from the format strings cited above (not a captured report).
REPORT = """\
NCCL version 2.27.7+cuda12.9 compiled with CUDA 12.9
CUDA runtime version 12090, driver version 12090

Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      2          4            1          8        8

Gathering data about the RAS network (timeout 5s)... obtained a result in 5.01s
 Warning: missing data from 1 process (received from 6, expected 7)
  The missing process:
  Process 4325 on node node-b managing GPU 1

Communicators... (5.02s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         2         4         8         8   RUNNING  INCOMPLETE,MISMATCH

Errors
======

INCOMPLETE
  Missing communicator data from 1 job process
  Process 4325 on node node-b managing GPU 1

DEAD
  1 job process is considered dead (unreachable via the RAS network)
  Process 4321 on node node-a managing GPU 3

#0-0 (9e8a6b2c4d1f0a37) INCOMPLETE
  Missing communicator data from 2 ranks
  Rank 3 -- GPU 3 managed by process 4321 on node node-a
  Rank 5 -- GPU 1 managed by process 4325 on node node-b

Warnings
========

TIMEOUT
  Encountered 1 communication timeout while gathering communicator data

#0-0 (9e8a6b2c4d1f0a37) MISMATCH
  Communicator ranks have different AllReduce operation counts
  5 ranks have launched up to operation 1043
  1 rank has launched up to operation 1042
  Rank 7 has launched up to operation 1042 -- GPU 3 managed by process 4327 on node node-b

"""


def test_version_and_job_summary() -> None:
    report = parse_ncclras(REPORT)
    assert report["version"] == "2.27.7+cuda12.9"
    assert report["job"] == {
        "nodes": 2, "processes_per_node": 4, "gpus_per_process": 1, "processes": 8, "gpus": 8,
    }


def test_communicator_table() -> None:
    (row,) = parse_ncclras(REPORT)["communicators"]
    assert row["ranks_per_comm"] == 8
    assert row["status"] == "RUNNING"
    assert row["errors"] == ["INCOMPLETE", "MISMATCH"]


def test_dead_and_missing_processes() -> None:
    report = parse_ncclras(REPORT)
    assert report["dead_processes"] == {
        "count": 1, "processes": [{"pid": 4321, "node": "node-a", "gpus": "3"}],
    }
    assert report["missing_processes"]["count"] == 1
    assert report["missing_processes"]["processes"][0]["pid"] == 4325
    assert report["unresponsive_pids"] == [4321, 4325]
    assert report["timeouts"] == 1


def test_communicators_with_missing_ranks() -> None:
    report = parse_ncclras(REPORT)
    incomplete, mismatch = report["communicator_errors"]
    assert (incomplete["kind"], incomplete["hash"], incomplete["missing"]) == (
        "INCOMPLETE", "9e8a6b2c4d1f0a37", 2,
    )
    assert [r["rank"] for r in report["missing_ranks"]] == [3, 5]
    assert report["missing_ranks"][0] == {
        "rank": 3, "state": None, "gpu": "3", "pid": 4321, "node": "node-a",
    }
    assert mismatch["kind"] == "MISMATCH"
    assert "Communicator ranks have different AllReduce operation counts" in mismatch["detail"]
    assert mismatch["ranks"][0]["rank"] == 7
    assert mismatch["ranks"][0]["state"] == "has launched up to operation 1042"


def test_rank_without_process_information() -> None:
    text = (
        "Errors\n======\n\n#1-0 (00000000000000ff) INCOMPLETE\n"
        "  Missing communicator data from 1 rank\n  Rank 12 -- [process information not found]\n"
    )
    (rank,) = parse_ncclras(text)["missing_ranks"]
    assert rank == {"rank": 12, "state": None, "gpu": None, "pid": None, "node": None}


def test_healthy_and_unknown_text_gives_empty_findings() -> None:
    for text in ("", "something else entirely\n\n", "Errors\n======\n\nWarnings\n========\n"):
        report = parse_ncclras(text)
        assert report["missing_ranks"] == []
        assert report["unresponsive_pids"] == []
        assert report["communicators"] == []


def test_many_processes_are_counted_not_listed() -> None:
    # NCCL prints only the count above 10 processes (RAS_CLIENT_DETAIL_THRESHOLD).
    text = (
        "Errors\n======\n\nDEAD\n"
        "  37 job processes are considered dead (unreachable via the RAS network)\n\n"
    )
    assert parse_ncclras(text)["dead_processes"] == {"count": 37, "processes": []}


def _fake_client(tmp_path: Path, body: str) -> None:
    exe = tmp_path / "ncclras"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)


def test_ask_without_client_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert ask_ncclras(1.0) is None


def test_ask_runs_the_client_and_parses(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "report.txt").write_text(REPORT)
    # Synthetic stand-in for the client: prints the fixture, records its arguments.
    _fake_client(tmp_path, f'echo "$@" > {tmp_path}/args\ncat {tmp_path}/report.txt\n')
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ.get("PATH", ""))
    report = ask_ncclras(3.0)
    assert report is not None
    assert [r["rank"] for r in report["missing_ranks"]] == [3, 5]
    assert (tmp_path / "args").read_text().split() == ["-t", "3"]


def test_ask_failing_client_gives_none(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_client(tmp_path, 'echo "Failed to connect to the NCCL RAS service!" >&2\nexit 1\n')
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ.get("PATH", ""))
    assert ask_ncclras(1.0) is None


def test_stall_finding_joins_the_report(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, catalog: Catalog
) -> None:
    """``--ncclras``: on a stall the watcher asks the client and the finding carries the parsed
    report, valid against docs/schema/watch.schema.json. The log is a real run
    (sample_logs/real/clean-success) replayed to its third iteration, then silent; the client
    is the synthetic stand-in above."""
    jsonschema = pytest.importorskip("jsonschema")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "report.txt").write_text(REPORT)
    _fake_client(bin_dir, f"cat {bin_dir}/report.txt\n")
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + os.environ.get("PATH", ""))
    job = tmp_path / "job"
    job.mkdir()
    lines = (REAL / "clean-success" / "slurm-13.out").read_bytes().splitlines(keepends=True)
    first = next(i for i, ln in enumerate(lines) if b"| consumed samples:" in ln)
    now = [1_800_000_000.0]
    cfg = WatchConfig([str(job)], str(job), AnalyzeOptions(catalog=catalog, workers=1),
                      Thresholds(fixed=10.0), ncclras=True)
    w = Watcher(cfg, lambda: now[0])
    log = job / "slurm-13.out"
    for ln in [b"".join(lines[:first]), *lines[first : first + 3]]:
        with log.open("ab") as f:
            f.write(ln)
        assert w.poll() == []
        now[0] += 1
    now[0] += 30
    (stall,) = w.poll()
    assert stall["kind"] == "stall"
    assert stall["ncclras"]["missing_ranks"][0]["rank"] == 3
    assert stall["ncclras"]["dead_processes"]["count"] == 1
    schema = json.loads((ROOT / "docs" / "schema" / "watch.schema.json").read_text("utf-8"))
    jsonschema.validate(stall, schema)


def test_stall_finding_without_the_client(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, catalog: Catalog
) -> None:
    """``--ncclras`` with no ``ncclras`` on PATH: the stall is reported, ``ncclras`` is null."""
    monkeypatch.setenv("PATH", str(tmp_path))
    lines = (REAL / "clean-success" / "slurm-13.out").read_bytes().splitlines(keepends=True)
    first = next(i for i, ln in enumerate(lines) if b"| consumed samples:" in ln)
    now = [1_800_000_000.0]
    cfg = WatchConfig([str(tmp_path)], "job", AnalyzeOptions(catalog=catalog, workers=1),
                      Thresholds(fixed=10.0), ncclras=True)
    w = Watcher(cfg, lambda: now[0])
    (tmp_path / "slurm-13.out").write_bytes(b"".join(lines[: first + 3]))
    w.poll()
    now[0] += 60
    (stall,) = w.poll()
    assert stall["kind"] == "stall" and stall["ncclras"] is None

"""Batch triage: job-directory rule, fingerprints, grouping, node implication, baseline,
shards and merge, failure isolation, the command line and safe rendering."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analyzer.decide.fingerprint import FINGERPRINT_VERSION, fingerprint, normalize, version_of
from analyzer.triage.find import (
    Job,
    find_jobs,
    job_id_of,
    parse_shard,
    read_job_list,
    select_shard,
    shard_of,
    slurm_job_id,
)
from analyzer.triage.run import COLUMNS, problem_row, run_jobs, to_frame
from tests.helpers import SAMPLES, write_job

IDX = "IndexError: index 4096 is out of bounds for dimension 0 with size 4096"


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------


def tb_job(
    root: Path,
    name: str,
    jobid: int,
    exc: str = IDX,
    rank: int = 2,
    host: str = "gpu-node-017",
    task: int = 1,
    line: int = 12,
) -> Path:
    """A job whose rank ``rank`` on ``host`` raised ``exc``: a SLURM output in the job dir and
    a torchrun --log-dir tree under ``torchrun-logs/<host>/``."""
    d = root / name
    tb = [
        f"[rank{rank}]: Traceback (most recent call last):",
        f'[rank{rank}]:   File "/lustre/fsw/u{jobid}/Megatron-LM/pretrain_gpt.py", line {line}, '
        "in <module>",
        f"[rank{rank}]:     main()",
        f"[rank{rank}]: {exc}",
    ]
    slurm_out = (
        "\n".join(f"{task}: {t}" for t in tb)
        + f"\nsrun: error: {host}: task {task}: Exited with exit code 1\n"
    )
    return write_job(
        d,
        {
            f"torchrun-logs/{host}/{jobid}_ab12/attempt_0/0/stderr.log": "\n".join(tb) + "\n",
            f"slurm-{jobid}.out": slurm_out,
        },
    )


def copy_sample(src: Path, dst: Path, new_id: int) -> None:
    """Copy a sample job directory, renaming its SLURM outputs to another job id."""
    shutil.copytree(src, dst, symlinks=True)
    for f in list(dst.iterdir()):
        if job_id_of(f.name) is not None:
            name = re.sub(
                r"(slurm-|[-_.])\d+(?=(?:_\d+)?\.(?:out|err))", rf"\g<1>{new_id}", f.name, count=1
            )
            f.rename(dst / name)


def frame_of(root: Path, **kw):
    jobs = find_jobs([root])
    return to_frame(run_jobs(jobs, workers=kw.pop("workers", 2), **kw))


def cli(
    *args: str, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    env.pop("FORCE_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "analyzer", "triage", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
        input=stdin,
    )


def same_table(a, b) -> bool:
    cols = list(COLUMNS)
    return a.select(cols).sort("path").equals(b.select(cols).sort("path"))


# ------------------------------------------------------------------------------------------
# the job-directory rule
# ------------------------------------------------------------------------------------------


def test_find_rule(tmp_path: Path) -> None:
    root = tmp_path / "nightly"
    root.mkdir()
    (root / "notes.txt").write_text("not a job\n")  # must not swallow the jobs below
    (root / "a").mkdir()
    (root / "a" / "slurm-11.out").write_text("x\n")
    (root / "a" / "sub").mkdir()
    (root / "a" / "sub" / "slurm-99.out").write_text("x\n")  # inside job a: no job of its own
    (root / "b").mkdir()
    (root / "b" / "train-12345.err").write_text("x\n")
    (root / "b" / "train-12345.out").write_text("x\n")
    tr = root / "c" / "torchrun-logs" / "1_xy" / "attempt_0" / "0"
    tr.mkdir(parents=True)
    (tr / "stderr.log").write_text("x\n")
    (root / "group" / "d").mkdir(parents=True)
    (root / "group" / "d" / "custom.log").write_text("x\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "slurm-5.out").write_text("x\n")
    (root / "e").mkdir()
    (root / "e" / "expected.toml").write_text("category = 'x'\n")
    (root / "arr").mkdir()
    (root / "arr" / "slurm-700_3.out").write_text("x\n")
    (root / "arr" / "slurm-700_12.out").write_text("x\n")
    jobs = find_jobs([root])
    got = {Path(j.path).relative_to(root).as_posix(): j.job_id for j in jobs}
    assert got == {"a": "11", "b": "12345", "c": "c", "group/d": "d", "arr": "700_12"}
    assert [j.path for j in jobs] == sorted(j.path for j in jobs)
    # a job directory given as the root is the job; a log file is a job of its own
    assert [j.job_id for j in find_jobs([root / "a"])] == ["11"]
    assert [j.job_id for j in find_jobs([root / "group" / "d"])] == ["d"]
    f = root / "a" / "slurm-11.out"
    assert find_jobs([f]) == [Job(str(f), "11")]
    # overlapping roots: the outermost job wins, no duplicates
    assert len(find_jobs([root, root / "a", root / "a" / "sub"])) == 5
    # an explicit list is taken as given
    listed = read_job_list(f"# nightly\n{root / 'a'}\n\nb\n", base=root)
    assert [(Path(j.path).name, j.job_id) for j in listed] == [("a", "11"), ("b", "12345")]
    assert slurm_job_id(["task-0.out", "slurm-42.out"]) == "42"
    assert slurm_job_id(["task-0.out", "rank-12.log"]) is None


def test_find_missing_root_is_an_error(tmp_path: Path) -> None:
    from analyzer.triage.find import FindError

    with pytest.raises(FindError):
        find_jobs([tmp_path / "nope"])


# ------------------------------------------------------------------------------------------
# fingerprints
# ------------------------------------------------------------------------------------------


def test_fingerprint_stable_across_volatile_details() -> None:
    a = fingerprint(
        "python_exception",
        "python.exception.uncaught",
        f"Rank 2 raised {IDX} at /lustre/u1/train.py:12 on gpu-node-017 pid 4242 "
        "at 2024-05-01 10:00:00 (10.0.0.17:29500, 0x7f00deadbeef)",
        hosts=["gpu-node-017"],
    )
    b = fingerprint(
        "python_exception",
        "python.exception.uncaught",
        "Rank 13 raised IndexError: index 8192 is out of bounds for dimension 1 with size 8192 "
        "at /home/bob/run/train.py:99 on dgxa pid 7 at 2025-12-31 23:59:59 "
        "(192.168.4.2:6000, 0x1234)",
        hosts=["dgxa"],
    )
    assert a == b
    assert a.startswith(f"v{FINGERPRINT_VERSION}-") and len(a) == len("v1-") + 12
    assert version_of(a) == FINGERPRINT_VERSION
    assert version_of("deadbeef") is None
    # what identifies the failure changes the fingerprint
    assert fingerprint("cuda_oom", "python.exception.uncaught", IDX) != fingerprint(
        "python_exception", "python.exception.uncaught", IDX
    )
    assert fingerprint("python_exception", "a", IDX) != fingerprint("python_exception", "b", IDX)
    assert fingerprint("python_exception", "a", "KeyError: 'labels'") != fingerprint(
        "python_exception", "a", "KeyError: 'tokens'"
    )
    with pytest.raises(ValueError):
        fingerprint("x", "y", "z", version=FINGERPRINT_VERSION + 1)


def test_normalize_masks() -> None:
    n = normalize(
        "rank 3 on node017.cluster.internal at 2024-05-01T10:00:00.5+02:00 "
        "file ../torch/csrc/ProcessGroupNCCL.cpp:1269 uuid 123e4567-e89b-12d3-a456-426614174000 "
        "see https://pytorch.org/docs/x.html"
    )
    assert "<n>" in n and "<host>" in n and "<ts>" in n and "<path>" in n
    assert "<uuid>" in n and "<url>" in n
    assert not re.search(r"\d", n)


# ------------------------------------------------------------------------------------------
# grouping and node implication
# ------------------------------------------------------------------------------------------


def test_identical_failures_group_under_one_fingerprint(tmp_path: Path) -> None:
    from analyzer.triage.summary import summarize

    root = tmp_path / "root"
    tb_job(root, "j1", 1001, rank=2, host="gpu-node-017", task=1)
    tb_job(
        root,
        "j2",
        1002,
        rank=5,
        host="gpu-node-003",
        task=2,
        line=99,
        exc="IndexError: index 8192 is out of bounds for dimension 0 with size 8192",
    )
    tb_job(root, "j3", 1003, rank=0, host="node-a", task=0)
    tb_job(root, "other", 1004, exc="KeyError: 'labels'")
    df = frame_of(root)
    assert df["status"].to_list() == ["failed"] * 4
    fps = dict(zip(df["job_id"], df["fingerprint"], strict=True))
    assert fps["1001"] == fps["1002"] == fps["1003"] != fps["1004"]
    assert set(df["fingerprint_version"].to_list()) == {FINGERPRINT_VERSION}
    s = summarize(df)
    top = s.causes.row(0, named=True)
    assert top["fingerprint"] == fps["1001"] and top["jobs"] == 3
    assert top["examples"] == ["1001", "1002", "1003"]


@pytest.mark.skipif(not SAMPLES, reason="no sample jobs recorded yet")
def test_sample_copies_group_with_their_originals(tmp_path: Path) -> None:
    from analyzer.triage.summary import summarize

    root = tmp_path / "root"
    for k, src in enumerate(SAMPLES):
        shutil.copytree(src, root / "orig" / src.name, symlinks=True)
        copy_sample(src, root / "copy1" / src.name, 880000 + k)
        copy_sample(src, root / "copy2" / f"{src.name}-rerun", 990000 + k)
    df = frame_of(root)
    assert df.height == 3 * len(SAMPLES)
    assert (df["status"] == "error").sum() == 0 and (df["status"] == "timeout").sum() == 0
    rows = {Path(r["path"]).relative_to(root).as_posix(): r for r in df.iter_rows(named=True)}
    for src in SAMPLES:
        o = rows[f"orig/{src.name}"]
        c1 = rows[f"copy1/{src.name}"]
        c2 = rows[f"copy2/{src.name}-rerun"]
        assert c1["job_id"] != o["job_id"] or o["job_id"] == src.name
        for c in (c1, c2):
            assert (c["status"], c["category"], c["fingerprint"]) == (
                o["status"],
                o["category"],
                o["fingerprint"],
            ), src.name
    s = summarize(df)
    failed = df.filter(df["status"] == "failed")
    # every cause groups at least the three copies of one failure
    assert s.causes["jobs"].min() >= 3
    assert s.causes["jobs"].sum() == failed.height
    assert s.causes.height == failed["fingerprint"].n_unique()


def test_node_implication_constructed_case(tmp_path: Path) -> None:
    from analyzer.triage.summary import render_markdown, summarize

    root = tmp_path / "root"
    tb_job(root, "j1", 2001, rank=2, host="gpu-node-017", task=1)
    tb_job(
        root,
        "j2",
        2002,
        rank=3,
        host="gpu-node-017",
        task=1,
        exc="RuntimeError: CUDA error: an illegal memory access was encountered",
    )
    tb_job(root, "j3", 2003, rank=1, host="gpu-node-017", task=0, exc="KeyError: 'labels'")
    tb_job(root, "j4", 2004, rank=1, host="gpu-node-003", task=0)
    tb_job(root, "j5", 2005, rank=6, host="gpu-node-009", task=3)
    df = frame_of(root)
    nodes = dict(zip(df["job_id"], df["node"], strict=True))
    assert nodes == {
        "2001": "gpu-node-017",
        "2002": "gpu-node-017",
        "2003": "gpu-node-017",
        "2004": "gpu-node-003",
        "2005": "gpu-node-009",
    }
    s = summarize(df)
    assert s.nodes["node"].to_list() == ["gpu-node-017"]
    r = s.nodes.row(0, named=True)
    assert r["jobs"] == 3 and r["examples"] == ["2001", "2002", "2003"]
    assert "| gpu-node-017 | 3 |" in render_markdown(s)


def test_node_indices_are_not_hosts() -> None:
    import polars as pl

    from analyzer.triage.summary import summarize

    rows = []
    for i in range(4):
        r = problem_row(Job(f"/j/{i}", str(i)), "failed", "")
        r.update(category="python_exception", fingerprint="v1-aaaaaaaaaaaa", node="1", note=None)
        rows.append(r)
    df = to_frame(rows)
    assert summarize(df).nodes.height == 0
    df = df.with_columns(pl.lit("gpu-node-017").alias("node"))
    assert summarize(df).nodes["jobs"].to_list() == [4]


# ------------------------------------------------------------------------------------------
# baseline: new versus recurring
# ------------------------------------------------------------------------------------------


def test_baseline_new_and_vanished(tmp_path: Path) -> None:
    import polars as pl

    from analyzer.triage.summary import read_table, render_markdown, summarize

    night1 = tmp_path / "night1"
    tb_job(night1, "a", 3001)  # IndexError: recurs
    tb_job(night1, "b", 3002, exc="KeyError: 'labels'")  # vanishes
    night2 = tmp_path / "night2"
    tb_job(night2, "a", 3101, rank=7, host="gpu-node-044")  # same IndexError
    tb_job(night2, "c", 3102, exc="ZeroDivisionError: division by zero")  # new
    prev = tmp_path / "prev.parquet"
    r1 = cli(str(night1), "-o", str(prev), "-q", "-j", "2")
    assert r1.returncode == 0, r1.stderr
    out = tmp_path / "now.parquet"
    md = tmp_path / "now.md"
    r2 = cli(str(night2), "-o", str(out), "--baseline", str(prev), "--summary", str(md), "-j", "2")
    assert r2.returncode == 0, r2.stderr
    before = read_table(prev)
    now = pl.read_parquet(out)
    fp = dict(zip(now["job_id"], now["fingerprint"], strict=True))
    fp_before = dict(zip(before["job_id"], before["fingerprint"], strict=True))
    assert fp["3101"] == fp_before["3001"]
    assert dict(zip(now["job_id"], now["new"], strict=True)) == {"3101": False, "3102": True}
    s = summarize(read_table(out), before, "prev.parquet")
    assert s.new == [fp["3102"]]
    assert s.vanished is not None and s.vanished["fingerprint"].to_list() == [fp_before["3002"]]
    text = md.read_text()
    assert f"new `{fp['3102']}`" in text and f"vanished `{fp_before['3002']}`" in text
    assert "1 new fingerprint(s), 1 vanished" in r2.stdout
    # a baseline made with another fingerprint scheme is not compared
    other = before.with_columns(pl.lit(FINGERPRINT_VERSION + 1).alias("fingerprint_version"))
    s2 = summarize(read_table(out), other, "old.parquet")
    assert s2.baseline is None and s2.new == [] and "not comparable" in render_markdown(s2)


# ------------------------------------------------------------------------------------------
# shards and merge
# ------------------------------------------------------------------------------------------


def test_shards_are_disjoint_cover_and_deterministic() -> None:
    jobs = [Job(f"/logs/nightly/job-{i:04d}", str(i)) for i in range(300)]
    for n in (1, 2, 3, 7):
        parts = [select_shard(jobs, i, n) for i in range(n)]
        flat = [j for p in parts for j in p]
        assert sorted(flat) == jobs and len(set(flat)) == len(jobs)
        # the same job lands in the same shard whatever else is in the listing
        sub = jobs[::5]
        assert [select_shard(sub, i, n) for i in range(n)] == [
            [j for j in p if j in sub] for p in parts
        ]
        assert [shard_of(j, n) for j in jobs] == [shard_of(j, n) for j in jobs]
    sizes = [len(select_shard(jobs, i, 3)) for i in range(3)]
    assert min(sizes) > 60  # roughly balanced
    assert parse_shard("2/3") == (2, 3)
    for bad in ("3/3", "-1/2", "1", "a/b", "0/0"):
        with pytest.raises(ValueError):
            parse_shard(bad)


@pytest.mark.slow  # about 10 s on 2 cores
def test_merge_of_parts_equals_unsharded_run(tmp_path: Path) -> None:
    import polars as pl

    root = tmp_path / "root"
    for k in range(6):
        tb_job(
            root,
            f"j{k}",
            4000 + k,
            rank=k,
            host=f"gpu-node-{k % 2:03d}",
            exc=IDX if k % 2 else f"KeyError: 'k{k % 3}'",
        )
    (root / "empty").mkdir()
    (root / "empty" / "slurm-4999.out").write_bytes(b"")
    whole = tmp_path / "whole.parquet"
    r = cli(str(root), "-o", str(whole), "-q", "-j", "2")
    assert r.returncode == 0, r.stderr
    parts = tmp_path / "parts"
    for i in range(3):
        r = cli(
            str(root), "--shard", f"{i}/3", "-o", str(parts / f"part-{i}.parquet"), "-q", "-j", "1"
        )
        assert r.returncode == 0, r.stderr
    merged = tmp_path / "merged.parquet"
    r = cli("merge", *(str(p) for p in sorted(parts.glob("*.parquet"))), "-o", str(merged))
    assert r.returncode == 0, r.stderr
    assert "Causes by count" in r.stdout
    a, b = pl.read_parquet(whole), pl.read_parquet(merged)
    assert a.height == 7 and same_table(a, b)
    sizes = [pl.read_parquet(p).height for p in sorted(parts.glob("*.parquet"))]
    assert sum(sizes) == 7
    # merging without one part says which shard is missing
    r = cli("merge", str(parts / "part-0.parquet"), str(parts / "part-1.parquet"))
    assert r.returncode == 0 and "2/3 missing" in r.stdout
    # csv and json round-trip to the same table
    from analyzer.triage.summary import read_table

    for ext in ("csv", "json"):
        out = tmp_path / f"merged.{ext}"
        r = cli("merge", *(str(p) for p in sorted(parts.glob("*.parquet"))), "-o", str(out), "-q")
        assert r.returncode == 0, r.stderr
        assert same_table(read_table(out), a), ext


# ------------------------------------------------------------------------------------------
# failure isolation
# ------------------------------------------------------------------------------------------


def fake_job(path: str, job_id: str, files: tuple[str, ...] = ()) -> dict:
    """Stand-in for the diagnosis, picked by the job's name (runs in a worker process)."""
    name = Path(path).name
    if name == "raises":
        raise RuntimeError("pathological log")
    if name == "sleeps":  # far past the 2 s limit; a worker that is not stopped writes a mark
        time.sleep(60)
        Path(path + ".woke").write_text("not stopped at its time limit\n")
    if name == "dies":
        os._exit(3)
    if name == "killed":
        os.kill(os.getpid(), 9)
    row = problem_row(Job(path, job_id), "ok", "")
    row["note"] = None
    return row


def test_failure_isolation_in_the_pool(tmp_path: Path) -> None:
    names = ["a", "raises", "b", "sleeps", "c", "dies", "d", "killed", "e"]
    jobs = [Job(str(tmp_path / n), n) for n in names]
    rows = run_jobs(jobs, workers=2, timeout=2.0, func=fake_job)
    # The sleeper was stopped, not waited for (nor left running: the pool is gone by now).
    assert not (tmp_path / "sleeps.woke").exists(), "the job past its limit ran to its end"
    by = {r["job_id"]: r for r in rows}
    assert [r["job_id"] for r in rows] == names
    assert {n: by[n]["status"] for n in names} == {
        "a": "ok",
        "raises": "error",
        "b": "ok",
        "sleeps": "timeout",
        "c": "ok",
        "dies": "error",
        "d": "ok",
        "killed": "error",
        "e": "ok",
    }
    assert "RuntimeError: pathological log" in by["raises"]["note"]
    assert "2 s limit" in by["sleeps"]["note"]
    assert "exit code 3" in by["dies"]["note"]
    assert "SIGKILL" in by["killed"]["note"]


def test_unreadable_job_dirs_are_rows(tmp_path: Path) -> None:
    from analyzer.triage.summary import render_terminal, summarize

    root = tmp_path / "root"
    tb_job(root, "good", 6001)
    loop = root / "loop"
    loop.mkdir()
    (loop / "slurm-6002.out").symlink_to("slurm-6002.out")  # a symlink loop
    (root / "empty").mkdir()
    (root / "empty" / "slurm-6003.out").write_bytes(b"")
    (root / "binary").mkdir()
    (root / "binary" / "slurm-6004.out").write_bytes(b"\x00\x01\x02\xff" * 400)
    (root / "fifo").mkdir()
    os.mkfifo(root / "fifo" / "slurm-6005.out")  # reading it would block forever
    df = frame_of(root, timeout=60)
    st = dict(zip(df["job_id"], df["status"], strict=True))
    assert st["6001"] == "failed"
    # a symlink loop and a FIFO name no job id (only files discovery would read do): the
    # directory's name is the job id
    for jid in ("loop", "6003", "6004", "fifo"):
        assert st[jid] in ("unknown", "ok", "error"), (jid, st[jid])
    notes = dict(zip(df["job_id"], df["note"], strict=True))
    assert "loop" in (notes["loop"] or "").lower() or st["loop"] == "error"
    s = summarize(df)
    assert s.total == 5 and s.failed == 1
    assert "left unknown" in render_terminal(s)


def test_timeout_through_the_real_diagnosis(tmp_path: Path) -> None:
    """The per-job limit applies to the real worker too: a tiny limit times every job out
    and the batch still finishes with one row per job."""
    root = tmp_path / "root"
    for k in range(3):
        tb_job(root, f"j{k}", 7000 + k)
    df = frame_of(root, timeout=0.001)
    assert df["status"].to_list() == ["timeout"] * 3


# ------------------------------------------------------------------------------------------
# command line and rendering
# ------------------------------------------------------------------------------------------


def test_cli_forms_and_exit_codes(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from analyzer.cli.commands import app, main

    root = tmp_path / "root"
    tb_job(root, "j1", 8001)
    runner = CliRunner()
    out = tmp_path / "t.parquet"
    r = runner.invoke(app, ["triage", str(root), "-o", str(out), "-j", "1"])
    assert r.exit_code == 0, r.output
    assert "Causes by count" in r.output and out.is_file()
    r = runner.invoke(app, ["triage", "run", "-q", "-j", "0", str(root)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["triage", "merge", str(out), "--summary", str(tmp_path / "s.html")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "s.html").read_text().startswith("<!DOCTYPE html>")
    r = runner.invoke(app, ["triage", "--help"])
    assert r.exit_code == 0 and "merge" in r.output
    for bad in (
        ["triage", "--shard", "3/3", str(root)],
        ["triage", str(tmp_path / "missing")],
        ["triage", str(root), "-o", str(tmp_path / "t.xlsx")],
        ["triage", str(root), "--baseline", str(tmp_path / "nope.parquet")],
        ["triage", "merge", str(tmp_path / "nope.parquet")],
    ):
        r = runner.invoke(app, bad)
        assert r.exit_code == 64, (bad, r.output)
    with pytest.raises(SystemExit) as exc:
        main(["triage", "--shard", "x", str(root)])
    assert exc.value.code == 64
    # --jobs-from: an explicit list
    lst = tmp_path / "jobs.txt"
    lst.write_text(f"{root / 'j1'}\n")
    r = runner.invoke(
        app, ["triage", "--jobs-from", str(lst), "-o", str(tmp_path / "l.csv"), "-j", "1", "-q"]
    )
    assert r.exit_code == 0, r.output
    assert "8001" in (tmp_path / "l.csv").read_text()


def test_triage_cli_import_is_light() -> None:
    code = (
        "import sys, analyzer.triage.cli; "
        "print(any(m in sys.modules for m in ('polars', 'analyzer.api', 'rich')))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "False", r.stderr


def test_untrusted_text_is_escaped() -> None:
    from analyzer.triage.summary import render_html, render_markdown, render_terminal, summarize

    rows = []
    for i in range(2):
        r = problem_row(Job(f"/logs/[red]job{i}[/red]<b>", f"[bold]{i}"), "failed", "")
        r.update(
            category="python_exception",
            pattern_id="p",
            node="n<script>|x",
            note=None,
            fingerprint="v1-aaaaaaaaaaaa",
            cause="ValueError: [link=http://evil]x[/link] <script>alert(1)</script> a|b",
        )
        rows.append(r)
    err = problem_row(Job("/logs/<img src=x>", "[blink]e"), "error", "boom <i>x</i> [red]y")
    s = summarize(to_frame([*rows, err]))
    term = render_terminal(s)
    assert "[link=http://evil]x[/link]" in term and "[bold]0" in term and "[red]y" in term
    html = render_html(s)
    assert "<script>" not in html and "&lt;script&gt;" in html and "<img" not in html
    assert "<i>x</i>" not in html
    md = render_markdown(s)
    assert "<script>" not in md and "a\\|b" in md and "\\[link=http://evil\\]" in md

"""Command-line conventions users know from ripgrep, ruff and gh: colour, several jobs,
several outputs, JSON on every exit, help without Python types, one timestamp form."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.report.outputs import OutputError, group_jobs, plan_outputs
from analyzer.util.color import use_color
from tests.helpers import ROOT, cli_in_process, write_job

ANSI = re.compile(r"\x1b\[")
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}([+-]\d{2}:\d{2})?$")
TB = (
    "[2026-12-02 10:00:0{s}] [rank{r}]: Traceback (most recent call last):\n"
    '[rank{r}]:   File "train.py", line 9, in <module>\n'
    "[rank{r}]: KeyError: 'labels'\n"
)
_ENV_DROP = ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE", "MCORE_DIAGNOSE_PATTERNS")


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None
        ) -> subprocess.CompletedProcess[str]:
    """``mcore-diagnose ARGS`` run in this process, output captured, the colour variables of
    this process left out: the real command's output and status, without its start-up."""
    drop: dict[str, str | None] = dict.fromkeys(_ENV_DROP)
    return cli_in_process(*args, cwd=cwd, env={**drop, **(env or {})})


def run_process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``mcore-diagnose ARGS`` in a fresh process, standard output a real pipe."""
    e = {k: v for k, v in os.environ.items() if k not in _ENV_DROP}
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "analyzer", *args], capture_output=True,
                          text=True, env=e, timeout=120)


def _job(root: Path, name: str, rank: int, second: int = 1) -> Path:
    log = "start\n" + TB.format(r=rank, s=second)
    return write_job(root / name, {f"slurm-{name[-2:]}.out": log})


# --- colour -------------------------------------------------------------------------------
class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("choice", "env", "tty", "want"),
    [
        ("auto", {}, True, True),
        ("auto", {}, False, False),
        ("auto", {"NO_COLOR": "1"}, True, False),
        ("auto", {"NO_COLOR": ""}, True, True),  # empty NO_COLOR is unset (no-color.org)
        ("auto", {"FORCE_COLOR": "1"}, False, True),
        ("auto", {"FORCE_COLOR": "0"}, False, False),
        ("auto", {"CLICOLOR_FORCE": "1"}, False, True),
        ("auto", {"TERM": "dumb"}, True, False),
        ("auto", {"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),
        ("always", {"NO_COLOR": "1", "TERM": "dumb"}, False, True),
        ("never", {"FORCE_COLOR": "1"}, True, False),
    ],
)
def test_use_color(choice: str, env: dict[str, str], tty: bool, want: bool) -> None:
    stream = _Tty() if tty else io.StringIO()
    assert use_color(choice, stream, env) is want


def test_color_option_on_a_pipe(tmp_path: Path) -> None:
    job = _job(tmp_path, "job-01", 1)
    assert ANSI.search(run_process(str(job), "--color", "always").stdout)
    assert ANSI.search(run_process(str(job), "--color=always", env={"NO_COLOR": "1"}).stdout)
    never = run_process(str(job), "--color", "never", env={"FORCE_COLOR": "1"})
    assert not ANSI.search(never.stdout)
    assert ANSI.search(run_process(str(job), env={"CLICOLOR_FORCE": "1"}).stdout)
    assert not ANSI.search(run_process(str(job)).stdout)
    r = run_process(str(job), "--color", "sometimes")
    assert r.returncode == 64 and "sometimes" in r.stderr


def test_term_dumb_on_a_terminal_is_plain(tmp_path: Path) -> None:
    from tests.test_reports import cli_on_tty

    job = _job(tmp_path, "job-01", 1)
    assert ANSI.search(cli_on_tty(str(job)))
    assert not ANSI.search(cli_on_tty(str(job), env={"TERM": "dumb"}))


# --- several jobs -------------------------------------------------------------------------
def test_group_jobs_keeps_directories_apart_and_files_together(tmp_path: Path) -> None:
    a, b = _job(tmp_path, "job-11", 1), _job(tmp_path, "job-12", 2)
    fa, fb = str(next(a.iterdir())), str(next(b.iterdir()))
    assert group_jobs([str(a), str(b)]) == [[str(a)], [str(b)]]
    assert group_jobs([fa, str(a), fb]) == [[fa, fb], [str(a)]]
    assert group_jobs(["-"]) == [["-"]]


def test_several_job_directories_give_json_lines_one_per_job(tmp_path: Path) -> None:
    a, b = _job(tmp_path, "job-21", 1), _job(tmp_path, "job-22", 3)
    r = run(str(a), str(b), "-f", "json")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2
    objs = [json.loads(ln) for ln in lines]
    assert [o["job"] for o in objs] == [str(a), str(b)]
    assert [o["verdict"]["rank"] for o in objs] == [1, 3]
    assert all(o["files_read"] == 1 for o in objs)  # not merged into one job


def test_one_job_is_one_json_line(tmp_path: Path) -> None:
    r = run(str(_job(tmp_path, "job-31", 1)), "-f", "json")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 1
    assert json.loads(r.stdout)["verdict"]["rank"] == 1


def test_files_named_explicitly_form_one_job(tmp_path: Path) -> None:
    a, b = _job(tmp_path, "job-41", 1, 1), _job(tmp_path, "job-42", 3, 5)
    r = run(str(next(a.iterdir())), str(next(b.iterdir())), "-f", "json")
    (line,) = r.stdout.splitlines()
    d = json.loads(line)
    assert d["files_read"] == 2 and d["verdict"]["rank"] == 1


def test_several_jobs_in_text_and_quiet(tmp_path: Path) -> None:
    a, b = _job(tmp_path, "job-51", 1), _job(tmp_path, "job-52", 3)
    r = run(str(a), str(b), "-q")
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{a}: python_exception rank=1")
    r = run(str(a), str(b), "-f", "text")
    assert r.stdout.count("python_exception") >= 2 and f"Job {b}" in r.stdout
    r = run(str(a), str(b), "-f", "html")
    assert r.returncode == 64 and "one job" in r.stderr


def test_exit_status_of_several_jobs_is_the_most_serious(tmp_path: Path) -> None:
    a = _job(tmp_path, "job-61", 1)
    ok = tmp_path / "job-62"
    ok.mkdir()
    (ok / "slurm-62.out").write_text("iteration 1\ndone\n")
    assert run(str(a), str(ok), "-q").returncode == 0
    r = run(str(a), str(tmp_path / "missing"), "-f", "json")
    assert r.returncode == 3
    assert [json.loads(ln)["status"] for ln in r.stdout.splitlines()] == ["failed", "unknown"]


# --- outputs ------------------------------------------------------------------------------
def test_plan_outputs() -> None:
    t = plan_outputs([Path("r.html"), Path("r.TXT"), Path("r.json"), Path("r.md")], None)
    assert [x.fmt for x in t] == ["html", "text", "json", "markdown"]
    assert plan_outputs([Path("report")], "html")[0].fmt == "html"
    assert plan_outputs([], None)[0].path is None
    with pytest.raises(OutputError, match=r"\.pdf"):
        plan_outputs([Path("r.pdf")], None)
    with pytest.raises(OutputError, match="single -o"):
        plan_outputs([Path("a.html"), Path("b.txt")], "json")
    with pytest.raises(OutputError, match="twice"):
        plan_outputs([Path("a.html"), Path("a.html")], None)


def test_repeated_output_writes_each_format_once(tmp_path: Path) -> None:
    job = _job(tmp_path, "job-71", 1)
    out = tmp_path / "out"
    out.mkdir()
    r = run(str(job), "-o", str(out / "r.html"), "-o", str(out / "r.txt"),
            "-o", str(out / "r.json"))
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    assert (out / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert "python_exception" in (out / "r.txt").read_text()
    assert not ANSI.search((out / "r.txt").read_text())
    assert json.loads((out / "r.json").read_text())["verdict"]["rank"] == 1


def test_unknown_output_suffix_is_a_usage_error(tmp_path: Path) -> None:
    job = _job(tmp_path, "job-81", 1)
    r = run(str(job), "-o", str(tmp_path / "report.pdf"))
    assert r.returncode == 64 and ".pdf" in r.stderr
    assert not (tmp_path / "report.pdf").exists()


def test_nothing_readable_still_prints_a_json_object(tmp_path: Path) -> None:
    r = run(str(tmp_path / "nope"), "-f", "json")
    assert r.returncode == 3
    d = json.loads(r.stdout)
    assert d["status"] == "unknown" and d["verdict"] is None
    assert "no such file or directory" in d["error"]
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.md").write_text("x")
    d = json.loads(run(str(empty), "-f", "json").stdout)
    assert d["status"] == "unknown" and d["skipped"][0]["file"] == "notes.md"


# --- help ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "command",
    [[], ["diagnose"], ["events"], ["patterns", "show"], ["patterns", "explain"],
     ["triage", "run"], ["triage", "merge"]],
)
def test_help_has_no_python_types(command: list[str]) -> None:
    r = run(*command, "--help", env={"COLUMNS": "100"})
    assert r.returncode == 0
    assert not re.search(r"<(list\[|int>|float>|path>|str>)|\{\w+\}", r.stdout), r.stdout


def test_help_lists_version_and_the_path_metavar() -> None:
    top = run("--help", env={"COLUMNS": "100"}).stdout
    assert "--version" in top
    diag = run("diagnose", "--help", env={"COLUMNS": "100"}).stdout
    assert "Usage: mcore-diagnose diagnose [OPTIONS] PATH..." in diag
    assert "--color WHEN" in diag and "-o, --output FILE" in diag


# --- one timestamp form -------------------------------------------------------------------
def test_timestamps_have_one_iso_form_in_json_and_events(tmp_path: Path) -> None:
    job = _job(tmp_path, "job-91", 1)
    d = json.loads(run(str(job), "-f", "json").stdout)
    assert ISO.match(d["verdict"]["time"]), d["verdict"]["time"]
    assert all(ISO.match(v["time"]) for v in d["ranks"].values() if v["time"])
    ev = json.loads(run("events", str(job), "-f", "json").stdout)
    assert ev and all(ISO.match(e["time"]) for e in ev if e["time"])
    csv = run("events", str(job), "-f", "csv").stdout.splitlines()
    col = csv[0].split(",").index("time")
    assert ISO.match(csv[1].split(",")[col])


def test_piped_triage_summary_has_no_trailing_spaces(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "root"
    for name in ("exception-cascade", "sigkill-rank"):
        shutil.copytree(ROOT / "sample_logs" / "real" / name, root / name)
    r = run("triage", str(root), "-j", "1")
    assert r.returncode == 0, r.stderr
    assert "Causes by count" in r.stdout
    assert [ln for ln in r.stdout.splitlines() if ln != ln.rstrip()] == []


SITE_PATTERN = '''
[[pattern]]
id = "site.lustre.quota"
category = "storage"
role = "root"
title = "Site quota exceeded"
needles = ["SITEFS quota exceeded"]
regex = 'SITEFS quota exceeded for project (?P<project>\\w+)'
cause = "The project {project} ran out of its storage quota."
fix = "Free space in project {project} or ask for more quota."
examples = ["SITEFS quota exceeded for project llm7"]
counter_examples = ["SITEFS quota ok for project llm7"]
'''


def test_triage_takes_patterns_and_prints_a_line_per_job_with_verbose(tmp_path: Path) -> None:
    root = tmp_path / "root"
    job = root / "job-1"
    job.mkdir(parents=True)
    (job / "slurm-4242.out").write_text("start\nSITEFS quota exceeded for project llm7\n")
    pats = tmp_path / "pats"
    pats.mkdir()
    (pats / "site.toml").write_text(SITE_PATTERN)
    out = tmp_path / "t.json"
    r = run("triage", str(root), "-p", str(pats), "-v", "-j", "1", "-q", "-o", str(out))
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(out.read_text())
    assert (row["category"], row["pattern_id"]) == ("storage", "site.lustre.quota")
    assert f"{job}: failed storage" in r.stderr
    (pats / "bad.toml").write_text("[[pattern]]\nid = 'x'\n")
    r = run("triage", str(root), "-p", str(pats), "-q")
    assert r.returncode == 64 and "cannot load patterns" in r.stderr


def test_triage_table_has_a_datetime_time_and_the_jobs_shape(tmp_path: Path) -> None:
    import shutil

    import polars as pl

    from analyzer.triage.summary import read_table

    root = tmp_path / "root"
    shutil.copytree(ROOT / "sample_logs" / "real" / "exception-cascade", root / "job")
    pq, csv = tmp_path / "t.parquet", tmp_path / "t.csv"
    assert run("triage", str(root), "-j", "1", "-q", "-o", str(pq)).returncode == 0
    df = pl.read_parquet(pq)
    assert isinstance(df.schema["time"], pl.Datetime)
    row = df.row(0, named=True)
    assert (row["world_size"], row["tp"], row["pp"], row["dp"]) == (4, 1, 1, 4)
    assert row["phase"] == "training" and row["fix"]
    assert run("triage", str(root), "-j", "1", "-q", "-o", str(csv)).returncode == 0
    text = csv.read_text().splitlines()
    assert ISO.match(text[1].split(",")[text[0].split(",").index("time")])
    assert read_table(csv).equals(read_table(pq))


def test_triage_html_summary_links_example_jobs(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "root"
    shutil.copytree(ROOT / "sample_logs" / "real" / "exception-cascade", root / "job")
    page = tmp_path / "s.html"
    assert run("triage", str(root), "-j", "1", "-q", "--summary", str(page)).returncode == 0
    html = page.read_text()
    assert f'<a href="{(root / "job").resolve().as_uri()}"' in html


def test_triage_names_nodes_by_host_when_the_logs_tell_them_apart() -> None:
    from types import SimpleNamespace

    from analyzer.triage.run import _node_label

    v = SimpleNamespace(node="1", node_index=1)
    assert _node_label(v, {0: "gpu-a", 1: "gpu-b"}) == "gpu-b"
    assert _node_label(v, {0: "node001", 1: "node001"}) == "1"  # not told apart: keep the index
    assert _node_label(SimpleNamespace(node="gpu-c", node_index=2), {}) == "gpu-c"
    assert _node_label(SimpleNamespace(node=None, node_index=None), {0: "a"}) is None


def test_triage_sacct_fills_slurm_columns_only_when_asked(tmp_path: Path) -> None:
    import shutil

    from analyzer.triage.slurm import parse_sacct

    got = parse_sacct("7|pretrain|alice|gpu|CANCELLED by 1000|2026-12-02T17:00:00|Unknown\n")
    assert got["7"]["slurm_state"] == "CANCELLED" and got["7"]["end"] is None
    assert got["7"]["start"].isoformat() == "2026-12-02T17:00:00"
    root = tmp_path / "root"
    shutil.copytree(ROOT / "sample_logs" / "real" / "exception-cascade", root / "job")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "sacct"
    fake.write_text("#!/bin/sh\necho '7|pretrain|alice|gpu|FAILED|2026-12-02T17:20:00|"
                    "2026-12-02T17:22:10'\n")
    fake.chmod(0o755)
    env = {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    out = tmp_path / "t.json"
    assert run("triage", str(root), "-j", "1", "-q", "-o", str(out), env=env).returncode == 0
    assert json.loads(out.read_text())[0]["job_name"] is None  # not asked: sacct not called
    r = run("triage", str(root), "-j", "1", "-q", "--sacct", "-o", str(out), env=env)
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(out.read_text())
    assert (row["job_name"], row["user"], row["partition"], row["slurm_state"]) == (
        "pretrain", "alice", "gpu", "FAILED")
    assert row["start"] == "2026-12-02T17:20:00.000000" and ISO.match(row["end"])

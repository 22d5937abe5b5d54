"""The command line keeps its promises: options on every command, help at 80 columns, the
default command, internal errors in one line, widths, folders of jobs (issue 30)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REAL, ROOT, cli_in_process, cli_on_tty

JOB = REAL / "exception-cascade"

# Every command and subcommand, as a user types it.
COMMANDS = [
    [],
    ["diagnose"],
    ["events"],
    ["lint"],
    ["patterns"],
    ["patterns", "list"],
    ["patterns", "show"],
    ["patterns", "test"],
    ["patterns", "explain"],
    ["patterns", "suggest"],
    ["triage"],
    ["triage", "run"],
    ["triage", "merge"],
    ["watch"],
    ["recipes"],
]
IDS = [" ".join(c) or "(root)" for c in COMMANDS]


def run(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """``mcore-diagnose ARGS`` with ``NO_COLOR=1``, its output captured, run in this process:
    what it prints and its status are those of the real command (help, usage errors, reports;
    ``run_process`` is the real command, for what is about the process)."""
    return cli_in_process(*args, cwd=cwd, env={"NO_COLOR": "1", **env})


def run_process(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``mcore-diagnose ARGS`` in a fresh process, standard output a pipe (as a user runs it)."""
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", **env},
    )


def on_terminal(*args: str, columns: int = 80) -> list[str]:
    """The lines ``mcore-diagnose ARGS`` prints on a terminal ``columns`` wide, no colour."""
    text = cli_on_tty(*args, env={"NO_COLOR": "1", "COLUMNS": str(columns), "LINES": "50"})
    return text.replace("\r\n", "\n").splitlines()


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_version_and_help_on_every_command(command: list[str]) -> None:
    v = run(*command, "--version")
    assert v.returncode == 0 and v.stdout.startswith("mcore-diagnose "), v.stderr
    h = run(*command, "--help", COLUMNS="80")
    assert h.returncode == 0, h.stderr
    assert "--version" in h.stdout and "--debug" in h.stdout


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_help_reads_right_at_80_columns(command: list[str]) -> None:
    h = run(*command, "--help", COLUMNS="80").stdout
    lines = h.splitlines()
    assert max(map(len, lines)) <= 80
    assert "``" not in h and "<path>" not in h and "<terminal" not in h
    # every example is one shell line, never re-wrapped onto the next line
    examples = [ln.strip() for ln in lines if ln.strip().startswith("mcore-diagnose ")]
    for ex in examples:
        assert not ex.endswith(("|", "--summary", "of")), ex
    nxt = {lines[i + 1].strip() for i, ln in enumerate(lines[:-1]) if ln in examples}
    assert not any(n.startswith((".verdict", "the same job")) for n in nxt)


def test_examples_in_help_are_verbatim_blocks() -> None:
    h = run("diagnose", "--help", COLUMNS="80").stdout
    assert "    mcore-diagnose logs/a/ logs/b/ -f json | jq .verdict.category\n" in h
    root = run("--help", COLUMNS="80").stdout
    # a block: consecutive example lines, no blank line between them
    assert "# diagnose a job directory\n    mcore-diagnose 1234" in root


def test_one_metavar_style() -> None:
    import re

    metavars = set()
    for command in COMMANDS:
        h = run(*command, "--help", COLUMNS="200").stdout
        metavars |= set(re.findall(r"^\s+(?:-\w, )?--[\w-]+ ([^\s]+)", h, re.M))
    assert metavars and all(m.upper() == m for m in metavars), metavars


def test_patterns_as_a_directory_name_is_not_the_subcommand(tmp_path: Path) -> None:
    from tests.test_conventions import SITE_PATTERN

    (tmp_path / "patterns").mkdir()
    (tmp_path / "patterns" / "site.toml").write_text(SITE_PATTERN)
    job = tmp_path / "job"
    job.mkdir()
    (job / "slurm-4242.out").write_text("start\nSITEFS quota exceeded for project llm7\n")
    r = run("-p", "patterns", "job", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("storage"), r.stdout


def test_a_subcommand_name_still_selects_the_subcommand() -> None:
    r = run("patterns", "list")
    assert r.returncode == 0 and "python.traceback" in r.stdout
    r = run(str(JOB), "-q")  # the default command
    assert r.returncode == 0 and r.stdout.startswith("python_exception")


@pytest.mark.parametrize("command", [["diagnose"], ["events"], ["triage"]], ids=str)
def test_negative_workers_is_a_usage_error(command: list[str]) -> None:
    r = run(*command, str(JOB), "-j", "-1")
    assert r.returncode == 64, r.stdout
    assert ("-1" in r.stderr or "workers" in r.stderr) and "Traceback" not in r.stderr


def test_lint_unreadable_script_exits_3_in_one_line(tmp_path: Path) -> None:
    r = run("lint", str(tmp_path / "missing.sbatch"))
    assert r.returncode == 3
    assert r.stderr.count("\n") == 1 and "cannot read" in r.stderr and "Usage" not in r.stderr


def test_internal_error_is_one_line_and_debug_shows_the_trace(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import analyzer.cli.diagnose as diagnose
    from analyzer.cli.commands import DEBUG_ENV, EXIT_INTERNAL, main

    def boom(*_a: object, **_k: object) -> None:
        raise KeyError("no such thing")

    monkeypatch.setattr(diagnose, "_run_one", boom)
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    with pytest.raises(SystemExit) as exc:
        main([str(JOB)])
    assert exc.value.code == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: KeyError" in err and "--debug" in err
    with pytest.raises(SystemExit):
        main([str(JOB), "--debug"])
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "internal error: KeyError" in err


@pytest.mark.parametrize(
    "args",
    [[str(JOB)], ["events", str(JOB)], ["events", str(JOB), "--by-rank"], ["patterns", "list"]],
    ids=["diagnose", "events", "events --by-rank", "patterns list"],
)
def test_output_fits_an_80_column_terminal_without_colour(args: list[str]) -> None:
    lines = on_terminal(*args, columns=80)
    assert len(lines) > 5
    assert max(map(len, lines)) <= 80, max(lines, key=len)


def test_report_uses_the_terminal_width_and_100_on_a_pipe() -> None:
    wide = on_terminal(str(JOB), columns=140)
    assert max(map(len, wide)) == 140
    piped = run_process(str(JOB), COLUMNS="").stdout.splitlines()
    assert max(map(len, piped)) == 100


def test_patterns_explain_prints_a_time_not_a_repr() -> None:
    r = run("patterns", "explain", "2026-01-01 10:00:00 [rank3]: RuntimeError: boom")
    assert "Stamp(" not in r.stdout and "time=2026-01-01 10:00:00" in r.stdout


def test_a_folder_of_jobs_is_diagnosed_job_by_job(tmp_path: Path) -> None:
    for name in ("job-a", "job-b"):
        shutil.copytree(JOB, tmp_path / "night" / name)
    r = run(str(tmp_path / "night"), "-f", "json")
    objs = [line for line in r.stdout.splitlines() if line.strip()]
    assert len(objs) == 2, r.stdout
    assert "holds 2 job directories" in r.stderr and "triage" in r.stderr
    assert "second dump" not in r.stderr
    import json

    assert [json.loads(o)["verdict"]["rank"] for o in objs] == [2, 2]


def test_a_job_with_per_rank_subdirectories_stays_one_job(tmp_path: Path) -> None:
    job = tmp_path / "job"
    for r in range(2):
        (job / f"rank{r}").mkdir(parents=True)
        (job / f"rank{r}" / "stdout.log").write_text((JOB / "slurm-7.out").read_text())
    r = run(str(job), "-f", "json")
    assert len([ln for ln in r.stdout.splitlines() if ln.strip()]) == 1
    assert "job directories" not in r.stderr


def test_several_slurm_ids_in_one_directory_get_a_warning(tmp_path: Path) -> None:
    text = (JOB / "slurm-7.out").read_text()
    (tmp_path / "slurm-11.out").write_text(text)
    (tmp_path / "slurm-12.out").write_text(text)
    r = run(str(tmp_path), "-q")
    assert "output of 2 SLURM jobs (11, 12)" in r.stderr and "triage" in r.stderr


def test_entry_point_is_the_installed_script() -> None:
    script = shutil.which("mcore-diagnose", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("mcore-diagnose is not installed in this environment")
    r = subprocess.run([script, "--version"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.startswith("mcore-diagnose ")


OPTIONS = ["--format", "--output", "--patterns", "--workers", "--verbose", "--quiet", "--color",
           "--version", "--debug"]


def _leaves(cmd: object, name: str = "") -> list[tuple[str, object]]:
    subs = getattr(cmd, "commands", None)
    if not subs:
        return [(name, cmd)]
    return [leaf for n, s in subs.items() for leaf in _leaves(s, f"{name} {n}".strip())]


def test_docs_table_of_options_matches_the_commands() -> None:
    from analyzer.cli.commands import command

    rows = []
    for name, cmd in _leaves(command()):
        have = {o for p in cmd.params for o in getattr(p, "opts", [])}  # type: ignore[attr-defined]
        rows.append(f"| `{name}` | " + " | ".join("✓" if o in have else "" for o in OPTIONS) + " |")
    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    documented = [ln for ln in doc.splitlines() if ln.startswith("| `")]
    assert sorted(documented) == sorted(rows)
    # the promise of every command: --version and --debug in every row
    assert all(r.endswith("| ✓ | ✓ |") for r in rows)


def test_a_copy_of_the_catalog_as_extra_patterns_is_not_a_broken_install() -> None:
    r = run("-p", "patterns", str(JOB), "-q", cwd=ROOT)  # the checkout's own patterns/
    assert r.returncode == 0 and r.stdout.startswith("python_exception"), r.stderr

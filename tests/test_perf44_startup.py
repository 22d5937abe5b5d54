"""Issue 44, start-up: what a command does not use is not imported.

``--version`` is answered before the commands (typer and every command's options) load, a
JSON diagnosis does not load the terminal report's panels (rich), and ``lint``'s rules load
when a script is linted, not when the command is registered.
"""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import ROOT

JOB = ROOT / "sample_logs" / "real" / "exception-cascade"


def _imported(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``mcore-diagnose ARGS`` under ``-X importtime``, and the modules it imported."""
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "analyzer", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    mods = {
        line.rsplit("|", 1)[1].strip()
        for line in r.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return r, mods


def test_version_is_answered_before_the_commands_load() -> None:
    for flag in ("--version", "-V"):
        r, mods = _imported(flag)
        assert r.returncode == 0 and r.stdout.startswith("mcore-diagnose "), r.stderr
        assert "typer" not in mods and "analyzer.cli.commands" not in mods


def test_a_command_with_version_still_answers_it() -> None:
    r, mods = _imported("lint", "--version")
    assert r.returncode == 0 and r.stdout.startswith("mcore-diagnose ")
    assert "typer" in mods  # only the bare flag takes the short way


def test_help_does_not_load_the_lint_rules() -> None:
    """Registering ``lint`` (every command does) loads its options, not its rules; they load
    when a script is linted."""
    r, mods = _imported("--help")
    assert r.returncode == 0 and "lint" in r.stdout
    assert "analyzer.lint.rules" not in mods and "analyzer.lint.launchplan" not in mods
    r, mods = _imported("lint", str(ROOT / "recipes" / "train-megatron.sbatch"))
    assert "analyzer.lint.rules" in mods and "Traceback" not in r.stderr


def test_a_json_diagnosis_does_not_load_the_terminal_report() -> None:
    r, mods = _imported(str(JOB), "--format", "json")
    assert r.returncode in (0, 1, 2) and r.stdout.startswith('{"schema_version"'), r.stderr
    assert "rich" not in mods and "analyzer.report.terminal" not in mods


def test_the_app_is_there_on_first_use() -> None:
    """``from analyzer.cli import app`` is the commands' app, loaded then (not the module
    ``analyzer.cli.app``), and stays so once the commands are loaded."""
    code = (
        "import typer.main\n"
        "from analyzer.cli import app\n"
        "print(sorted(typer.main.get_command(app).commands))\n"
        "import analyzer.cli, analyzer.cli.commands\n"
        "print(analyzer.cli.app is analyzer.cli.commands.app)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert r.returncode == 0, r.stderr
    first, same = r.stdout.splitlines()
    assert "'diagnose'" in first and "'triage'" in first and same == "True"

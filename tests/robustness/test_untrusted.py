"""Untrusted text: log lines with markup, HTML, escape sequences and huge tokens cannot change
what a report shows or does; a slow user pattern is skipped, not fatal; a job directory cannot
make the tool read outside it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _robust import CATALOG, assert_clean_exit, audited, cli

from analyzer.api import analyze
from tests.helpers import SLOW_PATTERN, write_job

EVIL = [
    "[bold red]PWNED[/bold red] [/] [link=file:///etc/passwd]x[/link] :skull:",
    '<script>alert("x")</script><img src=x onerror=alert(1)> &amp; </pre></code>',
    "\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07 \x1b]0;owned\x07 \x1b[2J\x1b[H\x1b[31m",
    "\x9b31m C1-CSI \u202eevil-bidi\u202c \x00nul \x07bell \x08backspace",
    "``` | *emph* _x_ [md](http://evil.example) <!-- -->",
    "T" * 200_000,
]


def _job(tmp_path: Path) -> Path:
    lines = ["step 1"]
    lines += ["[rank3]: Traceback (most recent call last):", '[rank3]:   File "t.py", line 1']
    lines += [f"[rank3]: ValueError: {'; '.join(EVIL[:5])}"]
    lines += [f"[rank2]: RuntimeError: {e}" for e in EVIL]
    return write_job(tmp_path / "job", {"slurm-1.out": "\n".join(lines) + "\n"})


def _no_control(text: str) -> None:
    bad = [hex(ord(c)) for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0]
    assert not bad, bad[:10]
    assert "\u202e" not in text


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = _job(tmp_path_factory.mktemp("evil"))
    out = {}
    for fmt in ("terminal", "text", "markdown", "html", "json"):
        r = cli(d, "-f", fmt, "-v")
        assert_clean_exit(r)
        assert r.code == 0
        out[fmt] = r.stdout
    return out


@pytest.mark.parametrize("fmt", ["terminal", "text", "markdown", "html", "json"])
def test_no_escape_sequence_or_control_character_reaches_a_report(
    reports: dict[str, str], fmt: str
) -> None:
    _no_control(reports[fmt])
    assert "owned" not in reports[fmt] or "]0;owned" not in reports[fmt]


@pytest.mark.parametrize("fmt", ["terminal", "text"])
def test_rich_markup_in_a_log_is_shown_not_interpreted(reports: dict[str, str], fmt: str) -> None:
    assert "[bold red]PWNED[/bold red]" in reports[fmt]


def test_html_report_escapes_everything(reports: dict[str, str]) -> None:
    html = reports["html"]
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;" in html
    assert "</pre></code>" not in html


def test_json_report_stays_valid_and_keeps_the_text(reports: dict[str, str]) -> None:
    d = json.loads(reports["json"])
    text = json.dumps(d)
    assert "PWNED" in text
    assert "\\u001b" not in text  # escape sequences were removed, not merely escaped


def test_very_long_tokens_are_cut_in_every_report(reports: dict[str, str]) -> None:
    for fmt, out in reports.items():
        assert "T" * 20_000 not in out, fmt


def test_terminal_colour_output_has_only_its_own_sgr(tmp_path: Path) -> None:
    from analyzer.report import render

    a = analyze(_job(tmp_path), catalog=CATALOG, workers=1)
    out = render(a, "terminal", color=True)
    for seq in ("\x1b]", "\x1b[2J", "\x1b[H", "\x9b"):
        assert seq not in out


# -- user patterns run with a timeout ------------------------------------------------------

def test_a_user_pattern_that_times_out_is_reported_and_skipped(tmp_path: Path) -> None:
    pats = tmp_path / "patterns"
    pats.mkdir()
    (pats / "slow.toml").write_text(SLOW_PATTERN)
    d = tmp_path / "job"
    d.mkdir()
    tb = (
        "[rank3]: Traceback (most recent call last):\n"
        '[rank3]:   File "t.py", line 1\n'
        "[rank3]: KeyError: 'x'\n"
    )
    (d / "slurm-1.out").write_text("a" * 60 + "b\n" + "a" * 70 + "c\n" + tb)
    r = cli(d, "--patterns", pats, "-f", "json")
    assert_clean_exit(r)
    assert r.code == 0
    out = json.loads(r.stdout)
    assert out["verdict"]["category"] == "python_exception"
    assert any("user.redos" in p and "longer than" in p for p in out["problems"])
    assert "user.redos" in r.stderr


# -- symlinks cannot lead outside the job directory ----------------------------------------
def test_symlinks_cannot_make_the_tool_read_outside_the_job(tmp_path: Path) -> None:
    secret_dir = tmp_path / "secret"
    secret_dir.mkdir()
    secret = secret_dir / "secret.log"
    secret.write_text(
        "[rank9]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    (secret_dir / "more.out").write_text("x\n")
    d = tmp_path / "job"
    (d / "sub").mkdir(parents=True)
    (d / "slurm-1.out").write_text("[rank3]: torch.OutOfMemoryError: CUDA out of memory.\n")
    (d / "leak.log").symlink_to(secret)
    (d / "rel.log").symlink_to("../secret/secret.log")
    (d / "dir").symlink_to(secret_dir)
    (d / "sub" / "up.out").symlink_to("../../secret/more.out")
    (d / "sub" / "chain.log").symlink_to("../leak.log")
    (d / "passwd.log").symlink_to("/etc/passwd")
    (d / "proc.log").symlink_to("/proc/self/environ")
    with audited() as audit:
        a = analyze(d, catalog=CATALOG, workers=1)
        r = cli(d, "-f", "json")
    touched = {os.path.realpath(p) for p in audit.opened + audit.listed}
    outside = {str(secret), str(secret_dir), str(secret_dir / "more.out"), "/etc/passwd"}
    assert not touched & outside, touched & outside
    assert not any(p.startswith("/proc/") and p.endswith("environ") for p in touched)
    assert a.diagnosis.verdict.rank == 3
    assert [s.file.rel for s in a.read.scans] == ["slurm-1.out"]
    assert_clean_exit(r)
    assert "rank9" not in r.stdout

"""The diagnose-on-failure recipe run as a plain script (no SLURM): defaults and guards.

The end-to-end run under a real SLURM cluster is ``tests/e2e/test_recipe_slurm.py``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

RECIPE = ROOT / "recipes" / "diagnose-on-failure.sbatch"
TB = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "train.py", line 9, in <module>\n'
    "[rank1]: KeyError: 'labels'\n"
)
OTHER = "slurmstepd: error: *** JOB 12345 ON node001 CANCELLED AT 2026-12-02T10:00:00 ***\n"


def _tool(tmp_path: Path) -> Path:
    """A wrapper running this checkout's analyzer as ``mcore-diagnose``."""
    w = tmp_path / "bin" / "mcore-diagnose"
    w.parent.mkdir(exist_ok=True)
    w.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m analyzer "$@"\n')
    w.chmod(0o755)
    return w


def _run(tmp_path: Path, submit: Path, **env: str) -> subprocess.CompletedProcess[str]:
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("SLURM_") and k not in ("MAIL_TO", "LOG_DIR", "REPORT_DIR")}
    e.update(SLURM_SUBMIT_DIR=str(submit), FAILED_JOB="1234", PYTHON=sys.executable,
             MCORE_DIAGNOSE=str(_tool(tmp_path)))
    e.update(env)
    return subprocess.run(["bash", str(RECIPE)], cwd=submit, env=e, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def submit(tmp_path: Path) -> Path:
    d = tmp_path / "submit"
    d.mkdir()
    (d / "slurm-1234.out").write_text("starting\n" + TB)
    (d / "slurm-12345.out").write_text(OTHER)  # another job in the same directory
    return d


def test_without_log_dir_reads_only_the_failed_jobs_files_and_reports_outside(
    tmp_path: Path, submit: Path
) -> None:
    for _ in range(2):  # the second run must not read the first run's reports
        r = _run(tmp_path, submit)
        assert r.returncode == 0, r.stderr
        data = json.loads((submit / "diagnosis" / "report-1234.json").read_text())
        assert data["verdict"]["category"] == "python_exception"
        assert data["files_read"] == 1
        assert "diagnose: job 1234: python_exception rank=1 node=" in r.stdout
    assert sorted(p.name for p in (submit / "diagnosis").iterdir()) == [
        "report-1234.html", "report-1234.json", "report-1234.txt"]


def test_report_dir_inside_log_dir_is_refused(tmp_path: Path, submit: Path) -> None:
    r = _run(tmp_path, submit, LOG_DIR=str(submit), REPORT_DIR=str(submit / "reports"))
    assert r.returncode == 64
    assert "inside LOG_DIR" in r.stderr
    assert not (submit / "reports").exists()


def test_no_file_for_the_job_names_what_to_do(tmp_path: Path, submit: Path) -> None:
    r = _run(tmp_path, submit, FAILED_JOB="999")
    assert r.returncode == 64 and "LOG_DIR=" in r.stderr


def test_readme_and_script_give_the_same_default_report_dir() -> None:
    script = RECIPE.read_text()
    readme = (ROOT / "recipes" / "README.md").read_text()
    m = re.search(r'^REPORT_DIR="\$\{REPORT_DIR:-(.+)\}"$', script, re.M)
    assert m and m[1] == "$SUBMIT_DIR/diagnosis"
    assert 'SUBMIT_DIR="${SLURM_SUBMIT_DIR:-$PWD}"' in script
    row = next(ln for ln in readme.splitlines() if ln.startswith("| `REPORT_DIR`"))
    assert row.rstrip(" |").endswith("`$SLURM_SUBMIT_DIR/diagnosis`")
    assert "(default `$SLURM_SUBMIT_DIR/diagnosis`" in readme


def test_mail_has_a_short_subject_with_the_cluster_and_attaches_the_page_once(
    tmp_path: Path, submit: Path
) -> None:
    import mailbox
    from email import policy

    box = tmp_path / "inbox.mbox"
    r = _run(tmp_path, submit, MAIL_TO=str(box), SLURM_CLUSTER_NAME="alps")
    assert r.returncode == 0, r.stderr
    (raw,) = list(mailbox.mbox(str(box), factory=None))
    from email import message_from_bytes

    msg = message_from_bytes(raw.as_bytes(), policy=policy.default)
    subject = str(msg["Subject"])
    assert subject.startswith("[mcore-diagnose] alps job 1234 failed: python_exception rank=1")
    assert "confidence" not in subject and len(subject) <= 150
    html_parts = [p for p in msg.walk() if p.get_content_type() == "text/html"]
    assert len(html_parts) == 1 and html_parts[0].get_filename() == "report-1234.html"
    assert "python_exception" in msg.get_body(preferencelist=("plain",)).get_content()

"""The diagnose-on-failure recipe run as a plain script (no SLURM): finding the failed job's
logs, the mail in every case, and ``mcore-diagnose recipes`` (issue 42).

The logs are real: ``sample_logs/real/exception-cascade`` (the failed job: rank 2 raised) and
``sample_logs/real/user-scancel`` (another job in the same folder, cancelled), copied under
the names SLURM gives them. ``scontrol`` and ``sacct`` are stand-ins on ``PATH`` (synthetic
scripts, not SLURM): one that knows no job, or one that names the job's output files. The end
to end run under a real SLURM cluster is ``tests/e2e/test_recipe_slurm.py``.
"""

from __future__ import annotations

import json
import mailbox
import os
import re
import shutil
import subprocess
import sys
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path

import pytest

from tests.helpers import REAL, ROOT

RECIPE = ROOT / "recipes" / "diagnose-on-failure.sbatch"
FAILED = REAL / "exception-cascade" / "slurm-7.out"  # rank 2 raised IndexError
OTHER = REAL / "user-scancel" / "user-scancel-12.out"  # another job, cancelled by its user

# Synthetic stand-ins for the SLURM client commands (not SLURM output).
NO_SLURM = "#!/bin/sh\necho \"$(basename \"$0\"): error: Invalid job id specified\" >&2\nexit 1\n"
SCONTROL_NAMES = "#!/bin/sh\necho 'JobId=1234 JobName=megatron-gpt StdErr={out} StdOut={out}'\n"


def _tool(tmp_path: Path) -> Path:
    """A wrapper running this checkout's analyzer as ``mcore-diagnose``."""
    w = tmp_path / "bin" / "mcore-diagnose"
    w.parent.mkdir(exist_ok=True)
    w.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m analyzer "$@"\n')
    w.chmod(0o755)
    return w


def _slurm_stubs(tmp_path: Path, scontrol: str = NO_SLURM) -> Path:
    """A directory with stand-in ``scontrol`` and ``sacct`` (synthetic), first on PATH."""
    d = tmp_path / "stubs"
    d.mkdir(exist_ok=True)
    for name, text in (("scontrol", scontrol), ("sacct", NO_SLURM)):
        (d / name).write_text(text)
        (d / name).chmod(0o755)
    return d


def _run(tmp_path: Path, submit: Path, scontrol: str = NO_SLURM,
         **env: str) -> subprocess.CompletedProcess[str]:
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("SLURM_", "MAIL_", "SMTP_"))
         and k not in ("LOG_DIR", "REPORT_DIR", "DIAGNOSE_ARGS")}
    stubs = _slurm_stubs(tmp_path, scontrol)
    e.update(SLURM_SUBMIT_DIR=str(submit), FAILED_JOB="1234", PYTHON=sys.executable,
             MCORE_DIAGNOSE=str(_tool(tmp_path)), PATH=f"{stubs}{os.pathsep}{e['PATH']}",
             USER="alice", HOME=str(tmp_path / "home"))
    e.update(env)
    return subprocess.run(["bash", str(RECIPE)], cwd=submit, env=e, capture_output=True,
                          text=True, timeout=300)


def _mails(box: Path) -> list[EmailMessage]:
    out = []
    for m in mailbox.mbox(str(box)):
        parsed = message_from_bytes(m.as_bytes(), policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        out.append(parsed)
    return out


def _body(msg: EmailMessage) -> str:
    part = msg.get_body(preferencelist=("plain",))
    assert isinstance(part, EmailMessage)
    return str(part.get_content())


@pytest.fixture
def submit(tmp_path: Path) -> Path:
    """A submission directory laid out as the skeleton lays it out: ``logs/%x-%j.out``."""
    d = tmp_path / "submit"
    (d / "logs").mkdir(parents=True)
    shutil.copy(FAILED, d / "logs" / "megatron-gpt-1234.out")
    shutil.copy(OTHER, d / "logs" / "megatron-gpt-12345.out")  # another job, same folder
    return d


def test_skeleton_layout_is_found_without_log_dir_and_only_that_job_is_read(
    tmp_path: Path, submit: Path
) -> None:
    for _ in range(2):  # the second run must not read the first run's reports
        r = _run(tmp_path, submit)
        assert r.returncode == 0, r.stderr
        data = json.loads((submit / "diagnosis" / "report-1234.json").read_text())
        assert data["verdict"]["category"] == "python_exception"
        assert data["verdict"]["rank"] == 2
        assert data["files_read"] == 1
        assert "diagnose: job 1234: python_exception rank=2 node=1" in r.stdout
    assert sorted(p.name for p in (submit / "diagnosis").iterdir()) == [
        "report-1234.html", "report-1234.json", "report-1234.txt"]


def test_logs_in_the_submission_directory_send_the_reports_home(
    tmp_path: Path, submit: Path
) -> None:
    """SLURM's default layout (slurm-%j.out where sbatch ran): the reports cannot go under the
    submission directory, which holds a log being read."""
    (submit / "logs" / "megatron-gpt-1234.out").rename(submit / "slurm-1234.out")
    r = _run(tmp_path, submit)
    assert r.returncode == 0, r.stderr
    assert "python_exception rank=2" in r.stdout
    reports = tmp_path / "home" / "mcore-diagnose-reports"
    assert f"reports in {reports}" in r.stdout
    assert json.loads((reports / "report-1234.json").read_text())["files_read"] == 1
    assert not (submit / "diagnosis").exists()


def test_a_given_report_dir_beside_a_log_is_refused_and_mailed(
    tmp_path: Path, submit: Path
) -> None:
    (submit / "logs" / "megatron-gpt-1234.out").rename(submit / "slurm-1234.out")
    box = tmp_path / "inbox.mbox"
    r = _run(tmp_path, submit, REPORT_DIR=str(submit / "reports"), MAIL_TO=str(box))
    assert r.returncode == 64
    assert f"is inside {submit}, which holds the job's logs" in r.stderr
    (msg,) = _mails(box)
    assert "REPORT_DIR inside the logs" in str(msg["Subject"])


def test_the_files_scontrol_names_are_read_wherever_they_are(tmp_path: Path, submit: Path) -> None:
    elsewhere = tmp_path / "scratch" / "run.log"  # no job id in its name, not under submit/
    elsewhere.parent.mkdir()
    (submit / "logs" / "megatron-gpt-1234.out").rename(elsewhere)
    r = _run(tmp_path, submit, scontrol=SCONTROL_NAMES.format(out=elsewhere))
    assert r.returncode == 0, r.stderr
    data = json.loads((submit / "diagnosis" / "report-1234.json").read_text())
    assert data["verdict"]["rank"] == 2 and data["files_read"] == 1


def test_report_dir_inside_log_dir_is_refused_and_mailed(tmp_path: Path, submit: Path) -> None:
    box = tmp_path / "inbox.mbox"
    r = _run(tmp_path, submit, LOG_DIR=str(submit), REPORT_DIR=str(submit / "reports"),
             MAIL_TO=str(box))
    assert r.returncode == 64
    assert "inside LOG_DIR" in r.stderr
    assert not (submit / "reports").exists()
    (msg,) = _mails(box)
    assert "inside LOG_DIR" in _body(msg) and "no report" in str(msg["Subject"])


def test_no_logs_found_names_what_to_do(tmp_path: Path, submit: Path) -> None:
    r = _run(tmp_path, submit, FAILED_JOB="999")
    assert r.returncode == 64 and "LOG_DIR=" in r.stderr


def test_no_logs_found_still_mails_saying_so(tmp_path: Path, submit: Path) -> None:
    box = tmp_path / "inbox.mbox"
    r = _run(tmp_path, submit, FAILED_JOB="999", MAIL_TO=str(box))
    assert r.returncode == 64
    (msg,) = _mails(box)
    assert str(msg["Subject"]).endswith("job 999 failed: no report: no logs found")
    body = _body(msg)
    assert "no log file of job 999" in body and str(submit / "logs") in body
    assert "LOG_DIR=" in body


def test_missing_tool_still_mails_saying_so(tmp_path: Path, submit: Path) -> None:
    box = tmp_path / "inbox.mbox"
    r = _run(tmp_path, submit, MAIL_TO=str(box), MCORE_DIAGNOSE=str(tmp_path / "nope"))
    assert r.returncode == 127
    (msg,) = _mails(box)
    assert "mcore-diagnose not found" in str(msg["Subject"])
    assert "pipx install" in _body(msg) and str(tmp_path / "nope") in _body(msg)


def test_the_tools_exit_code_and_message_are_mailed(tmp_path: Path, submit: Path) -> None:
    box = tmp_path / "inbox.mbox"
    r = _run(tmp_path, submit, MAIL_TO=str(box), DIAGNOSE_ARGS="--no-such-option")
    assert r.returncode == 64
    (msg,) = _mails(box)
    assert str(msg["Subject"]).endswith("failed: no report (mcore-diagnose exit 64)")
    assert "--no-such-option" in _body(msg)


def test_readme_and_script_give_the_same_default_report_dir() -> None:
    script = RECIPE.read_text()
    readme = (ROOT / "recipes" / "README.md").read_text()
    m = re.search(r'^REPORT_DIR="\$\{REPORT_DIR:-(.+)\}"$', script, re.M)
    assert m and m[1] == "$SUBMIT_DIR/diagnosis"
    assert 'SUBMIT_DIR="${SLURM_SUBMIT_DIR:-$PWD}"' in script
    row = next(ln for ln in readme.splitlines() if ln.startswith("| `REPORT_DIR`"))
    assert row.rstrip(" |").endswith("`$SLURM_SUBMIT_DIR/diagnosis`")
    assert "(default `$SLURM_SUBMIT_DIR/diagnosis`" in readme


def test_header_example_needs_no_log_dir() -> None:
    """The example the header gives works for the skeleton's layout as it is."""
    for text in (RECIPE.read_text(), (ROOT / "recipes" / "README.md").read_text()):
        assert "LOG_DIR=$PWD/logs/$JOB" not in text
        assert "sbatch --dependency=afternotok:$JOB --export=ALL,MAIL_TO=" in text


def test_mail_is_readable_dated_and_addressed(tmp_path: Path, submit: Path) -> None:
    box = tmp_path / "inbox.mbox"
    r = _run(tmp_path, submit, MAIL_TO=str(box), SLURM_CLUSTER_NAME="alps")
    assert r.returncode == 0, r.stderr
    (msg,) = _mails(box)
    subject = str(msg["Subject"])
    assert subject.startswith("[mcore-diagnose] alps job 1234 failed: python_exception rank=2")
    assert "confidence" not in subject and len(subject) <= 150
    assert msg["Date"] and re.fullmatch(r"<[^<>@\s]+@[^<>@\s]+>", str(msg["Message-ID"]))
    assert re.fullmatch(r"alice@\S+", str(msg["To"])), msg["To"]
    html_parts = [p for p in msg.walk() if p.get_content_type() == "text/html"]
    assert len(html_parts) == 1 and html_parts[0].get_filename() == "report-1234.html"
    body = msg.get_body(preferencelist=("plain",))
    assert body is not None and body["Content-Transfer-Encoding"] in ("8bit", "7bit")
    raw = box.read_bytes()  # what `less inbox.mbox` shows: the report as text
    assert b"First failing rank 2 (local 0) on node 1" in raw
    assert "python_exception" in _body(msg)


def test_mail_to_name_sets_the_address_of_a_mail_to_a_file(tmp_path: Path, submit: Path) -> None:
    box = tmp_path / "inbox.mbox"
    r = _run(tmp_path, submit, MAIL_TO=str(box), MAIL_TO_NAME="oncall@example.org")
    assert r.returncode == 0, r.stderr
    (msg,) = _mails(box)
    assert str(msg["To"]) == "oncall@example.org"


# -- mcore-diagnose recipes ---------------------------------------------------------------------


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "analyzer", *args], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, "NO_COLOR": "1"}, timeout=120)


SHIPPED = sorted(p.stem for p in (ROOT / "recipes").glob("*.sbatch"))


def test_recipes_lists_every_shipped_recipe_with_what_it_does() -> None:
    r = _cli("recipes")
    assert r.returncode == 0, r.stderr
    rows = [ln.split(None, 1) for ln in r.stdout.splitlines()]
    assert [n for n, _ in rows] == SHIPPED
    assert dict(rows)["diagnose-on-failure"] == (
        "Diagnose a failed training job and mail (or save) the report")


def test_recipes_list_fits_an_80_column_terminal() -> None:
    """On a terminal the summaries wrap under themselves; on a pipe each recipe is one line."""
    from tests.helpers import cli_on_tty

    out = cli_on_tty("recipes", env={"COLUMNS": "80"})
    lines = [ln.rstrip("\r") for ln in out.splitlines() if ln.strip()]
    assert max(len(ln) for ln in lines) <= 80, lines
    starts = [ln.split(None, 1)[0] for ln in lines if not ln.startswith(" ")]
    assert starts == SHIPPED
    assert any(ln.startswith(" " * len("diagnose-on-failure  ")) for ln in lines)


@pytest.mark.parametrize("name", ["diagnose-on-failure", "diagnose-on-failure.sbatch"])
def test_recipes_name_prints_it_as_shipped(name: str) -> None:
    r = _cli("recipes", name)
    assert r.returncode == 0, r.stderr
    assert r.stdout == RECIPE.read_text(encoding="utf-8")


def test_recipes_o_writes_it_and_keeps_an_existing_file(tmp_path: Path) -> None:
    r = _cli("recipes", "diagnose-on-failure", "-o", ".", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    written = tmp_path / "diagnose-on-failure.sbatch"
    assert written.read_text(encoding="utf-8") == RECIPE.read_text(encoding="utf-8")
    mine = tmp_path / "mine.sbatch"
    mine.write_text("# the user's own script\n")
    r = _cli("recipes", "train-megatron", "-o", str(mine))
    assert r.returncode == 64 and "--force" in r.stderr and len(r.stderr.splitlines()) == 1
    assert mine.read_text() == "# the user's own script\n"
    r = _cli("recipes", "train-megatron", "-o", str(mine), "--force")
    assert r.returncode == 0, r.stderr
    assert mine.read_text() == (ROOT / "recipes" / "train-megatron.sbatch").read_text()


def test_recipes_unknown_name_lists_the_names() -> None:
    r = _cli("recipes", "diagnose")
    assert r.returncode == 64 and len(r.stderr.splitlines()) == 1
    assert "no recipe named diagnose; the recipes are: " + ", ".join(SHIPPED) in r.stderr
    r = _cli("recipes", "-o", "x.sbatch")
    assert r.returncode == 64 and "NAME" in r.stderr


def test_recipes_has_help_and_version() -> None:
    h = _cli("recipes", "--help")
    assert h.returncode == 0 and "--force" in h.stdout and "--debug" in h.stdout
    v = _cli("recipes", "--version")
    assert v.returncode == 0 and v.stdout.startswith("mcore-diagnose ")

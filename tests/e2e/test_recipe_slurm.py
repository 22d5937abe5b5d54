"""The SLURM recipe end to end, as a user runs it (issue 42).

A real training job (``harness/train.py`` under torchrun, the ``exception-cascade`` scenario:
rank 2 raises ``IndexError``) laid out as the launch guide's skeleton lays it out
(``#SBATCH --output=logs/%x-%j.out`` in the submission directory, no per-job folder) fails;
``recipes/diagnose-on-failure.sbatch`` is submitted exactly as its header's example says
(``sbatch --dependency=afternotok:$JOB --export=ALL,MAIL_TO=... diagnose-on-failure.sbatch``,
no LOG_DIR), finds the job's log through SLURM, saves the reports and mails them: to a loopback
SMTP server this test runs, and to an mbox file. A job whose logs cannot be found still brings
a mail saying so.
"""

from __future__ import annotations

import email
import mailbox
import os
import re
import socketserver
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from pathlib import Path

import pytest

from harness.cluster import free_port
from harness.jobs import SlurmJobRunner
from harness.record import JOB_ENV_UNSET
from harness.scenarios import BY_NAME, LaunchContext, render_sbatch

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "diagnose-on-failure.sbatch"

pytestmark = pytest.mark.slurm

# A job whose output goes nowhere the recipe (or anyone) can find it.
LOST = """#!/bin/bash
#SBATCH --job-name=lost-output
#SBATCH --ntasks=1
#SBATCH --output=/dev/null
#SBATCH --time=00:02:00
exit 3
"""


class _SMTPSink(socketserver.StreamRequestHandler):
    """Just enough SMTP (with 8BITMIME, as Postfix and Exim offer) for smtplib.send_message:
    every message lands in server.messages."""

    def _say(self, line: str) -> None:
        self.wfile.write((line + "\r\n").encode())

    def handle(self) -> None:
        self._say("220 localhost test sink")
        rcpt: list[str] = []
        while True:
            raw = self.rfile.readline()
            if not raw:
                return
            cmd = raw.decode("utf-8", "replace").strip()
            verb = cmd.split(" ", 1)[0].upper()
            if verb == "EHLO":
                self._say("250-localhost")
                self._say("250 8BITMIME")
            elif verb == "HELO":
                self._say("250 localhost")
            elif verb == "MAIL":
                rcpt = []
                self._say("250 OK")
            elif verb == "RCPT":
                rcpt.append(cmd.split(":", 1)[1].strip(" <>"))
                self._say("250 OK")
            elif verb == "DATA":
                self._say("354 end with .")
                body = bytearray()
                while True:
                    line = self.rfile.readline()
                    if not line or line in (b".\r\n", b".\n"):
                        break
                    body += line[1:] if line.startswith(b"..") else line
                self.server.messages.append((rcpt, bytes(body)))  # type: ignore[attr-defined]
                self._say("250 queued")
            elif verb == "QUIT":
                self._say("221 bye")
                return
            else:
                self._say("250 OK")


@pytest.fixture
def smtp_sink() -> Iterator[socketserver.ThreadingTCPServer]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _SMTPSink)
    server.daemon_threads = True
    server.messages = []  # type: ignore[attr-defined]
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _env(tmp: Path) -> dict[str, str]:
    """The tool and this Python on PATH for the jobs (sbatch exports the environment)."""
    bindir = str(Path(sys.executable).parent)
    return {"PATH": bindir + os.pathsep + os.environ.get("PATH", ""), "TMPDIR": str(tmp),
            "PYTHONDONTWRITEBYTECODE": "1"}


@dataclass
class FailedJob:
    job_id: int
    submit: Path  # the submission directory: train.sbatch, logs/


@pytest.fixture(scope="module")
def failed_job(slurm_jobs: SlurmJobRunner) -> FailedJob:
    """The real training job, failed, with its output at logs/megatron-gpt-<id>.out."""
    submit = slurm_jobs.new_job_dir("skeleton-layout")
    (submit / "logs").mkdir()  # as the skeleton's header says: SLURM creates no directory
    (submit / "tmp").mkdir()
    ctx = LaunchContext(repo=REPO, python=Path(sys.executable), bare_python=None,
                        master_port=free_port())
    script = render_sbatch(BY_NAME["exception-cascade"], ctx)
    script = script.replace("--job-name=exception-cascade", "--job-name=megatron-gpt")
    script = script.replace("#SBATCH --output=slurm-%j.out", "#SBATCH --output=logs/%x-%j.out")
    assert "--output=logs/%x-%j.out" in script
    (submit / "train.sbatch").write_text(script)
    job_id = slurm_jobs.cluster.sbatch(submit / "train.sbatch", cwd=submit,
                                       env=_env(submit / "tmp"), unset=JOB_ENV_UNSET)
    assert slurm_jobs.wait(job_id, timeout=180) == "FAILED"
    assert (submit / "logs" / f"megatron-gpt-{job_id}.out").is_file()
    return FailedJob(job_id, submit)


def _submit_recipe(slurm_jobs: SlurmJobRunner, job: FailedJob, export: str) -> tuple[str, str]:
    """``sbatch --dependency=afternotok:$JOB --export=ALL,<export> diagnose-on-failure.sbatch``
    from the submission directory (the header's example); its final state and output."""
    diag = slurm_jobs.cluster.sbatch(
        RECIPE, cwd=job.submit, env=_env(job.submit / "tmp"),
        args=[f"--dependency=afternotok:{job.job_id}", f"--export=ALL,{export}"])
    state = slurm_jobs.wait(diag, timeout=120)
    out = job.submit / f"diagnose-{diag}.out"
    return state, out.read_text(errors="replace") if out.exists() else "(no output file)"


def _check_mail(msg: EmailMessage, raw: bytes, job_id: int) -> None:
    assert f"job {job_id} failed: python_exception rank=2 node=1" in str(msg["Subject"])
    assert msg["Date"] and re.fullmatch(r"<\S+@\S+>", str(msg["Message-ID"]))
    to = str(msg["To"])
    assert re.fullmatch(r"[^@\s]+@\S+", to) and to != "local", to
    body = msg.get_body(preferencelist=("plain",))
    assert isinstance(body, EmailMessage)
    assert body["Content-Transfer-Encoding"] == "8bit"
    text = body.get_content()
    assert "python_exception" in text and "First failing rank 2 (local 0) on node 1" in text
    assert b"First failing rank 2 (local 0) on node 1" in raw  # readable as it is
    attached = [p for p in msg.iter_attachments() if p.get_filename()]
    assert [p.get_filename() for p in attached] == [f"report-{job_id}.html"]


def test_header_example_mails_the_verdict_over_smtp(
    slurm_jobs: SlurmJobRunner, failed_job: FailedJob,
    smtp_sink: socketserver.ThreadingTCPServer
) -> None:
    host, port = smtp_sink.server_address[:2]
    state, log = _submit_recipe(slurm_jobs, failed_job,
                                f"MAIL_TO=oncall@example.org,SMTP_HOST={host},SMTP_PORT={port}")
    assert state == "COMPLETED", log
    job_id = failed_job.job_id
    assert f"diagnose: job {job_id}: python_exception rank=2 node=1" in log
    reports = failed_job.submit / "diagnosis"
    assert sorted(p.name for p in reports.iterdir()) == [
        f"report-{job_id}.{s}" for s in ("eml", "html", "json", "txt")]
    (rcpt, raw), = smtp_sink.messages  # type: ignore[attr-defined]
    assert rcpt == ["oncall@example.org"]
    msg = email.message_from_bytes(raw, policy=policy.default)
    assert isinstance(msg, EmailMessage)
    _check_mail(msg, raw, job_id)
    assert str(msg["To"]) == "oncall@example.org"


def test_header_example_appends_the_mail_to_an_mbox(
    slurm_jobs: SlurmJobRunner, failed_job: FailedJob
) -> None:
    inbox = failed_job.submit / "tmp" / "inbox.mbox"
    state, log = _submit_recipe(slurm_jobs, failed_job, f"MAIL_TO={inbox}")
    assert state == "COMPLETED", log
    (entry,) = list(mailbox.mbox(str(inbox)))
    raw = inbox.read_bytes()
    msg = email.message_from_bytes(entry.as_bytes(), policy=policy.default)
    assert isinstance(msg, EmailMessage)
    _check_mail(msg, raw, failed_job.job_id)


def test_no_logs_found_still_brings_a_mail(slurm_jobs: SlurmJobRunner) -> None:
    submit = slurm_jobs.new_job_dir("lost-output")
    (submit / "tmp").mkdir()
    (submit / "train.sbatch").write_text(LOST)
    job_id = slurm_jobs.cluster.sbatch(submit / "train.sbatch", cwd=submit,
                                       env=_env(submit / "tmp"))
    assert slurm_jobs.wait(job_id, timeout=60) == "FAILED"
    inbox = submit / "tmp" / "inbox.mbox"
    state, log = _submit_recipe(slurm_jobs, FailedJob(job_id, submit), f"MAIL_TO={inbox}")
    assert state == "FAILED", log  # exit 64: no report, but the mail went out first
    assert f"no log file of job {job_id} found" in log
    (entry,) = list(mailbox.mbox(str(inbox)))
    msg = email.message_from_bytes(entry.as_bytes(), policy=policy.default)
    assert isinstance(msg, EmailMessage)
    assert str(msg["Subject"]).endswith(f"job {job_id} failed: no report: no logs found")
    assert msg["Date"] and msg["Message-ID"]
    body = msg.get_body(preferencelist=("plain",))
    assert isinstance(body, EmailMessage)
    text = body.get_content()
    assert f"no log file of job {job_id} found" in text and "LOG_DIR=" in text
    assert str(submit / "logs") in text

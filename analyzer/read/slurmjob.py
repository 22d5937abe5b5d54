"""A SLURM job id as input: ``mcore-diagnose 1234`` finds the job's logs and batch script.

``scontrol show job`` names the job's StdOut, StdErr, working directory, state, exit code and
node list; ``scontrol write batch_script ID -`` prints the script it ran. When slurmctld has
forgotten the job (after ``MinJobAge``), ``sacct`` is asked instead where accounting is
configured. The script goes to a private temporary file (never into the job's directory).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

JOB_ID = re.compile(r"^\d+(?:_\d+)?$")
TIMEOUT_S = 30


class SlurmJobError(Exception):
    """The job cannot be looked up; the message says why and what to do instead."""


@dataclass
class SlurmJob:
    """What SLURM knows about one job."""

    job_id: str
    info: dict[str, str]
    logs: list[Path]
    script: Path | None = None
    source: str = "scontrol"
    notes: list[str] = field(default_factory=list)

    @property
    def facts(self) -> dict[str, Any]:
        """Job facts for the report: state, exit code, nodes, working directory."""
        i = self.info
        out: dict[str, Any] = {"slurm_job_id": self.job_id}
        for key, name in (("JobState", "slurm_state"), ("State", "slurm_state"),
                          ("ExitCode", "slurm_exit_code"), ("NodeList", "slurm_nodelist"),
                          ("NumNodes", "slurm_num_nodes"), ("WorkDir", "slurm_work_dir"),
                          ("Reason", "slurm_reason")):
            if i.get(key) and name not in out and i[key] not in ("(null)", "None"):
                out[name] = i[key]
        return out

    def cleanup(self) -> None:
        """Remove the temporary copy of the batch script."""
        if self.script is not None:
            shutil.rmtree(self.script.parent, ignore_errors=True)


def is_job_id(arg: str) -> bool:
    """True for ``1234`` or ``1234_5`` that is not also an existing path."""
    return bool(JOB_ID.match(arg)) and not Path(arg).exists()


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired:
        raise SlurmJobError(
            f"{cmd[0]} did not answer within {TIMEOUT_S} s: SLURM is not reachable; give the "
            "job's log directory instead"
        ) from None
    except OSError as exc:
        raise SlurmJobError(f"cannot run {cmd[0]}: {exc.strerror or exc}") from None


def _parse_scontrol(text: str) -> dict[str, str]:
    info: dict[str, str] = {}
    for key, value in re.findall(r"(?:^|\s)(\w+)=(\S*)", text):
        info.setdefault(key, value)
    return info


def _sacct(job_id: str) -> dict[str, str] | None:
    sacct = shutil.which("sacct")
    if sacct is None:
        return None
    fields = "JobID,State,ExitCode,NodeList,NNodes,WorkDir,StdOut,StdErr"
    p = _run([sacct, "-n", "-P", "-X", "-j", job_id, "-o", fields])
    if p.returncode != 0 or not p.stdout.strip():
        return None
    row = p.stdout.strip().splitlines()[0].split("|")
    names = fields.split(",")
    info = dict(zip(names, row, strict=False))
    info["NumNodes"] = info.pop("NNodes", "")
    return info


def _expand(path: str, info: dict[str, str], job_id: str) -> str:
    """sacct's StdOut can still hold %j / %x / %u patterns; fill the common ones."""
    return (path.replace("%j", job_id.split("_")[0]).replace("%x", info.get("JobName", ""))
            .replace("%u", info.get("UserId", "").split("(")[0]))


def _without_prefix(line: str) -> str:
    """``scontrol: error: X`` as ``error: X``: the caller names the program once."""
    return line.removeprefix("scontrol:").strip()


def lookup(job_id: str, *, pending_ok: bool = False) -> SlurmJob:
    """Ask SLURM about ``job_id``; raise :class:`SlurmJobError` with a clear message.
    ``pending_ok``: the output files need not exist yet (``watch`` follows a job that has
    just been submitted: they appear when it starts)."""
    scontrol = shutil.which("scontrol")
    if scontrol is None:
        raise SlurmJobError(
            f"{job_id} is not a path and scontrol is not installed here, so it cannot be looked "
            "up as a SLURM job id; give the job's log directory instead"
        )
    info, source = _job_info(scontrol, job_id)
    job = SlurmJob(job_id, info, _output_files(info, job_id, pending_ok), source=source)
    if source == "scontrol":
        _fetch_script(scontrol, job)
    return job


def _job_info(scontrol: str, job_id: str) -> tuple[dict[str, str], str]:
    """(the job's fields, where they came from): scontrol's, else sacct's for a job scontrol
    no longer knows."""
    p = _run([scontrol, "-o", "show", "job", job_id])
    if p.returncode == 0:
        return _parse_scontrol(p.stdout), "scontrol"
    err = (p.stderr or p.stdout).strip().splitlines()
    msg = _without_prefix(err[-1]) if err else f"exit {p.returncode}"
    if "Invalid job id" not in msg:
        raise SlurmJobError(
            f"cannot look up job {job_id}: scontrol: {msg}; is SLURM reachable from here? "
            "Otherwise give the job's log directory"
        )
    info = _sacct(job_id)
    if info is None:
        raise SlurmJobError(
            f"job {job_id} is unknown to SLURM (scontrol: {msg}; no accounting record): it "
            "ended too long ago or never existed; give the job's log directory instead"
        )
    return info, "sacct"


def _output_files(info: dict[str, str], job_id: str, pending_ok: bool = False) -> list[Path]:
    """The job's StdOut and StdErr files that are readable from here (at least one); with
    ``pending_ok``, also those not written yet."""
    logs: list[Path] = []
    for key in ("StdOut", "StdErr"):
        value = info.get(key) or ""
        if value and value not in ("(null)", "/dev/null"):
            path = Path(_expand(value, info, job_id))
            if (path.is_file() or (pending_ok and not path.exists())) and path not in logs:
                logs.append(path)
    if not logs:
        named = ", ".join(dict.fromkeys(
            v for k in ("StdOut", "StdErr") if (v := info.get(k)))) or "none"
        raise SlurmJobError(
            f"job {job_id}: its output files ({named}) are not readable from here; give the "
            "job's log directory instead"
        )
    return logs


def _fetch_script(scontrol: str, job: SlurmJob) -> None:
    """Save the job's batch script to a new temporary directory (``job.script``), or say in
    ``job.notes`` why there is none."""
    job_id = job.job_id
    q = _run([scontrol, "write", "batch_script", job_id, "-"])
    if q.returncode == 0 and "#!" in q.stdout[:200]:
        d = Path(tempfile.mkdtemp(prefix="mcore-diagnose-script-"))
        job.script = d / f"slurm-{job_id}.sh"
        job.script.write_text(q.stdout, encoding="utf-8")
    else:
        job.notes.append(f"scontrol write batch_script {job_id}: no script (not a batch "
                         "job, or not allowed)")

"""What SLURM's accounting says about the jobs of a triage: name, user, partition, state,
start and end (one ``sacct`` call per few hundred jobs; nothing when ``sacct`` cannot tell)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import regex

COLUMNS = ("job_name", "user", "partition", "slurm_state", "start", "end")
"""The triage columns filled from ``sacct`` (null when it cannot tell)."""
_FIELDS = "JobIDRaw,JobName,User,Partition,State,Start,End"
_JOB_ID = regex.compile(r"^\d+(?:_\d+)?$")
_CHUNK = 400


def _time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text[:1].isdigit() else None
    except ValueError:
        return None


def parse_sacct(text: str) -> dict[str, dict[str, Any]]:
    """``sacct -X -P -n --format=JobIDRaw,JobName,User,Partition,State,Start,End`` output ->
    job id -> the columns of :data:`COLUMNS`."""
    out: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) != 7 or not parts[0]:
            continue
        jid, name, user, partition, state, start, end = parts
        out[jid] = {
            "job_name": name or None,
            "user": user or None,
            "partition": partition or None,
            # "CANCELLED by 1000" -> CANCELLED (the uid is not a state)
            "slurm_state": state.split()[0] if state.strip() else None,
            "start": _time(start),
            "end": _time(end),
        }
    return out


def sacct_info(
    job_ids: Iterable[str], *, sacct: str = "sacct", timeout: float = 20.0
) -> tuple[dict[str, dict[str, Any]], str | None]:
    """SLURM's record of each job id that looks like one, and why there is none (or None): one
    sentence that says which columns stay empty when ``sacct`` is not installed."""
    ids = sorted({j for j in job_ids if _JOB_ID.match(j)})
    if not ids:
        return {}, None
    exe = shutil.which(sacct)
    if exe is None:
        return {}, (
            "sacct is not installed here: the columns " + ", ".join(COLUMNS) + " are empty"
        )
    info: dict[str, dict[str, Any]] = {}
    for i in range(0, len(ids), _CHUNK):
        chunk = ids[i : i + _CHUNK]
        try:
            r = subprocess.run(
                [exe, "-X", "-P", "-n", "-j", ",".join(chunk), f"--format={_FIELDS}"],
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return info, f"sacct failed ({type(exc).__name__})"
        if r.returncode != 0:
            why = (r.stderr.strip().splitlines() or ["no output"])[-1]
            return info, f"sacct cannot tell ({why[:200]})"
        info.update(parse_sacct(r.stdout))
    return info, None

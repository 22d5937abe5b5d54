"""Which jobs the paths on the command line are: a folder of job directories is several jobs.

``mcore-diagnose DIR`` reads DIR as one job. When DIR is not itself a job directory but holds
several (each with its own SLURM output, found as ``triage`` finds them), reading them as one
job would merge unrelated runs (every rank 0 twice, one verdict for all); each is diagnosed on
its own instead, with one line saying so. A directory that directly holds the output of several
SLURM job ids is still read as one job, with one line of warning.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import typer

from analyzer.cli.app import fail
from analyzer.decide.verdict import EXIT_USAGE
from analyzer.report.outputs import OutputError, Target, refuse_inside
from analyzer.triage.find import SLURM_OUT, FindError, find_jobs, is_log_name, slurm_job_id


def _names(d: str) -> list[str]:
    try:
        return os.listdir(d)
    except OSError:
        return []


def _slurm_ids(names: list[str]) -> list[str]:
    """The distinct job ids of the ``slurm-<id>.out``/``.err`` files among ``names``."""
    return sorted({m["id"] for n in names if (m := SLURM_OUT.match(n))})


def _held_jobs(d: str, names: list[str]) -> list[str]:
    """The job directories below ``d`` (whose entries are ``names``) when ``d`` holds no log
    of its own and at least two of them hold SLURM output (as ``triage`` finds them); else
    []."""
    if any(is_log_name(n) for n in names):
        return []
    try:
        found = find_jobs([Path(d)])
    except FindError:
        return []
    here = os.path.abspath(d)
    held = [j.path for j in found if j.path != here]
    if sum(slurm_job_id(_names(p)) is not None for p in held) < 2:
        return []
    return [os.path.join(d, os.path.relpath(p, here)) for p in held]


def split_folders(jobs: list[list[str]]) -> tuple[list[list[str]], list[str]]:
    """``jobs`` with each folder of job directories replaced by its jobs, and the notes (one
    line each) to print on standard error."""
    out: list[list[str]] = []
    notes: list[str] = []
    for job in jobs:
        if len(job) != 1 or not os.path.isdir(job[0]):
            out.append(job)
            continue
        d = job[0]
        names = _names(d)
        held = _held_jobs(d, names)
        if held:
            notes.append(
                f"{d} holds {len(held)} job directories; diagnosing each on its own "
                f"(`mcore-diagnose triage {d}` summarises many jobs)"
            )
            out.extend([h] for h in held)
            continue
        ids = _slurm_ids(names)
        if len(ids) > 1:
            notes.append(
                f"warning: {d} holds the output of {len(ids)} SLURM jobs ({', '.join(ids[:5])}"
                f"{', …' if len(ids) > 5 else ''}), read here as one job; give each job's "
                f"files, or use `mcore-diagnose triage`"
            )
        out.append(job)
    return out, notes


def jobs_to_read(jobs: list[list[str]], targets: Sequence[Target]) -> list[list[str]]:
    """The jobs a command reads: ``jobs`` with folders of job directories split (one line
    each on standard error), after checking that no output lies inside them (a usage error,
    in one line)."""
    try:
        refuse_inside([t.path for t in targets], [p for job in jobs for p in job])
    except OutputError as exc:
        fail(str(exc), EXIT_USAGE)
    jobs, notes = split_folders(jobs)
    for note in notes:
        typer.echo(f"mcore-diagnose: {note}", err=True)
    return jobs

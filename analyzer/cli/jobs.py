"""Which jobs the paths on the command line are, decided as ``triage`` decides them.

``mcore-diagnose DIR`` reads DIR as one job when :func:`analyzer.triage.find.jobs_under` finds
one job there (or none). When it finds several (job directories side by side, whatever their
logs are named, or several SLURM jobs' output files in one folder), reading them as one job
would merge unrelated runs (every rank 0 twice, one verdict for all); each is diagnosed on its
own instead, with one line saying so. ``--job ID`` keeps only the jobs of that id.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import typer

from analyzer.cli.app import fail
from analyzer.decide.verdict import EXIT_UNREADABLE, EXIT_USAGE
from analyzer.read.slurmjob import JOB_ID
from analyzer.report.outputs import OutputError, Target, refuse_inside
from analyzer.triage.find import (
    FindError,
    Job,
    id_key,
    jobs_under,
    matches_job,
    split_by_id,
)


def _shown(d: str, path: str) -> str:
    """``path`` (absolute) spelled from ``d`` as the user gave it."""
    rel = os.path.relpath(path, os.path.abspath(d))
    return d if rel == "." else os.path.join(d, rel)


def _files(d: str, job: Job) -> list[str]:
    """The paths a job found under ``d`` is read from."""
    where = _shown(d, job.path)
    return [os.path.join(where, n) for n in job.files] if job.files else [where]


def _ids(ids: Sequence[str]) -> str:
    return ", ".join(ids[:5]) + (", …" if len(ids) > 5 else "")


def _folder(d: str, only: str | None) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """The jobs (id, paths) of the directory ``d`` and the notes to print."""
    try:
        found = jobs_under(Path(d))
    except FindError:
        found = []
    if only is not None:
        return _only(d, found, only), []
    dirs = {j.path for j in found}
    notes: list[str] = []
    if len(dirs) > 1:
        notes.append(
            f"{d} holds {len(dirs)} job directories; diagnosing each on its own "
            f"(`mcore-diagnose triage {d}` summarises many jobs)"
        )
    split = sorted({j.job_id for j in found if j.files}, key=id_key)
    if len(dirs) == 1 and split:
        notes.append(
            f"{d} holds the output of {len(split)} SLURM jobs ({_ids(split)}); diagnosing "
            "each on its own (--job ID picks one; `mcore-diagnose triage` summarises many jobs)"
        )
    notes += _mixed(d, found)
    if len(found) < 2:  # one job (or none): the directory as given
        return [(found[0].job_id if found else os.path.basename(d), [d])], notes
    return [(j.job_id, _files(d, j)) for j in found], notes


def _mixed(d: str, found: list[Job]) -> list[str]:
    """A warning for each job directory that holds several jobs' output and other logs too
    (read as one job: which job the other logs are is not told)."""
    notes = []
    for j in found:
        by_id, alone = split_by_id(Path(j.path)) if not j.files else ({}, True)
        if len(by_id) > 1 and not alone:
            ids = list(by_id)
            notes.append(
                f"warning: {_shown(d, j.path)} holds the output of {len(ids)} SLURM jobs "
                f"({_ids(ids)}) and other logs, read here as one job; give each job's "
                "files, --job ID, or use `mcore-diagnose triage`"
            )
    return notes


def _only(d: str, found: list[Job], wanted: str) -> list[tuple[str, list[str]]]:
    """The jobs of id ``wanted`` under ``d``: whole job directories of that id, or that id's
    files in a directory that holds other jobs' output too."""
    out: list[tuple[str, list[str]]] = []
    for j in found:
        if j.files or not os.path.isdir(j.path):
            if matches_job(j.job_id, wanted):
                out.append((j.job_id, _files(d, j)))
            continue
        by_id, _alone = split_by_id(Path(j.path))
        if len(by_id) > 1:  # several jobs' output and other logs: only the id's files
            names = [n for i, ns in by_id.items() if matches_job(i, wanted) for n in ns]
            if names:
                out.append((wanted, _files(d, Job(j.path, wanted, tuple(names)))))
        elif matches_job(j.job_id, wanted):
            out.append((j.job_id, [d] if len(found) == 1 else _files(d, j)))
    return out


def split_folders(
    jobs: list[list[str]], only: str | None = None
) -> tuple[list[list[str]], list[str]]:
    """``jobs`` with each directory replaced by the jobs it holds (``only``: those of that job
    id), and the notes (one line each) to print on standard error."""
    out: list[list[str]] = []
    notes: list[str] = []
    seen: list[str] = []
    for job in jobs:
        if len(job) != 1 or not os.path.isdir(job[0]):
            out.append(job)
            continue
        held, said = _folder(job[0], only)
        seen += [i for i, _ in held] if only is None else [j.job_id for j in _all(job[0])]
        out.extend(paths for _i, paths in held)
        notes += said
    if only is not None and not out:
        there = sorted(set(seen), key=lambda i: id_key(i) if JOB_ID.match(i) else (-1,))
        fail(
            f"--job {only}: no output of job {only} in {', '.join(j[0] for j in jobs)} "
            f"(jobs there: {_ids(there) or 'none'}); give the directory holding its output",
            EXIT_UNREADABLE,
        )
    return out, notes


def _all(d: str) -> list[Job]:
    """Every job under ``d``, split by id wherever a directory holds several ids' output."""
    try:
        found = jobs_under(Path(d))
    except FindError:
        return []
    out = []
    for j in found:
        by_id = split_by_id(Path(j.path))[0] if os.path.isdir(j.path) and not j.files else {}
        out += [Job(j.path, i) for i in by_id] if len(by_id) > 1 else [j]
    return out


def check_job_option(only: str | None) -> None:
    """``--job`` must be a SLURM job id (``1234`` or ``1234_5``): a usage error otherwise."""
    if only is not None and not JOB_ID.match(only):
        fail(f"--job {only}: not a SLURM job id (1234, or 1234_5 of an array)", EXIT_USAGE)


def jobs_to_read(
    jobs: list[list[str]],
    targets: Sequence[Target],
    only: str | None = None,
    also_read: Sequence[str] = (),
) -> list[list[str]]:
    """The jobs a command reads: ``jobs`` with each folder split into its jobs (one line each
    on standard error), after checking that no output lies inside what is read (a usage
    error, in one line). ``also_read``: other inputs (``--fr``, ``--baseline``, ``--script``)."""
    try:
        refuse_inside([t.path for t in targets], [*[p for job in jobs for p in job], *also_read])
    except OutputError as exc:
        fail(str(exc), EXIT_USAGE)
    jobs, notes = split_folders(jobs, only)
    for note in notes:
        typer.echo(f"mcore-diagnose: {note}", err=True)
    return jobs

"""The job's batch script, read before the diagnosis (the launch advisories lint it).

The script is ``--script PATH``, else SLURM's copy for a job given by id, else an sbatch script
directly inside a job directory: a ``*.sbatch``/``*.slurm``/``*.sh``/``*.job``/``*.batch`` file
with ``#SBATCH`` lines in its first 16 KiB (e.g. what ``scontrol write batch_script`` wrote).
Everything the advisories need from disk is read here once: the text, the name the evidence
shows and the lint configuration; ``analyzer.decide`` reads no file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from analyzer.lint.config import ConfigError, LintConfig, load_config

SCRIPT_SUFFIXES = (".sbatch", ".slurm", ".sh", ".job", ".batch")
MAX_SCRIPT_BYTES = 1 << 20
_HEAD_BYTES = 16384


@dataclass(frozen=True)
class BatchScript:
    """One job's batch script as read: its path, text, name in evidence and lint config."""

    path: Path
    text: str
    shown: str
    """The name evidence lines give it: relative to the job directory that holds it, else as
    given."""
    config: LintConfig = field(default_factory=LintConfig)
    """The lint configuration (``mcore-diagnose lint``'s default config file, when there is
    one)."""


def find_script(paths: Sequence[Path]) -> Path | None:
    """An sbatch script directly inside one of the job directories ``paths``, or None."""
    for p in paths:
        if not p.is_dir():
            continue
        try:
            cands = sorted(c for c in p.iterdir() if c.suffix in SCRIPT_SUFFIXES and c.is_file())
        except OSError:
            continue
        for c in cands:
            try:
                with c.open("rb") as fh:
                    head = fh.read(_HEAD_BYTES)
            except OSError:
                continue
            if b"#SBATCH" in head:
                return c
    return None


def read_script(path: Path) -> str | None:
    """The script's text, or None when it cannot be read (or is too large to be a script)."""
    try:
        data = path.read_bytes()[: MAX_SCRIPT_BYTES + 1]
    except OSError:
        return None
    if len(data) > MAX_SCRIPT_BYTES:
        return None
    return data.decode("utf-8", errors="replace")


def shown_name(path: Path, paths: Sequence[Path]) -> str:
    """The script's name as evidence shows it: relative to the job directory that holds it
    (as every other evidence line), else as given."""
    for p in paths:
        try:
            return str(path.resolve().relative_to(p.resolve()))
        except (ValueError, OSError, RuntimeError):
            continue
    return str(path)


def lint_config() -> LintConfig:
    """The lint configuration the advisories use (the defaults when the file is bad), with the
    findings only the logs can settle (``log_checks``)."""
    try:
        return replace(load_config(), log_checks=True)
    except ConfigError:
        return LintConfig(log_checks=True)


def load_batch_script(
    paths: Sequence[Path], script: Path | None = None, *, from_scheduler: bool = False
) -> BatchScript | None:
    """The job's batch script: ``script``, else one found in the job directories ``paths``;
    None when there is none or it cannot be read. ``from_scheduler``: ``script`` is SLURM's
    copy, saved in a temporary directory whose name means nothing to a reader (and differs run
    by run): evidence names it by its file name alone."""
    path = script or find_script(paths)
    text = read_script(path) if path is not None else None
    if path is None or text is None:
        return None
    shown = path.name if from_scheduler else shown_name(path, paths)
    return BatchScript(path, text, shown, lint_config())

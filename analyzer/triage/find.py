"""Find job directories under the roots given to ``mcore-diagnose triage``.

The rule (documented in ``docs/triage.md``):

1. A directory that directly holds a **SLURM output file** is a job directory: ``slurm-<id>.out``
   / ``slurm-<id>.err`` (also ``slurm-<id>_<task>.out`` of an array), or ``<name>-<id>.out`` /
   ``<name>-<id>.err`` with a numeric job id of three or more digits (``%x-%j.out``); ``.gz``
   allowed. Its whole subtree belongs to that job (torchrun ``--log-dir`` trees, per-task
   files, checkpoints) and is not searched further.
2. A torchrun ``--log-dir`` tree without SLURM output next to it: for a directory
   ``attempt_<N>`` the job directory is the one three levels above it
   (``<job>/<log-dir>/<run_id>/attempt_N``), never above the root.
3. A directory that directly holds other log files (``.out .err .log .txt .stdout .stderr``,
   ``error.json``) is a job directory only when nothing found by rules 1-2 lies above or below
   it, and no other such directory lies above it. So a stray ``notes.txt`` in a root does not
   swallow the jobs below it, and ``triage some-job-dir/`` still works.
4. A root that is a file is a job of its own.

Hidden directories (``.name``) and symlinked directories are not searched; the search stops
``max_depth`` levels below a root. ``expected.toml`` and other non-log names never count.

The job id comes from the SLURM output's name (the largest id when there are several), else the
directory's name. Job ids need not be unique (requeues, copies); ``path`` is the row's key.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import regex

from analyzer.read.discover import LOG_SUFFIXES

SLURM_OUT = regex.compile(r"^slurm-(?P<id>\d+(?:_\d+)?)\.(?:out|err)(?:\.gz)?$")
_NAMED_OUT = regex.compile(r"^.+?[-_.](?P<id>\d{3,}(?:_\d+)?)\.(?:out|err)(?:\.gz)?$")
_ATTEMPT = regex.compile(r"^attempt_\d+$")
DEFAULT_MAX_DEPTH = 12


@dataclass(frozen=True, order=True)
class Job:
    """One job to diagnose: its directory (or single log file) and its id."""

    path: str
    """Absolute path (symlinks kept as given); the key of the job's row."""
    job_id: str


class FindError(ValueError):
    """A root that does not exist or cannot be read (a usage error)."""


def slurm_job_id(names: list[str]) -> str | None:
    """The job id named by SLURM output files among ``names`` (largest id wins), or None."""
    ids: list[str] = []
    for n in names:
        m = SLURM_OUT.match(n) or _NAMED_OUT.match(n)
        if m:
            ids.append(m["id"])
    if not ids:
        return None
    return max(ids, key=lambda i: tuple(int(x) for x in i.split("_")))


def is_log_name(name: str) -> bool:
    """Whether a file of this name is read as a log (``.gz`` allowed)."""
    base = name[:-3] if name.endswith(".gz") else name
    return base.endswith(LOG_SUFFIXES) or base == "error.json"


def _abspath(p: Path) -> Path:
    return Path(os.path.abspath(p))


def _is_under(p: Path, parents: set[Path]) -> bool:
    return any(a in parents for a in p.parents)


def find_jobs(roots: list[Path], max_depth: int = DEFAULT_MAX_DEPTH) -> list[Job]:
    """Every job directory under ``roots`` (sorted by path, no duplicates)."""
    found: dict[Path, str] = {}
    for root in roots:
        root = _abspath(root)
        try:
            st = root.stat()
        except OSError as exc:
            raise FindError(f"{root}: {exc.strerror or exc}") from None
        if stat.S_ISREG(st.st_mode):
            found.setdefault(root, root.name)
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise FindError(f"{root}: not a directory or regular file")
        for path, jid in _find_under(root, max_depth).items():
            found.setdefault(path, jid)
    # a job found under one root may contain one found under another: outermost wins
    paths = set(found)
    return sorted(Job(str(p), found[p]) for p in paths if not _is_under(p, paths))


def _list_dir(d: Path, root: Path) -> tuple[list[str], list[Path]] | None:
    """The file names and the searchable subdirectories of ``d``; None when ``d`` (not the
    root: that is a FindError) cannot be listed."""
    try:
        entries = list(os.scandir(d))
    except OSError:
        if d == root:
            raise FindError(f"{d}: cannot list the directory") from None
        return None
    files: list[str] = []
    subdirs: list[Path] = []
    for e in entries:
        try:
            if e.is_dir(follow_symlinks=False):
                if not e.name.startswith("."):
                    subdirs.append(Path(e.path))
                continue
        except OSError:
            continue
        # a file, or a link to one; a dangling or looping link still says logs live here
        # (the job's row will then say why nothing could be read)
        files.append(e.name)
    return files, subdirs


def _outermost(strong: dict[Path, str], weak: dict[Path, str]) -> dict[Path, str]:
    """The job directories: the outermost strong ones, and the outermost weak ones that have
    no strong one above or below them."""
    strong_set = set(strong)
    out = {p: j for p, j in strong.items() if not _is_under(p, strong_set)}
    # weak candidates next to (above or below) a strong one are not jobs; of the rest, the
    # outermost wins
    weak = {
        p: j
        for p, j in weak.items()
        if not _is_under(p, strong_set) and not any(s.is_relative_to(p) for s in strong_set)
    }
    weak_set = set(weak)
    out.update((p, j) for p, j in weak.items() if not _is_under(p, weak_set))
    return out


def _find_under(root: Path, max_depth: int) -> dict[Path, str]:
    """Job directories under the directory ``root`` (rules 1-3), with their job ids.

    ``strong``: directories with SLURM output or owning an ``attempt_N`` tree; ``weak``:
    directories that merely hold log files (or cannot be listed).
    """
    strong: dict[Path, str] = {}
    weak: dict[Path, str] = {}
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        d, depth = stack.pop()
        if _ATTEMPT.match(d.name) and d != root:
            owner = d.parents[2] if len(d.relative_to(root).parts) > 3 else root
            strong.setdefault(owner, owner.name)
            continue
        listing = _list_dir(d, root)
        if listing is None:
            # an unreadable directory might be a job: report it rather than lose it silently
            weak.setdefault(d, d.name)
            continue
        files, subdirs = listing
        jid = slurm_job_id(files)
        if jid is not None:
            strong[d] = jid
            continue
        if any(is_log_name(f) for f in files):
            weak.setdefault(d, d.name)
        if depth < max_depth:
            stack.extend((s, depth + 1) for s in sorted(subdirs, reverse=True))
    return _outermost(strong, weak)


def read_job_list(text: str, base: Path | None = None) -> list[Job]:
    """Jobs named one per line (``#`` comments and blank lines ignored), taken as given."""
    jobs: dict[Path, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        p = Path(line)
        if base is not None and not p.is_absolute():
            p = base / p
        p = _abspath(p)
        jid = None
        try:
            if p.is_dir():
                jid = slurm_job_id(sorted(os.listdir(p)))
        except OSError:
            pass
        jobs.setdefault(p, jid or p.name)
    return sorted(Job(str(p), j) for p, j in jobs.items())


def parse_shard(spec: str) -> tuple[int, int]:
    """``"I/N"`` -> ``(I, N)`` with ``0 <= I < N``; ValueError otherwise."""
    try:
        i_s, n_s = spec.split("/")
        i, n = int(i_s), int(n_s)
    except ValueError:
        raise ValueError(f"--shard {spec!r}: expected I/N, e.g. 0/8") from None
    if n < 1 or not 0 <= i < n:
        raise ValueError(f"--shard {spec!r}: need 0 <= I < N (shards are numbered from 0)")
    return i, n


def shard_of(job: Job, n: int) -> int:
    """The shard (0..n-1) a job belongs to: a stable hash of its path, so every shard agrees
    even when each one walks the roots at a slightly different time."""
    import hashlib

    h = hashlib.sha256(job.path.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(h[:8], "big") % n


def select_shard(jobs: list[Job], i: int, n: int) -> list[Job]:
    """The jobs of shard ``i`` of ``n``."""
    return [j for j in jobs if shard_of(j, n) == i]

"""What the jobs under a path are: the one rule of ``triage``, ``diagnose`` and ``events``.

The rule (documented in ``docs/triage.md``):

1. A directory that directly holds a **SLURM output file** is a job directory: a file whose
   name carries a job id the way sbatch's ``--output`` patterns write it (:func:`job_id_of`:
   ``slurm-<id>.out``, ``<name>-<id>.out``, ``<id>.out``, ``slurm-<id>_<task>.out`` of an
   array, ``.err`` alike, ``.gz`` allowed; only regular files that discovery would read).
   Its whole subtree belongs to that job (torchrun ``--log-dir`` trees, per-task files,
   checkpoints) and is not searched further.
2. A torchrun ``--log-dir`` tree without SLURM output next to it: for a directory
   ``attempt_<N>`` the job directory is the one three levels above it
   (``<job>/<log-dir>/<run_id>/attempt_N``), never above the root.
3. A directory that directly holds other log files (``.out .err .log .txt .stdout .stderr``,
   ``error.json``) is a job directory only when nothing found by rules 1-2 lies above or below
   it, and no other such directory lies above it. So a stray ``notes.txt`` in a root does not
   swallow the jobs below it, and ``triage some-job-dir/`` still works. Sibling directories
   named like one job's ranks, nodes or workers (``rank0``, ``node001``, ``gpu-node-017``,
   ``worker_3``: :data:`PER_PROCESS_DIR`) are the parts of one job, their parent.
4. A root that is a file is a job of its own (its job id: the one its name carries, else the
   file's name).

Hidden directories (``.name``) and symlinked directories are not searched; the search stops
``max_depth`` levels below a root. ``expected.toml`` and other non-log names never count.

The job id comes from the SLURM output's name (the largest id when there are several), else the
directory's name. Job ids need not be unique (requeues, copies); :attr:`Job.key` is the row's
key. :func:`split_jobs` splits a job directory that holds nothing but several jobs' output files
by job id (``triage``, ``diagnose`` and ``events`` read each id's files as one job).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import regex

from analyzer.read.discover import LOG_SUFFIXES

SLURM_OUT = regex.compile(r"^slurm-(?P<id>\d+(?:_\d+)?)\.(?:out|err)(?:\.gz)?$")
_ID_OUT = regex.compile(r"^(?:(?P<name>.*?)[-_.])??(?P<id>\d+(?:_\d+)?)\.(?:out|err)(?:\.gz)?$")
_PER_PROCESS = r"(?:local[-_]?)?(?:rank|node|task|host|worker|proc|process|gpu|device|nid)"
_PER_PROCESS_NAME = regex.compile(rf"(?:^|[-_.]){_PER_PROCESS}$|[-_.]\d+$", regex.I)
"""The part before the number of a per-task, per-node or per-rank file (``task-3.out``,
``gpu-node-017.out``, ``train-1234-3.out``): a number of up to four digits there is no job
id (``multi-node-123456.out`` still names job 123456)."""
PER_PROCESS_DIR = regex.compile(rf"^(?:.*[-_.])?{_PER_PROCESS}[-_]?\d+$", regex.I)
"""A folder named like one rank's, node's or worker's share of a job (``rank0``, ``node001``,
``gpu-node-017``, ``worker_3``)."""
_ATTEMPT = regex.compile(r"^attempt_\d+$")
DEFAULT_MAX_DEPTH = 12


@dataclass(frozen=True, order=True)
class Job:
    """One job to diagnose: its directory (or single log file) and its id."""

    path: str
    """Absolute path (symlinks kept as given); the key of the job's row."""
    job_id: str
    files: tuple[str, ...] = ()
    """The names of the job's files in ``path`` when the directory holds other jobs' output
    too (:func:`split_by_id`); empty: the whole directory."""

    @property
    def key(self) -> str:
        """The job's row key (the triage table's ``path``): ``path``, or for a job that is
        some of a directory's files, the path of its output file (its ``.out`` when it has
        one): unique, where several jobs share the directory."""
        if not self.files:
            return self.path
        outs = [n for n in self.files if n.removesuffix(".gz").endswith(".out")]
        return os.path.join(self.path, (outs or list(self.files))[0])


class FindError(ValueError):
    """A root that does not exist or cannot be read (a usage error)."""


def job_id_of(name: str) -> str | None:
    """The SLURM job id a file name carries (``slurm-7.out``, ``gpt-train-7.out``, ``7.err``,
    ``slurm-7_3.out`` of an array: ``7_3``), or None: not an sbatch output name, or the number
    names a task, node or rank (``task-0.out``, ``gpu-node-017.out``)."""
    m = SLURM_OUT.match(name)
    if m:
        return str(m["id"])
    m = _ID_OUT.match(name)
    if m is None:
        return None
    if m["name"] is not None and len(m["id"]) < 5 and _PER_PROCESS_NAME.search(m["name"]):
        return None
    return str(m["id"])


def id_key(job_id: str) -> tuple[int, ...]:
    """A job id's sort key (``7_12`` after ``7_3``)."""
    return tuple(int(x) for x in job_id.split("_"))


def slurm_job_id(names: list[str]) -> str | None:
    """The job id named by SLURM output files among ``names`` (largest id wins), or None."""
    ids = [i for n in names if (i := job_id_of(n)) is not None]
    return max(ids, key=id_key) if ids else None


def matches_job(job_id: str, wanted: str) -> bool:
    """Whether ``job_id`` is the job ``wanted`` (``7``: also each task ``7_N`` of array 7)."""
    return job_id == wanted or job_id.startswith(wanted + "_")


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
            found.setdefault(root, job_id_of(root.name) or root.name)
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise FindError(f"{root}: not a directory or regular file")
        for path, jid in _find_under(root, max_depth).items():
            found.setdefault(path, jid)
    # a job found under one root may contain one found under another: outermost wins
    paths = set(found)
    return sorted(Job(str(p), found[p]) for p in paths if not _is_under(p, paths))


def _list_dir(d: Path, root: Path) -> tuple[list[str], list[str], list[Path]] | None:
    """The file names, the regular files' names (those that can name a job id) and the
    searchable subdirectories of ``d``; None when ``d`` (not the root: that is a FindError)
    cannot be listed."""
    try:
        entries = list(os.scandir(d))
    except OSError:
        if d == root:
            raise FindError(f"{d}: cannot list the directory") from None
        return None
    files: list[str] = []
    regular: list[str] = []
    subdirs: list[Path] = []
    for e in entries:
        try:
            if e.is_dir(follow_symlinks=False):
                if not e.name.startswith("."):
                    subdirs.append(Path(e.path))
                continue
            if _is_read(e, d):
                regular.append(e.name)
        except OSError:
            continue
        # a file, or a link to one; a dangling or looping link still says logs live here
        # (the job's row will then say why nothing could be read)
        files.append(e.name)
    return files, regular, subdirs


def _is_read(e: os.DirEntry[str], d: Path) -> bool:
    """Whether discovery would read the entry: a regular file, or a link to one inside ``d``
    (not a FIFO, a device, or a link to ``/etc/passwd``)."""
    if not e.is_symlink():
        return e.is_file(follow_symlinks=False)
    try:
        target = Path(e.path).resolve()
        return target.is_relative_to(d.resolve()) and stat.S_ISREG(target.stat().st_mode)
    except (OSError, RuntimeError):
        return False


def regular_names(d: Path) -> list[str]:
    """The names of the files directly in ``d`` that discovery would read (none when ``d``
    cannot be listed)."""
    try:
        with os.scandir(d) as it:
            return sorted(e.name for e in it if _is_read(e, d))
    except OSError:
        return []


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
    weak = _join_parts(weak, strong_set)
    weak_set = set(weak)
    out.update((p, j) for p, j in weak.items() if not _is_under(p, weak_set))
    return out


def _join_parts(weak: dict[Path, str], strong: set[Path]) -> dict[Path, str]:
    """``weak`` with sibling folders named like one job's ranks or nodes (``rank0``,
    ``rank1``; two at least, all the weak folders of their parent, one name but the number)
    replaced by their parent, unless a strong job lies below the parent."""
    by_parent: dict[Path, list[Path]] = {}
    for p in weak:
        by_parent.setdefault(p.parent, []).append(p)
    out = dict(weak)
    for parent, kids in by_parent.items():
        stems = {p.name.rstrip("0123456789") for p in kids}
        if (
            len(kids) < 2
            or len(stems) != 1
            or not all(PER_PROCESS_DIR.match(p.name) for p in kids)
            or any(s.is_relative_to(parent) for s in strong)
        ):
            continue
        for p in kids:
            del out[p]
        out[parent] = parent.name
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
        files, regular, subdirs = listing
        jid = slurm_job_id(regular)
        if jid is not None:
            strong[d] = jid
            continue
        if any(is_log_name(f) for f in files):
            weak.setdefault(d, d.name)
        if depth < max_depth:
            stack.extend((s, depth + 1) for s in sorted(subdirs, reverse=True))
    return _outermost(strong, weak)


def split_by_id(d: Path) -> tuple[dict[str, list[str]], bool]:
    """The files directly in ``d`` that name a job id, by job id (sorted by id), and whether
    they are all ``d`` holds (no other log file, no subdirectory): only then is ``d`` nothing
    but several jobs' output files, each id's files one job."""
    by_id: dict[str, list[str]] = {}
    for n in regular_names(d):
        if (i := job_id_of(n)) is not None:
            by_id.setdefault(i, []).append(n)
    try:
        with os.scandir(d) as it:
            other = any(
                e.name not in by_id.get(job_id_of(e.name) or "", ())
                and (is_log_name(e.name) or (e.is_dir() and not e.name.startswith(".")))
                for e in it
            )
    except OSError:
        other = True
    return dict(sorted(by_id.items(), key=lambda kv: id_key(kv[0]))), not other


def split_jobs(jobs: list[Job], mixed: dict[str, list[str]] | None = None) -> list[Job]:
    """``jobs`` with each job directory that is nothing but several jobs' output files split
    into one job per job id (``files``: that id's files, ids in order); the others as given.
    ``mixed`` receives each directory that holds several jobs' output and other logs too
    (read as one job) with the ids of that output."""
    out: list[Job] = []
    for job in jobs:
        if job.files or not os.path.isdir(job.path):
            out.append(job)
            continue
        by_id, alone = split_by_id(Path(job.path))
        if len(by_id) < 2 or not alone:
            if len(by_id) > 1 and mixed is not None:
                mixed[job.path] = list(by_id)
            out.append(job)
            continue
        out.extend(Job(job.path, i, tuple(names)) for i, names in by_id.items())
    return out


def jobs_under(root: Path, max_depth: int = DEFAULT_MAX_DEPTH) -> list[Job]:
    """The jobs under ``root`` as ``triage``, ``diagnose`` and ``events`` read them:
    :func:`find_jobs`' job directories, split by :func:`split_jobs`."""
    return split_jobs(find_jobs([root], max_depth))


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
        jid = job_id_of(p.name)
        try:
            if p.is_dir():
                jid = slurm_job_id(regular_names(p))
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
    """The shard (0..n-1) a job belongs to: a stable hash of its key (:attr:`Job.key`), so
    every shard agrees even when each one walks the roots at a slightly different time."""
    import hashlib

    h = hashlib.sha256(job.key.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(h[:8], "big") % n


def select_shard(jobs: list[Job], i: int, n: int) -> list[Job]:
    """The jobs of shard ``i`` of ``n``."""
    return [j for j in jobs if shard_of(j, n) == i]

"""Find the log files of a job: SLURM outputs, per-task files, torchrun ``--log-dir`` trees.

Binary files (checkpoints, pickles, images, profiler dumps) are recognised by content and
skipped with a reason; symlinks are followed only inside the job directory and never twice.
"""

from __future__ import annotations

import functools
import os
import stat
from dataclasses import dataclass, field, replace
from operator import attrgetter
from pathlib import Path

import regex

from analyzer.catalog.claims import log_name_claims
from analyzer.flightrec.load import is_dump_name, looks_like_dump
from analyzer.read.filerank import named_ranks
from analyzer.read.logfile import LogFile
from analyzer.read.ownreport import REASON, is_own_report
from analyzer.read.sniff import GZIP_MAGIC, SNIFF_BYTES, UTF16_BOMS, sniff_binary

LOG_SUFFIXES = (".out", ".err", ".log", ".txt", ".stdout", ".stderr")
"""File names read inside a directory (also with ``.gz``); ``error.json`` too."""

_ATTEMPT_DIR = regex.compile(r"^attempt_(\d+)$")
_TASK_NAME = regex.compile(
    r"(?:^|[-_.])(?:task|t)[-_]?(\d{1,5})(?=\.[^.]+$|$)"
    # srun --output=slurm-%j-%t.out: the job id, then the task id
    r"|^slurm-\d+[-_](\d{1,5})(?=\.[^.]+$)"
)


@dataclass
class Discovery:
    """What was found under the given paths, and what was skipped and why."""

    files: list[LogFile] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Paths that could not be opened at all (shown even without --verbose)."""
    fr_dumps: list[tuple[Path, str]] = field(default_factory=list)
    """PyTorch Flight Recorder dumps (path, path shown), read by ``analyzer.flightrec``."""


def _describe(
    path: Path,
    rel: str,
    size: int,
    compressed: bool,
    encoding: str | None = None,
    place: tuple[int | None, int | None, str | None] | None = None,
    name: str | None = None,
) -> LogFile:
    """The :class:`LogFile` of ``path``; ``place`` (what its directory says, see
    :func:`_torchrun_place`) and ``name`` (``path.name``) when the caller knows them."""
    name = path.name if name is None else name
    if compressed:
        name = name[:-3]
    attempt, local_rank, node_hint = _torchrun_place(rel.split("/")) if place is None else place
    stream, task, is_error_json = _name_says(name)
    return LogFile(
        path=path,
        rel=rel,
        size=size,
        compressed=compressed,
        encoding=encoding,
        stream=stream,
        attempt=attempt,
        local_rank=local_rank,
        task=task if attempt is None else None,
        node_hint=node_hint,
        is_error_json=is_error_json,
    )


@functools.lru_cache(maxsize=4096)
def _name_says(name: str) -> tuple[str | None, int | None, bool]:
    """(stream, srun task id, is torchrun's error file) that a file name gives (names repeat:
    ``stdout.log`` in every rank's directory)."""
    m = _TASK_NAME.search(name)
    return _stream(name.lower()), int(m[1] or m[2]) if m else None, name == "error.json"


_BATCH_STREAM = regex.compile(r"\.(?:e\d*|o\d+)$")
"""PBS, Torque and SGE name a job's streams ``<name>.o<jobid>`` and ``<name>.e<jobid>``;
SLURM users copy the form (``#SBATCH -e train.e``: BLIP2-adalink's job, wild corpus part O). A
bare ``.o`` is an object file, not taken."""


def _stream(lower: str) -> str | None:
    """The stream a file of this (lower-case) name holds; None for both (a slurm-%j.out
    combined file is stdout+stderr of every task)."""
    if lower.startswith("slurm-"):
        return None
    if lower.endswith((".err", ".stderr")) or lower.startswith("stderr"):
        return "stderr"
    if lower.endswith((".stdout", ".out")) or lower.startswith("stdout"):
        return "stdout"
    m = _BATCH_STREAM.search(lower)
    return None if m is None else ("stderr" if m[0][1] == "e" else "stdout")


def _torchrun_place(parts: list[str]) -> tuple[int | None, int | None, str | None]:
    """(attempt, local rank, node) that torchrun's ``--log-dir`` layout gives a file at the
    path ``parts``: ``<host>/<run_id>_<rand>/attempt_N/<local_rank>/...``."""
    attempt = local_rank = None
    node_hint = None
    for i, part in enumerate(parts[:-1]):
        m = _ATTEMPT_DIR.match(part) if part.startswith("attempt_") else None
        if m:
            attempt = int(m[1])
            if i + 1 < len(parts) - 1 and parts[i + 1].isdecimal():
                local_rank = int(parts[i + 1])
            # <host>/<run_id>_<rand>/attempt_N: the directory above the run dir names a node
            if i >= 2:
                node_hint = parts[i - 2]
    return attempt, local_rank, node_hint


def _is_log_name(name: str) -> bool:
    base = name[:-3] if name.endswith(".gz") else name
    return (
        base.endswith(LOG_SUFFIXES) or base == "error.json" or base.startswith("slurm-")
        or _BATCH_STREAM.search(base) is not None
        or any(rx.search(base) for rx in log_name_claims())  # workerlog.N, log.txt.rankN
    )


def _check_file(path: Path, rel: str, st: os.stat_result, out: Discovery, explicit: bool) -> None:
    if is_dump_name(path.name) and _is_fr_dump(path, rel, st, out):
        return
    if not explicit and not _is_log_name(path.name):
        out.skipped.append((rel, "not a log file name (.out/.err/.log/.txt, slurm-*, error.json)"))
        return
    if st.st_size == 0:
        out.skipped.append((rel, "empty file"))
        return
    try:
        fd = os.open(path, _READ_FLAGS)
        try:
            head = os.read(fd, SNIFF_BYTES)
        finally:
            os.close(fd)
    except OSError as exc:
        out.problems.append(_cannot_read(rel, exc))
        return
    _take(path, rel, st.st_size, head, out)


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)


def _cannot_read(rel: str, exc: OSError) -> str:
    return f"{rel}: cannot read ({exc.strerror or exc}); check its permissions"


def _take(
    path: Path,
    rel: str,
    size: int,
    head: bytes,
    out: Discovery,
    place: tuple[int | None, int | None, str | None] | None = None,
) -> None:
    """Keep the file whose first bytes are ``head`` as a log, or say why not."""
    compressed = head.startswith(GZIP_MAGIC)
    if head.startswith(UTF16_BOMS):
        out.files.append(_describe(path, rel, size, False, "utf-16", place))
        return
    if not compressed:
        why = sniff_binary(head)
        if why and looks_like_dump(head, path.name):
            out.fr_dumps.append((path, rel))
            return
        if why:
            out.skipped.append((rel, f"binary file: {why}"))
            return
        if is_own_report(head):  # written by this tool: never read back as a log
            out.skipped.append((rel, REASON))
            return
    out.files.append(_describe(path, rel, size, compressed, None, place))


def _is_fr_dump(path: Path, rel: str, st: os.stat_result, out: Discovery) -> bool:
    """A file named like a Flight Recorder dump whose content fits is kept for flightrec."""
    if st.st_size == 0:
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(1024)
    except OSError:
        return False
    if looks_like_dump(head, path.name):
        out.fr_dumps.append((path, rel))
        return True
    return False


def discover(paths: list[Path]) -> Discovery:
    """Collect the log files under ``paths`` (directories are walked, files taken as given)."""
    out = Discovery()
    for top in paths:
        try:
            st = top.stat()
        except FileNotFoundError:
            out.problems.append(f"{top}: no such file or directory")
            continue
        except OSError as exc:
            out.problems.append(f"{top}: cannot open ({exc.strerror or exc})")
            continue
        if stat.S_ISDIR(st.st_mode):
            _walk(top, out, st)
        elif stat.S_ISREG(st.st_mode):
            _check_file(top, top.name, st, out, explicit=True)
        else:
            out.problems.append(f"{top}: not a regular file or directory")
    out.files.sort(key=lambda f: f.rel)
    _drop_shared_node_hints(out)
    out.files = named_ranks(out.files)
    return out


def _drop_shared_node_hints(out: Discovery) -> None:
    """A directory holding several torchrun run directories is a shared --log-dir, not a node."""
    runs: dict[str, set[str]] = {}
    for f in out.files:
        if f.node_hint is not None:
            parts = f.rel.split("/")  # ``rel`` is ``/``-separated, without empty parts
            i = parts.index(f.node_hint) if f.node_hint in parts else -1
            run = parts[i + 1] if 0 <= i < len(parts) - 1 else ""
            runs.setdefault(f.node_hint, set()).add(run)
    shared = {h for h, rs in runs.items() if len(rs) > 1}
    if shared:
        out.files = [replace(f, node_hint=None) if f.node_hint in shared else f for f in out.files]


_NAME = attrgetter("name")


def _walk(root: Path, out: Discovery, root_st: os.stat_result) -> None:
    """One walk of ``root``: each directory listed once (``os.scandir``: its entries' types
    come with the listing), each directory's identity from its entry's ``stat``, each file
    with a log's name opened once (its size and identity from that open: ``fstat``)."""
    real_root = root.resolve()
    seen: set[tuple[int, int]] = set()
    # (path, path relative to root, identity); strings, not Paths: a job can hold 100,000 files.
    stack: list[tuple[str, str, tuple[int, int]]] = [
        (str(root), "", (root_st.st_dev, root_st.st_ino))
    ]
    while stack:
        d, d_rel, key = stack.pop()
        if key in seen:
            out.skipped.append((d_rel or ".", "directory already visited (symlink loop)"))
            continue
        seen.add(key)
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=_NAME)
        except OSError as exc:
            out.problems.append(f"{d_rel or '.'}: cannot list ({exc.strerror or exc})")
            continue
        _Dir(d, d_rel, real_root, seen, out).walk(entries, stack)


class _Dir:
    """One directory of the walk: its entries' decisions, with what its path says (its
    ``Path`` and torchrun place) worked out once for all its files."""

    def __init__(
        self, d: str, d_rel: str, real_root: Path, seen: set[tuple[int, int]], out: Discovery
    ) -> None:
        self.d, self.d_rel, self.real_root, self.seen, self.out = d, d_rel, real_root, seen, out
        self._path: Path | None = None
        self._place: tuple[int | None, int | None, str | None] | None = None

    def walk(
        self, entries: list[os.DirEntry[str]], stack: list[tuple[str, str, tuple[int, int]]]
    ) -> None:
        """Decide each entry; push the directories on ``stack``."""
        d_rel, out = self.d_rel, self.out
        for e in entries:
            rel = f"{d_rel}/{e.name}" if d_rel else e.name
            try:
                if e.is_symlink():
                    target = Path(e.path).resolve()
                    if not target.is_relative_to(self.real_root):
                        out.skipped.append((rel, "symlink pointing outside the job directory"))
                        continue
                    st = target.stat()
                elif e.is_file(follow_symlinks=False):
                    self.file(e, rel)
                    continue
                else:
                    st = e.stat(follow_symlinks=False)
            except (OSError, RuntimeError) as exc:
                out.skipped.append((rel, f"unreadable entry ({exc})"))
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append((e.path, rel, (st.st_dev, st.st_ino)))
            elif stat.S_ISREG(st.st_mode) and self.first_visit(st):
                _check_file(Path(e.path), rel, st, out, explicit=False)

    def first_visit(self, st: os.stat_result) -> bool:
        """Whether the file of ``st`` is seen for the first time (a hard link or a symlink to
        a file already found is read once)."""
        key = (st.st_dev, st.st_ino)
        if key in self.seen:
            return False
        self.seen.add(key)
        return True

    def file(self, e: os.DirEntry[str], rel: str) -> None:
        """A regular file (not a symlink) of this directory."""
        dump_name, log_name = _name_kind(e.name)
        if dump_name or not log_name:  # rare: the general path
            st = e.stat(follow_symlinks=False)
            if self.first_visit(st):
                _check_file(Path(e.path), rel, st, self.out, explicit=False)
            return
        got = self.head(e, rel)
        if got is None:
            return
        if self._path is None:
            self._path = Path(self.d)
            parts = [*self.d_rel.split("/"), ""] if self.d_rel else [""]
            self._place = _torchrun_place(parts)
        _take(self._path / e.name, rel, got[1], got[0], self.out, self._place)

    def head(self, e: os.DirEntry[str], rel: str) -> tuple[bytes, int] | None:
        """(first bytes, size) of a file with a log's name; None when it is not read (seen
        before, empty, unreadable: said in ``out``)."""
        try:
            fd = os.open(e.path, _READ_FLAGS)
        except OSError as exc:
            st = e.stat(follow_symlinks=False)  # an error here is an unreadable entry
            if self.first_visit(st):
                if st.st_size == 0:
                    self.out.skipped.append((rel, "empty file"))
                else:
                    self.out.problems.append(_cannot_read(rel, exc))
            return None
        try:
            st = os.fstat(fd)
            if not self.first_visit(st):
                return None
            if st.st_size == 0:
                self.out.skipped.append((rel, "empty file"))
                return None
            return os.read(fd, SNIFF_BYTES), st.st_size
        except OSError as exc:
            self.out.problems.append(_cannot_read(rel, exc))
            return None
        finally:
            os.close(fd)


@functools.lru_cache(maxsize=4096)
def _name_kind(name: str) -> tuple[bool, bool]:
    """(named like a Flight Recorder dump, named like a log) for a file name."""
    return is_dump_name(name), _is_log_name(name)

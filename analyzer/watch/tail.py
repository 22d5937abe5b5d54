"""New complete lines of a job's growing log files, read from each file's last offset.

A poll costs one directory walk and one ``stat`` per file when nothing was written. A file
whose inode changes or that shrinks (rotated, truncated) is read again from its start; a file
renamed (rotation by ``mv``) keeps its offset under its new name. ``.gz`` files are ignored
while the job runs (the post-mortem at the end reads them). Which files are logs is decided by
the post-mortem's own discovery (``analyzer.read.discover``), asked again only when a file
appears or an empty one grows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from analyzer.read.discover import discover

MAX_READ = 64 << 20
"""Bytes read from one file in one poll at most (the rest waits for the next poll)."""


@dataclass
class Tracked:
    """One file followed: where it is, which inode, how far it was read."""

    path: Path
    rel: str
    inode: int
    offset: int = 0
    line: int = 0
    """Complete lines read so far (the next line's number is ``line + 1``)."""
    task: int | None = None
    local_rank: int | None = None
    """What the file's path says (``analyzer.read.discover``: torchrun's ``--log-dir``)."""


@dataclass
class Chunk:
    """The new complete lines of one file in one poll."""

    rel: str
    first_line: int
    lines: list[bytes]
    restarted: bool = False
    """The file was truncated or replaced: its reading started again at 0."""
    task: int | None = None
    local_rank: int | None = None


@dataclass
class Tailer:
    """Follow every log file under ``roots`` (directories or files)."""

    roots: list[Path]
    files: dict[Path, Tracked] = field(default_factory=dict)
    _seen: dict[Path, tuple[int, int]] = field(default_factory=dict)
    _logs: set[Path] = field(default_factory=set)
    grew: bool = False
    """Whether the last poll read any byte."""

    def _walk(self) -> dict[Path, tuple[int, int]]:
        """Every regular file under the roots: path -> (inode, size)."""
        out: dict[Path, tuple[int, int]] = {}
        stack = list(self.roots)
        while stack:
            p = stack.pop()
            try:
                if p.is_dir():
                    with os.scandir(p) as it:
                        for e in it:
                            if e.is_dir(follow_symlinks=False):
                                stack.append(Path(e.path))
                            elif e.is_file():
                                st = e.stat()
                                out[Path(e.path)] = (st.st_ino, st.st_size)
                else:
                    st = p.stat()
                    out[p] = (st.st_ino, st.st_size)
            except OSError:
                continue
        return out

    def _refresh_logs(self, now: dict[Path, tuple[int, int]]) -> None:
        """Ask the post-mortem's discovery which files are logs, when the set changed."""
        grown_empty = any(self._seen.get(p, (0, 0))[1] == 0 < s for p, (_i, s) in now.items())
        if set(now) == set(self._seen) and not grown_empty:
            return
        d = discover(list(self.roots))
        self._logs = {
            lf.path for lf in d.files if not lf.compressed and not lf.is_error_json
        }
        found = {lf.path: lf for lf in d.files}
        for p in self._logs:
            if p not in self.files:
                self._adopt(p, found[p].rel, now)
                self.files[p].task, self.files[p].local_rank = found[p].task, found[p].local_rank

    def _adopt(self, p: Path, rel: str, now: dict[Path, tuple[int, int]]) -> None:
        """Follow ``p``: a file renamed to ``p`` keeps its offset; a new file that took the
        old name is read from its start."""
        inode = now[p][0] if p in now else 0
        for old, t in list(self.files.items()):
            if t.inode == inode and old != p and now.get(old, (None, 0))[0] != inode:
                del self.files[old]
                old_rel, t.path, t.rel = t.rel, p, rel
                self.files[p] = t
                if old in now:  # a new file under the old name
                    self.files[old] = Tracked(old, old_rel, now[old][0])
                return
        self.files[p] = Tracked(p, rel, inode)

    def poll(self) -> list[Chunk]:
        """The new complete lines of every file since the last poll."""
        now = self._walk()
        self._refresh_logs(now)
        self._seen = now
        chunks: list[Chunk] = []
        self.grew = False
        for p, t in list(self.files.items()):
            if p not in now:
                continue  # gone (or renamed: adopted under its new name when discovered)
            inode, size = now[p]
            restarted = False
            if inode != t.inode or size < t.offset:
                t.inode, t.offset, t.line, restarted = inode, 0, 0, True
            if size > t.offset:
                c = self._read(t, size, restarted)
                if c is not None:
                    chunks.append(c)
        return chunks

    def _read(self, t: Tracked, size: int, restarted: bool) -> Chunk | None:
        """The complete lines between ``t.offset`` and ``size``; a partial last line waits."""
        try:
            with t.path.open("rb") as f:
                f.seek(t.offset)
                data = f.read(min(size - t.offset, MAX_READ))
        except OSError:
            return None
        end = data.rfind(b"\n")
        if end < 0:
            return None
        self.grew = True
        lines = data[:end].split(b"\n")
        first = t.line + 1
        t.offset += end + 1
        t.line += len(lines)
        return Chunk(t.rel, first, [ln.rstrip(b"\r") for ln in lines], restarted, t.task,
                     t.local_rank)

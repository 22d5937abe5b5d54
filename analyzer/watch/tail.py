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

    path: str
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


Stat = tuple[int, int]
"""(inode, size) of a file."""


@dataclass
class Tailer:
    """Follow every log file under ``roots`` (directories or files)."""

    roots: list[Path]
    files: dict[str, Tracked] = field(default_factory=dict)
    """By path (strings, not Paths: a poll of 2,000 files at rest builds none)."""
    _seen: dict[str, Stat] = field(default_factory=dict)
    _empty: set[str] = field(default_factory=set)
    """Files that were empty at the last poll (discovery skips them: asked again once they
    grow)."""
    _logs: set[str] = field(default_factory=set)
    grew: bool = False
    """Whether the last poll read any byte."""

    def _walk(self) -> dict[str, Stat]:
        """Every regular file under the roots: path -> (inode, size); one ``scandir`` per
        directory and one ``stat`` per file."""
        out: dict[str, Stat] = {}
        stack: list[str] = []
        for r in map(str, self.roots):
            try:
                if os.path.isdir(r):
                    stack.append(r)
                else:
                    st = os.stat(r)
                    out[r] = (st.st_ino, st.st_size)
            except OSError:
                continue
        while stack:
            try:
                with os.scandir(stack.pop()) as it:
                    for e in it:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)
                        elif e.is_file():
                            st = e.stat()
                            out[e.path] = (st.st_ino, st.st_size)
            except OSError:
                continue
        return out

    def _refresh_logs(self, now: dict[str, Stat]) -> None:
        """Ask the post-mortem's discovery which files are logs, when the set changed."""
        grown_empty = any(now.get(p, (0, 0))[1] > 0 for p in self._empty)
        if now.keys() == self._seen.keys() and not grown_empty:
            return
        self._empty = {p for p, (_i, size) in now.items() if size == 0}
        d = discover(list(self.roots))
        found = {str(lf.path): lf for lf in d.files if not lf.compressed and not lf.is_error_json}
        self._logs = set(found)
        for p, lf in found.items():
            if p not in self.files:
                self._adopt(p, lf.rel, now)
                self.files[p].task, self.files[p].local_rank = lf.task, lf.local_rank

    def _adopt(self, p: str, rel: str, now: dict[str, Stat]) -> None:
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
            with open(t.path, "rb") as f:
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

"""Remember which catalogs passed validation, so that start-up skips re-checking them.

Validating every pattern against its examples and counter-examples costs about 0.1 s per run;
its answer depends only on the pattern files and the code that checks them. A passing catalog
leaves an empty marker file named by the SHA-256 of both in the user's cache directory
(``$XDG_CACHE_HOME/mcore-diagnose``, else ``~/.cache/mcore-diagnose``; never the job
directory). A cache that cannot be read or written is ignored: the catalog is then validated
every run, as without the cache. Set ``MCORE_DIAGNOSE_NO_CACHE=1`` to bypass it.

The directory holds at most :data:`KEEP` markers: each write removes the least recently used
(by modification time; a marker is touched when it is used), so new versions and pattern sets
do not pile up. Safe when several runs share the directory: a marker another run removed is
simply validated again.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, cast

import regex

_CODE = (
    "catalog/model.py",
    "catalog/load.py",
    "catalog/vocabulary.py",
    "lines/prefixes.py",
    "lines/timestamps.py",
)
"""The modules (under ``analyzer/``) whose behaviour decides whether a catalog validates."""
NO_CACHE_ENV = "MCORE_DIAGNOSE_NO_CACHE"
KEEP = 8
"""Markers kept in the cache directory (the most recently used)."""
_STALE_TMP_S = 3600
"""A temporary file older than this was left by a run that died: removed when pruning."""


def cache_dir() -> Path | None:
    """Where the markers go; None when no home or cache directory is known."""
    base = os.environ.get("XDG_CACHE_HOME")
    if base:
        return Path(base) / "mcore-diagnose"
    home = os.environ.get("HOME")
    return Path(home) / ".cache" / "mcore-diagnose" if home else None


def digest(files: Sequence[tuple[Path | Traversable, bool]]) -> str | None:
    """The key of one catalog: its files (content, order, built-in or user) and the checking
    code. None when a file cannot be read (the loader then reports it)."""
    h = hashlib.sha256(b"mcore-diagnose catalog validation v1\0")
    here = Path(__file__).resolve().parent.parent
    try:
        for name in _CODE:
            h.update(name.encode() + b"\0" + (here / name).read_bytes() + b"\0")
        for path, user in files:
            data = path.read_bytes()
            h.update(f"{path.name}\0{int(user)}\0{len(data)}\0".encode() + data)
    except OSError:
        return None
    return h.hexdigest()


TOUCH_AFTER_S = 3600.0
"""A marker used is touched (made the last to be pruned) only when older than this: a run
normally writes nothing outside its ``-o``, and an hour is fine grain for "recently used"."""


def _marker(key: str | None) -> Path | None:
    if key is None or os.environ.get(NO_CACHE_ENV):
        return None
    d = cache_dir()
    return None if d is None else d / f"validated-{key[:32]}"


def is_validated(key: str | None) -> bool:
    """Whether the catalog with this key passed validation before."""
    m = _marker(key)
    if m is None:
        return False
    try:
        found = m.is_file()
        stale = found and time.time() - m.stat().st_mtime > TOUCH_AFTER_S
    except OSError:
        return False
    if stale:
        _remove_or_touch(m, touch=True)  # used: the last to be pruned
    return found


def mark_validated(key: str | None, parsed: Sequence[Any] | None = None) -> None:
    """Remember that the catalog with this key passed, with its files' parsed TOML as JSON
    (``parsed``, one object per file in order); silently skipped when impossible."""
    m = _marker(key)
    if m is None:
        return
    try:
        m.parent.mkdir(parents=True, exist_ok=True)
        try:
            text = json.dumps(list(parsed)) if parsed is not None else ""
        except (TypeError, ValueError):  # a TOML value JSON cannot hold: parse every run
            text = ""
        tmp = m.with_name(f"{m.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, m)  # a reader never sees half a file
    except OSError:
        return
    prune(m.parent)


def prune(directory: Path, keep: int = KEEP) -> None:
    """Remove all but the ``keep`` most recently used markers of ``directory`` (and temporary
    files of runs that died); a file another run removed first, or that cannot be removed, is
    skipped."""
    markers: list[tuple[float, Path]] = []
    now = time.time()
    try:
        entries = list(directory.glob("validated-*"))
    except OSError:
        return
    for p in entries:
        try:
            mtime = p.stat().st_mtime
        except OSError:  # removed meanwhile
            continue
        if p.name.endswith(".tmp"):
            if now - mtime > _STALE_TMP_S:
                _remove_or_touch(p)
            continue
        markers.append((mtime, p))
    markers.sort(key=lambda mp: (mp[0], mp[1].name), reverse=True)
    for _mtime, p in markers[keep:]:
        _remove_or_touch(p)


def _remove_or_touch(p: Path, touch: bool = False) -> None:
    """Remove ``p`` (or set its time to now); a file gone or read-only is left as it is."""
    try:
        if touch:
            os.utime(p)
        else:
            p.unlink(missing_ok=True)
    except OSError:
        pass


def remembered_data(key: str | None) -> list[Any] | None:
    """The parsed pattern files a remembered catalog was validated with (None when the
    marker holds none or cannot be read: the files are then parsed)."""
    m = _marker(key)
    if m is None:
        return None
    try:
        data = json.loads(m.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        return None
    return data


_NAMED_GROUP = regex.compile(r"(?<=(?:^|[^\\])(?:\\\\)*)\(\?P?<([A-Za-z_]\w*)>")
"""A named group's opening ``(?P<name>`` or ``(?<name>``, not escaped."""


def named_groups(source: str) -> set[str]:
    """The names of the named groups of a regex, read from its source without compiling it.

    Exact for every pattern of a validated catalog: validation compares it with the compiled
    regex's ``groupindex`` and does not remember a catalog where the two differ."""
    return set(_NAMED_GROUP.findall(source))


class _LazyRegex:
    """A regex compiled on first use (``regex`` compiles in Python: ~1 ms a pattern, most of
    a small job's run). Only for catalogs that passed validation, so it compiles."""

    __slots__ = ("_flags", "fullmatch", "groupindex", "match", "pattern", "search")
    _FAST = ("fullmatch", "groupindex", "match", "search")
    """Filled on first use, so later calls go straight to the compiled pattern."""

    def __init__(self, source: str, flags: int) -> None:
        self.pattern = source
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        rx = regex.compile(self.pattern, self._flags)
        for attr in self._FAST:
            object.__setattr__(self, attr, getattr(rx, attr))
        return getattr(rx, name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (regex.compile, (self.pattern, self._flags))


def lazy_regex(source: str, flags: int = 0) -> regex.Pattern[str]:
    """A stand-in for ``regex.compile(source, flags)`` that compiles when first used."""
    return cast("regex.Pattern[str]", _LazyRegex(source, flags))

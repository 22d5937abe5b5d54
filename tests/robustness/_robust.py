"""Helpers for the robustness suite: the catalog, an in-process CLI runner and an audit
hook that sees every file the analyzer opens (or tries to write)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from analyzer.catalog.model import Catalog
from tests.helpers import builtin_catalog

OK_EXITS = {0, 1, 2, 3, 5}


def expected(sample: Path) -> dict:
    return tomllib.loads((sample / "expected.toml").read_text())


CATALOG: Catalog = builtin_catalog()


# -- the command line ----------------------------------------------------------------------
@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str


def cli(*args: str | Path) -> CliResult:
    """``mcore-diagnose ARGS`` in this process (an exception escaping ``main`` fails the test,
    exactly as a traceback would end the real command)."""
    from analyzer.cli.commands import main

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", write_through=True)
    err = io.StringIO()
    code: int | None = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    assert code is not None, "main() returned without SystemExit"
    stdout = out.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
    return CliResult(code, stdout, err.getvalue())


def cli_subprocess(*args: str | Path, timeout: float = 180) -> CliResult:
    """The real command in a child process (for what only a real process shows: tracebacks
    printed by the interpreter, exit status)."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "MCORE_DIAGNOSE_PATTERNS")
    }
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", *map(str, args)],
        capture_output=True,
        text=True,
        errors="replace",
        env=env,
        timeout=timeout,
    )
    return CliResult(r.returncode, r.stdout, r.stderr)


def assert_clean_exit(r: CliResult) -> None:
    assert r.code in OK_EXITS, (r.code, r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr[-2000:]


# -- file access audit ---------------------------------------------------------------------
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_MUTATING_EVENTS = {
    "os.remove",
    "os.rename",
    "os.replace",
    "os.mkdir",
    "os.rmdir",
    "os.chmod",
    "os.chown",
    "os.utime",
    "os.truncate",
    "os.symlink",
    "os.link",
    "os.chflags",
    "os.setxattr",
    "os.removexattr",
    "shutil.rmtree",
    "shutil.move",
    "shutil.copyfile",
}


@dataclass
class Audit:
    """What the code under test opened, listed and changed while the audit was active."""

    opened: list[str] = field(default_factory=list)
    listed: list[str] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)
    deny: set[str] = field(default_factory=set)
    """Absolute paths whose opening raises PermissionError (as for a non-root user)."""
    read_only_under: list[str] = field(default_factory=list)
    """Directories where any write raises PermissionError (a read-only mount, as root)."""


_ACTIVE: list[Audit] = []
_HOOKED = False


def _as_path(p: object) -> str | None:
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    if isinstance(p, os.PathLike):
        p = os.fspath(p)
    if isinstance(p, str):
        return os.path.abspath(p)
    return None  # a file descriptor


def _under(path: str, dirs: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in dirs)


def _hook(event: str, args: tuple) -> None:
    if not _ACTIVE:
        return
    audit = _ACTIVE[-1]
    if event == "open":
        path = _as_path(args[0])
        if path is None:
            return
        mode, flags = args[1], args[2]
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        if writing:
            audit.writes.append(("open for writing", path))
            if _under(path, audit.read_only_under):
                raise PermissionError(30, "Read-only file system", path)
        else:
            audit.opened.append(path)
            if path in audit.deny:
                raise PermissionError(13, "Permission denied", path)
    elif event in ("os.scandir", "os.listdir"):
        path = _as_path(args[0] if args else ".")
        if path is not None:
            audit.listed.append(path)
            if path in audit.deny:
                raise PermissionError(13, "Permission denied", path)
    elif event in _MUTATING_EVENTS:
        path = _as_path(args[0]) if args else None
        audit.writes.append((event, path or "?"))
        if path and _under(path, audit.read_only_under):
            raise PermissionError(30, "Read-only file system", path)


@contextlib.contextmanager
def audited(**kw: object) -> Iterator[Audit]:
    """Record (and optionally refuse) file access by this process while the block runs.

    Uses ``sys.addaudithook`` (installed once, inert outside this context): it works as root,
    where chmod cannot make a file unreadable or a tree unwritable.
    """
    global _HOOKED
    if not _HOOKED:
        sys.addaudithook(_hook)
        _HOOKED = True
    audit = Audit(**kw)  # type: ignore[arg-type]
    _ACTIVE.append(audit)
    try:
        yield audit
    finally:
        _ACTIVE.remove(audit)

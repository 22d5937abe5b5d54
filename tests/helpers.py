"""Paths and small helpers shared by the tests (``from tests.helpers import ROOT, write_job``).

Module-level code (``parametrize`` lists, constants read at import time) needs plain values, so
they live here; ``tests/conftest.py`` turns the same things into fixtures (``repo_root``,
``sample_logs``, ``catalog``, ``make_job``) for test functions.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import pytest

from analyzer.api import Analysis, analyze
from analyzer.catalog.model import Catalog
from analyzer.decide.verdict import Verdict

ROOT = Path(__file__).resolve().parents[1]
"""The repository root (where ``pyproject.toml`` is)."""
SAMPLE_LOGS = ROOT / "sample_logs"
REAL = SAMPLE_LOGS / "real"
"""Jobs recorded on the private SLURM cluster (``docs/development.md``)."""
FORMATS = SAMPLE_LOGS / "formats"
"""Format-built jobs for what needs a GPU."""
WILD = ROOT / "tests" / "wild"
"""The wild corpus: public failure logs with an expert's label."""
SAMPLES = sorted(p.parent for p in SAMPLE_LOGS.glob("*/*/expected.toml"))
"""Every sample job directory (real and formats), each with its ``expected.toml``."""


def wild_analysis(case: str | Path) -> Analysis:
    """The analysis of a wild case (a name under ``tests/wild`` or a directory): its files but
    the label."""
    root = case if isinstance(case, Path) else WILD / case
    return analyze([p for p in sorted(root.iterdir()) if p.name != "expected.toml"])


@cache
def builtin_catalog() -> Catalog:
    """The built-in catalog, loaded once per test process (``MCORE_DIAGNOSE_PATTERNS`` is
    ignored). Shared: do not change its patterns; load a private one to do that."""
    from analyzer.catalog.load import load_catalog

    return load_catalog(use_env=False)


class MakeJob(Protocol):
    """The type of the ``make_job`` fixture (``tests/conftest.py``), for annotations."""

    def __call__(self, files: Mapping[str, str | bytes], name: str = "job") -> Path: ...


def edited_verdict(make_job: MakeJob, case: str, *edits: tuple[str, str]) -> Verdict:
    """The verdict on a wild case's ``output.log`` with exact replacements made (each must
    occur): the same log in another shape, no line written anew."""
    text = (WILD / case / "output.log").read_text(encoding="utf-8")
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    job = make_job({"output.log": text})
    return analyze([job / "output.log"]).diagnosis.verdict


def write_job(directory: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write a fake job directory and return it.

    ``files`` maps a path relative to ``directory`` (``"slurm-7.out"``,
    ``"logs/node1/stderr.log"``) to its content: ``str`` is written as UTF-8, ``bytes`` as is.
    ``directory`` and any parent folders are created; an existing directory is added to.
    """
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return directory


def cli_on_tty(*args: str, env: dict[str, str] | None = None) -> str:
    """Run the CLI with standard output on a pseudo-terminal (100 columns unless ``env`` sets
    ``COLUMNS``; the colour variables of this process left out); what it wrote there."""
    import os
    import pty
    import subprocess
    import sys

    master, slave = pty.openpty()
    e = {k: v for k, v in os.environ.items()
         if k not in ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE")}
    e.update({"COLUMNS": "100", "TERM": "xterm-256color", **(env or {})})
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "analyzer", *args],
            stdout=slave,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=e,
        )
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=120)
    finally:
        os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


def cli_in_process(
    *args: str, cwd: Path | None = None, env: Mapping[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """``mcore-diagnose ARGS`` run by ``main`` in this process, as ``subprocess.run([...,
    "-m", "analyzer", *args], capture_output=True, text=True)`` would run it: standard output
    and error captured (not terminals), ``env`` added to the environment (a None value removes
    the variable) and ``cwd`` the working directory, for the call only. For what a process adds
    nothing to (help, usage errors, reports); a test about the process itself (exit on a real
    pipe, a terminal, signals, start-up imports) runs the real command."""
    import contextlib
    import io
    import os

    from analyzer.cli.commands import main

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    code: int | str | None = 0
    try:
        for key, value in (env or {}).items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(args))
            except SystemExit as exc:
                code = exc.code
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    rc = code if isinstance(code, int) else (0 if code is None else 1)
    stdout = out.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
    stderr = err.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
    return subprocess.CompletedProcess(["mcore-diagnose", *args], rc, stdout, stderr)


# Synthetic (a mechanism test, not a log line of any software): a user pattern whose regex
# backtracks catastrophically on a run of "a"s.
SLOW_PATTERN = """
[[pattern]]
id = "user.redos"
category = "python_exception"
role = "root"
title = "catastrophic backtracking"
needles = ["aaaa"]
regex = '''^(a|aa)+$'''
cause = "x"
fix = "y"
examples = ["aaaa"]
"""


def fast_share(items: list[Any], every: int, ids: Callable[[Any], str]) -> list[Any]:
    """``items`` as pytest params where only every ``every``-th one (by position) runs in the
    fast loop and the others carry the ``slow`` marker: a per-case check over a corpus that
    keeps growing samples it in ``pytest -q`` and runs whole under ``-m ""`` (CI)."""
    return [
        pytest.param(it, id=ids(it), marks=() if i % every == 0 else pytest.mark.slow)
        for i, it in enumerate(items)
    ]

"""Where ``diagnose`` writes, in which format, and how several jobs share one output.

* ``-o FILE`` may be given several times; each file's format comes from its suffix
  (``.html``/``.htm``, ``.md``/``.markdown``, ``.json``/``.jsonl``, ``.txt``/``.text``; for
  ``events``: ``.csv``, ``.json``, ``.parquet``, ``.txt``). A suffix that names no format is an
  error (not plain text in a ``.pdf``), unless ``--format`` is given with a single ``-o``;
  ``--format`` that a known suffix contradicts (``-o r.json -f markdown``) is an error too.
  ``-o -`` is standard output.
* Without ``-o`` the output goes to standard output in ``--format`` (default: terminal).
* No ``-o`` may be an input or lie inside a directory being read, a log file's directory
  included (:func:`refuse_inside`): the next run would read the report back as a log.
* Several jobs in one run: JSON is JSON Lines (one object per job, one per line); text,
  terminal and Markdown reports follow one another under a heading per job; HTML holds one job.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex

SUFFIX_FORMAT = {
    ".html": "html",
    ".htm": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".json": "json",
    ".jsonl": "json",
    ".txt": "text",
    ".text": "text",
}


class OutputError(ValueError):
    """An output that cannot be honoured (a usage error, exit 64)."""


@dataclass(frozen=True)
class Target:
    """One destination: a file, or standard output when ``path`` is None."""

    path: Path | None
    fmt: str


TABLE_SUFFIX_FORMAT = {
    ".csv": "csv",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".txt": "table",
    ".text": "table",
}
"""The event table's formats by ``-o`` suffix (``mcore-diagnose events``)."""

STDOUT = Path("-")
"""``-o -``: standard output."""


def plan_outputs(
    outputs: Sequence[Path],
    fmt: str | None,
    *,
    suffixes: dict[str, str] = SUFFIX_FORMAT,
    default: str = "terminal",
    plain: dict[str, str] | None = None,
) -> list[Target]:
    """The destinations for ``-o`` files and ``--format`` (see the module docstring).

    ``suffixes`` maps a file suffix to its format, ``default`` is the format on standard
    output without ``--format``, ``plain`` what a ``--format`` becomes in a file (the terminal
    report is plain text there)."""
    plain = {"terminal": "text"} if plain is None else plain
    if not outputs:
        return [Target(None, fmt or default)]
    if fmt is not None and len(outputs) > 1:
        raise OutputError(
            "--format applies to a single -o; with several -o each file's suffix gives its "
            f"format ({', '.join(suffixes)})"
        )
    seen: set[Path] = set()
    targets: list[Target] = []
    for out in outputs:
        if out == STDOUT:
            if any(t.path is None for t in targets):
                raise OutputError("- (standard output) is given twice with -o")
            targets.append(Target(None, fmt or default))
            continue
        key = Path(out).absolute()
        if key in seen:
            raise OutputError(f"{out} is given twice with -o")
        seen.add(key)
        by_suffix = suffixes.get(out.suffix.lower())
        if fmt is not None:
            targets.append(Target(out, _given(out, plain.get(fmt, fmt), by_suffix)))
            continue
        if by_suffix is None:
            raise OutputError(
                f"cannot tell the format of {out} from its suffix "
                f"{out.suffix or '(none)'}; use one of {', '.join(suffixes)}, or give "
                "--format with this single -o"
            )
        targets.append(Target(out, by_suffix))
    return targets


def _given(out: Path, fmt: str, by_suffix: str | None) -> str:
    """``--format``'s format for ``out``; one that its known suffix contradicts (``-o r.json
    -f markdown``) is an error, not a file that lies about its content."""
    if by_suffix is not None and by_suffix != fmt:
        raise OutputError(
            f"-o {out} is {by_suffix} by its suffix {out.suffix} but --format says {fmt}; "
            "leave out --format, or give a file whose suffix fits"
        )
    return fmt


def refuse_inside(outputs: Sequence[Path | None], inputs: Sequence[str]) -> None:
    """Raise :class:`OutputError` when an output file (None: standard output) is one of the
    inputs, or lies inside a directory being read: a directory given, or the directory that
    holds a log file given (the job's output directory): the tool never writes into what it
    reads, and the next run would read the report back as a log."""
    dirs: list[tuple[str, Path]] = []
    files: set[Path] = set()
    for p in inputs:
        if p == "-" or not os.path.lexists(p):  # standard input, or a job id: not a path
            continue
        try:
            resolved = Path(p).resolve()
        except (OSError, RuntimeError):
            continue
        if _is_dir(p):
            dirs.append((f"the job directory {p}", resolved))
        else:
            files.add(resolved)
            parent = os.path.dirname(p) or "."
            dirs.append((f"{parent}, the directory of {p} being read", resolved.parent))
    for path in outputs:
        if path is None:
            continue
        out = path.resolve()
        if out in files:
            raise OutputError(f"-o {path} is one of the logs being read; write elsewhere")
        for shown, d in dirs:
            if out == d or d in out.parents:
                raise OutputError(
                    f"-o {path} is inside {shown}, and the next run would read it back as a "
                    "log; write elsewhere"
                )


def group_jobs(paths: Sequence[str], alone: Callable[[str], bool] | None = None) -> list[list[str]]:
    """Split command-line paths into jobs: each directory (and each argument ``alone`` says is
    a job by itself, such as a SLURM job id) is a job of its own; files named explicitly (and
    ``-``, standard input) together form one job, placed where the first was."""
    jobs: list[list[str]] = []
    files: list[str] | None = None
    for p in paths:
        if p != "-" and (_is_dir(p) or (alone is not None and alone(p))):
            jobs.append([p])
        elif files is None:
            files = [p]
            jobs.append(files)
        else:
            files.append(p)
    return jobs


def _is_dir(p: str) -> bool:
    try:
        return stat.S_ISDIR(Path(p).stat().st_mode)
    except OSError:
        return False


# json.dumps(ensure_ascii=False) escapes C0 controls but writes C1 controls and bidi overrides
# raw; escape them too so no terminal acts on them (as analyzer.report.jsonout does).
_RAW = regex.compile(r"[\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def json_line(obj: dict[str, Any]) -> str:
    """One JSON object on one line (JSON Lines), newline-terminated."""
    text = json.dumps(obj, ensure_ascii=False, default=str)
    return _RAW.sub(lambda m: f"\\u{ord(m[0]):04x}", text) + "\n"


def job_label(job: Sequence[str]) -> str:
    """How a job is named in reports and in the JSON ``job`` key."""
    return " ".join("(stdin)" if p == "-" else p for p in job)


def combine(fmt: str, parts: Sequence[tuple[str, str]], *, lines: bool = False) -> str:
    """Several jobs' reports (label, text) as one output in ``fmt``; ``lines``: one-line
    reports (``--quiet``), simply one after another."""
    if len(parts) == 1 or fmt == "json" or lines:
        return "".join(text for _label, text in parts)
    if fmt == "html":
        raise OutputError(
            "an HTML report holds one job; give one job directory per run, or use "
            "`mcore-diagnose triage` for many jobs"
        )
    out = []
    for i, (label, text) in enumerate(parts):
        if fmt == "markdown":
            from analyzer.report.markdown import md

            out.append(("\n---\n\n" if i else "") + f"**Job {md(label)}**\n\n" + text)
        else:
            rule = "=" * min(100, max(20, len(label) + 8))
            out.append(("\n" if i else "") + f"{rule}\nJob {label}\n{rule}\n" + text)
    return "".join(out)

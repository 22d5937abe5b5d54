"""The post-mortem's JSON line for the logs read so far: the same code path as
``mcore-diagnose DIR -f json`` (``run_job``, ``Diagnosis.as_dict``, ``json_line``), so the
``end`` finding's ``diagnosis`` is byte for byte what that command prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analyzer.api import AnalyzeOptions, run_job
from analyzer.decide.verdict import SCHEMA_VERSION, Diagnosis
from analyzer.report.outputs import json_line


def postmortem(
    paths: list[str], options: AnalyzeOptions, label: str
) -> tuple[str, Diagnosis | None]:
    """(the JSON line ``mcore-diagnose PATHS -f json`` prints, the diagnosis or None when
    nothing could be read)."""
    run = run_job([Path(p) for p in paths], options, shown=paths)
    if run.problem is not None:
        a = run.analysis
        return json_line(
            {
                "schema_version": SCHEMA_VERSION,
                "job": label,
                "status": "unknown",
                "verdict": None,
                "error": run.problem.split("\n", 1)[0],
                "hint": run.problem.split("\n", 1)[1] if "\n" in run.problem else None,
                "problems": list(a.read.problems),
                "skipped": [{"file": rel, "reason": why} for rel, why in a.discovery.skipped],
                "files_read": 0,
                "bytes_read": 0,
            }
        ), None
    d = run.diagnosis
    obj: dict[str, Any] = d.as_dict()
    return json_line({"schema_version": obj["schema_version"], "job": label, **obj}), d

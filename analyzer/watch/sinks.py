"""Where findings go: JSON Lines, a command run per finding (``--on-finding``), a live view."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import IO, Any

from analyzer.report.outputs import json_line

HOOK_TIMEOUT_S = 60.0


def json_sink(stream: IO[str]) -> Callable[[dict[str, Any]], None]:
    """Write each finding as one JSON line, flushed at once."""

    def emit(f: dict[str, Any]) -> None:
        stream.write(json_line(f))
        stream.flush()

    return emit


def hook(command: str, timeout: float = HOOK_TIMEOUT_S) -> Callable[[dict[str, Any]], None]:
    """Run ``command`` (a shell command) with the finding's JSON line on standard input, once
    per finding; its failure is reported on standard error, never fatal."""

    def emit(f: dict[str, Any]) -> None:
        try:
            r = subprocess.run(
                command, shell=True, input=json_line(f), text=True, timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            print(f"mcore-diagnose watch: --on-finding command ran over {timeout:.0f} s; "
                  "it was stopped", file=sys.stderr)
            return
        except OSError as exc:
            print(f"mcore-diagnose watch: --on-finding command could not run: {exc}",
                  file=sys.stderr)
            return
        if r.returncode != 0:
            print(f"mcore-diagnose watch: --on-finding command exited with {r.returncode} "
                  f"for the {f['kind']} finding", file=sys.stderr)

    return emit


def fan_out(*sinks: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """One emit that calls every sink in order."""

    def emit(f: dict[str, Any]) -> None:
        for s in sinks:
            s(f)

    return emit

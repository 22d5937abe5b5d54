"""Ask NCCL's RAS service about a running job and parse its text report (``--ncclras``).

NCCL 2.24+ runs a RAS thread in every process; the ``ncclras`` client connects to it
(``localhost:28028`` unless ``NCCL_RAS_ADDR`` says otherwise) and prints a text report: the
version lines, a "Job summary" table, a "Communicators" table, then "Errors" (``INCOMPLETE``:
processes that sent no communicator data; ``DEAD``: processes unreachable over the RAS network;
per communicator ``#G-I (hash) INCOMPLETE`` with its missing ranks, ``ERROR``) and "Warnings"
(``TIMEOUT``, ``MISMATCH``).

The format is not specified beyond NCCL's user guide ("RAS" page), which describes the report
but shows no complete example; this parser follows the format strings of NCCL's RAS client
(``src/ras/client_support.cc``, identical in these parts from v2.24.3-1 to v2.27.7-1). Lines it
does not know are ignored, so a newer NCCL that adds lines degrades to fewer fields, never to
an error.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

_VERSION = re.compile(r"^NCCL version (\S+)")
_PROCESS = re.compile(r"^\s+Process (\d+) on node (\S+) managing GPUs? (.+?)\s*$")
_RANK = re.compile(
    r"^\s+Rank (\d+)(?: ((?:has|reported) .+?))? -- "
    r"(?:GPU (.+?) managed by process (\d+) on node (\S+)"
    r"|\[process information not found\])\s*$"
)
_MISSING_PROCS = re.compile(r"^\s+Missing communicator data from (\d+) job process")
_DEAD = re.compile(r"^\s+(\d+) job process(?:es are| is) considered dead")
_COMM_HEAD = re.compile(r"^#(\d+)-(\d+) \(([0-9a-f]+)\) (INCOMPLETE|ERROR|MISMATCH)\s*$")
_COMM_MISSING = re.compile(r"^\s+Missing communicator data from (\d+) ranks?")
_TIMEOUT = re.compile(r"^\s+Encountered (\d+) communication timeouts?")
_COMM_ROW = re.compile(
    r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+(?:-\d+)?)\s+(\d+)\s+(\d+)\s+([A-Z]+)\s+([A-Z,]+)\s*$"
)
_NUMBERS = re.compile(r"^\s*\d+(?:\s+\d+)*\s*$")
_SECTIONS = {"Job summary": "job", "Errors": "errors", "Warnings": "warnings"}


def _empty() -> dict[str, Any]:
    return {
        "version": None,
        "job": None,
        "communicators": [],
        "missing_processes": {"count": 0, "processes": []},
        "dead_processes": {"count": 0, "processes": []},
        "communicator_errors": [],
        "timeouts": 0,
        "missing_ranks": [],
        "unresponsive_pids": [],
    }


def _job_summary(header: list[str], numbers: list[int]) -> dict[str, Any]:
    if len(numbers) == 5:
        keys = ("nodes", "processes_per_node", "gpus_per_process", "processes", "gpus")
        return dict(zip(keys, numbers, strict=True))
    return {"columns": " ".join(header).split(), "values": numbers}


def _comm_row(m: re.Match[str]) -> dict[str, Any]:
    return {
        "group": int(m[1]),
        "comms": int(m[2]),
        "nodes": int(m[3]),
        "ranks_per_node": m[4],
        "ranks_per_comm": int(m[5]),
        "ranks_in_group": int(m[6]),
        "status": m[7],
        "errors": m[8].split(","),
    }


def _rank(m: re.Match[str]) -> dict[str, Any]:
    return {
        "rank": int(m[1]),
        "state": m[2],
        "gpu": m[3],
        "pid": int(m[4]) if m[4] else None,
        "node": m[5],
    }


class _Parser:
    """Line-by-line state: which section and which block a line belongs to."""

    def __init__(self) -> None:
        self.out = _empty()
        self.section = ""
        self.block: dict[str, Any] | None = None
        self.job_header: list[str] = []

    def feed(self, line: str) -> None:
        stripped = line.strip()
        if stripped in _SECTIONS:
            self.section, self.block = _SECTIONS[stripped], None
            return
        if stripped.startswith("Communicators..."):
            self.section, self.block = "comms", None
            return
        if (m := _VERSION.match(line)) and self.out["version"] is None:
            self.out["version"] = m[1]
        elif self.section == "job":
            self._job(line, stripped)
        elif self.section == "comms" and (m := _COMM_ROW.match(line)):
            self.out["communicators"].append(_comm_row(m))
        elif self.section in ("errors", "warnings"):
            self._errors(line, stripped)

    def _job(self, line: str, stripped: str) -> None:
        if _NUMBERS.match(line) and self.out["job"] is None:
            numbers = [int(x) for x in stripped.split()]
            self.out["job"] = _job_summary(self.job_header, numbers)
        elif stripped and not stripped.startswith("="):
            self.job_header.append(stripped)

    def _errors(self, line: str, stripped: str) -> None:
        out = self.out
        if stripped in ("INCOMPLETE", "DEAD"):
            key = "missing_processes" if stripped == "INCOMPLETE" else "dead_processes"
            self.block = out[key]
        elif m := _COMM_HEAD.match(line):
            self.block = {
                "group": int(m[1]), "index": int(m[2]), "hash": m[3], "kind": m[4],
                "missing": None, "ranks": [], "detail": [],
            }
            out["communicator_errors"].append(self.block)
        elif stripped == "TIMEOUT":
            self.block = None
        elif m := _TIMEOUT.match(line):
            out["timeouts"] = int(m[1])
        elif self.block is not None:
            self._block_line(line, stripped)

    def _block_line(self, line: str, stripped: str) -> None:
        block = self.block
        assert block is not None
        if (m := _MISSING_PROCS.match(line)) or (m := _DEAD.match(line)):
            block["count"] = int(m[1])
        elif m := _PROCESS.match(line):
            block["processes"].append({"pid": int(m[1]), "node": m[2], "gpus": m[3]})
        elif m := _COMM_MISSING.match(line):
            block["missing"] = int(m[1])
        elif (m := _RANK.match(line)) and "ranks" in block:
            block["ranks"].append(_rank(m))
        elif stripped and "detail" in block:
            block["detail"].append(stripped)

    def result(self) -> dict[str, Any]:
        out = self.out
        missing: dict[int, dict[str, Any]] = {}
        for comm in out["communicator_errors"]:
            if comm["kind"] == "INCOMPLETE":
                for rank in comm["ranks"]:
                    missing.setdefault(rank["rank"], rank)
        out["missing_ranks"] = [missing[r] for r in sorted(missing)]
        pids = [p["pid"] for p in out["dead_processes"]["processes"]]
        pids += [p["pid"] for p in out["missing_processes"]["processes"]]
        out["unresponsive_pids"] = sorted(set(pids))
        return out


def parse_ncclras(text: str) -> dict[str, Any]:
    """Parse the text report of NCCL's ``ncclras`` client into a JSON-ready dict.

    Keys: ``version``; ``job`` (nodes, processes_per_node, gpus_per_process, processes, gpus
    when NCCL prints the uniform table, else the raw columns and values); ``communicators``
    (one row of the summary table each); ``missing_processes`` and ``dead_processes`` (count
    and the processes NCCL names: pid, node, gpus); ``communicator_errors`` (``#G-I`` blocks:
    kind, hash, missing count, the ranks named, other detail lines); ``timeouts``;
    ``missing_ranks`` (ranks missing from any communicator, by rank); ``unresponsive_pids``
    (dead or silent processes). Unknown lines are ignored.
    """
    parser = _Parser()
    for line in text.splitlines():
        parser.feed(line)
    return parser.result()


def ask_ncclras(timeout: float) -> dict[str, Any] | None:
    """Run ``ncclras`` (when on PATH) and parse its report; None when absent or it fails.

    The client's own ``-t`` limits how long NCCL waits for the other processes; the process
    is killed ``timeout`` seconds after it starts either way.
    """
    exe = shutil.which("ncclras")
    if exe is None:
        return None
    wait = max(1, int(timeout))
    try:
        done = subprocess.run(
            [exe, "-t", str(wait)], capture_output=True, text=True, timeout=timeout + 5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return parse_ncclras(done.stdout)

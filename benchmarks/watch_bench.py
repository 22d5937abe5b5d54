"""What ``mcore-diagnose watch`` costs beside a running 1,024-rank job (issue 43).

1. ``generate.py --dense`` writes a 1,024-rank job (128 nodes x 8, torchrun's ``--log-dir``
   layout, every rank printing its iteration line); each file is cut before the failure the
   generator ends it with, so what is left is a job still training (its start-up, NCCL and
   warning noise, its iteration lines).
2. ``watch DIR -f json`` starts on it; a writer process then appends one iteration line to
   every rank's ``stdout.log`` every ``--period`` seconds (1,024 lines a period) for
   ``--write-seconds``, and then writes nothing for ``--rest-seconds``.
3. The watcher's CPU (user + sys from ``/proc/PID/stat``, its children included) is sampled at
   the phase boundaries: the first read of what was there, the writes, the rest. The issue's
   target: under 2 % of one core at rest.

    python benchmarks/watch_bench.py                      # 1,024 ranks, 60 s of writes, 30 s rest
    python benchmarks/watch_bench.py --nodes 2 --write-seconds 3 --rest-seconds 3   # smoke

Prints one JSON object (the figures) on standard output. Claims nothing by itself: the figures
go into docs/performance.md by hand.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate

REPO = Path(__file__).resolve().parents[1]
CUT_AT = re.compile(
    rb"OutOfMemoryError|Traceback \(most recent call last\)|Watchdog caught|ChildFailedError"
    rb"|srun: error|srun: Job step aborted|failed \(exitcode|Fatal Python error|terminate called"
    rb"|Exception raised from|failure detected by watchdog|CANCELLED AT"
)
KEEP_FRACTION = 0.6
"""Each file keeps at most this much of its head (the failure is at its end)."""
ITERATION = (
    " [{ts}] iteration {it:8d}/  500000 | consumed samples: {consumed:12d} | elapsed time per "
    "iteration (ms): 1000.0 | throughput per GPU (TFLOP/s/GPU): 431.3 | learning rate: "
    "2.999400E-04 | global batch size:  1024 | lm loss: 2.345679E+00 | loss scale: 1.0 | "
    "grad norm: 0.812 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
)
"""The generator's dense iteration line (``generate._stdout_templates``), one per rank."""


def running_job(out: Path, nodes: int, size_gb: float) -> Path:
    """A generated job cut before its failure: a job still training."""
    spec = generate.Spec(str(out), size_gb=size_gb, nodes=nodes, dense=True)
    generate.generate(spec)
    for path in sorted(out.rglob("*")):
        if not path.is_file() or path.suffix == ".json":
            continue
        data = path.read_bytes()
        cut = int(len(data) * KEEP_FRACTION)
        m = CUT_AT.search(data)
        if m is not None:
            cut = min(cut, m.start())
        cut = data.rfind(b"\n", 0, cut) + 1
        path.write_bytes(data[:cut])
    (out / "generator.json").unlink()
    return out


def rank_logs(job: Path) -> list[Path]:
    return sorted(job.glob("torchrun/*/*/attempt_0/*/stdout.log"))


def writer(files: list[str], period: float, seconds: float) -> None:
    """Append one iteration line to every file every ``period`` s for ``seconds``."""
    start = time.monotonic()
    it = 20600
    handles = [open(f, "ab", buffering=0) for f in files]  # noqa: SIM115 -- closed below
    try:
        while time.monotonic() - start < seconds:
            tick = time.monotonic()
            ts = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
            line = ITERATION.format(ts=ts, it=it, consumed=it * 1024).encode()
            for h in handles:
                h.write(line)
            it += 1
            time.sleep(max(0.0, period - (time.monotonic() - tick)))
    finally:
        for h in handles:
            h.close()


def cpu_seconds(pid: int) -> float:
    """User + sys CPU of ``pid`` and its waited-for children, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def measure(args: argparse.Namespace, job: Path) -> dict[str, object]:
    cmd = [sys.executable, "-m", "analyzer", "watch", str(job), "-f", "json",
           "--interval", str(args.interval),
           "--max-seconds", str(args.settle + args.write_seconds + args.rest_seconds + 5)]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    marks: dict[str, tuple[float, float]] = {}

    def mark(name: str) -> None:
        marks[name] = (time.monotonic(), cpu_seconds(proc.pid))

    mark("start")
    time.sleep(args.settle)
    mark("settled")
    files = [str(p) for p in rank_logs(job)]
    w = multiprocessing.Process(target=writer, args=(files, args.period, args.write_seconds))
    w.start()
    w.join()
    mark("written")
    time.sleep(args.rest_seconds)
    mark("rested")
    out, err = proc.communicate(timeout=120)

    def phase(a: str, b: str) -> dict[str, float]:
        wall = marks[b][0] - marks[a][0]
        cpu = marks[b][1] - marks[a][1]
        return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 3),
                "cpu_percent_of_one_core": round(100 * cpu / wall, 2)}

    findings = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    return {
        "ranks": len(files),
        "bytes_at_start": sum(p.stat().st_size for p in job.rglob("*") if p.is_file()),
        "lines_written": len(files) * int(args.write_seconds / args.period),
        "interval_s": args.interval,
        "first_read": phase("start", "settled"),
        "writing": phase("settled", "written"),
        "at_rest": phase("written", "rested"),
        "finding_kinds": [f["kind"] for f in findings],
        "watch_rc": proc.returncode,
        "watch_stderr": err.decode()[-500:],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(REPO / "bench-data" / "watch-job"))
    ap.add_argument("--nodes", type=int, default=128, help="x 8 ranks (default 128: 1,024)")
    ap.add_argument("--size-gb", type=float, default=0.1, help="generated size before the cut")
    ap.add_argument("--period", type=float, default=1.0, help="seconds between iteration lines")
    ap.add_argument("--write-seconds", type=float, default=60.0)
    ap.add_argument("--rest-seconds", type=float, default=30.0)
    ap.add_argument("--settle", type=float, default=15.0,
                    help="seconds for the watcher's first read before the writes start")
    ap.add_argument("--interval", type=float, default=2.0, help="watch --interval")
    args = ap.parse_args(argv)
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    job = running_job(out, args.nodes, args.size_gb)
    print(json.dumps(measure(args, job), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark ``mcore-diagnose`` against ``rg`` and ``grep`` on generated 1,024-rank jobs.

One command, from a fresh checkout (the job directories are generated under ``bench-data/``
the first time, then reused)::

    .venv/bin/python benchmarks/bench.py                    # three profiles, 5 alternating runs
    .venv/bin/python benchmarks/bench.py --profiles realistic --sizes 0.1,1,4   # growth
    .venv/bin/python benchmarks/bench.py --quick            # CI: tiny jobs, verdict check only

Profiles: ``realistic`` (1 GB; Megatron prints iteration lines on the last rank only),
``dense`` (256 MB; every rank prints its iteration/loss line every step: hit-dense) and
``many-files`` (8,192 ranks x 2 small files). Each run times, in rotating order,
``mcore-diagnose DIR --format json``, ``rg -F -f NEEDLES -c DIR`` and
``grep -rF -f NEEDLES -c DIR`` (NEEDLES = the catalog's prefilter literals), after warming
the page cache. It reports medians, the ratios tool/rg and tool/grep, the tool's CPU time and
peak memory (the largest process, from ``wait4``, and the whole process tree's summed RSS,
sampled every 10 ms), the start-up time (``--version``, ``--help``, a 15 KB job), and checks
that every verdict is ``cuda_oom`` on the rank the generator made run out of memory. A wrong
verdict exits 1. Targets (issue 16, reported, not asserted): realistic <= 2x rg, dense <= 3x
rg, peak RSS <= 300 MB, a small job <= 0.3 s.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402

RSS_TARGET_MB = 300
RATIO_TARGET = 3.0


@dataclass
class Run:
    """One timed command."""

    wall: float
    cpu: float
    maxrss_mb: float
    tree_rss_mb: float
    rc: int
    out: bytes


@dataclass
class Row:
    """Every run of one command on one directory."""

    name: str
    runs: list[Run] = field(default_factory=list)
    files: int = 0

    def med(self, attr: str) -> float:
        return statistics.median(getattr(r, attr) for r in self.runs)

    def peak(self, attr: str) -> float:
        return max(getattr(r, attr) for r in self.runs)


def _tree_rss_kb(pid: int) -> int:
    """Summed VmRSS of ``pid`` and its descendants (shared pages counted in each)."""
    total = 0
    stack = [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/status", "rb") as fh:
                for line in fh:
                    if line.startswith(b"VmRSS:"):
                        total += int(line.split()[1])
                        break
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children", "rb") as fh:
                    stack.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return total


def timed(cmd: list[str], sample: bool = True) -> Run:
    """Run ``cmd``; wall time, CPU time and memory of it and everything it starts."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    peak = [0]
    done = threading.Event()

    def sampler() -> None:
        while not done.wait(0.01):
            peak[0] = max(peak[0], _tree_rss_kb(proc.pid))

    th = threading.Thread(target=sampler, daemon=True)
    if sample:
        th.start()
    chunks = []
    assert proc.stdout is not None
    while b := proc.stdout.read(1 << 16):
        chunks.append(b)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    if sample:
        th.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(
        wall,
        ru.ru_utime + ru.ru_stime,
        ru.ru_maxrss / 1024,
        peak[0] / 1024,
        proc.returncode,
        b"".join(chunks),
    )


def tool_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("mcore-diagnose")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "analyzer"]


def load_needles(path: Path) -> int:
    sys.path.insert(0, str(ROOT))
    from analyzer.catalog import load_catalog

    needles = load_catalog().needles
    path.write_text("".join(n + "\n" for n in needles), encoding="utf-8")
    return len(needles)


def ensure_job(
    data: Path, size: float, nodes: int, gpus: int, seed: int, dense: bool = False
) -> Path:
    """The generated job directory for these parameters (generated when missing or stale)."""
    out = data / f"job-{size:g}g-{nodes}x{gpus}-s{seed}{'-dense' if dense else ''}"
    meta = out / "generator.json"
    want = {"size_gb": size, "nodes": nodes, "gpus_per_node": gpus, "seed": seed, "dense": dense}
    stamp = hashlib.sha1((HERE / "generate.py").read_bytes()).hexdigest()[:12]
    if meta.exists():
        have = json.loads(meta.read_text())
        if all(have.get(k) == v for k, v in want.items()) and have.get("gen") == stamp:
            return out
    print(f"generating {out} ({size:g} GB) ...", file=sys.stderr, flush=True)
    t = time.perf_counter()
    spec = generate.Spec(str(out), size, nodes, gpus, seed, dense=dense)
    generate.generate(spec)
    m = json.loads(meta.read_text())
    m["gen"] = stamp
    meta.write_text(json.dumps(m, indent=2) + "\n")
    print(f"  {m['bytes'] / 1e6:.0f} MB in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    return out


def warm(job: Path) -> int:
    """Read every file once so all runs start from the page cache; returns the bytes."""
    total = 0
    for dirpath, _dirs, files in os.walk(job):
        for f in files:
            with open(os.path.join(dirpath, f), "rb", buffering=0) as fh:
                while b := fh.read(1 << 22):
                    total += len(b)
    return total


def check_verdict(run: Run, job: Path) -> tuple[bool, str]:
    meta = json.loads((job / "generator.json").read_text())
    try:
        v = json.loads(run.out)["verdict"]
    except (ValueError, KeyError, TypeError) as exc:
        return False, f"no JSON verdict ({exc}); exit code {run.rc}"
    got = f"{v.get('category')} on rank {v.get('rank')}"
    ok = v.get("category") == "cuda_oom" and v.get("rank") == meta["oom_rank"]
    want = f"cuda_oom on rank {meta['oom_rank']}"
    return ok, got if ok else f"{got}, want {want}"


def grep_total(out: bytes) -> int:
    """Matching lines over all files from ``-c`` output (``path:count`` lines)."""
    return sum(int(line.rsplit(b":", 1)[1]) for line in out.splitlines() if b":" in line)


def bench_dir(job: Path, needles: Path, runs: int, others: bool) -> tuple[dict[str, Row], bool]:
    rows = {"tool": Row("mcore-diagnose")}
    cmds = {"tool": [*tool_cmd(), str(job), "--format", "json"]}
    if others:
        for name, cmd in (
            ("rg", ["rg", "-F", "-f", str(needles), "-c", str(job)]),
            ("grep", ["grep", "-rF", "-f", str(needles), "-c", str(job)]),
        ):
            if shutil.which(cmd[0]):
                rows[name] = Row(cmd[0])
                cmds[name] = cmd
            else:
                print(f"  {cmd[0]} not installed: skipped", file=sys.stderr)
    # Untimed warm-up of every command (imports, page cache, pattern compile caches).
    for name in cmds:
        timed(cmds[name], sample=False)
    ok = True
    names = list(cmds)
    for i in range(runs):
        order = names[i % len(names) :] + names[: i % len(names)]
        for name in order:
            r = timed(cmds[name], sample=(name == "tool"))
            rows[name].runs.append(r)
            if name == "tool":
                good, what = check_verdict(r, job)
                ok &= good
                if not good:
                    print(f"  WRONG VERDICT: {what}", file=sys.stderr)
        print(
            f"  run {i + 1}/{runs}: "
            + ", ".join(f"{n} {rows[n].runs[-1].wall:.2f}s" for n in names),
            file=sys.stderr,
            flush=True,
        )
    if "rg" in rows and "grep" in rows:
        a, b = grep_total(rows["rg"].runs[-1].out), grep_total(rows["grep"].runs[-1].out)
        if a != b:
            print(f"  note: rg counted {a} matching lines, grep {b}", file=sys.stderr)
    return rows, ok


def startup(runs: int) -> dict[str, float]:
    """Median wall time of the tool's start-up: ``--version``, ``--help`` and a 15 KB job."""
    out = {}
    small = ROOT / "sample_logs" / "real" / "exception-cascade"
    cases = [["--version"], ["--help"]]
    if small.is_dir():
        cases.append([str(small.relative_to(ROOT)), "--format", "json"])
    timed([*tool_cmd(), *cases[-1]], sample=False)  # fills the catalog validation cache
    for args in cases:
        ts = [timed([*tool_cmd(), *args], sample=False).wall for _ in range(runs)]
        out[" ".join(args)] = statistics.median(ts)
    return out


def engines(job: Path, limit_mb: int = 256) -> list[tuple[str, float, int]]:
    """Single-core throughput of the candidate prefilter engines over the job's bytes, with
    the catalog's needles: (engine, MB/s, hits). Reported with ``--engines``."""
    sys.path.insert(0, str(ROOT))
    import regex

    from analyzer.catalog import load_catalog
    from analyzer.prefilter import Prefilter

    needles = [n.encode() for n in load_catalog().needles]
    datas, size = [], 0
    for p in sorted(job.rglob("*.log")):
        datas.append(p.read_bytes())
        size += len(datas[-1])
        if size >= limit_mb << 20:
            break
    cands: list[tuple[str, object, int]] = []  # name, function, MB to measure on
    pf = Prefilter([n.decode() for n in needles])
    if pf.engine == "hyperscan":
        cands.append(("hyperscan (every occurrence, with needle ids)", pf.find_all, limit_mb))
    try:
        import ahocorasick_rs

        ac = ahocorasick_rs.BytesAhoCorasick(needles)
        cands.append(
            (
                "ahocorasick_rs (overlapping)",
                lambda d: ac.find_matches_as_indexes(d, True),
                limit_mb,
            )
        )
    except ImportError:
        pass
    alt = regex.compile(b"|".join(regex.escape(n) for n in sorted(needles, key=len, reverse=True)))
    cands.append(("regex alternation (fallback)", lambda d: alt.findall(d), 8))
    cands.append(("bytes.count(b'\\n') (line numbers)", lambda d: [0] * d.count(b"\n"), limit_mb))
    out = []
    for name, fn, mb in cands:
        use, got = [], 0
        for d in datas:
            if got >= mb << 20:
                break
            use.append(d)
            got += len(d)
        t = time.process_time()
        hits = sum(len(fn(d)) for d in use)  # type: ignore[operator]
        out.append(
            (f"{name} [{got / 1e6:.0f} MB]", got / 1e6 / max(time.process_time() - t, 1e-9), hits)
        )
    return out


Result = tuple[str, int, dict[str, Row], bool]
"""(profile, bytes, rows, verdict ok) of one job directory."""


def fmt_table(results: list[Result]) -> str:
    head = (
        "| profile | size | files | mcore-diagnose | rg | grep | tool/rg | tool/grep | "
        "peak RSS (largest process) | peak RSS (process tree) | verdict |"
    )
    lines = [head, "|" + "---|" * 11]
    for label, nbytes, rows, ok in results:
        t = rows["tool"]
        rg = rows.get("rg")
        gr = rows.get("grep")

        def ratio(other: Row | None, t: Row = t) -> str:
            return f"{t.med('wall') / other.med('wall'):.2f}" if other else "-"

        def wall(row: Row | None) -> str:
            return f"{row.med('wall'):.2f} s (CPU {row.med('cpu'):.2f} s)" if row else "-"

        lines.append(
            f"| {label} | {nbytes / 1e9:.2f} GB | {t.files} | {wall(t)} | {wall(rg)} | "
            f"{wall(gr)} | {ratio(rg)} | {ratio(gr)} | {t.peak('maxrss_mb'):.0f} MB | "
            f"{t.peak('tree_rss_mb'):.0f} MB | {'ok' if ok else 'WRONG'} |"
        )
    return "\n".join(lines)


PROFILES = ("realistic", "dense", "many-files")
"""realistic: Megatron prints iteration lines on the last rank only (``--size-gb``);
dense: every rank prints its iteration/loss line every step (``--dense-gb``); many-files:
8,192 ranks x 2 small files (``--many-files-gb``, ``--many-files-nodes`` x 8)."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--profiles", default=",".join(PROFILES), help="comma-separated: " + ", ".join(PROFILES)
    )
    ap.add_argument("--size-gb", type=float, default=1.0, help="realistic job size (default 1)")
    ap.add_argument("--sizes", help="realistic sizes in GB, e.g. 0.1,1,4 (growth)")
    ap.add_argument("--dense-gb", type=float, default=0.25, help="hit-dense size (default 0.25)")
    ap.add_argument("--many-files-gb", type=float, default=0.25, help="default 0.25")
    ap.add_argument("--many-files-nodes", type=int, default=1024, help="x 8 ranks (default 1024)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per command (default 5)")
    ap.add_argument("--nodes", type=int, default=128)
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--data", type=Path, default=ROOT / "bench-data", help="where jobs go")
    ap.add_argument("--no-others", action="store_true", help="time the tool only")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument(
        "--engines",
        action="store_true",
        help="also measure the prefilter engines (single core, first 256 MB of the job)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="CI mode: a ~20 MB job on 16 nodes, one run, verdict check, no timing claims",
    )
    a = ap.parse_args(argv)
    gpus = a.gpus_per_node
    jobs: list[tuple[str, float, int, bool]] = []  # label, size, nodes, dense
    if a.quick:
        runs = 1
        jobs = [("realistic", 0.02, 16, False), ("dense", 0.01, 16, True)]
    else:
        runs = a.runs
        wanted = [p.strip() for p in a.profiles.split(",") if p.strip()]
        for p in wanted:
            if p not in PROFILES:
                ap.error(f"unknown profile {p!r}; choose from {', '.join(PROFILES)}")
        if "realistic" in wanted:
            sizes = [float(x) for x in a.sizes.split(",")] if a.sizes else [a.size_gb]
            jobs += [("realistic", size, a.nodes, False) for size in sizes]
        if "dense" in wanted:
            jobs.append(("dense", a.dense_gb, a.nodes, True))
        if "many-files" in wanted:
            jobs.append(("many-files", a.many_files_gb, a.many_files_nodes, False))
    a.data.mkdir(parents=True, exist_ok=True)
    needles = a.data / "needles.txt"
    n = load_needles(needles)
    print(f"catalog: {n} needles -> {needles}", file=sys.stderr)
    results: list[Result] = []
    all_ok = True
    for label, size, nodes, dense in jobs:
        job = ensure_job(a.data, size, nodes, gpus, a.seed, dense)
        nbytes = warm(job)
        print(f"{label}: {job}: {nbytes / 1e6:.0f} MB, {runs} run(s)", file=sys.stderr, flush=True)
        rows, ok = bench_dir(job, needles, runs, not a.no_others)
        rows["tool"].files = sum(1 for p in job.rglob("*") if p.is_file()) - 1
        all_ok &= ok
        results.append((label, nbytes, rows, ok))
    su = startup(3 if a.quick else 10)
    if a.engines:
        print()
        last = jobs[-1]
        print(f"prefilter engines, one core, {n} needles, {results[-1][1] / 1e6:.0f} MB job:")
        for name, mbs, hits in engines(ensure_job(a.data, last[1], last[2], gpus, a.seed, last[3])):
            print(f"  {name:48s} {mbs:8.0f} MB/s  ({hits} hits)")
    print()
    print(f"mcore-diagnose vs rg/grep, {os.cpu_count()} CPUs, medians of {runs} run(s)")
    print(fmt_table(results))
    print()
    print("start-up: " + ", ".join(f"`mcore-diagnose {k}` {v:.3f} s" for k, v in su.items()))
    growth = [r for r in results if r[0] == "realistic"]
    if len(growth) > 1:
        print()
        print("growth between sizes (marginal cost per extra GB; memory should stay flat):")
        for (_l0, b0, r0, _o0), (_l1, b1, r1, _o1) in itertools.pairwise(growth):
            gb = (b1 - b0) / 1e9
            line = (
                f"  {b0 / 1e9:.2f} -> {b1 / 1e9:.2f} GB: tool "
                f"+{(r1['tool'].med('wall') - r0['tool'].med('wall')) / gb:.2f} s/GB wall, "
                f"+{(r1['tool'].med('cpu') - r0['tool'].med('cpu')) / gb:.2f} s/GB CPU"
            )
            if "rg" in r0 and "rg" in r1:
                line += f"; rg +{(r1['rg'].med('wall') - r0['rg'].med('wall')) / gb:.2f} s/GB"
            line += (
                f"; peak tree RSS {r0['tool'].peak('tree_rss_mb'):.0f} -> "
                f"{r1['tool'].peak('tree_rss_mb'):.0f} MB"
            )
            print(line)
    if a.json:
        a.json.write_text(
            json.dumps(
                {
                    "startup_s": su,
                    "jobs": [
                        {
                            "profile": label,
                            "bytes": nbytes,
                            "ok": ok,
                            **{
                                k: {
                                    "wall_s": [r.wall for r in row.runs],
                                    "cpu_s": [r.cpu for r in row.runs],
                                    "maxrss_mb": [r.maxrss_mb for r in row.runs],
                                    "tree_rss_mb": [r.tree_rss_mb for r in row.runs],
                                }
                                for k, row in rows.items()
                            },
                        }
                        for label, nbytes, rows, ok in results
                    ],
                },
                indent=2,
            )
            + "\n"
        )
    if not a.quick:
        notes = []
        for label, _nb, rows, _ok in results:
            t, rg = rows["tool"], rows.get("rg")
            target = 2.0 if label == "realistic" else RATIO_TARGET
            if rg and t.med("wall") > target * rg.med("wall"):
                notes.append(f"{label}: tool/rg {t.med('wall') / rg.med('wall'):.2f} > {target}")
            if t.peak("tree_rss_mb") > RSS_TARGET_MB:
                notes.append(f"{label}: peak RSS {t.peak('tree_rss_mb'):.0f} MB > {RSS_TARGET_MB}")
        if notes:
            print("\nabove target (not an error): " + "; ".join(notes))
    print("\nverdict: " + ("ok (cuda_oom on the OOM rank)" if all_ok else "WRONG"))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark ``mcore-diagnose`` against ``rg`` and ``grep`` on generated 1,024-rank jobs.

One command, from a fresh checkout (the job directories are generated under ``bench-data/``
the first time, then reused)::

    .venv/bin/python benchmarks/bench.py                    # four profiles, 5 alternating runs
    .venv/bin/python benchmarks/bench.py --profiles realistic --sizes 0.1,1,4   # growth
    .venv/bin/python benchmarks/bench.py --profiles triage --runs 2   # jobs/s at 100/300/1000
    .venv/bin/python benchmarks/bench.py --quick            # CI: tiny jobs, verdict check only

Profiles: ``realistic`` (1 GB; Megatron prints iteration lines on the last rank only),
``dense`` (256 MB; every rank prints its iteration/loss line every step: hit-dense),
``many-files`` (8,192 ranks x 2 small files) and ``triage`` (``mcore-diagnose triage`` over
100, 300 and 1,000 small failed jobs of three causes, ``--triage-jobs``; every row and the
summary's counts are checked, a wrong one exits 1). Each run times, in rotating order,
``mcore-diagnose DIR --format json``, ``rg -F -f NEEDLES -c DIR`` and
``grep -rF -f NEEDLES -c DIR`` (NEEDLES = the catalog's prefilter literals), after warming
the page cache. It reports medians, the ratios tool/rg and tool/grep, the tool's CPU time and
peak memory (the largest process, from ``wait4``; the whole process tree's summed RSS and
summed PSS, sampled every 10 ms in a second, untimed run of the same command: summed RSS
counts the pages a forked worker shares with the parent twice, PSS once), the start-up time
(``--version``, ``--help``, a 15 KB job), and checks that every verdict is ``cuda_oom`` on the
rank the generator made run out of memory. A wrong verdict exits 1. Targets (issue 16,
reported, not asserted): realistic <= 2x rg, dense <= 3x rg, peak RSS <= 300 MB (the largest
process, and the tree's PSS), a small job <= 0.3 s.

Every Python command runs with its modules' bytecode cached (``PYTHONPYCACHEPREFIX`` under
the data directory, ``PYTHONDONTWRITEBYTECODE`` unset), as an installed wheel has it.
``--stages`` also times each stage of one diagnosis per job in one process
(``stages.py``), the fixed part (everything but reading) against rg.
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
RANK_INFO_GB = 256 / (1 << 20)
"""Bytes per rank of the nccl-info profile (256 KB: its NCCL start-up and training)."""
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
    tree_pss_mb: float = 0.0
    """The process tree's summed PSS: shared pages (the worker's forked copy of the parent's
    imports and catalog) counted once, split among the processes that share them."""


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


def _tree_memory_kb(pid: int) -> tuple[int, int]:
    """Summed VmRSS (shared pages counted in each process) and summed PSS (shared pages
    counted once) of ``pid`` and its descendants, in KB."""
    rss = pss = 0
    stack = [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/status", "rb") as fh:
                for line in fh:
                    if line.startswith(b"VmRSS:"):
                        rss += int(line.split()[1])
                        break
            with open(f"/proc/{p}/smaps_rollup", "rb") as fh:
                for line in fh:
                    if line.startswith(b"Pss:"):
                        pss += int(line.split()[1])
                        break
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children", "rb") as fh:
                    stack.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return rss, pss


def timed(cmd: list[str], sample: bool = True, env: dict[str, str] | None = None) -> Run:
    """Run ``cmd`` (with ``env`` added to the environment); wall time, CPU time and memory of
    it and everything it starts."""
    t0 = time.perf_counter()
    full = {**os.environ, **env} if env else None
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=full)
    peak = [0, 0]
    done = threading.Event()

    def sampler() -> None:
        while not done.wait(0.01):
            rss, pss = _tree_memory_kb(proc.pid)
            peak[0], peak[1] = max(peak[0], rss), max(peak[1], pss)

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
        peak[1] / 1024,
    )


def measured(cmd: list[str], env: dict[str, str] | None = None) -> Run:
    """One timed run of ``cmd`` with nothing else running (its wall and CPU time, and the
    largest process's peak RSS from ``wait4``), then one more run sampled for the process
    tree's memory. Sampling reads ``/proc/PID/smaps_rollup`` every 10 ms, which walks the
    tool's page tables: on two cores it added about 0.2 s to the dense job's 2.8 s, so it
    never runs beside a timed run. A failure of either run is the run's exit status."""
    r = timed(cmd, sample=False, env=env)
    m = timed(cmd, sample=True, env=env)
    r.tree_rss_mb, r.tree_pss_mb = m.tree_rss_mb, m.tree_pss_mb
    r.maxrss_mb = max(r.maxrss_mb, m.maxrss_mb)
    r.rc = r.rc or m.rc
    return r


def tool_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("mcore-diagnose")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "analyzer"]


def load_needles(path: Path) -> int:
    sys.path.insert(0, str(ROOT))
    from analyzer.catalog.load import load_catalog

    needles = load_catalog().needles
    path.write_text("".join(n + "\n" for n in needles), encoding="utf-8")
    return len(needles)


def ensure_job(
    data: Path,
    size: float,
    nodes: int,
    gpus: int,
    seed: int,
    dense: bool = False,
    nccl_info: bool = False,
) -> Path:
    """The generated job directory for these parameters (generated when missing or stale)."""
    kind = ("-dense" if dense else "") + ("-ncclinfo" if nccl_info else "")
    out = data / f"job-{size:g}g-{nodes}x{gpus}-s{seed}{kind}"
    meta = out / "generator.json"
    want = {
        "size_gb": size,
        "nodes": nodes,
        "gpus_per_node": gpus,
        "seed": seed,
        "dense": dense,
        "nccl_info": nccl_info,
    }
    stamp = _generator_stamp()
    if meta.exists():
        have = json.loads(meta.read_text())
        if all(have.get(k) == v for k, v in want.items()) and have.get("gen") == stamp:
            return out
    print(f"generating {out} ({size:g} GB) ...", file=sys.stderr, flush=True)
    t = time.perf_counter()
    spec = generate.Spec(str(out), size, nodes, gpus, seed, dense=dense, nccl_info=nccl_info)
    generate.generate(spec)
    m = json.loads(meta.read_text())
    m["gen"] = stamp
    meta.write_text(json.dumps(m, indent=2) + "\n")
    print(f"  {m['bytes'] / 1e6:.0f} MB in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    return out


def _generator_stamp() -> str:
    """Hash of the generator's sources (a job generated by other code is generated again)."""
    h = hashlib.sha1()
    for name in ("generate.py", "ncclinfo.py"):
        h.update((HERE / name).read_bytes())
    return h.hexdigest()[:12]


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


def installed_bytecode(data: Path) -> None:
    """Run every Python command here with its modules' bytecode cached, as an installed wheel
    has it (pip compiles it at install): under ``PYTHONDONTWRITEBYTECODE`` (set on some
    machines) each run would compile the tool's modules from source again, about 0.2 s. The
    cache goes under ``data`` (``PYTHONPYCACHEPREFIX``), never into the checkout; the
    untimed warm-up run of each command fills it."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str((data / "pycache").resolve())


def stages(job: Path, baseline: Path | None = None) -> dict[str, float]:
    """Wall seconds of each stage of one diagnosis of ``job`` (``stages.py``), after an
    untimed run; with ``baseline``, of that checkout's code."""
    cmd = [sys.executable, "-P", str(HERE / "stages.py"), str(job), "--json"]
    env = {**os.environ, "PYTHONPATH": str((baseline or ROOT).resolve())}
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def fmt_stages(rows: list[tuple[str, dict[str, float], float | None]]) -> str:
    """A table of :func:`stages` per job, with rg's median wall time beside the fixed part."""
    names = ["interpreter", "imports", "catalog", "discovery", "reading", "attribution"]
    names += ["records", "facts", "decision", "report", "fixed"]
    lines = ["| job | " + " | ".join(names) + " | rg | fixed/rg |", "|" + "---|" * (len(names) + 3)]
    for label, st, rg in rows:
        cells = " | ".join(f"{st[n]:.3f}" for n in names)
        tail = f"{rg:.3f} | {st['fixed'] / rg:.2f}" if rg else "- | -"
        lines.append(f"| {label} | {cells} | {tail} |")
    return "\n".join(lines)


AC_ENV = {"MCORE_DIAGNOSE_PREFILTER": "ahocorasick"}
"""The tool's non-Hyperscan path (``read/prefilter.py``: ahocorasick_rs, no stamp sieve)."""


def bench_dir(
    job: Path,
    needles: Path,
    runs: int,
    others: bool,
    ac: bool = False,
    baseline: Path | None = None,
) -> tuple[dict[str, Row], bool]:
    rows = {"tool": Row("mcore-diagnose")}
    cmds = {"tool": [*tool_cmd(), str(job), "--format", "json"]}
    envs: dict[str, dict[str, str] | None] = {"tool": None}
    if ac:
        rows["tool-ac"] = Row("mcore-diagnose (ahocorasick_rs)")
        cmds["tool-ac"] = cmds["tool"]
        envs["tool-ac"] = AC_ENV
    if baseline is not None:  # another checkout's code, same interpreter and libraries
        rows["tool-base"] = Row(f"mcore-diagnose ({baseline})")
        # -P: no working directory in front of PYTHONPATH (run from this checkout's root,
        # ``-m analyzer`` imported this checkout's code, and "baseline" timed the same code)
        cmds["tool-base"] = [sys.executable, "-P", "-m", "analyzer", str(job), "--format", "json"]
        envs["tool-base"] = {"PYTHONPATH": str(baseline.resolve())}
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
        timed(cmds[name], sample=False, env=envs.get(name))
    ok = True
    names = list(cmds)
    for i in range(runs):
        order = names[i % len(names) :] + names[: i % len(names)]
        for name in order:
            tool = name.startswith("tool")
            r = measured(cmds[name], envs.get(name)) if tool else timed(cmds[name], sample=False)
            rows[name].runs.append(r)
            if tool:
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

    from analyzer.catalog.load import load_catalog
    from analyzer.read.prefilter import Prefilter

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


# -- triage: a night of many small failed jobs -----------------------------------------------

TRIAGE_SIZES = (100, 300, 1000)
"""Jobs per triage run (``--triage-jobs``); each size's root holds the smaller ones."""
TRIAGE_FAILURES = (("cuda_oom", 3), ("python_exception", 2), ("cuda_error", 1))
"""Failure kinds of the night's jobs (``generate.FAILURES``) and their weights."""
TRIAGE_NODES = ((1, 2), (2, 2), (4, 1))
"""Nodes per job (8 GPUs each) and their weights."""
TRIAGE_CLUSTER = 64
"""Nodes of the cluster the jobs run on (a node fails several jobs: node implication)."""
TRIAGE_RANK_KB = (8, 24)
"""Bytes per rank (stdout + stderr), KB, drawn per job; the SLURM output adds 64 KB."""
TRIAGE_LAYOUT = 1
"""Bump when the triage layout or job mix changes (regenerates ``bench-data/triage-*``)."""


def triage_specs(base: Path, sizes: list[int], seed: int) -> list[generate.Spec]:
    """The night's jobs, deterministic for ``seed``: job ``i`` lies in the root of the
    smallest size above ``i``, and each size's root holds the next smaller one, so that
    ``triage ROOT`` of size N finds exactly the first N jobs (one root, as a night's logs)."""
    sizes = sorted(set(sizes))
    roots = triage_roots(base, sizes)
    kinds = [k for k, _ in TRIAGE_FAILURES]
    kind_w = [w for _, w in TRIAGE_FAILURES]
    specs = []
    for i in range(sizes[-1]):
        rnd = generate.random.Random(seed * 1_000_003 + i)
        nodes = rnd.choices([n for n, _ in TRIAGE_NODES], [w for _, w in TRIAGE_NODES])[0]
        world = nodes * 8
        kb = rnd.randint(*TRIAGE_RANK_KB)
        root = roots[next(n for n in sizes if i < n)]
        specs.append(
            generate.Spec(
                str(root / f"job-{i:04d}"),
                size_gb=(64 + world * kb) / (1 << 20),
                nodes=nodes,
                gpus_per_node=8,
                seed=seed * 100_003 + i,
                oom_rank=rnd.randrange(world),
                failure=rnd.choices(kinds, kind_w)[0],
                job_id=810_000 + 7 * i,
                first_node=rnd.randrange(TRIAGE_CLUSTER - nodes + 1),
            )
        )
    return specs


def triage_roots(base: Path, sizes: list[int]) -> dict[int, Path]:
    """``base/n1000``, ``base/n1000/n300``, ``base/n1000/n300/n100`` for sizes 100, 300, 1000."""
    roots: dict[int, Path] = {}
    here = base
    for n in sorted(set(sizes), reverse=True):
        here = here / f"n{n}"
        roots[n] = here
    return roots


def _generate_one(spec: generate.Spec) -> int:
    generate.generate(spec, workers=1)
    return 1


def ensure_triage(data: Path, sizes: list[int], seed: int) -> tuple[Path, dict[int, Path]]:
    """The night's job directories for these sizes (generated when missing or stale):
    (base, root per size)."""
    sizes = sorted(set(sizes))
    base = data / f"triage-s{seed}"
    meta = base / "triage.json"
    stamp = _generator_stamp()
    want = {"sizes": sizes, "seed": seed, "layout": TRIAGE_LAYOUT, "gen": stamp}
    roots = triage_roots(base, sizes)
    if meta.exists() and json.loads(meta.read_text()) == want:
        return base, roots
    if base.exists():
        shutil.rmtree(base)
    print(f"generating {sizes[-1]} triage jobs under {base} ...", file=sys.stderr, flush=True)
    t = time.perf_counter()
    specs = triage_specs(base, sizes, seed)
    workers = len(os.sched_getaffinity(0))
    if workers > 1 and len(specs) > 8:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as pool:
            list(pool.map(_generate_one, specs, chunksize=16))
    else:
        for spec in specs:
            _generate_one(spec)
    meta.write_text(json.dumps(want, indent=2) + "\n")
    nbytes = sum(json.loads((Path(s.out) / "generator.json").read_text())["bytes"] for s in specs)
    print(f"  {nbytes / 1e6:.0f} MB in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    return base, roots


def triage_cmd(root: Path, out: Path) -> list[str]:
    """The timed triage command: the table as JSON and the Markdown summary, both outside the
    jobs' directories."""
    return [
        *tool_cmd(),
        "triage",
        str(root),
        "-o",
        str(out / "table.json"),
        "--summary",
        str(out / "summary.md"),
        "-q",
    ]


def expected_jobs(root: Path) -> dict[str, tuple[str, int]]:
    """(category, rank) the generator made each job below ``root`` fail with, by job path."""
    want = {}
    for meta in root.rglob("generator.json"):
        m = json.loads(meta.read_text())
        want[str(meta.parent.resolve())] = (generate.FAILURES[m["failure"]][0], m["oom_rank"])
    return want


def _summary_counts(text: str) -> dict[str, int]:
    """Jobs per category in the Markdown summary's "Causes by count" table."""
    counts: dict[str, int] = {}
    section = text.split("## Causes by count", 1)[-1].split("\n## ", 1)[0]
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            cat = cells[1].replace("\\", "")
            counts[cat] = counts.get(cat, 0) + int(cells[0])
    return counts


def check_triage(run: Run, root: Path, out: Path) -> tuple[bool, str]:
    """Every job of ``root`` has a row, each row is ``failed`` with the category and rank the
    generator chose, and the summary counts the same jobs per category."""
    if run.rc != 0:
        return False, f"exit code {run.rc}"
    want = expected_jobs(root)
    try:
        rows = json.loads((out / "table.json").read_text())
        summary = (out / "summary.md").read_text()
    except (OSError, ValueError) as exc:
        return False, f"no table or summary ({exc})"
    if isinstance(rows, dict):
        rows = rows.get("rows", rows.get("jobs", []))
    got = {str(Path(r["path"]).resolve()): r for r in rows}
    problems = []
    if set(got) != set(want):
        problems.append(f"{len(got)} rows for {len(want)} jobs")
    for path, (cat, rank) in sorted(want.items()):
        r = got.get(path)
        if r is None:
            continue
        if (r.get("status"), r.get("category"), r.get("rank")) != ("failed", cat, rank):
            problems.append(
                f"{Path(path).name}: {r.get('status')} {r.get('category')} on rank "
                f"{r.get('rank')}, want failed {cat} on rank {rank}"
                + (f" ({r['note']})" if r.get("note") else "")
            )
    counts: dict[str, int] = {}
    for cat, _ in want.values():
        counts[cat] = counts.get(cat, 0) + 1
    if _summary_counts(summary) != counts:
        problems.append(f"summary counts {_summary_counts(summary)}, want {counts}")
    if problems:
        return False, "; ".join(problems[:5]) + (" ..." if len(problems) > 5 else "")
    return True, ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


TriageResult = tuple[int, int, int, dict[str, Row], bool, str]
"""(jobs, bytes, files, rows, check ok, what the check found) of one triage size."""


def bench_triage(
    roots: dict[int, Path], out: Path, needles: Path, runs: int, others: bool
) -> list[TriageResult]:
    """Time ``mcore-diagnose triage`` over each root, with rg and grep over the same
    directories, in rotating order; check every run's table and summary."""
    out.mkdir(parents=True, exist_ok=True)
    others_cmds: dict[str, list[str]] = {}
    if others:
        for name, cmd in (
            ("rg", ["rg", "-F", "-f", str(needles), "-c"]),
            ("grep", ["grep", "-rF", "-f", str(needles), "-c"]),
        ):
            if shutil.which(cmd[0]):
                others_cmds[name] = cmd
            else:
                print(f"  {cmd[0]} not installed: skipped", file=sys.stderr)
    results: list[TriageResult] = []
    first = True
    for n, root in sorted(roots.items()):
        nbytes = warm(root)
        files = sum(1 for p in root.rglob("*.log")) + sum(1 for p in root.rglob("slurm-*.out"))
        print(
            f"triage: {root}: {n} jobs, {nbytes / 1e6:.0f} MB, {runs} run(s)",
            file=sys.stderr,
            flush=True,
        )
        cmds = {"tool": triage_cmd(root, out)}
        cmds.update({k: [*c, str(root)] for k, c in others_cmds.items()})
        rows = {k: Row("mcore-diagnose triage" if k == "tool" else k) for k in cmds}
        if first:  # untimed warm-up (imports, compiled regexes on disk), smallest size only
            for cmd in cmds.values():
                timed(cmd, sample=False)
            first = False
        ok, what = True, ""
        names = list(cmds)
        for i in range(runs):
            order = names[i % len(names) :] + names[: i % len(names)]
            for name in order:
                r = measured(cmds[name]) if name == "tool" else timed(cmds[name], sample=False)
                rows[name].runs.append(r)
                if name == "tool":
                    good, what = check_triage(r, root, out)
                    ok &= good
                    if not good:
                        print(f"  WRONG TRIAGE: {what}", file=sys.stderr)
            print(
                f"  run {i + 1}/{runs}: "
                + ", ".join(f"{k} {rows[k].runs[-1].wall:.2f}s" for k in names),
                file=sys.stderr,
                flush=True,
            )
        results.append((n, nbytes, files, rows, ok, what))
    return results


def fmt_triage(results: list[TriageResult]) -> str:
    head = (
        "| jobs | size | files | mcore-diagnose triage | jobs/s | CPU per job | rg | grep | "
        "tool/rg | tool/grep | peak RSS (largest process) | peak RSS (process tree) | "
        "peak PSS (process tree) | check |"
    )
    lines = [head, "|" + "---|" * 14]
    for n, nbytes, files, rows, ok, what in results:
        t, rg, gr = rows["tool"], rows.get("rg"), rows.get("grep")

        def wall(row: Row | None) -> str:
            return f"{row.med('wall'):.2f} s (CPU {row.med('cpu'):.2f} s)" if row else "-"

        def ratio(other: Row | None, t: Row = t) -> str:
            return f"{t.med('wall') / other.med('wall'):.1f}" if other else "-"

        lines.append(
            f"| {n} | {nbytes / 1e6:.0f} MB | {files} | {wall(t)} | {n / t.med('wall'):.1f} | "
            f"{1000 * t.med('cpu') / n:.0f} ms | {wall(rg)} | {wall(gr)} | {ratio(rg)} | "
            f"{ratio(gr)} | {t.peak('maxrss_mb'):.0f} MB | {t.peak('tree_rss_mb'):.0f} MB | "
            f"{t.peak('tree_pss_mb'):.0f} MB | {('ok: ' if ok else 'WRONG: ') + what} |"
        )
    if len(results) > 1:
        lines.append("")
        lines.append("growth (marginal cost of the extra jobs; flat jobs/s = linear):")
        for (n0, _b0, _f0, r0, _o0, _w0), (n1, _b1, _f1, r1, _o1, _w1) in itertools.pairwise(
            results
        ):
            dt = r1["tool"].med("wall") - r0["tool"].med("wall")
            dc = r1["tool"].med("cpu") - r0["tool"].med("cpu")
            lines.append(
                f"  {n0} -> {n1} jobs: +{dt:.2f} s for {n1 - n0} jobs = "
                f"{(n1 - n0) / dt if dt > 0 else float('inf'):.1f} jobs/s marginal, "
                f"{1000 * dc / (n1 - n0):.0f} ms CPU per extra job; peak tree RSS "
                f"{r0['tool'].peak('tree_rss_mb'):.0f} -> {r1['tool'].peak('tree_rss_mb'):.0f} MB"
            )
    return "\n".join(lines)


Result = tuple[str, int, dict[str, Row], bool]
"""(profile, bytes, rows, verdict ok) of one job directory."""


def fmt_table(results: list[Result]) -> str:
    head = (
        "| profile | size | files | mcore-diagnose | rg | grep | tool/rg | tool/grep | "
        "peak RSS (largest process) | peak RSS (process tree) | peak PSS (process tree) | "
        "verdict |"
    )
    lines = [head, "|" + "---|" * 12]
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
            f"{t.peak('tree_rss_mb'):.0f} MB | {t.peak('tree_pss_mb'):.0f} MB | "
            f"{'ok' if ok else 'WRONG'} |"
        )
        for key, what in (("tool-ac", "ahocorasick_rs"), ("tool-base", "baseline")):
            a = rows.get(key)
            if a is None:
                continue
            lines.append(
                f"| {label}, {what} | {nbytes / 1e9:.2f} GB | {t.files} | {wall(a)} | "
                f"{wall(rg)} | {wall(gr)} | {ratio(rg, a)} | {ratio(gr, a)} | "
                f"{a.peak('maxrss_mb'):.0f} MB | {a.peak('tree_rss_mb'):.0f} MB | "
                f"{a.peak('tree_pss_mb'):.0f} MB | {'ok' if ok else 'WRONG'} |"
            )
    return "\n".join(lines)


PROFILES = ("realistic", "dense", "many-files", "nccl-info", "triage")
"""realistic: Megatron prints iteration lines on the last rank only (``--size-gb``);
dense: every rank prints its iteration/loss line every step (``--dense-gb``); many-files:
8,192 ranks x 2 small files (``--many-files-gb``, ``--many-files-nodes`` x 8); nccl-info:
NCCL_DEBUG=INFO start-up of 24 communicators per rank (``ncclinfo.py``), 256 KB per rank, at
each of ``--nccl-info-nodes`` x 8 ranks (default 1,024 and 8,192); triage:
``mcore-diagnose triage`` over a night of small failed jobs (``--triage-jobs``)."""


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
    ap.add_argument(
        "--nccl-info-nodes",
        default="128,1024",
        help="nccl-info profile: nodes (x 8 ranks) of each job, default 128,1024",
    )
    ap.add_argument(
        "--ahocorasick",
        action="store_true",
        help="also time the tool with the ahocorasick_rs prefilter (its non-Hyperscan path)",
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        help="also time another checkout's code (its root: PYTHONPATH=ROOT python -m analyzer)",
    )
    ap.add_argument(
        "--triage-jobs",
        default=",".join(map(str, TRIAGE_SIZES)),
        help="triage profile: jobs per run, e.g. 100,300,1000 (default)",
    )
    ap.add_argument("--runs", type=int, default=5, help="timed runs per command (default 5)")
    ap.add_argument(
        "--triage-runs",
        type=int,
        help="timed runs of the triage profile (default: --runs, at most 2; one run of the "
        "three sizes takes 1-2 minutes on 2 cores)",
    )
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
        "--stages",
        action="store_true",
        help="also time each stage of one diagnosis per job, in one process (stages.py): the "
        "fixed part (everything but reading) against rg",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="CI mode: a ~20 MB job on 16 nodes, one run, verdict check, no timing claims",
    )
    a = ap.parse_args(argv)
    gpus = a.gpus_per_node
    jobs: list[tuple[str, float, int, bool, bool]] = []  # label, size, nodes, dense, info
    if a.quick:
        runs = 1
        jobs = [
            ("realistic", 0.02, 16, False, False),
            ("dense", 0.01, 16, True, False),
            ("nccl-info 128 ranks", 128 * RANK_INFO_GB, 16, False, True),
        ]
        wanted = ["triage"]
        triage_sizes = [3, 6]
    else:
        runs = a.runs
        wanted = [p.strip() for p in a.profiles.split(",") if p.strip()]
        for p in wanted:
            if p not in PROFILES:
                ap.error(f"unknown profile {p!r}; choose from {', '.join(PROFILES)}")
        if "realistic" in wanted:
            sizes = [float(x) for x in a.sizes.split(",")] if a.sizes else [a.size_gb]
            jobs += [("realistic", size, a.nodes, False, False) for size in sizes]
        if "dense" in wanted:
            jobs.append(("dense", a.dense_gb, a.nodes, True, False))
        if "many-files" in wanted:
            jobs.append(("many-files", a.many_files_gb, a.many_files_nodes, False, False))
        if "nccl-info" in wanted:
            for nodes in (int(x) for x in a.nccl_info_nodes.split(",") if x.strip()):
                size = nodes * gpus * RANK_INFO_GB
                jobs.append((f"nccl-info {nodes * gpus:,} ranks", size, nodes, False, True))
        try:
            triage_sizes = sorted({int(x) for x in a.triage_jobs.split(",") if x.strip()})
        except ValueError:
            ap.error(f"--triage-jobs {a.triage_jobs!r}: comma-separated job counts, e.g. 100,300")
        if not triage_sizes or triage_sizes[0] < 1:
            ap.error("--triage-jobs: at least one positive job count")
    a.data.mkdir(parents=True, exist_ok=True)
    installed_bytecode(a.data)
    needles = a.data / "needles.txt"
    n = load_needles(needles)
    print(f"catalog: {n} needles -> {needles}", file=sys.stderr)
    results: list[Result] = []
    staged: list[tuple[str, dict[str, float], float | None]] = []
    all_ok = True
    for label, size, nodes, dense, info in jobs:
        job = ensure_job(a.data, size, nodes, gpus, a.seed, dense, info)
        nbytes = warm(job)
        print(f"{label}: {job}: {nbytes / 1e6:.0f} MB, {runs} run(s)", file=sys.stderr, flush=True)
        rows, ok = bench_dir(job, needles, runs, not a.no_others, a.ahocorasick, a.baseline)
        rows["tool"].files = sum(1 for p in job.rglob("*") if p.is_file()) - 1
        all_ok &= ok
        results.append((label, nbytes, rows, ok))
        if a.stages:
            rg = rows["rg"].med("wall") if "rg" in rows else None
            staged.append((label, stages(job), rg))
            if a.baseline is not None:
                staged.append((f"{label}, baseline", stages(job, a.baseline), rg))
    triage: list[TriageResult] = []
    if "triage" in wanted:
        _base, roots = ensure_triage(a.data, triage_sizes, a.seed)
        t_runs = a.triage_runs or min(runs, 2)
        triage = bench_triage(roots, a.data / "triage-out", needles, t_runs, not a.no_others)
        all_ok &= all(t[4] for t in triage)
    su = startup(3 if a.quick else 10)
    if a.engines and jobs:
        print()
        last = jobs[-1]
        print(f"prefilter engines, one core, {n} needles, {results[-1][1] / 1e6:.0f} MB job:")
        last_job = ensure_job(a.data, last[1], last[2], gpus, a.seed, last[3], last[4])
        for name, mbs, hits in engines(last_job):
            print(f"  {name:48s} {mbs:8.0f} MB/s  ({hits} hits)")
    if results:
        print()
        print(f"mcore-diagnose vs rg/grep, {os.cpu_count()} CPUs, medians of {runs} run(s)")
        print(fmt_table(results))
    if staged:
        print()
        print("stages of one diagnosis, wall seconds, one process (reading with its workers):")
        print(fmt_stages(staged))
    if triage:
        print()
        kinds = ", ".join(k for k, _ in TRIAGE_FAILURES)
        print(
            f"triage of a night's small failed jobs ({kinds}), {os.cpu_count()} CPUs, "
            f"medians of {len(triage[0][3]['tool'].runs)} run(s)"
        )
        print(fmt_triage(triage))
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
                    "stages": [{"job": lb, **st, "rg_s": rg} for lb, st, rg in staged],
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
                                    "tree_pss_mb": [r.tree_pss_mb for r in row.runs],
                                }
                                for k, row in rows.items()
                            },
                        }
                        for label, nbytes, rows, ok in results
                    ],
                    "triage": [
                        {
                            "jobs": n,
                            "bytes": nbytes,
                            "files": files,
                            "ok": ok,
                            "check": what,
                            **{
                                k: {
                                    "wall_s": [r.wall for r in row.runs],
                                    "cpu_s": [r.cpu for r in row.runs],
                                    "maxrss_mb": [r.maxrss_mb for r in row.runs],
                                    "tree_rss_mb": [r.tree_rss_mb for r in row.runs],
                                    "tree_pss_mb": [r.tree_pss_mb for r in row.runs],
                                }
                                for k, row in rows.items()
                            },
                        }
                        for n, nbytes, files, rows, ok, what in triage
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
            target = 2.0 if label == "realistic" or label.startswith("nccl-info") else RATIO_TARGET
            if rg and t.med("wall") > target * rg.med("wall"):
                notes.append(f"{label}: tool/rg {t.med('wall') / rg.med('wall'):.2f} > {target}")
            # Memory: the largest process's RSS, and the tree's PSS (the worker's RSS repeats
            # the parent's imports and catalog it shares; summed RSS counts them twice).
            for what, attr in (("peak RSS", "maxrss_mb"), ("peak tree PSS", "tree_pss_mb")):
                if t.peak(attr) > RSS_TARGET_MB:
                    notes.append(f"{label}: {what} {t.peak(attr):.0f} MB > {RSS_TARGET_MB}")
        if notes:
            print("\nabove target (not an error): " + "; ".join(notes))
    checked = "cuda_oom on the OOM rank" if results else ""
    if triage:
        checked += ("; " if checked else "") + "triage: every job's category and rank"
    print("\nverdict: " + (f"ok ({checked})" if all_ok else "WRONG"))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())

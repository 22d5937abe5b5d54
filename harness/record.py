"""Run the scenarios on the private cluster and record their logs.

    python -m harness.record --out sample_logs/real                 # all scenarios
    python -m harness.record --scenario exception-cascade --out DIR  # some of them
    python -m harness.record --list

Each scenario's job directory (the generated ``train.sbatch`` and every log file the job
wrote) is copied to ``<out>/<scenario>/`` with machine paths replaced by neutral ones (see
:func:`neutral_replacements`) and the host name replaced by ``node001``; nothing else is
edited. An ``expected.toml`` describes the fault.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import pickle
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.cluster import Cluster, ClusterUnavailable, free_port, local_cluster
from harness.scenarios import BY_NAME, SCENARIOS, LaunchContext, Scenario, render_sbatch

REPO = Path(__file__).resolve().parent.parent
NEUTRAL_HOST = "node001"
NEUTRAL_REPO = "/shared/mcore-diagnose"
NEUTRAL_JOBS = "/shared/jobs"
NEUTRAL_VENV = "/opt/venv"
NEUTRAL_BASE_PYTHON = "/usr/local"
NEUTRAL_BARE_PYTHON = "/usr"
NEUTRAL_TMP = "/local/scratch"
NEUTRAL_SLURM_STATE = "/var/spool/slurm"
NEUTRAL_UV_PROJECT = "/shared/uv-project"
# the uv_run scenarios' project: one small pure-Python dependency, no .venv, no uv.lock
UV_PYPROJECT = """[project]
name = "uv-job"
version = "0.1.0"
requires-python = ">=3.10"
dependencies = ["six"]
"""
SCRIPT_NAME = "train.sbatch"
# paths that must never survive neutralisation
# (/tmp/harness/train.py is no machine path: it is slurmstepd's fixed fallback directory joined
# with the script's relative path, the evidence of the worktree-not-shared scenario)
FORBIDDEN_PATH_RE = re.compile(r"(?<![\w.])/(?:work|root)/|(?<![\w.])/tmp/(?!harness/train\.py)")
SYSTEM_PREFIXES = ("/usr", "/usr/local", "/opt/conda", "/")
# the job inherits the submitting environment (sbatch --export=ALL): keep it plain
JOB_ENV_UNSET = (
    "MCORE_FAULT",
    "MCORE_FAULT_RANK",
    "MCORE_FAULT_ITER",
    "MCORE_PG_TIMEOUT",
    "LOGLEVEL",
    "TORCH_CPP_LOG_LEVEL",
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "SLURM_JOB_ID",
    "SLURM_JOBID",
)


@dataclass
class RunResult:
    scenario: Scenario
    job_id: int
    state: str
    exit_code: str
    job_dir: Path
    seconds: float


@dataclass
class Recorder:
    """Runs scenarios on ``cluster``; job dirs live under ``work``."""

    cluster: Cluster
    work: Path
    python: Path = Path(sys.executable)
    repo: Path = REPO

    def __post_init__(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        self._bare: Path | None = None

    # -- environment pieces ------------------------------------------------------------
    def bare_python(self) -> Path:
        """A python3 that cannot import torch (a venv without system site-packages)."""
        if self._bare is None:
            venv = self.work / "bare-python"
            if not (venv / "bin" / "python3").exists():
                base = getattr(sys, "_base_executable", sys.executable)
                subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
            probe = subprocess.run(
                [str(venv / "bin" / "python3"), "-c", "import torch"],
                capture_output=True,
                check=False,
            )
            if probe.returncode == 0:
                raise RuntimeError(f"{venv} can import torch; cannot build the bare scenario")
            self._bare = venv / "bin" / "python3"
        return self._bare

    def replacements(self, sc: Scenario, job_dir: Path) -> list[tuple[str, str]]:
        return neutral_replacements(
            job_dir=job_dir,
            scenario=sc.name,
            repo=self.repo,
            tmp_dir=self.tmp_dir(sc),
            bare_venv=self._bare.parent.parent if self._bare else None,
            slurm_state=self.cluster.state_dir,
            uv_project=self.uv_project(sc) if sc.uv_run else None,
        )

    def tmp_dir(self, sc: Scenario) -> Path:
        return self.work / "tmp" / sc.name

    def uv_project(self, sc: Scenario) -> Path:
        return self.work / "uv-project" / sc.name

    def fresh_uv_project(self, sc: Scenario) -> Path:
        """A tiny uv project without its .venv (uv_run scenarios build it inside the job)."""
        project = self.uv_project(sc)
        if project.exists():
            shutil.rmtree(project)
        project.mkdir(parents=True)
        (project / "pyproject.toml").write_text(UV_PYPROJECT)
        return project

    # -- running -----------------------------------------------------------------------
    def run(self, sc: Scenario) -> RunResult:
        job_dir = self.work / "jobs" / sc.name
        if job_dir.exists():
            shutil.rmtree(job_dir)
        job_dir.mkdir(parents=True)
        tmp = self.tmp_dir(sc)
        tmp.mkdir(parents=True, exist_ok=True)
        port = _free_port_pair() if sc.port_offset_per_node else free_port()
        ctx = LaunchContext(
            repo=self.repo,
            python=self.python,
            bare_python=self.bare_python() if sc.bare_python_node is not None else None,
            master_port=port,
            uv=find_uv(self.repo) if sc.uv_run else None,
            uv_project=self.fresh_uv_project(sc) if sc.uv_run else None,
        )
        script = job_dir / SCRIPT_NAME
        script.write_text(render_sbatch(sc, ctx))
        env = {"TMPDIR": str(tmp), "PYTHONDONTWRITEBYTECODE": "1"}
        start = time.monotonic()
        with _hold_port(port) if sc.hold_master_port else contextlib.nullcontext():
            job_id = self.cluster.sbatch(script, cwd=job_dir, env=env, unset=JOB_ENV_UNSET)
            if sc.cancel_after:
                self._cancel_when(job_id, job_dir, sc)
            try:
                state = self.cluster.wait_job(job_id, timeout=sc.max_seconds)
            except TimeoutError:
                self.cluster.scancel(job_id)
                state = self.cluster.wait_job(job_id, timeout=30)
                state = f"HARNESS_TIMEOUT({state})"
        exit_code = self.cluster.job_exit_code(job_id)
        # give slurmstepd a moment to flush the last lines into the output files
        time.sleep(1.0)
        return RunResult(sc, job_id, state, exit_code, job_dir, time.monotonic() - start)

    def _cancel_when(self, job_id: int, job_dir: Path, sc: Scenario) -> None:
        assert sc.cancel_after is not None
        pattern = re.compile(sc.cancel_after)
        deadline = time.monotonic() + sc.max_seconds
        while time.monotonic() < deadline:
            for path in job_dir.rglob("*"):
                if path.is_file() and pattern.search(path.read_text(errors="replace")):
                    self.cluster.scancel(job_id)
                    return
            if self.cluster.job_state(job_id) in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"):
                return
            time.sleep(0.5)

    def record(self, result: RunResult, out: Path) -> Path:
        """Copy the neutralised job dir to ``out/<scenario>`` and write expected.toml."""
        sc = result.scenario
        dest = out / sc.name
        if dest.exists():
            shutil.rmtree(dest)
        copy_neutralised(
            result.job_dir, dest, self.replacements(sc, result.job_dir), hostnames=host_names()
        )
        (dest / "expected.toml").write_text(expected_toml(sc, result))
        if sc.flight_recorder and (dest / "fr").is_dir():
            from harness.frtrace import describe

            (dest / "TORCHFRTRACE.md").write_text(describe(dest))
        return dest


def find_uv(repo: Path) -> Path:
    """The project venv's ``uv`` (``.venv/bin/uv``), else the one on PATH."""
    local = repo / ".venv" / "bin" / "uv"
    if local.exists():
        return local
    found = shutil.which("uv")
    if found is None:
        raise RuntimeError("the uv scenarios need uv: pip install uv (or put it on PATH)")
    return Path(found)


def _free_port_pair() -> int:
    for _ in range(100):
        port = free_port()
        if port < 65535:
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            return port
    raise RuntimeError("no pair of free ports")


@contextlib.contextmanager
def _hold_port(port: int) -> Iterator[None]:
    """Something else already listens on the master port (a stale process, say): it accepts
    connections and drops them at once."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("0.0.0.0", port))
    sock.listen(64)
    sock.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except (TimeoutError, OSError):
                continue
            conn.close()

    thread = threading.Thread(target=serve, name=f"hold-port-{port}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=2)
        sock.close()


# ------------------------------------------------------------------------------------------
# neutralisation
# ------------------------------------------------------------------------------------------
def host_names() -> list[str]:
    short = socket.gethostname().split(".")[0]
    names = {socket.gethostname(), short}
    with contextlib.suppress(OSError):
        names.add(socket.getfqdn())
    out = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=False)
    if out.stdout.strip():
        names.add(out.stdout.strip())
    return sorted((n for n in names if n and n != "localhost"), key=len, reverse=True)


def _variants(path: Path) -> list[str]:
    vals = {str(path)}
    with contextlib.suppress(OSError):
        vals.add(str(path.resolve()))
    return [v for v in vals if v not in ("", "/")]


def neutral_replacements(
    job_dir: Path,
    scenario: str,
    repo: Path,
    tmp_dir: Path | None = None,
    bare_venv: Path | None = None,
    slurm_state: Path | None = None,
    uv_project: Path | None = None,
) -> list[tuple[str, str]]:
    """(machine path, neutral path) pairs, longest machine path first."""
    pairs: list[tuple[str, str]] = []
    for v in _variants(job_dir):
        pairs.append((v, f"{NEUTRAL_JOBS}/{scenario}"))
    if tmp_dir is not None:
        pairs += [(v, NEUTRAL_TMP) for v in _variants(tmp_dir)]
    if bare_venv is not None:
        pairs += [(v, NEUTRAL_BARE_PYTHON) for v in _variants(bare_venv)]
    if slurm_state is not None:
        pairs += [(v, NEUTRAL_SLURM_STATE) for v in _variants(slurm_state)]
    if uv_project is not None:
        pairs += [(v, NEUTRAL_UV_PROJECT) for v in _variants(uv_project)]
    pairs += [(v, NEUTRAL_REPO) for v in _variants(repo)]
    # a venv inside the checkout (uv's .venv) is covered by the repo replacement
    if sys.prefix not in SYSTEM_PREFIXES and not Path(sys.prefix).resolve().is_relative_to(
        repo.resolve()
    ):
        pairs += [(v, NEUTRAL_VENV) for v in _variants(Path(sys.prefix))]
    if sys.base_prefix not in SYSTEM_PREFIXES and sys.base_prefix != sys.prefix:
        pairs += [(v, NEUTRAL_BASE_PYTHON) for v in _variants(Path(sys.base_prefix))]
    pairs.sort(key=lambda p: len(p[0]), reverse=True)
    return pairs


def neutralise_text(
    text: str, replacements: Sequence[tuple[str, str]], hostnames: Sequence[str]
) -> str:
    for old, new in replacements:
        text = text.replace(old, new)
    for host in hostnames:
        text = re.sub(rf"(?<![\w.]){re.escape(host)}(?![\w-])", NEUTRAL_HOST, text)
    return text


def neutralise_pickle(
    data: bytes, replacements: Sequence[tuple[str, str]], hostnames: Sequence[str]
) -> bytes:
    """A Flight Recorder pickle with its strings neutralised, re-serialised (protocol 2, as
    torch writes it); any other binary file unchanged. The pickle is read with the analyzer's
    restricted loader, so nothing in it is run."""
    from analyzer.flightrec.load import DumpError, parse_dump

    if data[:1] != b"\x80":
        return data
    try:
        obj, fmt = parse_dump(data)
    except DumpError:
        return data
    if fmt != "pickle":
        return data

    def walk(o: object) -> object:
        if isinstance(o, str):
            return neutralise_text(o, replacements, hostnames)
        if isinstance(o, dict):
            return {walk(k): walk(v) for k, v in o.items()}
        if isinstance(o, list):
            return [walk(x) for x in o]
        if isinstance(o, tuple):
            return tuple(walk(x) for x in o)
        return o

    return pickle.dumps(walk(obj), protocol=2)


def copy_neutralised(
    src: Path, dest: Path, replacements: Sequence[tuple[str, str]], hostnames: Sequence[str]
) -> None:
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        target = dest / neutralise_text(str(rel), replacements, hostnames)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            target.write_bytes(neutralise_pickle(data, replacements, hostnames))
            continue
        target.write_text(neutralise_text(text, replacements, hostnames))


def leftover_machine_paths(root: Path) -> list[str]:
    """``file:line`` of every line that still names /work, /tmp or /root."""
    hits: list[str] = []
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if data[:1] == b"\x80":  # a pickle (Flight Recorder dump): its strings are bytes
            for m in re.finditer(rb"(?<![\w.])/(?:work|tmp|root)/[^\x00-\x1f]{0,60}", data):
                hits.append(f"{path.relative_to(root)}: {m[0].decode(errors='replace')}")
            continue
        with contextlib.suppress(UnicodeDecodeError):
            for no, line in enumerate(path.read_text().splitlines(), 1):
                if FORBIDDEN_PATH_RE.search(line):
                    hits.append(f"{path.relative_to(root)}:{no}: {line.strip()[:160]}")
    return hits


# ------------------------------------------------------------------------------------------
# expected.toml
# ------------------------------------------------------------------------------------------
def _toml_str(value: str) -> str:
    if "'" not in value and "\n" not in value:
        return f"'{value}'"
    return json.dumps(value)


def expected_toml(sc: Scenario, result: RunResult | None = None) -> str:
    lines = [
        'kind = "real"',
        f"category = {_toml_str(sc.category)}",
        f"rank = {sc.rank}",
        f"node = {_toml_str(sc.node)}",
        f"cause = {_toml_str(sc.cause)}",
        "must_contain = [",
        *[f"    {_toml_str(r)}," for r in sc.must_contain],
        "]",
        "",
        "# how the sample was produced (harness/scenarios.py)",
        f"scenario = {_toml_str(sc.name)}",
        f"description = {_toml_str(sc.description)}",
        f"layout = {_toml_str(sc.layout)}",
        f"slurm_state = {_toml_str(sc.expected_state)}",
    ]
    if result is not None:
        lines.append(f"job_id = {result.job_id}")
    if sc.flight_recorder:
        lines += [
            "# Flight Recorder dumps in fr/ (pickle; fr-json/: JSON); TORCHFRTRACE.md: what",
            "# torchfrtrace says; logs_only_rank: the culprit the logs alone name (-1: none)",
            "flight_recorder = true",
            f"logs_only_rank = {sc.logs_only_rank if sc.logs_only_rank is not None else -1}",
        ]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------------
def run_many(
    recorder: Recorder,
    scenarios: Sequence[Scenario],
    jobs: int = 1,
    on_done: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    """Run scenarios, ``jobs`` at a time (the longest first); ``light`` ones (mostly idle,
    e.g. the time-limit job) run in one extra slot next to the others."""
    light = [s for s in scenarios if s.light]
    heavy = sorted((s for s in scenarios if not s.light), key=lambda s: -s.max_seconds)
    if any(s.bare_python_node is not None for s in scenarios):
        recorder.bare_python()
    results: list[RunResult] = []
    side = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(jobs, 1))
    try:
        futures = [side.submit(recorder.run, sc) for sc in light]
        futures += [pool.submit(recorder.run, sc) for sc in heavy]
        for fut in concurrent.futures.as_completed(futures):
            res = fut.result()
            results.append(res)
            if on_done is not None:
                on_done(res)
    except BaseException:
        for ex in (pool, side):
            ex.shutdown(wait=False, cancel_futures=True)
        recorder.cluster.cancel_all(timeout=20)
        raise
    finally:
        for ex in (pool, side):
            ex.shutdown(wait=True, cancel_futures=True)
    order = {s.name: i for i, s in enumerate(scenarios)}
    return sorted(results, key=lambda r: order[r.scenario.name])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness.record",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--scenario",
        action="append",
        default=[],
        metavar="NAME",
        help="scenario to run (repeatable; default: all)",
    )
    parser.add_argument("--out", type=Path, default=REPO / "sample_logs" / "real")
    parser.add_argument(
        "--jobs", type=int, default=1, help="scenarios run at the same time (+1 for light ones)"
    )
    parser.add_argument(
        "--work",
        type=Path,
        default=None,
        help="where job dirs and the cluster state live (default: a temp dir)",
    )
    parser.add_argument("--keep-work", action="store_true")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = parser.parse_args(argv)
    if args.list:
        for sc in SCENARIOS:
            print(
                f"{sc.name:28s} {sc.category:18s} rank={sc.rank:<3d} node={sc.node!r:5s} "
                f"{sc.expected_state:10s} {sc.layout}"
            )
        return 0
    unknown = [n for n in args.scenario if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(unknown)}")
    scenarios = [BY_NAME[n] for n in args.scenario] if args.scenario else list(SCENARIOS)
    work = args.work or Path(tempfile.mkdtemp(prefix="mcore-record-"))
    work = work.resolve()
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    failures = 0
    t0 = time.monotonic()
    try:
        with local_cluster(state_dir=work / "slurm") as cluster:
            recorder = Recorder(cluster=cluster, work=work)

            def done(res: RunResult) -> None:
                nonlocal failures
                dest = recorder.record(res, out)
                problems = check_recording(res.scenario, dest, res.state)
                failures += bool(problems)
                mark = "ok " if not problems else "BAD"
                print(
                    f"[{mark}] {res.scenario.name:28s} job {res.job_id:<4d} {res.state:10s} "
                    f"{res.seconds:6.1f}s -> {dest.relative_to(out.parent)}",
                    flush=True,
                )
                for p in problems:
                    print(f"      {p}", flush=True)

            run_many(recorder, scenarios, args.jobs, on_done=done)
    except ClusterUnavailable as exc:
        print(f"cannot start the SLURM cluster: {exc}", file=sys.stderr)
        return 2
    finally:
        if not args.keep_work:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work dir kept: {work}", file=sys.stderr)
    print(
        f"{len(scenarios)} scenario(s) in {time.monotonic() - t0:.0f}s, {failures} with problems",
        flush=True,
    )
    return 1 if failures else 0


def check_recording(sc: Scenario, dest: Path, state: str) -> list[str]:
    """What is wrong with a recording (empty list when it shows what it should)."""
    problems: list[str] = []
    if state != sc.expected_state:
        problems.append(f"job state {state}, expected {sc.expected_state}")
    texts = []
    for path in sorted(dest.rglob("*")):
        if path.is_file() and path.name != "expected.toml":
            texts.append(path.read_text(errors="replace"))
    blob = "\n".join(texts)
    for pattern in sc.must_contain:
        if not re.search(pattern, blob):
            problems.append(f"no match for {pattern!r}")
    problems += [f"machine path left: {h}" for h in leftover_machine_paths(dest)]
    return problems


if __name__ == "__main__":
    raise SystemExit(main())

"""The benchmark's generated job is diagnosed right, and the reader's fast paths change nothing.

No timing here: ``benchmarks/bench.py`` measures speed. These tests check that the generator
(at a few MB) produces the failure it claims, and that the byte-level shortcuts in the reader
(per-line needle sets from Hyperscan, the timestamp sieve) give exactly the events of the plain
path, on lines built to break them (ANSI and C1 controls, progress bars, invalid UTF-8,
non-ASCII digits, long lines, stamps far back).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.api import analyze
from analyzer.read.discover import LogFile
from analyzer.read.file import FileScanner
from analyzer.read.prefilter import StampSieve
from analyzer.read.search import line_stamp
from tests.helpers import ROOT, builtin_catalog


def _generate_module():
    spec = importlib.util.spec_from_file_location("bench_generate", ROOT / "benchmarks/generate.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_generate"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_generated_job_is_diagnosed_as_the_oom_rank(tmp_path: Path) -> None:
    gen = _generate_module()
    spec = gen.Spec(str(tmp_path / "job"), size_gb=0.003, nodes=4, gpus_per_node=8)
    job = gen.generate(spec, workers=1)
    assert sum(p.stat().st_size for p in job.rglob("*.log")) > 1 << 20
    a = analyze(job, workers=1)
    v = a.diagnosis.verdict
    assert (v.category, v.rank) == ("cuda_oom", spec.oom)
    timeouts = {r.rank for r in a.rows if r.pattern_id == "nccl.watchdog.timeout"}
    assert timeouts == set(range(spec.world)) - {spec.oom}


@pytest.mark.slow
def test_bench_quick_mode_passes(tmp_path: Path) -> None:
    """What ``.ci/run`` needs: the one-command benchmark runs and checks the verdict."""
    r = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks/bench.py"),
            "--quick",
            "--stages",
            "--data",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verdict: ok" in r.stdout
    # --stages: one row per job, the fixed part against rg's time
    table = r.stdout.split("stages of one diagnosis", 1)[1]
    assert "| realistic | " in table and "fixed/rg" in table
    # the tool ran from bytecode cached under the data directory, as an install has it
    assert list((tmp_path / "pycache").rglob("analyzer/read/*.pyc"))


def test_stages_script_times_every_stage_of_a_diagnosis() -> None:
    """``benchmarks/stages.py``: each stage's wall time, and the fixed part is every stage but
    reading plus the interpreter's start."""
    r = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks/stages.py"),
            str(ROOT / "sample_logs/real/exception-cascade"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    stages = ["imports", "catalog", "discovery", "reading", "attribution", "records", "facts"]
    stages += ["decision", "report"]
    assert list(got) == ["interpreter", *stages, "fixed"]
    assert all(v > 0 for v in got.values())
    others = got["interpreter"] + sum(got[k] for k in stages if k != "reading")
    assert got["fixed"] == pytest.approx(others)


def test_generator_is_deterministic(tmp_path: Path) -> None:
    gen = _generate_module()
    a = gen.generate(gen.Spec(str(tmp_path / "a"), 0.001, 2, 4), workers=1)
    b = gen.generate(gen.Spec(str(tmp_path / "b"), 0.001, 2, 4), workers=1)
    files = sorted(p.relative_to(a) for p in a.rglob("*.log"))
    assert files == sorted(p.relative_to(b) for p in b.rglob("*.log"))
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)


# -- fast paths == plain path ---------------------------------------------------------------

_CATALOG = builtin_catalog()
_EXAMPLES = [ex.line for p in _CATALOG.patterns for ex in p.examples][:400]
_FRAGMENTS = [
    "[rank3]:[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] ",
    "W0731 10:50:07.575000 3247964 site-packages/torch/distributed/elastic/api.py:897] ",
    " [2026-08-20 14:03:11.123456] iteration      12/  500000 | lm loss: 2.3E+00 |",
    "[2024-01-20 07:54:42,803] torch.distributed.elastic.multiprocessing.api: [WARNING] ",
    "  3: [default1]:",
    "1: ",
    "Traceback (most recent call last):",
    '  File "train.py", line 40, in step',
    "ValueError: bad batch",
    "node017:4242:4301 [1] NCCL INFO Channel 00/32 : 0[0] -> 1[1] via P2P/CUMEM/read",
    "\x1b[31m",
    "\x1b[0m",
    "\x9b1m",
    "\x85",
    "\r",
    "\t",
    "\x00",
    "12:3\x1b[0m4:56",
    "12\x85:34:56",
    "2026-12-02T12:3\x854:56",
    "١٢:٣٤:٥٦",
    "E1202 ١٥:٣٤:٥٨.764000 ",
    "2026-12-02T15:44:25",
    "2026-12-02_15:34:58",
    "error timeout ",
    "x" * 300,
]
_INVALID = [b"\xff", b"\xc2", b"\xe2\x82", b"\xed\xa0\x80"]


class _NoCache(dict):
    def __setitem__(self, key: object, value: object) -> None:
        pass


def _plain(scanner: FileScanner) -> FileScanner:
    """The same scanner with the byte-level shortcuts and the line caches switched off."""
    scanner.prefilter.find_all = lambda data: None  # type: ignore[method-assign]
    scanner.stamps._db = None
    scanner.matcher._lines = _NoCache()
    scanner.matcher._matches = _NoCache()
    return scanner


def _events(scanner: FileScanner, lf: LogFile) -> tuple:
    fs = scanner.scan(lf)
    return (
        fs.bytes_read,
        sorted(fs.years),
        fs.problem,
        [dataclasses.asdict(e) for e in fs.events],
    )


def _log(tmp_path: Path, data: bytes, name: str = "slurm-1.out") -> LogFile:
    p = tmp_path / name
    p.write_bytes(data)
    return LogFile(p, name, len(data))


@st.composite
def _lines(draw: st.DrawFn) -> bytes:
    out = []
    for _ in range(draw(st.integers(1, 60))):
        parts = draw(st.lists(st.sampled_from(_FRAGMENTS + _EXAMPLES), min_size=1, max_size=4))
        raw = "".join(parts).encode("utf-8")
        if draw(st.integers(0, 9)) == 0:
            cut = draw(st.integers(0, len(raw)))
            raw = raw[:cut] + draw(st.sampled_from(_INVALID)) + raw[cut:]
        out.append(raw)
    sep = draw(st.sampled_from([b"\n", b"\r\n"]))
    tail = draw(st.sampled_from([b"", sep]))
    return sep.join(out) + tail


@pytest.mark.slow  # about 10 s on 2 cores (60 generated logs)
@pytest.mark.skipif(not StampSieve().available, reason="needs Hyperscan")
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=_lines())
def test_fast_paths_give_the_plain_paths_events(tmp_path: Path, data: bytes) -> None:
    lf = _log(tmp_path, data)
    plain = _events(_plain(FileScanner(_CATALOG)), lf)
    fast = FileScanner(_CATALOG)
    assert _events(fast, lf) == plain
    assert _events(fast, lf) == plain  # again, now from the warm line caches


@pytest.mark.skipif(not StampSieve().available, reason="needs Hyperscan")
def test_fast_paths_respect_the_lookback_limits(tmp_path: Path) -> None:
    rnd = random.Random(3)
    lines = [b"[rank0]:[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] start"]
    for n in (150, 198, 199, 200, 201, 260):
        lines += [b"noise %d %s" % (i, b"y" * rnd.randrange(10, 200)) for i in range(n)]
        lines.append(b"Fatal Python error: Aborted")
        lines.append(b"[rank0]:[W709 17:06:%02d.1 Utils.hpp:1] Warning: x" % (n % 60))
    lines += [b"z" * 20000, b"terminate called after throwing an instance of 'c10::Error'"]
    lf = _log(tmp_path, b"\n".join(lines) + b"\n")
    assert _events(FileScanner(_CATALOG), lf) == _events(_plain(FileScanner(_CATALOG)), lf)


_STAMPS = [
    "2026-12-02T15:44:25 ",
    "[2026-12-02 15:34:58.123456] x",
    "E1202 15:34:58.764000 ",
    "[rank1]:[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] x",
    "W0731 10:50:07.575000 3247964 site-packages/torch/api.py:897] x",
    "[2024-01-20 07:54:42,803] torch.distributed: [WARNING] x",
]
_JUNK = ["\x1b[0m", "\x1b", "\x85", "\x9b", "\x9b0m", "\r", "\t", "\x00", "\x7f", "é", "\ufffd"]
_ARABIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


@given(
    stamp=st.sampled_from(_STAMPS),
    junk=st.lists(st.tuples(st.integers(0, 60), st.sampled_from(_JUNK)), max_size=3),
    arabic=st.booleans(),
)
@settings(max_examples=300, deadline=None)
def test_every_parsable_stamp_leaves_the_sieve_signature(
    stamp: str, junk: list[tuple[int, str]], arabic: bool
) -> None:
    sieve = StampSieve()
    if not sieve.available:
        pytest.skip("needs Hyperscan")
    text = stamp.translate(_ARABIC) if arabic else stamp
    for pos, j in junk:
        text = text[:pos] + j + text[pos:]
    raw = text.encode("utf-8")
    if line_stamp(raw) is not None:
        assert sieve.ends(raw), text


def test_prefilter_engines_report_the_same_occurrences(monkeypatch: pytest.MonkeyPatch) -> None:
    import analyzer.read.prefilter as prefilter

    data = "\n".join(_EXAMPLES + _FRAGMENTS).encode("utf-8") * 3
    first = prefilter.Prefilter(_CATALOG.needles)
    monkeypatch.setattr(prefilter, "_hs", None)
    second = prefilter.Prefilter(_CATALOG.needles)
    if first.engine != "hyperscan" or second.engine != "ahocorasick":
        pytest.skip("needs both Hyperscan and ahocorasick_rs")
    assert sorted(first.find_all(data) or []) == sorted(second.find_all(data) or [])
    assert sorted(first.find(data)) == sorted(second.find(data))


@pytest.mark.skipif(not StampSieve().available, reason="needs Hyperscan")
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=_lines(), seed=st.integers(0, 1000))
def test_the_clock_answers_a_question_as_if_asked_first(
    tmp_path: Path, data: bytes, seed: int
) -> None:
    """The clock only reads the lines since its last question (lines are asked about in file
    order); every answer is the one a fresh clock gives, also for questions that go back (a
    kept event is built when its block ends)."""
    from analyzer.read.search import Searcher, StreamClock

    rnd = random.Random(seed)
    # Runs of short lines pass the 200-line limit, a few long ones the 16 KB limit.
    sizes = [rnd.randrange(0, 20) if rnd.random() < 0.97 else rnd.randrange(2000, 9000)
             for _ in range(rnd.randrange(0, 900))]
    noise = [b"noise " + b"y" * n for n in sizes]
    lines = data.split(b"\n")
    for ln in noise:
        lines.insert(rnd.randrange(0, len(lines) + 1), ln)
    lf = _log(tmp_path, b"\n".join(lines) + b"\n")
    sieve = StampSieve()
    clock = StreamClock(sieve)
    for blk in Searcher(lf, 1 << 20).blocks(clock):
        starts = [0] + [i + 1 for i, c in enumerate(blk.data[:-1]) if c == 10]
        asked: list[int] = []
        for s in starts:
            q = rnd.choice(asked) if asked and rnd.random() < 0.1 else s
            asked.append(q)
            assert clock.before(blk, q) == StreamClock(sieve).before(blk, q), q
        clock.end_block(blk)

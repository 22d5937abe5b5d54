"""The bad-input corpus: the bundled sample jobs, broken the ways real logs break.

Each case copies one sample job into tmp_path and mutates it with a fixed ``random.Random(seed)``
(so a failure names a reproducible case). For every case: no exception escapes ``analyze()``, the
command exits 0/1/2/3 without a traceback and its JSON parses; where the mutation left the root
line (the verdict's first evidence line) intact and only added noise, the verdict is unchanged.
"""

from __future__ import annotations

import gzip
import json
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from _robust import CATALOG, assert_clean_exit, cli

from analyzer.api import analyze
from analyzer.flightrec.load import is_dump_name
from tests.helpers import SAMPLES

SEEDS = (1, 2, 3)


@dataclass
class Root:
    """Where the verdict's root line is in its file (byte range), for 'is it intact?'."""

    file: str
    start: int
    end: int


@dataclass
class Case:
    data: bytes
    intact: bool
    """Only noise added (no byte of the original removed or moved), root line untouched."""
    rename: str | None = None


def _line_span(data: bytes, line: int) -> tuple[int, int]:
    pos = 0
    for _ in range(line - 1):
        pos = data.index(b"\n", pos) + 1
    end = data.find(b"\n", pos)
    return pos, (len(data) if end < 0 else end + 1)


_BASELINE: dict[Path, tuple[tuple[str, int | None, str], Root | None]] = {}


def _baseline(sample: Path) -> tuple[tuple[str, int | None, str], Root | None]:
    if sample not in _BASELINE:
        d = analyze(sample, catalog=CATALOG, workers=1).diagnosis
        v = d.verdict
        root = None
        if v.evidence:
            ev = v.evidence[0]
            f = sample / ev.file
            # a Flight Recorder dump entry is evidence too, but not a line of text
            if f.is_file() and not f.name.endswith(".gz") and not is_dump_name(f.name):
                root = Root(ev.file, *_line_span(f.read_bytes(), ev.line))
        _BASELINE[sample] = ((v.category, v.rank, d.status), root)
    return _BASELINE[sample]


def _line_starts(data: bytes) -> list[int]:
    out = [0]
    i = data.find(b"\n")
    while i >= 0 and i + 1 < len(data):
        out.append(i + 1)
        i = data.find(b"\n", i + 1)
    return out


def _outside(root: Root | None, pos: int) -> bool:
    return root is None or not (root.start <= pos < root.end)


# -- mutations: (data, rng, root-in-this-file) -> Case --------------------------------------
def truncate_random(data: bytes, rng: random.Random, root: Root | None) -> Case:
    cut = rng.randrange(len(data))
    # Cut after the root line: everything the verdict rests on is still there.
    return Case(data[:cut], intact=root is not None and cut >= root.end)


def truncate_mid_utf8(data: bytes, rng: random.Random, root: Root | None) -> Case:
    multi = [i for i in range(0, len(data), 7) if data[i] >= 0xC0][:500]
    if not multi:  # put one in, then cut inside it
        at = rng.randrange(len(data))
        data = data[:at] + "✓ …".encode() + data[at:]
        multi = [at]
    cut = rng.choice(multi) + 1
    return Case(data[:cut], intact=False)


def truncate_mid_traceback(data: bytes, rng: random.Random, root: Root | None) -> Case:
    tbs = [i for i in range(len(data)) if data.startswith(b"Traceback (most", i)][:50]
    start = rng.choice(tbs) if tbs else rng.randrange(len(data))
    cut = min(len(data), start + rng.randrange(1, 1500))
    return Case(data[:cut], intact=False)


def interleave_ranks(data: bytes, rng: random.Random, root: Root | None) -> Case:
    """Two writers on one file without line buffering: a window of lines split into two
    streams, merged again at character level."""
    starts = _line_starts(data)
    if len(starts) < 4:
        return Case(data, intact=False)
    i = rng.randrange(len(starts) - 2)
    j = min(len(starts) - 1, i + rng.randrange(2, 40))
    a0, a1 = starts[i], starts[j]
    lines = data[a0:a1].splitlines(keepends=True)
    s1, s2 = b"".join(lines[0::2]), b"".join(lines[1::2])
    out = bytearray()
    p = q = 0
    while p < len(s1) or q < len(s2):
        n = rng.randrange(1, 24)
        out += s1[p : p + n]
        p += n
        n = rng.randrange(1, 24)
        out += s2[q : q + n]
        q += n
    return Case(data[:a0] + bytes(out) + data[a1:], intact=False)


def invalid_bytes(data: bytes, rng: random.Random, root: Root | None) -> Case:
    junk = (
        b"\x00",
        b"\xff\xfe",
        b"\xc3",
        b"\xed\xa0\x80",
        b"\xf0\x9f\x98",
        b"\x00\x00\x07",
        b"\x80",
    )
    starts = _line_starts(data)
    picks = sorted(rng.sample(range(len(starts)), min(len(starts), 20)), reverse=True)
    out = data
    for k in picks:
        at = starts[k]
        if _outside(root, at):
            out = out[:at] + rng.choice(junk) + out[at:]
    return Case(out, intact=True)


def ansi_everywhere(data: bytes, rng: random.Random, root: Root | None) -> Case:
    seqs = (
        b"\x1b[1;31m",
        b"\x1b[0m",
        b"\x1b[2K",
        b"\x1b[1A",
        b"\x1b[K",
        b"\x1b]0;t\x07",
        b"\x1b[?25l",
    )
    lines = data.splitlines(keepends=True)
    out = []
    for ln in lines:
        if rng.random() < 0.5:
            body = ln.rstrip(b"\r\n")
            ln = rng.choice(seqs) + body + b"\x1b[0m" + ln[len(body) :]
        out.append(ln)
    return Case(b"".join(out), intact=True)


def progress_bars(data: bytes, rng: random.Random, root: Root | None) -> Case:
    """tqdm-style ``\\r`` frames fused with the next message (no newline in between)."""
    starts = _line_starts(data)
    picks = sorted(rng.sample(range(len(starts)), min(len(starts), 15)), reverse=True)
    out = data
    for k in picks:
        at = starts[k]
        bar = b"".join(b"Loading: %3d%%|%-10s|\r" % (p, b"#" * (p // 10)) for p in (0, 40, 100))
        out = out[:at] + bar + out[at:]
    return Case(out, intact=True)


def crlf(data: bytes, rng: random.Random, root: Root | None) -> Case:
    return Case(data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"), intact=True)


def nul_tail(data: bytes, rng: random.Random, root: Root | None) -> Case:
    return Case(data + b"\x00" * rng.choice((100, 4096, 70_000)), intact=True)


def long_token(data: bytes, rng: random.Random, root: Root | None) -> Case:
    starts = _line_starts(data)
    at = rng.choice(starts)
    if not _outside(root, at) and root is not None:
        at = root.end if root.end < len(data) else 0
    token = b"A" * rng.choice((10_000, 300_000, 1_500_000)) + b"\n"
    return Case(data[:at] + token + data[at:], intact=True)


def gzip_whole(data: bytes, rng: random.Random, root: Root | None) -> Case:
    return Case(gzip.compress(data), intact=True, rename=".gz")


def gzip_cut(data: bytes, rng: random.Random, root: Root | None) -> Case:
    gz = gzip.compress(data)
    return Case(gz[: rng.randrange(2, len(gz))], intact=False, rename=".gz")


def emptied(data: bytes, rng: random.Random, root: Root | None) -> Case:
    return Case(b"", intact=False)


MUTATIONS: dict[str, Callable[[bytes, random.Random, Root | None], Case]] = {
    f.__name__: f
    for f in (
        truncate_random,
        truncate_mid_utf8,
        truncate_mid_traceback,
        interleave_ranks,
        invalid_bytes,
        ansi_everywhere,
        progress_bars,
        crlf,
        nul_tail,
        long_token,
        gzip_whole,
        gzip_cut,
        emptied,
    )
}


def _log_files(d: Path) -> list[Path]:
    return sorted(
        p
        for p in d.rglob("*")
        if p.is_file() and p.name not in ("expected.toml", "FIXTURE.md") and p.stat().st_size
    )


def _cases() -> list[tuple[int, str]]:
    return [(seed, name) for seed in SEEDS for name in MUTATIONS]


@pytest.mark.skipif(not SAMPLES, reason="no sample jobs")
@pytest.mark.parametrize(("seed", "mutation"), _cases(), ids=lambda v: str(v))
def test_mutated_sample(seed: int, mutation: str, tmp_path: Path) -> None:
    rng = random.Random(f"{seed}-{mutation}")
    sample = rng.choice(SAMPLES)
    (category, rank, status), root = _baseline(sample)
    job = tmp_path / sample.name
    shutil.copytree(sample, job)
    files = _log_files(job)
    # The root file when there is one (the hardest place to break things), else any file.
    root_file = job / root.file if root else None
    target = root_file if root_file is not None and rng.random() < 0.7 else rng.choice(files)
    rel = target.relative_to(job).as_posix()
    here = root if root is not None and rel == root.file else None
    case = MUTATIONS[mutation](target.read_bytes(), rng, here)
    if case.rename:
        target.unlink()
        target = target.with_name(target.name + case.rename)
    target.write_bytes(case.data)
    where = f"{sample.name}/{rel} seed={seed}"

    a = analyze(job, catalog=CATALOG, workers=1)
    d = a.diagnosis
    assert d.status in ("failed", "ok", "unknown"), where
    if case.intact:
        got = (d.verdict.category, d.verdict.rank, d.status)
        assert got == (category, rank, status), (where, got, d.verdict.cause)

    r = cli(job, "-f", "json")
    assert_clean_exit(r)
    if r.code != 3:
        out = json.loads(r.stdout)
        assert out["verdict"]["category"] == d.verdict.category, where

"""Progress lines read in bulk (``EventBuilder._fold``) give exactly the events of the line-by-
line path, on generated logs built to break it and on every real log of the repository."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

import analyzer.build as build
from analyzer.bound import Item, RepeatBound, _first_extremes
from analyzer.catalog import Catalog, load_catalog
from analyzer.discover import discover
from analyzer.prefixes import all_bare_indented, split_prefixes
from analyzer.scan import FileScanner

REPO = Path(__file__).resolve().parents[1]
OFF = 10**9
"""A ``FOLD_MIN_RUN`` no run reaches: every line one by one."""

_CAT = load_catalog()


def _iteration(rnd: random.Random, it: int, healthy: bool = False) -> str:
    """Megatron's iteration line; a NaN loss also holds the NaN symptom's needle."""
    loss = rnd.choice(["2.345679E+00", "7", "1.0E+01"] + ([] if healthy else ["NAN"]))
    grad = rnd.choice(["0.812", "12", "nan", ""])
    tail = f" grad norm: {grad} |" if grad else ""
    samples = it * (8 if healthy else rnd.choice([8, 1]))
    return (
        f" [2026-08-20 11:{it % 60:02d}:{rnd.randrange(60):02d}.{rnd.randrange(10**6):06d}]"
        f" iteration {it:8d}/{500:8d} | consumed samples: {samples:12d} |"
        f" elapsed time per iteration (ms): 812.5 | lm loss: {loss} | loss scale: 1.0 |{tail}"
        f" number of skipped iterations:   0 | number of nan iterations:   0 |"
    )


def _log(rnd: random.Random) -> str:
    """A log of Megatron iteration lines with everything that must send them the long way."""
    out: list[str] = []
    if rnd.random() < 0.2:
        out.append('  File "train.py", line 3, in step')  # a headless traceback's frame
    it = rnd.randrange(1, 50)
    for _ in range(rnd.randrange(20, 160)):
        r = rnd.random()
        it += 1 if rnd.random() < 0.9 else -rnd.randrange(1, 20)  # a restart goes back
        it = max(it, 0)
        line = _iteration(rnd, it)
        if r < 0.55:
            out.append(line)
        elif r < 0.62:
            out.append("node3:1:2 [0] NCCL INFO AllGather: opCount 452 count 1 datatype 7")
        elif r < 0.66:
            out.append(f"  {rnd.randrange(4)}: {line.strip()}")  # srun's label
        elif r < 0.69:
            out.append(f"[default{rnd.randrange(4)}]:{line}")
        elif r < 0.71:
            out.append(line.replace("elapsed", "\telapsed"))
        elif r < 0.73:
            out.append(line.replace("elapsed", "élapsed"))
        elif r < 0.75:
            out.append(line + "\r" + line)
        elif r < 0.77:
            out.append("\x1b[32m" + line + "\x1b[0m")
        elif r < 0.79:
            out.append(line.strip())  # not indented: the prefixes are looked for
        elif r < 0.81:
            out.append(" nothing to see | consumed samples: many")  # the needle, no match
        elif r < 0.83:
            out.append(line.replace("nan iterations:   0", "nan iterations:   3"))
        elif r < 0.85:
            out.append(line + " " + "x" * 9000)  # longer than MAX_LINE_CHARS
        elif r < 0.88:
            out += [
                "Traceback (most recent call last):",
                '  File "train.py", line 9, in <module>',
                line,  # indented: the open traceback's line
                rnd.choice(["ValueError: boom", "RuntimeError: x"]),
            ]
        elif r < 0.89:
            out += ["Traceback (most recent call last):", line, "NCCL INFO not a frame"]
        elif r < 0.90:
            out.append(" Traceback (most recent call last): | consumed samples: 3")
        elif r < 0.92:
            out.append("")
        else:
            out.append(line)
    return "\n".join(out) + rnd.choice(["\n", ""])


def _events(
    path: Path, min_run: int, block: int | None, cat: Catalog = _CAT
) -> list[dict[str, object]]:
    build.FOLD_MIN_RUN = min_run
    try:
        lf = discover([path]).files[0]
        scan = FileScanner(cat, block_bytes=block).scan(lf)
    finally:
        build.FOLD_MIN_RUN = 4
    return [dataclasses.asdict(e) for e in scan.events]


@pytest.mark.parametrize("seed", range(60))
def test_folded_runs_give_the_line_by_line_events(seed: int, tmp_path: Path) -> None:
    rnd = random.Random(seed)
    path = tmp_path / "stdout.log"
    path.write_text(_log(rnd), encoding="utf-8")
    block = rnd.choice([None, 256, 1024, 4096])
    plain = _events(path, OFF, block)
    assert plain, "the generated log must give events"
    for min_run in (1, 4):
        assert _events(path, min_run, block) == plain, (seed, min_run, block)


def test_a_long_run_is_folded_into_its_first_last_and_extremes(tmp_path: Path) -> None:
    """The shortcut is taken (a run of 400 bare lines) and keeps what the bound promises."""
    rnd = random.Random(7)
    lines = [_iteration(rnd, i, healthy=True) for i in (*range(1, 300), *range(150, 251))]
    path = tmp_path / "stdout.log"
    path.write_text("\n".join(lines) + "\n")
    calls = []
    real = build.EventBuilder._fold

    def spy(self: build.EventBuilder, blk: object, run: list[int], p: object) -> int:
        calls.append(len(run))
        return real(self, blk, run, p)  # type: ignore[arg-type]

    build.EventBuilder._fold = spy  # type: ignore[method-assign]
    try:
        folded = _events(path, 4, None)
    finally:
        build.EventBuilder._fold = real  # type: ignore[method-assign]
    assert calls == [400]
    assert folded == _events(path, OFF, None)
    # first, the highest before the restart went back, last
    its = [int(str(e["fields"]["iteration"])) for e in folded]  # type: ignore[index]
    assert its == [1, 299, 250]
    assert sum(int(str(e["repeats"])) for e in folded) == 400


def test_a_traceback_start_in_a_run_is_read_as_one(tmp_path: Path) -> None:
    """With a catalog whose only needle is the progress pattern's (a user file can replace
    the pattern that owns ``Traceback (most recent call last):``), a traceback's first line
    may sit in a run of progress lines: it opens the traceback, and the indented iteration
    lines after it are the traceback's, not progress events."""
    rnd = random.Random(3)
    it = _CAT.by_id["megatron.ctx.iteration"]
    cat = Catalog([it], ["test"])
    lines = [_iteration(rnd, i, healthy=True) for i in range(1, 6)]
    lines += [" Traceback (most recent call last): | consumed samples: 3"]
    lines += [_iteration(rnd, i, healthy=True) for i in range(6, 11)]
    lines += ["ValueError: boom"] + [_iteration(rnd, i, healthy=True) for i in range(11, 16)]
    path = tmp_path / "stdout.log"
    path.write_text("\n".join(lines) + "\n")
    plain = _events(path, OFF, None, cat)
    assert any(e["pattern_id"] == "python.traceback" for e in plain)
    assert _events(path, 1, None, cat) == plain


def _real_logs() -> list[Path]:
    roots = [REPO / "sample_logs", REPO / "tests" / "wild"]
    return sorted(
        p
        for root in roots
        for p in root.rglob("*")
        if p.is_file() and p.suffix in (".log", ".out", ".err", ".txt") and p.stat().st_size
    )


def test_every_real_log_reads_the_same_with_and_without_folding() -> None:
    logs = _real_logs()
    assert len(logs) > 100
    for path in logs:
        assert _events(path, 1, None) == _events(path, OFF, None), path


@pytest.mark.parametrize(
    "line",
    [
        " [2026] iteration 5/",
        "    File 'a.py'",
        "  3: x",
        "  | ValueError",
        "  + Exception Group Traceback",
        "   ",
        "",
        "x",
        " \u0663: x",
        " \u00e9x",
        " \tx",
        "[rank1]: x",
    ],
)
def test_bare_indent_check_agrees_with_split_prefixes(line: str) -> None:
    bare = all_bare_indented([line])
    pre = split_prefixes(line)
    if bare:
        assert pre.message is line and pre.task is None and pre.stamp is None
    assert bare == (
        line[:1] == " "
        and line.strip() != ""
        and pre.message is line
        and line.lstrip(" ")[:1] not in "0123456789|+"
        and line.lstrip(" ")[:1] < "\x80"
    )


class _Progress:
    id = "p"
    role = "context"
    regex = None
    tags = frozenset({"progress"})


_NAMES = (("iteration", 0), ("loss", 1), ("at", 2))


def _fields(row: tuple[str | None, ...]) -> dict[str, str]:
    return {n: v for (n, i) in _NAMES if (v := row[i])}


def _kept(rows: list[tuple[str | None, ...]], batches: list[int]) -> list[tuple[int, int]]:
    """(row, repeats) of the events kept when the first row is offered and the others are
    folded in batches of the given sizes."""
    bound = RepeatBound(lambda args: SimpleNamespace(i=args, repeats=1))
    bound.offer(("w",), _Progress, _fields(rows[0]), 1, 0, 0)
    at = 1
    for size in batches:
        g = bound.group((("w",), "p", "context"))
        assert g is not None and len(g.first) == g.keep == 1

        def make(need: list[int], base: int = at) -> dict[int, Item]:
            return {
                r: Item(base + r + 1, base + r, _fields(rows[base + r]), base + r) for r in need
            }

        bound.fold(g, rows[at : at + size], _NAMES, make)
        at += size
    assert at == len(rows)
    return [(e.i, e.repeats) for e in bound.events()]


@pytest.mark.parametrize("seed", range(30))
def test_bound_fold_is_offer_one_by_one(seed: int) -> None:
    """``RepeatBound.fold`` in random batches against ``offer`` line by line: the same kept
    lines and counts (integers, other values and missing captures mixed in each column)."""
    rnd = random.Random(seed)
    rows = [
        (
            rnd.choice([str(rnd.randrange(0, 30)), None]),
            rnd.choice(["2.5", "7", None, "12"]),
            rnd.choice(["12:00", None]),
        )
        for _ in range(rnd.randrange(2, 40))
    ]
    ref = RepeatBound(lambda args: SimpleNamespace(i=args, repeats=1))
    for i, r in enumerate(rows):
        ref.offer(("w",), _Progress, _fields(r), i + 1, i, i)
    one_by_one = [(e.i, e.repeats) for e in ref.events()]
    sizes = []
    left = len(rows) - 1
    while left > 0:
        sizes.append(rnd.randrange(1, left + 1))
        left -= sizes[-1]
    assert _kept(rows, sizes) == one_by_one
    assert _kept(rows, [1] * (len(rows) - 1)) == one_by_one
    assert _kept(rows, [len(rows) - 1]) == one_by_one


def test_first_extremes_skips_what_is_not_an_integer() -> None:
    assert _first_extremes([None, "x", "5", "", "9", "5", "9", "1.5", "2"]) == [(9, 4), (2, 8)]

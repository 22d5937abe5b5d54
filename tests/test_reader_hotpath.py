"""The reader's hot path: what its shortcuts must keep exactly as the plain code did."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from analyzer.catalog.model import Catalog
from analyzer.lines.prefixes import Prefixed, _prefixed, split_prefixes
from analyzer.lines.timestamps import Stamp
from analyzer.read.discover import discover
from analyzer.read.file import FileScanner
from analyzer.read.fold import KEEP, Item, RepeatBound
from analyzer.read.match import LineMatcher


def test_fast_prefixed_is_the_dataclass() -> None:
    args: tuple[Any, ...] = ("msg", 3, 1, 25, "E", Stamp(None, 7, 9, 17, 5, 38), 42, "n1", 7)
    fast, plain = _prefixed(*args), Prefixed(*args)
    assert fast == plain and hash(fast) == hash(plain) and repr(fast) == repr(plain)
    assert _prefixed("m") == Prefixed("m")
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.rank = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("line", "message", "task"),
    [
        # Nothing after srun's label can start a prefix: the early exit.
        ("  3: iteration 5/ 10 | consumed samples: 3", "iteration 5/ 10 | consumed samples: 3", 3),
        (" [2026-08-20 11:50:59.1] iteration 5/", " [2026-08-20 11:50:59.1] iteration 5/", None),
        ("", "", None),
        ("  7: ", "", 7),
        # Megatron's own "> " line is no quote, with or without a label in front.
        ("> building GPT model ...", "> building GPT model ...", None),
        ("> 12: x", "x", 12),
        ("> E       RuntimeError: x", "RuntimeError: x", None),
        ("> Traceback (most recent call last):", "Traceback (most recent call last):", None),
        ("> [rank3]: boom", "boom", None),
        # After the label, a bracket, a letter or a non-ASCII character still goes on.
        ("  3: [rank5]: x", "x", 3),
        ("  3: W0731 10:50:07.575000 3247964 api.py:897] x", "x", 3),
        ("  3: \u0663: x", "\u0663: x", 3),
        # An indented line: no prefix unless the spaces lead to a task number or a margin.
        ('    File "a.py", line 3, in f', '    File "a.py", line 3, in f', None),
        ("  12: x", "x", 12),
        (" \u0663: x", "x", 3),  # a Unicode digit is a digit to ``regex``'s \\d
        ("    | ValueError: boom", "ValueError: boom", None),
        ("  + Exception Group Traceback (most recent call last):",
         "Exception Group Traceback (most recent call last):", None),
        ("   ", "   ", None),
    ],
)
def test_prefixes_after_the_early_exit(line: str, message: str, task: int | None) -> None:
    p = split_prefixes(line)
    assert (p.message, p.task) == (message, task)


def _reference(values: list[dict[str, str]], keep: int) -> tuple[set[int], int]:
    """The documented bound, written plainly: the first and last ``keep`` items, and the first
    item holding the smallest and the largest value of each capture that is an integer; the
    rest counted on the last of the first ``keep``."""
    n = len(values)
    kept = set(range(min(keep, n))) | set(range(max(keep, n - keep), n))
    best: dict[tuple[str, bool], tuple[int, int]] = {}
    for i in range(n):
        for k, v in values[i].items():
            if not v.isdecimal():
                continue
            iv = int(v)
            for hi in (True, False):
                cur = best.get((k, hi))
                if cur is None or (iv > cur[0] if hi else iv < cur[0]):
                    best[(k, hi)] = (iv, i)
    kept |= {i for _v, i in best.values()}
    return kept, n - len(kept)


@pytest.mark.parametrize("seed", range(40))
def test_repeat_bound_keeps_ends_extremes_and_exact_counts(seed: int) -> None:
    rnd = random.Random(seed)
    n = rnd.randrange(0, 60)
    values = [
        {
            "iteration": str(rnd.randrange(0, 12)),
            "loss": rnd.choice(["2.5", "nan", "7"]),
            "at": rnd.choice(["12:00", "", "x1"]),
        }
        for _ in range(n)
    ]
    bound = RepeatBound(lambda args: SimpleNamespace(i=args, repeats=1))

    class P:
        id = "p"
        role = "symptom"
        regex = None
        tags: frozenset[str] = frozenset()

    for i, f in enumerate(values):
        if i % 2:
            bound.offer(("w",), P, f, i + 1, i * 10, i)
        else:
            bound.add(bound.key(("w",), P, "symptom", f), Item(i + 1, i * 10, f, i))
    evs = bound.events()
    kept, folded = _reference(values, KEEP)
    assert [e.i for e in evs] == sorted(kept)
    assert sum(e.repeats for e in evs) == n
    if folded:
        assert evs[KEEP - 1].repeats == folded + 1


def test_events_of_a_cached_line_do_not_share_captures(tmp_path: Path, catalog: Catalog) -> None:
    """The matcher caches the captures of a repeated message; every event gets its own."""
    line = "[rank{}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    d = tmp_path / "job"
    d.mkdir()
    (d / "slurm-1.out").write_text("".join(line.format(r) + "\n" for r in range(3)))
    cat = catalog
    scan = FileScanner(cat).scan(discover([d]).files[0])
    evs = [e for e in scan.events if e.fields]
    assert len(evs) == 3 and evs[0].fields == evs[1].fields
    evs[0].fields["extra"] = "x"
    assert "extra" not in evs[1].fields and "extra" not in evs[2].fields

    m = LineMatcher(cat)
    raw = (line.format(0)).encode()
    m.candidates(raw + b"\n")
    msg = split_prefixes(line.format(0)).message
    first = m.match(msg, raw, line.format(0), 0)
    assert first is not None
    first.fields["extra"] = "x"
    again = m.match(msg, raw, line.format(0), 0)
    assert again is not None and "extra" not in again.fields


def test_caches_rest_when_lines_never_repeat_and_answers_do_not_change(
    monkeypatch: pytest.MonkeyPatch, catalog: Catalog
) -> None:
    import analyzer.read.match as am

    monkeypatch.setattr(am, "CACHE_LINES", 16)
    monkeypatch.setattr(am, "CACHE_MIN_HITS", 4)
    monkeypatch.setattr(am, "CACHE_REST", 8)
    cat = catalog
    m = LineMatcher(cat)
    lines = [f" [2026-08-20 11:50:{i % 60:02d}] iteration {i}/ 100 | consumed samples: {i}"
             for i in range(40)]
    data = "".join(x + "\n" for x in lines).encode()
    starts = m.candidates(data)
    assert len(starts) == len(lines)
    rested = False
    for s, text in zip(starts, lines, strict=True):
        raw = text.encode()
        got_text, pre = m.line(raw)
        assert (got_text, pre) == (text, split_prefixes(text))
        got = m.lookup(pre.message, raw, got_text, s)
        assert got is not None and got[0].id == "megatron.ctx.iteration"
        assert got[1]["iteration"] == str(lines.index(text))
        rested = rested or (m._line_rest > 0 and m._match_rest > 0)
    assert rested  # 16 distinct lines filled each cache without a hit: both rested
    # A line that repeats is cached again once the rest is over.
    m._line_rest = m._match_rest = 0
    m._lines.clear()
    m.line(b"x")
    assert m.line(b"x") == ("x", split_prefixes("x")) and m._line_hits >= 1


def test_repeated_context_facts_are_one_event_with_their_count() -> None:
    """NCCL prints the same Init COMPLETE fact once per communicator: a context line whose
    captures equal the last kept line's is a repeat of it; a symptom line never is."""

    class Ctx:
        id = "ctx"
        role = "context"
        regex = None
        tags: frozenset[str] = frozenset()

    class Field(Ctx):  # a ChildFailedError block's field: structure, read line by line
        tags = frozenset({"childfailed-field"})

    class Sym:
        id = "sym"
        role = "symptom"
        regex = None
        tags: frozenset[str] = frozenset()

    a, b = {"comm_rank": "3", "nranks": "8"}, {"comm_rank": "0", "nranks": "2"}
    seq = [a] * 33 + [b] + [a] * 5
    # The symptom keeps its first and last 8 and the extremes (line 1 holds the largest
    # values from the start; line 34, among the last 8, the smallest).
    ends = [*range(1, 9), *range(32, 40)]
    for pat, kept in ((Ctx, [1, 34, 35]), (Sym, ends), (Field, ends)):
        bound = RepeatBound(lambda args: SimpleNamespace(i=args, repeats=1))
        for i, f in enumerate(seq, 1):
            bound.offer(("w",), pat, f, i, i * 10, i)
        evs = bound.events()
        assert [e.i for e in evs] == kept, pat.id
        assert sum(e.repeats for e in evs) == len(seq)
        if pat is Ctx:
            assert [e.repeats for e in evs] == [33, 1, 5]


def test_a_progress_line_keeps_its_first_last_and_extremes() -> None:
    """Megatron's iteration line (tag ``progress``), every step on every rank: one writer
    keeps its first and last line and the holders of each integer capture's extremes, never
    the first and last 8; the count stays exact. A restart that went back keeps the highest
    iteration."""

    class Progress:
        id = "megatron.ctx.iteration"
        role = "context"
        regex = SimpleNamespace(groupindex={"iteration": 1, "loss": 2})
        tags = frozenset({"progress"})

    its = [*range(1, 101), *range(60, 81)]  # 1..100, then a restart from 60 to 80
    bound = RepeatBound(lambda args: SimpleNamespace(i=args, repeats=1))
    for i, it in enumerate(its, 1):
        bound.offer(("w",), Progress, {"iteration": str(it), "loss": "2.5"}, i, i * 10, i)
    evs = bound.events()
    assert [e.i for e in evs] == [1, 100, len(its)]  # first (lowest), highest, last
    assert sum(e.repeats for e in evs) == len(its)
    assert evs[0].repeats == len(its) - 2


def test_a_context_repeat_at_the_end_replaces_the_last_kept_line() -> None:
    class Ctx:
        id = "ctx"
        role = "context"
        regex = None
        tags: frozenset[str] = frozenset()

    bound = RepeatBound(lambda args: SimpleNamespace(i=args, repeats=1), keep=2)
    seq = [{"v": "x1"}, {"v": "x2"}, {"v": "x3"}, {"v": "x4"}, {"v": "x4"}, {"v": "x4"}]
    for i, f in enumerate(seq, 1):
        bound.offer(("w",), Ctx, f, i, i * 10, i)
    evs = bound.events()
    assert [e.i for e in evs] == [1, 2, 3, 6]
    assert sum(e.repeats for e in evs) == len(seq)

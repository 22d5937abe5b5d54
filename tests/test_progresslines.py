"""Progress lines read a block at a time (``read/progresslines.py``) keep what the lane keeps.

Megatron's iteration line (tag ``progress``: the fold keeps its first and last line and the
lines holding the extremes of each integer capture) is matched a block at a time by one
``findall``, and a run of such lines is added to its group at once
(``RepeatBound.extend``). These tests check each piece against what it replaces: the
prefix-free form against ``prefixes.bare``, ``extend`` against ``offer`` line by line on
random runs (ties, restarts, captures that are sometimes not integers, block ends between
runs), the captures against the lane's on lines of every kind, a regex that runs into the
next line, and the events of a hit-dense job (the benchmark's generator) and of every bundled
and wild job with and without the batch.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import string
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.catalog.model import Catalog, Pattern
from analyzer.lines.prefixes import bare
from analyzer.read.fold import Item, RepeatBound
from analyzer.read.match import LineMatcher
from analyzer.read.progresslines import BARE, ProgressLines, bulk_local, takes_bulk
from tests.helpers import builtin_catalog
from tests.test_bench_quick import _generate_module
from tests.test_reader_needs import JOB_PARAMS, _read, assert_same_without, read_both

ITER = (
    " [2026-08-20 11:50:52.066241] iteration {it}/  500000 | consumed samples: {s} | "
    "lm loss: 2.3E+00 |"
)


def _iteration() -> Pattern:
    return builtin_catalog().by_id["megatron.ctx.iteration"]


def test_the_iteration_line_is_read_a_block_at_a_time() -> None:
    """A test that cannot see the batch proves nothing: Megatron's iteration pattern takes it."""
    cat = builtin_catalog()
    progress = {p.id: p for p in cat.patterns if "progress" in p.tags}
    assert "megatron.ctx.iteration" in progress
    assert takes_bulk(progress["megatron.ctx.iteration"])
    assert ProgressLines(LineMatcher(cat)._lanes)


@pytest.mark.parametrize(
    "source",
    [r"a$", r"^a", r"(?s)a.b", r"(?<=x)a", r"(?<!x)a", r"(?=x)a", r"(?!x)a", r"a\Z", r"a\x0ab",
     r"a\nb", r"(?i)a", r"\p{L}", r"(a)\2", r"a\Ab"],
)
def test_a_regex_that_can_see_past_its_line_unread_keeps_the_lane(source: str) -> None:
    p = dataclasses.replace(_iteration(), regex=regex.compile(f"(?P<iteration>x){source}"))
    assert not bulk_local(p) and not takes_bulk(p)


@pytest.mark.parametrize("source", [r"a\sb", r"[^x]+", r"a\Wb", r"a\Db", r"a.*?b", r"\bab\b"])
def test_constructs_that_consume_a_newline_are_read_here(source: str) -> None:
    """A match through a newline shows in the count of matches (see the next test)."""
    assert bulk_local(
        dataclasses.replace(_iteration(), regex=regex.compile(f"(?P<iteration>{source})"))
    )


def test_a_pattern_with_an_identity_capture_keeps_the_lane() -> None:
    """Its groups are one per writer and rank: ``extend`` adds to one group only."""
    p = dataclasses.replace(_iteration(), regex=regex.compile(r"iteration (?P<rank>\d+)"))
    assert bulk_local(p) and not takes_bulk(p)


_ALPHABET = " 0123456789|+:[]._-abcNCLIOxyz"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=_ALPHABET, min_size=1, max_size=30))
def test_the_prefix_free_form_is_prefixes_bare(line: str) -> None:
    """``BARE`` at a line's start says what ``prefixes.bare`` says, on printable ASCII."""
    assert (regex.match(BARE, line) is not None) == bare(line), repr(line)


@pytest.mark.parametrize(
    "line",
    ["  3: x", "  | x", "  + x", "   ", " é", "node1:12:13 [0] NCCL INFO x", "node1:12 [0] x",
     " [2026-01-01] iteration", "[default0]: x", "x"],
)
def test_the_prefix_free_form_on_the_prefixes_that_start_with_spaces(line: str) -> None:
    assert (regex.match(BARE, line) is not None) == bare(line)


def _rows(lines: list[str]) -> tuple[dict[int, Any], LineMatcher, bytes]:
    m = LineMatcher(builtin_catalog())
    data = ("\n".join(lines) + "\n").encode()
    m.candidates(data)
    return m.progress_rows(data), m, data


def test_every_line_read_here_gets_the_lanes_captures() -> None:
    """A line gets captures here only when the lane would read it without prefixes, and they
    are the lane's (``Pattern.fields`` of its leftmost match). A labelled line, a carriage
    return, a traceback's start, a line the pattern does not match are the lane's."""
    lines = [
        ITER.format(it=10, s=20),
        "  " + ITER.format(it=11, s=21).lstrip(),
        "3: " + ITER.format(it=12, s=22),  # srun's label: a prefix
        "  3: " + ITER.format(it=12, s=22).lstrip(),  # an indented srun label
        ITER.format(it=13, s=23) + "\r",
        " iteration 14/  100 | consumed samples: 24 | lm loss: 1.0 | grad norm: 3 |",
        "node1:12:13 [0] iteration 15/ 100 | consumed samples: 25 |",
        " Traceback (most recent call last): iteration 16/ 100 | consumed samples: 26 |",
        " iteration x/ 100 | consumed samples: 27 |",  # no match
    ]
    rows, m, data = _rows(lines)
    p = _iteration()
    names = m.progress_names(p)
    got = {}
    for s, (pat, row) in rows.items():
        assert pat is p
        e = data.find(b"\n", s)
        text = data[s:e].decode("ascii")
        match = p.regex.search(text)
        assert match is not None and bare(text)
        assert {k: v for k, i in names if (v := row[i])} == p.fields(match)
        got[lines.index(text)] = list(p.fields(match))
    assert sorted(got) == [0, 1, 5, 6]
    # the pattern's own order of captures, as the lane's events hold them
    assert got[5] == [n for n in p.regex.groupindex if n in got[5]]


def test_a_traceback_s_start_is_never_read_here() -> None:
    """The lane leaves a line starting a traceback to the whole path (today its needle makes
    such a line no lane line anyway; the form says so on its own)."""
    pl = ProgressLines(LineMatcher(builtin_catalog())._lanes)
    rx = pl._line_rx["megatron.ctx.iteration"]
    tail = "iteration 1/ 2 | consumed samples: 3 |"
    for head, read in (("  Traceback (most recent call last): ", False),
                       (" Original Traceback (most recent call last): ", False),
                       (" Traceback: ", True)):
        assert bool(rx.findall(head + tail)[0][0]) is read, head


def test_a_match_that_runs_into_the_next_line_leaves_the_block_to_the_lane() -> None:
    r"""``\s+`` at a regex's end takes the newline and the next line's start: that line gets
    no match of its own, so the block's lines are counted short and none is read here."""
    p = dataclasses.replace(
        _iteration(), regex=regex.compile(r"iteration (?P<iteration>\d+) \| consumed samples:\s+")
    )
    cat = builtin_catalog()
    cat = Catalog([p if q.id == p.id else q for q in cat.patterns], cat.sources)
    m = LineMatcher(cat)
    lines = [" iteration 1 | consumed samples: ", "   7 more", " iteration 2 | consumed samples: 3"]
    data = ("\n".join(lines) + "\n").encode()
    m.candidates(data)
    assert m.progress_rows(data) == {}
    # the same regex on lines it matches within each
    data = (b" iteration 1 | consumed samples: 5\n iteration 2 | consumed samples: 6\n")
    m.candidates(data)
    assert len(m.progress_rows(data)) == 2


# -- extend == offer, line by line ------------------------------------------------------

_VALUES = st.sampled_from(["", "0", "1", "2", "3", "7", "7", "12", "2.5E+00", "nan", "x1"])


def _bound() -> RepeatBound:
    return RepeatBound(lambda args: SimpleNamespace(args=args, repeats=1))


def _kept(bound: RepeatBound) -> list[tuple[object, ...]]:
    return [(ev.args[0], tuple(ev.args[1].items()), ev.repeats) for ev in bound.events()]


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.tuples(_VALUES, _VALUES, _VALUES), min_size=2, max_size=40),
    cuts=st.lists(st.integers(1, 39), max_size=6),
    settles=st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_extend_keeps_what_offer_keeps_line_by_line(
    rows: list[tuple[str, str, str]], cuts: list[int], settles: list[bool]
) -> None:
    """The count, the last line and each extreme's first holder, whatever the runs' cuts and
    block ends (``settle``) between them."""
    p = _iteration()
    names = (("iteration", 1), ("value", 2), ("loss", 3))
    writer = (None, None, None, None, None)

    def fields(row: tuple[str, ...]) -> dict[str, str]:
        return {k: v for k, i in names if (v := row[i])}

    one = _bound()
    bounds = sorted({c for c in cuts if c < len(rows)})
    ends = [0, *bounds, len(rows)]
    for j, row in enumerate(rows):
        if j in bounds and settles[bounds.index(j) % 8]:
            one.settle()
        one.offer(writer, p, fields(("x", *row)), j, 0, (j, fields(("x", *row))))
    runs = _bound()
    first = ("x", *rows[0])
    runs.offer(writer, p, fields(first), 0, 0, (0, fields(first)))
    g = runs.past_first(writer, p)
    assert g is not None
    for a, b in itertools.pairwise(ends):
        if a in bounds and settles[bounds.index(a) % 8]:
            runs.settle()
        run = [("x", *r) for r in rows[max(a, 1) : b]]
        if not run:
            continue

        def item_at(k: int, a: int = max(a, 1), run: list[tuple[str, ...]] = run) -> Item:
            return Item(a + k, 0, fields(run[k]), (a + k, fields(run[k])))

        runs.extend(g, run, names, item_at)
    assert _kept(runs) == _kept(one)


def test_past_first_only_for_a_progress_group_that_kept_its_first_line() -> None:
    p = _iteration()
    w = (None, None, None, None, None)
    b = _bound()
    assert b.past_first(w, p) is None  # no group yet
    b.offer(w, p, {"iteration": "1"}, 1, 0, (1, {}))
    assert b.past_first(w, p) is not None
    other = builtin_catalog().by_id["nccl.ctx.comm_init"]  # need = "first"
    b.offer(w, other, {"rank": "1"}, 2, 0, (2, {}))
    assert b.past_first(w, other) is None


# -- whole files and jobs -----------------------------------------------------------------


def _no_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LineMatcher, "progress_rows", lambda _self, _data: {})


def test_a_hit_dense_job_reads_the_same_events_without_the_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The benchmark's hit-dense job (every rank's iteration line every step), small, with a
    restart (iterations going back), a traceback and labelled and odd lines mixed in."""
    gen = _generate_module()
    job = gen.generate(gen.Spec(str(tmp_path / "job"), 0.002, 2, 2, dense=True), workers=1)
    rng = random.Random(5)
    for f in sorted(job.rglob("stdout.log"))[:2]:
        lines = f.read_text().splitlines()
        at = [i for i, ln in enumerate(lines) if " iteration " in ln]
        assert len(at) > 20
        i = at[len(at) // 2]
        lines[i:i] = [ITER.format(it=3, s=4), "Traceback (most recent call last):",
                      '  File "t.py", line 1', "ValueError: x", "0: " + lines[at[3]],
                      lines[at[4]] + "\r", ITER.format(it=1, s=rng.randint(1, 9))]
        f.write_text("\n".join(lines) + "\n")
    cat = builtin_catalog()
    added: list[int] = []
    extend = RepeatBound.extend

    def spy(self: RepeatBound, g: Any, rows: list[Any], *args: Any) -> None:
        added.append(len(rows))
        extend(self, g, rows, *args)

    monkeypatch.setattr(RepeatBound, "extend", spy)
    batched = _read(job, cat)
    assert sum(added) > 100  # most iteration lines were added in runs
    _no_batch(monkeypatch)
    assert _read(job, Catalog(list(cat.patterns), cat.sources)) == batched


@pytest.mark.parametrize("job", JOB_PARAMS)
def test_every_bundled_and_wild_job_reads_the_same_events_without_the_batch(
    job: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_same_without(job, lambda: _no_batch(monkeypatch))


def test_lines_of_random_characters_read_the_same_with_and_without_the_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Iteration lines with random text around and inside them, tabs, spaces, labels."""
    rng = random.Random(11)
    lines = []
    for _k in range(400):
        pre = rng.choice(["", " ", "  ", "3: ", "  3: ", "\t", " | ", "x "])
        mid = rng.choice(["", " | lm loss: 1.5E+00", " | grad norm: " + str(rng.randint(0, 9))])
        junk = "".join(rng.choice(string.printable[:-5]) for _ in range(rng.randint(0, 5)))
        lines.append(
            f"{pre}[t] iteration {rng.randint(0, 50)}/  90 | consumed samples: "
            f"{rng.choice(['', ' '])}{rng.randint(0, 99)}{mid}{junk}"
        )
    (tmp_path / "rank0.log").write_text("\n".join(lines) + "\n")
    batched, unbatched = read_both(tmp_path, lambda: _no_batch(monkeypatch))
    assert unbatched == batched and len(batched) > 3

"""The wild corpus: real public failure logs under ``tests/wild/*/`` with an expert's label.

Every case is a directory with ``expected.toml`` (``category``, ``first_failing_rank``: -1 when
the log cannot name a culprit) and the log text. The whole corpus is analysed in one process and
scored three ways:

- category accuracy over all cases;
- rank accuracy over the cases whose expected rank is known (``first_failing_rank != -1``);
- wrong accusations: a rank named where the expected rank is another rank or -1.

``tests/wild/floors.toml`` records the figures reached; the test fails when accuracy drops below
a floor or wrong accusations rise above their ceiling. Floors only go up: raise them when a change
improves the figures. Run ``python tests/test_wild.py`` (or ``pytest -s tests/test_wild.py``)
for the per-case diff.
"""

from __future__ import annotations

import sys
import tomllib
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

WILD = Path(__file__).parent / "wild"
FLOORS = WILD / "floors.toml"


@dataclass(frozen=True)
class Outcome:
    """The expected label of one case next to what the tool said."""

    name: str
    category: str
    rank: int
    got_category: str
    got_rank: int | None
    pattern: str | None
    error: str | None = None
    certainty: str | None = None
    """How sure the tool says its rank is (``rank_certainty``)."""

    @property
    def category_ok(self) -> bool:
        return self.error is None and self.got_category == self.category

    @property
    def rank_ok(self) -> bool:
        """Right rank where one is expected; no rank (null) where the log names none."""
        if self.error is not None:
            return False
        return self.got_rank == (None if self.rank == -1 else self.rank)

    @property
    def wrong_accusation(self) -> bool:
        """A rank named where another rank (or none) is the culprit, with more than a
        ``possible`` certainty (a ``possible`` rank is the only one in view, and says so)."""
        return (
            self.got_rank is not None and self.got_rank != self.rank and not self.possible_apart
        )

    @property
    def possible_apart(self) -> bool:
        """A rank named as ``possible`` that the label does not confirm: counted apart, neither
        right nor a wrong accusation."""
        return (
            self.got_rank is not None
            and self.certainty == "possible"
            and self.got_rank != self.rank
        )


def cases(root: Path = WILD) -> list[Path]:
    """Every case directory (one with an ``expected.toml``), sorted by name."""
    return sorted(p.parent for p in root.glob("*/expected.toml"))


def run_case(case: Path, catalog: object) -> Outcome:
    """Analyse one case and compare with its label; an exception is recorded, not raised."""
    from analyzer.api import analyze

    exp = tomllib.loads((case / "expected.toml").read_text(encoding="utf-8"))
    cat, rank = str(exp["category"]), int(exp.get("first_failing_rank", -1))
    # the case's files and folders (torchrun's --log-dir, output/), not its label
    logs = sorted(p for p in case.iterdir() if p.name != "expected.toml")
    try:
        v = analyze(logs, catalog=catalog).diagnosis.verdict  # type: ignore[arg-type]
    except Exception as e:  # a crash is a failure of the case, reported with the others
        return Outcome(case.name, cat, rank, "crash", None, None, f"{type(e).__name__}: {e}")
    return Outcome(case.name, cat, rank, v.category, v.rank, v.pattern_id,
                   certainty=v.rank_certainty)


@cache
def outcomes() -> tuple[Outcome, ...]:
    """The whole corpus, analysed once per process with one loaded catalog."""
    from analyzer.catalog.load import load_catalog

    catalog = load_catalog([])
    return tuple(run_case(c, catalog) for c in cases())


@dataclass(frozen=True)
class Score:
    """The corpus figures that the floors bound."""

    cases: int
    category_right: int
    ranked: int
    rank_right: int
    unranked: int
    null_right: int
    wrong_accusations: int
    crashes: int
    possible_apart: int = 0
    """Ranks named as ``possible`` that the label does not confirm (not wrong accusations)."""

    @property
    def category_accuracy(self) -> float:
        return self.category_right / self.cases if self.cases else 1.0

    @property
    def rank_accuracy(self) -> float:
        return self.rank_right / self.ranked if self.ranked else 1.0


def score(outs: tuple[Outcome, ...] | list[Outcome]) -> Score:
    """Count the figures over a list of outcomes."""
    ranked = [o for o in outs if o.rank != -1]
    unranked = [o for o in outs if o.rank == -1]
    return Score(
        cases=len(outs),
        category_right=sum(o.category_ok for o in outs),
        ranked=len(ranked),
        rank_right=sum(o.rank_ok for o in ranked),
        unranked=len(unranked),
        null_right=sum(o.rank_ok for o in unranked),
        wrong_accusations=sum(o.wrong_accusation for o in outs),
        crashes=sum(o.error is not None for o in outs),
        possible_apart=sum(o.possible_apart for o in outs),
    )


def report(outs: tuple[Outcome, ...] | list[Outcome]) -> str:
    """Totals, per-category table and the per-case diff of every case the tool got wrong."""
    s = score(outs)
    lines = [
        f"wild corpus: {s.cases} cases",
        f"  category accuracy: {s.category_right}/{s.cases} ({s.category_accuracy:.1%})",
        f"  rank accuracy (rank known): {s.rank_right}/{s.ranked} ({s.rank_accuracy:.1%})",
        f"  rank left null (rank unknown): {s.null_right}/{s.unranked}",
        f"  wrong accusations: {s.wrong_accusations}",
        f"  possible ranks the label does not confirm (apart): {s.possible_apart}",
        f"  crashes: {s.crashes}",
        "",
        f"  {'category':<20} {'cases':>5} {'right':>5} {'rank':>9}",
    ]
    by_cat: dict[str, list[Outcome]] = {}
    for o in outs:
        by_cat.setdefault(o.category, []).append(o)
    for cat in sorted(by_cat):
        group = by_cat[cat]
        ranked = [o for o in group if o.rank != -1]
        rk = f"{sum(o.rank_ok for o in ranked)}/{len(ranked)}" if ranked else "-"
        right = sum(o.category_ok for o in group)
        lines.append(f"  {cat:<20} {len(group):>5} {right:>5} {rk:>9}")
    wrong = Counter(o.got_category for o in outs if not o.category_ok)
    if wrong:
        lines.append("  wrong answers by tool category: " + ", ".join(
            f"{k} {n}" for k, n in wrong.most_common()
        ))
    lines.append("")
    for o in outs:
        if o.category_ok and o.rank_ok:
            continue
        exp_rank = "null" if o.rank == -1 else str(o.rank)
        got_rank = "null" if o.got_rank is None else str(o.got_rank)
        marks = []
        if not o.category_ok:
            marks.append("category")
        if not o.rank_ok:
            marks.append(
                "WRONG-ACCUSATION" if o.wrong_accusation
                else "possible, apart" if o.possible_apart else "rank"
            )
        lines.append(
            f"  ✗ {o.name}: expected {o.category}/{exp_rank}, got {o.got_category}/{got_rank}"
            f" [{o.pattern or '-'}] ({', '.join(marks)})"
        )
        if o.error:
            lines.append(f"      {o.error}")
    return "\n".join(lines)


def floors() -> dict[str, float]:
    """The recorded floors (and the wrong-accusation ceiling)."""
    return tomllib.loads(FLOORS.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def corpus(request: pytest.FixtureRequest) -> Score:
    outs = outcomes()
    if not outs:
        pytest.skip("no wild cases")
    text = report(outs)
    tr = request.config.pluginmanager.getplugin("terminalreporter")
    if tr is not None:
        tr.write_line("")
        for line in text.splitlines():
            tr.write_line(line)
    else:
        print(text)
    return score(outs)


def test_no_case_crashes(corpus: Score) -> None:
    bad = [f"{o.name}: {o.error}" for o in outcomes() if o.error]
    assert not bad, bad


def test_category_accuracy_at_least_floor(corpus: Score) -> None:
    assert corpus.category_accuracy >= floors()["category_accuracy"], report(outcomes())


def test_rank_accuracy_at_least_floor(corpus: Score) -> None:
    assert corpus.rank_accuracy >= floors()["rank_accuracy"], report(outcomes())


def test_wrong_accusations_at_most_ceiling(corpus: Score) -> None:
    assert corpus.wrong_accusations <= floors()["max_wrong_accusations"], report(outcomes())


def test_every_case_is_labelled() -> None:
    """A case needs a source, a category from the contract and a rank (-1 when unknown)."""
    from analyzer.catalog.vocabulary import CATEGORIES

    for case in cases():
        exp = tomllib.loads((case / "expected.toml").read_text(encoding="utf-8"))
        src = exp.get("source", "")
        urls = src if isinstance(src, list) else [src]
        assert all(u.startswith("http") for u in urls), case.name
        assert exp["category"] in CATEGORIES, (case.name, exp["category"])
        assert isinstance(exp.get("first_failing_rank", -1), int), case.name
        assert any(p.name != "expected.toml" for p in case.iterdir()), f"{case.name}: no log"


def test_scoring_counts_wrong_accusations_and_null_ranks() -> None:
    outs = [
        Outcome("a", "host_oom", 3, "host_oom", 3, None),  # right
        Outcome("b", "host_oom", 3, "host_oom", None, None),  # rank missed, no accusation
        Outcome("c", "config", -1, "config", 0, None),  # named a rank where none is known
        Outcome("d", "nccl_error", 2, "network", 5, None),  # another rank accused
        Outcome("e", "config", -1, "none", None, None),  # null rank is right here
    ]
    s = score(outs)
    assert (s.category_right, s.ranked, s.rank_right) == (3, 3, 1)
    assert (s.unranked, s.null_right, s.wrong_accusations) == (2, 1, 2)
    text = report(outs)
    assert "✗ d: expected nccl_error/2, got network/5" in text
    assert "WRONG-ACCUSATION" in text and "✗ a:" not in text


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    print(report(outcomes()))

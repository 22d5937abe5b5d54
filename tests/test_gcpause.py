"""The cyclic garbage collector is paused while a job is analysed (``analyzer.util.gcpause``): safe
only because the analysis makes no reference cycles, which these tests check on every
bundled job."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from analyzer import analyze
from analyzer.cli.commands import main
from analyzer.report import render
from analyzer.util.gcpause import paused_gc, without_gc
from tests.helpers import ROOT, builtin_catalog

JOBS = sorted(
    p for kind in ("real", "formats") for p in (ROOT / "sample_logs" / kind).iterdir() if p.is_dir()
)
CATALOG = builtin_catalog()


@pytest.fixture
def collector() -> Iterator[None]:
    """The collector on, with nothing pending; its state as before afterwards."""
    was = gc.isenabled()
    gc.collect()
    gc.enable()
    yield
    if not was:
        gc.disable()


@pytest.mark.parametrize("job", JOBS, ids=[p.name for p in JOBS])
def test_an_analysis_leaves_no_cycles_behind(job: Path, collector: None) -> None:
    with paused_gc():
        a = analyze(job, catalog=CATALOG, workers=1)
        assert a.diagnosis.status
        del a
        assert gc.collect() == 0  # every object it dropped was freed by reference counting
        a = analyze(job, catalog=CATALOG, workers=1)
        for fmt in ("json", "terminal", "html"):
            assert render(a, fmt)
        del a
        # A report leaves a fixed few: each indented ``json.dumps`` its recursive encoder
        # closures (31 objects), never anything per event.
        assert gc.collect() <= 3 * 31


def test_analyze_and_its_diagnosis_run_with_the_collector_paused(
    collector: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import analyzer.api as api

    seen: dict[str, bool] = {}

    def spy(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            seen[name] = gc.isenabled()
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(api, "read_job", spy("read", api.read_job))
    monkeypatch.setattr(api, "diagnose_rows", spy("diagnose", api.diagnose_rows))
    a = analyze(ROOT / "sample_logs/real/exception-cascade", catalog=CATALOG, workers=1)
    assert gc.isenabled()  # as it was before the call
    assert a.diagnosis.verdict.category == "python_exception"
    assert seen == {"read": False, "diagnose": False}
    assert gc.isenabled()


def test_the_command_line_pauses_the_collector_but_not_for_triage(
    collector: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, bool] = {}
    import analyzer.cli.commands as cli

    class Command:
        def main(self, *, args: list[str], **_kw: object) -> int:
            seen[args[0]] = gc.isenabled()
            return 0

    monkeypatch.setattr(cli, "command", Command)
    for argv in (["sample_logs/real/exception-cascade"], ["events", "x"], ["triage", "x"]):
        with pytest.raises(SystemExit):
            main(argv)
    assert seen == {"sample_logs/real/exception-cascade": False, "events": False, "triage": True}
    assert gc.isenabled()


def test_paused_gc_nests_and_restores_after_an_exception(collector: None) -> None:
    with paused_gc():
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still holds it
    assert gc.isenabled()
    with pytest.raises(KeyError), paused_gc():
        raise KeyError("x")
    assert gc.isenabled()
    gc.disable()
    with paused_gc():
        pass
    assert not gc.isenabled()  # off before, off after
    gc.enable()


def test_without_gc_keeps_the_function_and_its_result() -> None:
    @without_gc
    def state(x: int) -> tuple[int, bool]:
        """Doc."""
        return x, gc.isenabled()

    assert state(3) == (3, False) and state.__doc__ == "Doc." and state.__name__ == "state"

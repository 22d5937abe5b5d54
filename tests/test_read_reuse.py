"""Triage reads hundreds of jobs with one catalog: the scanner (its compiled prefilter) is
built once per catalog, and reusing it changes no result. A job's events share the values they
repeat (``read._Shared``)."""

from __future__ import annotations

from pathlib import Path

from analyzer.api import analyze
from analyzer.catalog.load import load_catalog
from analyzer.catalog.model import Catalog
from analyzer.read.discover import discover
from analyzer.read.job import read_job, scanner_for
from tests.helpers import REAL


def test_one_scanner_per_catalog() -> None:
    cat = load_catalog([])
    assert scanner_for(cat) is scanner_for(cat)
    other = load_catalog([])
    assert scanner_for(other) is not scanner_for(cat)
    assert scanner_for(other).catalog is other


def test_a_reused_scanner_gives_the_same_rows() -> None:
    cat = load_catalog([])
    jobs = ["exception-cascade", "sigkill-rank", "exception-cascade"]
    shared = [analyze(REAL / j, catalog=cat, workers=1) for j in jobs]
    fresh = [analyze(REAL / j, catalog=load_catalog([]), workers=1) for j in jobs]
    for a, b in zip(shared, fresh, strict=True):
        assert [r.structural() for r in a.rows] == [r.structural() for r in b.rows]
        assert a.diagnosis.verdict.as_dict() == b.diagnosis.verdict.as_dict()


def test_threads_never_share_a_scanner() -> None:
    """A scanner keeps caches: each thread gets its own for the same catalog."""
    import threading

    cat = load_catalog([])
    mine = scanner_for(cat)
    theirs: list[object] = []
    t = threading.Thread(target=lambda: theirs.append(scanner_for(cat)))
    t.start()
    t.join()
    assert theirs and theirs[0] is not mine
    assert scanner_for(cat) is mine


def test_equal_captures_are_one_dict_and_others_are_not(tmp_path: Path, catalog: Catalog) -> None:
    line = "node{n}:1234:1234 [0] NCCL INFO NCCL version {v}\n"
    for n, v in enumerate(["2.21.5+cuda12.4", "2.21.5+cuda12.4", "2.21.5+cuda12.4", "2.26.2"]):
        (tmp_path / f"rank{n}.log").write_text(line.format(n=n, v=v))
    rr = read_job(discover([tmp_path]), catalog, workers=1)
    fields = [e.fields for s in rr.scans for e in s.events if e.pattern_id == "nccl.ctx.version"]
    assert [f["nccl_version"] for f in fields] == ["2.21.5+cuda12.4"] * 3 + ["2.26.2"]
    assert fields[0] is fields[1] is fields[2]
    assert fields[3] is not fields[0]

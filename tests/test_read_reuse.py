"""Triage reads hundreds of jobs with one catalog: the scanner (its compiled prefilter) is
built once per catalog, and reusing it changes no result. A job's events share the values they
repeat (``read._Shared``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.catalog.load import load_catalog
from analyzer.catalog.model import Catalog
from analyzer.read.discover import discover
from analyzer.read.readjob import read_job, scanner_for
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


def test_the_captures_table_is_bounded_and_sharing_goes_on(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``_Shared`` forgets its captures when the table is full (its keys cost more than the
    dicts they share where most are distinct); captures that recur are shared again after."""
    import analyzer.read.readjob as read_mod

    monkeypatch.setattr(read_mod, "SHARED_CAPTURES", 2)
    line = "node{n}:1234:1234 [0] NCCL INFO NCCL version {v}\n"
    versions = ["2.21.5", "2.22.3", "2.23.4", "2.21.5", "2.21.5"]
    for n, v in enumerate(versions):
        (tmp_path / f"rank{n}.log").write_text(line.format(n=n, v=v))
    shared = read_mod._Shared()
    scans = [read_mod.scanner_for(catalog).scan(lf) for lf in discover([tmp_path]).files]
    for sc in scans:
        shared.scans([sc])
        assert len(shared._captures) <= 2
    fields = [e.fields for sc in scans for e in sc.events if e.pattern_id == "nccl.ctx.version"]
    assert [f["nccl_version"] for f in fields] == versions
    assert fields[0] is not fields[3], "forgotten when the third version filled the table"
    assert fields[3] is fields[4], "shared again after"


def test_a_read_shares_nccls_host_and_pid(tmp_path: Path, catalog: Catalog) -> None:
    """NCCL's host and pid are one object per value across a job's events; a scan without a
    dated line holds the one empty set of years."""
    lines = "".join(
        f"node7:4242:4242 [0] NCCL INFO comm 0x{c}0 rank 1{c}00 nranks 8192 cudaDev 0 "
        f"nvmlDev 0 busId 1000 commId 0x{c} - Init COMPLETE\n"
        for c in range(1, 4)
    )
    (tmp_path / "a.log").write_text(lines)
    (tmp_path / "b.log").write_text(lines)
    rr = read_job(discover([tmp_path]), catalog, workers=1)
    evs = [e for sc in rr.scans for e in sc.events]
    assert len(evs) == 6 and {e.nccl_host for e in evs} == {"node7"}
    assert all(e.nccl_host is evs[0].nccl_host and e.nccl_pid is evs[0].nccl_pid for e in evs)
    assert not rr.scans[0].years and rr.scans[0].years is rr.scans[1].years  # one empty set


def test_a_forked_worker_uses_its_parents_scanner(catalog: Catalog) -> None:
    """``_read_parallel`` builds this process's scanner before the workers fork: a worker for
    the same catalog takes it (no second compilation), one for another catalog builds one."""
    import analyzer.read.readjob as read_mod

    mine = scanner_for(catalog)
    try:
        read_mod._init_worker(catalog)
        assert read_mod._worker_scanner is mine
        other = load_catalog([])
        read_mod._init_worker(other)
        assert read_mod._worker_scanner is not mine
        assert read_mod._worker_scanner is not None
        assert read_mod._worker_scanner.catalog is other
    finally:
        import gc

        gc.enable()  # _init_worker turns it off (a worker's whole life)
        read_mod._worker_scanner = None

"""Flight Recorder dumps: read safely, compared by majority, joined to the hang verdict."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import tomllib
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from analyzer import analyze
from analyzer.cli.commands import main
from analyzer.decide.flightrec import culprit_row, evidence_rows, table_lines
from analyzer.flightrec import load as fr_load
from analyzer.flightrec.analyze import analyze_dumps, build_groups, parse_ranks
from analyzer.flightrec.load import Dump, DumpError, DumpSet, load_dump, load_dumps, parse_dump
from analyzer.flightrec.rules import RULES
from analyzer.model.event import Event
from analyzer.read.discover import discover

REPO = Path(__file__).resolve().parent.parent
_EVENT_FIELDS = [f.name for f in fields(Event)]
FR_SAMPLES = sorted(p for p in (REPO / "sample_logs" / "real").glob("fr-*") if p.is_dir())


# ------------------------------------------------------------------------------------------
# security: a pickle is never run, and size and nesting are bounded
# ------------------------------------------------------------------------------------------
class _Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def _evil_dump(marker: Path) -> bytes:
    return pickle.dumps({"version": "2.10", "entries": [_Evil(marker)]}, protocol=2)


def test_malicious_pickle_is_refused_without_running(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    data = _evil_dump(marker)
    # the payload is real: plain pickle.loads would create the marker (not called here)
    assert b"system" in data
    with pytest.raises(DumpError, match=r"refers to (posix|os|nt)\.system.*not run"):
        parse_dump(data)
    assert not marker.exists()


def test_malicious_dump_in_a_job_dir_is_a_problem_line_not_a_run(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    job = tmp_path / "job"
    job.mkdir()
    (job / "slurm-1.out").write_text("[rank0]: hello\n")
    (job / "nccl_trace_rank_0").write_bytes(_evil_dump(marker))
    a = analyze(job)
    d = a.diagnosis
    assert not marker.exists()
    assert any("nccl_trace_rank_0" in p and "not run" in p for p in d.problems)
    assert a.flightrec is not None and a.flightrec.rank is None


@pytest.mark.parametrize(
    "payload",
    [
        b"\x80\x02cbuiltins\neval\nX\x06\x00\x00\x001+1==2\x85R.",  # GLOBAL + REDUCE
        pickle.dumps(os.system, protocol=4),  # STACK_GLOBAL
        b"\x80\x02X\x01\x00\x00\x00aQ.",  # BINPERSID
    ],
)
def test_any_global_or_persistent_id_is_refused(payload: bytes) -> None:
    with pytest.raises(DumpError, match="not run"):
        parse_dump(payload)


def test_sets_and_other_non_plain_values_are_refused() -> None:
    data = pickle.dumps({"version": "1", "entries": [frozenset({1})]}, protocol=4)
    with pytest.raises(DumpError, match="not plain data"):
        parse_dump(data)


def test_huge_dump_is_refused_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fr_load, "MAX_DUMP_BYTES", 1000)
    p = tmp_path / "x_trace_rank_0"
    p.write_bytes(pickle.dumps({"version": "2.10", "entries": ["a" * 5000]}, protocol=2))
    with pytest.raises(DumpError, match="over the"):
        load_dump(p)


def test_deeply_nested_pickle_is_bounded() -> None:
    depth = 100_000
    # EMPTY_LIST x depth, then APPEND x (depth-1): each list goes into the one below it
    data = b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."
    with pytest.raises(DumpError, match="nested deeper"):
        parse_dump(data)


def test_deeply_nested_json_is_bounded() -> None:
    data = b'{"entries": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(DumpError, match="nested deeper"):
        parse_dump(data)


def test_shared_references_cannot_blow_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fr_load, "MAX_ITEMS", 10_000)
    inner: list[Any] = list(range(200))
    data = pickle.dumps({"version": "1", "entries": [inner] * 200}, protocol=2)
    assert len(data) < 5_000  # memo references: a small file that expands to 40,000 values
    with pytest.raises(DumpError, match="more than"):
        parse_dump(data)


def test_truncated_and_garbage_dumps_give_one_line(tmp_path: Path) -> None:
    good = pickle.dumps({"version": "2.10", "entries": [{"a": 1}] * 50}, protocol=2)
    with pytest.raises(DumpError, match="truncated or corrupt pickle"):
        parse_dump(good[: len(good) // 2])
    with pytest.raises(DumpError, match="truncated or corrupt JSON"):
        parse_dump(b'{"entries": [1, 2')
    with pytest.raises(DumpError, match="not a Flight Recorder dump"):
        parse_dump(b"hello")
    with pytest.raises(DumpError, match="no 'entries'"):
        parse_dump(pickle.dumps({"version": "1"}, protocol=2))


def test_ranks_text_is_parsed_never_evaluated() -> None:
    assert parse_ranks("[0, 1, 2, 3]") == [0, 1, 2, 3]
    assert parse_ranks("[]") == []
    assert parse_ranks([4, 5]) == [4, 5]
    assert parse_ranks("__import__('os').system('true')") is None
    assert parse_ranks("[0, 1] + [2]") is None


# ------------------------------------------------------------------------------------------
# analysis on small constructed dumps
# ------------------------------------------------------------------------------------------
def _e(
    seq: int,
    op: str = "all_reduce",
    size: int = 4,
    t: float = 0.0,
    pg: str = "0",
    desc: str = "default_pg",
    **kw: Any,
) -> dict[str, Any]:
    e = {
        "record_id": seq - 1,
        "pg_id": int(pg) if pg.isdigit() else 0,
        "process_group": (pg, desc),
        "collective_seq_id": seq,
        "p2p_seq_id": 0,
        "op_id": seq,
        "profiling_name": f"nccl:{op}",
        "time_created_ns": int(1.8e18 + t * 1e9 + seq * 1e6),
        "input_sizes": [[size]],
        "output_sizes": [[size]],
        "input_dtypes": ["Float"],
        "output_dtypes": ["Float"],
        "state": "scheduled",
        "retired": False,
        "is_p2p": False,
        "timeout_ms": 600_000,
        "frames": [
            {"name": op, "filename": "/x/torch/distributed/distributed_c10d.py", "line": 1},
            {"name": "step", "filename": "/job/train.py", "line": 42},
        ],
    }
    e.update(kw)
    return e


def _dumps(per_rank: dict[int, list[dict[str, Any]]], ranks: str | None = None) -> DumpSet:
    ds = DumpSet()
    for r, entries in per_rank.items():
        cfg = {"0": {"name": "0", "desc": "default_pg", "ranks": ranks}} if ranks else {}
        ds.dumps[r] = Dump(r, f"nccl_trace_rank_{r}", "pickle", "2.10", entries, cfg)
    return ds


def test_missing_rank_is_named() -> None:
    ds = _dumps({r: [_e(s) for s in range(1, 6 if r != 2 else 5)] for r in range(4)})
    f = analyze_dumps(ds)
    assert (f.rank, f.kind, f.seq) == (2, "missing", 5)
    assert "never enqueued collective #5" in f.reason
    state = {s.rank: s for s in f.table}
    assert state[2].op_at_stuck is None and state[0].op_at_stuck == "all_reduce"


def test_op_mismatch_blames_the_odd_one_even_when_it_is_the_first_file() -> None:
    # torchfrtrace takes the first file as the reference and would blame ranks 1-3
    per = {r: [_e(1), _e(2, "all_reduce")] for r in range(4)}
    per[0][1] = _e(2, "broadcast")
    f = analyze_dumps(_dumps(per))
    assert (f.rank, f.kind, f.op, f.others_op) == (0, "mismatch", "broadcast", "all_reduce")
    assert f.stack and "train.py:42 in step" in f.stack[1]
    assert "train.py:42 in step" in f.reason


def test_size_mismatch_by_majority() -> None:
    per = {r: [_e(1), _e(2, size=8 if r == 3 else 4)] for r in range(4)}
    f = analyze_dumps(_dumps(per))
    assert (f.rank, f.kind, f.seq) == (3, "mismatch", 2)
    assert "[[8]]" in f.reason and "[[4]]" in f.reason


def test_sizes_of_all_to_all_may_differ() -> None:
    per = {r: [_e(1, "all_to_all", size=r + 1)] for r in range(4)}
    assert analyze_dumps(_dumps(per)).rank is None


def test_two_ranks_that_differ_have_no_majority() -> None:
    per = {0: [_e(1, "all_reduce")], 1: [_e(1, "broadcast")]}
    f = analyze_dumps(_dumps(per))
    assert f.rank is None and "no majority" in f.reason


def test_late_rank_is_named_from_creation_times() -> None:
    per = {r: [_e(1), _e(2, t=40.0 if r == 1 else 0.0)] for r in range(4)}
    f = analyze_dumps(_dumps(per))
    assert (f.rank, f.kind) == (1, "late")
    assert "40.0 s after" in f.reason
    assert {s.rank: s.created_offset_s for s in f.table}[1] == pytest.approx(40.0, abs=0.01)


def test_small_skew_is_not_lateness() -> None:
    per = {r: [_e(1), _e(2, t=1.0 if r == 1 else 0.0)] for r in range(4)}
    assert analyze_dumps(_dumps(per)).rank is None


def test_furthest_behind_when_several_lag() -> None:
    last = {0: 9, 1: 9, 2: 9, 3: 9, 4: 9, 5: 4, 6: 7}
    per = {r: [_e(s) for s in range(1, n + 1)] for r, n in last.items()}
    f = analyze_dumps(_dumps(per))
    assert (f.rank, f.kind) == (5, "behind")
    assert "ranks 5, 6 never enqueued" in f.reason


def test_missing_dump_is_named_only_when_the_dumps_agree() -> None:
    per = {r: [_e(1), _e(2)] for r in (0, 1, 3)}
    f = analyze_dumps(_dumps(per), world={0, 1, 2, 3})
    assert (f.rank, f.kind) == (2, "no_dump")
    assert f.ranks_without_dumps == [2]
    assert any("no dump from rank 2" in n for n in f.notes)


def test_gloo_empty_config_key_is_repaired_from_the_entries() -> None:
    ds = DumpSet()
    for r in range(4):
        entries = [_e(1, pg="0", desc="default_pg")]
        if r in (2, 3):
            entries.append(_e(1, pg="1", desc="undefined"))
        cfg = {"": {"name": "", "desc": "", "ranks": "[]"}}
        ds.dumps[r] = Dump(r, f"gloo_trace_rank_{r}", "pickle", "2.10", entries, cfg)
    groups, notes = build_groups(ds)
    assert groups["0"].members == [0, 1, 2, 3]
    assert groups["1"].members == [2, 3]
    assert groups["1"].local_rank(3) == 1
    assert any("keyed by ''" in n for n in notes)


def test_group_local_ranks_map_to_global_through_pg_config() -> None:
    ds = DumpSet()
    for r in (4, 5, 6, 7):
        n = 2 if r == 6 else 3
        entries = [_e(s, pg="tp1", desc="TENSOR_MODEL_PARALLEL_GROUP") for s in range(1, n + 1)]
        cfg = {
            "tp1": {"name": "tp1", "desc": "TENSOR_MODEL_PARALLEL_GROUP", "ranks": "[4, 5, 6, 7]"}
        }
        ds.dumps[r] = Dump(r, f"nccl_trace_rank_{r}", "pickle", "2.10", entries, cfg)
    f = analyze_dumps(ds)
    assert (f.rank, f.kind) == (6, "missing")
    assert "group-local rank 2" in f.reason
    assert {s.rank: s.local_rank for s in f.table} == {4: 0, 5: 1, 6: 2, 7: 3}


def test_json_and_pickle_dumps_compare_equal(tmp_path: Path) -> None:
    entries = [_e(1)]
    pk = {
        "version": "2.10",
        "entries": entries,
        "pg_config": {},
        "pg_status": {
            "0": {
                "last_enqueued_collective": 1,
                "last_started_collective": -1,
                "last_completed_collective": 1,
            }
        },
    }
    js = json.loads(json.dumps(pk))  # tuples become lists, as _dump_fr_trace_json writes them
    js["pg_status"]["0"] = {k: str(v) for k, v in js["pg_status"]["0"].items()}
    (tmp_path / "x_trace_rank_0").write_bytes(pickle.dumps(pk, protocol=2))
    (tmp_path / "x_trace_rank_1.json").write_text(json.dumps(js))
    ds = load_dumps([(p, p.name) for p in sorted(tmp_path.iterdir())])
    assert {d.fmt for d in ds.dumps.values()} == {"pickle", "json"}
    f = analyze_dumps(ds)
    assert f.rank is None
    assert [s.last_enqueued for s in f.table] == [1, 1]
    assert [s.last_started for s in f.table] == [None, None]


def test_table_lines_mark_the_culprit() -> None:
    ds = _dumps({r: [_e(s) for s in range(1, 4 if r != 1 else 3)] for r in range(3)})
    lines = table_lines(analyze_dumps(ds))
    assert lines[0].split()[:5] == ["rank", "group", "enqueued", "started", "completed"]
    assert any(line.strip().startswith("1 ") and "culprit" in line for line in lines)


def test_every_rule_says_when_it_applies() -> None:
    assert len({r.id for r in RULES}) == len(RULES)
    assert all((r.check.__doc__ or "").startswith("Applies ") for r in RULES)


def test_the_hang_reasoning_reads_the_typed_finding_not_the_row() -> None:
    ds = _dumps({r: [_e(s) for s in range(1, 4 if r != 1 else 3)] for r in range(3)})
    f = analyze_dumps(ds)
    rows = evidence_rows(f, [])
    row = culprit_row(rows)
    assert row is not None and row.finding is f and row.rank == f.rank == 1
    assert row.pattern_id == f"flight_recorder.culprit.{f.kind}"
    # a plain row that only looks like the culprit's (same id and captures) names nobody
    lookalike = Event(**{k: getattr(row, k) for k in _EVENT_FIELDS})
    assert culprit_row([lookalike]) is None
    assert culprit_row([replace(row, attempt=2)]) is not None  # a changed copy keeps it


# ------------------------------------------------------------------------------------------
# discovery and the recorded jobs
# ------------------------------------------------------------------------------------------
def test_dumps_are_found_not_skipped_as_binary() -> None:
    disc = discover([REPO / "sample_logs" / "real" / "fr-wrong-op"])
    assert sorted(rel for _p, rel in disc.fr_dumps) == [f"fr/gloo_trace_rank_{r}" for r in range(4)]
    assert not [s for s in disc.skipped if "trace_rank" in s[0]]


def test_a_pickle_with_a_log_name_is_still_recognised(tmp_path: Path) -> None:
    src = REPO / "sample_logs" / "real" / "fr-wrong-op" / "fr" / "gloo_trace_rank_0"
    shutil.copy(src, tmp_path / "dump.log")
    disc = discover([tmp_path])
    assert [rel for _p, rel in disc.fr_dumps] == ["dump.log"]


def _expected(d: Path) -> dict[str, Any]:
    return tomllib.loads((d / "expected.toml").read_text())


def test_there_are_recorded_fr_jobs() -> None:
    assert len(FR_SAMPLES) >= 5
    assert all(_expected(d).get("flight_recorder") for d in FR_SAMPLES)


@pytest.mark.parametrize("sample", FR_SAMPLES, ids=lambda p: p.name)
def test_recorded_job_culprit_from_the_dumps(sample: Path) -> None:
    exp = _expected(sample)
    a = analyze(sample)
    assert a.flightrec is not None
    assert a.flightrec.rank == exp["rank"], a.flightrec.reason
    assert a.flightrec.versions == ["2.10"]
    v = a.diagnosis.verdict
    assert (v.category, v.rank, v.node) == (exp["category"], exp["rank"], exp["node"])
    assert "Flight Recorder" in (v.rank_note or "")
    assert a.diagnosis.as_dict()["flight_recorder"]["rank"] == exp["rank"]
    fr_rows = a.events.filter(a.events["source"] == "flight_recorder")
    assert fr_rows.height >= 4


@pytest.mark.parametrize("sample", FR_SAMPLES, ids=lambda p: p.name)
def test_recorded_job_logs_alone(sample: Path, tmp_path: Path) -> None:
    exp = _expected(sample)
    job = tmp_path / sample.name
    shutil.copytree(sample, job, ignore=shutil.ignore_patterns("fr", "fr-json"))
    a = analyze(job)
    assert a.flightrec is None
    v = a.diagnosis.verdict
    want = exp["logs_only_rank"]
    assert v.category == "collective_timeout"
    assert v.rank == (None if want == -1 else want), v.cause


def test_fr_option_reads_dumps_kept_elsewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = REPO / "sample_logs" / "real" / "fr-size-bigger"
    job = tmp_path / "job"
    shutil.copytree(sample, job, ignore=shutil.ignore_patterns("fr", "fr-json"))
    dumps = tmp_path / "fr_trace"
    shutil.copytree(sample / "fr", dumps)
    with pytest.raises(SystemExit) as ex:
        main([str(job), "--fr", str(dumps), "-f", "json"])
    assert ex.value.code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"]["rank"] == 1
    assert out["flight_recorder"]["kind"] == "mismatch"


def test_terminal_report_shows_the_sequence_table() -> None:
    from analyzer.report import render

    text = render(analyze(REPO / "sample_logs" / "real" / "fr-rank-stops"), "text")
    assert "Flight Recorder (per rank, stuck process group)" in text
    assert "← culprit" in text
    md = render(analyze(REPO / "sample_logs" / "real" / "fr-rank-stops"), "markdown")
    assert "## Flight Recorder" in md


def test_recorded_rank_stops_has_json_twins_and_uses_the_pickles() -> None:
    a = analyze(REPO / "sample_logs" / "real" / "fr-rank-stops")
    assert a.flightrec is not None
    assert any("JSON dump(s) duplicate" in n for n in a.flightrec.notes)
    assert a.flightrec.stack  # frames come from the pickles


# ------------------------------------------------------------------------------------------
# real dumps with a dump taken away, and malformed dumps
# ------------------------------------------------------------------------------------------
def _job_without(sample: str, ranks: set[int], tmp_path: Path) -> Path:
    job = tmp_path / sample
    shutil.copytree(REPO / "sample_logs" / "real" / sample, job)
    shutil.rmtree(job / "fr-json", ignore_errors=True)
    for r in ranks:
        (job / "fr" / f"gloo_trace_rank_{r}").unlink()
    return job


def test_culprit_without_its_dump_is_named_as_the_one_without(tmp_path: Path) -> None:
    # what gloo does when a size mismatch aborts the culprit: no dump from it
    a = analyze(_job_without("fr-size-smaller", {2}, tmp_path))
    assert a.flightrec is not None
    assert (a.flightrec.rank, a.flightrec.kind) == (2, "no_dump")
    assert a.flightrec.ranks_without_dumps == [2]


def test_a_healthy_rank_without_a_dump_changes_nothing(tmp_path: Path) -> None:
    a = analyze(_job_without("fr-wrong-op", {0}, tmp_path))
    assert a.flightrec is not None
    assert (a.flightrec.rank, a.flightrec.kind) == (2, "mismatch")
    assert any("no dump from rank 0" in n for n in a.flightrec.notes)


def test_a_truncated_dump_is_a_problem_and_the_rest_still_counts(tmp_path: Path) -> None:
    job = _job_without("fr-wrong-op", set(), tmp_path)
    p = job / "fr" / "gloo_trace_rank_3"
    p.write_bytes(p.read_bytes()[:700])
    a = analyze(job)
    assert a.flightrec is not None and a.flightrec.rank == 2
    assert any("gloo_trace_rank_3" in x and "truncated" in x for x in a.diagnosis.problems)


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 40), st.text(max_size=5), st.floats(allow_nan=True)
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_entry = st.fixed_dictionaries(
    {},
    optional={
        "collective_seq_id": st.one_of(st.integers(-2, 6), st.text(max_size=2), st.none()),
        "process_group": st.one_of(
            st.tuples(st.sampled_from(["0", "1", ""]), st.text(max_size=3)), _values
        ),
        "profiling_name": st.one_of(
            st.sampled_from(["nccl:all_reduce", "gloo:broadcast"]), _values
        ),
        "input_sizes": _values,
        "output_sizes": _values,
        "input_dtypes": _values,
        "time_created_ns": st.one_of(st.integers(0, 2**62), _values),
        "timeout_ms": _values,
        "frames": _values,
        "is_p2p": _values,
        "pg_id": _values,
        "record_id": _values,
    },
)


@settings(max_examples=150, deadline=None)
@example(per={0: [{"collective_seq_id": "²"}]}, cfg={})  # "²".isdigit(), yet int("²") raises
@example(per={0: [{"record_id": "0\x1f"}]}, cfg={})  # strip() takes \x1f, int() does not
@given(
    st.dictionaries(st.integers(0, 5), st.lists(_entry, max_size=6), min_size=1, max_size=4),
    st.dictionaries(st.text(max_size=3), _values, max_size=2),
)
def test_malformed_entries_never_raise(per: dict[int, list[dict[str, Any]]], cfg: Any) -> None:
    ds = DumpSet()
    for r, entries in per.items():
        pg_config = {k: v for k, v in cfg.items() if isinstance(v, dict)}
        ds.dumps[r] = Dump(r, f"x_trace_rank_{r}", "pickle", "2.10", entries, pg_config)
    f = analyze_dumps(ds, world={0, 1, 2, 3})
    table_lines(f)
    json.dumps(f.as_dict(), default=str)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_values, _values, _values), min_size=2, max_size=5))
def test_odd_sizes_and_dtypes_at_one_seq_never_raise(shapes: list[tuple[Any, Any, Any]]) -> None:
    per = {
        r: [_e(1, input_sizes=i, output_sizes=o, input_dtypes=d)]
        for r, (i, o, d) in enumerate(shapes)
    }
    f = analyze_dumps(_dumps(per))
    table_lines(f)
    json.dumps(f.as_dict(), default=str)


def test_huge_sequence_ids_are_not_iterated() -> None:
    per = {r: [_e(1), _e(10**15 if r == 0 else 2)] for r in range(3)}
    f = analyze_dumps(_dumps(per))  # returns at once
    assert f.rank is None
    assert "only rank 0 enqueued collective #1000000000000000" in f.reason

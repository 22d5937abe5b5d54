"""Failures no pattern knows: candidate lines, templates, ranking, the inferred verdict,
``--baseline GOOD_RUN``, triage grouping by template, ``patterns suggest`` round trip, and the
false-alarm rate on every sample job."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from analyzer.api import analyze
from analyzer.catalog.vocabulary import info
from analyzer.cli.commands import app
from analyzer.decide.reason import ReadSummary, diagnose_rows
from analyzer.decide.unknown import (
    group,
    infer,
    rank_templates,
    split_candidates,
    template_fingerprint,
    template_of,
)
from analyzer.decide.verdict import Verdict
from analyzer.lines.prefixes import split_prefixes
from analyzer.model.event import Event
from tests.helpers import REAL, SAMPLES, WILD, builtin_catalog

JOB1 = REAL / "unknown-loader-fatal"
JOB2 = REAL / "unknown-loader-fatal-again"
GOOD = REAL / "clean-success"
CATALOG = builtin_catalog()
LINE1 = (
    "shardio: FATAL: corrupt record header in /data/tokens/train-00011.bin at offset 2150400 "
    "(crc 0xdef57c79 != 0x00000000); cannot continue"
)
LINE2 = (
    "shardio: FATAL: corrupt record header in /data/tokens/train-00020.bin at offset 3227648 "
    "(crc 0x32bda30c != 0x00000000); cannot continue"
)
T0 = datetime(2026, 12, 3, 10, 0, 0)


def _expected(d: Path) -> dict[str, Any]:
    return tomllib.loads((d / "expected.toml").read_text())


# ------------------------------------------------------------------------------------------
# the catalog's candidate role
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "srun: error: node001: task 1: Exited with exit code 1",
        "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered",
        "Fatal Python error: Segmentation fault",
    ],
)
def test_a_catalog_pattern_wins_over_a_candidate(line: str) -> None:
    msg = split_prefixes(line).message
    roles = {pm.pattern.role for pm in CATALOG.match_all(msg)}
    assert "candidate" in roles, "the line is also candidate-like (else the test proves nothing)"
    kept = CATALOG.match(msg)
    assert kept is not None and kept.pattern.role != "candidate", kept.pattern.id


def test_the_unknown_line_is_a_candidate() -> None:
    kept = CATALOG.match(LINE1)
    assert kept is not None
    assert (kept.pattern.id, kept.pattern.role) == ("candidates.fatal", "candidate")


# ------------------------------------------------------------------------------------------
# templates and fingerprints
# ------------------------------------------------------------------------------------------


def test_template_masks_the_variable_parts() -> None:
    t = template_of(LINE1)
    assert t == (
        "shardio: FATAL: corrupt record header in <path> at offset <n> (crc <hex> != <hex>); "
        "cannot continue"
    )
    assert template_of(LINE2) == t
    fp = template_fingerprint(t)
    assert fp.startswith("t1-") and len(fp) == 15
    assert template_fingerprint(template_of(LINE2)) == fp
    other = template_of("shardio: FATAL: index file truncated at offset 12")
    assert template_fingerprint(other) != fp


def test_template_masks_the_jobs_host_names() -> None:
    a = template_of("loader on gpu-node-017 lost shard 3", hosts={"gpu-node-017"})
    b = template_of("loader on dgx-a lost shard 9", hosts={"dgx-a"})
    assert a == b == "loader on <host> lost shard <n>"


# ------------------------------------------------------------------------------------------
# ranking, on constructed rows
# ------------------------------------------------------------------------------------------


def _row(
    rank: int | None,
    role: str,
    pattern_id: str,
    text: str,
    seconds: float,
    line: int,
    category: str = "unknown",
    level: str | None = None,
) -> Event:
    return Event(
        file="slurm-1.out",
        line=line,
        rank=rank,
        node=None if rank is None else str(rank // 2),
        node_index=None if rank is None else rank // 2,
        time=T0 + timedelta(seconds=seconds),
        role=role,
        pattern_id=pattern_id,
        category=category,
        text=text,
        message=text,
        level=level,
    )


def _death(rank: int, seconds: float, line: int) -> Event:
    row = _row(
        rank,
        "symptom",
        "torchelastic.exit.failed",
        "failed (exitcode: 1)",
        seconds,
        line,
        "python_exception",
    )
    return replace(row, tags=frozenset({"death", "death-record"}))


def _timeout(rank: int, seconds: float, line: int) -> Event:
    return _row(rank, "symptom", "gloo.timeout", "Timed out", seconds, line, "collective_timeout")


def _cascade(rank: int | None = None) -> Verdict:
    return Verdict("collective_timeout", "The job hung.", "Look.", 0.5, "gloo.timeout", rank=rank)


def test_the_rank_level_line_before_a_death_becomes_the_verdict() -> None:
    rows = [_timeout(0, 30, 10), _timeout(2, 30, 11), _timeout(3, 30, 12), _death(1, 5, 9)]
    cands = [_row(1, "candidate", "candidates.fatal", LINE1, 4, 8)]
    v, ranked = infer(_cascade(), rows, cands, world=4)
    assert v.category == "unknown" and v.rank == 1
    assert 0.4 <= v.confidence <= 0.5
    assert v.evidence[0].text == LINE1
    assert v.unknown is not None and v.unknown["near_death"] is True
    assert ranked[0].fingerprint == v.unknown["fingerprint"]


def test_a_line_every_rank_prints_is_noise() -> None:
    rows = [_timeout(r, 30, 10 + r) for r in range(4)]
    cands = [
        _row(r, "candidate", "candidates.error_level", "ERROR: slow disk", 1, r) for r in range(4)
    ]
    v, ranked = infer(_cascade(), rows, cands, world=4)
    assert v.category == "collective_timeout" and ranked == []


def test_a_line_after_the_cascade_began_is_not_its_cause() -> None:
    rows = [_timeout(0, 10, 10), _timeout(2, 10, 11), _death(1, 20, 12)]
    cands = [_row(1, "candidate", "candidates.fatal", LINE1, 15, 13)]
    v, _ = infer(_cascade(), rows, cands, world=4)
    assert v.category == "collective_timeout"


def test_a_verdict_a_catalog_root_explains_is_never_replaced() -> None:
    root = _row(2, "root", "python.traceback", "IndexError: x", 5, 20, "python_exception")
    rows = [root, _death(1, 5, 21)]
    cands = [_row(1, "candidate", "candidates.fatal", LINE1, 4, 19)]
    v0 = Verdict("python_exception", "IndexError", "Fix.", 0.75, "python.traceback", rank=2)
    v, _ = infer(v0, rows, cands, world=4)
    assert v is v0


def test_a_hang_culprit_is_only_replaced_by_its_own_line() -> None:
    rows = [_timeout(0, 30, 10), _timeout(2, 30, 11), _timeout(3, 30, 12)]
    other = [_row(3, "candidate", "candidates.fatal", LINE1, 4, 8)]
    v0 = _cascade(rank=1)
    v, _ = infer(v0, rows, other, world=4)
    assert v is v0
    own = [_row(1, "candidate", "candidates.fatal", LINE1, 4, 8)]
    v, _ = infer(v0, rows, own, world=4)
    assert (v.category, v.rank) == ("unknown", 1)


def test_glog_level_candidates_keep_only_e_and_f_lines() -> None:
    rows = [
        _row(1, "candidate", "candidates.logger_error_level", "all good", 1, 1, level="I"),
        _row(1, "candidate", "candidates.logger_error_level", "prefetch lost", 1, 2, level="E"),
    ]
    rows = [replace(r, tags=frozenset({"level-gated"})) for r in rows]  # the pattern's tag
    _keep, cands = split_candidates(rows)
    assert [r.text for r in cands] == ["prefetch lost"]


def test_baseline_templates_are_never_candidates() -> None:
    rows = [_timeout(0, 30, 10), _death(1, 5, 9)]
    cands = [_row(1, "candidate", "candidates.fatal", LINE1, 4, 8)]
    groups = group(cands, baseline=frozenset({template_of(LINE2)}))
    assert groups[0].in_baseline
    assert rank_templates(groups, rows, 4) == []


def test_crash_lines_take_the_native_crash_family() -> None:
    rows = [_timeout(0, 30, 10), _death(1, 5, 9)]
    cands = [_row(1, "candidate", "candidates.crash", "Check failed: n == 64 (0 vs. 64)", 4, 8)]
    cands = [replace(r, tags=frozenset({"native-crash"})) for r in cands]  # the pattern's tag
    v, _ = infer(_cascade(), rows, cands, world=4)
    assert (v.category, v.rank, v.pattern_id) == ("native_crash", 1, "candidates.crash")


# ------------------------------------------------------------------------------------------
# the real recorded jobs
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("job", "rank", "line"), [(JOB1, 1, LINE1), (JOB2, 2, LINE2)])
def test_real_unknown_failure_names_the_rank_and_the_line(job: Path, rank: int, line: str) -> None:
    d = analyze(job, catalog=CATALOG, workers=1).diagnosis
    v = d.verdict
    assert (v.category, v.rank, v.pattern_id) == ("unknown", rank, "candidates.fatal")
    assert v.confidence == 0.5 and d.exit_code == 1
    assert line in v.evidence[0].text
    assert any("exitcode: 1" in e.text for e in v.evidence[1:]), "the death is evidence too"
    assert "patterns suggest" in v.fix
    assert d.alternatives[0].category == "collective_timeout", "the cascade stays an alternative"
    assert v.unknown and v.unknown["ranks"] == [rank]


def test_without_candidates_the_real_job_is_only_the_cascade() -> None:
    a = analyze(JOB1, catalog=CATALOG, workers=1)
    keep, cands = split_candidates(a.rows)
    assert len(cands) == 1
    v = diagnose_rows(keep, a.facts, a.attributed.geometry).verdict
    assert v.category == "collective_timeout"


def test_baseline_good_run_says_new_since_the_good_run() -> None:
    d = analyze(JOB1, catalog=CATALOG, workers=1, baseline=[GOOD]).diagnosis
    assert d.verdict.category == "unknown"
    assert "new since the good run" in d.verdict.cause
    assert d.verdict.unknown and d.verdict.unknown["new_since_baseline"] is True


def test_a_template_the_baseline_printed_is_not_the_cause() -> None:
    # JOB2 stands in for a "good" run that printed the same line: the mechanism, not a claim
    # that JOB2 is healthy.
    d = analyze(JOB1, catalog=CATALOG, workers=1, baseline=[JOB2]).diagnosis
    assert (d.verdict.category, d.verdict.rank) == ("collective_timeout", 1)


# ------------------------------------------------------------------------------------------
# false alarms: every sample job
# ------------------------------------------------------------------------------------------


def test_false_alarm_rate_is_zero_on_every_sample() -> None:
    """No candidate changes a verdict except on the samples recorded for unknown failures;
    healthy samples stay ``ok``."""
    changed, healthy, checked = [], 0, 0
    for s in SAMPLES:
        exp = _expected(s)
        a = analyze(s, catalog=CATALOG, workers=1)
        keep, _cands = split_candidates(a.rows)
        dumps = ReadSummary(flight_recorder=a.flightrec)  # the decision's one dumps input
        plain = diagnose_rows(keep, a.facts, a.attributed.geometry, dumps).verdict
        v = a.diagnosis.verdict
        if exp["category"] == "none":
            healthy += 1
            assert a.diagnosis.status == "ok", s.name
        if exp["category"] == "unknown":
            continue
        checked += 1
        if (plain.category, plain.rank, plain.pattern_id) != (v.category, v.rank, v.pattern_id):
            changed.append(s.name)
    assert healthy >= 2 and checked >= 25
    assert changed == []


# ------------------------------------------------------------------------------------------
# command line: --baseline, patterns suggest round trip
# ------------------------------------------------------------------------------------------


def test_diagnose_baseline_option(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["diagnose", str(JOB1), "--baseline", str(GOOD), "-q"])
    assert r.exit_code == 1, r.output
    assert r.output.startswith("unknown rank=1 ") and "new since the good run" in r.output
    r = CliRunner().invoke(app, ["diagnose", str(JOB1), "--baseline", str(tmp_path / "no")])
    assert r.exit_code == 64


def test_suggest_round_trip(tmp_path: Path) -> None:
    out = tmp_path / "drafts"
    runner = CliRunner()
    r = runner.invoke(
        app, ["patterns", "suggest", str(JOB1), "--baseline", str(GOOD), "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    files = list(out.glob("*.toml"))
    assert len(files) == 1
    data = tomllib.loads(files[0].read_text())
    (p,) = data["pattern"]
    assert p["id"].startswith("user.") and p["role"] == "root" and p["category"] == "unknown"
    assert p["examples"][0]["fields"]["path"] == "/data/tokens/train-00011.bin"
    assert p["counter_examples"], "healthy lines are counter-examples"
    r = runner.invoke(app, ["patterns", "test", "--patterns", str(out)])
    assert r.exit_code == 0, r.output
    # given back, the draft claims the failure it came from and the same failure elsewhere
    for job, rank in ((JOB1, 1), (JOB2, 2)):
        v = analyze(job, patterns=[out], workers=1).diagnosis.verdict
        assert (v.pattern_id, v.rank) == (p["id"], rank)
        # a draft keeps category "unknown" until its author sets one: the tool names the line
        # and the rank, and says it does not know the kind of failure
        assert v.category == "unknown" and v.confidence == info("unknown").confidence


def test_suggest_groups_jobs_with_one_template(tmp_path: Path) -> None:
    out = tmp_path / "d"
    r = CliRunner().invoke(app, ["patterns", "suggest", str(JOB1), str(JOB2), "-o", str(out)])
    assert r.exit_code == 0, r.output
    (f,) = out.glob("*.toml")
    (p,) = tomllib.loads(f.read_text())["pattern"]
    assert len(p["examples"]) == 2


def test_suggest_refuses_bad_requests(tmp_path: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(
        app, ["patterns", "suggest", str(REAL / "exception-cascade"), "-o", str(tmp_path / "d")]
    )
    assert r.exit_code == 1 and "nothing to draft" in r.output
    assert not (tmp_path / "d").exists()
    r = runner.invoke(app, ["patterns", "suggest", str(JOB1), "-o", str(JOB1 / "drafts")])
    assert r.exit_code == 64 and not (JOB1 / "drafts").exists()


# ------------------------------------------------------------------------------------------
# triage of two such jobs
# ------------------------------------------------------------------------------------------


def test_triage_groups_the_same_unknown_failure(tmp_path: Path) -> None:
    from analyzer.triage.run import diagnose_job, to_frame
    from analyzer.triage.summary import render_markdown, summarize, unknown_lines

    rows = [diagnose_job(str(j), j.name) for j in (JOB1, JOB2, REAL / "exception-cascade")]
    assert rows[0]["unknown_fingerprint"] == rows[1]["unknown_fingerprint"] is not None
    assert rows[2]["unknown_fingerprint"] is None
    s = summarize(to_frame(rows))
    (line,) = unknown_lines(s)
    assert line.startswith("the same unknown failure in 2 jobs, first seen ")
    assert "in job unknown-loader-fatal " in line and "<path>" in line
    assert "the same unknown failure in 2 jobs" in render_markdown(s)


def test_triage_cli_baseline_accepts_a_good_run(tmp_path: Path) -> None:
    root = tmp_path / "night"
    root.mkdir()
    import shutil

    shutil.copytree(JOB1, root / "job-a")
    out = tmp_path / "t.json"
    r = CliRunner().invoke(
        app, ["triage", str(root), "-j", "0", "-q", "--baseline", str(GOOD), "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    import json

    (row,) = json.loads(out.read_text())
    assert row["category"] == "unknown" and "new since the good run" in row["cause"]


# ------------------------------------------------------------------------------------------
# a traceback around a candidate line stays the uncatalogued traceback it was
# ------------------------------------------------------------------------------------------

_RAISER = """
class CorruptShardError(Exception):
    pass


def read(shard):
    raise CorruptShardError({msg!r})


read("/data/train-00017.bin")
"""


@pytest.mark.parametrize(
    "msg", ["crc mismatch in shard 17", "abort: crc mismatch in shard 17", "FATAL ERROR in shard"]
)
def test_a_real_traceback_with_candidate_words_is_still_a_python_exception(
    tmp_path: Path, msg: str
) -> None:
    import subprocess
    import sys

    script = tmp_path / "loader.py"
    script.write_text(_RAISER.format(msg=msg))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert out.returncode == 1 and "CorruptShardError" in out.stderr
    job = tmp_path / "job"
    job.mkdir()
    (job / "slurm-1.out").write_text(out.stderr)
    exc_line = next(ln for ln in out.stderr.splitlines() if "CorruptShardError:" in ln)
    roles = {pm.pattern.role for pm in CATALOG.match_all(exc_line)}
    assert "candidate" in roles, "the line is also candidate-like (else the test proves nothing)"
    a = analyze(job, catalog=CATALOG, workers=1)
    assert not any(r.role == "candidate" for r in a.rows), "the traceback took its line"
    v = a.diagnosis.verdict
    assert (v.category, v.pattern_id) == ("python_exception", "python.traceback")
    assert f"CorruptShardError was raised: {msg}" in v.cause


_RECORDED = """
from torch.distributed.elastic.multiprocessing.errors import record


class CorruptShardError(Exception):
    pass


@record
def main():
    raise CorruptShardError("FATAL: crc mismatch in shard 17")


main()
"""


def test_a_real_error_json_with_candidate_words_stays_its_root(tmp_path: Path) -> None:
    """torchelastic's error.json (written by ``@record``) whose message a candidate matches is
    still the error.json root, not a candidate."""
    import os
    import subprocess
    import sys

    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text(_RECORDED)
    job = tmp_path / "job"
    job.mkdir()
    env = {**os.environ, "TORCHELASTIC_ERROR_FILE": str(job / "error.json")}
    subprocess.run([sys.executable, str(script)], capture_output=True, env=env, check=False)
    assert (job / "error.json").is_file()
    v = analyze(job, catalog=CATALOG, workers=1).diagnosis.verdict
    assert (v.category, v.pattern_id) == ("python_exception", "torchelastic.error_json")
    assert "CorruptShardError" in v.cause


def test_a_line_without_a_rank_is_not_inferred_but_can_be_drafted(tmp_path: Path) -> None:
    """The real sample with the srun label and tee header removed from the shardio line only
    (a constructed variant): no rank, so no inferred verdict; `suggest`, asked explicitly,
    still drafts the pattern."""
    job = tmp_path / "job"
    job.mkdir()
    text = (JOB1 / "slurm-1.out").read_text()
    assert "0: [default1]:shardio" in text
    (job / "slurm-1.out").write_text(text.replace("0: [default1]:shardio", "shardio"))
    v = analyze(job, catalog=CATALOG, workers=1).diagnosis.verdict
    assert v.category == "collective_timeout" and v.unknown is None
    r = CliRunner().invoke(app, ["patterns", "suggest", str(job), "-o", str(tmp_path / "d")])
    assert r.exit_code == 0, r.output
    assert len(list((tmp_path / "d").glob("*.toml"))) == 1


def test_a_rank_that_logged_an_error_and_lived_on_is_not_blamed() -> None:
    rows = [_timeout(0, 30, 10), _timeout(2, 30, 11), _timeout(3, 30, 12), _timeout(1, 30, 13)]
    cands = [_row(0, "candidate", "candidates.error_level", "ERROR: slow read, retrying", 4, 8)]
    v0 = _cascade()
    v, ranked = infer(v0, rows, cands, world=4)
    assert v is v0 and len(ranked) == 1, "ranked, but not blamed"


def test_a_hang_cut_by_the_time_limit_can_still_be_explained() -> None:
    end = _row(
        None, "root", "slurm.cancelled.time_limit", "DUE TO TIME LIMIT", 900, 30, "slurm_time_limit"
    )
    rows = [_timeout(0, 600, 10), _timeout(2, 600, 11), _timeout(3, 600, 12), end]
    own = [_row(1, "candidate", "candidates.fatal", LINE1, 4, 8)]
    v, _ = infer(_cascade(rank=1), rows, own, world=4)
    assert (v.category, v.rank) == ("unknown", 1)


# ------------------------------------------------------------------------------------------
# symptoms of a class that names the cause by itself (CategoryInfo.evident)
# ------------------------------------------------------------------------------------------


def _symptom(rank: int | None, seconds: float, line: int, category: str, pattern: str) -> Event:
    return _row(rank, "symptom", pattern, "symptom line", seconds, line, category)


@pytest.mark.parametrize(
    ("category", "pattern"),
    [
        ("nan_loss", "training.loss_scale.collapsing"),
        ("rendezvous", "torchelastic.rdzv.timeout"),
        ("network", "nccl.net.socket_connect"),
    ],
)
def test_symptoms_of_an_evident_class_name_it(category: str, pattern: str) -> None:
    from analyzer.shape.attribute import Geometry
    from analyzer.shape.facts import JobFacts

    assert info(category).evident
    rows = [_symptom(0, 10, 5, category, pattern), _symptom(1, 12, 6, category, pattern)]
    v = diagnose_rows(rows, JobFacts(), Geometry()).verdict
    assert (v.category, v.rule, v.pattern_id) == (category, "symptoms", pattern)
    assert v.confidence == 0.5
    assert v.rank is None, "a symptom shows where a failure arrived, not who caused it"


@pytest.mark.parametrize("category", ["python_exception", "storage", "checkpoint"])
def test_symptoms_of_other_classes_stay_unknown(category: str) -> None:
    from analyzer.shape.attribute import Geometry
    from analyzer.shape.facts import JobFacts

    assert not info(category).evident
    rows = [_symptom(0, 10, 5, category, "x.y"), _symptom(1, 12, 6, category, "x.y")]
    v = diagnose_rows(rows, JobFacts(), Geometry()).verdict
    assert (v.category, v.rule) == ("unknown", "unknown")


def test_a_collapsing_loss_scale_alone_is_a_diverging_run(tmp_path: Path) -> None:
    """Real lines (tests/wild/b-deepspeed-fp16-loss-scale-collapse): DeepSpeed halved the fp16
    loss scale 64 -> 2 step after step and the paste ends before the run stops."""
    job = tmp_path / "job"
    job.mkdir()
    src = WILD / "b-deepspeed-fp16-loss-scale-collapse"
    (job / "output.log").write_bytes((src / "output.log").read_bytes())
    v = analyze(job, catalog=CATALOG, workers=1).diagnosis.verdict
    got = (v.category, v.pattern_id, v.rank)
    assert got == ("nan_loss", "training.loss_scale.collapsing", None)
    assert "from 16 to 8" in v.cause

"""``mcore-diagnose watch`` (issue 43): failure, stall, straggler and end findings, their JSON
schema, the hook, the exit codes. Logs are real runs from sample_logs/real replayed into a
temporary directory in pieces; the clock and the poll loop are injected (no test sleeps)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from analyzer.api import AnalyzeOptions
from analyzer.catalog.model import Catalog
from analyzer.report.outputs import json_line
from analyzer.watch.core import WatchConfig, Watcher
from analyzer.watch.detect import Thresholds
from analyzer.watch.loop import EXIT_CONDITION, watch_loop
from tests.helpers import REAL, ROOT, cli_in_process

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the test extras")

CASCADE = (REAL / "exception-cascade" / "slurm-7.out").read_bytes().splitlines(keepends=True)
CLEAN = (REAL / "clean-success" / "slurm-13.out").read_bytes().splitlines(keepends=True)
FIRST_ITERATION = next(i for i, ln in enumerate(CLEAN) if b"| consumed samples:" in ln)


class Clock:
    """The watcher's clock, moved by the test."""

    def __init__(self) -> None:
        self.t = 1_800_000_000.0

    def __call__(self) -> float:
        return self.t


def _watcher(job: Path, catalog: Catalog, clock: Clock, **th: float) -> Watcher:
    cfg = WatchConfig([str(job)], str(job), AnalyzeOptions(catalog=catalog, workers=1),
                      Thresholds(**th))
    return Watcher(cfg, clock)


def _validator() -> Any:
    schema = json.loads((ROOT / "docs" / "schema" / "watch.schema.json").read_text("utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _postmortem(job: Path) -> str:
    r = cli_in_process(str(job), "-f", "json")
    return r.stdout


def _write(path: Path, lines: list[bytes]) -> None:
    with path.open("ab") as f:
        f.write(b"".join(lines))


def test_failure_finding_carries_the_postmortems_verdict(tmp_path: Path, catalog: Catalog) -> None:
    clock = Clock()
    log = tmp_path / "slurm-7.out"
    _write(log, CASCADE[:60])
    w = _watcher(tmp_path, catalog, clock)
    assert w.poll() == []  # training, no failure yet
    _write(log, CASCADE[60:])
    clock.t += 2
    assert w.poll() == []  # failure lines came: decided once nothing was written for 2 s
    clock.t += 1
    assert w.poll() == []
    clock.t += 1
    found = w.poll()
    assert [f["kind"] for f in found] == ["failure"]
    f = found[0]
    expected = json.loads(_postmortem(tmp_path))["verdict"]
    assert f["verdict"] == expected and f["rank"] == 2 and f["category"] == "python_exception"
    clock.t += 2
    assert w.poll() == []  # once per failure


def test_a_failure_still_being_written_is_decided_after_six_seconds(
    tmp_path: Path, catalog: Catalog
) -> None:
    clock = Clock()
    log = tmp_path / "slurm-7.out"
    _write(log, CASCADE[:62])
    w = _watcher(tmp_path, catalog, clock)
    w.poll()
    kinds = []
    for i in range(62, 70):  # one traceback line a second: still coming
        _write(log, [CASCADE[i]])
        clock.t += 1
        kinds.append([f["kind"] for f in w.poll()])
    assert kinds == [[]] * 6 + [["failure"], []]  # 6 s after the first


def test_end_finding_is_byte_identical_to_the_postmortem(tmp_path: Path, catalog: Catalog) -> None:
    log = tmp_path / "slurm-7.out"
    _write(log, CASCADE)
    w = _watcher(tmp_path, catalog, Clock())
    w.poll()
    end = w.end()
    assert end["kind"] == "end"
    assert json_line(end["diagnosis"]) == _postmortem(tmp_path)
    assert end["verdict"] == end["diagnosis"]["verdict"]


def test_a_clean_job_gives_no_finding_and_ends(tmp_path: Path, catalog: Catalog) -> None:
    clock = Clock()
    log = tmp_path / "slurm-13.out"
    w = _watcher(tmp_path, catalog, clock)
    found: list[dict[str, Any]] = []
    for i in range(0, len(CLEAN), 5):
        _write(log, CLEAN[i : i + 5])
        clock.t += 0.25
        found += w.poll()
    assert found == []
    assert not w.ended()  # an end line was read, but the files may still grow
    clock.t += 2
    w.poll()
    clock.t += 2
    w.poll()
    assert not w.ended()  # two quiet polls, but only 4 s
    clock.t += 1.5
    assert w.ended()
    clock.t += 600  # the last iteration long ago: the job is ending, that is no stall
    assert w.poll() == []
    assert w.end()["diagnosis"]["status"] == "ok"


def _stalled(tmp_path: Path, catalog: Catalog, clock: Clock, **th: float) -> Watcher:
    """The clean job replayed up to its fifth iteration line, one line per second."""
    log = tmp_path / "slurm-13.out"
    w = _watcher(tmp_path, catalog, clock, **th)
    _write(log, CLEAN[:FIRST_ITERATION])
    w.poll()
    for ln in CLEAN[FIRST_ITERATION : FIRST_ITERATION + 5]:
        clock.t += 1
        _write(log, [ln])
        assert w.poll() == []
    return w


def test_stall_after_the_learned_threshold_names_who_stopped_first(
    tmp_path: Path, catalog: Catalog
) -> None:
    clock = Clock()
    w = _stalled(tmp_path, catalog, clock, factor=5.0, floor=3.0)
    clock.t += 4.9  # cadence 1 s: threshold max(3, 5 x 1) = 5 s
    assert w.poll() == []
    clock.t += 0.2
    (f,) = w.poll()
    assert f["kind"] == "stall" and f["threshold_s"] == 5.0 and f["silent_for_s"] > 5.0
    # task 0 printed its last line (before training's first step) before task 1's iterations
    culprit = next(iter(f["last_lines"]))
    assert culprit == "slurm-13.out:0"
    assert "before the start of training step" in f["last_lines"][culprit]["text"]
    assert "slurm-13.out:1" in f["last_lines"]
    clock.t += 30
    assert w.poll() == []  # once per stall


def test_stall_episode_resets_when_progress_resumes(tmp_path: Path, catalog: Catalog) -> None:
    clock = Clock()
    w = _stalled(tmp_path, catalog, clock, fixed=10.0)
    clock.t += 11
    assert [f["kind"] for f in w.poll()] == ["stall"]
    _write(tmp_path / "slurm-13.out", [CLEAN[FIRST_ITERATION + 5]])
    clock.t += 1
    assert w.poll() == []
    clock.t += 11
    assert [f["kind"] for f in w.poll()] == ["stall"]


def test_stall_after_overrides_the_learned_threshold(tmp_path: Path, catalog: Catalog) -> None:
    clock = Clock()
    w = _stalled(tmp_path, catalog, clock, fixed=2.0, floor=60.0)
    clock.t += 2.5
    assert [f["threshold_s"] for f in w.poll()] == [2.0]


def test_straggler(tmp_path: Path, catalog: Catalog) -> None:
    # synthetic: the clean job's real iteration lines, each given a ``[rankN]: `` prefix as
    # PyTorch's per-rank logging writes it, so that four ranks print their own iterations
    clock = Clock()
    its = CLEAN[FIRST_ITERATION : FIRST_ITERATION + 6]
    w = _watcher(tmp_path, catalog, clock, fixed=3.0)
    log = tmp_path / "train.log"
    start = clock.t
    seen: list[tuple[float, dict[str, Any]]] = []
    for i, ln in enumerate(its):
        clock.t += 1
        _write(log, [b"[rank%d]: %s" % (r, ln.split(b": ", 1)[1]) for r in range(3)])
        if i < 2:  # rank 3 stops at iteration 2
            _write(log, [b"[rank3]: " + ln.split(b": ", 1)[1]])
        seen += [(clock.t - start, f) for f in w.poll() if f["kind"] == "straggler"]
    clock.t += 10
    seen += [(clock.t - start, f) for f in w.poll() if f["kind"] == "straggler"]
    assert [(f["rank"], f["ranks"]) for _t, f in seen] == [(3, [3])]  # once
    # rank 3's iteration 2 came at 2 s; it lags by 2 at 4 s, and 3 s (the threshold) later
    assert seen[0][0] == 6 and seen[0][1]["threshold_s"] == 3.0


def test_every_finding_validates_against_the_schema(tmp_path: Path, catalog: Catalog) -> None:
    v = _validator()
    clock = Clock()
    w = _stalled(tmp_path, catalog, clock, fixed=2.0)
    clock.t += 3
    found = w.poll()
    _write(tmp_path / "slurm-13.out", CASCADE)  # a second job's failure written into it
    found += w.poll()
    found += w.settle()
    found.append(w.end())
    assert {f["kind"] for f in found} == {"stall", "failure", "end"}
    diagnose = json.loads((ROOT / "docs" / "schema" / "diagnose.schema.json").read_text("utf-8"))
    dv = jsonschema.validators.validator_for(diagnose)(diagnose)
    for f in found:
        v.validate(f)
        if f["diagnosis"] is not None:
            dv.validate(f["diagnosis"])


def _loop(w: Watcher, clock: Clock, **kw: Any) -> tuple[int, list[dict[str, Any]]]:
    out: list[dict[str, Any]] = []

    def sleep(s: float) -> None:
        clock.t += s

    return watch_loop(w, out.append, sleep=sleep, **kw), out


def test_exit_on_stall_exits_4_at_the_stall(tmp_path: Path, catalog: Catalog) -> None:
    clock = Clock()
    w = _stalled(tmp_path, catalog, clock, fixed=5.0)
    code, out = _loop(w, clock, interval=1.0, exit_on="stall", max_seconds=60)
    assert code == EXIT_CONDITION and [f["kind"] for f in out] == ["stall"]


def test_without_exit_on_the_loop_ends_with_the_end_finding(
    tmp_path: Path, catalog: Catalog
) -> None:
    clock = Clock()
    w = _stalled(tmp_path, catalog, clock, fixed=5.0)
    code, out = _loop(w, clock, interval=1.0, max_seconds=20)
    assert code == 0 and [f["kind"] for f in out] == ["stall", "end"]


def test_exit_on_failure_ignores_a_stall(tmp_path: Path, catalog: Catalog) -> None:
    clock = Clock()
    w = _stalled(tmp_path, catalog, clock, fixed=5.0)
    code, out = _loop(w, clock, interval=1.0, exit_on="failure", max_seconds=20)
    assert code == 0 and [f["kind"] for f in out] == ["stall", "end"]


def _cli(*args: str) -> Any:
    return cli_in_process("watch", *args)


def test_once_prints_the_failure_and_the_end_as_json_lines(tmp_path: Path) -> None:
    (tmp_path / "slurm-7.out").write_bytes(b"".join(CASCADE))
    r = _cli(str(tmp_path), "--once")
    lines = [json.loads(ln) for ln in r.stdout.splitlines()]
    assert r.returncode == 0, r.stderr
    assert [f["kind"] for f in lines] == ["failure", "end"]
    assert json_line(lines[-1]["diagnosis"]) == _postmortem(tmp_path)


def test_exit_on_failure_from_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "slurm-7.out").write_bytes(b"".join(CASCADE))
    r = _cli(str(tmp_path), "--once", "--exit-on", "failure")
    assert r.returncode == 4 and [json.loads(x)["kind"] for x in r.stdout.splitlines()] == [
        "failure"]


def test_on_finding_runs_once_per_finding_with_the_finding_on_stdin(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    (job / "slurm-7.out").write_bytes(b"".join(CASCADE))
    got = tmp_path / "hook"
    got.mkdir()
    cmd = (f"{sys.executable} -c \"import sys,json,uuid; f=json.load(sys.stdin); "
           f"open('{got}/'+f['kind']+'-'+uuid.uuid4().hex,'w').write('x')\"")
    r = _cli(str(job), "--once", "--on-finding", cmd)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name.split("-")[0] for p in got.iterdir()) == ["end", "failure"]


def test_a_failing_hook_is_reported_and_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "slurm-7.out").write_bytes(b"".join(CASCADE))
    r = _cli(str(tmp_path), "--once", "--on-finding", "exit 3")
    assert r.returncode == 0
    assert "--on-finding command exited with 3 for the failure finding" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["no-such-dir"], 3, "no such job directory or log file"),
        (["{job}", "-o", "{job}/findings.jsonl"], 64, "inside"),
        (["{job}", "--exit-on", "never"], 64, "never"),
        (["{job}", "--interval", "0"], 64, "interval"),
    ],
)
def test_bad_input_is_one_line_and_a_status(
    tmp_path: Path, args: list[str], code: int, says: str
) -> None:
    (tmp_path / "slurm-7.out").write_bytes(b"".join(CASCADE[:10]))
    r = _cli(*[a.format(job=tmp_path) for a in args], "--once")
    assert r.returncode == code, r.stderr
    assert says in r.stderr and "Traceback" not in r.stderr


def test_output_file_gets_the_findings_and_is_never_overwritten(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    (job / "slurm-7.out").write_bytes(b"".join(CASCADE))
    out = tmp_path / "findings.jsonl"
    r = _cli(str(job), "--once", "-o", str(out))
    assert r.returncode == 0 and r.stdout == ""
    assert [json.loads(x)["kind"] for x in out.read_text().splitlines()] == ["failure", "end"]
    before = out.read_bytes()
    r = _cli(str(job), "--once", "-o", str(out))
    assert r.returncode == 64 and "exists" in r.stderr and out.read_bytes() == before


def test_a_job_id_ends_when_slurm_no_longer_lists_it(tmp_path: Path, catalog: Catalog) -> None:
    alive = [True]
    (tmp_path / "slurm-13.out").write_bytes(b"".join(CLEAN[:FIRST_ITERATION]))
    cfg = WatchConfig([str(tmp_path)], "13", AnalyzeOptions(catalog=catalog, workers=1),
                      job_alive=lambda: alive[0])
    w = Watcher(cfg, Clock())
    w.poll()
    assert not w.ended()
    alive[0] = False
    assert w.ended()


def test_the_live_view_on_a_terminal_shows_log_lines_as_text_and_the_findings() -> None:
    from tests.helpers import cli_on_tty

    # the real gloo line of rank 3 holds "[/__w/pytorch/...]", which rich would read as markup
    out = cli_on_tty("watch", str(REAL / "exception-cascade"), "--once",
                     env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert "internal error" not in out
    assert "failure: An uncaught IndexError" in out and "end: An uncaught IndexError" in out
    assert "pair.cc" in out


def test_ranks_from_srun_task_and_torchrun_local_rank(tmp_path: Path, catalog: Catalog) -> None:
    # real: srun --label and torchrun --tee 3 (``1: [default1]:``), two ranks per node
    lines = (REAL / "clean-success-verbose" / "slurm-1.out").read_bytes().splitlines(
        keepends=True)
    third = [i for i, ln in enumerate(lines) if b"| consumed samples:" in ln][2]
    clock = Clock()
    w = _watcher(tmp_path, catalog, clock, fixed=5.0)
    _write(tmp_path / "slurm-1.out", lines[: third + 1])
    w.poll()
    clock.t += 6
    (f,) = w.poll()
    assert f["kind"] == "stall"
    assert {"0", "1", "2", "3"} <= set(f["last_lines"])  # task x 2 + local rank
    assert "iteration        3/" in f["last_lines"]["3"]["text"]
    assert all(isinstance(r, int) for r in f["ranks"]) and f["rank"] in (0, 1, 2, 3)


def _per_rank(iteration_line: bytes, ranks: range) -> list[bytes]:
    # synthetic: a real iteration line of the clean job under each rank's ``[rankN]: ``
    return [b"[rank%d]: %s" % (r, iteration_line.split(b": ", 1)[1]) for r in ranks]


# synthetic: harness/train.py's slow-save fault line (Megatron's checkpoint message)
SAVING = b"[rank3]: saving checkpoint at iteration       3 to /ckpt in torch format\n"


@pytest.mark.parametrize("ahead", [True, False], ids=["others-ahead", "same-iteration"])
def test_stall_names_the_rank_silent_in_a_checkpoint_save(
    tmp_path: Path, catalog: Catalog, ahead: bool
) -> None:
    its = CLEAN[FIRST_ITERATION : FIRST_ITERATION + 4]
    lines = [ln for it in its[:3] for ln in _per_rank(it, range(4))] + [SAVING]
    if ahead:  # the others logged the next iteration and wait in its all-reduce
        lines += _per_rank(its[3], range(3))
    clock = Clock()
    w = _watcher(tmp_path, catalog, clock, fixed=5.0)
    _write(tmp_path / "train.log", lines)  # all in one poll: one time for every line
    assert w.poll() == []
    clock.t += 6
    (f,) = w.poll()
    assert (f["kind"], f["rank"], f["ranks"]) == ("stall", 3, [3])
    assert "saving checkpoint" in f["last_lines"]["3"]["text"]
    assert next(iter(f["last_lines"])) == "3"


def test_ncclras_report_joins_the_stall_finding(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    import analyzer.watch.ncclras as ras

    asked: list[float] = []
    report = {"dead_processes": {"count": 1}}

    def ask(timeout: float) -> dict[str, Any]:
        asked.append(timeout)
        return report

    monkeypatch.setattr(ras, "ask_ncclras", ask)
    clock = Clock()
    log = tmp_path / "slurm-13.out"
    _write(log, CLEAN[: FIRST_ITERATION + 3])
    cfg = WatchConfig([str(tmp_path)], "job", AnalyzeOptions(catalog=catalog, workers=1),
                      Thresholds(fixed=5.0), ncclras=True)
    w = Watcher(cfg, clock)
    w.poll()
    assert asked == []  # asked only on a stall
    clock.t += 6
    (f,) = w.poll()
    assert f["ncclras"] == report and len(asked) == 1
    _validator().validate(f)


SCONTROL = """#!/bin/bash
if [[ "$1 $2 $3" == "-o show job" && "$4" == "7" ]]; then
  echo "JobId=7 JobName=train UserId=me(1000) JobState=FAILED Reason=NonZeroExitCode \\
ExitCode=1:0 NodeList=node001 NumNodes=1 WorkDir=$FAKE_DIR \\
StdErr=$FAKE_DIR/slurm-7.out StdOut=$FAKE_DIR/slurm-7.out"
  exit 0
fi
if [[ "$1 $2 $3" == "-o show job" ]]; then
  echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1
fi
exit 1
"""


def test_a_job_id_is_watched_until_squeue_no_longer_lists_it(tmp_path: Path) -> None:
    # stand-ins for scontrol (the job's record) and squeue (the job is no longer queued)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("scontrol", SCONTROL), ("squeue", "#!/bin/bash\nexit 0\n")):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    job = tmp_path / "job"
    job.mkdir()
    (job / "slurm-7.out").write_bytes(b"".join(CASCADE))
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "FAKE_DIR": str(job), "SLURM_CONF": None}
    r = cli_in_process("watch", "7", "--interval", "0.05", env=env)
    assert r.returncode == 0, r.stderr
    found = [json.loads(x) for x in r.stdout.splitlines()]
    assert [f["kind"] for f in found] == ["failure", "end"]
    after = cli_in_process("7", "-f", "json", env=env).stdout
    assert json_line(found[-1]["diagnosis"]) == after
    assert found[-1]["job"] == "7"
    r = cli_in_process("watch", "8", "--once", env=env)
    assert r.returncode == 3 and "Invalid job id" in r.stderr


def test_torchrun_log_dir_files_are_their_local_ranks(tmp_path: Path, catalog: Catalog) -> None:
    # real: torchrun --log-dir per-rank files (attempt_0/<local rank>/stdout.log)
    import shutil

    shutil.copytree(REAL / "sigkill-rank" / "torchrun-logs", tmp_path / "torchrun-logs")
    w = _watcher(tmp_path, catalog, Clock())
    w.poll()
    places = {(wr.label, wr.local_rank) for wr in w.writers.by_key.values()}
    assert ("torchrun-logs/9_v1up0kes/attempt_0/0/stdout.log", 0) in places
    assert ("2", 0) in places  # [rank2]: lines of a local rank 0's stderr.log


def test_help_fits_80_columns_and_names_the_exit_codes() -> None:
    r = cli_in_process("watch", "--help", env={"COLUMNS": "80"})
    assert r.returncode == 0
    assert max(len(ln) for ln in r.stdout.splitlines()) <= 80
    assert "4 a finding that --exit-on names" in " ".join(r.stdout.split())

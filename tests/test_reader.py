"""Discovery and the streaming reader on small constructed job directories."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.catalog.model import Catalog
from analyzer.read.discover import discover
from tests.helpers import REAL, ROOT, SLOW_PATTERN, builtin_catalog, write_job

TB = (
    "  1: [default1]:[rank3]: Traceback (most recent call last):\n"
    "  0: [default0]:[rank0]: unrelated line from another rank\n"
    '  1: [default1]:[rank3]:   File "train.py", line 40, in step\n'
    '  1: [default1]:[rank3]:     raise ValueError("bad batch 7")\n'
    "  1: [default1]:[rank3]: ValueError: bad batch 7\n"
)


def _job(tmp_path: Path, text: str, name: str = "slurm-42.out") -> Path:
    return write_job(tmp_path / "job", {name: text})


def test_traceback_is_one_event_with_type_message_and_frame(tmp_path: Path) -> None:
    a = analyze(_job(tmp_path, "noise\n" + TB))
    rows = [r for r in a.rows if r.pattern_id == "python.traceback"]
    assert len(rows) == 1
    r = rows[0]
    assert (r.cap("exc_type"), r.cap("exc_msg")) == ("ValueError", "bad batch 7")
    assert r.cap("frame") == 'File "train.py", line 40, in step'
    assert (r.rank, r.node_index, r.line) == (3, 1, 6)
    assert "unrelated" not in r.traceback


def test_gzip_and_crlf_are_read(tmp_path: Path) -> None:
    d = tmp_path / "job"
    d.mkdir()
    (d / "slurm-1.out.gz").write_bytes(gzip.compress(TB.replace("\n", "\r\n").encode()))
    a = analyze(d)
    assert a.diagnosis.verdict.rank == 3
    assert a.diagnosis.verdict.category == "python_exception"


def test_binary_and_non_log_files_are_skipped_with_reason(tmp_path: Path) -> None:
    d = _job(tmp_path, TB)
    (d / "model.pt").write_bytes(b"PK\x03\x04" + os.urandom(100))
    (d / "weird.log").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
    (d / "notes.md").write_text("Traceback (most recent call last):\n")
    disc = discover([d])
    reasons = dict(disc.skipped)
    assert [f.rel for f in disc.files] == ["slurm-42.out"]
    assert "binary" in reasons["weird.log"]
    assert "not a log file name" in reasons["notes.md"]


def test_symlinks_out_of_the_tree_and_loops_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "secret.log"
    outside.write_text(TB)
    d = _job(tmp_path, "hello\n")
    (d / "leak.log").symlink_to(outside)
    (d / "loop").symlink_to(d)
    disc = discover([d])
    assert [f.rel for f in disc.files] == ["slurm-42.out"]
    assert any("outside" in why for _rel, why in disc.skipped)


def test_torchrun_log_dir_layout_gives_attempt_local_rank_and_stream(tmp_path: Path) -> None:
    f = tmp_path / "job" / "node7" / "run_ab12cd34" / "attempt_1" / "3" / "stderr.log"
    f.parent.mkdir(parents=True)
    f.write_text("x\n")
    (lf,) = discover([tmp_path / "job"]).files
    assert (lf.attempt, lf.local_rank, lf.stream, lf.node_hint) == (1, 3, "stderr", "node7")


def test_a_shared_log_dir_names_no_node(tmp_path: Path) -> None:
    """A directory holding two torchrun run directories is a --log-dir shared by the nodes,
    not a node: its name is no node hint; a directory holding one run is."""
    for run in ("run_ab12cd34", "run_ef56ab78"):
        f = tmp_path / "job" / "logs" / run / "attempt_0" / "0" / "stderr.log"
        f.parent.mkdir(parents=True)
        f.write_text("x\n")
    f = tmp_path / "job" / "node7" / "run_0a0b0c0d" / "attempt_0" / "1" / "stdout.log"
    f.parent.mkdir(parents=True)
    f.write_text("x\n")
    hints = {lf.rel: lf.node_hint for lf in discover([tmp_path / "job"]).files}
    assert hints == {
        "logs/run_ab12cd34/attempt_0/0/stderr.log": None,
        "logs/run_ef56ab78/attempt_0/0/stderr.log": None,
        "node7/run_0a0b0c0d/attempt_0/1/stdout.log": "node7",
    }


def test_giant_line_and_invalid_utf8_do_not_break_line_numbers(tmp_path: Path) -> None:
    d = tmp_path / "job"
    d.mkdir()
    big = b"x" * (3 << 20)
    (d / "slurm-1.out").write_bytes(big + b"\n\xff\xfe bad bytes\n" + TB.encode())
    a = analyze(d)
    r = next(r for r in a.rows if r.pattern_id == "python.traceback")
    assert r.line == 7


def test_unreadable_file_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    d = _job(tmp_path, TB)
    (d / "locked.log").write_text("x")
    (d / "locked.log").chmod(0)
    a = analyze(d)
    assert any("locked.log" in p for p in a.read.problems)


def test_random_bytes_named_like_a_log_are_skipped_by_content(tmp_path: Path) -> None:
    """200 KB of random bytes as slurm-1.out: few NULs, so only the share of control bytes and
    invalid UTF-8 gives it away (as ripgrep and file(1) tell binary from text)."""
    import random

    d = tmp_path / "job"
    d.mkdir()
    (d / "slurm-1.out").write_bytes(random.Random(7).randbytes(200_000))
    disc = discover([d])
    assert disc.files == []
    ((rel, why),) = disc.skipped
    assert rel == "slurm-1.out" and "binary content" in why and "invalid UTF-8" in why
    assert analyze(d).diagnosis.exit_code == 3


@pytest.mark.parametrize(
    "text",
    [
        "Fehler beim Öffnen der Datei für Rang 3: Zugriff verweigert\n" * 60,  # Latin-1
        "naïve café — training résumé ✓ 日本語のログ\n" * 60,  # UTF-8 with many non-ASCII
    ],
)
def test_text_in_other_encodings_is_still_read(tmp_path: Path, text: str) -> None:
    d = tmp_path / "job"
    d.mkdir()
    enc = "latin-1" if "Öffnen" in text else "utf-8"
    (d / "slurm-1.out").write_bytes(text.encode(enc, "replace") + TB.encode())
    disc = discover([d])
    assert [f.rel for f in disc.files] == ["slurm-1.out"], disc.skipped


def test_a_few_corrupted_lines_do_not_make_a_log_binary(tmp_path: Path) -> None:
    junk = b"\xff\xfe\xc3\x00\x00\xed\xa0\x80\xf0\x9f\x98 \x00\x07"
    data = b"".join(b"iteration %d | loss 2.5\n" % i + (junk if i % 10 == 0 else b"")
                    for i in range(200))
    d = tmp_path / "job"
    d.mkdir()
    (d / "slurm-1.out").write_bytes(data + TB.encode())
    assert [f.rel for f in discover([d]).files] == ["slurm-1.out"]


# -- tracebacks: one state machine across blocks, ended by the first line not its own -------
TB_RANK3 = (
    "[rank3]: Traceback (most recent call last):\n"
    '[rank3]:   File "train.py", line 320, in <module>\n'
    "[rank3]:     main()\n"
    '[rank3]:   File "train.py", line 40, in step\n'
    '[rank3]:     raise ValueError("bad batch 7")\n'
    "[rank3]: ValueError: bad batch 7\n"
)


def _scan_file(path: Path, block: int | None = None) -> list:
    import analyzer.read.file as scan_mod
    from analyzer.read.discover import LogFile

    lf = LogFile(path=path, rel=path.name, size=path.stat().st_size)
    old = scan_mod.BLOCK_BYTES
    if block is not None:
        scan_mod.BLOCK_BYTES = block
    try:
        return scan_mod.FileScanner(builtin_catalog()).scan(lf).events
    finally:
        scan_mod.BLOCK_BYTES = old


def test_traceback_straddling_block_boundaries_is_one_event(tmp_path: Path) -> None:
    head = "".join(f"step {i} ok\n" for i in range(12))
    p = tmp_path / "slurm-1.out"
    p.write_text(head + TB_RANK3 + "after\n")
    start = len(head)
    # A boundary in every line of the traceback (and several boundaries inside it).
    for block in [*range(start - 3, start + len(TB_RANK3) + 3, 11), 7, 29, 64]:
        evs = [e for e in _scan_file(p, block) if e.role != "context"]
        assert [(e.pattern_id, e.role, e.line) for e in evs] == [
            ("python.traceback", "root", 18)
        ], block
        (ev,) = evs
        assert (ev.fields["exc_type"], ev.fields["exc_msg"]) == ("ValueError", "bad batch 7")
        assert ev.fields["frame"] == 'File "train.py", line 40, in step', block
        assert ev.traceback is not None and ev.traceback.count("\n") == 5, block
        assert ev.rank == 3


@pytest.mark.parametrize("prefix", ["", "[rank3]: "])
def test_traceback_without_exception_line_ends_at_the_first_line_not_its_own(
    tmp_path: Path, prefix: str
) -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "train.py", line 40, in step',
        "    loss = model(batch)",
        "[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=600000) ran for 600003 milliseconds before timing out.",
        "some unrelated output",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ]
    p = tmp_path / "slurm-1.out"
    p.write_text("".join(prefix + ln + "\n" for ln in lines))
    evs = {e.pattern_id: e for e in _scan_file(p)}
    tb = evs["python.traceback"]
    assert (tb.role, tb.line) == ("symptom", 1)  # cut before an exception line
    assert tb.traceback is not None and "Watchdog" not in tb.traceback
    assert tb.traceback.count("\n") == 2
    assert evs["nccl.watchdog.timeout"].line == 4
    assert evs["cuda.error.illegal_address"].line == 6


def test_interleaved_tracebacks_of_two_writers_are_both_assembled(tmp_path: Path) -> None:
    lines = []
    for a, b in zip(
        TB_RANK3.splitlines(),
        TB_RANK3.replace("ValueError", "KeyError").replace("[rank3]", "[rank5]").splitlines(),
        strict=True,
    ):
        lines += [a, b]
    p = tmp_path / "slurm-1.out"
    p.write_text("\n".join(lines) + "\n")
    evs = [e for e in _scan_file(p) if e.pattern_id == "python.traceback"]
    assert [(e.rank, e.fields["exc_type"], e.line) for e in evs] == [
        (3, "ValueError", 11),
        (5, "KeyError", 12),
    ]
    assert all(e.role == "root" and "bad batch 7" in (e.traceback or "") for e in evs)


# -- user patterns disabled in worker processes are reported -----------------------------

def test_user_pattern_disabled_in_a_worker_process_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import analyzer.read.readjob as read_mod

    monkeypatch.setattr(read_mod, "PARALLEL_MIN_BYTES", 0)
    pats = tmp_path / "patterns"
    pats.mkdir()
    (pats / "slow.toml").write_text(SLOW_PATTERN)
    d = tmp_path / "job"
    d.mkdir()
    (d / "slurm-00.out").write_text("a" * 60 + "b\n" + TB_RANK3)
    for i in range(1, 40):
        (d / f"slurm-{i:02d}.out").write_text("hello\n")
    a = analyze(d, patterns=[pats], workers=2)
    assert a.read.disabled.keys() == {"user.redos"}
    assert any("user.redos" in p and "longer than" in p for p in a.diagnosis.problems)


def test_another_writers_line_inside_a_traceback_is_read(tmp_path: Path) -> None:
    """srun interleaves the agents' output: task 0's SIGTERM line inside task 1's traceback."""
    sigterm = (
        "0: W1202 17:23:55.523000 31301 site-packages/torch/distributed/elastic/multiprocessing/"
        "api.py:1028] Sending process 31355 closing signal SIGTERM\n"
    )
    tb = TB_RANK3.replace("[rank3]: ", "1: ").splitlines(keepends=True)
    p = tmp_path / "slurm-1.out"
    p.write_text("".join(tb[:3]) + sigterm + "".join(tb[3:]))
    evs = [(e.pattern_id, e.line, e.task) for e in _scan_file(p)]
    assert ("torchelastic.sigterm_send", 4, 0) in evs
    assert ("python.traceback", 7, 1) in evs


_DATALOADER = """
import torch
from torch.utils.data import DataLoader, Dataset


class Shards(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        raise ValueError("offset must be non-negative and no greater than buffer length")


for batch in DataLoader(Shards(), num_workers=1):
    pass
"""


def test_dataloader_original_traceback_is_the_root(tmp_path: Path) -> None:
    """A real DataLoader re-raise (torch's ``Original Traceback``): the worker's own traceback
    is assembled and is the root; the re-raise in the main process is its symptom."""
    import subprocess
    import sys

    pytest.importorskip("torch")
    script = tmp_path / "loader.py"
    script.write_text(_DATALOADER)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert "Original Traceback (most recent call last):" in out.stderr
    a = analyze(_job(tmp_path, out.stderr), workers=1)
    v = a.diagnosis.verdict
    assert (v.category, v.pattern_id) == ("python_exception", "python.traceback")
    assert "ValueError was raised: offset must be non-negative" in v.cause
    assert "__getitem__" in v.cause  # the worker's innermost frame, not torch's reraise
    roles = {r.pattern_id: r.role for r in a.rows}
    assert roles.get("python.dataloader.reraise") == "symptom"


def test_repeated_lines_are_counted_exactly_in_table_by_rank_and_symptoms(
    tmp_path: Path,
) -> None:
    """A symptom repeated far beyond the kept events: the table keeps a bounded number of rows,
    and ``repeats`` makes every count exact (events, by-rank, the downstream symptoms)."""
    from analyzer.read.fold import KEEP

    oom = (
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
        "GPU 3 has a total capacity of 79.10 GiB of which 1.05 GiB is free."
    )
    watchdog = (
        "[rank5]:[E311 12:06:03.789658919 ProcessGroupNCCL.cpp:713] [Rank 5] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600011 milliseconds before timing out."
    )
    n = 20 * KEEP
    a = analyze(_job(tmp_path, "\n".join([oom] + [watchdog.format(seq=18069)] * n) + "\n"),
                workers=1)
    rows = [r for r in a.rows if r.rank == 5]
    assert len(rows) < n and sum(r.repeats for r in rows) == n
    by = a.events.filter(a.events["rank"] == 5)
    assert by["repeats"].sum() == n
    from analyzer.shape.events import by_rank

    r5 = by_rank(a.events).filter(by_rank(a.events)["rank"] == 5)
    assert r5["events"][0] == n
    assert sum(s["events"] for s in a.diagnosis.symptoms.values()) == n


_SAVER = """
import errno, os


class Optimizer:
    state = {{0: {{"exp_avg": None}}}}


def shard(state):
    {body}


def save_checkpoint(iteration, optimizer):
    return shard(optimizer.state[0])


save_checkpoint(50, Optimizer())
"""


@pytest.mark.parametrize(
    ("body", "category"),
    [
        # an uncatalogued exception under save_checkpoint: a checkpoint failure
        ('return tuple(state["exp_avg"].shape)', "checkpoint"),
        # a specific pattern on the exception line still wins (storage)
        ('raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))', "storage"),
    ],
)
def test_a_traceback_through_checkpoint_code_is_a_checkpoint_failure(
    tmp_path: Path, body: str, category: str
) -> None:
    import subprocess
    import sys

    script = tmp_path / "saver.py"
    script.write_text(_SAVER.format(body=body))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert out.returncode == 1 and "in save_checkpoint" in out.stderr
    v = analyze(_job(tmp_path, out.stderr), workers=1).diagnosis.verdict
    assert v.category == category, v


@pytest.mark.parametrize("workers", [1, 2])
def test_events_share_one_object_per_repeated_value(
    workers: int, monkeypatch: pytest.MonkeyPatch, catalog: Catalog
) -> None:
    """Capture values, stamps and pattern strings that events repeat are one object each,
    also for events unpickled from worker processes chunk by chunk (the parent's memory)."""
    import analyzer.read.readjob as read_mod
    from analyzer.read.discover import discover

    monkeypatch.setattr(read_mod, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(read_mod, "CHUNK_FILES", 1)
    job = REAL / "exception-cascade"
    rr = read_mod.read_job(discover([job]), catalog, workers=workers)
    evs = [e for sc in rr.scans for e in sc.events]
    values = [v for e in evs for v in e.fields.values()]
    stamps = [e.stamp for e in evs if e.stamp is not None]
    titles = [e.title for e in evs]
    assert len(values) > len(set(values)) and len(stamps) > len(set(stamps))
    for seq in (values, stamps, titles):
        assert len({id(x) for x in seq}) == len(set(seq))


def test_parallel_read_keeps_discovery_order_and_reads_the_largest_file_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, catalog: Catalog
) -> None:
    """Workers take the smallest files; the parent reads the largest (a SLURM output with
    every rank's lines) itself, so its many events are never pickled. Order is unchanged."""
    import analyzer.read.readjob as read_mod
    from analyzer.read.discover import discover

    monkeypatch.setattr(read_mod, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(read_mod, "CHUNK_FILES", 1)
    job = tmp_path / "job"
    job.mkdir()
    (job / "all-ranks.log").write_text(TB_RANK3 * 200)  # first in discovery order
    for i in range(30):
        (job / f"rank{i:02d}.log").write_text("hello\n" * (i + 1) + TB_RANK3)
    disc = discover([job])
    rr = read_mod.read_job(disc, catalog, workers=2)
    assert [sc.file.rel for sc in rr.scans] == [lf.rel for lf in disc.files]
    big = max(range(len(disc.files)), key=lambda i: disc.files[i].size)
    assert disc.files[big].rel == "all-ranks.log" and big == 0
    assert rr.scans[big].file is disc.files[big], "read in this process, not unpickled"
    assert all(sc.events for sc in rr.scans)


def test_a_parallel_read_gives_the_events_of_a_serial_one(
    monkeypatch: pytest.MonkeyPatch, catalog: Catalog
) -> None:
    """Worker processes share their chunk's repeated values before pickling (``_Shared``);
    the events are those one process reads (a job of 35 files, one file per chunk)."""
    import analyzer.read.readjob as read_mod
    from tests.test_reader_needs import _rows

    monkeypatch.setattr(read_mod, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(read_mod, "CHUNK_FILES", 1)
    disc = discover([ROOT / "sample_logs/formats/hang-lowest-last-enqueued"])
    assert len(disc.files) > 30

    def rows(workers: int) -> list[tuple[object, ...]]:
        rr = read_mod.read_job(disc, catalog, workers=workers)
        return [row for sc in rr.scans for row in _rows(sc.events)]

    serial = rows(1)
    assert len(serial) > 30
    assert rows(2) == serial


def test_every_example_of_the_traceback_pattern_opens_a_traceback(tmp_path: Path) -> None:
    """The catalog's traceback pattern (tag ``uncatalogued``) describes the first line the
    reader opens a traceback at: each of its examples, followed by a frame and an exception
    line of the same writer, is one ``python.traceback`` event with the exception's type,
    message and frame."""
    from analyzer.lines.prefixes import split_prefixes

    p = builtin_catalog().traceback
    assert p.id == "python.traceback" and "uncatalogued" in p.tags
    for i, ex in enumerate(p.examples):
        pre = ex.line[: len(ex.line) - len(split_prefixes(ex.line).message)]  # the writer
        f = tmp_path / f"tb{i}.log"
        f.write_text(f'{ex.line}\n{pre}  File "train.py", line 4, in step\n{pre}KeyError: {i}\n')
        evs = _scan_file(f)
        assert [(e.pattern_id, e.role) for e in evs] == [("python.traceback", "root")], ex.line
        assert evs[0].fields == {"exc_type": "KeyError", "exc_msg": str(i),
                                 "frame": 'File "train.py", line 4, in step'}


def test_a_paste_that_begins_with_a_frames_source_line_is_a_headless_traceback(
    tmp_path: Path,
) -> None:
    """The first line is the source line of a frame whose ``File`` line was cut off: the
    exception below is read as the end of that (headless) traceback, so the rank rules know
    the paste begins inside it (tests/wild/c-llamafactory-zero3-cpuadam-keyerror-2ranks)."""
    from analyzer.api import analyze
    from tests.helpers import write_job

    text = (
        "[rank2]:     self._optimizer_step(sub_group_id)\n"
        '[rank2]:   File "/opt/conda/lib/python3.11/site-packages/deepspeed/ops/adam/cpu_adam.py",'
        " line 164, in step\n"
        "[rank2]:     group['weight_decay'], group['bias_correction'], p.data, p.grad.data,\n"
        "[rank2]: KeyError: 'bias_correction'\n"
    )
    rows = analyze([write_job(tmp_path / "job", {"a.log": text})]).rows
    (root,) = [r for r in rows if r.role == "root"]
    assert root.traceback is not None and root.traceback.lstrip().startswith("self._optimizer")

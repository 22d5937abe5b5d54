"""A log that begins inside a traceback: the frames above the exception line are read as its
traceback (the reader's ``EventBuilder._head``), at any block size."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.read.discover import LogFile
from analyzer.read.file import FileScanner
from tests.helpers import builtin_catalog

CUT = (  # the tail of TB_RANK3 in tests/test_reader.py: the paste starts at its second frame
    '[rank3]:   File "train.py", line 40, in step\n'
    '[rank3]:     raise ValueError("bad batch 7")\n'
    "[rank3]: ValueError: bad batch 7\n"
)


def _events(path: Path, block: int | None = None) -> list:
    lf = LogFile(path=path, rel=path.name, size=path.stat().st_size)
    return FileScanner(builtin_catalog(), block_bytes=block).scan(lf).events


@pytest.mark.parametrize("block", [None, 7, 16, 41, 64, 100])
@pytest.mark.parametrize("lead", ["", "\n", "\n  \n"])
def test_frames_at_the_top_join_the_exception_below(tmp_path: Path, lead: str, block: int) -> None:
    p = tmp_path / "output.log"
    p.write_text(lead + CUT + "after\n")
    (ev,) = [e for e in _events(p, block) if e.role != "context"]
    assert (ev.pattern_id, ev.rank, ev.role) == ("python.traceback", 3, "root")
    assert ev.fields["exc_type"] == "ValueError"
    assert ev.fields["frame"] == 'File "train.py", line 40, in step'
    assert ev.traceback is not None and ev.traceback.lstrip().startswith('File "train.py"')


def test_a_frame_further_down_is_not_a_traceback(tmp_path: Path) -> None:
    """Only the log's first line can open a headless traceback: elsewhere a frame line without
    its header stays what it was (here: nothing, and the exception line its own event)."""
    p = tmp_path / "output.log"
    p.write_text("[rank3]: step 1 ok\n" + CUT)
    evs = [e for e in _events(p) if e.role != "context"]
    assert [e.traceback for e in evs] == [None]


def test_an_unindented_file_line_is_not_a_frame(tmp_path: Path) -> None:
    p = tmp_path / "output.log"
    p.write_text('File "train.py", line 40, in step\nValueError: bad batch 7\n')
    assert all(e.traceback is None for e in _events(p))

"""The Python API as a user meets it in a notebook or a script."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer import analyze


def test_missing_path_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such job directory") as err:
        analyze(tmp_path / "missing" / "path")
    assert err.value.filename == str(tmp_path / "missing" / "path")


def test_missing_path_is_a_problem_with_missing_ok(tmp_path: Path) -> None:
    a = analyze(tmp_path / "gone", missing_ok=True)
    assert not a.read.readable and "no such file" in a.read.problems[0]
    assert a.diagnosis.exit_code == 3


def test_empty_directory_gives_exit_code_3_as_the_cli(tmp_path: Path) -> None:
    a = analyze(tmp_path)
    assert a.diagnosis.status == "unknown" and a.diagnosis.exit_code == 3

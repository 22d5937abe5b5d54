"""Hard-wrapped logs: a message cut at terminal width is matched as one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.read.wrap import hard_wrap_width, unwrap_block
from tests.helpers import WILD, builtin_catalog

CATALOG = builtin_catalog()


def _fold(text: str, width: int) -> str:
    """``fold -w width``: every line cut into pieces of at most ``width`` characters."""
    out = []
    for line in text.splitlines():
        while len(line) > width:
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return "\n".join(out) + "\n"


def _verdict(paths: list[Path]) -> tuple[str, int | None]:
    v = analyze(paths, catalog=CATALOG).diagnosis.verdict
    return v.category, v.rank


@pytest.mark.parametrize("width", [80, 100, 120])
@pytest.mark.parametrize(
    "case",
    [
        "b-llamafactory-reduce-scatter-watchdog-timeout",  # the watchdog line, cut in WorkNCCL
        "a-torchrun-exit9-local5",  # torchrun's exit line, cut inside its needle
        "b-ray-raylet-oom-workers-killed",
    ],
)
def test_a_folded_real_log_keeps_its_verdict(case: str, width: int, tmp_path: Path) -> None:
    logs = sorted(p for p in (WILD / case).iterdir() if p.name != "expected.toml")
    folded = []
    for p in logs:
        q = tmp_path / p.name
        q.write_text(_fold(p.read_text(encoding="utf-8", errors="replace"), width))
        folded.append(q)
    assert _verdict(folded) == _verdict(logs)


def test_unwrap_keeps_offsets_and_line_numbers() -> None:
    data = b"0123456789abcdefghij\nKLMNO\nnext line\r\n"
    out = unwrap_block(data, 20)
    assert len(out) == len(data) and out.count(b"\n") == data.count(b"\n")
    assert out.split(b"\n")[:3] == [b"0123456789abcdefghijKLMNO", b"", b"next line\r"]


def test_unwrap_moves_a_crlf_files_carriage_return_behind_the_joined_line() -> None:
    data = b"0123456789abcdefghi\r\nKLMNO\r\n"
    assert unwrap_block(data, 20) == b"0123456789abcdefghiKLMNO\r\r\n\n"


@pytest.mark.parametrize(
    "text",
    [
        # the same longest line said twice (an exception printed by two handlers)
        "ImportError: x.so: cannot open shared object file: No such file or directory here\n"
        "next\n"
        "ImportError: x.so: cannot open shared object file: No such file or directory here\n"
        "other\n",
        # several ranks print the same message: each copy has its own prefix
        "".join(f"[rank{r}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB\n"
                for r in range(3)) + "short\n",
        # equally long iteration lines in a run
        "".join(f" [2024-05-01 12:00:0{i}] iteration {i}/100 | lm loss: 2.3E+00 | grad norm: 1.0\n"
                for i in range(5)) + "done\n",
    ],
)
def test_logs_that_are_not_wrapped_are_left_alone(text: str) -> None:
    assert hard_wrap_width(text.encode()) is None

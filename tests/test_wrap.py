"""Hard-wrapped logs: a message cut at terminal width is matched as one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.read.wrap import _continuation, hard_wrap_width, unwrap_block
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
        # a progress bar or tqdm line in the block: longer in bytes than the width it was cut at
        "c-memoryvla-dlc-host-prefixed-exit9-local0",
        "d-minicpmv-ckpt-shards-exit9-local2",
        "d-xflux-accelerate-exit9-local0-loading",
        "g-llamafactory-fsdp-qlora-exit11-local0",
        "b-deepspeed-fp16-loss-scale-collapse",
        "d-bionemo-timeouts-multi-pg-seqnums",
        # one line cut (at 120: a traceback frame; at 80: mpirun's signal line), or one line
        # said seven times and cut the same way each time
        "b-horovodrun-process0-status-137",
        "b-horovod-mpirun-rank1-killed",
        "a-mlperf-thc-invalid-ordinal-dgx2",
        # lines a terminal copy padded with spaces: a cut leaves a line of spaces
        "a-ddp-broadcast-desync-timeout-wrapped",
        "c-drn-wsod-d2-spawn-process3-sigkill",
        # a paste's margin or a wrapper's tag is looked for on the unwrapped lines
        "h-mpiexec-aurora-fsdp2-torch-not-compiled-cuda",
        "h-torchrun-all-ranks-syntaxerror-at-import",
        "h-torchrun-wrapper-prefix-typeerror-rank0",
        # a log that begins inside a traceback: the frame below is found past the empty lines
        # an unwrap leaves
        "c-pytorch-ci-gha-timestamp-rank0-assert",
        "f-torchtitan-async-pinned-ckpt-save-rootcause-rank0",
        # the rank's traceback below a line cut in three: past the unwrap's empty lines
        "d-swift-rlhf-nan-probability-assert-rank5",
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


@pytest.mark.parametrize(
    "text",
    [
        # the one longest line, followed by a line that starts with a label of its own
        "x" * 30 + " bind failed: address already in use\n"
        "srun: error: node001: task 0: Exited with exit code 1\n",
        # the one longest line ends where its message does, the next starts a record
        "Loading checkpoint shards from /data/ckpt/model-00001-of-00007.safetensors done.\n"
        "epoch 1 started\n",
        # a box drawn in multi-byte characters: every row is as wide, in characters only
        "".join(f"\u2502 frame {i}: " + "x" * 60 + " \u2502\n" for i in range(5)) + "Error\n",
    ],
)
def test_logs_that_are_not_wrapped_are_left_alone_too(text: str) -> None:
    assert hard_wrap_width(text.encode()) is None


def test_a_wrap_at_text_columns_is_found_past_a_line_longer_in_bytes() -> None:
    # a tqdm bar: 70 characters, 158 bytes; the file was cut at 70 characters, not bytes
    bar = "Loading: 50%|" + "\u2588" * 44 + "| 1/2 [00:01]"
    assert len(bar) == 70 < len(bar.encode())
    msg = "failed (exitcode: -9) local_rank: 2 (pid: 29736) of binary: /opt/conda/bin/python3"
    text = _fold(bar + "\n" + msg + "\n" + msg.replace("2", "3") + "\n", 70)
    assert hard_wrap_width(text.encode()) == 70
    # the bar's line, exactly as wide in characters, is cut there too and joined
    out = unwrap_block(_fold(bar + "tail\nnext\n", 70).encode(), 70)
    assert out.split(b"\n")[0].decode() == bar + "tail"


@pytest.mark.parametrize("times", [1, 3])
def test_one_line_cut_inside_a_word_is_a_wrap(times: int) -> None:
    line = "mpirun noticed that process rank 1 with PID 4242 on node gpu07 exited on signal 9."
    text = "start\n" + _fold(line, 64) * times + "done\n"
    assert hard_wrap_width(text.encode()) == 64


def test_one_line_cut_at_a_word_boundary_is_not_a_wrap() -> None:
    # the piece ends in a space: nothing tells a cut from a line that ends there
    line = "mpirun noticed that process rank 1 with PID 4242 on node gpu07 exited on signal 9."
    assert line[62] == " "
    assert hard_wrap_width(_fold(line, 63).encode()) is None


def test_a_padded_lines_cut_off_spaces_continue_it() -> None:
    line = "x" * 70 + " " * 50  # a terminal copy padded the line to 120 columns
    assert _continuation(b" " * 50, line[:70].encode())
    assert _continuation(b" " * 50 + b"\r", line[:70].encode())
    assert not _continuation(b"\r", line[:70].encode())  # a CRLF file's empty line
    assert not _continuation(b"", line[:70].encode())
    msgs = [f"[rank{r}]:[E513] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={r})"
            for r in range(3)]
    padded = "".join(m + " " * (120 - len(m)) + "\n" for m in msgs)
    assert hard_wrap_width(_fold(padded, 64).encode()) == 64

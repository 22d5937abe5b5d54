"""Near misses keep their meaning: a line cut before the end of what a pattern matches (a
version that prints fewer trailing clauses, a paste or a wrap cut short) is read by that pattern
at lower confidence, never by the generic exception fallback.

The reader claims a near miss only for a line that reads as an error (an exception line, an
error-level logger prefix, an NCCL warning, a catalog candidate): a harmless line that happens
to hold a needle (torchvision's ``UserWarning: Failed to load image Python extension``) stays
harmless.
"""

from __future__ import annotations

import pytest
import regex

from analyzer.api import analyze
from analyzer.catalog.model import GENERIC_EXCEPTION_TAG, Catalog, Pattern
from tests.helpers import builtin_catalog, write_job

CATALOG = builtin_catalog()
CLAUSE_END = regex.compile(r"[,.;:] ")
"""Where the clause holding a needle ends: punctuation and a space (not a dot in a path or an
address)."""
AMBIGUOUS = {
    # Cut at the clause, the line keeps only what patterns of different meaning share:
    **dict.fromkeys(
        [
            "hardware.xid.app_fault", "hardware.xid.follow_on", "hardware.xid.ecc",
            "hardware.xid.fallen_off_bus", "hardware.xid.gsp", "hardware.xid.nvlink",
            "hardware.xid.other", "hardware.xid.retirement_failure",
        ],
        "NVRM: Xid (PCI:…): — the Xid number that decides the meaning is cut",
    ),
    "nccl.warn.proxy_failure": "the proxy failure's reason (res=…, a socket) is cut",
    "nccl.warn.proxy_connect_system": "the proxy failure's reason (res=…, a socket) is cut",
    "megatron.maxconn.bare_assert": "the assert's source line: cut, it is not an error line",
    "training.loss_scale.collapsing": "cut, it is DeepSpeed's per-step overflow line (context)",
    # Known gap: cut right after "timeout:" inside an exception (DistBackendError, what():),
    # the assembled exception or the teardown's meaning wins over the timeout's near miss.
    "nccl.watchdog.timeout": "cut inside an exception message: read as that exception",
    "nccl.store.unique_id": "cut inside a DistBackendError: read as that exception",
    # Issue 40: the part of the line that says what kind of failure it is comes after the cut.
    "network.gloo.connect_failed": "cut before the socket error (refused, timed out) that "
    "makes a gloo connect a network failure",
    "megatron.ckpt.missing_file": "cut before the path that makes a missing file a checkpoint's",
}


def _catch_all(p: Pattern) -> bool:
    return p.role == "candidate" or GENERIC_EXCEPTION_TAG in p.tags or "fallback" in p.tags


def _cut_examples(cat: Catalog) -> list[tuple[str, str, str]]:
    """(pattern id, category, the example cut after its needle's clause), for every example of
    a root or symptom pattern whose cut differs from the example."""
    out = []
    for p in cat.patterns:
        if p.role not in ("root", "symptom") or _catch_all(p) or p.user:
            continue
        for ex in p.examples:
            n = next((n for n in p.needles if n in ex.line), None)
            if n is None:
                continue
            m = CLAUSE_END.search(ex.line, ex.line.index(n) + len(n))
            if m is not None:
                out.append((p.id, p.category, ex.line[: m.start() + 1]))
    return out


CUTS = _cut_examples(CATALOG)


@pytest.mark.parametrize(("pattern", "category", "line"), CUTS, ids=[c[0] for c in CUTS])
def test_an_example_cut_after_its_needles_clause_keeps_its_category(
    pattern: str, category: str, line: str, tmp_path: object
) -> None:
    if pattern in AMBIGUOUS:
        pytest.skip(AMBIGUOUS[pattern])
    rows = _rows(tmp_path, f"Traceback (most recent call last):\n  File \"x.py\", line 1\n{line}\n"
                 if _is_exception(line) else line + "\n")
    got = {r.category for r in rows if r.role in ("root", "symptom")}
    assert category in got, (line, got)


def _is_exception(line: str) -> bool:
    """A Python exception line (read inside a traceback, as Python prints it)."""
    return bool(regex.match(r"(?:\[\w+\]: ?)?[A-Za-z_][\w.]*(?:Error|Exception)\b", line))


def _rows(tmp_path: object, text: str) -> list:
    job = write_job(tmp_path / "job", {"slurm-1.out": text})  # type: ignore[operator]
    return list(analyze([job], catalog=CATALOG).rows)


def test_the_cut_examples_cover_the_catalog() -> None:
    assert len(CUTS) > 150


def test_megatron_nan_assertion_without_its_last_clause_keeps_its_rank(tmp_path: object) -> None:
    """Megatron's NaN-in-grad-norm assertion cut before ``Device:`` (a version that prints
    less, a paste cut short) is still nan_loss on the rank its message names."""
    line = ("AssertionError: Rank 5: found NaN in local grad norm in backward pass before "
            "data-parallel communication collective")
    rows = _rows(tmp_path, line + "\n")
    (root,) = [r for r in rows if r.role == "root"]
    assert (root.category, root.rank) == ("nan_loss", 5)


def test_a_harmless_warning_holding_a_needle_stays_harmless(tmp_path: object) -> None:
    line = ("/venv/lib/python3.10/site-packages/torchvision/io/image.py:13: UserWarning: Failed "
            "to load image Python extension: libtorch_cuda_cu.so: cannot open shared object file")
    d = analyze([write_job(tmp_path / "job", {"a.log": line + "\n"})],  # type: ignore[operator]
                catalog=CATALOG).diagnosis
    assert d.status == "ok"


def test_a_near_miss_is_less_sure_than_a_match(tmp_path: object) -> None:
    """torchrun's exit line cut after its local rank (an error-level logger prefix): host_oom
    as the full line is, at the near miss's lower confidence, with the captures it holds."""
    cut = ("E0731 10:50:08.043000 3247964 torch/distributed/elastic/multiprocessing/api.py:869] "
           "failed (exitcode: -9) local_rank: 0 (pid: 3248")
    rows = [r for r in _rows(tmp_path, cut + "\n") if r.role != "context"]
    assert [(r.category, r.cap("near_miss"), r.cap("exitcode")) for r in rows] == [
        ("host_oom", "1", "-9")
    ]


COUNTER = sorted({ce for p in CATALOG.patterns for ce in p.counter_examples})
CLAIMED_ON_PURPOSE = {
    # a cut copy of a real failure line, a near miss by design
    "LustreError: recovered",
}


def test_no_counter_example_is_claimed_as_a_near_miss(tmp_path: object) -> None:
    """A line a pattern must not match is not read as a near miss of it or of another."""
    claimed = []
    for i, line in enumerate(COUNTER):
        job = write_job(tmp_path / f"j{i}", {"a.log": line + "\n"})  # type: ignore[operator]
        rows = analyze([job], catalog=CATALOG).rows
        if any(r.cap("near_miss") for r in rows) and line not in CLAIMED_ON_PURPOSE:
            claimed.append(line)
    assert claimed == []

"""No false alarms, line by line: every catalog pattern (not only the one that wins a line) is
run against every line of the successful sample jobs; a non-context pattern that fires there is
a defect. (tests/test_samples.py checks the verdict and the events; this checks the catalog.)"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from _robust import CATALOG, expected

from analyzer.lines.prefixes import split_prefixes
from analyzer.util.sanitize import clean_line, decode
from tests.helpers import SAMPLES

SUCCESSFUL = [s for s in SAMPLES if expected(s).get("category") == "none"]


def _lines(f: Path) -> list[bytes]:
    data = f.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.split(b"\n")


@pytest.mark.skipif(not SUCCESSFUL, reason="no successful sample job recorded yet")
@pytest.mark.parametrize("sample", SUCCESSFUL, ids=lambda p: p.name)
def test_no_catalog_pattern_fires_on_a_successful_job(sample: Path) -> None:
    loud = []
    for f in sorted(sample.rglob("*")):
        if not f.is_file() or f.name in ("expected.toml", "FIXTURE.md", "README.md"):
            continue
        for n, raw in enumerate(_lines(f), 1):
            msg = split_prefixes(clean_line(decode(raw[:65536]))).message
            for pm in CATALOG.match_all(msg):
                if pm.pattern.role != "context":
                    loud.append(f"{f.relative_to(sample)}:{n}: {pm.pattern.id}: {msg[:120]}")
    assert loud == []

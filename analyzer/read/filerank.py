"""The rank a log file's name gives: per-rank files a launcher or a script writes
(``rank0.log`` … ``rank2.log``, PaddlePaddle's ``workerlog.0`` … ``workerlog.7``, detectron2's
``log.txt.rank1``), read by the path claims of ``patterns/claims/ranks.toml``.

A name is a rank claim only as one of a set, two files or more in one directory whose names
differ in that number alone, unless the claim says its name is specific enough (``alone``): a
single ``…_rank8.out`` is a job's name (BLIP2-adalink's LoRA rank 8 job in the wild corpus ran one
process), not its rank. A claim with a ``base`` group also names the file called by that group
alone (detectron2 writes rank 0 to ``log.txt``, rank N to ``log.txt.rankN``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import replace

from analyzer.catalog.claims import RankClaim, path_claims
from analyzer.read.logfile import LogFile

Group = tuple[str, str, str]
"""(claim id, directory, the name with its rank part taken out)."""


def _read(c: RankClaim, name: str) -> tuple[int, str, str | None] | None:
    """(number, the name with it taken out, the ``base`` name) when claim ``c`` reads a rank
    from ``name``."""
    m = c.regex.search(name) if c.regex is not None else None
    if m is None:
        return None
    a, b = m.span("rank")
    base = m["base"] if "base" in m.re.groupindex else None
    return int(m["rank"]), name[:a] + "#" + name[b:], base


def named_ranks(files: Sequence[LogFile]) -> list[LogFile]:
    """``files`` with the rank (or local rank) their names give (``path_claims``); a rank the
    path already gives (torchrun's ``--log-dir`` layout) is kept."""
    claims = {c.id: c for c in path_claims()}
    if not claims:
        return list(files)
    found, bases = _sets(files, claims)
    out = list(files)
    for (cid, _folder, _rest), by_number in found.items():
        if len(by_number) >= 2 or claims[cid].alone:
            for number, i in by_number.items():
                out[i] = _with(out[i], claims[cid], number)
    for i, lf in enumerate(out):
        hit = bases.get(posixpath.split(lf.rel))
        if hit is not None and lf.rank is None and lf.local_rank is None:
            out[i] = _with(lf, claims[hit[0]], hit[1])
    return out


def _sets(
    files: Sequence[LogFile], claims: dict[str, RankClaim]
) -> tuple[dict[Group, dict[int, int]], dict[tuple[str, str], tuple[str, int]]]:
    """(group -> number -> index of its file; (directory, base name) -> (claim, rank)) of the
    files whose names a claim reads, the first claim that reads a name taking it."""
    found: dict[Group, dict[int, int]] = {}
    bases: dict[tuple[str, str], tuple[str, int]] = {}
    for i, lf in enumerate(files):
        if lf.local_rank is not None:
            continue
        folder, name = posixpath.split(lf.rel)
        for c in claims.values():
            got = _read(c, name)
            if got is None:
                continue
            found.setdefault((c.id, folder, got[1]), {}).setdefault(got[0], i)
            if got[2] is not None and c.base is not None:
                bases[(folder, got[2])] = (c.id, c.base)
            break
    return found, bases


def _with(lf: LogFile, c: RankClaim, number: int) -> LogFile:
    """``lf`` with the rank (or local rank) ``c`` read from its name."""
    if c.gives == "rank":
        return replace(lf, rank=number)
    return replace(lf, local_rank=number)

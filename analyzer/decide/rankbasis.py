"""What a verdict's rank rests on, as the kind of rank claim that gave it (``rank_basis`` in the
JSON report): the claim on the verdict's own line (``patterns/claims/ranks.toml``), the rank
rule that settled it, or the job's shape when attribution computed it (node index × processes
per node + local rank, a ChildFailedError record)."""

from __future__ import annotations

from analyzer.catalog.claims import RankClaim, Reader, path_claims, rank_claims
from analyzer.lines.prefixes import split_prefixes
from analyzer.model.event import Event


def _prefix_claim(e: Event) -> RankClaim | None:
    pre = split_prefixes(e.text)
    got = {"rank": pre.rank, "local_rank": pre.local_rank, "task": pre.task}
    want = {"rank": e.rank, "local_rank": e.local_rank}
    for c in rank_claims():
        if c.reader != Reader.PREFIX or got.get(c.gives) is None:
            continue
        if c.gives == "task" or want.get(c.gives) in (None, got[c.gives]):
            return c
    return None


_PLACING = ("global_rank", "local_rank", "task")
"""Capture roles that place the line's own writer."""


def _capture_or_message_claim(e: Event) -> RankClaim | None:
    for c in rank_claims():
        if c.reader == Reader.MESSAGE and c.read(e.message or e.text) == e.rank:
            return c
        if c.reader == Reader.CAPTURE and c.role in _PLACING and e.role_of(c.role) is not None:
            return c
    return None


def _path_claim(e: Event) -> RankClaim | None:
    """The claim of a per-rank file's name that gives the event's rank (or local rank)."""
    name = e.file.rsplit("/", 1)[-1]
    for c in path_claims():
        n = c.read(name)
        if n is not None and n == (e.rank if c.gives == "rank" else e.local_rank):
            return c
    return None


def rank_basis(e: Event | None, rank: int | None, rule: str | None) -> dict[str, str] | None:
    """``{"kind": …, "claim": …}`` for a named rank: the kind of claim that named it on its own
    line, ``rank-rule`` (``claim`` is the rule) when a rank rule settled it, ``shape`` when only
    the job's geometry placed it; None when no rank is named."""
    if rank is None:
        return None
    if rule is not None:
        return {"kind": "rank-rule", "claim": str(rule)}
    if e is None:
        return None
    c = _prefix_claim(e) if e.rank == rank else None
    c = c or (_capture_or_message_claim(e) if e.rank == rank else None)
    c = c or (_path_claim(e) if e.rank == rank else None)
    if c is None:
        return {"kind": "shape", "claim": "geometry"}
    return {"kind": str(c.kind), "claim": c.id}

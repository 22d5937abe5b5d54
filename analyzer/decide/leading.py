"""A launch advisory that explains the verdict leads it: its finding opens the cause and its
fix opens the verdict's fix, whose steps the advisory makes irrelevant are dropped (a free port
when the launcher was given the wrong node count, "longer --time" when the time limit was hit
because training restarted from scratch)."""

from __future__ import annotations

from dataclasses import replace

from analyzer.decide.fixsteps import Step, assemble, catalog_steps, step, topics_of
from analyzer.decide.verdict import Diagnosis

LEADS = frozenset({"worker-group", "master-addr", "worker-output", "restart-from-scratch",
                   "node-local-path"})
"""Advisory rules whose breach, when it explains the verdict, is the thing to fix first."""


_COMMANDS = frozenset({"export", "srun", "sbatch", "scontrol", "cd", "uv", "python", "torchrun",
                       "unset", "mkdir"})


def _sentence_case(text: str) -> str:
    """``text`` with a capital first letter, unless it starts with a command or an option
    (``export MASTER_ADDR=...``, ``--nnodes ...``) that must be typed as written."""
    first = text.split(" ", 1)[0]
    if not first.isalpha() or first in _COMMANDS:
        return text
    return text[:1].upper() + text[1:]


def _leader(d: Diagnosis) -> object | None:
    category = d.verdict.category
    return next((a for a in d.advisories if a.explains_verdict and a.rule in LEADS
                 and category in getattr(a, "explains", frozenset())), None)


def lead(d: Diagnosis) -> Diagnosis:
    """``d`` with its leading advisory (one whose own finding explains the verdict's category,
    not only a script rule tied to it) in front of the verdict's cause and fix."""
    a = _leader(d)
    if a is None:
        return d
    v = d.verdict
    drops = set(getattr(a, "drops", frozenset()))
    first = str(getattr(a, "fix", ""))
    rest: list[Step] = [s for s in catalog_steps(v.fix) if not (topics_of(s.text) & drops)]
    fix = assemble([step(_sentence_case(first), *topics_of(first)), *rest], {})
    message = str(getattr(a, "message", ""))
    cause = f"Launch mistake: {message}. {v.cause}"
    return replace(d, verdict=replace(v, cause=cause, fix=fix))

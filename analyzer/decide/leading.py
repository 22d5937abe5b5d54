"""A launch advisory that explains the verdict leads it: its finding opens the cause and its
fix opens the verdict's fix, whose steps the advisory makes irrelevant are dropped (a free port
when the launcher was given the wrong node count, "longer --time" when the time limit was hit
because training restarted from scratch)."""

from __future__ import annotations

from dataclasses import replace

import regex

from analyzer.decide.advisory import Advisory
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


_SENTENCE_END = regex.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def _first_sentence(text: str) -> str:
    """The first sentence of ``text`` (a stop followed by a capital ends it)."""
    return _SENTENCE_END.split(text, maxsplit=1)[0]


def _leader(d: Diagnosis) -> Advisory | None:
    """The advisory that leads a failed job's verdict: one whose own finding explains the
    verdict's category first, else any that explains the verdict (a script rule tied to its
    category: ``advisories.VERDICT_RULES``); never a note."""
    category = d.verdict.category
    explaining = [a for a in d.advisories if a.explains_verdict and a.severity != "note"]
    own = (a for a in explaining if a.rule in LEADS and category in a.explains)
    return next(own, None) or next(iter(explaining), None)


def _ran_with_mistake(d: Diagnosis) -> Diagnosis:
    """A job that ran without a failure but broke a launch rule that its logs show (independent
    worlds, a wrong CUDA_DEVICE_MAX_CONNECTIONS, the venv rebuilt in every job): the verdict says
    so, with the rule's fix (never "Nothing to fix"); its status stays ``ok`` and
    ``launch_mistake`` is set (exit code 5). A finding of the batch script alone stays an
    advisory: the logs do not show that it mattered."""
    a = next((a for a in d.advisories
              if a.severity in ("error", "warning") and not a.script_only), None)
    if a is None:
        return d
    v = d.verdict
    verdict = replace(
        v,
        title=f"Ran, with a launch mistake [{a.rule}]",
        cause=f"The job ran without a failure, but it broke a launch rule: {a.message}.",
        fix=_sentence_case(a.fix),
    )
    marked = tuple(replace(x, explains_verdict=True) if x is a else x for x in d.advisories)
    return replace(d, verdict=verdict, advisories=marked, launch_mistake=True)


def lead(d: Diagnosis) -> Diagnosis:
    """``d`` with its leading advisory in front of the verdict's cause and fix (a failed job),
    or its launch mistake as the verdict of a job that ran (``_ran_with_mistake``)."""
    if d.status == "ok":
        return _ran_with_mistake(d)
    a = _leader(d)
    if a is None:
        return d
    v = d.verdict
    drops = set(a.drops)
    first = a.fix
    rest: list[Step] = [s for s in catalog_steps(v.fix) if not (topics_of(s.text) & drops)]
    fix = assemble([step(_sentence_case(first), *topics_of(first)), *rest], {})
    # The advisory's message leads the cause; when the verdict's own line is the advisory's
    # evidence, only the line's first sentence follows (the rest explains what the advisory
    # now says).
    same = v.pattern_id is not None and v.pattern_id in a.patterns
    cause = f"Launch mistake: {a.message}. {_first_sentence(v.cause) if same else v.cause}"
    return replace(d, verdict=replace(v, cause=cause, fix=fix))

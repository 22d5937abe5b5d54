"""A fix as one piece of advice: de-duplicated steps, each checked against the job's facts.

A fix is assembled from several sources (the advice fitted to the job, the catalog's fix, a
launch advisory). Each source gives :class:`Step` s: one sentence, the topics it covers and the
condition under which it applies (GPU generation, Megatron version, parallelism, launcher,
whether Flight Recorder dumps were read). :func:`assemble` keeps the steps in order (the most
specific source first), drops a step whose condition the job's facts contradict, and drops a
step whose topic an earlier step already covers or whose words an earlier step already says.
The catalog's free text is split into sentences whose topics and conditions
:func:`catalog_steps` reads from their words.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import regex

PRE_BLACKWELL = frozenset({"Volta", "Ampere", "Ada", "Hopper"})


@dataclass(frozen=True)
class When:
    """When a step applies; an empty field means "whatever the job's facts say"."""

    gpu: frozenset[str] = frozenset()
    """GPU generations it applies to."""
    megatron_at_most: tuple[int, int] | None = None
    """Megatron-core versions up to this one (inclusive)."""
    version_known: bool = False
    """Only when the logs show a Megatron version in range (an upgrade's advice)."""
    tp_or_cp: bool = False
    """Only with tensor or context parallelism > 1."""
    uv: bool = False
    """Only when the job runs from a uv-managed venv (not a container or conda python)."""
    not_uv: bool = False
    """Only when the logs show a conda, container or system python (no venv)."""
    no_dumps: bool = False
    """Only when no Flight Recorder dumps were read (advice to rerun with them)."""
    dumps: bool = False
    """Only when Flight Recorder dumps were read (advice to read them)."""
    ports_differ: bool = False
    """Only unless the logs show every node used the same MASTER_PORT (fact ``ports_agree``)."""
    on_master: bool = False
    """Only when the host it names runs the store: never a host outside the allocation or a
    node other than the master (fact ``store_on_master``; a port check)."""
    shared_checkpoints: bool = False
    """Only unless the checkpoints were on node-local storage (fact ``checkpoints_node_local``:
    no "resubmit from the last checkpoint" when there is none to resubmit from)."""


@dataclass(frozen=True)
class Step:
    """One sentence of a fix."""

    text: str
    topics: frozenset[str] = frozenset()
    when: When = field(default_factory=When)


def step(text: str, *topics: str, when: When | None = None) -> Step:
    """A step with its topics (``when`` defaults to always)."""
    return Step(text.strip(), frozenset(topics), when or When())


_VERSION = regex.compile(r"(\d+)\.(\d+)")


_SERIES = {"0.10-0.12": (0, 12), "0.13+": (0, 13)}


def megatron_version(facts: Any) -> tuple[int, int] | None:
    """(major, minor) of the Megatron-core version the logs show, if any; else the series its
    world-size line's format shows, as its last (0.10-0.12) or first (0.13+) version."""
    v = facts.get("megatron_version")
    m = _VERSION.search(str(v)) if v else None
    if m:
        return int(m[1]), int(m[2])
    return _SERIES.get(str(facts.get("megatron_series")))


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _parallel_contradicts(facts: Any) -> bool:
    tp, cp = _int(facts.get("tp")), _int(facts.get("cp"))
    return tp is not None and tp <= 1 and (cp is None or cp <= 1)


def _version_contradicts(when: When, facts: Any) -> bool:
    """The step is for megatron-core up to a version, and the job's is later (or unknown,
    when the step needs it known)."""
    if when.megatron_at_most is None:
        return False
    ver = megatron_version(facts)
    if ver is None:
        return when.version_known
    return ver > when.megatron_at_most


def _env_contradicts(when: When, facts: Any) -> bool:
    """The job's python rules the step out: uv advice to a conda, container or system python
    (or where `uv` itself is missing), an environment's own launcher to a uv venv."""
    other = facts.get("python_env") in ("container", "conda", "system")
    return ((when.uv and (other or bool(facts.get("uv_missing"))))
            or (when.not_uv and not other))


def _launch_contradicts(when: When, facts: Any) -> bool:
    """The launch facts rule the step out: ports that agree, a store host that is not the
    master, checkpoints that were node-local."""
    return ((when.ports_differ and facts.get("ports_agree") is True)
            or (when.on_master and facts.get("store_on_master") is False)
            or (when.shared_checkpoints and facts.get("checkpoints_node_local") is True))


def contradicted(when: When, facts: Any) -> bool:
    """True when the job's facts rule the step out (unknown facts never do)."""
    gen = facts.get("gpu_generation")
    if when.gpu and gen and gen not in when.gpu:
        return True
    if _version_contradicts(when, facts):
        return True
    if when.tp_or_cp and _parallel_contradicts(facts):
        return True
    if _env_contradicts(when, facts) or _launch_contradicts(when, facts):
        return True
    dumps = bool(facts.get("flight_recorder_dumps"))
    return (when.no_dumps and dumps) or (when.dumps and not dumps)


_TOPICS: tuple[tuple[str, regex.Pattern[str]], ...] = tuple(
    (name, regex.compile(rx, regex.I))
    for name, rx in (
        ("micro-batch", r"micro[- _]batch|batch size"),
        ("recompute", r"recompute|activation recomputation"),
        ("shard", r"increase TP|TP/PP|shard the model"),
        ("distributed-optimizer", r"distributed[- ]optimizer"),
        ("alloc-conf", r"expandable_segments"),
        ("gpu-shared", r"(?:another|second|other) process|share the GPU|two jobs or two ranks"),
        ("find-first", r"^A consequence|find why the master"),
        ("find-culprit", r"rank that did NOT time out|that rank is the cause"
                         r"|find the first failing rank"),
        ("fr-rerun", r"TORCH_NCCL_TRACE_BUFFER_SIZE|TORCH_NCCL_DUMP_ON_TIMEOUT|TORCH_FR_"),
        ("master-addr", r"MASTER_ADDR (?:must be|is) the first host|first host of the allocation"
                        r"|scontrol show hostnames"),
        ("missing-nodes", r"missing nodes|every node started|never started"),
        ("one-task-per-node", r"ntasks-per-node=1|one srun task"),
        ("master-port", r"MASTER_PORT"),
        ("same-port", r"same MASTER_PORT|MASTER_PORT (?:matches|agrees)( everywhere)?"),
        ("resubmit-checkpoint", r"resubmit from the last"),
        ("port-free", r"port \d+ is free|ss -ltnp"),
        ("free-port", r"free (?:MASTER_)?port|leftover (?:python/torchrun )?processes"),
        ("uv-launcher", r"uv run"),
        ("uv-sync", r"uv sync"),
        ("maxconn-blackwell-bug", r"0\.12\b.*Blackwell|Blackwell.*0\.12\b|precedence bug"),
        ("maxconn-export", r"export CUDA_DEVICE_MAX_CONNECTIONS=1\b"),
        ("maxconn-unset", r"unset (?:it|CUDA_DEVICE_MAX_CONNECTIONS)|delete the line"),
        ("nproc-value", r"nproc[-_]per[-_]node (?:is )?\d|Make --nproc-per-node equal"),
        ("maxconn-conditional", r"(?:only |un)conditionally"),
        ("pythonpath", r"PYTHONPATH"),
        ("shared-worktree", r"worktree on (?:shared )?storage"
                            r"|(?:put|keep) the worktree on storage"),
        ("add-pattern", r"add a pattern|patterns suggest"),
        ("gpu-pin", r"own GPU|set_visible_devices|only one process uses each GPU"),
    )
)


_COVERS: dict[str, frozenset[str]] = {
    # "run one srun task per node" is what "check that every node started" would find out
    "one-task-per-node": frozenset({"missing-nodes"}),
}
"""Topics a step covers by saying what to do about them: a later step on the covered topic
restates the instruction as a question (two launchers on one node: no "check that every node
started (srun --ntasks-per-node=1 …)" after "run one srun task per node")."""


def covered(topics: Iterable[str]) -> set[str]:
    """``topics`` and the topics they cover (:data:`_COVERS`)."""
    out = set(topics)
    for t in list(out):
        out |= _COVERS.get(t, frozenset())
    return out


def topics_of(text: str) -> frozenset[str]:
    """The topics a sentence covers, read from its words."""
    return frozenset(name for name, rx in _TOPICS if rx.search(text))


def _when_of(text: str) -> When:
    """The condition a catalog sentence states in its words."""
    if regex.search(r"Blackwell", text) and regex.search(r"\b0\.1[23]\b", text):
        # an upgrade's advice only where the logs show a version the upgrade fixes
        return When(gpu=frozenset({"Blackwell"}), megatron_at_most=(0, 12),
                    version_known="upgrade" in text.lower())
    if regex.search(r"pre-Blackwell|Hopper/Ampere|on Hopper|on Ampere", text) and regex.search(
        r"CUDA_DEVICE_MAX_CONNECTIONS=1\b", text
    ):
        return When(gpu=PRE_BLACKWELL)
    if regex.search(r"\buv (?:run|sync)\b", text):
        return When(uv=True)
    if topics_of(text) & {"same-port"}:
        return When(ports_differ=True)
    if topics_of(text) & {"port-free"}:
        return When(on_master=True)
    if topics_of(text) & {"resubmit-checkpoint"}:
        return When(shared_checkpoints=True)
    if topics_of(text) & {"fr-rerun"}:
        return When(no_dumps=True)
    return When()


_SENTENCE = regex.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (a period inside ``e.g.`` or a version does not cut)."""
    text = text.strip()
    if text in ("", "-"):
        return []
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def without(text: str, topic: str) -> str:
    """``text`` less its sentences on ``topic`` (a culprit named: no step to go and find one)."""
    return " ".join(s for s in sentences(text) if topic not in topics_of(s))


def catalog_steps(text: str) -> list[Step]:
    """The catalog's (or any free) fix text as steps, topics and conditions from its words."""
    return [Step(s, topics_of(s), _when_of(s)) for s in sentences(text)]


_WORD = regex.compile(r"[a-z0-9_]{4,}")
MIN_WORDS = 6
"""A sentence shorter than this (in words of four letters or more) is never taken for a
repeat by its words alone: short ones share common words by chance."""


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _said(s: Step, topics: set[str], words: set[str]) -> bool:
    """The step repeats what was said: every topic it covers is covered already, or most of
    its words were said."""
    if s.topics and s.topics <= topics:
        return True
    w = _words(s.text)
    return len(w) >= MIN_WORDS and len(w & words) / len(w) >= 0.6


def assemble(steps: Iterable[Step], facts: Any) -> str:
    """The fix: the steps in order, without repeats and without those the facts rule out."""
    out: list[str] = []
    topics: set[str] = set()
    words: set[str] = set()
    for s in steps:
        if not s.text or contradicted(s.when, facts) or _said(s, topics, words):
            continue
        out.append(s.text if s.text[-1] in ".!?" else s.text + ".")
        topics |= covered(s.topics | topics_of(s.text))
        words |= _words(s.text)
    return " ".join(out)


def repeats(fix: str) -> list[tuple[str, str]]:
    """Sentences of ``fix`` that say nothing new: every topic they cover, or most of their
    words, said by an earlier sentence (with the first sentence that said it)."""
    out = []
    topics: set[str] = set()
    words: set[str] = set()
    said: list[str] = []
    for s in sentences(fix):
        if said and _said(Step(s, topics_of(s)), topics, words):
            out.append((" ".join(said), s))
        topics |= covered(topics_of(s))
        words |= _words(s)
        said.append(s)
    return out

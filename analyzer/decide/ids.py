"""The ids the reasoning records: each verdict rule, rank-rule outcome and hang strategy has
one member here, and every other module names it by its member (never a bare string).

The members are ``StrEnum``s, so they compare equal to (and serialise as) the strings the JSON
report and the schema carry. Each id is declared with its rule's object (the rule's function,
what it applies to, its confidence or certainty, its words) in the rule's own module:
``analyzer.decide.rules`` (verdict rules), ``analyzer.decide.rank_decision`` (rank rules, by
family), ``analyzer.decide.hangs`` (hang strategies).
"""

from __future__ import annotations

from enum import StrEnum


class VerdictId(StrEnum):
    """A verdict rule (``Verdict.rule``)."""

    ROOT = "root"
    END_AFTER_SYMPTOMS = "end-after-symptoms"
    SLURM_END = "slurm-end"
    DEATH_RECORD = "death-record"
    CUT_TRACEBACK = "cut-traceback"
    HANG = "hang"
    SYMPTOMS = "symptoms"
    UNKNOWN = "unknown"
    DEAD_WORKER = "dead-worker"
    STALLED_START = "stalled-start"
    NONE = "none"
    INFERRED = "inferred"
    ALTERNATIVE = "alternative"


class RankId(StrEnum):
    """An outcome of a rank rule (``Verdict.rank_rule``); a rule may have several."""

    SLURM_END = "slurm-end"
    CULPRIT = "culprit"
    STILL_WORKING = "still-working"
    SILENT_RANK = "silent-rank"
    SAME_WAY_FIRST = "same-way-first"
    SAME_WAY_TOGETHER = "same-way-together"
    SAME_WAY_UNRANKED = "same-way-unranked"
    PEER_DIED_FIRST = "peer-died-first"
    FROM_LINE = "from-line"
    TRACEBACK_BELOW = "traceback-below"
    NAMED_ABOVE = "named-above"
    OWN_TRACEBACK = "own-traceback"
    LINK_END = "link-end"
    VICTIM = "victim"
    ONLY_DEATH = "only-death"
    FIRST_OBSERVED = "first-observed"
    SRUN_TASK = "srun-task"
    SRUN_EXIT = "srun-exit"
    SRUN_EXITS_MANY = "srun-exits-many"
    UNIFORM = "uniform"
    ANOTHER_DIED = "another-died"
    DIED_TOGETHER = "died-together"
    PASTE_CUT = "paste-cut"
    EARLIER_TRACEBACK = "earlier-traceback"
    NOT_JOINED = "not-joined"
    ONLY_RANK = "only-rank"
    INFERRED = "inferred"


class HangId(StrEnum):
    """How the hang analysis named its culprit, or none (``HangFinding.rule``)."""

    DESYNC = "desync"
    OP_MISMATCH = "op-mismatch"
    CALL_MISMATCH = "call-mismatch"
    LOWEST_ENQUEUED = "lowest-enqueued"
    LOWEST_COMPLETED = "lowest-completed"
    MISSING = "missing"
    NONE = "none"
    DUMPS = "dumps"


class Certainty(StrEnum):
    """How sure a named rank is (``Verdict.rank_certainty``)."""

    CERTAIN = "certain"
    LIKELY = "likely"
    POSSIBLE = "possible"
    ASSUMED = "assumed"
    UNKNOWN = "unknown"

"""The job as the decision rules see it: one attempt's events sorted by what they can mean."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from analyzer.catalog.vocabulary import SLURM_END_CATEGORIES
from analyzer.decide.promote import promote
from analyzer.model.event import CONTEXT, ROOT, SYMPTOM, Event
from analyzer.shape.attribute import Geometry
from analyzer.shape.facts import JobFacts

if TYPE_CHECKING:
    from analyzer.decide.flightrec import CulpritEvent


@dataclass(frozen=True)
class JobView:
    """Read-only input of every decision rule: the rows (promotions applied), the job's facts
    and shape, and the rows sorted into roots, SLURM ends and symptoms."""

    rows: tuple[Event, ...]
    facts: JobFacts
    geo: Geometry
    active: tuple[Event, ...]
    """Every row but context lines."""
    roots: tuple[Event, ...]
    """Root events that are not a SLURM end."""
    ends: tuple[Event, ...]
    """SLURM ends (time limit, preemption, node failure, cancellation) logged as roots."""
    stated_ends: tuple[Event, ...]
    """The ends that stand on their own: not srun's teardown of a step after one of its tasks
    exited (tag ``srun-teardown``, ``analyzer.decide.promote.srun_teardown``), which is never
    the verdict or an alternative by itself."""
    symptoms: tuple[Event, ...]
    universe: frozenset[int]
    """Every rank of the job: ``range(world_size)`` when it is known, else the ranks seen."""
    dumps: CulpritEvent | None = None
    """The event in which the Flight Recorder dumps name a culprit (made from the finding
    the decision is given: ``analyzer.decide.flightrec.culprit_event``)."""

    @classmethod
    def of(
        cls, rows: Sequence[Event], facts: JobFacts, geo: Geometry,
        dumps: CulpritEvent | None = None,
    ) -> JobView:
        """The view of ``rows`` (never changed) for one decision."""
        promoted = tuple(promote(rows))
        active = tuple(r for r in promoted if r.role != CONTEXT)
        ends = tuple(r for r in active if r.category in SLURM_END_CATEGORIES and r.role == ROOT)
        return cls(
            rows=promoted,
            facts=facts,
            geo=geo,
            active=active,
            roots=tuple(
                r for r in active if r.role == ROOT and r.category not in SLURM_END_CATEGORIES
            ),
            ends=ends,
            stated_ends=tuple(r for r in ends if not r.tagged("srun-teardown")),
            symptoms=tuple(r for r in active if r.role == SYMPTOM),
            universe=frozenset(geo.ranks(promoted)),
            dumps=dumps,
        )


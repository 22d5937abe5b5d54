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
            universe=frozenset(geo.ranks(promoted)) | _communicator(geo, promoted),
            dumps=dumps,
        )


def _communicator(geo: Geometry, rows: tuple[Event, ...]) -> frozenset[int]:
    """With no world size stated, ranks 0..N-1 of the largest NCCL communicator a line names
    (its ``comm_size``: ``comm 0x… rank 7 nranks 8``): they exist, named or not, so an excerpt
    that shows four of eight ranks is not taken for the whole job (an ALCF all-gather hang in
    part L named the fourth rank in view as the one the others waited for). A communicator is
    never larger than the world, so this only adds ranks the job had."""
    if geo.world is not None:
        return frozenset()
    sizes = [int(v) for r in rows if (v := r.role_of("comm_size")) and v.isdecimal()]
    return frozenset(range(max(sizes))) if sizes else frozenset()


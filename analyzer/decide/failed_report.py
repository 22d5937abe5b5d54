"""A launcher's report that its workers failed, with nothing else to go on."""

from __future__ import annotations

from analyzer.decide.jobview import JobView
from analyzer.decide.ordering import earliest
from analyzer.model.event import Event


def failed_report(job: JobView) -> Event | None:
    """The launcher's report that workers failed, with the table that would say how cut off
    (torchrun's ``ChildFailedError:`` and ``train.py FAILED``, tag ``failed-report``): the job
    failed, cause unknown, never ``none`` (speechbrain under torch.distributed.launch on Jean
    Zay, part N; MCG-NJU/MeMOTR#1 pastes only ``ChildFailedError: main.py FAILED``). None when a
    training loop ended before it: the teardown failed (torchtitan, part J)."""
    reports = [r for r in job.rows if r.tagged("failed-report")]
    if not reports or any(r.tagged("training-done") for r in job.rows):
        return None
    return earliest(reports)

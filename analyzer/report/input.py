"""What a report is made from: a diagnosis (``analyzer.decide.verdict.Diagnosis``), and how.

A report reads the diagnosis only: its verdict, evidence, symptoms, facts, rank table, launch
geometry (``Diagnosis.shape``), Flight Recorder finding, advisories and the paths read. The
report functions also take anything that has one (``.diagnosis``), such as the API's
``Analysis``, without knowing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from analyzer.decide.verdict import Diagnosis

FORMATS = ("terminal", "text", "markdown", "html", "json")


class Diagnosed(Protocol):
    """Anything that carries a diagnosis (``analyzer.api.Analysis``, ``JobRun``)."""

    @property
    def diagnosis(self) -> Diagnosis:
        """The diagnosis a report shows."""
        ...


ReportInput = Diagnosis | Diagnosed
"""What the report functions take: a diagnosis, or anything that has one."""


def diagnosis_of(x: ReportInput) -> Diagnosis:
    """The diagnosis to report: ``x`` itself, or ``x.diagnosis``."""
    return x if isinstance(x, Diagnosis) else x.diagnosis


@dataclass(frozen=True)
class RenderOptions:
    """How to render a report (``analyzer.report.render``)."""

    fmt: str = "terminal"
    """``terminal``, ``text``, ``markdown``, ``html`` or ``json``."""
    width: int | None = None
    """The line width of the terminal and text reports (None: the terminal's width when
    ``color``, else 100)."""
    color: bool = False
    """ANSI colours in the terminal report."""
    quiet: bool = False
    """One line, ``category rank=… node=… confidence=…: cause`` (not for JSON)."""
    verbose: bool = False
    """The per-rank timeline; tracebacks and long lines whole."""

    def __post_init__(self) -> None:
        if self.fmt not in FORMATS:
            raise ValueError(f"unknown report format {self.fmt!r}; one of {', '.join(FORMATS)}")

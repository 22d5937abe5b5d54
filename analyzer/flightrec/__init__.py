"""PyTorch Flight Recorder dumps: read them safely (``load``), compare the ranks (``analyze``)."""

from analyzer.flightrec.analyze import FrFinding, analyze_dumps
from analyzer.flightrec.load import Dump, DumpError, DumpSet, load_dumps

__all__ = ["Dump", "DumpError", "DumpSet", "FrFinding", "analyze_dumps", "load_dumps"]

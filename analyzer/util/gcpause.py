"""Pause Python's cyclic garbage collector while a job is read and reasoned about.

The reader and the reasoning make hundreds of thousands of small objects that live until the
end (events, their captures, records) and no reference cycles: everything they drop is freed
by reference counting (``tests/test_gcpause.py`` checks it on every bundled job). The cyclic
collector would still walk all of them again and again as they pile up, a cost that grows
with the square of the job's events. While paused, it walks nothing; afterwards it runs as
it did, so a cycle made meanwhile is still collected then.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def paused_gc() -> Iterator[None]:
    """Switch the cyclic collector off for the block; back to its state before afterwards
    (nested use leaves it off until the outermost block ends)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def without_gc(func: Callable[P, R]) -> Callable[P, R]:
    """Decorator: run ``func`` under :func:`paused_gc`."""

    @wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with paused_gc():
            return func(*args, **kwargs)

    return run

"""A deadline for the work of one call: the server gives each request one
(``Config.request_deadline_s``), and long work checks it between its steps.

The checks sit only where stopping leaves nothing behind: between the slices of a large
embedding call and before a write's transaction begins. Once a transaction has begun it runs
to its end, so a request cut by its deadline has written all of its change or none of it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from .errors import DeadlineError

__all__ = ["check", "within"]

_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("engrammar_deadline", default=None)


@contextmanager
def within(seconds: float | None) -> Iterator[None]:
    """Run the block's work with a deadline ``seconds`` from now (``None`` or 0: none)."""
    if not seconds:
        yield
        return
    token = _DEADLINE.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check(what: str) -> None:
    """Raise :class:`~engrammar.errors.DeadlineError` if this call's deadline has passed."""
    found = _DEADLINE.get()
    if found is not None and time.monotonic() > found[0]:
        raise DeadlineError(
            f"the request passed its deadline of {found[1]:g} s (request_deadline_s) while "
            f"{what}; nothing was written"
        )

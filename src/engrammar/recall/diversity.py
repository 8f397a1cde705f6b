"""Many sessions before many turns of one session (pure functions, no I/O).

A question about the user's life often needs what was said in several conversations ("how many
trips did I take this year?"); the turns of one conversation on the topic share its words and
crowd the other conversations out of the top of the list. Each candidate after the first of
its session is discounted a little more than the one before it, so the best turn of a second
session can pass the third-best turn of the first.
"""

from __future__ import annotations

from collections.abc import Mapping

from .fusion import Candidate

__all__ = ["session_spread"]


def session_spread(
    cands: list[Candidate], sessions: Mapping[str, str | None], weight: float
) -> list[Candidate]:
    """Multiply the relevance of the n-th candidate of a session (n = 0 for its best) by
    ``(1 - weight) ** n``, in the order of ``cands`` (best first); best first again.
    Candidates without a session (``None`` or missing in ``sessions``) are left alone."""
    if weight <= 0:
        return cands
    seen: dict[str, int] = {}
    touched = False
    for cand in cands:
        session = sessions.get(cand.id)
        if session is None:
            continue
        n = seen.get(session, 0)
        seen[session] = n + 1
        if n:
            factor = (1.0 - weight) ** n
            cand.relevance *= factor
            cand.components["session_spread"] = round(1.0 - factor, 6)
            cand.components["relevance"] = round(cand.relevance, 6)
            touched = True
    return sorted(cands, key=lambda c: -c.relevance) if touched else cands

"""Session-level evidence: a memory in a session that is on the query's topic gains (pure).

A fact is often mentioned in passing ("by the way, I waited over a year for the decision")
inside a conversation about the same subject; the other messages of that session match the
query too, while a look-alike sentence in an unrelated session stands alone. Each candidate
gains a share of the relevance of the best other candidates of its own session.
"""

from __future__ import annotations

from collections.abc import Mapping

from .fusion import Candidate

__all__ = ["session_support"]

# How many of a session's other candidates count (their mean): one strong neighbour is
# what sequence support already passes on; a session is on topic when several match.
_TOP = 2


def session_support(
    cands: list[Candidate], sessions: Mapping[str, str | None], weight: float
) -> list[Candidate]:
    """Add ``weight ×`` the mean relevance of the best ``_TOP`` other candidates of the same
    session (missing ones count 0) to each candidate's relevance; best first again.

    ``sessions`` maps candidate ids to their memory's session id; memories without one are
    left alone. Computed from the relevances before this step, so it does not chain.
    """
    if weight <= 0:
        return cands
    members: dict[str, list[float]] = {}
    for cand in cands:
        sid = sessions.get(cand.id)
        if sid is not None:
            members.setdefault(sid, []).append(cand.relevance)
    for values in members.values():
        values.sort(reverse=True)
    touched = False
    for cand in cands:
        sid = sessions.get(cand.id)
        if sid is None or len(members[sid]) < 2:
            continue
        others = list(members[sid])
        others.remove(cand.relevance)
        gain = weight * sum(others[:_TOP]) / _TOP
        cand.relevance += gain
        cand.components["session"] = round(gain, 6)
        cand.components["relevance"] = round(cand.relevance, 6)
        touched = True
    return sorted(cands, key=lambda c: -c.relevance) if touched else cands

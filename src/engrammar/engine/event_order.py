"""Questions that name several events, in a ranking: each event represented early, by where
it was told (``recall.events``).

``by_events`` reads the events a question names; a memory of the head naming one is preceded
by the first message of its conversation that names it, whether search found that message or
not: an event is told where it happened ("I just got back from a bus ride to a wedding today",
in a message about a trip to Japan) and talked about after in words nearer the question, and
the telling is what dates it.
"""

from __future__ import annotations

from ..models import MemoryRecord, RecallFilter, Scope
from ..recall.events import cover_events, event_terms
from ..recall.text import speaker_of, terms
from .base import Engine, in_scope, own_word
from .validity import reordered

__all__ = ["EVENT_DEPTH", "by_events"]

# How far down a question's events are looked for (recall/events.py).
EVENT_DEPTH = 20
# Memories read per event word when looking for tellings search did not find.
_TELLINGS_READ = 200
# (record, score, components, note, via) of one ranked memory, as by_validity gives them.
_Item = tuple[MemoryRecord, float, dict[str, float], "str | None", str]


def by_events(
    engine: Engine,
    scope: Scope,
    query: str,
    items: list[_Item],
    as_of: float | None = None,
    where: RecallFilter | None = None,
) -> list[_Item]:
    """``items`` with each event a question names represented early (``event_cover``); a
    memory moved up this way carries the component ``event`` = 1, and a telling brought in
    from outside the head (see :func:`_with_tellings`) ``told`` = 1 too."""
    events = event_terms(query, {s for x in items if (s := speaker_of(x[0].metadata))})
    if not events:
        return items
    items, seq = _with_tellings(engine, scope, events, items, as_of, where)
    contents = {x[0].id: x[0].content for x in items}
    # Where in its conversation each was said: an event is represented by its first telling.
    head = [x[0] for x in items[:EVENT_DEPTH] if x[0].session_id is not None]
    unread = [r.id for r in head if r.id not in seq]  # the tellings' read holds the rest
    if unread:
        seq = {**seq, **engine.store.insertion_order(scope.workspace, unread)}
    said = {r.id: (str(r.session_id), seq.get(r.id, 0)) for r in head}
    order = cover_events(
        [x[0].id for x in items], contents.__getitem__, events, EVENT_DEPTH, said=said
    )
    return reordered(items, order, "event")


def _with_tellings(
    engine: Engine,
    scope: Scope,
    events: list[frozenset[str]],
    items: list[_Item],
    as_of: float | None,
    where: RecallFilter | None,
) -> tuple[list[_Item], dict[str, int]]:
    """``items`` with the first telling of an event brought into the head when search left
    it out of it: per conversation and speaker, the first message holding every word of an
    event (by the index's postings, at most ``_TELLINGS_READ`` a word, newest first), placed
    right after the first memory of the head that the same speaker said later in the same
    conversation, with that memory's score (``cover_events`` then puts it before the memories
    of its conversation that name the event). Only someone's own words tell of an event (no
    tool output, system prompt or assistant answer); ``where``, the scope and ``as_of`` hold
    as for any memory recall shows. Also returns the insertion order it read (of the head and
    the tellings; empty when it read none)."""
    head = [x for x in items[:EVENT_DEPTH] if x[0].session_id is not None]
    sessions = {x[0].session_id for x in head}
    ranked = {x[0].id for x in head}
    _, postings = engine.store.term_postings(scope, sorted(set().union(*events)), _TELLINGS_READ)
    holding: set[str] = set()
    for event in events:
        common = set.intersection(*(set(postings.get(w, (0, []))[1]) for w in event))
        holding |= common - ranked
    if not holding:
        return items, {}
    found = [
        r
        for r in engine.store.get_memories(scope.workspace, sorted(holding)).values()
        if r.session_id in sessions
        and own_word(r.role, r.kind)
        and in_scope(r, scope, where)
        and (as_of is None or r.created_at <= as_of)
    ]
    if not found:
        return items, {}
    seq = engine.store.insertion_order(
        scope.workspace, [x[0].id for x in head] + [r.id for r in found]
    )
    # Per conversation and speaker, the first telling of each event, ranked or not.
    first: dict[tuple[str, str, str | None, frozenset[str]], MemoryRecord] = {}
    tellers = [x[0] for x in head if own_word(x[0].role, x[0].kind)] + found
    for r in sorted(tellers, key=lambda r: seq.get(r.id, 0)):
        words = set(terms(r.content))
        for event in events:
            if event <= words:
                first.setdefault((str(r.session_id), r.role, speaker_of(r.metadata), event), r)
    out = list(items)
    for (session, role, speaker, _), told in first.items():
        if told.id in ranked:
            continue  # the head holds the first telling: cover_events puts it first
        later = [
            x
            for x in out[:EVENT_DEPTH]
            if x[0].session_id == session
            and seq.get(x[0].id, 0) > seq.get(told.id, 0)
            and x[0].role == role
            and speaker_of(x[0].metadata) == speaker
        ]
        if not later or told.id in {x[0].id for x in out[:EVENT_DEPTH]}:
            continue
        out = [x for x in out if x[0].id != told.id]
        anchor = later[0]
        at = out.index(anchor) + 1
        # It takes its place's score (its own was never computed): shown as its relevance.
        comps = {"relevance": round(anchor[1], 6), "event": 1.0, "told": 1.0}
        out.insert(at, (told, anchor[1], comps, None, "graph"))
    return out, seq

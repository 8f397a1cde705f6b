"""Writing memories: embed what was said, link it into the graph, store it in one transaction.

``add`` embeds each message (leaning a reply towards what it answers, with
``Config.embed_context``), keys it for deduplication within its scope and gives the batch its
edges: semantic neighbours, the conversation's sequence, shared salient terms and the
contradictions the tension rules find against stored memories and within the batch
(``recall.graph``, ``recall.tensions``). ``update`` re-embeds a changed text and replaces its
content-derived edges.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..deadline import check as check_deadline
from ..embed.base import blend_context
from ..learn.preferences import recognise_preference
from ..models import MemoryRecord, Scope
from ..recall.graph import (
    EdgeProposal,
    batch_semantic_edges,
    batch_similarities,
    cap_edges,
    nearest,
    salient_term_edges,
    sequence_edges,
    stored_semantic_edges,
)
from ..recall.tensions import ParseAhead, Statement, detect_tension
from ..recall.text import context_sources, speaker_of, terms, who_speaks
from ..store import AddAhead, ChunkVector, MemoryUpdate, NewEdge, NewMemory, read_ahead
from .base import Engine, adding, dedup_key, embed_memories, speaker, statement, states_facts
from .ids import new_id
from .validate import Message

__all__ = ["add", "build_edges", "graph_scope", "recognise_preferences", "update"]

# Initial weight of the edges recording a contradiction.
_TENSION_EDGE_WEIGHT = 0.5


def add(
    engine: Engine, scope: Scope, messages: Sequence[Message], *, dedup: bool = True
) -> list[str]:
    """Store checked messages in ``scope``; the ids in order (a duplicate's stored id, unless
    ``dedup`` is off: then every message is a memory of its own)."""
    keys = [dedup_key(scope, m.role, m.content) for m in messages] if dedup else []
    if read_ahead(engine.store) is None:
        return _add(engine, scope, messages, keys)
    # The reads of the add announced, so that a server store answers them in few round trips.
    batch_terms = sorted({t for m in messages for t in terms(m.content)})
    ahead = AddAhead(
        scope, graph_scope(scope), batch_terms, engine.config.graph_max_edges_per_memory, keys
    )
    with adding(engine.store, ahead):
        return _add(engine, scope, messages, keys)


def _add(
    engine: Engine, scope: Scope, messages: Sequence[Message], keys: Sequence[str]
) -> list[str]:
    """``keys``: the messages' dedup keys (none: every message a memory of its own)."""
    # The session's latest memory, read once for the three steps that look at it.
    tail: list[MemoryRecord] | None = None

    def latest() -> list[MemoryRecord]:
        nonlocal tail
        if tail is None:
            tail = engine.store.latest_memories(scope, 1)
        return tail

    # Embedded first (a message's vector does not depend on its kind): a server store's
    # reads of the session travel meanwhile, and the latest memory is there when asked. The
    # tension rules' parses of the new texts are made beside the model.
    ahead = ParseAhead([m.content for m in messages if states_facts(m.role, m.kind)])
    try:
        vectors, chunks = embed_memories(
            engine, [(m.content, speaker_of(m.metadata), m.role) for m in messages]
        )
    finally:
        ahead.stop()
    if engine.config.recognise_preferences:
        messages = recognise_preferences(engine, scope, messages, latest)
    if engine.config.embed_context:
        before, before_vec = _session_tail(engine, scope, latest)
        replies_to = context_sources(
            [(who_speaks(m.metadata, m.content), m.role) for m in messages], before
        )
        vectors = blend_context(vectors, replies_to, engine.config.context_weight, before_vec)
    rows = [
        NewMemory(
            id=new_id(),
            **scope.owner(),
            role=m.role,
            content=m.content,
            kind=m.kind,
            created_at=m.created_at,
            metadata=m.metadata,
            dedup_key=keys[i] if keys else uuid.uuid4().hex,
            embedding=vectors[i],
            chunks=chunks[i],
        )
        for i, m in enumerate(messages)
    ]
    # The last point where the request's deadline may stop it: nothing is written yet.
    check_deadline("adding")
    # A server store may start writing the rows while their edges are built.
    if (server := read_ahead(engine.store)) is not None:
        server.add_ahead(rows)
    edges = build_edges(engine, scope, rows, latest=latest)
    return [memory_id for memory_id, _ in engine.store.add_memories(rows, edges)]


def recognise_preferences(
    engine: Engine,
    scope: Scope,
    messages: Sequence[Message],
    latest: Callable[[], list[MemoryRecord]] | None = None,
) -> list[Message]:
    """User messages of kind ``message`` that state a standing preference become kind
    ``preference`` (:mod:`engrammar.learn.preferences`); a pick among options is read with the
    message before it (in this call, or the session's latest memory)."""
    previous: tuple[str, str] | None = None
    if scope.session_id is not None and any(m.role == "user" for m in messages):
        tail = latest() if latest is not None else engine.store.latest_memories(scope, 1)
        previous = (tail[0].content, tail[0].role) if tail else None
    out = []
    for m in messages:
        if m.role == "user" and m.kind == "message":
            before, before_role = previous if previous else (None, None)
            if recognise_preference(m.content, before, before_role) is not None:
                m = m._replace(kind="preference")
        out.append(m)
        previous = (m.content, m.role)
    return out


def _session_tail(
    engine: Engine, scope: Scope, latest: Callable[[], list[MemoryRecord]]
) -> tuple[tuple[str | None, str] | None, np.ndarray | None]:
    """The (speaker, role) and vector of the session's latest memory, so that a reply
    added on its own still leans towards what it answers; (None, None) outside a session."""
    if scope.session_id is None:
        return None, None
    tail = latest()
    if not tail:
        return None, None
    vector = engine.store.vectors(scope.workspace, [tail[0].id]).get(tail[0].id)
    if vector is None:
        return None, None
    return (who_speaks(tail[0].metadata, tail[0].content), tail[0].role), vector


def update(
    engine: Engine,
    workspace: str,
    memory_id: str,
    metadata: dict[str, Any] | None,
    reason: str,
    content: tuple[MemoryRecord, str] | None = None,
) -> MemoryRecord:
    """Change a stored memory's metadata and/or content, recorded in its history with
    ``reason``. ``content`` is the memory as stored and its new text: the text is embedded
    again and replaces the memory's content-derived edges."""
    embedding = dedup = edges = None
    text = None
    chunks: tuple[ChunkVector, ...] = ()
    if content is not None:
        current, text = content
        scope = Scope(workspace, current.user_id, current.agent_id, current.session_id)
        vectors, found = embed_memories(
            engine, [(text, speaker_of(current.metadata), current.role)]
        )
        embedding, chunks = vectors[0], found[0]
        dedup = dedup_key(scope, current.role, text)
        # New content means new neighbours, shared names and contradictions.
        changed = NewMemory(
            id=current.id,
            **scope.owner(),
            role=current.role,
            content=text,
            kind=current.kind,
            created_at=current.created_at,
            metadata=metadata if metadata is not None else current.metadata,
            dedup_key=dedup,
            embedding=embedding,
        )
        edges = build_edges(engine, scope, [changed], replacing=True)
    return engine.store.update_memory(
        workspace,
        memory_id,
        MemoryUpdate(
            reason,
            content=text,
            embedding=embedding,
            dedup_key=dedup,
            metadata=metadata,
            edges=edges,
            chunks=chunks,
        ),
    )


def graph_scope(scope: Scope) -> Scope:
    """The scope a memory's edges live in: its owner (user / agent), across sessions."""
    if scope.user_id is None and scope.agent_id is None:
        return scope
    return Scope(scope.workspace, scope.user_id, scope.agent_id, None)


def build_edges(
    engine: Engine,
    scope: Scope,
    rows: Sequence[NewMemory],
    *,
    replacing: bool = False,
    latest: Callable[[], list[MemoryRecord]] | None = None,
) -> list[NewEdge]:
    """The edges a batch of new memories gets (see ``recall.graph``); ``latest`` gives the
    session's latest memory when the caller has read it already.

    ``replacing``: the rows are stored memories whose content changes; they are left out of
    their own neighbourhoods and keep their sequence edges (the conversation order did not
    change), so the result replaces only their content-derived edges.
    """
    if not rows:
        return []
    store, config = engine.store, engine.config
    lo, hi = config.edge_weight_min, config.edge_weight_max
    cap = config.graph_max_edges_per_memory
    gscope = graph_scope(scope)
    ids = [r.id for r in rows]
    texts = [r.content for r in rows]
    vectors = np.stack([np.asarray(r.embedding, dtype=np.float32) for r in rows])
    look = min(config.graph_semantic_threshold, config.tension_min_similarity)
    own = set(ids)
    k = cap + (len(own) if replacing else 0)
    # A server store sends the searches now; the batch's own contradictions need no hits and
    # are judged while they travel (the proposals keep their order: stored pairs first).
    if (server := read_ahead(store)) is not None:
        server.search_ahead(gscope, vectors, k)
    statements = _statements(rows)
    # Each block of the batch's cosines is computed once, for its contradictions and its
    # semantic edges both.
    pairs: list[_Pair] = []
    among: list[EdgeProposal] = []
    threshold = config.graph_semantic_threshold
    for start, block in batch_similarities(vectors):
        pairs += _batch_pairs(engine, statements, start, block)
        among += batch_semantic_edges(ids, start, block, threshold, lo, hi, per_memory=cap)
    within = _tension_proposals(engine, pairs)
    found = store.vector_searches(gscope, vectors, k)
    hits = [
        [(mid, cos) for mid, cos in row if cos >= look and mid not in own][:cap] for row in found
    ]
    proposals = stored_semantic_edges(
        ids, [[h for h in row if h[1] >= threshold] for row in hits], threshold, lo, hi
    )
    proposals += among
    previous = None
    if scope.session_id is not None and not replacing:
        tail = latest() if latest is not None else store.latest_memories(scope, 1)
        previous = tail[0].id if tail else None
    if not replacing:
        proposals += sequence_edges(ids, previous, config.graph_sequence_weight)
    text_terms = [terms(text) for text in texts]
    batch_terms = sorted({t for found in text_terms for t in found})
    n_stored, postings = store.term_postings(gscope, batch_terms, cap)
    proposals += salient_term_edges(
        ids, texts, n_stored, postings, config.graph_term_max_df, lo, hi, cap, text_terms
    )
    proposals += _tension_proposals(engine, _stored_pairs(engine, statements, rows, hits))
    proposals += within
    if replacing:
        # The stored memories still carry their old text in the term postings.
        proposals = [p for p in proposals if p.src != p.dst]
    existing = {p.src for p in proposals} - set(ids)
    degrees = store.edge_counts(scope.workspace, sorted(existing)) if existing else {}
    kept = cap_edges(proposals, set(ids), degrees, cap)
    return [NewEdge(p.src, p.dst, p.kind, p.weight) for p in kept]


_Pair = tuple[Statement, Statement, float]


def _statements(rows: Sequence[NewMemory]) -> list[Statement | None]:
    """The new memories as the tension rules read them (None: one that states no fact).
    Messages of one batch share a timestamp; their order says which came later, and a stored
    memory of the same time came before them (``Statement.seq``)."""
    return [
        Statement(r.id, r.content, r.created_at, speaker(r.metadata, r.role), seq=i + 1)
        if states_facts(r.role, r.kind)
        else None
        for i, r in enumerate(rows)
    ]


def _stored_pairs(
    engine: Engine,
    new: list[Statement | None],
    rows: Sequence[NewMemory],
    hits: list[list[tuple[str, float]]],
) -> list[_Pair]:
    """The new memories with their stored neighbours (older first) that the tension rules
    judge: those at least ``tension_min_similarity`` alike, both stating facts."""
    tmin = engine.config.tension_min_similarity
    stored = engine.store.get_memories(
        rows[0].workspace, sorted({m for row in hits for m, _ in row})
    )
    pairs: list[_Pair] = []
    for i, row in enumerate(hits):
        statement_i = new[i]
        if statement_i is None:
            continue
        for other, cos in row:
            rec = stored.get(other)
            if (
                rec is not None
                and cos >= tmin
                and other != rows[i].id
                and states_facts(rec.role, rec.kind)
            ):
                pairs.append((statement(rec), statement_i, cos))
    return pairs


def _batch_pairs(
    engine: Engine, new: list[Statement | None], start: int, block: np.ndarray
) -> list[_Pair]:
    """The pairs of new memories of one batch that the tension rules judge: each one's
    nearest others (as many as it may have edges), at least ``tension_min_similarity`` alike;
    for one ``(start, block)`` of the batch's cosines (``recall.graph.batch_similarities``)."""
    tmin = engine.config.tension_min_similarity
    near, cosines = nearest(block, engine.config.graph_max_edges_per_memory + 1)
    pairs: list[_Pair] = []
    for r, (js, values, alike) in enumerate(
        zip(near.tolist(), cosines.tolist(), (cosines >= tmin).tolist(), strict=True)
    ):
        i = start + r
        a = new[i]
        if a is None:
            continue
        for j, cos, keep in zip(js, values, alike, strict=True):
            if j > i and keep and (b := new[j]) is not None:
                pairs.append((a, b, cos))
    return pairs


def _tension_proposals(engine: Engine, pairs: list[_Pair]) -> list[EdgeProposal]:
    """``contradicts`` edges (both ways) and ``supersedes`` edges (newer to older) for the
    pairs (older, newer, cosine) that contradict each other."""
    config = engine.config
    lo, hi = config.edge_weight_min, config.edge_weight_max
    weight = min(hi, max(lo, _TENSION_EDGE_WEIGHT))
    tmin = config.tension_min_similarity
    out: list[EdgeProposal] = []
    for older, newer, cos in pairs:
        found = detect_tension(older, newer, cos, tmin)
        if found is None:
            continue
        out.append(EdgeProposal(found.a, found.b, "contradicts", weight))
        out.append(EdgeProposal(found.b, found.a, "contradicts", weight))
        if found.newer is not None:
            old = found.a if found.newer == found.b else found.b
            out.append(EdgeProposal(found.newer, old, "supersedes", weight))
    return out

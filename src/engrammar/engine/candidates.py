"""The candidates of one search: keyword and vector hits, fused, then refined.

Refinement turns fused candidates into a query-aware, neighbour-supported ranking: it reads
what the pure scoring in :mod:`engrammar.recall.query` needs (speakers, dates, sequence edges)
from the store for the head of the candidate list. Every ranking (plain search, the graph
ranking of recall, the memories a reply drew on) starts from :func:`candidates`, so all of
them rank alike.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from ..config import Config
from ..models import Edge, MemoryRecord, RecallFilter, Scope
from ..recall.diversity import session_spread
from ..recall.fusion import Candidate, fuse
from ..recall.proximity import proximity_boost
from ..recall.query import (
    named_speakers,
    question_discount,
    question_share,
    rescore,
    sequence_support,
    topic_text,
)
from ..recall.requests import asks_for_suggestions, without_request_frame
from ..recall.roles import role_discount
from ..recall.text import speaker_of, topic_terms
from ..store import Store
from .base import Engine, in_scope

__all__ = [
    "REFINE_DEPTH",
    "EdgesFrom",
    "Hits",
    "candidates",
    "complete_vector_hits",
    "keyword_text",
    "refine_candidates",
    "refined",
    "search_hits",
]

# Only the head can reach the results: a bounded boost never lifts a candidate from far down
# the fused list, and fetching the whole pool would cost more than the searches themselves.
REFINE_DEPTH = 60
# Keyword hits whose speakers are read to recognise the names a query mentions: the name is
# an index term of everything its speaker said, so that person's memories lead the list (on
# LoCoMo every named speaker was among the speakers of the top 10 keyword hits).
NAME_LOOKUP = 20


Hits = tuple[np.ndarray, list[tuple[str, float]], list[tuple[str, float]]]
#: ``Store.edges_from(workspace, ids, min_weight, kind)`` or a reader standing in for it.
EdgesFrom = Callable[[str, Sequence[str], float, str | None], list[Edge]]


def search_hits(
    engine: Engine,
    scope: Scope,
    query: str,
    qvec: np.ndarray | None = None,
    where: RecallFilter | None = None,
) -> Hits:
    """The query vector, the vector hits and the keyword hits of one search (of the memories
    ``where`` matches, when given).

    Keyword search runs first; with ``query_without_speakers`` the names of the speakers it
    found that the query mentions are left out of the text that is embedded (see
    :func:`~engrammar.recall.query.topic_text`), so the vector matches the topic while the
    speaker boost matches the person. A caller holding the vector already (a reply's) gives
    it as ``qvec`` and it is searched with as it is.
    """
    store, config = engine.store, engine.config
    pool = config.candidate_pool
    if qvec is not None:  # both searches known at once (a server store sends them together)
        keyword_hits, vector_hits = store.searches(
            scope, keyword_text(config, query), qvec, pool, where
        )
        return (
            qvec,
            complete_vector_hits(store, scope, qvec, vector_hits, keyword_hits),
            keyword_hits,
        )
    keyword_hits = store.keyword_search(scope, keyword_text(config, query), pool, where)
    if qvec is None:
        text = query
        if config.query_without_speakers and keyword_hits:
            head = store.get_memories(scope.workspace, [m for m, _ in keyword_hits[:NAME_LOOKUP]])
            speakers = {s for r in head.values() if (s := speaker_of(r.metadata))}
            text = topic_text(query, named_speakers(query, speakers))
        qvec = engine.embed_one(text)
    vector_hits = complete_vector_hits(
        store, scope, qvec, store.vector_search(scope, qvec, pool, where), keyword_hits
    )
    return qvec, vector_hits, keyword_hits


def keyword_text(config: Config, query: str) -> str:
    """What keyword search looks for: ``query``, without the words that frame a request for
    suggestions when it is one and ``request_keywords`` is on (``recall.requests``)."""
    if config.request_keywords and asks_for_suggestions(query):
        return without_request_frame(query)
    return query


def candidates(
    engine: Engine,
    scope: Scope,
    query: str,
    qvec: np.ndarray | None = None,
    *,
    as_of: float | None = None,
    links: bool = True,
    where: RecallFilter | None = None,
) -> list[Candidate]:
    """Search, fusion and refinement: the ranked candidates of ``query``, best first
    (relative times in ``query`` read against ``as_of``, default now), of the memories
    ``where`` matches.

    ``links=False`` (plain search) leaves out the support of conversation neighbours, which
    follows sequence edges of the graph.
    """
    hits = search_hits(engine, scope, query, qvec, where)
    return refined(engine, scope, query, hits, as_of, links=links, where=where)


@functools.lru_cache(maxsize=8)
def _unlinked(config: Config) -> Config:
    """``config`` without neighbour support (one copy per configuration: a Config is frozen)."""
    return config.replace(neighbour_weight=0.0, second_neighbour_weight=0.0)


@functools.lru_cache(maxsize=8)
def _for_requests(config: Config) -> Config:
    """``config`` for a request for suggestions: keyword evidence weighs
    ``request_keyword_weight`` (one copy per configuration)."""
    if config.request_keyword_weight == config.keyword_weight:
        return config
    return config.replace(keyword_weight=config.request_keyword_weight)


def fusion_config(config: Config, query: str) -> Config:
    """``config`` as the fusion of ``query``'s hits uses it (a request for suggestions weighs
    keyword evidence ``request_keyword_weight``)."""
    return _for_requests(config) if asks_for_suggestions(query) else config


def refined(
    engine: Engine,
    scope: Scope,
    query: str,
    hits: Hits,
    as_of: float | None = None,
    *,
    links: bool = True,
    where: RecallFilter | None = None,
    edges: EdgesFrom | None = None,
) -> list[Candidate]:
    """The fused and refined candidates of a search's ``hits``, best first (relative times
    in ``query`` read against ``as_of``); neighbours join only if ``where`` matches them.
    ``edges`` reads the sequence edges instead of the store (``engine.edge_context``)."""
    qvec, vector_hits, keyword_hits = hits
    config = fusion_config(engine.config if links else _unlinked(engine.config), query)
    cands = fuse(
        vector_hits, keyword_hits, keyword_weight=config.keyword_weight, mode=config.fusion
    )
    return refine_candidates(
        engine.store, config, scope, query, cands, qvec, as_of, where, edges=edges
    )


def complete_vector_hits(
    store: Store,
    scope: Scope,
    qvec: np.ndarray,
    vector_hits: list[tuple[str, float]],
    keyword_hits: list[tuple[str, float]],
) -> list[tuple[str, float]]:
    """``vector_hits`` plus the cosine of every keyword hit the vector list missed.

    A keyword hit outside the vector top-k still has a real (middling) cosine; scored as 0 it
    loses to memories that merely appear in both lists, which cost 0.04 recall@10 on LoCoMo.
    A long memory's cosine is its best chunk's, as vector search scores it.
    """
    seen = {memory_id for memory_id, _ in vector_hits}
    missing = [memory_id for memory_id, _ in keyword_hits if memory_id not in seen]
    if not missing:
        return vector_hits
    vecs = store.vectors(scope.workspace, missing)
    chunks = store.memory_chunks(scope.workspace, missing)
    extra = [
        (m, max([float(vecs[m] @ qvec), *(float(c.embedding @ qvec) for c in chunks.get(m, ()))]))
        for m in missing
        if m in vecs
    ]
    return vector_hits + sorted(extra, key=lambda h: -h[1])


def refine_candidates(
    store: Store,
    config: Config,
    scope: Scope,
    query: str,
    cands: list[Candidate],
    qvec: np.ndarray | None = None,
    as_of: float | None = None,
    where: RecallFilter | None = None,
    *,
    edges: EdgesFrom | None = None,
) -> list[Candidate]:
    """Speaker and time boosts (relative times resolved against ``as_of``), the question and
    assistant discounts, then support from conversation neighbours; best first.

    With ``qvec``, the memories next to (and two messages from) the head of the list join it
    with their own relevance (their cosine to ``qvec``, on the fused scale; their keyword
    score when they were keyword hits further down) before the boosts, so a neighbour that is
    on topic itself gains on top of the support it receives.
    """
    head, tail = cands[:REFINE_DEPTH], cands[REFINE_DEPTH:]
    if not head:
        return cands
    support = config.neighbour_weight > 0 or config.second_neighbour_weight > 0
    records: dict[str, MemoryRecord] = {}
    neighbours: dict[str, list[tuple[str, float]]] = {}
    second: dict[str, list[tuple[str, float]]] = {}
    if support:
        neighbours, second = _sequence_links(
            edges or store.edges_from,
            scope,
            [c.id for c in head],
            config.second_neighbour_weight > 0,
        )
        if qvec is not None:
            head, tail, records = _join_neighbours(
                store, config, scope, qvec, cands, head, tail, (neighbours, second), where
            )
        if where is not None:
            # Support adds a neighbour that was no candidate: only one the filter let join.
            known = {c.id for c in head} | {c.id for c in tail}
            neighbours, second = _among(neighbours, known), _among(second, known)
    if (
        config.speaker_boost > 0
        or config.time_boost > 0
        or config.question_penalty > 0
        or config.assistant_penalty > 0
        or config.proximity_weight > 0
    ):
        records.update(
            store.get_memories(scope.workspace, [c.id for c in head if c.id not in records])
        )
        head = proximity_boost(
            head,
            sorted(topic_terms(keyword_text(config, query))),
            {i: r.content for i, r in records.items()},
            config.proximity_weight,
            config.proximity_window,
        )
        head = rescore(
            head,
            query,
            {i: speaker_of(r.metadata) for i, r in records.items()},
            {i: r.created_at for i, r in records.items()},
            speaker_boost=config.speaker_boost,
            time_boost=config.time_boost,
            as_of=as_of,
        )
        # Between people a message that asks states little ("What did you do then?"); in a
        # chat with an assistant the user's messages are requests that ask and tell at once
        # ("Any tips for my 20-gallon tank? I just added 10 neon tetras."), and discounting
        # them cost LongMemEval turn recall_all@5 0.018 (bench/results/lme_session7_chunks.md).
        if not any(r.role == "assistant" for r in records.values()):
            asking = {i: question_share(r.content) for i, r in records.items()}
            head = question_discount(head, asking, config.question_penalty)
        head = role_discount(
            head,
            query,
            # Chat turns only: a decision or preference stored from feedback keeps its rank.
            {i: r.role for i, r in records.items() if r.kind == "message"},
            config.assistant_penalty,
        )
    if support:
        # "The same speaker going on after the other's reply" needs named speakers: in a
        # user <-> assistant chat the user's next message is mostly a new request (on the
        # LongMemEval dev sample it lowered recall_all@5), so there it is left out.
        if second and not records:
            records = store.get_memories(scope.workspace, [c.id for c in head])
        second_weight = config.second_neighbour_weight if _named(records) else 0.0
        head = sequence_support(head, neighbours, config.neighbour_weight, second, second_weight)
    if config.session_spread > 0:
        missing = [c.id for c in head if c.id not in records]
        if missing:
            records.update(store.get_memories(scope.workspace, missing))
        # Spread over sessions in a chat with an assistant only: there each session is one
        # request, and a question about the user's life gathers what several sessions said
        # (LongMemEval). Between people (LoCoMo) a topic is talked through within a session,
        # and spreading cost recall@10 0.024 at 0.1 (bench/results/locomo_session_spread.md).
        # A request for suggestions draws on what the user said on its topic, mostly in one
        # conversation (recall.requests).
        if any(r.role == "assistant" for r in records.values()) and (
            config.session_spread_requests or not asks_for_suggestions(query)
        ):
            head = session_spread(
                sorted(head, key=lambda c: -c.relevance),
                {i: r.session_id for i, r in records.items()},
                config.session_spread,
            )
    # Neighbour support can pull a memory from the tail into the head: keep one entry per id.
    in_head = {c.id for c in head}
    return sorted(head + [c for c in tail if c.id not in in_head], key=lambda c: -c.relevance)


def _among(
    links: dict[str, list[tuple[str, float]]], known: set[str]
) -> dict[str, list[tuple[str, float]]]:
    return {src: [o for o in outs if o[0] in known] for src, outs in links.items()}


def _named(records: dict[str, MemoryRecord]) -> bool:
    """Whether the memories read for the head of the list carry speaker names."""
    return any(speaker_of(r.metadata) for r in records.values())


def _join_neighbours(
    store: Store,
    config: Config,
    scope: Scope,
    qvec: np.ndarray,
    cands: list[Candidate],
    head: list[Candidate],
    tail: list[Candidate],
    links: tuple[dict[str, list[tuple[str, float]]], ...],
    where: RecallFilter | None = None,
) -> tuple[list[Candidate], list[Candidate], dict[str, MemoryRecord]]:
    """``head`` plus every memory ``links`` reach from it (tail candidates move up as they
    are; others are scored by their cosine alone), what is left of ``tail``, and the records
    of the memories that joined (read to check their scope; the boosts reuse them)."""
    in_head = {c.id for c in head}
    reached = {dst for mapping in links for outs in mapping.values() for dst, _ in outs} - in_head
    if not reached:
        return head, tail, {}
    by_id = {c.id: c for c in tail}
    moved = [by_id[i] for i in sorted(reached) if i in by_id]
    found = store.get_memories(scope.workspace, sorted(i for i in reached if i not in by_id))
    # A conversation's links stay in its session, but a recall may be narrower than that.
    fresh = sorted(i for i, r in found.items() if in_scope(r, scope, where))
    vecs = store.vectors(scope.workspace, fresh)
    has_vector = any(c.vector_rank is not None for c in cands)
    has_keyword = any(c.keyword_rank is not None for c in cands)
    kw = config.keyword_weight if has_vector and has_keyword else (1.0 if has_keyword else 0.0)
    top_vec = max((max(c.vector, 0.0) for c in cands if c.vector_rank is not None), default=0.0)
    joined = []
    for memory_id in fresh:
        if memory_id not in vecs:
            continue  # forgotten meanwhile
        cos = float(vecs[memory_id] @ qvec)
        rel = (1 - kw) * max(cos, 0.0) / (top_vec or 1.0) if config.fusion == "score" else 0.0
        cand = Candidate(memory_id, vector=cos, relevance=rel)
        cand.components = {"vector": round(cos, 6), "keyword": 0.0, "relevance": round(rel, 6)}
        joined.append(cand)
    moved_ids = {c.id for c in moved}
    kept = {c.id for c in joined}
    return (
        head + moved + joined,
        [c for c in tail if c.id not in moved_ids],
        {i: r for i, r in found.items() if i in kept},
    )


def _sequence_links(
    edges_from: EdgesFrom, scope: Scope, ids: list[str], two_hops: bool
) -> tuple[dict[str, list[tuple[str, float]]], dict[str, list[tuple[str, float]]]]:
    """Per id, its sequence neighbours ``(id, edge weight)`` and, with ``two_hops``, the
    memories two sequence edges away ``(id, weaker edge weight)``."""
    neighbours: dict[str, list[tuple[str, float]]] = {}
    for edge in edges_from(scope.workspace, ids, 0.0, "sequence"):
        if edge.kind == "sequence":
            neighbours.setdefault(edge.src, []).append((edge.dst, edge.weight))
    second: dict[str, list[tuple[str, float]]] = {}
    if not two_hops or not neighbours:
        return neighbours, second
    middle = sorted({dst for outs in neighbours.values() for dst, _ in outs})
    onward: dict[str, list[tuple[str, float]]] = {}
    for edge in edges_from(scope.workspace, middle, 0.0, "sequence"):
        if edge.kind == "sequence":
            onward.setdefault(edge.src, []).append((edge.dst, edge.weight))
    for src, outs in neighbours.items():
        for mid, w1 in outs:
            for dst, w2 in onward.get(mid, ()):
                if dst != src:
                    second.setdefault(src, []).append((dst, min(w1, w2)))
    return neighbours, second

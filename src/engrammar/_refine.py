"""The refinement step of recall: fused candidates -> query-aware, neighbour-supported ranking.

Reads what the pure scoring in :mod:`engrammar.recall.query` needs (speakers, dates, sequence
edges) from the store for the head of the candidate list; every other recall path (plain
search, the graph ranking) calls this after fusing, so all of them rank alike.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .config import Config
from .models import Scope
from .recall.fusion import Candidate
from .recall.query import named_speakers, rescore, sequence_support, topic_text
from .recall.text import speaker_of
from .store import Store

__all__ = ["REFINE_DEPTH", "complete_vector_hits", "refine_candidates", "search_hits"]

# Only the head can reach the results: a bounded boost never lifts a candidate from far down
# the fused list, and fetching the whole pool would cost more than the searches themselves.
REFINE_DEPTH = 60
# Keyword hits whose speakers are read to recognise the names a query mentions: the name is
# an index term of everything its speaker said, so that person's memories lead the list (on
# LoCoMo every named speaker was among the speakers of the top 10 keyword hits).
NAME_LOOKUP = 20


def search_hits(
    store: Store,
    config: Config,
    scope: Scope,
    query: str,
    embed: Callable[[str], np.ndarray],
) -> tuple[np.ndarray, list[tuple[str, float]], list[tuple[str, float]]]:
    """The query vector, the vector hits and the keyword hits of one search.

    Keyword search runs first; with ``query_without_speakers`` the names of the speakers it
    found that the query mentions are left out of the text that is embedded (see
    :func:`~engrammar.recall.query.topic_text`), so the vector matches the topic while the
    speaker boost matches the person.
    """
    pool = config.candidate_pool
    keyword_hits = store.keyword_search(scope, query, pool)
    text = query
    if config.query_without_speakers and keyword_hits:
        head = store.get_memories(scope.workspace, [m for m, _ in keyword_hits[:NAME_LOOKUP]])
        speakers = {s for r in head.values() if (s := speaker_of(r.metadata))}
        text = topic_text(query, named_speakers(query, speakers))
    qvec = embed(text)
    vector_hits = complete_vector_hits(
        store, scope, qvec, store.vector_search(scope, qvec, pool), keyword_hits
    )
    return qvec, vector_hits, keyword_hits


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
    """
    seen = {memory_id for memory_id, _ in vector_hits}
    missing = [memory_id for memory_id, _ in keyword_hits if memory_id not in seen]
    if not missing:
        return vector_hits
    vecs = store.vectors(scope.workspace, missing)
    extra = [(m, float(vecs[m] @ qvec)) for m in missing if m in vecs]
    return vector_hits + sorted(extra, key=lambda h: -h[1])


def refine_candidates(
    store: Store, config: Config, scope: Scope, query: str, cands: list[Candidate]
) -> list[Candidate]:
    """Speaker and time boosts, then support from conversation neighbours; best first."""
    head, tail = cands[:REFINE_DEPTH], cands[REFINE_DEPTH:]
    if not head:
        return cands
    if config.speaker_boost > 0 or config.time_boost > 0:
        records = store.get_memories(scope.workspace, [c.id for c in head])
        head = rescore(
            head,
            query,
            {i: speaker_of(r.metadata) for i, r in records.items()},
            {i: r.created_at for i, r in records.items()},
            speaker_boost=config.speaker_boost,
            time_boost=config.time_boost,
        )
    if config.neighbour_weight > 0:
        neighbours: dict[str, list[tuple[str, float]]] = {}
        for edge in store.edges_from(scope.workspace, [c.id for c in head]):
            if edge.kind == "sequence":
                neighbours.setdefault(edge.src, []).append((edge.dst, edge.weight))
        head = sequence_support(head, neighbours, config.neighbour_weight)
    # Neighbour support can pull a memory from the tail into the head: keep one entry per id.
    in_head = {c.id for c in head}
    return sorted(head + [c for c in tail if c.id not in in_head], key=lambda c: -c.relevance)

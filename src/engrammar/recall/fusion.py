"""Fusing vector and keyword candidates into one relevance score, and the evidence a session
gives its turns (pure functions)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter

import numpy as np

__all__ = ["Candidate", "best_first", "fuse", "missed_hits", "session_evidence"]


@dataclass(slots=True)
class Candidate:
    """A memory found by search, with the raw evidence behind its relevance."""

    id: str
    vector: float = 0.0  # cosine similarity to the query (0 when not a vector hit)
    keyword: float = 0.0  # BM25 score (0 when not a keyword hit)
    vector_rank: int | None = None
    keyword_rank: int | None = None
    relevance: float = 0.0
    components: dict[str, float] = field(default_factory=dict)


_SCORE = itemgetter(1)  # of a (memory id, score) hit
_ID = attrgetter("id")
_RELEVANCE = attrgetter("relevance")


def fuse(
    vector_hits: list[tuple[str, float]],
    keyword_hits: list[tuple[str, float]],
    *,
    keyword_weight: float,
) -> list[Candidate]:
    """Merge the two hit lists; ``relevance`` in [0, 1], best first.

    Each score is divided by the best of its list, so a query with strong keyword evidence is
    not drowned by uniformly middling cosines and vice versa; then
    ``(1 - keyword_weight) x vector + keyword_weight x keyword``. A list that found nothing
    gives no evidence: the other decides alone.
    """
    if not keyword_hits:
        keyword_weight = 0.0
    elif not vector_hits:
        keyword_weight = 1.0
    top_vec = max(map(_SCORE, vector_hits), default=0.0)
    top_vec = (top_vec if top_vec > 0.0 else 0.0) or 1.0
    top_kw = max(map(_SCORE, keyword_hits), default=0.0) or 1.0
    vector_weight = 1 - keyword_weight
    # One pass over each list: a vector hit is scored as found by vector search alone (its
    # keyword part ``keyword_weight x 0 / top_kw``, the very sum a second pass would make),
    # and scored again if keyword search found it too. Positional arguments: a recall fuses
    # ~150 hits, and keywords cost twice the time here.
    no_keyword = keyword_weight * (0.0 / top_kw)
    cands: dict[str, Candidate] = {}
    for rank, (memory_id, sim) in enumerate(vector_hits):
        v = (0.0 if sim < 0.0 else sim) / top_vec  # max(sim, 0.0), without the call
        rel = vector_weight * v + no_keyword
        # Unrounded: most candidates are never shown (rounded where a ranking is handed out).
        comps = {"vector": sim, "keyword": 0.0, "relevance": rel}
        cands[memory_id] = Candidate(memory_id, sim, 0.0, rank, None, rel, comps)
    no_vector = vector_weight * (0.0 / top_vec)
    for rank, (memory_id, score) in enumerate(keyword_hits):
        cand = cands.get(memory_id)
        if cand is None:
            rel = no_vector + keyword_weight * (score / top_kw)
            comps = {"vector": 0.0, "keyword": score, "relevance": rel}
            cands[memory_id] = Candidate(memory_id, 0.0, score, None, rank, rel, comps)
        else:
            vector = cand.vector
            v = (0.0 if vector < 0.0 else vector) / top_vec
            rel = vector_weight * v + keyword_weight * (score / top_kw)
            cand.keyword, cand.keyword_rank, cand.relevance = score, rank, rel
            cand.components = {"vector": vector, "keyword": score, "relevance": rel}
    return best_first(cands.values())


def missed_hits(
    ids: Sequence[str],
    own: np.ndarray,
    windows: Sequence[Sequence[np.ndarray]] | None,
    query: np.ndarray,
) -> list[tuple[str, float]]:
    """Keyword hits the vector list missed, as its tail: ``ids`` with the cosine vector search
    gives each (its own vector's, row ``i`` of ``own``, or its best window's of ``windows[i]``
    when higher), best first, ties in the order of ``ids``. Scored 0 such a hit would lose to
    memories that merely appear in both lists.

    Each cosine is ``vector.dot(query)``: matmul of (1 x d) by (d x 1) computes it with that
    very dot function (the same bits), every hit in one call rather than one a hit; the engine
    and a store that completes the list itself get the same numbers."""
    cosines = np.matmul(own[:, None, :], query[:, None])[:, 0, 0].tolist()
    if windows is not None:  # a long message's windows: its best window's cosine if higher
        for k, these in enumerate(windows):
            best = cosines[k]
            for window in these:
                cos = float(window.dot(query))
                if cos > best:
                    best = cos
            cosines[k] = best
    return sorted(zip(ids, cosines, strict=True), key=_SCORE, reverse=True)  # stable


def best_first(cands: Iterable[Candidate]) -> list[Candidate]:
    """``cands`` by relevance, best first, equal ones by id: by id, then stably by relevance
    (two sorts keyed in C take less time than one keyed by a tuple built for each)."""
    out = sorted(cands, key=_ID)
    out.sort(key=_RELEVANCE, reverse=True)
    return out


def session_evidence(
    cands: list[Candidate], sessions: Mapping[str, str | None], weight: float
) -> list[Candidate]:
    """Blend a memory's relevance with the best relevance among the candidates of its session
    (its own included; from the relevances before this step): ``(relevance + weight x best) /
    (1 + weight)``, so the scale stays [0, 1]; best first again. A memory outside any session
    is a session of one and keeps its relevance."""
    best: dict[str, float] = {}
    for cand in cands:
        sid = sessions.get(cand.id)
        if sid is not None and cand.relevance > best.get(sid, 0.0):
            best[sid] = cand.relevance
    for cand in cands:
        sid = sessions.get(cand.id)
        before = cand.relevance
        cand.relevance = (
            before + weight * (best.get(sid, before) if sid is not None else before)
        ) / (1.0 + weight)
        gain = cand.relevance - before
        cand.components["session"] = gain
        cand.components["relevance"] = cand.relevance
    return best_first(cands)

"""Fusing vector and keyword candidates into one relevance score (pure functions)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Candidate", "fuse"]

RRF_K = 60.0


@dataclass
class Candidate:
    """A memory found by search, with the raw evidence behind its relevance."""

    id: str
    vector: float = 0.0  # cosine similarity to the query (0 when not a vector hit)
    keyword: float = 0.0  # BM25 score (0 when not a keyword hit)
    vector_rank: int | None = None
    keyword_rank: int | None = None
    relevance: float = 0.0
    components: dict[str, float] = field(default_factory=dict)


def fuse(
    vector_hits: list[tuple[str, float]],
    keyword_hits: list[tuple[str, float]],
    *,
    keyword_weight: float,
    mode: str = "score",
) -> list[Candidate]:
    """Merge the two hit lists; ``relevance`` in [0, 1], best first.

    ``score`` mode blends the scores, each divided by the best of its list, so that a query
    with strong keyword evidence is not drowned by uniformly middling cosines and vice versa.
    ``rrf`` mode is reciprocal-rank fusion, blind to score gaps.
    """
    cands: dict[str, Candidate] = {}
    for rank, (memory_id, sim) in enumerate(vector_hits):
        cands[memory_id] = Candidate(memory_id, vector=sim, vector_rank=rank)
    for rank, (memory_id, score) in enumerate(keyword_hits):
        cand = cands.setdefault(memory_id, Candidate(memory_id))
        cand.keyword = score
        cand.keyword_rank = rank
    # A list that found nothing gives no evidence; the other list then decides alone.
    if not keyword_hits:
        keyword_weight = 0.0
    elif not vector_hits:
        keyword_weight = 1.0
    top_vec = max((max(s, 0.0) for _, s in vector_hits), default=0.0) or 1.0
    top_kw = max((s for _, s in keyword_hits), default=0.0) or 1.0
    for cand in cands.values():
        if mode == "rrf":
            v = 1.0 / (RRF_K + cand.vector_rank) if cand.vector_rank is not None else 0.0
            k = 1.0 / (RRF_K + cand.keyword_rank) if cand.keyword_rank is not None else 0.0
            cand.relevance = ((1 - keyword_weight) * v + keyword_weight * k) * RRF_K
        else:
            v = max(cand.vector, 0.0) / top_vec
            k = cand.keyword / top_kw
            cand.relevance = (1 - keyword_weight) * v + keyword_weight * k
        cand.components = {
            "vector": round(cand.vector, 6),
            "keyword": round(cand.keyword, 6),
            "relevance": round(cand.relevance, 6),
        }
    return sorted(cands.values(), key=lambda c: -c.relevance)

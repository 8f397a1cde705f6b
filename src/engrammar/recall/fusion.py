"""Fusing vector and keyword candidates into one relevance score, and the evidence a session
gives its turns (pure functions)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import count
from operator import attrgetter, itemgetter

import numpy as np

__all__ = ["Candidate", "Fused", "best_first", "fused", "missed_hits", "session_evidence"]


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
_HIT_ID = itemgetter(0)
_ID = attrgetter("id")
_RELEVANCE = attrgetter("relevance")


class Fused:
    """The hits of both searches fused (:func:`fused`): ``ids`` best first (by relevance,
    equal ones by id), ``relevance`` by id; each made a :class:`Candidate` when a stage reads
    it (:meth:`candidate`): recall refines the head of ~150 and shows a few."""

    __slots__ = ("_keyword", "_keyword_rank", "_vector", "_vector_rank", "ids", "relevance")

    def __init__(
        self,
        vector_hits: list[tuple[str, float]],
        keyword_hits: list[tuple[str, float]],
        keyword: dict[str, float],
        relevance: dict[str, float],
    ) -> None:
        # By id: a hit's score and place in its list (the last, should an id come twice).
        self._vector = dict(vector_hits)
        self._vector_rank = dict(zip(map(_HIT_ID, vector_hits), count(), strict=False))
        self._keyword = keyword
        self._keyword_rank = dict(zip(map(_HIT_ID, keyword_hits), count(), strict=False))
        self.relevance = relevance
        # By id, then stably by relevance: two sorts keyed in C (see best_first).
        ids = sorted(relevance)
        ids.sort(key=relevance.__getitem__, reverse=True)
        self.ids = ids

    def __len__(self) -> int:
        return len(self.ids)

    def candidate(self, memory_id: str) -> Candidate:
        """The candidate of ``memory_id``, one of ``ids`` (a new one at each call)."""
        vector = self._vector.get(memory_id, 0.0)
        keyword = self._keyword.get(memory_id, 0.0)
        rel = self.relevance[memory_id]
        # Unrounded: most candidates are never shown (rounded where a ranking is handed out).
        comps = {"vector": vector, "keyword": keyword, "relevance": rel}
        return Candidate(
            memory_id,
            vector,
            keyword,
            self._vector_rank.get(memory_id),
            self._keyword_rank.get(memory_id),
            rel,
            comps,
        )

    def vector_scale(self, keyword_weight: float) -> tuple[float, float]:
        """The fused scale of a cosine: the vector share of relevance (``keyword_weight`` the
        keyword share when both searches found something) and the best vector hit's cosine
        (1 when none is above 0)."""
        has_vector, has_keyword = bool(self._vector), bool(self._keyword)
        kw = keyword_weight if has_vector and has_keyword else (1.0 if has_keyword else 0.0)
        return 1 - kw, self.best_vector() or 1.0

    def best_vector(self) -> float:
        """The best cosine of a vector hit, 0 at least (and with none)."""
        best = max(self._vector.values(), default=0.0)
        return best if best > 0.0 else 0.0


def fused(
    vector_hits: list[tuple[str, float]],
    keyword_hits: list[tuple[str, float]],
    *,
    keyword_weight: float,
) -> Fused:
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
    # A vector hit alone is scored with its keyword part ``keyword_weight x 0 / top_kw``, a
    # keyword hit alone with its vector part ``vector_weight x 0 / top_vec``: the very sums
    # of a hit found by both. An id given twice in a list counts as its last.
    no_keyword = keyword_weight * (0.0 / top_kw)
    no_vector = vector_weight * (0.0 / top_vec)
    scores = dict(keyword_hits)
    keyword = scores.get
    relevance: dict[str, float] = {}
    for memory_id, sim in vector_hits:
        v = (0.0 if sim < 0.0 else sim) / top_vec  # max(sim, 0.0), without the call
        score = keyword(memory_id)
        relevance[memory_id] = vector_weight * v + (
            no_keyword if score is None else keyword_weight * (score / top_kw)
        )
    for memory_id, score in scores.items():
        if memory_id not in relevance:
            relevance[memory_id] = no_vector + keyword_weight * (score / top_kw)
    return Fused(vector_hits, keyword_hits, scores, relevance)


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

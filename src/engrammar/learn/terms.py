"""Learned query terms: what a rating says a memory is about, in the user's words.

When a memory was rated ``accepted`` for a question, the question's content terms that the
memory does not contain itself are what the memory answers in the words of whoever asks, the
way a search engine learns from clicks (document expansion): "What did Caroline research?"
answered by "I looked into adoption agencies" teaches that memory *research*. A memory rated
``corrected`` (misleading) learns its question's terms the other way; a rejection teaches
nothing (it is about that one question).

At recall, each such rating whose learned terms the new query shares gives its memory a
signal of the rating's value, weighted by the share of the query's term weight (IDF) that
it covers (:func:`term_match`) times ``term_weight``: a question worded like the one the
memory answered lifts it even when the two questions are not alike as a whole (a related
question asks about the same turn in other words). The signals go through the same
aggregation as every other signal (``rates.aggregate``: decay by the rating's age,
shrinkage by ``min_samples``, the bound), each under the rating's id, so ``explain`` shows
their share and undoing the rating takes them back: nothing is stored but the records.

Replies teach no terms: a reply draws on its few best matches, and letting them learn the
question's words (even weighted by how alike each is to the reply) lifts them for unrelated
questions. Off by default (``feedback_term_weight`` 0; docs/learning.md).

Pure: the engine tokenizes (``recall.text.terms``) and hands over term sets and weights.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .rates import Signal

__all__ = ["TermUse", "idf", "term_match", "term_signals"]


@dataclass(frozen=True)
class TermUse:
    """One record's lesson about one memory: the terms it learned and which way."""

    memory_id: str
    record: str  # the rating's id
    value: float  # +1 useful for such questions, -1 misleading
    created_at: float
    learned: frozenset[str]  # the question's content terms the memory does not contain
    origin: str | None = None


def idf(df: int, n: int) -> float:
    """BM25's inverse document frequency of a term in ``df`` of ``n`` memories (> 0)."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def term_match(learned: Iterable[str], query_weights: Mapping[str, float]) -> float:
    """The share of the query's term weight that ``learned`` covers, in [0, 1]."""
    total = sum(query_weights.values())
    if total <= 0:
        return 0.0
    covered = sum(query_weights.get(t, 0.0) for t in set(learned))
    return min(1.0, covered / total)


def term_signals(
    uses: Iterable[TermUse], query_weights: Mapping[str, float], term_weight: float
) -> dict[str, list[Signal]]:
    """The signals of the records whose learned terms the query shares, per memory (source
    ``terms``, weight ``term_weight`` × :func:`term_match`)."""
    out: dict[str, list[Signal]] = {}
    if term_weight <= 0 or not query_weights:
        return out
    for use in uses:
        m = term_match(use.learned, query_weights)
        if m <= 0:
            continue
        out.setdefault(use.memory_id, []).append(
            Signal(
                use.value,
                term_weight * m,
                use.created_at,
                "terms",
                0.0,
                use.record,
                use.origin,
            )
        )
    return out

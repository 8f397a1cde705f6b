"""Learned query terms: what a rating or a reply says a memory is about, in the user's words.

When a memory was useful for a question (rated ``accepted``, or drawn on by the reply to it),
the question's content terms that the memory does not contain itself are what the memory
answers in the words of whoever asks, the way a search engine learns from clicks (document
expansion): "What did Caroline research?" answered by "I looked into adoption agencies"
teaches that memory *research*. A memory rated ``corrected`` (misleading) learns its
question's terms the other way.

At recall, each such record whose learned terms the new query shares gives its memory a
signal of the record's value, weighted by the share of the query's term weight (IDF) that
it covers (:func:`term_match`) times ``term_weight``: a question worded like the one the
memory answered lifts it even when the two questions are not alike as a whole (a related
question asks about the same turn in other words). The signals go through the same
aggregation as every other signal (``rates.aggregate``: decay by the record's age,
shrinkage by ``min_samples``, the bound), each under its record's id, so ``explain`` shows
their share and undoing the record takes them back: nothing is stored but the records.

A reply draws on a few memories but usually says what the best of them says: each takes a
:func:`reply_share` of the lesson. Off by default (``feedback_term_weight`` 0): on LoCoMo the
memories that learn a question's words are as often the competitors of a later question as
its evidence (docs/learning.md).

Pure: the engine tokenizes (``recall.text.terms``) and hands over term sets and weights.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .rates import Signal

__all__ = ["TermUse", "UseFacts", "idf", "reply_share", "term_match", "term_signals"]


@dataclass(frozen=True)
class UseFacts:
    """A reply signal on a memory with the query of its recall (a store read)."""

    memory_id: str
    recall_id: str
    value: float  # +1 the reply drew on the memory, -1 it was recalled and left
    created_at: float
    query: str
    source: str | None = None
    alignment: float = 1.0  # the memory's cosine with the reply
    best: float = 1.0  # the best alignment of a memory the reply drew on


@dataclass(frozen=True)
class TermUse:
    """One record's lesson about one memory: the terms it learned and which way."""

    memory_id: str
    record: str  # the rating's id, or the recall's id for a reply
    kind: str  # "rating" or "reply"
    value: float  # +1 useful for such questions, -1 misleading
    created_at: float
    learned: frozenset[str]  # the question's content terms the memory does not contain
    origin: str | None = None
    share: float = 1.0  # how much of the record's lesson is this memory's, in [0, 1]


def idf(df: int, n: int) -> float:
    """BM25's inverse document frequency of a term in ``df`` of ``n`` memories (> 0)."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def reply_share(alignment: float, best: float, floor: float, power: float = 2.0) -> float:
    """How much of a reply's lesson a memory it drew on takes: 1 for the memory the reply is
    most like, falling to 0 at the ``floor`` alignment of a drawn-on memory (``power`` sets
    how fast). A reply draws on its few best matches, but usually says what the best of them
    says: the others learning its question's words as much would lift them for questions
    about the one it answered."""
    if best <= floor:
        return 1.0
    part = max(0.0, min(1.0, (alignment - floor) / (best - floor)))
    return float(part**power)


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
                term_weight * m * use.share,
                use.created_at,
                "terms",
                0.0,
                use.record,
                use.origin,
            )
        )
    return out

"""Learned query terms at recall: the ratings that taught a candidate the query's words.

Takes the question of each accepted or corrected rating of a candidate (read with the other
learning facts), its topic terms that the memory does not contain (``recall.text.topic_terms``) and weighs the query's terms by their IDF among the scope's memories;
:func:`~engrammar.learn.terms.term_signals` turns the matches into signals. Derived from the
stored records at every recall: undoing a record takes its part back.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..learn.rates import Signal
from ..learn.scoring import RatingFacts
from ..learn.terms import TermUse, idf, term_signals
from ..models import Scope
from ..recall.text import index_text, speaker_of, terms, topic_terms
from .base import Engine

__all__ = ["learned_term_signals"]

# What a rating's verdict says about the memory for questions in the same words.
_RATING_VALUE = {"accepted": 1.0, "corrected": -1.0}


def learned_term_signals(
    engine: Engine,
    scope: Scope,
    query: str,
    ratings: Sequence[RatingFacts],
) -> dict[str, list[Signal]]:
    """The ``terms`` signals of the rated candidates for ``query`` (see
    :mod:`engrammar.learn.terms`); empty when ``feedback_term_weight`` is 0 or no rating taught
    them words."""
    store, cfg = engine.store, engine.config
    if cfg.feedback_term_weight <= 0:
        return {}
    found = [r for r in ratings if r.verdict in _RATING_VALUE and r.context]
    if not found:
        return {}
    records = store.get_memories(scope.workspace, sorted({r.memory_id for r in found}))
    own: dict[str, set[str]] = {
        i: set(terms(index_text(r.content, speaker_of(r.metadata)))) for i, r in records.items()
    }
    asked: dict[str, set[str]] = {}

    def topic(text: str) -> set[str]:
        if text not in asked:
            asked[text] = topic_terms(text)
        return asked[text]

    wanted = topic(query)
    if not wanted:
        return {}
    uses = []
    for rating in found:
        if rating.memory_id not in own or rating.context is None:
            continue
        learned = (topic(rating.context) & wanted) - own[rating.memory_id]
        if learned:
            uses.append(
                TermUse(
                    rating.memory_id,
                    rating.rating_id,
                    _RATING_VALUE[rating.verdict],
                    rating.created_at,
                    frozenset(learned),
                    rating.source,
                )
            )
    if not uses:
        return {}
    n, postings = store.term_postings(scope, sorted(wanted), 0)
    weights = {t: idf(postings[t][0], n) for t in wanted if t in postings}
    return term_signals(uses, weights, cfg.feedback_term_weight)

"""Learned query terms at recall: the records that taught a candidate the query's words.

Reads the ratings' questions (given with the other learning facts) and the queries of the
replies that drew on a candidate (``Store.reply_uses``), takes each question's topic terms
that the memory does not contain (``recall.text.topic_terms``, the names of the memories'
speakers left out) and weighs the query's terms by their IDF among the scope's memories;
:func:`~engrammar.learn.terms.term_signals` turns the matches into signals. Derived from the
stored records at every recall: undoing a record takes its part back.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..learn.rates import Signal
from ..learn.scoring import RatingFacts
from ..learn.terms import TermUse, idf, reply_share, term_signals
from ..models import Scope
from ..recall.query import named_speakers, topic_text
from ..recall.text import index_text, speaker_of, terms, topic_terms
from .base import Engine

__all__ = ["learned_term_signals"]

# What a rating's verdict says about the memory for questions in the same words.
_RATING_VALUE = {"accepted": 1.0, "corrected": -1.0}


def learned_term_signals(
    engine: Engine,
    scope: Scope,
    query: str,
    memory_ids: Sequence[str],
    ratings: Sequence[RatingFacts],
    since: float,
) -> dict[str, list[Signal]]:
    """The ``terms`` signals of ``memory_ids`` for ``query`` (see :mod:`engrammar.learn.terms`);
    empty when ``feedback_term_weight`` is 0 or no record taught them words."""
    store, cfg = engine.store, engine.config
    if cfg.feedback_term_weight <= 0 or not memory_ids:
        return {}
    # (memory, record, kind, value, created_at, question, origin, share)
    found: list[tuple[str, str, str, float, float, str, str | None, float]] = [
        (r.memory_id, r.rating_id, "rating", _RATING_VALUE[r.verdict], r.created_at, r.context,
         r.source, 1.0)
        for r in ratings
        if r.verdict in _RATING_VALUE and r.context
    ]  # fmt: skip
    found += [
        (u.memory_id, u.recall_id, "reply", 1.0, u.created_at, u.query, u.source,
         reply_share(u.alignment, u.best, cfg.feedback_align_weaken))
        for u in store.reply_uses(scope, memory_ids, since, cfg.feedback_records_limit)
    ]  # fmt: skip
    if not found:
        return {}
    records = store.get_memories(scope.workspace, sorted({f[0] for f in found}))
    speakers = {s for r in records.values() if (s := speaker_of(r.metadata))}
    own: dict[str, set[str]] = {
        i: set(terms(index_text(r.content, speaker_of(r.metadata)))) for i, r in records.items()
    }
    asked: dict[str, set[str]] = {}

    def topic(text: str) -> set[str]:
        if text not in asked:
            asked[text] = topic_terms(topic_text(text, named_speakers(text, speakers)))
        return asked[text]

    wanted = topic(query)
    if not wanted:
        return {}
    uses = []
    for memory_id, record, kind, value, created_at, question, origin, share in found:
        if memory_id not in own or share <= 0:
            continue
        learned = (topic(question) & wanted) - own[memory_id]
        if learned:
            uses.append(
                TermUse(
                    memory_id, record, kind, value, created_at, frozenset(learned), origin, share
                )
            )
    if not uses:
        return {}
    n, postings = store.term_postings(scope, sorted(wanted), 0)
    weights = {t: idf(postings[t][0], n) for t in wanted if t in postings}
    return term_signals(uses, weights, cfg.feedback_term_weight)

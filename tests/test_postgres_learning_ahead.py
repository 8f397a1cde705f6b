"""The learned ranking's reads read ahead with a recall's neighbourhood (PostgreSQL read
sessions, store/postgres/reads.py): the answers equal the plain reads', and a recall of a scope
with feedback records needs no exchange of its own for them."""

from __future__ import annotations

import pytest

from engrammar import Config, HashEmbedder, Memory
from pg import Exchanges
from test_postgres_reads import QUERIES, _fill, _plain, _recall_view, _rounded

pytestmark = pytest.mark.postgres

LEARNED_READS = ("reading feedback", "reading reply signals")


def _records(mem: Memory) -> None:
    """Every kind of feedback record a recall reads, except ratings."""
    event = mem.create_feedback_event(
        "When does the support group meet?",
        "On Mondays.",
        "corrected",
        corrected_output="The support group meets every Tuesday evening.",
        user_id="u1",
    )
    mem.create_decision_review(event.id, "corrected", "success", user_id="u1")
    mem.create_preference_pair(
        "What does Melanie like?", "Running marathons.", "Painting.", user_id="u1"
    )
    for query in QUERIES[:3]:
        first = mem.recall(query, user_id="u1", limit=3)
        mem.feedback(response=first.memories[0].content, user_id="u1", recall_id=first.recall_id)


def _compare(mem: Memory, names: Exchanges, query: str, limit: int) -> list[str]:
    """The session's recall and search equal the plain ones'; the session recall's exchanges."""
    names.names.clear()
    fast = mem.recall(query, user_id="u1", limit=limit)
    trips = list(names.names)
    with _plain():
        slow = mem.recall(query, user_id="u1", limit=limit)
    assert _recall_view(fast) == _recall_view(slow), query
    fast_search = mem.search(query, user_id="u1", limit=limit)
    with _plain():
        slow_search = mem.search(query, user_id="u1", limit=limit)
    assert _rounded([(m.id, m.score, m.components) for m in fast_search]) == _rounded(
        [(m.id, m.score, m.components) for m in slow_search]
    ), query
    return trips


def test_learned_reads_come_with_the_neighbourhood(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = Memory(Config(store=pg_url), embedder=HashEmbedder())
    try:
        _fill(mem)
        _records(mem)
        names = Exchanges(monkeypatch)
        learned_any = False
        for query in QUERIES:
            mem.recall(query, user_id="u1")  # the store learns which records the scope has
            for limit in (3, 10):
                trips = _compare(mem, names, query, limit)
                assert not set(trips) & set(LEARNED_READS), (query, trips)
                # keyword search, the neighbourhood with the learned reads, the recall record;
                # at most two reads the neighbourhood did not hold
                assert len(trips) <= 5, (query, trips)
            fast = mem.recall(query, user_id="u1", limit=10)
            learned_any |= any(m.components.get("learned", 0.0) != 0.0 for m in fast.memories)
        assert learned_any  # the records did count (the comparison is not of empty reads)
    finally:
        mem.close()


def test_a_rating_or_a_new_scope_reads_the_learned_records_on_their_own(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ratings are read by memory id (known after the walk), and a scope the store has not
    seen yet is guessed to have no reply signals: both read the learned records in an
    exchange of their own, with the same answers as the plain reads."""
    mem = Memory(Config(store=pg_url), embedder=HashEmbedder())
    try:
        _fill(mem)
        _records(mem)
        names = Exchanges(monkeypatch)
        fresh = Memory(Config(store=pg_url), embedder=HashEmbedder())  # a store without hints
        try:
            names.names.clear()
            fast = fresh.recall(QUERIES[0], user_id="u1")
            assert set(names.names) & set(LEARNED_READS), names.names
            with _plain():
                slow = fresh.recall(QUERIES[0], user_id="u1")
            assert _recall_view(fast) == _recall_view(slow)
        finally:
            fresh.close()
        first = mem.recall(QUERIES[1], user_id="u1", limit=3)
        mem.rate_memory(first.memories[0].id, "accepted", user_id="u1")
        for query in QUERIES:
            trips = _compare(mem, names, query, 10)
            assert set(trips) & set(LEARNED_READS), (query, trips)
    finally:
        mem.close()


def test_records_between_the_two_horizons_are_read_as_the_later_horizon_reads_them(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session reads ahead from its own horizon; the learned ranking asks a little later
    (a later horizon). A record between the two is dropped when the list was not cut at its
    limit, and the read-ahead is not used when it was (the newest ``limit`` may then differ)."""
    import time

    import numpy as np

    from engrammar.models import Scope
    from engrammar.store import LearningAhead, ReadPlan

    mem = Memory(Config(store=pg_url), embedder=HashEmbedder())
    try:
        _fill(mem)
        now = time.time()
        early, late = now - 1000.0, now - 500.0
        # Older by seq but inside both horizons, then newer by seq but between them.
        for at, text in ((now - 10.0, "inside"), (now - 750.0, "between")):
            mem.create_feedback_event(
                f"question {text}", f"answer {text}", "adopted", user_id="u1", timestamp=at
            )
        store = mem.store
        scope = Scope(mem.config.workspace, "u1")
        qvec = mem._engine.embed_one(QUERIES[0])
        ids = [m.id for m in mem.list(user_id="u1")]
        names = Exchanges(monkeypatch)

        def context() -> np.ndarray:
            return qvec

        for limit, used in ((10, True), (1, False)):
            ahead = LearningAhead(context, limit, 0.5, 10)
            plain = store.learning_reads(scope, ids, late, limit, context, 0.5, 10)
            # Either way the later horizon's newest is "inside"; read from the session's
            # horizon with limit 1, the newest is the one between the horizons.
            assert [e.ai_output for e in plain[0]] == ["answer inside"]
            for _ in range(2):  # the first session tells the store which kinds the scope has
                with store.reading(ReadPlan(early, learning=ahead)):
                    store.keyword_search(scope, QUERIES[0], 10)
                    store.vector_search(scope, qvec, 10)
                    names.names.clear()
                    read = store.learning_reads(scope, ids, late, limit, context, 0.5, 10)
            assert [(e.event_id, e.ai_output, e.created_at) for e in read[0]] == [
                (e.event_id, e.ai_output, e.created_at) for e in plain[0]
            ]
            assert ("reading feedback" in names.names) != used, (limit, names.names)
    finally:
        mem.close()


def test_edge_context_reads_come_with_the_neighbourhood(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """feedback_edge_context (on by default) weighs each walked edge's logged changes by the
    query's match with the recalls that made them: the changes come with the out-edges they
    belong to (the prefetch, or the read of edges it did not hold) and the matching recalls
    with the learned read-ahead, so a recall in a scope with reply feedback has no exchange of
    its own for them; its answers equal the plain reads'."""
    assert Config().feedback_edge_context
    mem = Memory(Config(store=pg_url), embedder=HashEmbedder())
    try:
        _fill(mem)
        _records(mem)
        for query in QUERIES[3:]:
            first = mem.recall(query, user_id="u1", limit=3)
            mem.feedback(response=first.memories[-1].content, user_id="u1")
        store = mem.store
        ids = [m.id for m in mem.list(user_id="u1", limit=100)]
        assert store.edge_changes(mem.config.workspace, ids, 100)  # the replies moved edges
        names = Exchanges(monkeypatch)
        for query in QUERIES:
            mem.recall(query, user_id="u1")  # the store learns which records the scope has
            for limit in (3, 10):
                trips = _compare(mem, names, query, limit)
                assert "reading edge changes" not in trips, (query, trips)
                assert not set(trips) & set(LEARNED_READS), (query, trips)
                assert len(trips) <= 5, (query, trips)
        # The setting changed what the walk read: the edges as the replies left them (off)
        # differ from the edges weighed by each query's match (on) for some query.
        off = Memory(Config(store=pg_url, feedback_edge_context=False), embedder=HashEmbedder())
        try:
            assert any(
                _recall_view(mem.recall(q, user_id="u1"))
                != _recall_view(off.recall(q, user_id="u1"))
                for q in QUERIES
            )
        finally:
            off.close()
    finally:
        mem.close()


def test_edge_context_reads_on_their_own_equal_the_session_reads(pg_url: str) -> None:
    """The parts of edges the session did not read in full (a node it never saw) are read with
    those edges, and equal the plain read, of one kind or all."""
    from engrammar.models import Scope
    from engrammar.store import LearningAhead, ReadPlan

    mem = Memory(Config(store=pg_url), embedder=HashEmbedder())
    try:
        _fill(mem)
        first = mem.recall(QUERIES[0], user_id="u1", limit=5)
        mem.feedback(response=first.memories[0].content, user_id="u1")
        store = mem.store
        ws = mem.config.workspace
        ids = [m.id for m in mem.list(user_id="u1", limit=100)]
        qvec = mem._engine.embed_one(QUERIES[0])
        ahead = LearningAhead(lambda: qvec, 10, 0.5, 10, edge_parts=True)
        for kind in (None, "sequence"):
            plain = sorted(store.learned_edge_parts(ws, ids, kind))
            assert plain or kind is not None
            with store.reading(ReadPlan(0.0, learning=ahead)):
                store.keyword_search(Scope(ws, "u1"), QUERIES[0], 10)
                store.vector_search(Scope(ws, "u1"), qvec, 10)
                read = sorted(store.learned_edge_parts(ws, ids, kind))
                assert sorted(store.learned_edge_parts(ws, ids[:3], kind)) == sorted(
                    p for p in plain if p[0] in ids[:3]
                )
            assert [p[:4] for p in read] == [p[:4] for p in plain]
            assert all(abs(a[4] - b[4]) < 1e-12 for a, b in zip(read, plain, strict=True))
    finally:
        mem.close()

"""The Memory-level tests of feedback records and the MemWire feedback loop, run unchanged on
PostgreSQL: the same test functions, with ``mem`` / ``real_mem`` opened on a throwaway server.

(The tests of those modules that open SQLite files by path stay SQLite-only; their PostgreSQL
counterparts, such as concurrent idempotency across processes, are below.)
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Iterator
from typing import Any

import pytest

from engrammar import Config, HashEmbedder, Memory
from engrammar.embed.onnx import MiniLMEmbedder

pytest.importorskip("psycopg")

from test_feedback import (
    test_a_recall_is_consumed_once,
    test_arguments_are_checked,
    test_feedback_acts_on_the_scope_of_the_recall,
    test_no_recall_means_nothing_to_do,
    test_the_reply_feeds_the_learned_ranking,
    test_the_side_of_a_tension_the_reply_agrees_with_is_strengthened,
    test_weakening_stops_at_the_floor,
)
from test_feedback_records import (
    WEBHOOK,
    test_bad_event_names_the_field_and_writes_nothing,
    test_contextual_rating_counts_for_similar_queries_only,
    test_explain_shows_each_learned_component,
    test_feedback_event_round_trip_with_its_decision_memory,
    test_forget_user_removes_their_feedback_records,
    test_pairs_logged_events_and_ratings_round_trip,
    test_preference_pair_surfaces_accepted_and_demotes_rejected,
    test_ratings_raise_and_lower_a_memory,
    test_recall_reads_only_recent_bounded_feedback_facts,
    test_rejected_event_stores_no_answer,
    test_reviews_mark_reversals_and_validate,
    test_same_source_event_id_returns_the_existing_event,
    test_stats_count_feedback_records,
)
from test_preferences import (
    test_a_stated_preference_comes_back_for_a_question_worded_away_from_it,
)

__all__ = [
    "test_a_recall_is_consumed_once",
    "test_a_stated_preference_comes_back_for_a_question_worded_away_from_it",
    "test_arguments_are_checked",
    "test_bad_event_names_the_field_and_writes_nothing",
    "test_contextual_rating_counts_for_similar_queries_only",
    "test_explain_shows_each_learned_component",
    "test_feedback_acts_on_the_scope_of_the_recall",
    "test_feedback_event_round_trip_with_its_decision_memory",
    "test_forget_user_removes_their_feedback_records",
    "test_no_recall_means_nothing_to_do",
    "test_pairs_logged_events_and_ratings_round_trip",
    "test_preference_pair_surfaces_accepted_and_demotes_rejected",
    "test_ratings_raise_and_lower_a_memory",
    "test_recall_reads_only_recent_bounded_feedback_facts",
    "test_rejected_event_stores_no_answer",
    "test_reviews_mark_reversals_and_validate",
    "test_same_source_event_id_returns_the_existing_event",
    "test_stats_count_feedback_records",
    "test_the_reply_feeds_the_learned_ranking",
    "test_the_side_of_a_tension_the_reply_agrees_with_is_strengthened",
    "test_weakening_stops_at_the_floor",
]


@pytest.fixture
def mem(pg_url: str) -> Iterator[Memory]:
    """A Memory on a fresh PostgreSQL database with the deterministic test embedder."""
    m = Memory(Config(store=pg_url), embedder=HashEmbedder())
    yield m
    m.close()


@pytest.fixture
def real_mem(pg_url: str, minilm: MiniLMEmbedder) -> Iterator[Memory]:
    """A Memory on a fresh PostgreSQL database with the real default model."""
    m = Memory(Config(store=pg_url), embedder=minilm)
    yield m
    m.close()


def _child_create(url: str, barrier: Any, out: Any) -> None:
    mem = Memory(Config(store=url), embedder=HashEmbedder())
    barrier.wait()
    ids = [mem.create_feedback_event(**WEBHOOK, source_event_id="evt-race").id for _ in range(5)]
    out.put(ids)
    mem.close()


def test_idempotent_under_concurrent_processes_on_postgres(pg_url: str) -> None:
    Memory(Config(store=pg_url), embedder=HashEmbedder()).close()  # migrate first
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(3)
    out = ctx.Queue()
    procs = [ctx.Process(target=_child_create, args=(pg_url, barrier, out)) for _ in range(3)]
    for p in procs:
        p.start()
    ids = [i for _ in procs for i in out.get(timeout=120)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert len(set(ids)) == 1
    with Memory(Config(store=pg_url), embedder=HashEmbedder()) as mem:
        assert len(mem.list_feedback_events(workspace="payments-api")) == 1
        assert len(mem.list(workspace="payments-api")) == 1

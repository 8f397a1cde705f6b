"""Feedback records: create / get / list, validation, idempotency, forget, ranking effect."""

from __future__ import annotations

import multiprocessing as mp
import time
from typing import Any

import pytest

from backends import open_memory
from engrammar import (
    ConflictError,
    Memory,
    NotFoundError,
    ValidationError,
)
from examples import WEBHOOK_EVENT

WEBHOOK = WEBHOOK_EVENT
pytestmark = pytest.mark.every_store


def test_feedback_event_round_trip_with_its_decision_memory(mem: Memory) -> None:
    event = mem.create_feedback_event(**WEBHOOK, source_event_id="evt-1")
    for key, value in WEBHOOK.items():
        assert getattr(event, key) == value
    assert event.source_event_id == "evt-1"
    assert mem.get_feedback_event(event.id, workspace="payments-api") == event
    assert mem.list_feedback_events(agent_id="codex", workspace="payments-api") == [event]
    assert mem.list_feedback_events(agent_id="other", workspace="payments-api") == []
    decision = mem.get(event.decision_memory_id or "", workspace="payments-api")
    assert decision.kind == "decision"
    assert decision.content == WEBHOOK["corrected_output"]
    assert decision.metadata["event_id"] == event.id
    with pytest.raises(NotFoundError):
        mem.get_feedback_event(event.id)  # another workspace


def test_rejected_event_stores_no_answer(mem: Memory) -> None:
    event = mem.create_feedback_event(
        input_context="Pick a queue", ai_output="Use a cron job", state="rejected", user_id="u"
    )
    assert event.decision_memory_id is None
    assert mem.list(user_id="u") == []


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"state": "maybe"}, "state"),
        ({"input_context": ""}, "input_context"),
        ({"ai_output": 3}, "ai_output"),
        ({"corrected_output": None, "user_correction": None}, "corrected_output"),
        ({"agent_id": None}, "user_id"),
        ({"source_event_id": ""}, "source_event_id"),
        ({"metadata": {"x": object()}}, "metadata"),
    ],
)
def test_bad_event_names_the_field_and_writes_nothing(
    mem: Memory, change: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as err:
        mem.create_feedback_event(**{**WEBHOOK, **change})
    assert err.value.field == field
    assert mem.list_feedback_events(workspace="payments-api") == []
    assert mem.list(workspace="payments-api") == []


def test_same_source_event_id_returns_the_existing_event(mem: Memory) -> None:
    first = mem.create_feedback_event(**WEBHOOK, source_event_id="evt-1")
    again = mem.create_feedback_event(**WEBHOOK, source_event_id="evt-1")
    assert again.id == first.id
    assert len(mem.list_feedback_events(workspace="payments-api")) == 1
    assert len(mem.list(workspace="payments-api")) == 1  # no second decision memory
    # Another workspace is another namespace.
    other = mem.create_feedback_event(
        **{**WEBHOOK, "workspace": "billing"}, source_event_id="evt-1"
    )
    assert other.id != first.id
    with pytest.raises(ConflictError):
        mem.create_feedback_event(**{**WEBHOOK, "reason": "changed"}, source_event_id="evt-1")
    assert len(mem.list_feedback_events(workspace="payments-api")) == 1


def _child_create(location: str, barrier: Any, out: Any) -> None:
    mem = open_memory(location)
    barrier.wait()
    ids = [mem.create_feedback_event(**WEBHOOK, source_event_id="evt-race").id for _ in range(5)]
    out.put(ids)
    mem.close()


@pytest.mark.processes
def test_idempotent_under_concurrent_processes(location: str) -> None:
    open_memory(location).close()  # migrate first
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(3)
    out = ctx.Queue()
    procs = [ctx.Process(target=_child_create, args=(location, barrier, out)) for _ in range(3)]
    for p in procs:
        p.start()
    ids = [i for _ in procs for i in out.get(timeout=120)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert len(set(ids)) == 1
    with open_memory(location) as mem:
        assert len(mem.list_feedback_events(workspace="payments-api")) == 1
        assert len(mem.list(workspace="payments-api")) == 1


def test_reviews_mark_reversals_and_validate(mem: Memory) -> None:
    event = mem.create_feedback_event(**WEBHOOK)
    same = mem.create_decision_review(
        event.id, "corrected", "success", 0.8, workspace="payments-api"
    )
    assert not same.reversed
    assert same.decision_memory_id == event.decision_memory_id
    flipped = mem.create_decision_review(
        event.id, "adopted", "failure", 0.4, reason="30 s was fine", workspace="payments-api"
    )
    assert flipped.reversed
    assert flipped.decision_memory_id not in (None, event.decision_memory_id)
    assert mem.get_decision_review(flipped.id, workspace="payments-api") == flipped
    assert mem.list_decision_reviews(workspace="payments-api") == [same, flipped]
    with pytest.raises(ValidationError) as err:
        mem.create_decision_review(event.id, "adopted", confidence=1.5, workspace="payments-api")
    assert err.value.field == "confidence"
    with pytest.raises(ValidationError) as err:
        mem.create_decision_review(event.id, "adopted", outcome="great", workspace="payments-api")
    assert err.value.field == "outcome"
    with pytest.raises(NotFoundError):
        mem.create_decision_review("nope", "adopted", workspace="payments-api")
    assert len(mem.list_decision_reviews(workspace="payments-api")) == 2


def test_pairs_logged_events_and_ratings_round_trip(mem: Memory) -> None:
    pair = mem.create_preference_pair(
        "Summarise the incident", "Three bullet points", "A long essay", 2.0, user_id="u"
    )
    assert mem.get(pair.memory_id or "").kind == "preference"
    assert mem.get_preference_pair(pair.id) == pair
    assert mem.list_preference_pairs(user_id="u") == [pair]
    with pytest.raises(ValidationError) as err:
        mem.create_preference_pair("c", "same", "same", user_id="u")
    assert err.value.field == "rejected_output"
    with pytest.raises(ValidationError) as err:
        mem.create_preference_pair("c", "a", "b", weight=0, user_id="u")
    assert err.value.field == "weight"

    logged = mem.log_event("checkpoint", {"step": 3, "ok": True}, agent_id="codex")
    assert mem.get_logged_event(logged.id) == logged
    assert mem.list_logged_events(agent_id="codex")[0].payload == {"step": 3, "ok": True}
    with pytest.raises(ValidationError) as err:
        mem.log_event("checkpoint", {"x": float("nan")}, agent_id="codex")
    assert err.value.field == "payload"

    [memory_id] = mem.add("The deploy runs on Fridays.", user_id="u")
    recall = mem.recall("When do we deploy?", user_id="u")
    rating = mem.rate_memory(
        memory_id, "corrected", "The deploy runs on Thursdays.", recall_id=recall.recall_id
    )
    assert rating.context == "When do we deploy?"
    assert rating.user_id == "u"
    assert mem.get(rating.correction_memory_id or "").content == "The deploy runs on Thursdays."
    assert mem.get_memory_rating(rating.id) == rating
    assert mem.list_memory_ratings(user_id="u") == [rating]
    with pytest.raises(ValidationError) as err:
        mem.rate_memory(memory_id, "meh")
    assert err.value.field == "verdict"
    with pytest.raises(NotFoundError):
        mem.rate_memory("missing", "accepted")
    with pytest.raises(NotFoundError):
        mem.rate_memory(memory_id, "accepted", recall_id="missing")


def test_forget_user_removes_their_feedback_records(mem: Memory) -> None:
    event = mem.create_feedback_event(**{**WEBHOOK, "workspace": None}, user_id="alice")
    mem.create_decision_review(event.id, "corrected", "success")
    mem.create_preference_pair("c", "a", "b", user_id="alice")
    mem.log_event("checkpoint", {}, user_id="alice")
    [mid] = mem.add("hello there", user_id="alice")
    mem.rate_memory(mid, "accepted")
    mem.create_preference_pair("c", "a", "b", user_id="bob")
    assert mem.forget(user_id="alice") >= 3
    assert mem.list_feedback_events(user_id="alice") == []
    assert mem.list_decision_reviews() == []
    assert mem.list_preference_pairs(user_id="alice") == []
    assert mem.list_logged_events(user_id="alice") == []
    assert mem.list_memory_ratings(user_id="alice") == []
    assert len(mem.list_preference_pairs(user_id="bob")) == 1


def _rank(mem: Memory, query: str, memory_id: str, **scope: Any) -> tuple[int, float]:
    items = mem.search(query, limit=20, **scope)
    for i, item in enumerate(items):
        if item.id == memory_id:
            return i, item.score
    raise AssertionError(f"{memory_id} not recalled")


def test_ratings_raise_and_lower_a_memory(mem: Memory) -> None:
    ids = mem.add(
        [
            {"role": "user", "content": "coffee beans from the market"},
            {"role": "user", "content": "coffee with the market team"},
            {"role": "user", "content": "coffee market prices"},
        ],
        user_id="u",
    )
    query = "coffee market"
    before = {i: _rank(mem, query, i, user_id="u")[1] for i in ids}
    for _ in range(5):
        mem.rate_memory(ids[0], "accepted")
        mem.rate_memory(ids[2], "rejected")
    after = {i: _rank(mem, query, i, user_id="u")[1] for i in ids}
    assert after[ids[0]] > before[ids[0]]
    assert after[ids[2]] < before[ids[2]]
    assert after[ids[1]] == pytest.approx(before[ids[1]])
    top = mem.search(query, user_id="u")[0]
    assert top.id == ids[0]
    assert top.components["learned_rating"] > 0
    # Search scores are absolute: the learned ranking times the query's best match.
    assert top.components["ranking"] == pytest.approx(
        top.components["relevance"] * (1 + top.components["learned"]), rel=1e-4
    )
    assert top.components["final"] == pytest.approx(
        top.components["ranking"] * top.components["query_match"], rel=1e-4
    )
    # The bound holds however many ratings arrive.
    for _ in range(50):
        mem.rate_memory(ids[0], "accepted")
    boosted = _rank(mem, query, ids[0], user_id="u")[1]
    assert boosted <= before[ids[0]] * (1 + mem.config.feedback_max_adjustment) + 1e-9


def test_contextual_rating_counts_for_similar_queries_only(mem: Memory) -> None:
    [mid] = mem.add("apples and pears in the garden", user_id="u")
    mem.add("apples on the table", user_id="u")
    recall = mem.recall("apples in the garden", user_id="u")
    _, before_other = _rank(mem, "garden pears", mid, user_id="u")
    mem.rate_memory(mid, "rejected", recall_id=recall.recall_id)
    _, after_same = _rank(mem, "apples in the garden", mid, user_id="u")
    _, after_other = _rank(mem, "garden pears", mid, user_id="u")
    assert after_same < recall.memories[0].score
    assert after_other == pytest.approx(before_other)  # HashEmbedder: unrelated context


def test_preference_pair_surfaces_accepted_and_demotes_rejected(mem: Memory) -> None:
    rejected_id = mem.add("report format: a long essay", user_id="u")[0]
    pair = mem.create_preference_pair(
        "report format",
        "report format: three bullet points",
        "report format: a long essay",
        user_id="u",
    )
    items = mem.search("report format", user_id="u")
    assert items[0].id == pair.memory_id
    by_id = {i.id: i for i in items}
    assert by_id[rejected_id].components["learned"] < 0


def test_stats_count_feedback_records(mem: Memory) -> None:
    mem.create_feedback_event(**WEBHOOK)
    mem.log_event("checkpoint", {}, agent_id="codex", workspace="payments-api")
    counts = mem.stats(workspace="payments-api")["feedback_records"]
    assert counts["feedback_event"] == 1
    assert counts["logged_event"] == 1
    assert counts["memory_rating"] == 0
    assert counts["reply"] == 0


def test_stats_count_reply_feedback_until_undone(mem: Memory) -> None:
    mem.add(["I live in Berlin.", "I cycle to work."], user_id="u")
    recall = mem.recall("Where do I live?", user_id="u")
    mem.feedback("You live in Berlin.", user_id="u", recall_id=recall.recall_id)
    assert mem.stats(user_id="u")["feedback_records"]["reply"] == 1
    mem.undo(recall.recall_id, user_id="u")
    assert mem.stats(user_id="u")["feedback_records"]["reply"] == 0


def test_explain_shows_each_learned_component(mem: Memory) -> None:
    ids = mem.add(
        [
            {"role": "user", "content": "coffee beans from the market"},
            {"role": "user", "content": "coffee market prices"},
        ],
        user_id="u",
    )
    pair = mem.create_preference_pair(
        "coffee market", "coffee market notes in bullets", "coffee market prices", user_id="u"
    )
    for _ in range(4):
        mem.rate_memory(ids[0], "accepted", context="coffee market")
    out = mem.explain("coffee market", ids[0], user_id="u")
    assert out["learned"]["learned_rating"] > 0
    assert out["learned"]["learned"] == out["components"]["learned"]
    assert out["score"] == pytest.approx(out["components"]["final"])
    assert "learned" in out["formula"]
    demoted = mem.explain("coffee market", ids[1], user_id="u")
    assert demoted["learned"]["learned_pair"] < 0
    assert demoted["score"] < demoted["components"]["score_before_learning"]
    surfaced = mem.explain("coffee market", pair.memory_id or "", user_id="u")
    assert surfaced["learned"]["context_match"] == pytest.approx(1.0)
    recalled = mem.recall("coffee market", user_id="u")
    assert recalled.memories[0].components["final"] == pytest.approx(recalled.memories[0].score)


def test_recall_reads_only_recent_bounded_feedback_facts(mem: Memory) -> None:
    """Scalability: recall asks the store for the newest ``feedback_records_limit`` events and
    pairs, ratings of its candidates only, and nothing older than the decay horizon."""
    from engrammar.models import Scope

    day = 86_400.0
    now = time.time()
    for i in range(5):
        mem.create_feedback_event(
            f"context {i}", f"output {i}", "adopted", user_id="u", timestamp=now - i
        )
    [kept, other] = mem.add(["a memory rated", "a memory not asked about"], user_id="u")
    mem.rate_memory(kept, "accepted", user_id="u")
    mem.rate_memory(kept, "rejected", user_id="u", timestamp=now - 400 * day)
    mem.rate_memory(other, "rejected", user_id="u")
    scope = Scope("default", "u")
    events, _, ratings = mem.store.learning_facts(scope, [kept], since=now - 300 * day, limit=2)
    assert [e.ai_output for e in events] == ["output 3", "output 4"]  # the last two written
    assert [(r.memory_id, r.verdict) for r in ratings] == [(kept, "accepted")]
    everything, _, all_ratings = mem.store.learning_facts(scope, [kept, other])
    assert len(everything) == 5 and len(all_ratings) == 3

"""The README's decisions scenario with the real model: the next agent starts from the decision."""

from __future__ import annotations

import pytest

from engrammar import Memory
from examples import WEBHOOK_EVENT

pytestmark = pytest.mark.model

WEBHOOK = WEBHOOK_EVENT
LATER = "How should our webhook delivery retry failed requests?"


def _history(mem: Memory) -> None:
    mem.add(
        [
            {
                "role": "user",
                "content": "The webhook sender posts payment events to merchant URLs.",
            },
            {"role": "assistant", "content": "Retry every 30 seconds until it succeeds."},
            {"role": "user", "content": "We deploy the payments API on Fridays."},
            {"role": "user", "content": "Invoices are generated on the first of the month."},
        ],
        agent_id="codex",
        workspace="payments-api",
    )


def test_later_agent_gets_the_corrected_decision_first(real_mem: Memory) -> None:
    _history(real_mem)
    event = real_mem.create_feedback_event(**WEBHOOK, source_event_id="codex-run-17")
    # Another agent, other words, same kind of task.
    result = real_mem.recall(LATER, agent_id="claude", workspace="payments-api")
    first = result.memories[0]
    assert first.id == event.decision_memory_id
    assert first.content == WEBHOOK["corrected_output"]
    assert first.note is not None
    assert first.note.startswith("prior decision (corrected)")
    assert WEBHOOK["reason"] in first.note
    assert first.components["context_match"] > 0
    assert WEBHOOK["reason"] in result.formatted.splitlines()[0]
    # The rejected output is never offered as the answer.
    assert all(
        m.content != WEBHOOK["ai_output"] or (m.note or "").startswith("rejected before")
        for m in result.memories
    )
    # The same agent sees its old (rejected) reply marked and below the decision.
    own = real_mem.recall(LATER, agent_id="codex", workspace="payments-api")
    assert own.memories[0].id == event.decision_memory_id
    old = next(m for m in own.memories if m.content == WEBHOOK["ai_output"])
    assert old.components["learned_rejected_output"] < 0
    assert (old.note or "").startswith("rejected before")


def test_unrelated_task_gets_no_prior_decision(real_mem: Memory) -> None:
    _history(real_mem)
    real_mem.create_feedback_event(**WEBHOOK)
    result = real_mem.recall(
        "When are invoices generated?", agent_id="claude", workspace="payments-api"
    )
    assert all(m.note is None for m in result.memories)
    assert all(m.memory.kind != "decision" for m in result.memories[:1])


def test_reversed_review_flips_the_decision(real_mem: Memory) -> None:
    _history(real_mem)
    event = real_mem.create_feedback_event(**WEBHOOK)
    review = real_mem.create_decision_review(
        event.id,
        "adopted",
        "success",
        0.9,
        reason="The merchants' endpoints rate-limit; fixed 30 s retries were what they asked for.",
        workspace="payments-api",
    )
    assert review.reversed
    result = real_mem.recall(LATER, agent_id="claude", workspace="payments-api")
    first = result.memories[0]
    assert first.content == WEBHOOK["ai_output"]
    assert first.note is not None and "reversed" in first.note and "rate-limit" in first.note
    corrected = [m for m in result.memories if m.id == event.decision_memory_id]
    assert not corrected or corrected[0].components["learned"] < 0
    assert not corrected or corrected[0].note is None or corrected[0].note.startswith("rejected")


def test_rejected_event_demotes_a_matching_memory(real_mem: Memory) -> None:
    _history(real_mem)
    real_mem.create_feedback_event(
        input_context="Add retries to the webhook sender",
        ai_output="Retry every 30 seconds until it succeeds.",
        state="rejected",
        reason="Unbounded retries hammer merchants.",
        agent_id="codex",
        workspace="payments-api",
    )
    result = real_mem.recall(LATER, agent_id="codex", workspace="payments-api")
    old = next(m for m in result.memories if m.content == WEBHOOK["ai_output"])
    assert old.components["learned"] < 0
    assert all(m.note is None or not m.note.startswith("prior") for m in result.memories)


def test_preference_pair_with_the_real_model(real_mem: Memory) -> None:
    _history(real_mem)
    pair = real_mem.create_preference_pair(
        "Write the changelog entry for the retry fix",
        "One line: what changed and why, linking the ticket.",
        "A paragraph narrating the debugging session.",
        agent_id="codex",
        workspace="payments-api",
    )
    items = real_mem.search(
        "How do we write changelog entries for fixes?", agent_id="codex", workspace="payments-api"
    )
    assert items[0].id == pair.memory_id
    assert items[0].components["learned_pair"] > 0

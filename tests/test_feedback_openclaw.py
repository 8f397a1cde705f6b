"""engrammar.feedback: the OpenCLaw feedback classes (FeedbackEntry, FeedbackCapture,
ImplicitSignalTracker) over a real Memory."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from engrammar import Memory, ValidationError
from engrammar.feedback import (
    FeedbackCapture,
    FeedbackEntry,
    FeedbackType,
    ImplicitSignalTracker,
)

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


def entry(**change: Any) -> FeedbackEntry:
    base: dict[str, Any] = {
        "interaction_id": "i-1",
        "timestamp": NOW,
        "feedback_type": FeedbackType.EXPLICIT_CORRECTION,
        "original_response": "Retry every 30 seconds until it succeeds.",
        "user_modification": "Exponential backoff, max 5 attempts, skip 4xx.",
        "context_tags": {"input_context": "Add retries to the webhook sender"},
    }
    return FeedbackEntry(**{**base, **change})


def test_feedback_type_values_are_the_seeds() -> None:
    assert [t.value for t in FeedbackType] == [
        "explicit_correction",
        "implicit_acceptance",
        "rejection",
        "modification",
    ]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"user_modification": None}, "user_modification"),
        ({"feedback_type": "nonsense"}, "feedback_type"),
        ({"interaction_id": ""}, "interaction_id"),
        ({"original_response": "  "}, "original_response"),
        ({"confidence_override": 1.5}, "confidence_override"),
        ({"timestamp": "yesterday"}, "timestamp"),
    ],
)
def test_validate_raises_naming_the_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        entry(**change).validate()
    assert err.value.field == field


def test_validate_accepts_good_entries_and_coerces_type_strings() -> None:
    assert entry().validate() is True
    e = entry(feedback_type="rejection", user_modification=None)
    assert e.validate() is True
    assert e.feedback_type is FeedbackType.REJECTION


def test_record_explicit_enforces_validate_and_writes_nothing_bad(mem: Memory) -> None:
    capture = FeedbackCapture(mem, agent_id="codex")
    with pytest.raises(ValidationError):
        capture.record_explicit(entry(user_modification=None))
    assert mem.list_feedback_events() == []
    event_id = capture.record_explicit(entry())
    event = mem.get_feedback_event(event_id)
    assert event.state == "corrected"
    assert event.corrected_output == "Exponential backoff, max 5 attempts, skip 4xx."
    assert event.input_context == "Add retries to the webhook sender"
    # A resend of the same entry is idempotent.
    assert capture.record_explicit(entry()) == event_id
    rejected = capture.record_explicit(
        entry(feedback_type=FeedbackType.REJECTION, user_modification=None, interaction_id="i-2")
    )
    assert mem.get_feedback_event(rejected).state == "rejected"
    with pytest.raises(ValidationError) as err:
        capture.record_explicit(entry(context_tags={}))  # no context, not a recall id
    assert err.value.field == "context_tags.input_context"


def test_tracker_strength_follows_the_actions() -> None:
    tracker = ImplicitSignalTracker()
    assert tracker.window_size == 50
    fp = tracker.register_response("Use exponential backoff.")
    copy = tracker.analyze({"type": "copy", "response_hash": fp})
    assert 0.5 < copy.strength <= 0.7  # copy-paste alone: partial satisfaction
    read = tracker.analyze({"type": "dwell", "seconds": 20, "response_hash": fp})
    assert read.strength > 0.7
    assert read.response == "Use exponential backoff."
    assert read.context["actions"] == {"copy": 1, "dwell": 1}
    other = tracker.register_response("Retry forever.")
    redo = tracker.analyze({"type": "regenerate", "response_hash": other})
    assert redo.strength < 0.5
    follow = tracker.analyze({"type": "follow_up", "response_hash": fp})
    assert follow.strength < read.strength
    with pytest.raises(ValidationError):
        tracker.analyze({"type": "dwell", "response_hash": fp})


def test_tracker_window_is_rolling() -> None:
    tracker = ImplicitSignalTracker(window_size=3)
    fp = tracker.register_response("A")
    for _ in range(5):
        tracker.analyze({"type": "copy", "response_hash": fp})
    assert len(tracker.action_history) == 3
    with pytest.raises(ValidationError):
        ImplicitSignalTracker(window_size=0)


def test_tracker_correlates_responses_of_the_same_shape() -> None:
    tracker = ImplicitSignalTracker()
    liked = [tracker.register_response(f"short answer {i}") for i in range(3)]
    for fp in liked:
        tracker.analyze({"type": "accept", "response_hash": fp})
    fresh = tracker.register_response("short answer new")
    primed = tracker.analyze({"type": "copy", "response_hash": fresh})
    cold = ImplicitSignalTracker()
    alone = cold.analyze({"type": "copy", "response": "short answer new"})
    assert primed.strength > alone.strength


def test_implicit_acceptance_rates_what_the_response_drew_on(real_mem: Memory) -> None:
    ids = real_mem.add(
        [
            {"role": "user", "content": "Webhook retries use exponential backoff."},
            {"role": "user", "content": "Our office plants need water on Mondays."},
        ],
        user_id="u",
    )
    recall = real_mem.recall("How do webhook retries work?", user_id="u")
    capture = FeedbackCapture(real_mem, user_id="u")
    capture.track_response(recall.recall_id, "Webhook retries back off exponentially.")
    assert capture.record_implicit(recall.recall_id, "copy") is None  # 0.67: not enough
    stored = capture.record_implicit(recall.recall_id, {"type": "dwell", "seconds": 30})
    assert stored is not None
    assert capture.record_implicit(recall.recall_id, "copy") is None  # once per response
    logged = real_mem.get_logged_event(stored)
    assert logged.kind == "implicit_acceptance"
    assert logged.payload["rated_memory_ids"] == [ids[0]]
    [rating] = real_mem.list_memory_ratings(user_id="u")
    assert rating.verdict == "accepted"
    assert rating.memory_id == ids[0]
    assert 0.7 < rating.weight <= 1.0
    again = real_mem.search("How do webhook retries work?", user_id="u")
    assert again[0].components["learned_rating"] > 0
    with pytest.raises(ValidationError) as err:
        capture.record_implicit("unknown-interaction", "copy")
    assert err.value.field == "interaction_id"

"""Session spread: further turns of one session give way to other sessions' best turns."""

from __future__ import annotations

import pytest

from engrammar import Config, HashEmbedder, Memory, ValidationError
from engrammar.recall.diversity import session_spread
from engrammar.recall.fusion import Candidate


def _cands(*pairs: tuple[str, float]) -> list[Candidate]:
    return [Candidate(i, relevance=r) for i, r in pairs]


def test_each_further_turn_of_a_session_is_discounted_more() -> None:
    cands = _cands(("a1", 1.0), ("a2", 0.9), ("a3", 0.85), ("b1", 0.7), ("x", 0.6))
    sessions = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "x": None}
    out = session_spread(cands, sessions, 0.3)
    assert [c.id for c in out] == ["a1", "b1", "a2", "x", "a3"]
    by_id = {c.id: c for c in out}
    assert by_id["a1"].relevance == 1.0 and by_id["b1"].relevance == 0.7  # firsts untouched
    assert by_id["a2"].relevance == pytest.approx(0.9 * 0.7)
    assert by_id["a3"].relevance == pytest.approx(0.85 * 0.49)
    assert by_id["a3"].components["session_spread"] == pytest.approx(0.51)
    assert by_id["x"].relevance == 0.6  # no session: left alone


def test_off_leaves_the_order() -> None:
    cands = _cands(("a1", 1.0), ("a2", 0.9), ("b1", 0.7))
    assert session_spread(cands, {"a1": "A", "a2": "A", "b1": "B"}, 0.0) is cands


def _sessions(tmp_path, spread: float, assistant: bool) -> list[str]:  # type: ignore[no-untyped-def]
    cfg = Config(path=str(tmp_path / f"s{spread}{assistant}"), session_spread=spread)
    role = "assistant" if assistant else "user"
    with Memory(cfg, embedder=HashEmbedder()) as mem:
        mem.add(
            [
                {"role": "user", "content": "I booked a trip to Lisbon for the spring."},
                {"role": role, "content": "Lovely, and the weather there is mild then."},
                {"role": "user", "content": "The Lisbon trip is in April, flights booked."},
                {"role": "user", "content": "For the Lisbon trip I still need a hotel."},
            ],
            user_id="u",
            session_id="one",
        )
        mem.add(["I booked a trip to Oslo in March."], user_id="u", session_id="two")
        result = mem.recall("Which trip did I book?", user_id="u", limit=4)
        return [m.memory.session_id or "" for m in result.memories]


def test_recall_spreads_over_sessions_in_a_chat_with_an_assistant(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert _sessions(tmp_path, 0.0, True)[:2] == ["one", "one"]
    assert _sessions(tmp_path, 0.6, True)[:2] == ["one", "two"]


def test_a_chat_between_people_is_not_spread(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Without an assistant (LoCoMo's shape) a topic is talked through within a session.
    assert _sessions(tmp_path, 0.6, False)[:2] == ["one", "one"]


def test_the_setting_is_checked() -> None:
    with pytest.raises(ValidationError, match="session_spread"):
        Config(session_spread=1.0)

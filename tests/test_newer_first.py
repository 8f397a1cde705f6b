"""Newer-first: a later restatement moves above the earlier one, unless both were said in the
same conversation (there a later message on the matter is mostly a follow-up)."""

from __future__ import annotations

import numpy as np

from engrammar.recall.supersession import Version, newer_first


def _order(session_a: str | None, session_b: str | None) -> list[str]:
    v = np.ones(4, np.float32) / 2.0  # the same vector: cosine 1
    versions = {
        "old": Version("old", 100.0, session=session_a),
        "new": Version("new", 200.0, session=session_b),
    }
    return newer_first(
        ["old", "new"], {"old": 1.0, "new": 0.8}, versions, {"old": v, "new": v}, 0.4, 0.5
    )


def test_a_restatement_in_a_later_conversation_moves_up() -> None:
    assert _order("monday", "friday") == ["new", "old"]


def test_a_follow_up_in_the_same_conversation_stays() -> None:
    assert _order("monday", "monday") == ["old", "new"]


def test_without_sessions_time_decides() -> None:
    # One add call without a session (the README's "I live in Paris" / "I moved to Berlin").
    assert _order(None, None) == ["new", "old"]
    assert _order("monday", None) == ["new", "old"]

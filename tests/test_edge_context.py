"""feedback_edge_context: what a reply taught an edge counts near the recall it answered."""

from __future__ import annotations

import pytest

from backends import open_memory
from engrammar import Memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.models import RecallResult
from test_feedback import BAKE, CLIMB, REPLY, ROUTE, UNWIND

# test_feedback's other memories less one: nine in all, the whole scope in a recall of 9.
OTHERS = [
    "I work as a nurse on the night shift.",
    "My car needs new tyres before winter.",
    "I read science fiction novels before bed.",
    "My sister lives in Lisbon.",
    "Our dog is afraid of thunderstorms.",
]
ASKED = "What do you like doing on weekends?"
OTHER = "Why do I bake bread?"


def _ranking(result: RecallResult) -> list[tuple[str, float, float]]:
    return [(m.content, round(m.score, 6), m.components.get("graph", 0.0)) for m in result.memories]


def _add(mem: Memory) -> None:
    mem.add([CLIMB, ROUTE], user_id="bob", session_id="s1")
    mem.add([BAKE, UNWIND], user_id="bob", session_id="s2")
    for text in OTHERS:
        mem.add(text, user_id="bob")


@pytest.mark.every_store
def test_edges_a_reply_changed_count_for_its_question_not_for_another(
    location: str, minilm: MiniLMEmbedder
) -> None:
    # Neighbour support off: the other question's ranking then depends on the walk alone.
    with open_memory(location, minilm, feedback_edge_context=True) as mem:
        _add(mem)
        other_before = _ranking(mem.recall(OTHER, user_id="bob", limit=9))
        for _ in range(4):
            mem.recall(ASKED, user_id="bob", limit=9)
            out = mem.feedback(response=REPLY, user_id="bob")
            assert out["strengthened"] + out["weakened"] >= 1
        asked = _ranking(mem.recall(ASKED, user_id="bob", limit=9))
        other = _ranking(mem.recall(OTHER, user_id="bob", limit=9))
    # The far question (no reply signal applies to it either) walks the edges as they were.
    assert other == other_before
    with open_memory(location, minilm, feedback_edge_context=False) as mem:
        asked_everywhere = _ranking(mem.recall(ASKED, user_id="bob", limit=9))
        other_everywhere = _ranking(mem.recall(OTHER, user_id="bob", limit=9))
    # The question the replies answered sees every change in full, as MemWire's rule says ...
    assert asked == asked_everywhere
    # ... and without the setting the changed edges reach the other question's walk too.
    assert other_everywhere != other_before


@pytest.mark.every_store
def test_undoing_the_reply_gives_back_the_ranking(location: str, minilm: MiniLMEmbedder) -> None:
    with open_memory(location, minilm, feedback_edge_context=True) as mem:
        _add(mem)
        mem.recall(ASKED, user_id="bob", limit=9)
        first = mem.feedback(response=REPLY, user_id="bob")
        before = _ranking(mem.recall(ASKED, user_id="bob", limit=9))
        second = mem.feedback(response=REPLY, user_id="bob")
        assert second["strengthened"] + second["weakened"] >= 1
        mem.undo(second["recall_id"])
        assert _ranking(mem.recall(ASKED, user_id="bob", limit=9)) == before
        assert first["consumed"]

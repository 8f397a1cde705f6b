"""A memory accepted for a question is placed among that question's best (feedback_rating_anchor),
through the stores: the rating's recall gives its question, the reply of that recall can veto it,
and a related question is not moved by it."""

from __future__ import annotations

import pytest

from backends import open_memory
from engrammar import Memory

# Ten facts sharing words with the question, so that all are candidates of it; the one the
# user accepts ranks last.
FACTS = [f"deploy checklist step {i} for the payments service" for i in range(9)] + [
    "the payments deploy needs the release manager's sign-off"
]
QUESTION = "deploy checklist payments step"


def _position(mem: Memory, memory_id: str, query: str = QUESTION) -> int:
    ids = [m.id for m in mem.recall(query, user_id="u", limit=20).memories]
    return ids.index(memory_id) + 1


@pytest.mark.every_store
@pytest.mark.parametrize("anchor", ["bounded", "whole", "off"])
def test_an_accepted_memory_rises_into_the_top_of_its_question(location: str, anchor: str) -> None:
    mem = open_memory(
        location,
        feedback_rating_anchor=anchor != "off",
        feedback_anchor_bound="off" if anchor == "whole" else "ratings",
    )
    try:
        mem.add(FACTS, user_id="u")
        recall = mem.recall(QUESTION, user_id="u", limit=20)
        target = recall.memories[-1].id
        score_before = recall.memories[-1].score
        assert len(recall.memories) > 5
        before = _position(mem, target)
        assert before > 5
        rating = mem.rate_memory(target, "accepted", recall_id=recall.recall_id, user_id="u")
        after = _position(mem, target)
        why = mem.explain(QUESTION, target, user_id="u")
        if anchor == "whole":
            # Placed at the 5th candidate's level, beyond what the bound allows one source.
            assert after <= 5
            assert why["learned"]["accepted_level"] > 0
            assert why["score"] > score_before * 1.5
        elif anchor == "bounded":
            # The placement counts inside the source's bound: the score rises by exactly
            # feedback_max_adjustment (0.5), the rating's share and the placement together.
            assert why["score"] == pytest.approx(score_before * 1.5, rel=1e-4)
            assert why["learned"]["learned_placement"] > 0
            (source,) = why["sources"]
            assert source["source"] is None and source["placement"] > 0
            assert (1 + source["placement"]) * (1 + source["contribution"]) == pytest.approx(
                1.5, rel=1e-4
            )
        else:
            # One rating alone moves the score by at most a quarter of the bound.
            assert after > 5
            assert "placement" not in why["sources"][0]
        mem.undo(rating.id)
        assert _position(mem, target) == before
    finally:
        mem.close()


@pytest.mark.every_store
def test_the_reply_of_the_same_recall_can_veto_the_placement(mem: Memory) -> None:
    mem.add(FACTS, user_id="u")
    recall = mem.recall(QUESTION, user_id="u", limit=20)
    target = recall.memories[-1].id
    before = _position(mem, target)
    mem.rate_memory(target, "accepted", recall_id=recall.recall_id, user_id="u")
    # The reply drew on other facts and left this one: the acceptance is disputed.
    out = mem.feedback(
        response="deploy checklist step 0 for the payments service",
        user_id="u",
        recall_id=recall.recall_id,
    )
    assert target in out["left"]
    assert _position(mem, target) >= before

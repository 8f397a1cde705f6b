"""Learned query terms: feedback on one question carries to another worded
alike, not to an unrelated one, and undoing the record takes it back exactly."""

from __future__ import annotations

import math
from typing import Any

import pytest

from backends import open_memory
from engrammar import Memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.learn.terms import TermUse, idf, term_match, term_signals

TURNS = [
    "Caroline: I looked into adoption agencies last week, there are so many options.",
    "Melanie: We went camping at the lake with the kids last weekend.",
    "Caroline: The support group meeting on Tuesday was really moving.",
    "Melanie: I painted a sunset over the lake, it's hanging in the hall now.",
    "Caroline: I want to become a counselor and work with young people.",
    "Melanie: My kids are obsessed with dinosaurs at the moment.",
    "Caroline: I've been reading a lot about being a single parent lately.",
    "Melanie: Pottery class is my escape, I made a bowl yesterday.",
    "Caroline: My friends from the support group threw me a party.",
    "Melanie: We saw a meteor shower while camping, it was magical.",
    "Melanie: Our family plans for the holidays are a big dinner at grandma's.",
    "Caroline: The outcome of the vote at work was a relief for all of us.",
]
ASKED = "What did Caroline research?"
RELATED = "What was the outcome of the research for her family plans?"
UNRELATED = "What did Melanie make in her pottery class?"


def test_term_match_is_the_share_of_the_query_weight_covered() -> None:
    weights = {"research": 3.0, "famili": 1.0}
    assert term_match({"research"}, weights) == pytest.approx(0.75)
    assert term_match({"research", "famili", "other"}, weights) == pytest.approx(1.0)
    assert term_match({"other"}, weights) == 0.0
    assert term_match({"research"}, {}) == 0.0
    # Rare terms weigh more than common ones.
    assert idf(1, 100) > idf(50, 100) > 0
    assert math.isclose(idf(0, 0), math.log(2.0))


def test_term_signals_weigh_each_record_by_its_match() -> None:
    uses = [
        TermUse("m1", "r1", 1.0, 10.0, frozenset({"research"}), "key-a"),
        TermUse("m1", "r2", 1.0, 11.0, frozenset({"famili"})),
        TermUse("m2", "r3", -1.0, 12.0, frozenset({"research"})),
        TermUse("m3", "r4", 1.0, 13.0, frozenset({"camp"})),
    ]
    out = term_signals(uses, {"research": 3.0, "famili": 1.0}, 2.0)
    assert sorted(out) == ["m1", "m2"]  # m3 learned nothing the query asks
    first, second = out["m1"]
    assert (first.value, first.weight, first.record, first.origin) == (1.0, 1.5, "r1", "key-a")
    assert (second.weight, second.record, second.source) == (0.5, "r2", "terms")
    assert out["m2"][0].value == -1.0
    assert term_signals(uses, {"research": 1.0}, 0.0) == {}


def _ranking(mem: Memory, query: str) -> list[tuple[str, float]]:
    return [(m.id, m.score) for m in mem.recall(query, user_id="u", limit=10).memories]


def _state(mem: Memory) -> dict[str, Any]:
    return {q: _ranking(mem, q) for q in (ASKED, RELATED, UNRELATED)}


@pytest.mark.every_store
def test_feedback_carries_to_a_question_worded_alike(location: str, minilm: MiniLMEmbedder) -> None:
    mem = open_memory(location, minilm, feedback_term_weight=1.0)
    try:
        mem.add([{"role": "user", "content": t} for t in TURNS], user_id="u")
        adoption = next(m.id for m in mem.list(user_id="u", limit=50) if "adoption" in m.content)
        before = _state(mem)
        # The related question is not alike the asked one as a whole: the rating's context
        # ramp alone would not carry to it.
        vecs = mem.embedder.embed([ASKED, RELATED])
        assert float(vecs[0] @ vecs[1]) < mem.config.feedback_rating_context_min + 0.05

        recall = mem.recall(ASKED, user_id="u", limit=10)
        rating = mem.rate_memory(adoption, "accepted", recall_id=recall.recall_id, user_id="u")
        reply = mem.feedback(
            response="Caroline researched adoption agencies.",
            user_id="u",
            recall_id=recall.recall_id,
        )
        assert adoption in reply["drawn_on"]

        after = _state(mem)
        # The related question: the accepted memory rises, and by its learned terms.
        old = dict(before[RELATED])[adoption]
        new = dict(after[RELATED])[adoption]
        assert new > old
        found = mem.explain(RELATED, adoption, user_id="u")
        assert found["learned"]["learned_terms"] > 0
        assert {r["record_id"] for r in found["records"]} >= {rating.id}
        # The unrelated question shares none of the asked question's topic terms: no memory
        # moves by learned terms (the reply's edge changes move the graph part a little).
        unrelated = mem.recall(UNRELATED, user_id="u", limit=10).memories
        assert all("learned_terms" not in m.components for m in unrelated)
        assert [i for i, _ in after[UNRELATED]] == [i for i, _ in before[UNRELATED]]

        # Undo both records: every ranking is what it was, score for score.
        mem.undo(rating.id, user_id="u")
        mem.undo(recall.recall_id, user_id="u")
        assert _state(mem) == before
    finally:
        mem.close()


@pytest.mark.every_store
def test_term_weight_zero_learns_no_terms(location: str, minilm: MiniLMEmbedder) -> None:
    mem = open_memory(location, minilm)  # the default: off
    try:
        mem.add([{"role": "user", "content": t} for t in TURNS], user_id="u")
        adoption = next(m.id for m in mem.list(user_id="u", limit=50) if "adoption" in m.content)
        recall = mem.recall(ASKED, user_id="u", limit=10)
        mem.rate_memory(adoption, "accepted", recall_id=recall.recall_id, user_id="u")
        found = mem.explain(RELATED, adoption, user_id="u")
        assert "learned_terms" not in found.get("learned", {})
    finally:
        mem.close()


@pytest.mark.every_store
def test_a_correction_teaches_the_other_way_and_a_rejection_nothing(
    location: str, minilm: MiniLMEmbedder
) -> None:
    mem = open_memory(location, minilm, feedback_term_weight=1.0)
    try:
        mem.add([{"role": "user", "content": t} for t in TURNS], user_id="u")
        by_text = {m.content: m.id for m in mem.list(user_id="u", limit=50)}
        adoption = by_text[TURNS[0]]
        reading = by_text[TURNS[6]]
        recall = mem.recall(ASKED, user_id="u", limit=10)
        mem.rate_memory(
            adoption, "corrected", "Not that one.", recall_id=recall.recall_id, user_id="u"
        )
        mem.rate_memory(reading, "rejected", recall_id=recall.recall_id, user_id="u")
        assert mem.explain(RELATED, adoption, user_id="u")["learned"]["learned_terms"] < 0
        assert "learned_terms" not in mem.explain(RELATED, reading, user_id="u")["learned"]
    finally:
        mem.close()

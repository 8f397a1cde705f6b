"""A message that only asks states nothing: its echo of the query's words counts less."""

from __future__ import annotations

import pytest

from engrammar import Memory, RankingProfile
from engrammar.recall.query import only_asks


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("How did you come to have Susie?", True),
        ("Really? How long have you been painting? Any tips?", True),
        ("Deborah: How did you come to have Susie?", True),
        ("I adopted Susie two years ago. Do you have pets?", False),
        ("I adopted Susie two years ago.", False),
        ("Wow!", False),
        ("", False),
        ("Can you recommend hotels in Lisbon? I arrive on May 3.", False),
    ],
)
def test_only_asks_reads_every_sentence(text: str, asks: bool) -> None:
    assert only_asks(text) is asks


def _susie(mem: Memory) -> None:
    mem.add(
        [
            "How did you come to have Susie?",
            "I adopted my cat Susie from the shelter two years ago when I was lonely.",
            "We went hiking on Sunday.",
        ],
        user_id="u",
        session_id="s1",
    )


def test_the_answer_ranks_above_the_question_that_echoes_the_query(real_mem: Memory) -> None:
    _susie(real_mem)
    question = "How did they come to have their cat Susie?"
    off = real_mem.recall(question, user_id="u", limit=3, profile=RankingProfile(question_weight=0))
    assert off.memories[0].memory.content.startswith("How did you come")  # the echo wins alone
    on = real_mem.recall(question, user_id="u", limit=3)
    first = on.memories[0]
    assert first.memory.content.startswith("I adopted my cat Susie")
    asked = next(m for m in on.memories if m.memory.content.startswith("How did you come"))
    assert asked.components["question"] == pytest.approx(-0.3)
    assert "question" not in first.components

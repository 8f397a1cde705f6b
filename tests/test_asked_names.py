"""The query's vector reads a question without the names of the people it asks about: their
own messages seldom name them."""

from __future__ import annotations

import pytest

from engrammar import Memory, RankingProfile
from engrammar.recall.query import without_asked_names


@pytest.mark.parametrize(
    ("question", "read"),
    [
        ("When did Melanie paint a sunrise?", "When did paint a sunrise?"),
        ("What is Caroline's identity?", "What is identity?"),
        ("Would Caroline pursue writing as a career?", "Would pursue writing as a career?"),
        ("What did Jon and Gina both lose?", "What did both lose?"),
        ("How many times has Melanie gone to the beach?", "How many times has gone to the beach?"),
        # Names of places and things, and the asker, stay.
        ("What did I buy at Target last week?", "What did I buy at Target last week?"),
        ("Where did I stay in Tokyo?", "Where did I stay in Tokyo?"),
        ("What did NASA announce?", "What did NASA announce?"),
        # Nothing else left: the question as it is.
        ("Caroline's?", "Caroline's?"),
    ],
)
def test_the_vector_reads_the_question_without_the_people_it_asks_about(
    question: str, read: str
) -> None:
    assert without_asked_names(question) == read


CONVERSATION = [
    ("Caroline", "Hey, how was your week?"),
    ("Melanie", "Good! Busy as always."),
    ("Caroline", "Tell me more!"),
    ("Melanie", "We finally got away: two weeks on the coast of Portugal, swimming every morning."),
    ("Caroline", "That sounds lovely."),
    ("Melanie", "Yes, it was."),
    ("Melanie", "Thanks, Caroline!"),
    ("Melanie", "I know, right?"),
    ("Melanie", "Haha, totally."),
]


def _rank(mem: Memory, question: str, profile: RankingProfile) -> int:
    ranked = mem.recall(question, user_id="u", limit=9, profile=profile).memories
    contents = [m.memory.content for m in ranked]
    return next(i for i, c in enumerate(contents, 1) if "Portugal" in c)


def test_a_persons_own_words_answer_a_question_about_them(real_mem: Memory) -> None:
    for n, (name, text) in enumerate(CONVERSATION):
        real_mem.add(
            [{"role": "user", "name": name, "content": text}],
            user_id="u",
            session_id="s1",
            timestamp=1_700_000_000 + 60 * n,
        )
    question = "Where did Melanie go on vacation?"
    assert _rank(real_mem, question, RankingProfile()) <= 2
    # With her name in the vector, every short reply of hers (whose vector is mostly her name,
    # as the question's is) ranks above the answer.
    assert _rank(real_mem, question, RankingProfile(names_in_vector=1)) > 3

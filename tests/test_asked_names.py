"""The query's vector reads a question as the person it asks about would put it: their own
messages say "I" and seldom name them."""

from __future__ import annotations

import pytest

from engrammar import Memory, RankingProfile
from engrammar.recall.query import in_first_person


@pytest.mark.parametrize(
    ("question", "read"),
    [
        ("When did Melanie paint a sunrise?", "When did I paint a sunrise?"),
        ("What is Caroline's identity?", "What is my identity?"),
        ("Would Caroline pursue writing as a career?", "Would I pursue writing as a career?"),
        ("What did Jon and Gina both lose?", "What did I both lose?"),
        ("When did Melanie take her kids to the museum?", "When did I take my kids to the museum?"),
        ("How did John describe his son to him?", "How did I describe my son to me?"),
        # Names of places and things, the asker, and "my ...'s" stay.
        ("What did I buy at Target last week?", "What did I buy at Target last week?"),
        ("Where did I stay in Tokyo?", "Where did I stay in Tokyo?"),
        ("What did NASA announce?", "What did NASA announce?"),
        ("Where did I get my Bachelor's degree?", "Where did I get my Bachelor's degree?"),
        # A name of several words stays: a third party's, or a place's.
        (
            "Which video of Corey Schafer's series did I watch?",
            "Which video of Corey Schafer's series did I watch?",
        ),
        ("When was the mass at St. Mary's Church?", "When was the mass at St. Mary's Church?"),
        ("When did Corey Schafer publish it?", "When did Corey Schafer publish it?"),
        # Without a name it asks about, "her" stays.
        ("What did I give her for her birthday?", "What did I give her for her birthday?"),
    ],
)
def test_the_vector_reads_the_question_as_the_person_it_asks_about_would(
    question: str, read: str
) -> None:
    assert in_first_person(question) == read


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


def test_a_question_about_someone_the_user_mentions_still_finds_them(real_mem: Memory) -> None:
    # In a conversation between a user and an assistant, a named person is a third party: the
    # vector reads "When did I move?", and the name still counts through keyword search.
    real_mem.add(
        [
            {
                "role": "user",
                "content": "My friend Rachel moved to Chicago last month for her job.",
            },
            {"role": "user", "content": "I moved to Denver in 2019 after college."},
            {"role": "user", "content": "Can you suggest a good moving company?"},
        ],
        user_id="u",
        session_id="s1",
    )
    ranked = real_mem.recall("When did Rachel move?", user_id="u", limit=3).memories
    assert ranked[0].memory.content.startswith("My friend Rachel"), ranked

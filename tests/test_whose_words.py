"""Whose words a question asks about, and both roles as memory."""

from __future__ import annotations

import pytest

from engrammar import Memory, RankingProfile
from engrammar.recall.query import whose_words


@pytest.mark.parametrize(
    ("question", "whose"),
    [
        ("What was the name of the hotel you recommended?", "assistant"),
        ("Did you say the meeting starts at three?", "assistant"),
        ("Remind me of your advice on the loan.", "assistant"),
        ("I remember you told me to dilute the oil. What ratio was it?", "assistant"),
        ("Where did I park my car?", "user"),
        ("How long did it take me to assemble the bookshelf?", "user"),
        ("What is the launch code of the zebra project?", None),
        ("What did Caroline research last week?", None),
        ("What did we discuss about the budget?", None),
        ("Can you remind me what we talked about in our last chat?", None),
    ],
)
def test_whose_words_reads_the_question(question: str, whose: str | None) -> None:
    assert whose_words(question) == whose


def _parking(mem: Memory) -> None:
    mem.add(
        [
            {"role": "user", "content": "I parked the car on level 3 of the Elm Street garage."},
            {
                "role": "assistant",
                "content": (
                    "Parking garages downtown: the Elm Street garage has six levels and charges "
                    "by the hour; the Main Street garage is cheaper on weekends; level 1 of most "
                    "garages fills first, so park higher. For the car, the Oak Avenue garage on "
                    "level 2 has chargers. I recommend the Main Street garage for long stays."
                ),
            },
        ],
        user_id="u",
        session_id="s1",
    )
    mem.add(
        ["I had lunch with Dana on Friday.", "We hired two engineers."],
        user_id="u",
        session_id="s2",
    )


def _first_role(mem: Memory, question: str, profile: RankingProfile | None = None) -> str:
    result = mem.recall(question, user_id="u", limit=3, profile=profile)
    return result.memories[0].memory.role


def test_a_question_about_the_asker_ranks_the_askers_own_words_first(real_mem: Memory) -> None:
    _parking(real_mem)
    assert _first_role(real_mem, "Which garage do I park in?") == "user"
    # The stage is what does it: without it the assistant's longer reply wins on its words.
    off = RankingProfile(role_weight=0.0)
    assert _first_role(real_mem, "Which garage do I park in?", off) == "assistant"
    result = real_mem.recall("Which garage do I park in?", user_id="u", limit=3)
    second = next(m for m in result.memories if m.memory.role == "assistant")
    assert second.components["role"] == -0.5


def test_a_question_about_what_the_assistant_said_ranks_its_words_first(
    real_mem: Memory,
) -> None:
    _parking(real_mem)
    assert _first_role(real_mem, "Which garage did you recommend for long stays?") == "assistant"


def test_an_assistants_long_report_is_found_by_the_words_at_its_end(real_mem: Memory) -> None:
    section = (
        "Section {}: the quarterly roadmap covers hiring, budget reviews, vendor contracts and "
        "the office move, with owners and dates for each milestone."
    )
    report = " ".join(section.format(i) for i in range(700))
    report += " Finally, the launch code for the zebra project is PAPAYA-42."
    assert len(report) > 95_000
    real_mem.add(
        [
            {"role": "user", "content": "Please write the full status report."},
            {"role": "assistant", "content": report},
        ],
        user_id="u",
        session_id="s1",
    )
    real_mem.add(
        [
            "The office move is planned for March.",
            "Budget reviews happen every quarter.",
            "We hired two engineers.",
            "I had lunch with Dana on Friday.",
        ],
        user_id="u",
        session_id="s2",
    )
    result = real_mem.recall("What is the launch code of the zebra project?", user_id="u")
    top = result.memories[0]
    assert top.memory.role == "assistant" and "PAPAYA-42" in (top.excerpt or "")


def _chat(mem: Memory, named: bool) -> None:
    """Two people, the same words in both mouths; with ``named`` each message carries its
    speaker as ``name``, else the speaker is only the label its text starts with."""
    lines = [
        (
            "Melanie",
            "Caroline, you should find out about adoption agencies: adoption agencies "
            "help, and finding out what agencies do takes time.",
        ),
        ("Caroline", "Yes, I looked into adoption agencies last week."),
        ("Melanie", "I painted a lake at sunrise."),
    ]
    mem.add(
        [
            {"role": "user", "name": who, "content": text}
            if named
            else {"role": "user", "content": f"{who}: {text}"}
            for who, text in lines
        ],
        user_id="u",
        session_id="s1",
    )


@pytest.mark.parametrize("named", [True, False])
def test_a_question_naming_a_speaker_ranks_that_speakers_words_first(
    real_mem: Memory, named: bool
) -> None:
    _chat(real_mem, named)
    question = "What did Caroline find out about adoption agencies?"

    def first(profile: RankingProfile | None = None) -> str:
        return real_mem.recall(question, user_id="u", limit=3, profile=profile).memories[0].content

    assert "looked into adoption agencies" in first()
    # Without the stage Melanie's question, with more of the words, ranks first.
    assert "you should find out" in first(RankingProfile(role_weight=0.0))
    result = real_mem.recall(question, user_id="u", limit=3)
    other = next(m for m in result.memories if "you should find out" in m.content)
    assert other.components["role"] == -0.5
    # A question naming both speakers, or none, leaves both sides alike.
    both = real_mem.recall("What did Caroline and Melanie say about adoption?", user_id="u")
    assert all("role" not in m.components for m in both.memories)

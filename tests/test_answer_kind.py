"""A question that asks for a time or an amount favours the messages that state one."""

from __future__ import annotations

import pytest

from engrammar import Memory, RankingProfile
from engrammar.recall.query import answer_kind, parse_query, states_kind


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("When did Caroline go to the support group?", "time"),
        ("  when is my dentist appointment", "time"),
        ("What year did I move to Lisbon?", "time"),
        ("Which day is the concert?", "time"),
        ("How long ago did I start running?", "time"),
        ("How many fish are in my aquarium?", "amount"),
        ("How much did I pay for the mugs?", "amount"),
        ("How long have Mel and her husband been married?", "amount"),
        ("How often do I go to the gym?", "amount"),
        ("What is my cat's name?", None),
        ("Where did I park?", None),
        ("Do you remember the hotel you recommended?", None),
    ],
)
def test_answer_kind_reads_what_the_question_asks_for(question: str, kind: str | None) -> None:
    assert answer_kind(question) == kind
    assert parse_query(question, 0.0).wants == kind


@pytest.mark.parametrize(
    ("kind", "text", "states"),
    [
        ("time", "I went there yesterday.", True),
        ("time", "We met on 7 May 2023.", True),
        ("time", "The concert is next Saturday", True),
        ("time", "I started last summer", True),
        ("time", "Payments deploys happen on Tuesdays.", True),
        ("time", "We hike on weekends", True),
        ("time", "I went to the support group and loved it.", False),
        ("amount", "I keep 10 neon tetras.", True),
        ("amount", "We have been married for five years!", True),
        ("amount", "I go twice a week.", True),
        ("amount", "I keep neon tetras and love them.", False),
    ],
)
def test_states_kind_reads_the_message(kind: str, text: str, states: bool) -> None:
    assert states_kind(kind, text) is states


def _fish(mem: Memory) -> None:
    mem.add(
        [
            "The fish in my aquarium are neon tetras and a pleco catfish.",
            "My aquarium has twelve neon tetras and a pleco catfish, all fish I love.",
            "I went hiking on the coast with my sister.",
        ],
        user_id="u",
        session_id="s1",
    )


def test_the_message_stating_an_amount_ranks_first_for_how_many(real_mem: Memory) -> None:
    _fish(real_mem)
    question = "How many fish are in my aquarium?"
    off = real_mem.recall(question, user_id="u", limit=3, profile=RankingProfile(answer_weight=0))
    assert off.memories[0].memory.content.startswith("The fish in my")  # words alone
    on = real_mem.recall(question, user_id="u", limit=3)
    first = on.memories[0]
    assert first.memory.content.startswith("My aquarium has twelve")
    assert first.components["answer"] == pytest.approx(0.15)
    other = next(m for m in on.memories if m.memory.content.startswith("The fish in my"))
    assert "answer" not in other.components
    # explain reads the same list recall cut
    why = real_mem.explain(question, first.memory.id, user_id="u")
    assert why["rank"] == 1 and why["components"]["answer"] == pytest.approx(0.15)


def test_a_question_that_asks_for_no_time_or_amount_is_unchanged(real_mem: Memory) -> None:
    _fish(real_mem)
    question = "What lives in my aquarium?"
    off = real_mem.recall(question, user_id="u", limit=3, profile=RankingProfile(answer_weight=0))
    on = real_mem.recall(question, user_id="u", limit=3)
    assert [m.memory.id for m in on.memories] == [m.memory.id for m in off.memories]
    assert [m.score for m in on.memories] == [m.score for m in off.memories]
    assert all("answer" not in m.components for m in on.memories)


def test_an_updated_memory_is_read_again(real_mem: Memory) -> None:
    [mid] = real_mem.add("My aquarium has neon tetras and a pleco.", user_id="u")
    question = "How many neon tetras are in my aquarium?"
    before = real_mem.recall(question, user_id="u", limit=1).memories[0]
    assert before.memory.id == mid and "answer" not in before.components
    real_mem.update(mid, content="My aquarium has twelve neon tetras and a pleco.")
    after = real_mem.recall(question, user_id="u", limit=1).memories[0]
    assert after.memory.id == mid and after.components["answer"] == pytest.approx(0.15)

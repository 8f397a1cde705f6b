"""Newer-first: a later restatement moves above the earlier one, unless both were said in the
same conversation (there a later message on the matter is mostly a follow-up)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backends import open_memory
from engrammar import Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.recall.supersession import Version, new_amount, newer_first
from engrammar.recall.text import names, topic_terms


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


def test_what_feedback_lowered_stays_below() -> None:
    """A later restatement in ``stay`` (feedback lowered it for questions like this one)
    keeps its place; the earlier statement in ``stay`` does not hold a later one back."""
    v = np.ones(4, np.float32) / 2.0
    versions = {"old": Version("old", 100.0), "new": Version("new", 200.0)}
    scores, vectors = {"old": 1.0, "new": 0.8}, {"old": v, "new": v}
    assert newer_first(["old", "new"], scores, versions, vectors, 0.4, 0.5, stay={"new"}) == [
        "old",
        "new",
    ]
    assert newer_first(["old", "new"], scores, versions, vectors, 0.4, 0.5, stay={"old"}) == [
        "new",
        "old",
    ]


def test_without_sessions_time_decides() -> None:
    # One add call without a session (the README's "I live in Paris" / "I moved to Berlin").
    assert _order(None, None) == ["new", "old"]
    assert _order("monday", None) == ["new", "old"]


def test_a_new_figure_for_the_same_count_is_an_update() -> None:
    asked = topic_terms("How many videos of Corey Schafer's Python series have I completed?")
    older = (
        "Can you recommend NLP libraries in Python? By the way, I've been watching Corey "
        "Schafer's Python programming series on YouTube, and I've completed 20 videos so far."
    )
    assert new_amount(older, "I've completed 30 videos so far for Corey's series.", asked)
    # Number words, "a" before a unit, and scores count too.
    wore = topic_terms("How many times have I worn my black Converse sneakers?")
    assert new_amount(
        "I've worn my new black Converse sneakers four times already.",
        "I just wore my new black Converse yesterday, so that's six times now that I've worn them.",
        wore,
    )
    home = topic_terms("How long have I been living in my apartment in Harajuku?")
    assert new_amount(
        "I love my new studio apartment in Harajuku - it's been a month now.",
        "By the way, I've been living in Harajuku for 3 months now.",
        home,
    )
    league = topic_terms("What is my record in the volleyball league?")
    assert new_amount(
        "I've been doing well in the volleyball league, we're 3-2 so far!",
        "Our volleyball team is doing well with a 5-2 record.",
        league,
    )


def test_what_is_not_a_new_figure() -> None:
    asked = topic_terms("How many marathons have I run?")
    older = "I've run 3 marathons."
    # The same figure again, a figure for something else, no figure, a figure in a question,
    # a figure in a sentence sharing none of the question's words.
    assert not new_amount(older, "Since I've run 3 marathons, I'm ready for more.", asked)
    assert not new_amount(older, "I bought 2 new running shoes.", asked)
    assert not new_amount(older, "Any tips for my next marathon?", asked)
    assert not new_amount(older, "Can you suggest 4 marathons I could run?", asked)
    assert not new_amount(older, "My sister has 5 medals.", asked)
    assert not new_amount("I love marathons.", "I've run 4 marathons.", asked)
    assert not new_amount(older, "I've run 4 marathons.", set())
    # Sharing only the unit, or a word or two of a longer statement, is another count.
    ago = topic_terms("How many months ago did I book the Airbnb in San Francisco?")
    assert not new_amount(
        "I booked an Airbnb in San Francisco 3 months ago.",
        "I've been to SF before, exactly two months ago.",
        ago,
    )
    market = topic_terms("How much did I earn at the Downtown Farmers Market on my last visit?")
    assert not new_amount(
        "I earned $420 at the Downtown Farmers Market on my last visit.",
        "I did well at the Spring Fling Market, $230 in all.",
        market,
    )
    # A sentence naming another thing of the kind the question names counts that one.
    festival = "How many films did I watch at the Seattle International Film Festival?"
    older_festival = "I went to the Seattle International Film Festival and watched 8 films."
    assert not new_amount(
        older_festival,
        "I attended the Austin Film Festival, where I watched 12 films.",
        topic_terms(festival),
        names(festival),
    )
    assert new_amount(
        older_festival,
        "I went back to the Film Festival, so I've watched 12 films.",
        topic_terms(festival),
        names(festival),
    )
    # The same time written two ways is the same figure.
    emails = topic_terms("What time do I stop checking work emails?")
    assert not new_amount(
        "I stop checking work emails at 7 pm.", "I stop checking work emails at 7:00 pm.", emails
    )
    # "one" alone is no amount ("the Anker one"); before a unit it is.
    hours = topic_terms("How long do I practise piano?")
    assert not new_amount("I practise piano 2 hours a day.", "I'll take the Yamaha one.", hours)
    assert new_amount("I practise piano 2 hours a day.", "I practise piano one hour now.", hours)


def test_a_new_figure_passes_the_term_gate() -> None:
    """A later message repeating fewer of the question's words moves up when it gives a new
    figure for the count the earlier one made; without the figure the gate holds it."""
    v = np.ones(4, np.float32) / 2.0
    versions = {
        "old": Version("old", 100.0, session="a"),
        "new": Version("new", 200.0, session="b"),
    }
    scores = {"old": 1.0, "new": 0.8}
    held = {"old": {"corey", "schafer", "python", "video"}, "new": {"corey", "video"}}

    def order(updates: bool) -> list[str]:
        return newer_first(
            ["old", "new"],
            scores,
            versions,
            {"old": v, "new": v},
            0.4,
            0.5,
            held.__getitem__,
            0.75,
            (lambda a, b: updates),
        )

    assert order(False) == ["old", "new"]
    assert order(True) == ["new", "old"]


COUNT_QUESTION = (
    "How many videos of Corey Schafer's Python programming series have I completed so far?"
)


def add_counts(mem: Memory) -> tuple[str, str]:
    """Two conversations, three days apart, each giving the count: the ids of the older
    statement and of the later one, which repeats fewer of the question's words."""
    (old,) = mem.add(
        [
            "I've been brushing up by watching Corey Schafer's Python programming series on "
            "YouTube, and I've completed 20 videos so far."
        ],
        user_id="u",
        session_id="monday",
        timestamp=1_700_000_000,
    )
    (new,) = mem.add(
        [
            "I've completed 30 videos so far for Corey's series, and I'll start the DataCamp "
            "course next."
        ],
        user_id="u",
        session_id="thursday",
        timestamp=1_700_259_200,
    )
    return old, new


@pytest.mark.model
def test_the_newer_count_ranks_first_end_to_end(store_path: Path, minilm: MiniLMEmbedder) -> None:
    """Two conversations, three days apart: the later one gives the new count in fewer of the
    question's words, and ranks first."""
    # Newer-first is off by default (bench/results/ranking.md); a profile turns it on.
    config = Config(path=str(store_path), ranking={"recency_similarity": 0.3})
    with Memory(config, embedder=minilm) as mem:
        old, new = add_counts(mem)
        ranked = [m.id for m in mem.recall(COUNT_QUESTION, user_id="u").memories]
    assert ranked.index(new) < ranked.index(old)


@pytest.mark.model
def test_tool_calls_and_their_output_restate_no_fact(
    store_path: Path, minilm: MiniLMEmbedder
) -> None:
    """An OpenAI-style transcript: the user's move to Berlin, a weather tool called for
    Berlin, its output, the assistant's answer, all later than the fact and close to it. For
    "Where do I live?" the user's own word stays first: a tool call, a tool's output, a system
    prompt or an assistant's answer is no newer version of it."""
    transcript = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "I moved to Berlin last month."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Berlin"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "12C and raining"},
        {"role": "assistant", "content": "It is 12C and raining in Berlin."},
        {"role": "function", "name": "legacy_fn", "content": "legacy output"},
    ]
    with Memory(
        Config(path=str(store_path), ranking={"recency_similarity": 0.3}), embedder=minilm
    ) as mem:
        ids = mem.add(transcript, user_id="u")
        result = mem.recall("Where do I live?", user_id="u")
    ranked = [m.id for m in result.memories]
    assert ranked[0] == ids[1]
    assert all(m.components.get("newer", 0.0) == 0.0 for m in result.memories)


@pytest.mark.model
@pytest.mark.every_store
def test_a_restatement_rejected_for_the_question_does_not_move_up(
    location: str, minilm: MiniLMEmbedder
) -> None:
    """Newer-first moves the later count above the earlier one until the user rejects the
    later one for this question: then the earlier count leads again, and undoing the rating
    puts the later one back on top."""
    with open_memory(location, minilm, ranking={"recency_similarity": 0.3}) as mem:
        old, new = add_counts(mem)
        first = mem.recall(COUNT_QUESTION, user_id="u")
        assert [m.id for m in first.memories][:2] == [new, old]
        assert first.memories[0].components.get("newer") == 1.0
        rating = mem.rate_memory(new, "rejected", user_id="u", recall_id=first.recall_id)
        after = mem.recall(COUNT_QUESTION, user_id="u")
        ranked = [m.id for m in after.memories]
        assert ranked.index(old) < ranked.index(new)
        assert all(m.components.get("newer", 0.0) == 0.0 for m in after.memories)
        mem.undo(rating.id, user_id="u")
        again = [m.id for m in mem.recall(COUNT_QUESTION, user_id="u").memories]
    assert again[:2] == [new, old]

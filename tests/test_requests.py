"""Requests for suggestions: their framing words are no terms, and they are not spread."""

from __future__ import annotations

import uuid

import pytest
from tests.backends import open_memory

from engrammar import Config, HashEmbedder, Memory, ValidationError
from engrammar.engine.candidates import keyword_text
from engrammar.recall.requests import asks_for_suggestions, without_request_frame


@pytest.mark.parametrize(
    "query",
    [
        "Can you suggest some activities that I can do in the evening?",
        "My kitchen's becoming a bit of a mess again. Any tips for keeping it clean?",
        "What should I serve for dinner this weekend with my homegrown ingredients?",
        "I've got some free time tonight, any documentary recommendations?",
        "I'm trying to decide whether to buy a NAS device now or wait. What do you think?",
        "Could you recommend me a good book?",
    ],
)
def test_a_request_to_the_assistant_is_one(query: str) -> None:
    assert asks_for_suggestions(query)


@pytest.mark.parametrize(
    "query",
    [
        # About people in a conversation (LoCoMo's questions): not put to the assistant.
        "What book did Caroline recommend to Melanie?",
        "What substitution does Nate suggest for butter in dairy-free baking?",
        "What did Evan suggest Sam try as a calming hobby?",
        # About the user's facts.
        "How many bikes do I own?",
        "What did I buy at the music store last weekend?",
    ],
)
def test_a_question_about_facts_is_no_request(query: str) -> None:
    assert not asks_for_suggestions(query)


def test_the_frame_of_a_request_is_left_out() -> None:
    text = without_request_frame(
        "I'm thinking of visiting the music store this weekend. Any tips for a new guitar?"
    )
    assert "guitar" in text and "music store" in text
    for word in ("thinking", "weekend", "tips"):
        assert word not in text


def test_only_requests_lose_their_frame_and_only_when_on() -> None:
    on, off = Config(), Config(request_keywords=False)
    request = "Can you recommend some tips for my garden this weekend?"
    assert keyword_text(on, request) == without_request_frame(request)
    assert keyword_text(off, request) == request
    question = "Which garden tips did Caroline recommend last weekend?"
    assert keyword_text(on, question) == question


def _add_chat(mem: Memory) -> None:
    mem.add(
        [
            {"role": "user", "content": "Can you recommend some tips and ideas for this weekend?"},
            {"role": "assistant", "content": "Sure: a walk, a museum, a picnic."},
        ],
        user_id="u",
        session_id="other",
    )
    mem.add(
        [
            {"role": "user", "content": "I have been getting into pottery, the wheel mostly."},
            {"role": "assistant", "content": "Pottery is a lovely craft."},
        ],
        user_id="u",
        session_id="pottery",
    )


@pytest.mark.every_store
def test_keyword_search_does_not_match_a_request_on_its_frame(location: str) -> None:
    query = "Can you recommend some pottery ideas for this weekend?"
    keyword = {}
    for on in (True, False):
        with open_memory(location, request_keywords=on) as mem:
            if on:
                _add_chat(mem)
            found = mem.recall(query, user_id="u", limit=10)
            keyword[on] = {
                m.memory.session_id: m.components.get("keyword", 0.0)
                for m in found.memories
                if m.memory.role == "user"
            }
    # With the frame left out only "pottery" is searched for: the other request shares nothing.
    assert keyword[True]["other"] == 0.0 and keyword[True]["pottery"] > 0
    # Searched as it is, "recommend", "tips", "ideas", "weekend" match the other request.
    assert keyword[False]["other"] > keyword[False]["pottery"]


def _sessions(tmp_path, query: str, **settings: object) -> list[str]:  # type: ignore[no-untyped-def]
    cfg = Config(path=str(tmp_path / uuid.uuid4().hex), **settings)  # type: ignore[arg-type]
    with Memory(cfg, embedder=HashEmbedder()) as mem:
        mem.add(
            [
                {"role": "user", "content": "I booked a trip to Lisbon for the spring."},
                {"role": "assistant", "content": "Lovely, and the weather there is mild then."},
                {"role": "user", "content": "The Lisbon trip is in April, flights booked."},
                {"role": "user", "content": "For the Lisbon trip I still need a hotel."},
            ],
            user_id="u",
            session_id="one",
        )
        mem.add(["I booked a trip to Oslo in March."], user_id="u", session_id="two")
        result = mem.recall(query, user_id="u", limit=4)
        return [m.memory.session_id or "" for m in result.memories]


def test_a_request_is_not_spread_over_sessions(tmp_path) -> None:  # type: ignore[no-untyped-def]
    request = "Any tips for my booked Lisbon trip?"
    assert _sessions(tmp_path, request, session_spread=0.6)[:3] == ["one", "one", "one"]
    spread = _sessions(tmp_path, request, session_spread=0.6, session_spread_requests=True)
    assert spread[:2] == ["one", "two"]
    # A question about the user's facts is spread as before.
    fact = "Which Lisbon trip did I book?"
    assert _sessions(tmp_path, fact, session_spread=0.6)[:3] == ["one", "one", "two"]
    assert _sessions(tmp_path, fact, session_spread=0.0)[:3] == ["one", "one", "one"]


def _relevances(tmp_path, query: str, weight: float) -> dict[str, float]:  # type: ignore[no-untyped-def]
    cfg = Config(path=str(tmp_path / uuid.uuid4().hex), request_keyword_weight=weight)
    with Memory(cfg, embedder=HashEmbedder()) as mem:
        _add_chat(mem)
        mem.add(["My pottery wheel is in the garage."], user_id="u", session_id="garage")
        found = mem.search(query, user_id="u", limit=10)
        return {m.memory.content: m.components["relevance"] for m in found}


def test_a_request_weighs_keywords_by_its_own_setting(tmp_path) -> None:  # type: ignore[no-untyped-def]
    request = "Can you recommend a pottery class?"
    assert _relevances(tmp_path, request, 0.0) != _relevances(tmp_path, request, 0.9)
    question = "Where is my pottery wheel?"
    assert _relevances(tmp_path, question, 0.0) == _relevances(tmp_path, question, 0.9)


def test_the_request_keyword_weight_is_checked() -> None:
    with pytest.raises(ValidationError, match="request_keyword_weight"):
        Config(request_keyword_weight=1.5)

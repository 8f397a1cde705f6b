"""Standing preferences: recognised at add time, given their own place in recall."""

from __future__ import annotations

import pytest

from engrammar import Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.learn.preferences import recognise_preference, select_preferences

OPTIONS = (
    "A few ideas for lunch: 1. The salad bar with gluten-free bowls. 2. The bakery with fresh "
    "sandwiches. 3. The pizza place."
)


@pytest.mark.parametrize(
    "text",
    [
        "I prefer trains to planes.",
        "I can't stand loud bars.",
        "I always cycle to work.",
        "I'm vegan.",
        "My favourite season is autumn.",
        "Honestly, I really dislike long phone calls. Can you keep it short?",
    ],
)
def test_explicit_preferences_are_recognised(text: str) -> None:
    cue = recognise_preference(text)
    assert cue is not None and cue.kind == "explicit"


@pytest.mark.parametrize(
    "text",
    [
        "Do you prefer trains to planes?",
        "My sister can't stand loud bars.",
        "I'd like a table for two at eight.",
        "I love that, thanks!",
        "I always forget my umbrella.",
        "We went to the museum yesterday.",
    ],
)
def test_requests_questions_and_other_people_are_not_preferences(text: str) -> None:
    assert recognise_preference(text) is None


def test_a_pick_counts_only_right_after_options() -> None:
    pick = "I'll go with the salad bar. The other options don't work for me."
    cue = recognise_preference(pick, OPTIONS, "assistant")
    assert cue is not None and cue.kind == "choice"
    assert recognise_preference("That sounds good.", "See you at noon.", "assistant") is None
    assert recognise_preference("Option 2 sounds good.", OPTIONS, "user") is None


def test_select_preferences_gates_and_bounds() -> None:
    sims = [("a", 0.1), ("b", 0.5), ("c", 0.3), ("d", 0.45)]
    assert select_preferences(sims, min_similarity=0.2, limit=2) == [("b", 0.5), ("d", 0.45)]
    assert select_preferences(sims, min_similarity=0.9, limit=2) == []


DISTRACTORS = [
    "Can you help me convert this Python loop into a list comprehension?",
    "Sure, use [x * 2 for x in items] instead of the loop.",
    "What's the capital of Australia?",
    "The capital of Australia is Canberra.",
    "How do I reset my router?",
    "Unplug it for thirty seconds, then plug it back in.",
]


@pytest.mark.every_store
def test_a_stated_preference_comes_back_for_a_question_worded_away_from_it(
    real_mem: Memory,
) -> None:
    ids = real_mem.add(
        [
            {"role": "user", "content": "I have a severe shellfish allergy."},
            *(
                {"role": "user" if i % 2 == 0 else "assistant", "content": d}
                for i, d in enumerate(DISTRACTORS)
            ),
        ],
        user_id="u",
    )
    assert real_mem.get(ids[0]).kind == "preference"
    assert all(real_mem.get(i).kind == "message" for i in ids[1:])
    result = real_mem.recall("Which dishes should I try in New Orleans?", user_id="u")
    assert [p.id for p in result.preferences] == [ids[0]]
    assert result.preferences[0].via == "preference"
    assert result.formatted.startswith("Standing preferences:\n- ")
    assert "shellfish" in result.formatted.splitlines()[1]
    # None of the distractors matches the question by words or meaning, so none is shown.
    assert not set(ids[1:]) & {m.id for m in result.memories}
    assert "Router" not in result.formatted and "Canberra" not in result.formatted
    assert result.to_dict()["preferences"][0]["memory"]["id"] == ids[0]
    # An unrelated question leaves the slot empty.
    assert real_mem.recall("How do I reset my router?", user_id="u").preferences == []
    # Another user's scope never sees it.
    assert real_mem.recall("Which dishes should I try?", user_id="v").preferences == []


def test_a_pick_among_offered_options_is_stored_as_a_preference(real_mem: Memory) -> None:
    ids = real_mem.add(
        [
            {"role": "user", "content": "Where should I eat lunch near the office?"},
            {"role": "assistant", "content": OPTIONS},
            {"role": "user", "content": "The salad bar sounds good, the others don't work for me."},
            {"role": "assistant", "content": "Great, the salad bar it is."},
        ],
        user_id="u",
    )
    kinds = [real_mem.get(i).kind for i in ids]
    assert kinds == ["message", "message", "preference", "message"]


def test_caller_kinds_are_kept_and_recognition_can_be_turned_off(
    store_path: object, minilm: MiniLMEmbedder
) -> None:
    with Memory(Config(path=str(store_path)), embedder=minilm) as mem:
        (fact,) = mem.add("I prefer tea.", user_id="u", kind="fact")
        assert mem.get(fact).kind == "fact"
    off = Config(path=str(store_path), recognise_preferences=False, preferences_limit=0)
    with Memory(off, embedder=minilm) as mem:
        (plain,) = mem.add("I prefer coffee.", user_id="w")
        assert mem.get(plain).kind == "message"
        mem.add("I prefer green tea in the evening.", user_id="u", kind="preference")
        result = mem.recall("What should I drink tonight?", user_id="u")
        assert result.preferences == []
        assert not result.formatted.startswith("Standing preferences:")


def test_the_preferences_section_stays_within_the_budget(
    store_path: object, minilm: MiniLMEmbedder
) -> None:
    cfg = Config(path=str(store_path), formatted_max_chars=120)
    with Memory(cfg, embedder=minilm) as mem:
        mem.add(
            [
                "I strictly avoid any restaurant that serves dishes containing gluten, because "
                "of a severe gluten intolerance that I have had since I was a child.",
                "I prefer quiet restaurants with outdoor seating.",
                "We talked about restaurants in Rome and their pasta.",
            ],
            user_id="u",
        )
        result = mem.recall("Recommend restaurants in Rome for me", user_id="u")
        assert result.preferences
        assert len(result.formatted) <= 120
        assert result.formatted.startswith("Standing preferences:")


def test_one_search_for_any_pattern_finds_the_same_cue() -> None:
    # recognise_preference first asks whether any explicit pattern matches a sentence at all,
    # in one search; the cue must stay the first pattern's match, sentence by sentence.
    from pathlib import Path

    from engrammar.learn import preferences as p

    def pattern_by_pattern(text: str) -> tuple[str, str] | None:
        for sentence in p._statements(text.replace("\u2019", "'")):
            if p._THIRD.match(sentence) or p._HYPOTHETICAL.match(sentence):
                continue
            for pattern in p._EXPLICIT_RE:
                found = pattern.search(sentence)
                if found:
                    return ("explicit", found.group(0))
        return None

    data = Path(__file__).parent.parent / "bench" / "data" / "preference_sentences.tsv"
    lines = data.read_text(encoding="utf-8").splitlines()
    texts = [line.split("\t")[1] for line in lines if line and not line.startswith("#")]
    assert len(texts) > 100
    found = 0
    for text in texts:
        cue = recognise_preference(text)
        expected = pattern_by_pattern(text)
        assert (None if cue is None else (cue.kind, cue.cue)) == expected, text
        found += expected is not None
    assert found > 50

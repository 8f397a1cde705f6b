"""Facts that change, as pure ranking functions (recall.supersession)."""

from __future__ import annotations

from typing import Any

from engrammar.recall.query import asks_about_own_facts, asks_about_past
from engrammar.recall.supersession import (
    Replacement,
    Version,
    current_at,
    merge_replacements,
    newer_first,
    rank_by_validity,
)


def test_past_and_present_questions() -> None:
    assert asks_about_past("Where did I live before Berlin?")
    assert asks_about_past("What was my old phone number?")
    assert asks_about_past("Was I vegetarian?")
    assert asks_about_past("How much coffee did I use to drink?")
    assert not asks_about_past("Where do I live?")
    assert not asks_about_past("How old is my son?")
    assert not asks_about_past("What was the name of the restaurant you recommended?")


def test_current_at() -> None:
    v = Version("a", created_at=10.0, valid_until=20.0, superseded_by="b")
    assert not current_at(v, None)
    assert not current_at(v, 5.0)  # not said yet
    assert current_at(v, 15.0)
    assert not current_at(v, 20.0)
    assert current_at(Version("c", 10.0), None)


PARIS = Version("paris", 1.0, valid_until=2.0, superseded_by="berlin")
BERLIN = Version("berlin", 2.0)
VERSIONS = {"paris": PARIS, "berlin": BERLIN, "alps": Version("alps", 1.0)}


def test_present_question_ranks_the_replacement_first() -> None:
    scores, why = rank_by_validity(
        {"paris": 1.0, "berlin": 0.5, "alps": 0.4}, VERSIONS, asks_about_past("Where do I live?")
    )
    assert max(scores, key=lambda i: scores[i]) == "berlin"
    assert scores["paris"] < scores["berlin"]
    assert scores["paris"] > 0  # still recallable
    assert why["paris"] == "superseded by berlin"


def test_replacement_missing_from_the_candidates_is_brought_in() -> None:
    scores, why = rank_by_validity(
        {"paris": 1.0, "alps": 0.4}, VERSIONS, asks_about_past("Where do I live?")
    )
    assert scores["berlin"] > scores["paris"]
    assert why["berlin"] == "replaces paris"


def test_past_question_ranks_the_older_first() -> None:
    scores, _ = rank_by_validity(
        {"paris": 0.6, "berlin": 0.9}, VERSIONS, asks_about_past("Where did I live before Berlin?")
    )
    assert scores["paris"] > scores["berlin"]


def test_as_of_ranks_by_what_was_current_then() -> None:
    scores, _ = rank_by_validity(
        {"paris": 1.0, "berlin": 0.5}, VERSIONS, asks_about_past("Where do I live?"), 1.5
    )
    assert "berlin" not in scores  # said after as_of
    assert scores["paris"] == 1.0
    scores, _ = rank_by_validity(
        {"paris": 1.0, "berlin": 0.5}, VERSIONS, asks_about_past("Where do I live?"), 3.0
    )
    assert scores["berlin"] > scores["paris"]


def test_chains_hand_on_to_the_current_memory() -> None:
    versions = {
        "paris": PARIS,
        "berlin": Version("berlin", 2.0, valid_until=3.0, superseded_by="munich"),
        "munich": Version("munich", 3.0),
    }
    scores, _ = rank_by_validity({"paris": 1.0}, versions, asks_about_past("Where do I live?"))
    assert max(scores, key=lambda i: scores[i]) == "munich"
    scores, _ = rank_by_validity(
        {"paris": 1.0}, versions, asks_about_past("Where do I live?"), as_of=2.5
    )
    assert max(scores, key=lambda i: scores[i]) == "berlin"
    assert "munich" not in scores


def test_merge_keeps_the_earliest_replacement() -> None:
    found = [
        Replacement("paris", "munich", 3.0),
        Replacement("paris", "berlin", 2.0),
        Replacement("x", "x", 1.0),
    ]
    assert merge_replacements(found, {}) == [Replacement("paris", "berlin", 2.0)]
    stored = {"paris": Version("paris", 1.0, valid_until=1.5, superseded_by="rome")}
    assert merge_replacements(found, stored) == []


def test_a_later_restatement_moves_above_the_earlier() -> None:
    import numpy as np

    versions = {
        "old": Version("old", 1.0),
        "other": Version("other", 1.5),
        "new": Version("new", 2.0),
    }
    vectors = {
        "old": np.array([1.0, 0.0], dtype=np.float32),
        "other": np.array([0.0, 1.0], dtype=np.float32),
        "new": np.array([0.8, 0.6], dtype=np.float32),
    }
    scores = {"old": 1.0, "other": 0.9, "new": 0.7}
    ranked = ["old", "other", "new"]
    assert newer_first(ranked, scores, versions, vectors, 0.7, 0.5) == ["new", "old", "other"]
    # Not similar enough, or too far below: the order stays.
    assert newer_first(ranked, scores, versions, vectors, 0.9, 0.5) == ranked
    assert newer_first(ranked, scores, versions, vectors, 0.7, 0.8) == ranked


def test_own_present_questions() -> None:
    assert asks_about_own_facts("How many bikes do I currently own?")
    assert not asks_about_own_facts("What did Caroline research?")
    assert not asks_about_own_facts("Where did I live before Berlin?")


def test_latest_state_questions_in_the_past_tense() -> None:
    # "did I" asks how things were, unless the question wants the latest state or a total.
    assert asks_about_own_facts("How much did I earn at the market on my most recent visit?")
    assert asks_about_own_facts("How many sessions of the support group did I attend?")
    assert not asks_about_own_facts("What did I cook for my friend a couple of days ago?")
    # What came first, or before, is no question about the latest state.
    assert not asks_about_own_facts("Who did I meet first, Mark or Tom?")
    assert not asks_about_own_facts("How many bikes did I have before I moved?")
    # About someone else: a third person's facts are not restated by the speaker.
    assert not asks_about_own_facts("How many children does Melanie have now?")


def test_a_later_message_restates_only_what_it_shares_of_the_question() -> None:
    """ "What time do I wake up on Saturdays?": "I wake up at 7:30 on Saturdays now" restates
    "I've been waking up around 8:30 on Saturdays"; "any tips for a morning routine?" said later
    is on the subject but holds neither the day nor the waking."""
    import numpy as np

    versions = {
        "old": Version("old", 1.0),
        "same_subject": Version("same_subject", 2.0),
        "update": Version("update", 3.0),
    }
    vectors = {
        "old": np.array([1.0, 0.0], dtype=np.float32),
        "same_subject": np.array([0.8, 0.6], dtype=np.float32),
        "update": np.array([0.8, 0.6], dtype=np.float32),
    }
    scores = {"old": 1.0, "same_subject": 0.9, "update": 0.8}
    held = {"old": {"wake", "saturday"}, "same_subject": {"morn"}, "update": {"wake", "saturday"}}
    ranked = ["old", "same_subject", "update"]
    # Likeness alone lifts both later messages above the earlier one.
    assert newer_first(ranked, scores, versions, vectors, 0.7, 0.5)[-1] == "old"
    # With the question's terms, only the update passes it.
    gated = newer_first(ranked, scores, versions, vectors, 0.7, 0.5, held.__getitem__, 0.75)
    assert gated.index("update") < gated.index("old") < gated.index("same_subject")
    # An earlier memory holding none of the question's terms gates nothing.
    bare = {**held, "old": set()}
    assert (
        newer_first(ranked, scores, versions, vectors, 0.7, 0.5, bare.__getitem__, 0.75)[-1]
        == "old"
    )


def test_questions_about_what_a_change_led_to() -> None:
    # The state a change led to asks for the latest value though it is in the past tense.
    assert asks_about_own_facts("Did I switch to more water per tablespoon of coffee, or less?")
    assert asks_about_own_facts("What did I upgrade to?")
    # The present held against the past is not read so (see _CHANGED_TO).
    assert not asks_about_own_facts("Do I go to the gym more frequently than I did previously?")
    # What a change started from, or the first one, is still about the past.
    assert not asks_about_own_facts("Where did I move to before Berlin?")
    assert not asks_about_own_facts("What did I switch to at first?")
    assert not asks_about_own_facts("Where did I move from?")
    # Someone else's change is not the speaker's fact.
    assert not asks_about_own_facts("Where did Rachel move to?")


def test_memories_moved_to_equal_scores_keep_one_order() -> None:
    """Memories whose validity score changed are placed anew; when several end on the same
    score their order is by id, however the set of moved ids happens to iterate (it changes
    with the process's hash seed)."""
    from engrammar.engine.ranking import keep_order
    from engrammar.models import MemoryRecord

    def item(memory_id: str, score: float) -> Any:
        record = MemoryRecord(memory_id, memory_id, "user", "message", "w", "u", None, None, 0, 0)
        return (record, score, {}, None, "search")

    out = [item("top", 0.9), item("c", 0.5), item("a", 0.5), item("b", 0.5), item("low", 0.1)]
    before = ["top", "b", "low", "c", "a"]
    orders = {
        tuple(r[0].id for r in keep_order(out, before, moved))  # type: ignore[arg-type]
        for moved in (["a", "b", "c"], ["c", "b", "a"], ["b", "c", "a"])
    }
    assert orders == {("top", "a", "b", "c", "low")}

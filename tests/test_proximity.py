"""Query words said close together: a memory that names them together gains."""

from __future__ import annotations

from pathlib import Path

import pytest

from engrammar import Config, HashEmbedder, Memory, ValidationError
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.recall.fusion import Candidate
from engrammar.recall.proximity import (
    PROXIMITY_CHARS,
    QueryWords,
    pair_share,
    proximity_boost,
    word_positions,
)
from engrammar.recall.text import terms
from test_newer_first import COUNT_QUESTION, add_counts


def _share(query: str, text: str, window: int) -> float:
    words = QueryWords(terms(query))
    return pair_share(words, word_positions(words, text), window)


def test_the_share_counts_pairs_within_the_window_in_either_order() -> None:
    # Three query terms: three pairs.
    together = "I got a new orthopedic dog bed for my retriever Max last month."
    assert _share("dog bed Max", together, 12) == pytest.approx(1.0)
    assert _share("dog bed Max", "Max sleeps on his bed; the dog loves it.", 12) == 1.0
    scattered = (
        "The dog barked all night at the neighbours and the mailman and the cat. "
        "I finally bought a bed frame for the guest room upstairs, a heavy oak one from the market. "
        "Max from work came round to help me carry the heavy pieces up the stairs."
    )
    assert _share("dog bed Max", scattered, 12) == 0.0
    # Only "dog" and "bed" together: one pair of three.
    assert _share("dog bed Max", "A dog bed for the puppy.", 12) == pytest.approx(1 / 3)


def test_words_are_matched_by_their_stems() -> None:
    # "hiking" and "hiked" stem to "hike", "happily" / "happy" to "happi"; a stop word
    # that shares a prefix ("hikes" is no stop word, "his" is) is never counted.
    assert _share("hike trail", "We hiked the coastal trail on Sunday.", 12) == 1.0
    assert _share("hiking trails", "Hiking on the ridge trail.", 12) == 1.0
    assert _share("happy puppy", "She looked so happy with her new puppy.", 12) == 1.0
    assert _share("hike trail", "I like hikers. The trail is long.", 12) == 0.0  # hiker


def test_a_query_of_one_term_or_repeats_has_no_pairs() -> None:
    assert word_positions(QueryWords([]), "anything at all") == {}
    assert _share("hike", "hike hike", 12) == 0.0
    assert _share("hike hike", "hike trail", 12) == 0.0
    assert _share("hike trail", "hike", 12) == 0.0


def test_the_window_is_counted_in_words_across_line_breaks() -> None:
    text = "wedding one two three\nvineyard"  # four words apart
    assert _share("wedding vineyard", text, 4) == 1.0
    assert _share("wedding vineyard", text, 3) == 0.0
    assert word_positions(QueryWords(terms("wedding vineyard")), text) == {
        "wed": [0],
        "vineyard": [4],
    }


def test_the_boost_multiplies_relevance_and_reorders() -> None:
    cands = [Candidate("scattered", relevance=1.0), Candidate("together", relevance=0.9)]
    contents = {
        "scattered": (
            "The dog was sick all week, so we stayed in and read. We went to town to buy a "
            "bed; the shop was closed for the holidays, so we drove home again. Max called."
        ),
        "together": "I bought a dog bed for Max.",
    }
    out = proximity_boost(cands, terms("dog bed Max"), contents, 0.3, 12)
    assert [c.id for c in out] == ["together", "scattered"]
    together = out[0]
    assert together.relevance == pytest.approx(0.9 * 1.3)
    assert together.components["proximity"] == pytest.approx(0.3)
    assert "proximity" not in out[1].components
    # Off, or a query without pairs: the list as it came.
    assert proximity_boost(cands, terms("dog bed Max"), contents, 0.0, 12) is cands
    assert proximity_boost(cands, terms("dog"), contents, 0.3, 12) is cands


def test_only_the_start_of_a_long_memory_is_read() -> None:
    far = "filler words here " * (PROXIMITY_CHARS // 18 + 1) + "dog bed for Max"
    cands = [Candidate("far", relevance=1.0)]
    out = proximity_boost(cands, terms("dog bed Max"), {"far": far}, 0.3, 12)
    assert out[0].relevance == 1.0


def test_recall_lifts_the_memory_that_says_the_words_together(tmp_path) -> None:  # type: ignore[no-untyped-def]
    scattered = (
        "The museum downtown raised its ticket prices again this spring season, as it does. "
        "My friend Ana complained about parking fees near the harbour for weeks on end. "
        "Someday we should visit the old lighthouse on the northern cliffs instead."
    )
    together = "Sunday: I visited the museum with a friend, then we had lunch by the river."

    def scores(weight: float) -> dict[str, tuple[float, float | None]]:
        cfg = Config(path=str(tmp_path / f"p{weight}"), proximity_weight=weight)
        with Memory(cfg, embedder=HashEmbedder()) as mem:
            mem.add([scattered, together], user_id="u")
            result = mem.recall("When did I visit a museum with a friend?", user_id="u")
            return {
                m.memory.content: (m.score, m.components.get("proximity")) for m in result.memories
            }

    off, on = scores(0.0), scores(0.3)
    assert on[together][1] == pytest.approx(0.3)  # all three pairs within a few words
    assert on[scattered][1] is None and off[together][1] is None
    # The memory that says the words together gains on the one that scatters them.
    assert on[together][0] / on[scattered][0] > off[together][0] / off[scattered][0] * 1.1


def test_the_settings_are_checked() -> None:
    with pytest.raises(ValidationError, match="proximity_weight"):
        Config(proximity_weight=-0.1)
    with pytest.raises(ValidationError, match="proximity_window"):
        Config(proximity_window=0)


@pytest.mark.model
def test_a_restatement_still_moves_above_a_statement_that_words_it_closer(
    store_path: Path, minilm: MiniLMEmbedder
) -> None:
    """The older count says the question's words together and gains more from proximity than
    the later one; newer-first compares their scores without that gain. The bar
    (``recency_min_ratio`` 0.58) sits between the pair's ratio with the gain (~0.54) and
    without it (~0.61), so the test fails if the gain counted."""
    config = Config(path=str(store_path), proximity_weight=0.3, recency_min_ratio=0.58)
    with Memory(config, embedder=minilm) as mem:
        old, new = add_counts(mem)
        result = mem.recall(COUNT_QUESTION, user_id="u")
    by_id = {m.id: m for m in result.memories}
    assert by_id[old].components["proximity"] > by_id[new].components["proximity"] > 0
    assert by_id[new].components.get("newer") == 1.0
    assert [m.id for m in result.memories][:2] == [new, old]

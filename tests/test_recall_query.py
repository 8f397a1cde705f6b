"""The parsed query, the time it names and neighbour support."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engrammar import Config, HashEmbedder, Memory
from engrammar.embed.base import blend_context
from engrammar.recall.fusion import Candidate
from engrammar.recall.query import query_time_range, sequence_support, time_match
from engrammar.recall.text import (
    _LABEL,
    _NOT_SPEAKERS,
    STOP_WORDS,
    context_sources,
    embedding_text,
    index_text,
    stem,
    terms,
    who_speaks,
    word_list,
)


def _ts(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        (
            "What painting did Mel show on October 13, 2023?",
            (2023, 10, 13),
            (2023, 10, 13, 23, 59, 59),
        ),
        ("What did Gina find on 1 February, 2023?", (2023, 2, 1), (2023, 2, 1, 23, 59, 59)),
        ("What happened on 2023-05-07?", (2023, 5, 7), (2023, 5, 7, 23, 59, 59)),
        (
            "What setback did Melanie face in October 2023?",
            (2023, 10, 1),
            (2023, 10, 31, 23, 59, 59),
        ),
        (
            "How many times did she go to the beach in 2023?",
            (2023, 1, 1),
            (2023, 12, 31, 23, 59, 59),
        ),
        ("Between May 3, 2023 and June 9, 2023?", (2023, 5, 3), (2023, 6, 9, 23, 59, 59)),
    ],
)
def test_query_time_range(query: str, start: tuple[int, ...], end: tuple[int, ...]) -> None:
    assert query_time_range(query) == (_ts(*start), _ts(*end))


@pytest.mark.parametrize(
    "query",
    ["What did Caroline research?", "When did she move?", "Room 2023 of the hotel"],
)
def test_query_without_a_date(query: str) -> None:
    assert query_time_range(query) is None


def test_an_impossible_day_falls_back_to_its_month() -> None:
    assert query_time_range("on 31 February, 2023") == (
        _ts(2023, 2, 1),
        _ts(2023, 2, 28, 23, 59, 59),
    )


def test_time_match_counts_days_around_and_a_month_after() -> None:
    span = (_ts(2023, 10, 1), _ts(2023, 10, 31, 23, 59, 59))
    assert time_match(_ts(2023, 10, 15), span) == 1.0
    assert time_match(_ts(2023, 9, 28), span) == 1.0  # a plan told a few days before
    assert time_match(_ts(2023, 11, 20), span) == 0.5  # told within a month after
    assert time_match(_ts(2023, 12, 31), span) == 0.0
    assert time_match(_ts(2023, 8, 1), span) == 0.0


def _cands(*rels: tuple[str, float]) -> list[Candidate]:
    return [Candidate(i, relevance=r, components={"relevance": r}) for i, r in rels]


def test_sequence_support_adds_the_best_neighbour_without_chaining() -> None:
    # r and p joined the list as q's neighbours, with no relevance of their own.
    cands = _cands(("q", 1.0), ("x", 0.5), ("r", 0.0), ("p", 0.0))
    neighbours = {"q": [("r", 0.5), ("p", 1.0)], "r": [("q", 0.5), ("s", 0.5)], "x": [("q", 1.0)]}
    out = {c.id: c for c in sequence_support(cands, neighbours, 0.6)}
    # x passes on its relevance less half of q's: nothing; q passes 1.0 - 0.5 x 0.5 to x.
    assert out["q"].relevance == pytest.approx(1.0) and "sequence" not in out["q"].components
    assert out["x"].relevance == pytest.approx(0.5 + 0.6 * 1.0 * 0.75)
    assert out["r"].relevance == pytest.approx(0.3) and out["r"].components["sequence"] == 0.3
    assert out["p"].relevance == pytest.approx(0.6)  # a stronger edge carries more support
    assert "s" not in out  # support comes from candidates' own relevance only
    assert sequence_support(cands, neighbours, 0.0) is cands


def test_sequence_support_fills_a_gap_instead_of_lifting_a_cluster() -> None:
    # Two adjacent strong hits (a, b) gain only what each exceeds half the other by; the weak
    # reply (d) to a lone hit (c) gains nearly all of c's relevance, and passes nothing back.
    cands = _cands(("a", 0.8), ("b", 0.78), ("c", 0.79), ("d", 0.2))
    neighbours = {"a": [("b", 0.5)], "c": [("d", 0.5)]}
    out = sequence_support(cands, neighbours, 0.6)
    by_id = {c.id: c.relevance for c in out}
    assert by_id["a"] == pytest.approx(0.8 + 0.3 * (0.78 - 0.4))
    assert by_id["b"] == pytest.approx(0.78 + 0.3 * (0.8 - 0.39))
    assert by_id["d"] == pytest.approx(0.2 + 0.3 * (0.79 - 0.1))
    assert by_id["c"] == pytest.approx(0.79)  # d is too weak to pass anything on
    # With the full neighbour relevance passed on, a and b would have gained 0.23-0.24 each.
    assert by_id["a"] - 0.8 < 0.12 and by_id["d"] - 0.2 > 0.2


def test_speaker_is_part_of_the_indexed_and_embedded_text() -> None:
    assert index_text("Researching adoption agencies.", "Caroline") == (
        "Caroline: Researching adoption agencies."
    )
    assert "carolin" in terms(index_text("Researching adoption agencies.", "Caroline"))
    assert embedding_text("Yes, twice!", "Mel") == "Mel: Yes, twice!"


def test_only_replies_carry_context() -> None:
    # A reply leans on the message before it; a second message of one speaker does not.
    assert context_sources([("Caroline", "user"), ("Mel", "user"), ("Mel", "user")]) == [
        None, 0, None]  # fmt: skip
    assert context_sources([(None, "user"), (None, "user")]) == [None, None]
    assert context_sources([(None, "user"), (None, "assistant")]) == [None, 0]
    assert context_sources([]) == []
    # The first message of a batch replies to the session's latest memory of another speaker.
    assert context_sources([("Mel", "user")], before=("Caroline", "user")) == [-1]
    assert context_sources([("Mel", "user")], before=("Mel", "user")) == [None]


def test_who_speaks_reads_a_speaker_label_when_no_name_is_recorded() -> None:
    assert who_speaks({"speaker": "Mel"}, "Caroline: hi") == "Mel"  # the name comes first
    assert who_speaks({}, "Caroline: I went to a support group.") == "Caroline"
    assert who_speaks({}, "  Dr. Ann Lee: take two a day") == "Dr. Ann Lee"
    for text in [
        "caroline: lower case",  # not a name
        "I think: maybe",  # a sentence, not a label
        "Title: Ten Ways to Rest",  # a part of a document
        "Note: buy milk",
        "Monday: gym at seven",  # a day, not a speaker
        "March: taxes due",
        "Caroline:no space after the colon",
        "A Very Long Label Of Words: x",
        "https://example.com/a:b",
        "",
    ]:
        assert who_speaks({}, text) is None, text


@given(
    st.lists(
        st.sampled_from(["Caroline", "Ann", "Lee", "Dr.", "Title", "note", ":", ": ", " ", "\t"]),
        max_size=8,
    ).map("".join)
)
def test_a_message_without_a_colon_is_read_for_no_label(text: str) -> None:
    """The label is what the pattern reads; a text without a colon holds none."""
    found = _LABEL.match(text)
    label = found.group(1) if found and found.group(1).lower() not in _NOT_SPEAKERS else None
    assert who_speaks({}, text) == label


def test_blend_context_leans_a_reply_towards_what_it_answers() -> None:
    vectors = np.eye(3, dtype=np.float32)
    out = blend_context(vectors, [None, 0, None], 0.5)
    assert np.allclose(out[0], vectors[0]) and np.allclose(out[2], vectors[2])
    assert np.allclose(out[1], np.array([0.5, 1.0, 0.0]) / np.sqrt(1.25))
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0)
    assert np.allclose(blend_context(vectors, [None, 0, None], 0.0), vectors)
    before = np.array([0.0, 0.0, 1.0], dtype=np.float32)
    out = blend_context(vectors[:2], [-1, None], 1.0, before)
    assert np.allclose(out[0], np.array([1.0, 0.0, 1.0]) / np.sqrt(2)) and np.allclose(
        out[1], vectors[1]
    )
    # Without the vector of the message before, -1 is ignored.
    assert np.allclose(blend_context(vectors[:2], [-1, None], 1.0), vectors[:2])


def test_refinement_never_returns_a_memory_twice(tmp_path: Path) -> None:
    from engrammar import Config, HashEmbedder, Memory

    with Memory(Config(path=str(tmp_path)), embedder=HashEmbedder()) as m:
        ids = m.add([f"item {i} alpha" for i in range(600)], user_id="u", session_id="s")
        hits = m.search("item alpha", user_id="u", limit=150)
        assert len({h.id for h in hits}) == len(hits) == 150
        assert {h.id for h in hits} <= set(ids)


class _Recording(HashEmbedder):
    """The deterministic embedder, remembering every text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return super().embed(texts)


def _dialogue(m: Memory) -> list[str]:
    turns = [
        ("Caroline", "I painted a sunrise over the lake last week."),
        ("Mel", "That sounds lovely, what colours?"),
        ("Caroline", "Mostly orange and a deep violet for the water."),
        ("Mel", "I went hiking with the kids on Sunday."),
        ("Caroline", "We should plan a trip to the mountains together."),
    ]
    return m.add(
        [{"role": "user", "name": n, "content": c} for n, c in turns], user_id="u", session_id="s"
    )


def test_a_forgotten_neighbour_never_joins(tmp_path: Path) -> None:
    with Memory(
        Config(path=str(tmp_path), ranking={"graph_depth": 0}), embedder=HashEmbedder()
    ) as m:
        ids = _dialogue(m)
        m.forget(ids[2], user_id="u")
        result = m.recall("painted sunrise lake", user_id="u", limit=10)
        assert ids[2] not in {h.id for h in result.memories}
        assert ids[0] == result.memories[0].id


def test_a_recall_embeds_its_query_once(tmp_path: Path) -> None:
    """Ranking, the excerpt of a long memory, the standing preferences and the knowledge
    passages of one recall all read the query's one vector (no embedding cache to hide a
    second embedding)."""
    embedder = _Recording()
    with Memory(Config(path=str(tmp_path), embed_cache_size=0), embedder=embedder) as m:
        long = " ".join(f"Sentence {i} is about the harbour crane schedule." for i in range(80))
        m.add(long, user_id="u")
        m.add("I prefer short answers about the harbour.", user_id="u", kind="preference")
        m.add_knowledge("handbook", ["The harbour crane starts at six."], user_id="u")
        embedder.seen.clear()
        query = "When does the harbour crane start?"
        result = m.recall(query, user_id="u")
        assert result.memories[0].excerpt is not None  # the long memory was excerpted
        assert result.preferences and result.knowledge
        assert embedder.seen.count(query) == 1


_WORD = re.compile(r"[0-9a-z]+(?:'[a-z]+)?")
# Words, apostrophes in every place, digits, non-ASCII letters (some that lower-case to ASCII
# or to two characters), lone surrogates and separators.
_TEXT = st.lists(
    st.sampled_from(
        [*"abcxyz09'' .,\n\t-", "don't", "it's9", "The", "İs", "K", "Σ", "é", "\ud800"]
    ),
    max_size=40,
).map("".join)


@given(_TEXT)
def test_words_are_what_the_word_pattern_finds(text: str) -> None:
    """The byte-translated word split finds exactly the regex's words, and the terms are
    the stemmed ones of them that are no stop words."""
    lowered = text.lower()
    assert word_list(lowered) == _WORD.findall(lowered)
    expected = []
    for word in _WORD.findall(lowered):
        if word in STOP_WORDS:  # "don't"
            continue
        word = word.split("'", 1)[0]  # "it's" -> "it", a stop word
        if word and word not in STOP_WORDS:
            expected.append(stem(word))
    assert terms(text) == expected


def test_a_vector_hit_past_the_keyword_list_is_scored_by_its_words(tmp_path: Path) -> None:
    # Keyword search keeps its best ``candidate_pool`` hits; a memory that vector search found
    # first (here by the words search leaves out) and that holds the query's one term less
    # often than those hits still gets its BM25 score, not 0.
    question = "what was it that we had to do about the cello and how it was for you then"
    config = Config(path=str(tmp_path), candidate_pool=2)
    with Memory(config, embedder=HashEmbedder()) as m:
        m.add(["cello cello cello", "cello cello strings"], user_id="u")
        [target] = m.add(
            ["what it was that we had to do about the cello, and how it was for you then"],
            user_id="u",
        )
        top = m.search(question, user_id="u", limit=3)[0]
        assert top.id == target
        assert top.components["keyword"] > 0

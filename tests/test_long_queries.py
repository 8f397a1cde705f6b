"""Reading a question reads its text once: the checks that looked again at the whole text for
each word they found give the same answers as the one expression each replaced, and a pasted
text of 76,000 characters is recalled with. Their time: bench/results/long_queries.md."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engrammar import Config, HashEmbedder, Memory
from engrammar.recall import query as parsing
from engrammar.recall.query import asks_about_past, in_first_person, query_time_range

# What each check was as one expression over the whole text.
PAST = re.compile(
    r"\b(?:before|previously|previous|formerly|former|originally|original|used to|use to|"
    r"earlier|at first|in the past|back then|back when|prior to)\b"
    r"|\b(?:was|were|did|had)\b.*\b(?:my|our|the|his|her|their)\s+(?:old|ex|first)\b"
    r"|\b(?:did|was|were|had)\s+(?:i|we)\b",
    re.IGNORECASE,
)
CAPITALISED_BEFORE = re.compile(r"[A-Z][\w.]*\s+$")


def time_range_reference(query: str) -> tuple[float, float] | None:
    """Every date the patterns find that overlaps none found before, as a list of spans."""
    text = query.lower()
    taken: list[tuple[int, int]] = []
    starts, ends = [], []
    for kind, pattern in parsing._PATTERNS:
        for m in pattern.finditer(text):
            a, b = m.span()
            if any(a < y and b > x for x, y in taken):
                continue
            try:
                start, end = parsing._span(kind, m.groups())
            except (KeyError, ValueError):
                continue
            taken.append((a, b))
            starts.append(start.timestamp())
            ends.append(end.timestamp())
    return (min(starts), max(ends)) if starts else None


def texts(words: list[str]) -> st.SearchStrategy[str]:
    """Texts of up to 16 of ``words``, each followed by nothing, a space or a line break."""
    piece = st.tuples(st.sampled_from(words), st.sampled_from(["", " ", " ", "\n", "\t"]))
    return st.lists(piece, max_size=16).map(lambda ps: "".join(w + sep for w, sep in ps))


PAST_WORDS = [
    "was", "Were", "DID", "had", "my", "old", "ex", "first", "the", "her", "their", "I", "we",
    "my old", "our ex", "the first", "before", "used to", "x", "\n", ".", "\u2028", "\r",
]  # fmt: skip
NAME_WORDS = [
    "did", "Melanie", "Melanie's", "St.", "Mary's", "Corey", "Schafer's", "my", "the", "a",
    "her", "she", "him", "A.b", "a_B", "3D", "\u00e9", "\u00c9mile's", "Zo\u00eb's", "'s", "\u00a0",
]  # fmt: skip
DATE_WORDS = [
    "12", "May", "2023", "October", "13,", "2023-10-13", "in", "2019", "31", "February", ",",
    "Oct.", "1999", "between", "and", "August", "15", "20", "19",
]  # fmt: skip


@settings(max_examples=500)
@given(texts(PAST_WORDS))
def test_past_question_reads_as_one_expression(text: str) -> None:
    assert asks_about_past(text) == bool(PAST.search(text))


def test_past_auxiliary_and_old_one_on_different_lines() -> None:
    assert asks_about_past("Was my\nex there?")  # "my ex" may span a line break
    assert not asks_about_past("Where was it?\nMy old car")  # the auxiliary on another line
    assert asks_about_past("Where did I go?")
    assert not asks_about_past("Where do I go now?")


@settings(max_examples=400)
@given(texts(NAME_WORDS))
def test_word_before_a_possessive_reads_as_one_expression(text: str) -> None:
    for at in range(len(text) + 1):
        assert parsing._capitalised_before(text, at) == bool(
            CAPITALISED_BEFORE.search(text, 0, at)
        ), (text, at)


@settings(max_examples=500)
@given(texts(DATE_WORDS))
def test_time_range_reads_as_pairwise_overlaps(text: str) -> None:
    assert query_time_range(text) == time_range_reference(text)


def test_first_person_of_long_texts() -> None:
    assert in_first_person("When did Melanie paint? " * 3) == "When did I paint? " * 2 + (
        "When did I paint?"
    )
    many = "Melanie's cat. " * 5000
    assert in_first_person(many) == " ".join(["my cat."] * 5000)
    kept = "St. Mary's " * 5000
    assert in_first_person(kept) == kept


def test_recall_with_a_pasted_text_as_query(tmp_path: Path) -> None:
    with Memory(Config(path=str(tmp_path)), embedder=HashEmbedder()) as mem:
        mem.add(
            [
                {"role": "user", "content": "I painted a sunrise on 12 May 2023.", "name": "Mel"},
                {"role": "assistant", "content": "A sunrise over the lake, you said."},
            ],
            user_id="u",
        )
        for query in (
            "When did Melanie paint a sunrise? " * 2200,
            "12 May 2023 " * 6300,
            "Was the sunrise before my old job?\n" * 2100,
        ):
            assert len(query) > 70_000
            result = mem.recall(query, user_id="u", limit=5)
            assert result.memories
            assert any("sunrise" in m.memory.content for m in result.memories)

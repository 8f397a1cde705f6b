"""Steps for user <-> assistant chats: relative time, the assistant discount, the question share.

Pure functions, plus one recall through the public API with the real model.
"""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from engrammar import Config, Memory
from engrammar.errors import ValidationError
from engrammar.recall import query
from engrammar.recall.query import relative_time_range


def _ts(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


def _day(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d")


# Asked on Tuesday 2023-02-07 at noon.
ASKED = _ts(2023, 2, 7, 12)


@pytest.mark.parametrize(
    ("query", "first", "last"),
    [
        ("Which book did I finish a week ago?", "2023-01-28", "2023-02-03"),
        ("What did I buy two weeks ago?", "2023-01-21", "2023-01-27"),
        ("Where did I go 3 days ago?", "2023-02-04", "2023-02-04"),
        ("What did I cook yesterday?", "2023-02-06", "2023-02-06"),
        ("Who did I meet last weekend?", "2023-02-04", "2023-02-05"),
        ("What did I do last Saturday?", "2023-02-04", "2023-02-04"),
        ("What did I do on Saturday?", "2023-02-04", "2023-02-04"),
        ("Where was I on Saturday morning?", "2023-02-04", "2023-02-04"),
        ("What did I watch last month?", "2023-01-01", "2023-01-31"),
        ("Which concert did I attend in May?", "2022-05-01", "2022-05-31"),
        ("What did I start in January?", "2023-01-01", "2023-01-31"),
        # several months: from the first to the last
        ("Which airline did I fly most in December and January?", "2022-12-01", "2023-01-31"),
        ("Where did I travel between June and August?", "2022-06-01", "2022-08-31"),
        ("What happened a couple of months ago?", "2022-11-22", "2022-12-22"),
        # "the last month" is the month up to now; "last month" the calendar month before
        ("How many plants did I buy in the last month?", "2023-01-07", "2023-02-07"),
        ("What did I spend in the past year?", "2022-02-06", "2023-02-07"),
        ("Which trips did I take in the past three months?", "2022-11-06", "2023-02-07"),
        ("How many films did I watch in the last 3 weeks?", "2023-01-17", "2023-02-07"),
        # looking back at "this weekend" and "today"
        ("What did I buy today?", "2023-02-07", "2023-02-07"),
        ("How much have I made this week?", "2023-02-06", "2023-02-07"),
        # "the last week of August" is in August, not the week up to now
        ("Where was I in the last week of August?", "2022-08-01", "2022-08-31"),
    ],
)
def test_relative_time_range(query: str, first: str, last: str) -> None:
    span = relative_time_range(query, ASKED)
    assert span is not None
    assert (_day(span[0]), _day(span[1])) == (first, last)


@pytest.mark.parametrize(
    "query",
    [
        "What is my favourite colour?",
        "How many days passed between the two trips?",
        "What did I do in May 2023?",  # an absolute month: query_time_range's
        "Maybe we should talk about it.",
        # a habit, not a date
        "What time do I wake up on Saturday mornings?",
        "What do I usually cook on Sunday?",
        "Where do I go every week on Monday?",
        # a request or a plan for the time ahead names no span to search
        "Can you recommend a show for me to watch tonight?",
        "What should I cook for dinner this weekend?",
        "I'm visiting the music store this weekend. Any tips on what to look for?",
        "I was thinking about rearranging my bedroom this weekend. Any ideas?",
        "Any suggestions for a restaurant on Friday?",
    ],
)
def test_relative_time_range_none(query: str) -> None:
    assert relative_time_range(query, ASKED) is None


# Words of the spans, words near them, and other words and marks.
_SPAN_TEXT = st.lists(
    st.sampled_from(
        "ago last past previous this weekend week month year night day days yesterday today "
        "tonight the before monday saturday sunday mornings in during between and to may june "
        "august march a few two couple of on did was have usually every plan tips should "
        "going weeks months years 3 2023 , ? what".split()
    ),
    max_size=10,
).map(" ".join)


@given(_SPAN_TEXT)
@example("what did i do yesterday")
@example("what did i eat tonight")
@example("what did i buy on saturday")
@example("how far did i run this week")
@example("two weeks ago")
@example("in the past three months")
@example("in may and june")
def test_a_text_without_a_word_of_the_spans_is_not_searched_pattern_by_pattern(text: str) -> None:
    """The one search for a word every span needs finds the spans the patterns find."""
    found = relative_time_range(text, ASKED)
    words = query._SPAN_WORD
    query._SPAN_WORD = re.compile("")  # every text searched in full
    try:
        assert relative_time_range(text, ASKED) == found
    finally:
        query._SPAN_WORD = words


def test_recall_as_of_reads_relative_time_against_the_question_date(tmp_path: Path) -> None:
    # Two statements alike in wording, a month apart; "two weeks ago" picks by date, and it
    # is the question's date that counts, not the clock's.
    with Memory(Config(path=str(tmp_path))) as mem:
        mem.add(
            [{"role": "user", "content": "I went hiking at Mount Tam with my sister."}],
            user_id="u",
            timestamp=_ts(2023, 1, 10, 9),
        )
        mem.add(
            [{"role": "user", "content": "I went hiking at Mount Diablo with my sister."}],
            user_id="u",
            timestamp=_ts(2023, 2, 10, 9),
        )
        query = "Where did I go hiking two weeks ago?"
        early = mem.recall(query, user_id="u", as_of=_ts(2023, 1, 24, 12), limit=2)
        late = mem.recall(query, user_id="u", as_of="2023-02-24T12:00:00Z", limit=2)
        assert "Tam" in early.memories[0].memory.content
        assert "Diablo" in late.memories[0].memory.content
        assert early.memories[0].components.get("time", 0) > 0
        with pytest.raises(ValidationError, match="as_of"):
            mem.recall(query, user_id="u", as_of="not a date")


def test_chunk_spans_cover_the_text_with_overlap() -> None:
    from engrammar.recall.chunks import chunk_spans

    text = " ".join(f"Sentence number {i} says something." for i in range(200))
    spans = chunk_spans(text, 500, 100)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    for (a, b), (c, _) in itertools.pairwise(spans):
        assert b - a <= 500 and a < c < b  # overlapping, moving on
    assert chunk_spans("short", 500, 100) == [(0, 5)]
    with pytest.raises(ValueError):
        chunk_spans(text, 100, 100)


def test_recall_returns_the_excerpt_a_query_is_about(tmp_path: Path) -> None:
    filler = " ".join(
        f"Paragraph {i} covers general budgeting advice for households." for i in range(150)
    )
    doc = f"{filler} The spare key is hidden under the blue flowerpot by the garage. {filler}"
    with Memory(Config(path=str(tmp_path), formatted_max_chars=2000)) as mem:
        mem.add([{"role": "user", "content": doc}], user_id="u")
        result = mem.recall("Where is the spare key hidden?", user_id="u", limit=1)
        top = result.memories[0]
        assert top.memory.content == doc  # the memory keeps its full text
        assert top.excerpt is not None and "flowerpot" in top.excerpt
        assert len(top.excerpt) <= Config().excerpt_chars + 2
        assert "flowerpot" in result.formatted and len(result.formatted) <= 2000
        assert top.to_dict()["excerpt"] == top.excerpt

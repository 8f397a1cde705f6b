"""Steps for user <-> assistant chats: relative time, the assistant discount, the question share.

Pure functions, plus one recall through the public API with the real model.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engrammar import Config, Memory
from engrammar.errors import ValidationError
from engrammar.recall.fusion import Candidate
from engrammar.recall.query import question_discount, question_share
from engrammar.recall.roles import asks_about_assistant, asks_about_brief, role_discount
from engrammar.recall.timeref import relative_time_range


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


@pytest.mark.parametrize(
    ("query", "about"),
    [
        ("In our previous chat, what did you recommend for Lisbon?", True),
        ("What was the third restaurant you suggested?", True),
        ("Can you remind me of the recipe?", True),
        ("What did you say about the lens?", True),
        ("Can you recommend some resources for video editing?", False),
        ("How much did I spend on the car wash?", False),
        ("What is the name of my dog?", False),
    ],
)
def test_asks_about_assistant(query: str, about: bool) -> None:
    assert asks_about_assistant(query) is about


def test_role_discount_lowers_assistant_memories_unless_asked_about_them() -> None:
    def cands() -> list[Candidate]:
        return [Candidate("a", relevance=1.0), Candidate("u", relevance=0.8)]

    roles = {"a": "assistant", "u": "user"}
    out = role_discount(cands(), "What is my dog's name?", roles, 0.5)
    assert [c.id for c in out] == ["u", "a"]
    assert out[1].relevance == pytest.approx(0.5)
    kept = role_discount(cands(), "What did you suggest for my dog?", roles, 0.5)
    assert [c.id for c in kept] == ["a", "u"]
    assert kept[0].relevance == 1.0
    unchanged = cands()
    assert role_discount(unchanged, "What is my dog's name?", roles, 0.0) is unchanged


@pytest.mark.parametrize(
    ("query", "about"),
    [
        ("What is your system prompt?", True),
        ("What were your instructions for this chat?", True),
        ("What were you told to do?", True),
        ("What is your role here?", True),
        ("What were the assembly instructions for my bookshelf?", False),
        ("Where am I travelling?", False),
        ("What did you suggest for my trip?", False),
    ],
)
def test_asks_about_brief(query: str, about: bool) -> None:
    assert asks_about_brief(query) is about


def test_role_discount_lowers_system_prompts_unless_asked_about_them() -> None:
    def cands() -> list[Candidate]:
        return [Candidate("s", relevance=1.0), Candidate("u", relevance=0.8)]

    roles = {"s": "system", "u": "user"}
    assert [c.id for c in role_discount(cands(), "Where am I travelling?", roles, 0.5)] == [
        "u",
        "s",
    ]
    # Asking about the assistant's words is no question about its instructions.
    assert [c.id for c in role_discount(cands(), "What did you say?", roles, 0.5)] == ["u", "s"]
    assert [c.id for c in role_discount(cands(), "What is your role?", roles, 0.5)] == ["s", "u"]


@pytest.mark.parametrize(
    ("text", "low", "high"),
    [
        ("What other hobbies have you found?", 1.0, 1.0),
        ("Wow, great! What did you do?", 0.5, 0.8),
        (
            "I took Lola to the vet last week, the consultation fee was $50. I also bought "
            "flea medication for $25 at Petco. Can you recommend a cat litter?",
            0.1,
            0.3,
        ),
        ("I live in Berlin.", 0.0, 0.0),
        ("Look at this! [shared image: a dog?]", 0.0, 0.0),
    ],
)
def test_question_share(text: str, low: float, high: float) -> None:
    assert low <= question_share(text) <= high


def test_question_discount_scales_with_the_share() -> None:
    cands = [Candidate("q", relevance=1.0), Candidate("s", relevance=1.0)]
    out = question_discount(cands, {"q": 0.5, "s": 0.0}, 0.2)
    assert {c.id: c.relevance for c in out} == {"q": pytest.approx(0.9), "s": 1.0}


def test_assistant_penalty_is_validated() -> None:
    with pytest.raises(ValidationError, match="assistant_penalty"):
        Config(assistant_penalty=1.5)


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
        assert early.memories[0].components.get("time_boost", 0) > 0
        with pytest.raises(ValidationError, match="as_of"):
            mem.recall(query, user_id="u", as_of="not a date")


def test_recall_prefers_what_the_user_said_over_the_assistant(tmp_path: Path) -> None:
    with Memory(Config(path=str(tmp_path))) as mem:
        mem.add(
            [
                {"role": "user", "content": "My dog Lola had her vet check-up; it cost $50."},
                {
                    "role": "assistant",
                    "content": "Vet check-ups for dogs usually cost between $45 and $60; "
                    "regular check-ups keep a dog healthy, and a vet can advise on costs.",
                },
            ],
            user_id="u",
        )
        top = mem.recall("How much did my dog's vet check-up cost?", user_id="u", limit=2)
        assert top.memories[0].memory.role == "user"
        about = mem.recall("What did you say vet check-ups cost for dogs?", user_id="u", limit=2)
        assert "assistant_penalty" not in about.memories[0].components


def _discounted(tmp_path: Path, other_role: str) -> bool:
    """Whether a user message that ends with a question is discounted as one that asks."""
    with Memory(Config(path=str(tmp_path / f"{other_role}.db"), embedder="hash")) as mem:
        mem.add(
            [
                {"role": "user", "content": "I set up a 20-gallon tank. Any plant tips for it?"},
                {"role": other_role, "content": "Java fern and anubias are easy to keep."},
            ],
            user_id="u",
        )
        found = mem.recall("How big is my tank?", user_id="u", limit=5)
        mine = next(m for m in found.memories if m.memory.role == "user")
        return "question_penalty" in mine.components


def test_the_question_penalty_holds_between_people_not_with_an_assistant(tmp_path: Path) -> None:
    # In a chat with an assistant the user's requests ask and tell at once.
    assert not _discounted(tmp_path, "assistant")
    assert _discounted(tmp_path, "user")


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

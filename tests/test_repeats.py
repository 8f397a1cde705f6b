"""A text said several times: its newest copy takes the best place any copy earned.

Pure functions (``recall.repeats``), plus recall and search through the public API with the
real model on every store.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from backends import open_memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.recall.repeats import group_repeats, repeat_key


def _ts(day: int) -> float:
    return datetime(2023, 5, day, 12, tzinfo=UTC).timestamp()


def test_repeat_key_ignores_case_and_spacing_only() -> None:
    assert repeat_key("I live in  Berlin.\n") == repeat_key("i live in berlin.")
    assert repeat_key("I live in Berlin.") != repeat_key("I live in Berlin")


def test_copies_are_grouped_newest_first_in_the_order_of_their_best_copy() -> None:
    items = [
        ("old", "I bought a rare action figure.", 1.0),
        ("other", "My dog is a golden retriever.", 5.0),
        ("new", "I bought a rare  action figure.", 3.0),
        ("mid", "i bought a rare action figure.", 2.0),
    ]
    assert group_repeats(items) == [["new", "mid", "old"], ["other"]]


def test_equally_dated_copies_keep_their_order() -> None:
    items = [("a", "same", 1.0), ("c", "x", 0.0), ("b", "same", 1.0)]
    assert group_repeats(items) == [["a", "b"], ["c"]]


def test_a_list_without_repeats_is_one_group_per_item() -> None:
    items = [("a", "one", 3.0), ("b", "two", 1.0), ("c", "three", 2.0)]
    assert group_repeats(items) == [["a"], ["b"], ["c"]]
    assert group_repeats([]) == []


_SAID = "By the way, I got a rare blue Snaggletooth action figure from a thrift store."


def _fill(mem) -> list[str]:  # type: ignore[no-untyped-def]
    """The same message in three chats on three days, and two other memories."""
    ids = []
    for day, session in ((1, "first"), (9, "third"), (4, "second")):
        (memory_id,) = mem.add(
            [{"role": "user", "content": _SAID}],
            user_id="u",
            session_id=session,
            timestamp=_ts(day),
        )
        ids.append(memory_id)
    mem.add(
        [
            {"role": "user", "content": "I collect vintage watches, mostly 1960s Omegas."},
            {"role": "user", "content": "My sister's birthday is in June."},
        ],
        user_id="u",
        session_id="other",
        timestamp=_ts(5),
    )
    return ids


@pytest.mark.every_store
def test_recall_puts_the_newest_copy_of_a_message_first(
    location: str, minilm: MiniLMEmbedder
) -> None:
    with open_memory(location, minilm) as mem:
        first, third, second = _fill(mem)
        question = "What action figure did I buy from a thrift store?"
        result = mem.recall(question, user_id="u", limit=5)
        found = mem.search(question, user_id="u", limit=5)
        before = mem.recall(question, user_id="u", limit=5, as_of=_ts(6))
    assert [m.id for m in result.memories[:3]] == [third, second, first]
    assert [m.score for m in result.memories] == sorted(
        (m.score for m in result.memories), reverse=True
    )
    assert all(m.components["repeats"] == 2.0 for m in result.memories[:3])
    assert "repeats" not in result.memories[3].components
    # The agent's text shows it once.
    assert result.formatted.count(_SAID) == 1
    assert "vintage watches" in result.formatted
    assert [m.id for m in found[:3]] == [third, second, first]
    # As of day 6 the third copy was not yet said: the newest then was the second.
    assert [m.id for m in before.memories[:2]] == [second, first]
    assert before.memories[0].components["repeats"] == 1.0


@pytest.mark.every_store
def test_group_repeats_off_leaves_the_copies_as_they_score(
    location: str, minilm: MiniLMEmbedder
) -> None:
    with open_memory(location, minilm, group_repeats=False) as mem:
        ids = _fill(mem)
        result = mem.recall("What action figure did I buy from a thrift store?", user_id="u")
    assert set(ids) <= {m.id for m in result.memories[:3]}
    assert all("repeats" not in m.components for m in result.memories)
    # The agent's text never repeats itself, grouped or not.
    assert result.formatted.count(_SAID) == 1

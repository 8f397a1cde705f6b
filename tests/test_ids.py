"""Record ids sort in the order records were made, so equal scores rank the same way in every
store the same messages are added to: the older of two equal memories first."""

from __future__ import annotations

import io
import threading

import pytest

from engrammar import Memory
from engrammar.engine.ids import new_id

CODES = ["PAPAYA-42", "MANGO-7", "KIWI-19", "GUAVA-3", "LYCHEE-88", "QUINCE-5"]
ANIMALS = ["zebra", "otter", "heron", "bison", "lemur", "gecko"]


def test_ids_grow_in_one_thread_and_across_threads() -> None:
    first = [new_id() for _ in range(2000)]
    assert first == sorted(first) and len(set(first)) == len(first)
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in first)
    made: list[list[str]] = []

    def make() -> None:
        made.append([new_id() for _ in range(500)])

    threads = [threading.Thread(target=make) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [i for part in made for i in part]
    assert len(set(every)) == len(every)
    assert all(part == sorted(part) for part in made)
    assert min(every) > first[-1]


def _facts() -> list[str]:
    return [f"The {a} project's launch code is {c}." for a, c in zip(ANIMALS, CODES, strict=True)]


def _ask(mem: Memory, user: str, workspace: str = "default") -> list[list[str]]:
    """The sessions of the two copies of each fact, best first."""
    return [
        [
            m.memory.session_id or ""
            for m in mem.recall(
                f"{a} launch code", user_id=user, limit=2, workspace=workspace
            ).memories
        ]
        for a in ANIMALS
    ]


@pytest.mark.every_store
def test_the_same_message_in_two_sessions_ranks_the_older_first(mem: Memory) -> None:
    # Each fact is stored twice with the same score; with random ids the order of the two copies
    # was a coin toss for each (all six in order: 1 in 64).
    for session in ("first", "second"):
        mem.add(_facts(), user_id="u", session_id=session)
    assert _ask(mem, "u") == [["first", "second"]] * len(ANIMALS)


@pytest.mark.every_store
def test_an_import_into_another_workspace_keeps_the_order_of_equal_memories(mem: Memory) -> None:
    for session in ("first", "second"):
        mem.add(_facts(), user_id="u", session_id=session)
    buffer = io.StringIO()
    mem.export(buffer, user_id="u")
    buffer.seek(0)
    mem.import_(buffer, workspace="copy")
    copied = _ask(mem, "u", workspace="copy")
    assert copied == [["first", "second"]] * len(ANIMALS)

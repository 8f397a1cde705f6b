from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from engrammar import Config, HashEmbedder, Memory, NotFoundError, Skipped, ValidationError


def _count(path: Path, table: str = "memories") -> int:
    with sqlite3.connect(path / "engrammar.db") as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def test_add_returns_one_id_per_message_in_order(mem: Memory) -> None:
    ids = mem.add(
        [
            {"role": "user", "content": "I write docs before code."},
            {"role": "assistant", "content": "Noted: documentation first."},
        ],
        user_id="alice",
    )
    assert len(ids) == 2 and len(set(ids)) == 2
    first = mem.get(ids[0])
    assert first.content == "I write docs before code."
    assert first.role == "user" and first.user_id == "alice" and first.workspace == "default"
    assert mem.get(ids[1]).role == "assistant"


def test_plain_string_is_a_user_message(mem: Memory) -> None:
    (mid,) = mem.add("I like green tea.", user_id="bob", metadata={"source": "chat"})
    rec = mem.get(mid)
    assert rec.role == "user" and rec.metadata == {"source": "chat"}


def test_exact_duplicate_in_scope_is_not_stored_twice(mem: Memory, store_path: Path) -> None:
    (a,) = mem.add("I like green tea.", user_id="bob")
    (b,) = mem.add("I like green tea.", user_id="bob")
    assert a == b
    assert _count(store_path) == 1
    (other_user,) = mem.add("I like green tea.", user_id="carol")
    assert other_user != a
    batch = mem.add(
        [{"role": "user", "content": "same"}, {"role": "user", "content": "same"}], user_id="bob"
    )
    assert batch[0] == batch[1]
    assert _count(store_path) == 3


def test_timestamps_and_per_message_metadata(mem: Memory) -> None:
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    ids = mem.add(
        [
            {"role": "user", "content": "first", "metadata": {"turn": 1}, "name": "Caroline"},
            {"role": "user", "content": "second", "timestamp": "2023-05-09T10:00:00Z"},
        ],
        user_id="u",
        timestamp=when,
    )
    a, b = mem.get(ids[0]), mem.get(ids[1])
    assert a.created_at == when.timestamp()
    assert a.metadata == {"turn": 1, "speaker": "Caroline"}
    assert b.created_at == datetime(2023, 5, 9, 10, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"messages": [{"role": "user", "content": ""}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": "   "}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": 42}]}, "messages[0].content"),
        ({"messages": [{"role": "wizard", "content": "hi"}]}, "messages[0].role"),
        ({"messages": [{"content": "hi"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": "hi", "colour": "red"}]}, "messages[0]"),
        ({"messages": ["fine", 3]}, "messages[1]"),
        ({"messages": []}, "messages"),
        ({"messages": None}, "messages"),
        ({"messages": {"role": "user", "content": "hi"}}, "messages"),
        ({"messages": "x" * 1_000_001}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": None}]}, "messages[0].content"),
        ({"messages": ["  ", {"role": "user", "content": []}]}, "messages"),
        (
            {"messages": [{"role": "user", "content": [{"text": "hi"}]}]},
            "messages[0].content[0].type",
        ),
        ({"messages": "hi", "metadata": "notadict"}, "metadata"),
        ({"messages": "hi", "metadata": {"bad": float("nan")}}, "metadata"),
        ({"messages": "hi", "timestamp": "yesterday"}, "timestamp"),
        ({"messages": "hi", "timestamp": float("nan")}, "timestamp"),
        ({"messages": "hi", "kind": "rumour"}, "kind"),
        ({"messages": "hi", "user_id": 7}, "user_id"),
        ({"messages": "hi", "user_id": ""}, "user_id"),
        ({"messages": "nul\x00byte"}, "messages[0].content"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(
    mem: Memory, store_path: Path, kwargs: dict[str, object], field: str
) -> None:
    mem.add("kept", user_id="alice")
    kwargs.setdefault("user_id", "alice")
    with pytest.raises(ValidationError) as info:
        mem.add(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == field
    assert _count(store_path) == 1


def test_a_bad_message_late_in_the_batch_writes_nothing(mem: Memory, store_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"messages\[2\]"):
        mem.add(["a", "b", {"role": "wizard", "content": "c"}], user_id="alice")  # type: ignore[list-item]
    assert _count(store_path) == 0


def test_an_empty_message_is_skipped_and_the_rest_stored(mem: Memory, store_path: Path) -> None:
    ids = mem.add(["a", {"role": "user", "content": ""}, "b"], user_id="alice")  # type: ignore[list-item]
    assert ids[1] is None and ids.skipped == [Skipped(1, "empty")]
    assert [mem.get(i).content for i in ids.stored] == ["a", "b"]
    assert _count(store_path) == 2


def test_no_scope_is_refused(mem: Memory) -> None:
    with pytest.raises(ValidationError, match="user_id"):
        mem.add("orphan")
    with pytest.raises(ValidationError, match="user_id"):
        mem.recall("anything")


def test_content_cap_is_configurable(store_path: Path) -> None:
    m = Memory(Config(path=str(store_path), max_content_chars=10), embedder=HashEmbedder())
    with pytest.raises(ValidationError, match="limit is 10"):
        m.add("12345678901", user_id="u")
    m.close()


def test_search_ranks_keyword_and_vector_hits(mem: Memory) -> None:
    mem.add(
        [
            "My dog Rex loves the beach.",
            "I bought a new laptop for work.",
            "We went to the beach with Rex last summer.",
            "Tax returns are due in April.",
        ],
        user_id="alice",
    )
    hits = mem.search("beach with the dog", user_id="alice", limit=2)
    assert len(hits) == 2
    assert all("beach" in h.content for h in hits)
    assert {"vector", "keyword", "relevance", "final"} <= set(hits[0].components)
    assert hits[0].score >= hits[1].score


def test_scope_keys_are_real_filters(mem: Memory) -> None:
    mem.add("alpha project deadline", user_id="alice", agent_id="a1", session_id="s1")
    mem.add("alpha project budget", user_id="alice", agent_id="a2", session_id="s2")
    mem.add("alpha project owner", user_id="bob", agent_id="a1")
    mem.add("alpha project secret", user_id="alice", workspace="other")
    contents = lambda hits: sorted(h.content for h in hits)  # noqa: E731
    assert contents(mem.search("alpha project", user_id="alice")) == [
        "alpha project budget",
        "alpha project deadline",
    ]
    assert contents(mem.search("alpha project", user_id="alice", agent_id="a1")) == [
        "alpha project deadline"
    ]
    assert contents(mem.search("alpha project", agent_id="a1")) == [
        "alpha project deadline",
        "alpha project owner",
    ]
    assert contents(mem.search("alpha project", session_id="s2")) == ["alpha project budget"]
    assert contents(mem.search("alpha project", user_id="alice", workspace="other")) == [
        "alpha project secret"
    ]


def test_recall_result_shape_and_budget(store_path: Path) -> None:
    m = Memory(Config(path=str(store_path), formatted_max_chars=80), embedder=HashEmbedder())
    m.add([f"fact number {i} about gardening tomatoes" for i in range(20)], user_id="u")
    r = m.recall("gardening tomatoes", user_id="u", limit=5)
    assert len(r.memories) == 5
    assert r.recall_id and r.query == "gardening tomatoes"
    assert r.paths == [] or isinstance(r.paths, list)
    assert 0 < len(r.formatted) <= 80
    assert r.formatted.startswith("- [")
    assert r.to_dict()["memories"][0]["memory"]["content"].startswith("fact number")
    m.close()


def test_get_list_update_history_forget(mem: Memory, store_path: Path) -> None:
    ids = mem.add([f"note {i}" for i in range(5)], user_id="alice")
    assert [r.content for r in mem.list(user_id="alice", limit=2, offset=1)] == ["note 1", "note 2"]
    updated = mem.update(ids[0], "note zero, revised", reason="typo")
    assert updated.content == "note zero, revised"
    assert mem.search("revised", user_id="alice", limit=1)[0].id == ids[0]
    hist = mem.history(ids[0])
    assert [h["op"] for h in hist] == ["add", "update"]
    assert hist[1]["before"] == "note 0" and hist[1]["reason"] == "typo"
    assert mem.forget(ids[1]) == 1
    with pytest.raises(NotFoundError):
        mem.get(ids[1])
    assert all(h.id != ids[1] for h in mem.search("note", user_id="alice", limit=10))
    assert mem.forget(user_id="alice") == 4
    assert _count(store_path) == 0
    with pytest.raises(NotFoundError):
        mem.update("missing-id", "x")


def test_workspaces_do_not_cross(mem: Memory) -> None:
    (mid,) = mem.add("secret plan", user_id="alice", workspace="a")
    with pytest.raises(NotFoundError):
        mem.get(mid, workspace="b")
    assert mem.forget(mid, workspace="b") == 0
    assert mem.get(mid, workspace="a").content == "secret plan"


def test_stats(mem: Memory) -> None:
    mem.add(["one", "two"], user_id="alice")
    mem.recall("one", user_id="alice")
    s = mem.stats(user_id="alice")
    assert s["memories"] == 2 and s["recalls"] == 1
    assert s["embedder"]["dim"] == 256


@pytest.mark.model
def test_recall_understands_meaning(real_mem: Memory) -> None:
    real_mem.add(
        [
            {"role": "user", "content": "I always write documentation before code."},
            {"role": "user", "content": "I find long meetings unproductive."},
            {"role": "user", "content": "My cat is called Miso."},
        ],
        user_id="alice",
    )
    r = real_mem.recall("How do you approach software projects?", user_id="alice")
    assert r.memories[0].content == "I always write documentation before code."
    pets = real_mem.search("Do you have any pets?", user_id="alice", limit=1)
    assert pets[0].content == "My cat is called Miso."


def test_a_reply_added_alone_leans_on_the_session_before_it(mem: Memory) -> None:
    [q] = mem.add(
        [{"role": "user", "content": "Been camping lately?"}], user_id="u", session_id="s"
    )
    [a] = mem.add([{"role": "assistant", "content": "Yes, twice."}], user_id="u", session_id="s")
    [b] = mem.add([{"role": "assistant", "content": "Both in June."}], user_id="u", session_id="s")
    stored = mem.store.vectors("default", [q, a, b])
    own = mem.embedder.embed(["Been camping lately?", "Yes, twice.", "Both in June."])
    assert np.allclose(stored[q], own[0], atol=1e-6)
    expected = own[1] + mem.config.context_weight * stored[q]
    assert np.allclose(stored[a], expected / np.linalg.norm(expected), atol=1e-6)
    assert np.allclose(stored[b], own[2], atol=1e-6)  # same speaker again: its own vector
    # Outside a session there is no "before".
    [c] = mem.add([{"role": "assistant", "content": "No."}], user_id="u")
    assert np.allclose(
        mem.store.vectors("default", [c])[c], mem.embedder.embed(["No."])[0], atol=1e-6
    )


def test_a_pasted_transcript_names_its_speakers_in_the_text(mem: Memory) -> None:
    # Every line as the user's message, the speaker only in the text: a line of another
    # speaker replies to the one before it, as with ``name``; a second line of one speaker
    # does not.
    texts = [
        "Caroline: I went to a support group yesterday.",
        "Melanie: How did it go?",
        "Melanie: I hope it helped.",
    ]
    ids = mem.add([{"role": "user", "content": t} for t in texts], user_id="u", session_id="s")
    stored = mem.store.vectors("default", ids)
    own = mem.embedder.embed(texts)
    assert np.allclose(stored[ids[0]], own[0], atol=1e-6)
    expected = own[1] + mem.config.context_weight * own[0]
    assert np.allclose(stored[ids[1]], expected / np.linalg.norm(expected), atol=1e-6)
    assert np.allclose(stored[ids[2]], own[2], atol=1e-6)

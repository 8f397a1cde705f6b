"""Knowledge bases: documents of a scope, chunked and embedded, searched beside the memories."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engrammar import HashEmbedder, Memory, NotFoundError, StoreError, ValidationError
from engrammar.recall.chunks import split_document

HANDBOOK = [
    "All employees must complete onboarding within the first 30 days.",
    {"content": "Remote work is allowed up to 3 days per week.", "metadata": {"page": 4}},
    "Expenses above $500 require manager approval.",
]


@pytest.mark.every_store
def test_add_search_list_delete_per_scope(mem: Memory) -> None:
    kb = mem.add_knowledge("Handbook", HANDBOOK, user_id="alice", metadata={"v": 2})
    assert (kb.name, kb.chunk_count, kb.user_id, kb.metadata) == ("Handbook", 3, "alice", {"v": 2})
    hits = mem.search_knowledge("expenses above manager approval", user_id="alice", limit=2)
    assert hits[0].content == "Expenses above $500 require manager approval."
    assert hits[0].kb_id == kb.id and hits[0].position == 2
    assert all(0.0 <= h.score <= 1.0 for h in hits) and len(hits) == 2
    remote = mem.search_knowledge("remote work days per week", user_id="alice", limit=1)[0]
    assert remote.metadata == {"page": 4}
    # Another user, or another workspace, sees none of it.
    assert mem.search_knowledge("expenses", user_id="bob") == []
    assert mem.search_knowledge("expenses", user_id="alice", workspace="other") == []
    assert [b.id for b in mem.list_knowledge(user_id="alice")] == [kb.id]
    with pytest.raises(NotFoundError):
        mem.delete_knowledge(kb.id, user_id="bob")
    assert mem.delete_knowledge(kb.id, user_id="alice") == 3
    assert mem.search_knowledge("expenses", user_id="alice") == []
    assert mem.list_knowledge(user_id="alice") == []


@pytest.mark.every_store
def test_recall_returns_knowledge_beside_the_memories(mem: Memory) -> None:
    mem.add("I need to buy a new laptop for work.", user_id="alice")
    mem.add_knowledge("Handbook", HANDBOOK, user_id="alice")
    result = mem.recall("expenses above manager approval", user_id="alice")
    assert [k.content for k in result.knowledge][:1] == [
        "Expenses above $500 require manager approval."
    ]
    assert "Knowledge:\n- Expenses above $500" in result.formatted
    assert result.to_dict()["knowledge"][0]["kb_id"] == result.knowledge[0].kb_id
    # Below knowledge_min_score nothing is added.
    assert mem.recall("zebra xylophone quantum", user_id="alice").knowledge == []


def test_a_recall_whose_knowledge_search_fails_is_still_recorded(
    mem: Memory, store_path: Path
) -> None:
    mem.add("Expenses need my manager's approval.", user_id="alice")
    mem.add_knowledge("Handbook", HANDBOOK, user_id="alice")
    with sqlite3.connect(store_path / "engrammar.db") as db:  # the knowledge table is lost
        db.execute("DROP TABLE knowledge_chunks")
    with pytest.raises(StoreError, match="knowledge"):
        mem.recall("expenses approval", user_id="alice")
    # The memories were ranked and the recall recorded before the knowledge search failed:
    # feedback acts on it.
    done = mem.feedback("Expenses need approval.", user_id="alice")
    assert done["query"] == "expenses approval" and done["drawn_on"]


def test_a_document_is_split_into_passages(mem: Memory) -> None:
    text = "First paragraph. It has two sentences.\n\n" + "Long sentence " * 40 + "\n\nLast one."
    kb = mem.add_knowledge("Doc", text=text, user_id="alice", chunk_chars=120, chunk_overlap=20)
    chunks = mem.search_knowledge("Last one", user_id="alice", limit=100)
    assert kb.chunk_count == len(chunks) > 3
    assert all(len(c.content) <= 120 for c in chunks)
    assert any("Last one." in c.content for c in chunks)


def test_split_document_loses_nothing() -> None:
    text = "word " * 500
    parts = split_document(text, 100, 10)
    assert all(len(p) <= 100 for p in parts)
    assert "".join(parts).count("word") >= 500
    assert split_document("a.\n\nb.", 100, 0) == ["a.\nb."]
    with pytest.raises(ValueError):
        split_document("x", 0, 0)


def test_bad_input_names_the_field_and_stores_nothing(mem: Memory) -> None:
    cases = [
        ({"chunks": HANDBOOK, "text": "x"}, "chunks"),
        ({}, "chunks"),
        ({"chunks": ["ok", {"content": ""}]}, "chunks[1].content"),
        ({"chunks": [{"content": "ok", "metadata": 3}]}, "chunks[0].metadata"),
        ({"text": "doc", "chunk_chars": 0}, "chunk_chars"),
        # The splitting settings are checked with given passages too, not ignored.
        ({"chunks": ["ok"], "chunk_overlap": "many"}, "chunk_overlap"),
        ({"chunks": ["ok"], "chunk_overlap": -1}, "chunk_overlap"),
        ({"chunks": ["ok"], "chunk_chars": "big"}, "chunk_chars"),
    ]
    for kwargs, field in cases:
        with pytest.raises(ValidationError) as err:
            mem.add_knowledge("KB", user_id="alice", **kwargs)  # type: ignore[arg-type]
        assert err.value.field == field
    with pytest.raises(ValidationError) as err:
        mem.add_knowledge("", ["x"], user_id="alice")
    assert err.value.field == "name"
    with pytest.raises(ValidationError) as err:
        mem.add_knowledge("KB", ["x"])
    assert mem.list_knowledge() == []


def test_knowledge_over_rest_mcp_and_cli_follows_the_key(mem: Memory) -> None:
    from starlette.testclient import TestClient

    from engrammar.keys import create_api_key
    from engrammar.server import build_app

    key, _ = create_api_key(mem.store, "default", user_id="alice")
    other, _ = create_api_key(mem.store, "default", user_id="bob")
    with TestClient(build_app(mem), base_url="http://127.0.0.1") as http:
        auth = {"Authorization": f"Bearer {key}"}
        made = http.post("/v1/knowledge", headers=auth, json={"name": "H", "chunks": [
            {"content": "Expenses above $500 require manager approval."}]})  # fmt: skip
        assert made.status_code == 201, made.text
        kb_id = made.json()["id"]
        found = http.post("/v1/knowledge/search", headers=auth, json={"query": "expenses"})
        assert found.json()["results"][0]["kb_id"] == kb_id
        listed = http.get("/v1/knowledge", headers=auth).json()["knowledge_bases"]
        assert [k["id"] for k in listed] == [kb_id]
        bob = {"Authorization": f"Bearer {other}"}
        assert http.delete(f"/v1/knowledge/{kb_id}", headers=bob).status_code == 404
        gone = http.delete(f"/v1/knowledge/{kb_id}", headers=auth)
        assert gone.json() == {"kb_id": kb_id, "deleted": 1}


def test_engrammar_migrate_copies_knowledge_bases(tmp_path: Path, pg_url: str) -> None:
    from engrammar import Config
    from engrammar.store.migrate import migrate

    with Memory(Config(path=str(tmp_path / "src")), embedder=HashEmbedder()) as src:
        kb = src.add_knowledge("Handbook", HANDBOOK, user_id="alice", metadata={"v": 1})
    report = migrate(str(tmp_path / "src"), pg_url)
    assert report is not None
    with Memory(Config(store=pg_url), embedder=HashEmbedder()) as dst:
        (copied,) = dst.list_knowledge(user_id="alice")
        assert (copied.id, copied.chunk_count, copied.metadata) == (kb.id, 3, {"v": 1})
        hit = dst.search_knowledge("expenses above manager approval", user_id="alice")[0]
        assert hit.content == "Expenses above $500 require manager approval."

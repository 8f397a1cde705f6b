"""Bounded knowledge bases: a floor on the passage size, caps on the passages of one knowledge
base and of one workspace and user (the same error on every interface, 413 over HTTP), blank
passages dropped, and a search that ranks by the store's vector search instead of reading
every vector of the scope."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import numpy as np
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from backends import open_memory
from engrammar import Config, HashEmbedder, Memory, TooLargeError, ValidationError
from engrammar.compat.memwire import MemWire
from engrammar.keys import create_api_key
from engrammar.models import KnowledgeBase, KnowledgeChunk
from engrammar.recall.chunks import split_document
from engrammar.store import NewKnowledgeBase
from serving import serve_in_thread


def _passages(n: int, start: int = 0) -> list[str]:
    return [f"Passage {i}: the warehouse in town {i} opens at {i % 12} o'clock." for i in
            range(start, start + n)]  # fmt: skip


@pytest.fixture
def capped(location: str) -> Iterator[Memory]:
    m = open_memory(location, max_chunks_per_knowledge_base=4, max_knowledge_chunks_per_scope=6)
    yield m
    m.close()


def test_chunk_chars_has_a_floor_and_nothing_is_stored(mem: Memory, tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as err:
        mem.add_knowledge("Doc", text="x " * 1000, user_id="alice", chunk_chars=1)
    assert err.value.field == "chunk_chars" and "must be >= 100, got 1" in str(err.value)
    assert mem.list_knowledge(user_id="alice") == []
    assert mem.add_knowledge("Doc", text="x " * 1000, user_id="alice", chunk_chars=100).id
    doc = tmp_path / "doc.txt"
    doc.write_text("Some sentence here. " * 100)
    with pytest.raises(ValidationError) as err:
        MemWire(memory=mem).ingest(doc, user_id="alice", chunk_max_characters=1)
    assert err.value.field == "chunk_max_characters"


def test_blank_passages_are_dropped(mem: Memory) -> None:
    # Cut at every character, a sentence used to leave its spaces as passages of their own.
    assert "" not in split_document("ab cd. ef gh", 1, 0)
    assert all(p.strip() == p and p for p in split_document("word " * 50 + "x", 7, 3))
    text = "A real passage.\n\n   \n\n\t\n\n" + "x" * 250 + " " * 150 + "y"
    kb = mem.add_knowledge("KB", text=text, user_id="alice", chunk_chars=100, chunk_overlap=0)
    hits = mem.search_knowledge("real passage", user_id="alice", limit=10)
    assert kb.chunk_count == len(hits) and all(h.content.strip() == h.content for h in hits)
    assert hits and all(h.content for h in hits)


@pytest.mark.every_store
def test_chunks_per_knowledge_base_and_per_scope_are_capped(capped: Memory) -> None:
    with pytest.raises(TooLargeError) as err:
        capped.add_knowledge("Big", _passages(5), user_id="alice")
    assert err.value.field == "chunks" and "max_chunks_per_knowledge_base" in str(err.value)
    with pytest.raises(TooLargeError) as err:
        capped.add_knowledge("Big", text="One sentence here. " * 100, user_id="alice",
                             chunk_chars=100)  # fmt: skip
    assert err.value.field == "text"
    assert capped.list_knowledge(user_id="alice") == []
    first = capped.add_knowledge("A", _passages(4), user_id="alice")
    with pytest.raises(TooLargeError) as err:
        capped.add_knowledge("B", _passages(3, 4), user_id="alice", agent_id="bot")
    assert "max_knowledge_chunks_per_scope" in str(err.value) and "'alice'" in str(err.value)
    assert [b.id for b in capped.list_knowledge(user_id="alice")] == [first.id]
    assert len(capped.search_knowledge("warehouse", user_id="alice", limit=100)) == 4
    # Another user of the workspace has room of their own; deleting makes room again.
    assert capped.add_knowledge("B", _passages(3), user_id="bob").chunk_count == 3
    assert capped.add_knowledge("C", _passages(2, 4), user_id="alice").chunk_count == 2
    capped.delete_knowledge(first.id, user_id="alice")
    assert capped.add_knowledge("D", _passages(4, 6), user_id="alice").chunk_count == 4


@pytest.mark.every_store
def test_the_store_checks_the_scope_cap_inside_its_write(capped: Memory) -> None:
    # What a writer racing past the engine's early check meets: the store's own count.
    capped.add_knowledge("A", _passages(4), user_id="alice")
    store, now = capped.store, time.time()
    base = KnowledgeBase("kb_x", "B", "default", "alice", None, None, 3, now, {})
    vectors = HashEmbedder().embed(_passages(3))
    chunks = [
        (KnowledgeChunk(f"kb_x_{i}", "kb_x", i, p, "default", "alice", None, None, now, {}), v)
        for i, (p, v) in enumerate(zip(_passages(3), vectors, strict=True))
    ]
    with pytest.raises(TooLargeError) as err:
        store.add_knowledge(NewKnowledgeBase(base, chunks), 6)
    assert "3 passages would make 7" in str(err.value)
    assert store.count_knowledge_chunks("default", "alice") == 4
    assert len(capped.list_knowledge(user_id="alice")) == 1
    store.add_knowledge(NewKnowledgeBase(base, chunks), 7)
    assert store.count_knowledge_chunks("default", "alice") == 7


@pytest.mark.every_store
def test_search_ranks_like_exact_cosine_and_filters_the_scope(mem: Memory) -> None:
    texts = _passages(60)
    mem.add_knowledge("A", texts[:30], user_id="alice", agent_id="bot")
    mem.add_knowledge("B", texts[30:], user_id="alice")
    mem.add_knowledge("C", texts[:10], user_id="bob")
    embedder = HashEmbedder()
    query = "warehouse in town 17 opens"
    q = embedder.embed([query])[0]
    vectors = embedder.embed(texts)
    exact = np.clip(vectors @ q / np.linalg.norm(vectors, axis=1) / np.linalg.norm(q), 0, 1)
    order = sorted(range(60), key=lambda i: (-round(float(exact[i]), 6), i))
    hits = mem.search_knowledge(query, user_id="alice", limit=7)
    assert [h.content for h in hits] == [texts[i] for i in order[:7]]
    assert [h.score for h in hits] == pytest.approx([float(exact[i]) for i in order[:7]], abs=1e-5)
    bot = mem.search_knowledge(query, user_id="alice", agent_id="bot", limit=100)
    assert {h.content for h in bot} == set(texts[:30])
    everyone = mem.search_knowledge(query, workspace="default", agent_id="bot", limit=100)
    assert len(everyone) == 30
    result = mem.recall(query, user_id="alice")
    assert result.knowledge and all(k.user_id == "alice" for k in result.knowledge)


def test_sqlite_search_keeps_its_index_until_the_knowledge_changes(mem: Memory) -> None:
    mem.add_knowledge("A", _passages(20), user_id="alice")
    store = mem.store
    mem.search_knowledge("warehouse", user_id="alice")
    key = ("knowledge", "default", "alice")
    loaded = store._knowledge.get(key)  # type: ignore[attr-defined]
    assert loaded is not None and len(loaded[1].ids) == 20
    mem.add("An unrelated memory is written.", user_id="alice")  # the database changed
    for _ in range(3):
        mem.search_knowledge("warehouse", user_id="alice")
    assert store._knowledge.get(key)[1] is loaded[1]  # type: ignore[attr-defined]
    kb = mem.add_knowledge("B", _passages(5, 20), user_id="alice")
    assert len(mem.search_knowledge("town 22", user_id="alice", limit=100)) == 25
    mem.delete_knowledge(kb.id, user_id="alice")
    assert len(mem.search_knowledge("town 22", user_id="alice", limit=100)) == 20


# -- the same error on every interface ---------------------------------------------------------
def _env(store: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
    env.update(
        ENGRAMMAR_PATH=str(store),
        ENGRAMMAR_EMBEDDER="hash",
        ENGRAMMAR_MAX_CHUNKS_PER_KNOWLEDGE_BASE="4",
    )
    return env


def test_http_answers_413_and_422_and_stores_nothing(tmp_path: Path) -> None:
    config = Config(path=str(tmp_path / "s"), max_chunks_per_knowledge_base=4)
    with Memory(config, embedder=HashEmbedder()) as mem:
        key, _ = create_api_key(mem.store, "default", user_id="alice")
        auth = {"Authorization": f"Bearer {key}"}
        for base in serve_in_thread(mem):
            big = httpx.post(f"{base}/v1/knowledge", headers=auth, timeout=30,
                             json={"name": "Big", "chunks": [{"content": p} for p in
                                                             _passages(5)]})  # fmt: skip
            assert big.status_code == 413, big.text
            error = big.json()["error"]
            assert error["type"] == "payload_too_large" and error["field"] == "chunks"
            assert "max_chunks_per_knowledge_base" in error["message"]
            tiny = httpx.post(
                f"{base}/v1/knowledge",
                headers=auth,
                timeout=30,
                json={"name": "Doc", "text": "x " * 5000, "chunk_chars": 1},
            )
            assert tiny.status_code == 422 and tiny.json()["error"]["field"] == "chunk_chars"
            listed = httpx.get(f"{base}/v1/knowledge", headers=auth, timeout=30)
            assert listed.json()["knowledge_bases"] == []


def test_mcp_and_cli_refuse_with_the_same_error(tmp_path: Path) -> None:
    store = tmp_path / "s"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engrammar.cli", "mcp"], env=_env(store)
    )
    errlog = (tmp_path / "stderr.txt").open("w")

    async def run() -> None:
        async with (
            stdio_client(params, errlog=errlog) as streams,
            ClientSession(streams[0], streams[1]) as s,
        ):
            await s.initialize()
            chunks = [{"content": p} for p in _passages(5)]
            refused = await s.call_tool(
                "memory_add_knowledge", {"name": "Big", "chunks": chunks, "user_id": "alice"}
            )
            assert refused.is_error
            text = refused.content[0].text  # type: ignore[union-attr]
            assert "chunks: makes 5 passages" in text and "max_chunks_per_knowledge_base" in text

    try:
        anyio.run(run)
    finally:
        errlog.close()
    done = subprocess.run(
        [sys.executable, "-m", "engrammar.cli", "knowledge", "add", "Big", "-u", "alice",
         "--text", "One sentence here. " * 100, "--chunk-chars", "100"],
        capture_output=True, text=True, env=_env(store), timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "text: makes" in done.stderr and "max_chunks_per_knowledge_base" in done.stderr
    listed = subprocess.run(
        [sys.executable, "-m", "engrammar.cli", "knowledge", "list", "-u", "alice", "--json"],
        capture_output=True, text=True, env=_env(store), timeout=120,
    )  # fmt: skip
    assert json.loads(listed.stdout)["knowledge_bases"] == []

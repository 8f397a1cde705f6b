"""Keyword search's GIN index on PostgreSQL is kept current on every write (migration m014:
``fastupdate`` off, the pending list flushed): a store as m013 left it, with rows waiting in
the pending list, gets them merged on the next open and answers the same."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg

from engrammar.models import Scope
from engrammar.store import NewMemory
from engrammar.store.postgres.store import PostgresStore

WORDS = ["garden", "violin", "harbour", "pottery", "marathon", "lantern", "orchard", "comet"]


def _rows(n: int) -> list[NewMemory]:
    rng = np.random.default_rng(11)
    vecs = rng.normal(size=(n, 8)).astype(np.float32)
    return [
        NewMemory(f"m{i}", "default", "u", None, None, "user",
                  f"{WORDS[i % 8]} {WORDS[(i * 3) % 8]} talk number {i}", "message", float(i),
                  {}, f"m{i}", vecs[i])
        for i in range(n)
    ]  # fmt: skip


def _index(url: str) -> tuple[Any, int]:
    """The index's storage options and how many rows wait in its pending list."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        options = conn.execute(
            "SELECT reloptions FROM pg_class WHERE relname = 'memories_terms'"
        ).fetchone()
        pending = conn.execute(
            "SELECT pending_tuples FROM pgstatginindex('memories_terms')"
        ).fetchone()
    assert options is not None and pending is not None
    return options[0], int(pending[0])


def test_new_store_index_has_no_pending_list(pg_url: str) -> None:
    store = PostgresStore(pg_url, pool_size=2)
    try:
        store.check_embedder("synthetic", 8)
        store.add_memories(_rows(50))
        assert _index(pg_url) == (["fastupdate=off"], 0)
        hits = store.keyword_search(Scope("default", "u"), "violin comet", 5)
        assert hits and all(h[0].startswith("m") for h in hits)
    finally:
        store.close()


def test_m014_flushes_the_pending_list_of_a_store(pg_url: str) -> None:
    store = PostgresStore(pg_url, pool_size=2)
    store.check_embedder("synthetic", 8)
    store.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:  # back to m013's index
        conn.execute("ALTER INDEX memories_terms SET (fastupdate = on)")
    store = PostgresStore(pg_url, pool_size=2)
    try:
        store.add_memories(_rows(200))
        options, pending = _index(pg_url)
        assert options == ["fastupdate=on"] and pending == 200
        before = store.keyword_search(Scope("default", "u"), "harbour orchard talk", 20)
    finally:
        store.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM migrations WHERE name = 'm014_keyword_index_current'")
    store = PostgresStore(pg_url, pool_size=2)
    try:
        assert "m014_keyword_index_current" in store.applied_migrations()
        assert _index(pg_url) == (["fastupdate=off"], 0)
        after = store.keyword_search(Scope("default", "u"), "harbour orchard talk", 20)
        assert after == before and len(after) == 20
    finally:
        store.close()

"""Vectors stay in the row on PostgreSQL (m013's ``STORAGE MAIN``): fixing the column's
dimension when a store learns its embedder must not reset it to ``vector``'s default
(EXTERNAL: a 384-d row's vector in TOAST, read back on every exact scan); m015 sets it again
on a store where that happened."""

from __future__ import annotations

import time
import uuid
from typing import Any

import numpy as np
import psycopg
import pytest

from engrammar import Scope
from engrammar.store import NewMemory
from engrammar.store.postgres.store import PostgresStore

pytestmark = pytest.mark.postgres

DIM = 384


def _storage(url: str) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT attstorage FROM pg_attribute WHERE attrelid = 'memories'::regclass "
            "AND attname = 'embedding'"
        ).fetchone()
    assert row is not None
    return str(row[0])


def _vectors_outside(url: str) -> int:
    """Memories whose vector is in TOAST, out of the row (PostgreSQL 17+)."""
    with psycopg.connect(url) as conn:
        if conn.info.server_version < 170000:
            pytest.skip("pg_column_toast_chunk_id needs PostgreSQL 17")
        row = conn.execute(
            "SELECT count(*) FROM memories WHERE pg_column_toast_chunk_id(embedding) IS NOT NULL"
        ).fetchone()
    assert row is not None
    return int(row[0])


def _rows(n: int, seed: int) -> list[NewMemory]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        v = rng.standard_normal(DIM).astype(np.float32)
        # Past ~2 kB with its vector even compressed (as many LoCoMo rows are): with
        # EXTERNAL the vector goes to TOAST, with MAIN the text does.
        words = [f"w{int(x)}" for x in rng.integers(0, 10**9, 45)]
        content = f"The harbour walk {i}: " + " ".join(words)
        out.append(
            NewMemory(
                id=uuid.uuid4().hex,
                workspace="default",
                user_id="u",
                agent_id=None,
                session_id="s",
                role="user",
                content=content,
                kind="message",
                created_at=time.time(),
                metadata={"n": i},
                dedup_key=uuid.uuid4().hex,
                embedding=v / np.linalg.norm(v),
            )
        )
    return out


def _nearest(store: PostgresStore, q: np.ndarray) -> list[tuple[str, Any]]:
    return [(m, round(s, 5)) for m, s in store.vector_search(Scope("default", "u"), q, 10)]


def test_vectors_stay_in_the_row_once_the_dimension_is_set(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    try:
        store.check_embedder("synthetic", DIM)
        assert _storage(pg_url) == "m"
        store.add_memories(_rows(50, 1))
        assert _vectors_outside(pg_url) == 0
    finally:
        store.close()


def test_m015_keeps_new_vectors_in_the_row_of_a_reset_store(pg_url: str) -> None:
    """A store whose column went back to EXTERNAL (as the dimension set it before this
    fix): its rows' vectors in TOAST; after m015 new rows keep theirs inline, and
    ``VACUUM FULL`` brings the older ones back; searches answer the same throughout."""
    store = PostgresStore(pg_url)
    store.check_embedder("synthetic", DIM)
    store.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE memories ALTER COLUMN embedding SET STORAGE EXTERNAL")
        conn.execute("DELETE FROM migrations WHERE name = 'm015_vectors_inline_again'")
    store = PostgresStore(pg_url)  # m015 runs again
    try:
        assert _storage(pg_url) == "m"
    finally:
        store.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE memories ALTER COLUMN embedding SET STORAGE EXTERNAL")
    store = PostgresStore(pg_url)
    try:
        store.add_memories(_rows(40, 2))
        outside = _vectors_outside(pg_url)
        assert outside > 0  # what the reset did to rows of this size
        q = _rows(1, 9)[0].embedding
        before = _nearest(store, q)
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("DELETE FROM migrations WHERE name = 'm015_vectors_inline_again'")
    finally:
        store.close()
    store = PostgresStore(pg_url)
    try:
        store.add_memories(_rows(40, 3))
        assert _vectors_outside(pg_url) == outside  # the new rows keep theirs inline
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("VACUUM FULL memories")
        assert _vectors_outside(pg_url) == 0
        after = _nearest(store, q)
        assert [m for m in after if m in before] == before[: len([m for m in after if m in before])]
        assert len(store.vector_search(Scope("default", "u"), q, 100)) == 80
    finally:
        store.close()

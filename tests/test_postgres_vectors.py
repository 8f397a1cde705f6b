"""Per-user vector search on PostgreSQL: a small user's rows scanned exactly, a large user's
through its bucket's partial HNSW index (see engrammar.store.postgres.vectors), and migration
m013 building the buckets in a store that already holds vectors."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import psycopg
import pytest

from engrammar.models import Scope
from engrammar.store import AddAhead, NewMemory
from engrammar.store.postgres.store import PostgresStore
from engrammar.store.postgres.vectors import BUCKETS, EXACT_MAX, vector_index_names

DIM = 16


def _rows(user: str, n: int, rng: np.random.Generator) -> tuple[list[NewMemory], np.ndarray]:
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    rows = [
        NewMemory(f"{user}-{i}", "default", user, f"a{i % 2}", None, "user", f"text {i}",
                  "message", float(i), {}, f"{user}-{i}", vecs[i])
        for i in range(n)
    ]  # fmt: skip
    return rows, vecs


def _one(url: str, sql: str, args: Any = ()) -> Any:
    with psycopg.connect(url) as conn:
        row = conn.execute(sql, args).fetchone()
        return row[0] if row else None


def _bucket_scans(url: str, workspace: str, user: str, above: int = -1) -> int:
    """How many scans the partial index of ``user``'s bucket has served, as the store's
    connections have reported them (each once idle for a moment; on a loaded machine later):
    read again until the count is above ``above`` (at most a minute)."""
    time.sleep(1.5)
    deadline = time.monotonic() + 60
    while True:
        found = _scans(url, workspace, user)
        if found > above or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def _scans(url: str, workspace: str, user: str) -> int:
    with psycopg.connect(url) as conn:
        bucket = conn.execute(
            f"SELECT hashtext(%s || '/' || %s) & {BUCKETS - 1}", (workspace, user)
        ).fetchone()
        assert bucket is not None
        row = conn.execute(
            "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = %s",
            (f"memories_embedding_b{bucket[0]}",),
        ).fetchone()
        return int(row[0]) if row else -1


def test_small_user_exact_large_user_through_its_bucket(pg_url: str) -> None:
    rng = np.random.default_rng(3)
    big_rows, big = _rows("big", EXACT_MAX + 600, rng)
    small_rows, small = _rows("small", 300, rng)
    store = PostgresStore(pg_url, pool_size=2)
    try:
        store.check_embedder("synthetic", DIM)
        with store.bulk_load():
            for at in range(0, len(big_rows), 500):
                store.add_memories(big_rows[at : at + 500])
            store.add_memories(small_rows)
        names = vector_index_names()
        found = _one(pg_url, "SELECT count(*) FROM pg_indexes WHERE indexname = ANY(%s)", (names,))
        assert found == len(names) == BUCKETS + 1
        for user, vecs in (("big", big), ("small", small)):
            before = _bucket_scans(pg_url, "default", user)
            for i in range(5):
                query = vecs[i * 7] + 0.3 * vecs[i * 7 + 1]
                query /= np.linalg.norm(query)
                for scope in (Scope("default", user), Scope("default", user, "a0")):
                    hits = store.vector_search(scope, query, 10)
                    allowed = np.arange(len(vecs))
                    if scope.agent_id is not None:
                        allowed = allowed[allowed % 2 == 0]
                    exact = allowed[np.argsort(-(vecs[allowed] @ query))[:10]]
                    want = [f"{user}-{j}" for j in exact]
                    got = [h for h, _ in hits]
                    assert got[:3] == want[:3]
                    assert len(set(got) & set(want)) >= 9
                    assert all(h.startswith(f"{user}-") for h in got)
            # The large user's count is read until its scans show (the small user's
            # stays where it was).
            scans = _bucket_scans(pg_url, "default", user, before if user == "big" else -1)
            scans -= before
            # The large user walks its bucket's graph; the small one never does.
            assert (scans > 0) if user == "big" else (scans == 0), (user, scans)
        # The recall session's prefetch asks the same query.
        with store.reading():
            hits = store.vector_search(Scope("default", "big"), big[5], 10)
        assert hits[0][0] == "big-5"
        # An add session searches its whole batch in one statement: the same hits, in the
        # same order with the same similarities, as one search per vector.
        for user, vecs in (("big", big), ("small", small)):
            scope = Scope("default", user)
            queries = np.stack([vecs[i * 7] + 0.2 * vecs[i * 7 + 3] for i in range(40)])
            queries /= np.linalg.norm(queries, axis=1, keepdims=True)
            one_by_one = [store.vector_search(scope, q, 12) for q in queries]
            with store.adding(AddAhead(scope, scope, [], 12)):
                batched = store.vector_searches(scope, queries, 12)
            assert batched == one_by_one and all(len(h) == 12 for h in batched)
    finally:
        store.close()


def test_m013_builds_the_buckets_of_a_store_with_vectors(pg_url: str) -> None:
    """A store as m012 left it (one HNSW index, vectors stored out of line) gets its buckets
    on the next open, with the global index's build parameters, and keeps answering."""
    rng = np.random.default_rng(5)
    rows, vecs = _rows("u", 400, rng)
    store = PostgresStore(pg_url, pool_size=2, hnsw_m=8, hnsw_ef_construction=40)
    store.check_embedder("synthetic", DIM)
    store.add_memories(rows)
    store.close()
    with psycopg.connect(pg_url) as conn:  # back to m012's schema
        conn.execute(f"DROP INDEX {', '.join(vector_index_names()[1:])}")
        conn.execute("ALTER TABLE memories ALTER COLUMN embedding SET STORAGE EXTERNAL")
        conn.execute("DELETE FROM migrations WHERE name = 'm013_vector_buckets'")
    store = PostgresStore(pg_url, pool_size=2)  # default m / ef_construction: the old ones win
    try:
        assert "m013_vector_buckets" in store.applied_migrations()
        with psycopg.connect(pg_url) as conn:
            defs = [
                r[0]
                for r in conn.execute(
                    "SELECT indexdef FROM pg_indexes WHERE indexname = ANY(%s)",
                    (vector_index_names(),),
                )
            ]
            storage = conn.execute(
                "SELECT attstorage FROM pg_attribute "
                "WHERE attrelid = 'memories'::regclass AND attname = 'embedding'"
            ).fetchone()
        assert len(defs) == BUCKETS + 1
        assert all("m='8'" in d and "ef_construction='40'" in d for d in defs), defs[:2]
        assert storage == ("m",)
        hits = store.vector_search(Scope("default", "u"), vecs[17], 5)
        assert hits[0][0] == "u-17"
    finally:
        store.close()


@pytest.mark.parametrize("user", [None, "nobody"])
def test_scopes_without_rows_or_user(pg_url: str, user: str | None) -> None:
    """A user the store has never seen finds nothing; a scope without a user (an agent across
    users) goes through the global index and finds every user's rows."""
    rng = np.random.default_rng(9)
    store = PostgresStore(pg_url, pool_size=2)
    try:
        store.check_embedder("synthetic", DIM)
        for name in ("x", "y"):
            store.add_memories(_rows(name, 50, rng)[0])
        hits = store.vector_search(Scope("default", user, "a0"), rng.normal(size=DIM), 100)
        if user is None:
            assert {h.split("-")[0] for h, _ in hits} == {"x", "y"} and len(hits) == 50
        else:
            assert hits == []
    finally:
        store.close()

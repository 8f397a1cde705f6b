"""A write that more than doubles what the planner's statistics know of ``memories`` (a first
import, a first large batch) refreshes them: planned with an empty table's statistics, a
recall of a freshly filled scope was ~15 times slower until autovacuum came by."""

from __future__ import annotations

import time
from typing import Any

import pytest

from engrammar import Config, HashEmbedder, Memory
from engrammar.store.postgres.store import ANALYZE_MIN_ROWS, PostgresStore

pytestmark = pytest.mark.postgres


def _known_rows(store: PostgresStore) -> float:
    def run(conn: Any) -> float:
        row = conn.execute(
            "SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass"
        ).fetchone()
        return float(row[0])

    return store._tx("reading", run, transaction=False)


def _count(store: PostgresStore, sql: str) -> int:
    return int(
        store._tx("reading", lambda conn: conn.execute(sql).fetchone()[0], transaction=False)
    )


def test_a_large_first_batch_refreshes_the_statistics(pg_url: str) -> None:
    mem = Memory(Config(store=pg_url), embedder=HashEmbedder())
    store = mem.store
    assert isinstance(store, PostgresStore)
    try:
        mem.add([f"small batch message {i}" for i in range(10)], user_id="u")
        assert _known_rows(store) < 0  # never analyzed; a small write leaves that to autovacuum
        n = ANALYZE_MIN_ROWS + 100
        mem.add([f"message number {i} of the first large batch" for i in range(n)], user_id="u")
        assert _known_rows(store) == n + 10  # analyzed right after the write
        # A batch as large again does not double what the statistics know: no ANALYZE (the
        # explicit ones are counted apart from autovacuum's).
        mem.add([f"message number {i} of the second batch" for i in range(n)], user_id="u")
        # A backend reports its counts once idle for a moment; on a loaded machine later.
        analyzed = "SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'memories'"
        deadline = time.monotonic() + 60
        while _count(store, analyzed) < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _count(store, analyzed) == 1
    finally:
        mem.close()

"""Statements whose best plan does not depend on the scope run on their prepared statement's
generic plan (``planned_once``); vector searches keep a custom plan each time, and a pooled
connection never goes back with generic plans switched on, not even after a failure."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from engrammar import Config, HashEmbedder, Memory
from engrammar.store.postgres.statements import planned_once
from engrammar.store.postgres.store import PostgresStore

pytestmark = pytest.mark.postgres


def _connect(pg_url: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(pg_url, autocommit=True)
    conn.execute("SELECT set_config('plan_cache_mode', 'force_custom_plan', false)")
    return conn


def _mode(conn: psycopg.Connection[Any]) -> str:
    return str(conn.execute("SHOW plan_cache_mode").fetchone()[0])


def _plans(conn: psycopg.Connection[Any], like: str) -> list[tuple[int, int]]:
    rows = conn.execute(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
        (like,),
    ).fetchall()
    return [(int(g), int(c)) for g, c in rows]


def test_statements_inside_use_generic_plans_and_the_rest_custom(pg_url: str) -> None:
    with _connect(pg_url) as conn:
        for _ in range(8):  # psycopg prepares a statement from its sixth run on
            with conn.pipeline():
                with planned_once(conn):
                    inside = conn.execute("SELECT %s::int + 1 AS inside_block", (1,))
                outside = conn.execute("SELECT %s::int + 2 AS outside_block", (1,))
            assert inside.fetchone() == (2,) and outside.fetchone() == (3,)
        ((generic, custom),) = _plans(conn, "%inside_block%")
        assert generic > 0 and custom == 0
        ((generic, custom),) = _plans(conn, "%outside_block%")
        assert generic == 0 and custom > 0
        assert _mode(conn) == "force_custom_plan"


def test_outside_a_pipeline_nothing_is_switched(pg_url: str) -> None:
    with _connect(pg_url) as conn:
        with planned_once(conn):
            assert _mode(conn) == "force_custom_plan"
        assert _mode(conn) == "force_custom_plan"


def test_a_failure_inside_the_block_rolls_the_switch_back(pg_url: str) -> None:
    with _connect(pg_url) as conn:
        with pytest.raises(psycopg.Error), conn.pipeline(), planned_once(conn):
            conn.execute("SELECT 1 / %s::int", (0,))
        assert _mode(conn) == "force_custom_plan"
        # In a transaction of the caller's: the rollback takes the switch back too.
        with pytest.raises(psycopg.Error), conn.pipeline():
            conn.execute("BEGIN")
            with planned_once(conn):
                conn.execute("SELECT 1 / %s::int", (0,))
            conn.execute("COMMIT")
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.execute("ROLLBACK")
        assert _mode(conn) == "force_custom_plan"


def test_recall_and_feedback_plan_searches_per_call_and_the_rest_once(pg_url: str) -> None:
    mem = Memory(Config(store=pg_url, pool_size=1), embedder=HashEmbedder())
    store = mem.store
    assert isinstance(store, PostgresStore)
    try:
        mem.add([f"note {i} about the garden and the lake trip" for i in range(40)], user_id="u")
        for i in range(8):
            assert mem.recall("what about the garden?", user_id="u", limit=5).memories
            mem.feedback(response=f"The garden, answer {i}.", user_id="u")

        def look(conn: Any) -> tuple[str, list[tuple[int, int]], list[tuple[int, int]]]:
            return (
                _mode(conn),
                _plans(conn, "%change_log%"),
                _plans(conn, "WITH hits AS MATERIALIZED%"),
            )

        mode, logged, vectors = store._tx("looking", look, transaction=False)
        assert mode == "force_custom_plan"
        assert logged and all(g > 0 and c == 0 for g, c in logged)
        # The held graph of this small scope answers the vector searches in process
        # (store/postgres/local.py); a store without it sends them, planned per call.
        assert vectors == []
        plain = Memory(Config(store=pg_url, pool_size=1), embedder=HashEmbedder())
        try:
            assert isinstance(plain.store, PostgresStore)
            plain.store._graph_cache = False
            for i in range(8):
                assert plain.recall("what about the garden?", user_id="u", limit=5).memories
                plain.feedback(response=f"The garden, answer {i}.", user_id="u")
            mode, _, vectors = plain.store._tx("looking", look, transaction=False)
            assert mode == "force_custom_plan"
            assert vectors and all(g == 0 and c > 0 for g, c in vectors)
        finally:
            plain.close()
    finally:
        mem.close()


def test_the_graph_refresh_looks_its_changes_up_by_index(pg_url: str) -> None:
    """The planner guesses ~1,000 ids for a handful in ``change_log``'s arrays: joined plainly,
    the refresh after each feedback scanned the scope's memories and edges (~40 ms at 10k)."""
    from engrammar.store.postgres import graph

    mem = Memory(Config(store=pg_url), embedder=HashEmbedder())
    store = mem.store
    assert isinstance(store, PostgresStore)
    try:
        for start in range(0, 3000, 500):  # a log of large arrays: what the planner learns
            mem.add(
                [f"fact {i}: the lake house has {i} rooms" for i in range(start, start + 500)],
                user_id="u",
            )
        # A small change after it, as a feedback or the next turn makes: its few ids logged.
        mem.add(["the lake house now has 12 rooms", "fact 7 was wrong"], user_id="u")

        def buffers(conn: Any) -> tuple[dict[str, int], int]:
            conn.execute("ANALYZE")
            wm = conn.execute("SELECT max(xid)::text FROM change_log").fetchone()  # the small one
            args = {"ws": "default", "user": "u", "wm": wm[0]}
            out = {}
            for name in ("_NEW_ROWS", "_NEW_EDGES", "_NEW_WINDOWS", "_NEW_PARTS"):
                sql = "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + getattr(graph, name)
                top = conn.execute(sql, args).fetchone()[0][0]["Plan"]
                out[name] = int(top["Shared Hit Blocks"]) + int(top["Shared Read Blocks"])
            pages = conn.execute(
                "SELECT sum(relpages) FROM pg_class WHERE relname IN ('memories', 'edges')"
            ).fetchone()[0]
            return out, int(pages)

        read, pages = store._tx("explaining", buffers, transaction=False)
        assert pages > 500
        for name, blocks in read.items():
            assert blocks < pages / 10, (name, blocks, pages)
    finally:
        mem.close()

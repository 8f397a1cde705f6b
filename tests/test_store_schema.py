"""Both stores' migrations build the one logical schema of engrammar.store.schema; the SQLite
migration that keyed decision links by workspace keeps the links of an older store, and an
older PostgreSQL store opens migrated with its memories found again."""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engrammar import models
from engrammar.store.schema import TABLES, differences
from engrammar.store.sql.dialect import memory_record
from engrammar.store.sqlite.migrations import MIGRATIONS
from engrammar.store.sqlite.store import SQLiteStore
from engrammar.store.tables import EVENT_COLUMNS, FEEDBACK_TABLES, MEMORY_COLUMNS

Found = dict[str, tuple[list[str], list[list[str]]]]


def _sqlite_schema(conn: sqlite3.Connection) -> Found:
    found: Found = {}
    tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    for (table,) in tables:
        info = conn.execute(f"PRAGMA table_info({table})").fetchall()
        uniques = [[r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]]]
        for index in conn.execute(f"PRAGMA index_list({table})").fetchall():
            if index[2] and index[3] != "pk":
                uniques.append([r[2] for r in conn.execute(f"PRAGMA index_info({index[1]})")])
        found[table] = ([r[1] for r in info], [u for u in uniques if u])
    return found


def _migrated_to(file: Path, migrations: Sequence[object]) -> None:
    """A store file as an older release left it: only ``migrations`` applied."""
    conn = sqlite3.connect(file, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    for migration in migrations:
        migration(conn)  # type: ignore[operator]
        conn.execute(
            "INSERT INTO migrations VALUES (?, ?)",
            (migration.__name__, time.time()),  # type: ignore[attr-defined]
        )
    conn.execute("COMMIT")
    conn.close()


def test_sqlite_migrations_build_the_logical_schema(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "s.db").close()
    with sqlite3.connect(tmp_path / "s.db") as conn:
        assert differences("sqlite", _sqlite_schema(conn)) == []


def _postgres_schema(pg_url: str) -> Found:
    import psycopg

    found: Found = {}
    with psycopg.connect(pg_url) as conn:
        for table, column in conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"
        ).fetchall():
            found.setdefault(table, ([], []))[0].append(column)
        constraints: dict[tuple[str, str], list[str]] = {}
        for table, name, column in conn.execute(
            "SELECT c.table_name, c.constraint_name, k.column_name "
            "FROM information_schema.table_constraints c "
            "JOIN information_schema.key_column_usage k ON k.table_schema = c.table_schema "
            "AND k.table_name = c.table_name AND k.constraint_name = c.constraint_name "
            "WHERE c.table_schema = 'public' AND c.constraint_type IN ('PRIMARY KEY', 'UNIQUE') "
            "ORDER BY c.table_name, c.constraint_name, k.ordinal_position"
        ).fetchall():
            constraints.setdefault((table, name), []).append(column)
        # Unique indexes that are not constraints (CREATE UNIQUE INDEX) are unique all the same.
        for table, name, columns in conn.execute(
            "SELECT t.relname, i.relname, array_agg(a.attname ORDER BY k.n) "
            "FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
            "JOIN pg_class t ON t.oid = x.indrelid "
            "JOIN pg_namespace s ON s.oid = t.relnamespace AND s.nspname = 'public' "
            "CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(attnum, n) "
            "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum "
            "WHERE x.indisunique GROUP BY t.relname, i.relname"
        ).fetchall():
            constraints.setdefault((table, name), list(columns))
    for (table, _), columns in constraints.items():
        found[table][1].append(columns)
    return found


def test_postgres_migrations_build_the_logical_schema(pg_url: str) -> None:
    from engrammar.store.postgres.store import PostgresStore

    store = PostgresStore(pg_url)
    store.check_embedder("test", 8)
    store.close()
    assert differences("postgresql", _postgres_schema(pg_url)) == []


def test_an_older_postgres_store_opens_migrated_with_its_memories(pg_url: str) -> None:
    # A database as a release with the first eleven migrations left it (before the keyword
    # statistics per term, the vector buckets, postings and the change log), holding a memory.
    import psycopg

    from engrammar.models import Scope
    from engrammar.store.postgres.migrations import MIGRATIONS as PG_MIGRATIONS
    from engrammar.store.postgres.search import analysed
    from engrammar.store.postgres.store import PostgresStore

    older = [m for m in PG_MIGRATIONS if m.__name__ < "m012"]
    assert 0 < len(older) < len(PG_MIGRATIONS)
    terms, doc_len = analysed("Alice lives in Paris", {})
    with psycopg.connect(pg_url) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(
            "CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
        )
        for migration in older:
            migration(conn)
            conn.execute(
                "INSERT INTO migrations VALUES (%s, %s)", (migration.__name__, time.time())
            )
        conn.execute(
            "INSERT INTO memories (id, workspace, user_id, role, content, created_at, "
            "updated_at, dedup_key, embedding, terms, doc_len) "
            "VALUES ('m1', 'w', 'u', 'user', 'Alice lives in Paris', 1.0, 1.0, 'k1', "
            "'[1,0,0,0,0,0,0,0]', %s::tsvector, %s)",
            (terms, doc_len),
        )
    store = PostgresStore(pg_url)
    try:
        store.check_embedder("test", 8)
        assert store.applied_migrations() == [m.__name__ for m in PG_MIGRATIONS]
        scope = Scope(workspace="w", user_id="u")
        assert store.get_memories("w", ["m1"])["m1"].content == "Alice lives in Paris"
        assert [h[0] for h in store.keyword_search(scope, "paris", 5)] == ["m1"]
        query = np.eye(8, dtype=np.float32)[0]
        assert [h[0] for h in store.vector_search(scope, query, 5)] == ["m1"]
    finally:
        store.close()
    assert differences("postgresql", _postgres_schema(pg_url)) == []


#: The migration that gave decision links their workspace key.
MIGRATION_006 = next(m for m in MIGRATIONS if m.__name__.startswith("m006_"))


def test_the_schema_check_sees_the_old_decision_link_key(tmp_path: Path) -> None:
    # Before m006 the embedded store keyed decision links by (event, answer), without the
    # workspace column the PostgreSQL store has: the check names it.
    _migrated_to(tmp_path / "old.db", [m for m in MIGRATIONS if m is not MIGRATION_006])
    with sqlite3.connect(tmp_path / "old.db") as conn:
        found = differences("sqlite", _sqlite_schema(conn))
    assert sorted(found) == [
        "decision_memories: columns [] unexpected, ['workspace'] missing",
    ]


def test_decision_links_keep_their_data_through_the_workspace_key(tmp_path: Path) -> None:
    file = tmp_path / "old.db"
    _migrated_to(file, MIGRATIONS[: MIGRATIONS.index(MIGRATION_006)])
    vector = np.ones(8, dtype=np.float32).tobytes()
    with sqlite3.connect(file) as conn:
        for memory_id, workspace in (("m1", "w1"), ("m2", "w2")):
            conn.execute(
                "INSERT INTO memories (id, workspace, role, content, created_at, updated_at, "
                "dedup_key, embedding) VALUES (?, ?, 'user', 'a decision', 1.0, 1.0, ?, ?)",
                (memory_id, workspace, f"k-{memory_id}", vector),
            )
        conn.execute(
            "INSERT INTO feedback_events (id, workspace, input_context, ai_output, state, "
            "payload_hash, created_at, context_embedding, ai_output_embedding) "
            "VALUES ('e1', 'w1', 'which db?', 'sqlite', 'adopted', 'h', 2.0, ?, ?)",
            (vector, vector),
        )
        conn.executemany(
            "INSERT INTO decision_memories (event_id, answer, memory_id, created_at) "
            "VALUES (?, ?, ?, ?)",
            # The second link's event is gone: it keeps its memory's workspace.
            [("e1", "ai_output", "m1", 3.0), ("e-gone", "corrected", "m2", 4.0)],
        )
    store = SQLiteStore(file)
    try:
        assert store.applied_migrations() == sorted(m.__name__ for m in MIGRATIONS)
        event = store.get_feedback_record("feedback_event", "w1", "e1")
        assert event.decision_memory_id == "m1"  # type: ignore[union-attr]
        assert store.integrity_check() == "ok"
    finally:
        store.close()
    with sqlite3.connect(file) as conn:
        rows = conn.execute(
            "SELECT workspace, event_id, answer, memory_id, created_at FROM decision_memories "
            "ORDER BY created_at"
        ).fetchall()
        assert rows == [
            ("w1", "e1", "ai_output", "m1", 3.0),
            ("w2", "e-gone", "corrected", "m2", 4.0),
        ]
        assert differences("sqlite", _sqlite_schema(conn)) == []


def test_the_records_read_only_columns_of_the_logical_schema() -> None:
    # The select lists follow the records' fields; each must be a column the schema declares.
    reads = {t: cols for t, cols, _ in FEEDBACK_TABLES.values()} | {"memories": MEMORY_COLUMNS}
    for table, columns in reads.items():
        missing = [c for c in columns.split(", ") if c not in TABLES[table].columns]
        assert not missing, f"{table} reads {missing}, which the schema does not declare"
    fields = [f.name for f in dataclasses.fields(models.MemoryRating)]
    assert FEEDBACK_TABLES["memory_rating"][1].split(", ") == fields
    assert "decision_memory_id" not in EVENT_COLUMNS.split(", ")


def test_a_memory_row_becomes_the_record_field_by_field() -> None:
    # memory_record maps the columns by position: each column must land in its own field.
    columns = MEMORY_COLUMNS.split(", ")
    row = [f"{c} value" for c in columns]
    row[columns.index("created_at")], row[columns.index("updated_at")] = 1.5, 2.5
    row[columns.index("valid_until")] = 3.5
    record = memory_record(row, {"decoded": True})
    for column, value in zip(columns, row, strict=True):
        expected = {"decoded": True} if column == "metadata" else value
        assert getattr(record, column) == expected, column

"""Schema migrations of the SQLite store, applied in order, each once, each in a transaction.

A migration is a function named ``mNNN_what_it_does``; the store records its name in the
``migrations`` table. Never edit a released migration: add a new one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable


def _run(conn: sqlite3.Connection, *statements: str) -> None:
    # Not executescript(): it would commit the migration's transaction half-way.
    for statement in statements:
        conn.execute(statement)


def m001_create_tables(conn: sqlite3.Connection) -> None:
    _run(
        conn,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)
        """,
        """
        CREATE TABLE memories (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                workspace TEXT NOT NULL,
                user_id TEXT,
                agent_id TEXT,
                session_id TEXT,
                role TEXT NOT NULL,
                content TEXT NOT NULL,
                kind TEXT NOT NULL DEFAULT 'message',
                status TEXT NOT NULL DEFAULT 'active',
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                metadata TEXT NOT NULL DEFAULT '{}',
                dedup_key TEXT NOT NULL UNIQUE,
                embedding BLOB NOT NULL
            )
        """,
        """
        CREATE INDEX memories_scope ON memories (workspace, user_id, agent_id, session_id, seq)
        """,
        """
        CREATE VIRTUAL TABLE memories_fts USING fts5 (
                content, content = 'memories', content_rowid = 'seq', tokenize = 'porter unicode61'
            )
        """,
        """
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
                INSERT INTO memories_fts (rowid, content) VALUES (new.seq, new.content);
            END
        """,
        """
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
                INSERT INTO memories_fts (memories_fts, rowid, content)
                VALUES ('delete', old.seq, old.content);
            END
        """,
        """
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF content ON memories BEGIN
                INSERT INTO memories_fts (memories_fts, rowid, content)
                VALUES ('delete', old.seq, old.content);
                INSERT INTO memories_fts (rowid, content) VALUES (new.seq, new.content);
            END
        """,
        """
        CREATE TABLE memory_changes (
                rev INTEGER PRIMARY KEY AUTOINCREMENT,
                memory_id TEXT NOT NULL,
                workspace TEXT NOT NULL,
                user_id TEXT,
                op TEXT NOT NULL,
                before TEXT,
                after TEXT,
                reason TEXT NOT NULL DEFAULT '',
                created_at REAL NOT NULL
            )
        """,
        """
        CREATE INDEX memory_changes_scope ON memory_changes (workspace, user_id, rev)
        """,
        """
        CREATE INDEX memory_changes_memory ON memory_changes (memory_id, rev)
        """,
        """
        CREATE TABLE edges (
                workspace TEXT NOT NULL,
                src TEXT NOT NULL,
                dst TEXT NOT NULL,
                kind TEXT NOT NULL,
                weight REAL NOT NULL,
                updated_at REAL NOT NULL,
                PRIMARY KEY (src, dst, kind)
            )
        """,
        """
        CREATE INDEX edges_dst ON edges (dst)
        """,
        """
        CREATE TABLE recalls (
                id TEXT PRIMARY KEY,
                workspace TEXT NOT NULL,
                user_id TEXT,
                agent_id TEXT,
                session_id TEXT,
                query TEXT NOT NULL,
                created_at REAL NOT NULL,
                memory_ids TEXT NOT NULL,
                paths TEXT NOT NULL,
                tensions TEXT NOT NULL,
                consumed_at REAL
            )
        """,
        """
        CREATE INDEX recalls_scope ON recalls (workspace, user_id, created_at)
        """,
    )


def m003_api_keys(conn: sqlite3.Connection) -> None:
    # Only a hash of each key is kept; key_id (the key's public prefix) finds the row.
    _run(
        conn,
        """
        CREATE TABLE api_keys (
                key_id TEXT PRIMARY KEY,
                key_hash TEXT NOT NULL,
                workspace TEXT NOT NULL,
                user_id TEXT,
                name TEXT NOT NULL DEFAULT '',
                created_at REAL NOT NULL,
                revoked_at REAL
            )
        """,
        """
        CREATE INDEX api_keys_workspace ON api_keys (workspace, created_at)
        """,
    )


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [m001_create_tables, m003_api_keys]

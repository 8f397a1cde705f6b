"""Schema migrations of the SQLite store, applied in order, each once, each in a transaction.

A migration is a function named ``mNNN_what_it_does``; the store records its name in the
``migrations`` table. Never edit a released migration: add a new one.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

from ..tables import SOURCED_TABLES
from .index_terms import memory_terms


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


def m002_feedback_records(conn: sqlite3.Connection) -> None:
    """Append-only feedback records and the decision memories events create."""
    _run(
        conn,
        """
        CREATE TABLE feedback_events (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                workspace TEXT NOT NULL,
                user_id TEXT,
                agent_id TEXT,
                session_id TEXT,
                input_context TEXT NOT NULL,
                ai_output TEXT NOT NULL,
                user_reaction TEXT,
                user_correction TEXT,
                corrected_output TEXT,
                state TEXT NOT NULL,
                reason TEXT,
                source_event_id TEXT,
                payload_hash TEXT NOT NULL,
                metadata TEXT NOT NULL DEFAULT '{}',
                created_at REAL NOT NULL,
                context_embedding BLOB NOT NULL,
                ai_output_embedding BLOB NOT NULL,
                corrected_embedding BLOB,
                UNIQUE (workspace, source_event_id)
            )
        """,
        """
        CREATE INDEX feedback_events_scope ON feedback_events (workspace, user_id, seq)
        """,
        """
        CREATE TABLE decision_memories (
                event_id TEXT NOT NULL,
                answer TEXT NOT NULL,
                memory_id TEXT NOT NULL,
                created_at REAL NOT NULL,
                PRIMARY KEY (event_id, answer)
            )
        """,
        """
        CREATE TABLE decision_reviews (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                workspace TEXT NOT NULL,
                user_id TEXT,
                agent_id TEXT,
                event_id TEXT NOT NULL,
                final_decision TEXT NOT NULL,
                outcome TEXT NOT NULL,
                confidence REAL NOT NULL,
                reversed INTEGER NOT NULL,
                reason TEXT,
                decision_memory_id TEXT,
                created_at REAL NOT NULL
            )
        """,
        """
        CREATE INDEX decision_reviews_event ON decision_reviews (event_id, seq)
        """,
        """
        CREATE INDEX decision_reviews_scope ON decision_reviews (workspace, user_id, seq)
        """,
        """
        CREATE TABLE preference_pairs (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                workspace TEXT NOT NULL,
                user_id TEXT,
                agent_id TEXT,
                session_id TEXT,
                context TEXT NOT NULL,
                accepted_output TEXT NOT NULL,
                rejected_output TEXT NOT NULL,
                weight REAL NOT NULL,
                memory_id TEXT,
                created_at REAL NOT NULL,
                context_embedding BLOB NOT NULL,
                accepted_embedding BLOB NOT NULL,
                rejected_embedding BLOB NOT NULL
            )
        """,
        """
        CREATE INDEX preference_pairs_scope ON preference_pairs (workspace, user_id, seq)
        """,
        """
        CREATE TABLE logged_events (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                workspace TEXT NOT NULL,
                user_id TEXT,
                agent_id TEXT,
                session_id TEXT,
                kind TEXT NOT NULL,
                payload TEXT NOT NULL,
                created_at REAL NOT NULL
            )
        """,
        """
        CREATE INDEX logged_events_scope ON logged_events (workspace, user_id, seq)
        """,
        """
        CREATE TABLE memory_ratings (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                workspace TEXT NOT NULL,
                user_id TEXT,
                agent_id TEXT,
                session_id TEXT,
                memory_id TEXT NOT NULL,
                verdict TEXT NOT NULL,
                correction TEXT,
                correction_memory_id TEXT,
                weight REAL NOT NULL,
                recall_id TEXT,
                context TEXT,
                context_embedding BLOB,
                created_at REAL NOT NULL
            )
        """,
        """
        CREATE INDEX memory_ratings_memory ON memory_ratings (workspace, memory_id)
        """,
        """
        CREATE INDEX memory_ratings_scope ON memory_ratings (workspace, user_id, seq)
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


def m004_reply_signals(conn: sqlite3.Connection) -> None:
    """What each reply sent through ``feedback`` said about the memories of its recall, and
    indexes so recall reads only the signals of its candidates, newest first."""
    _run(
        conn,
        """
        CREATE TABLE reply_signals (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                workspace TEXT NOT NULL,
                user_id TEXT,
                agent_id TEXT,
                session_id TEXT,
                recall_id TEXT NOT NULL,
                memory_id TEXT NOT NULL,
                value REAL NOT NULL,
                alignment REAL NOT NULL,
                context_embedding BLOB NOT NULL,
                created_at REAL NOT NULL
            )
        """,
        """
        CREATE INDEX reply_signals_memory ON reply_signals (workspace, memory_id, created_at)
        """,
        """
        CREATE INDEX reply_signals_scope ON reply_signals (workspace, user_id, seq)
        """,
        """
        CREATE INDEX memory_ratings_memory_time ON memory_ratings (workspace, memory_id, created_at)
        """,
        """
        DROP INDEX memory_ratings_memory
        """,
    )


def m005_reply_signals_by_recall(conn: sqlite3.Connection) -> None:
    """Recall reads reply signals by recall: it finds the recalls whose query matches its own
    first, then reads just their signals. A reply says one thing per memory of its recall, so
    (recall, memory) is unique, which also makes importing an export twice add nothing."""
    _run(
        conn,
        """
        CREATE UNIQUE INDEX reply_signals_recall ON reply_signals (workspace, recall_id, memory_id)
        """,
    )


def m006_decision_memories_by_workspace(conn: sqlite3.Connection) -> None:
    """A decision link carries its event's workspace and is keyed by (workspace, event,
    answer), as in the PostgreSQL store: every read and delete names the workspace. Existing
    links take their event's workspace (or, for a link whose event is gone, their memory's)."""
    _run(
        conn,
        """
        CREATE TABLE decision_memories_keyed (
                workspace TEXT NOT NULL,
                event_id TEXT NOT NULL,
                answer TEXT NOT NULL,
                memory_id TEXT NOT NULL,
                created_at REAL NOT NULL,
                PRIMARY KEY (workspace, event_id, answer)
            )
        """,
        """
        INSERT INTO decision_memories_keyed (workspace, event_id, answer, memory_id, created_at)
        SELECT coalesce(
                   (SELECT e.workspace FROM feedback_events e WHERE e.id = d.event_id),
                   (SELECT m.workspace FROM memories m WHERE m.id = d.memory_id),
                   ''
               ),
               d.event_id, d.answer, d.memory_id, d.created_at
        FROM decision_memories d ORDER BY d.rowid
        """,
        """
        DROP TABLE decision_memories
        """,
        """
        ALTER TABLE decision_memories_keyed RENAME TO decision_memories
        """,
    )


def m007_edge_changes(conn: sqlite3.Connection) -> None:
    """Every change of an edge's weight by feedback, so the inspector can draw weights over
    time; rows of a forgotten memory go with it."""
    _run(
        conn,
        """
        CREATE TABLE edge_changes (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                workspace TEXT NOT NULL,
                src TEXT NOT NULL,
                dst TEXT NOT NULL,
                kind TEXT NOT NULL,
                delta REAL NOT NULL,
                weight REAL NOT NULL,
                recall_id TEXT,
                at REAL NOT NULL
            )
        """,
        """
        CREATE INDEX edge_changes_src ON edge_changes (workspace, src, at)
        """,
        """
        CREATE INDEX edge_changes_dst ON edge_changes (workspace, dst, at)
        """,
    )


def m008_knowledge(conn: sqlite3.Connection) -> None:
    """Knowledge bases: named documents of a scope, split into embedded chunks that recall and
    ``search_knowledge`` search beside the conversation memories."""
    _run(
        conn,
        """
        CREATE TABLE knowledge_bases (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL,
                workspace TEXT NOT NULL,
                user_id TEXT,
                agent_id TEXT,
                session_id TEXT,
                name TEXT NOT NULL,
                metadata TEXT NOT NULL DEFAULT '{}',
                chunk_count INTEGER NOT NULL,
                created_at REAL NOT NULL,
                UNIQUE (workspace, id)
            )
        """,
        """
        CREATE INDEX knowledge_bases_scope ON knowledge_bases (workspace, user_id, seq)
        """,
        """
        CREATE TABLE knowledge_chunks (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL,
                workspace TEXT NOT NULL,
                kb_id TEXT NOT NULL,
                position INTEGER NOT NULL,
                user_id TEXT,
                agent_id TEXT,
                session_id TEXT,
                content TEXT NOT NULL,
                metadata TEXT NOT NULL DEFAULT '{}',
                created_at REAL NOT NULL,
                embedding BLOB NOT NULL,
                UNIQUE (workspace, id)
            )
        """,
        """
        CREATE INDEX knowledge_chunks_scope ON knowledge_chunks (workspace, user_id, seq)
        """,
        """
        CREATE INDEX knowledge_chunks_kb ON knowledge_chunks (workspace, kb_id)
        """,
    )


def m009_memory_validity(conn: sqlite3.Connection) -> None:
    """When a memory stopped being current and what replaced it (facts that change)."""
    _run(
        conn,
        "ALTER TABLE memories ADD COLUMN valid_until REAL",
        "ALTER TABLE memories ADD COLUMN superseded_by TEXT",
        # Forgetting a memory makes what it replaced current again: found by this index.
        "CREATE INDEX memories_superseded_by ON memories (superseded_by) "
        "WHERE superseded_by IS NOT NULL",
    )


def m010_memories_by_kind(conn: sqlite3.Connection) -> None:
    """Recall reads a scope's newest standing preferences (kind ``preference``) on every call:
    an index by kind keeps that read from scanning every memory of the user."""
    _run(conn, "CREATE INDEX memories_kind ON memories (workspace, user_id, kind, seq)")


def m011_feedback_sources(conn: sqlite3.Connection) -> None:
    """Who gave each feedback record (``source``: an API key or an agent), and the weight of
    an edge before each logged change (``before``), so a record can be undone exactly."""
    _run(
        conn,
        *(f"ALTER TABLE {t} ADD COLUMN source TEXT" for t in SOURCED_TABLES),
        "ALTER TABLE edge_changes ADD COLUMN before REAL",
        "CREATE INDEX edge_changes_recall ON edge_changes (workspace, recall_id)",
    )


def m012_memory_chunks(conn: sqlite3.Connection) -> None:
    """The vectors of a long memory's windows past the first (``Config.chunk_chars``): vector
    search scores a memory by the best of its own vector and these. Deleted with the memory."""
    _run(
        conn,
        """
        CREATE TABLE memory_chunks (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                workspace TEXT NOT NULL,
                memory_id TEXT NOT NULL,
                position INTEGER NOT NULL,
                user_id TEXT,
                agent_id TEXT,
                session_id TEXT,
                start_char INTEGER NOT NULL,
                end_char INTEGER NOT NULL,
                embedding BLOB NOT NULL,
                UNIQUE (memory_id, position)
            )
        """,
        "CREATE INDEX memory_chunks_scope ON memory_chunks (workspace, user_id, seq)",
        """
        CREATE TRIGGER memory_chunks_forget AFTER DELETE ON memories BEGIN
                DELETE FROM memory_chunks WHERE memory_id = old.id;
            END
        """,
    )


def m013_index_terms(conn: sqlite3.Connection) -> None:
    """Each memory's keyword terms beside it (:mod:`.index_terms`): a partition's load into
    the in-process index reads them instead of analysing every text again. Filled here for
    the memories already stored; emptied by a trigger when a memory's content or metadata
    changes without them (an older release's update), so they are never stale."""
    _run(
        conn,
        "ALTER TABLE memories ADD COLUMN index_terms TEXT",
        """
        CREATE TRIGGER memories_index_terms_stale AFTER UPDATE OF content, metadata ON memories
            WHEN new.index_terms IS old.index_terms BEGIN
                UPDATE memories SET index_terms = NULL WHERE seq = new.seq;
            END
        """,
    )
    rows = conn.execute("SELECT seq, content, metadata FROM memories").fetchall()
    for start in range(0, len(rows), 10_000):
        values = []
        for seq, content, metadata in rows[start : start + 10_000]:
            decoded = json.loads(metadata) if metadata and metadata != "{}" else None
            values.append((memory_terms(content, decoded), seq))
        conn.executemany("UPDATE memories SET index_terms = ? WHERE seq = ?", values)


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    m001_create_tables,
    m002_feedback_records,
    m003_api_keys,
    m004_reply_signals,
    m005_reply_signals_by_recall,
    m006_decision_memories_by_workspace,
    m007_edge_changes,
    m008_knowledge,
    m009_memory_validity,
    m010_memories_by_kind,
    m011_feedback_sources,
    m012_memory_chunks,
    m013_index_terms,
]

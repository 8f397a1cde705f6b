"""Schema migrations of the PostgreSQL store, applied in order, each once, each in a transaction.

A migration is a function named ``mNNN_what_it_does``; the store records its name in the
``migrations`` table. Never edit a released migration: add a new one. The list is separate
from SQLite's (:mod:`..sqlite.migrations`) because the two schemas differ in types and indexes, but it
mirrors it table for table so that :mod:`..migrate` can copy one store into the other.

Every key includes ``workspace`` so that the tables can be distributed by workspace (Citus
requires unique constraints to contain the distribution column).
"""

from __future__ import annotations

from collections.abc import Callable

from ..tables import SOURCED_TABLES
from .connection import Conn
from .vectors import VECTOR_STORAGE, create_vector_indexes, hnsw_options


def _run(conn: Conn, *statements: str) -> None:
    for statement in statements:
        conn.execute(statement)


def m001_create_tables(conn: Conn) -> None:
    _run(
        conn,
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        # ``embedding`` gets its dimension (and its HNSW index) when the store first learns
        # which embedder it serves: see PostgresStore.check_embedder.
        """
        CREATE TABLE memories (
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            id TEXT NOT NULL,
            workspace TEXT NOT NULL,
            user_id TEXT,
            agent_id TEXT,
            session_id TEXT,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT 'message',
            status TEXT NOT NULL DEFAULT 'active',
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            metadata JSONB NOT NULL DEFAULT '{}',
            dedup_key TEXT NOT NULL,
            embedding vector NOT NULL,
            terms TSVECTOR NOT NULL,
            doc_len INTEGER NOT NULL,
            PRIMARY KEY (workspace, id),
            UNIQUE (workspace, dedup_key)
        )
        """,
        "CREATE INDEX memories_scope ON memories (workspace, user_id, agent_id, session_id, seq)",
        "CREATE INDEX memories_seq ON memories (workspace, seq)",
        "CREATE INDEX memories_terms ON memories USING gin (terms)",
        # BM25 needs, per (workspace, user) partition, the number of active memories and their
        # total length; a trigger keeps them exact with atomic increments in the writer's
        # transaction instead of a count over the partition on every query.
        """
        CREATE TABLE keyword_stats (
            workspace TEXT NOT NULL,
            user_key TEXT NOT NULL,
            n BIGINT NOT NULL,
            total_len BIGINT NOT NULL,
            PRIMARY KEY (workspace, user_key)
        )
        """,
        """
        CREATE FUNCTION engrammar_keyword_stats() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'active' THEN
                UPDATE keyword_stats SET n = n - 1, total_len = total_len - OLD.doc_len
                WHERE workspace = OLD.workspace AND user_key = coalesce(OLD.user_id, '');
            END IF;
            IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.status = 'active' THEN
                INSERT INTO keyword_stats AS s (workspace, user_key, n, total_len)
                VALUES (NEW.workspace, coalesce(NEW.user_id, ''), 1, NEW.doc_len)
                ON CONFLICT (workspace, user_key)
                DO UPDATE SET n = s.n + 1, total_len = s.total_len + excluded.total_len;
            END IF;
            RETURN NULL;
        END
        $$
        """,
        """
        CREATE TRIGGER memories_keyword_stats
        AFTER INSERT OR DELETE OR UPDATE OF status, doc_len, user_id, workspace ON memories
        FOR EACH ROW EXECUTE FUNCTION engrammar_keyword_stats()
        """,
        """
        CREATE TABLE memory_changes (
            rev BIGINT GENERATED ALWAYS AS IDENTITY,
            memory_id TEXT NOT NULL,
            workspace TEXT NOT NULL,
            user_id TEXT,
            op TEXT NOT NULL,
            before TEXT,
            after TEXT,
            reason TEXT NOT NULL DEFAULT '',
            created_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (workspace, rev)
        )
        """,
        "CREATE INDEX memory_changes_memory ON memory_changes (workspace, memory_id, rev)",
        """
        CREATE TABLE edges (
            workspace TEXT NOT NULL,
            src TEXT NOT NULL,
            dst TEXT NOT NULL,
            kind TEXT NOT NULL,
            weight DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (workspace, src, dst, kind)
        )
        """,
        "CREATE INDEX edges_dst ON edges (workspace, dst)",
        """
        CREATE TABLE recalls (
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            id TEXT NOT NULL,
            workspace TEXT NOT NULL,
            user_id TEXT,
            agent_id TEXT,
            session_id TEXT,
            query TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            memory_ids JSONB NOT NULL,
            paths JSONB NOT NULL,
            tensions JSONB NOT NULL,
            consumed_at DOUBLE PRECISION,
            PRIMARY KEY (workspace, id)
        )
        """,
        "CREATE INDEX recalls_scope ON recalls (workspace, user_id, created_at)",
    )


def m002_feedback_records(conn: Conn) -> None:
    """Append-only feedback records and the decision memories events create."""
    # Vectors of the records are read whole by learning_facts (no index): untyped ``vector``.
    _run(
        conn,
        """
        CREATE TABLE feedback_events (
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            id TEXT NOT NULL,
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
            metadata JSONB NOT NULL DEFAULT '{}',
            created_at DOUBLE PRECISION NOT NULL,
            context_embedding vector NOT NULL,
            ai_output_embedding vector NOT NULL,
            corrected_embedding vector,
            PRIMARY KEY (workspace, id),
            UNIQUE (workspace, source_event_id)
        )
        """,
        "CREATE INDEX feedback_events_scope ON feedback_events (workspace, user_id, seq)",
        """
        CREATE TABLE decision_memories (
            workspace TEXT NOT NULL,
            event_id TEXT NOT NULL,
            answer TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (workspace, event_id, answer)
        )
        """,
        """
        CREATE TABLE decision_reviews (
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            id TEXT NOT NULL,
            workspace TEXT NOT NULL,
            user_id TEXT,
            agent_id TEXT,
            event_id TEXT NOT NULL,
            final_decision TEXT NOT NULL,
            outcome TEXT NOT NULL,
            confidence DOUBLE PRECISION NOT NULL,
            reversed BOOLEAN NOT NULL,
            reason TEXT,
            decision_memory_id TEXT,
            created_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (workspace, id)
        )
        """,
        "CREATE INDEX decision_reviews_event ON decision_reviews (workspace, event_id, seq)",
        "CREATE INDEX decision_reviews_scope ON decision_reviews (workspace, user_id, seq)",
        """
        CREATE TABLE preference_pairs (
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            id TEXT NOT NULL,
            workspace TEXT NOT NULL,
            user_id TEXT,
            agent_id TEXT,
            session_id TEXT,
            context TEXT NOT NULL,
            accepted_output TEXT NOT NULL,
            rejected_output TEXT NOT NULL,
            weight DOUBLE PRECISION NOT NULL,
            memory_id TEXT,
            created_at DOUBLE PRECISION NOT NULL,
            context_embedding vector NOT NULL,
            accepted_embedding vector NOT NULL,
            rejected_embedding vector NOT NULL,
            PRIMARY KEY (workspace, id)
        )
        """,
        "CREATE INDEX preference_pairs_scope ON preference_pairs (workspace, user_id, seq)",
        """
        CREATE TABLE logged_events (
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            id TEXT NOT NULL,
            workspace TEXT NOT NULL,
            user_id TEXT,
            agent_id TEXT,
            session_id TEXT,
            kind TEXT NOT NULL,
            payload JSONB NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (workspace, id)
        )
        """,
        "CREATE INDEX logged_events_scope ON logged_events (workspace, user_id, seq)",
        """
        CREATE TABLE memory_ratings (
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            id TEXT NOT NULL,
            workspace TEXT NOT NULL,
            user_id TEXT,
            agent_id TEXT,
            session_id TEXT,
            memory_id TEXT NOT NULL,
            verdict TEXT NOT NULL,
            correction TEXT,
            correction_memory_id TEXT,
            weight DOUBLE PRECISION NOT NULL,
            recall_id TEXT,
            context TEXT,
            context_embedding vector,
            created_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (workspace, id)
        )
        """,
        "CREATE INDEX memory_ratings_memory ON memory_ratings (workspace, memory_id)",
        "CREATE INDEX memory_ratings_scope ON memory_ratings (workspace, user_id, seq)",
    )


def m003_api_keys(conn: Conn) -> None:
    # Keys are looked up by key_id alone (before the workspace is known): with Citus this is a
    # reference table. Only a hash of each key is kept.
    _run(
        conn,
        """
        CREATE TABLE api_keys (
            key_id TEXT PRIMARY KEY,
            key_hash TEXT NOT NULL,
            workspace TEXT NOT NULL,
            user_id TEXT,
            name TEXT NOT NULL DEFAULT '',
            created_at DOUBLE PRECISION NOT NULL,
            revoked_at DOUBLE PRECISION
        )
        """,
        "CREATE INDEX api_keys_workspace ON api_keys (workspace, created_at)",
    )


def m004_reply_signals(conn: Conn) -> None:
    """What each reply sent through ``feedback`` said about the memories of its recall, and
    indexes so recall reads only the signals of its candidates, newest first."""
    _run(
        conn,
        """
        CREATE TABLE reply_signals (
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            workspace TEXT NOT NULL,
            user_id TEXT,
            agent_id TEXT,
            session_id TEXT,
            recall_id TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            value DOUBLE PRECISION NOT NULL,
            alignment DOUBLE PRECISION NOT NULL,
            context_embedding vector NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (workspace, seq)
        )
        """,
        "CREATE INDEX reply_signals_memory ON reply_signals (workspace, memory_id, created_at)",
        "CREATE INDEX reply_signals_scope ON reply_signals (workspace, user_id, seq)",
        "CREATE INDEX memory_ratings_memory_time ON memory_ratings "
        "(workspace, memory_id, created_at)",
        "DROP INDEX memory_ratings_memory",
    )


def m005_reply_signals_by_recall(conn: Conn) -> None:
    """Recall reads reply signals by recall: it finds the recalls whose query matches its own
    first, then reads just their signals. A reply says one thing per memory of its recall, so
    (recall, memory) is unique, which also makes importing an export twice add nothing."""
    _run(
        conn,
        "CREATE UNIQUE INDEX reply_signals_recall ON reply_signals "
        "(workspace, recall_id, memory_id)",
    )


def m006_edge_changes(conn: Conn) -> None:
    """Every change of an edge's weight by feedback, so the inspector can draw weights over
    time; rows of a forgotten memory go with it."""
    _run(
        conn,
        """
        CREATE TABLE edge_changes (
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            workspace TEXT NOT NULL,
            src TEXT NOT NULL,
            dst TEXT NOT NULL,
            kind TEXT NOT NULL,
            delta DOUBLE PRECISION NOT NULL,
            weight DOUBLE PRECISION NOT NULL,
            recall_id TEXT,
            at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (workspace, seq)
        )
        """,
        "CREATE INDEX edge_changes_src ON edge_changes (workspace, src, at)",
        "CREATE INDEX edge_changes_dst ON edge_changes (workspace, dst, at)",
    )


def m007_knowledge(conn: Conn) -> None:
    """Knowledge bases: named documents of a scope, split into embedded chunks that recall and
    ``search_knowledge`` search beside the conversation memories (read whole per scope: an
    untyped ``vector``, no index)."""
    _run(
        conn,
        """
        CREATE TABLE knowledge_bases (
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            id TEXT NOT NULL,
            workspace TEXT NOT NULL,
            user_id TEXT,
            agent_id TEXT,
            session_id TEXT,
            name TEXT NOT NULL,
            metadata JSONB NOT NULL DEFAULT '{}',
            chunk_count INTEGER NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (workspace, id)
        )
        """,
        "CREATE INDEX knowledge_bases_scope ON knowledge_bases (workspace, user_id, seq)",
        """
        CREATE TABLE knowledge_chunks (
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            id TEXT NOT NULL,
            workspace TEXT NOT NULL,
            kb_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            user_id TEXT,
            agent_id TEXT,
            session_id TEXT,
            content TEXT NOT NULL,
            metadata JSONB NOT NULL DEFAULT '{}',
            created_at DOUBLE PRECISION NOT NULL,
            embedding vector NOT NULL,
            PRIMARY KEY (workspace, id)
        )
        """,
        "CREATE INDEX knowledge_chunks_scope ON knowledge_chunks (workspace, user_id, seq)",
        "CREATE INDEX knowledge_chunks_kb ON knowledge_chunks (workspace, kb_id)",
    )


def m008_memory_validity(conn: Conn) -> None:
    """When a memory stopped being current and what replaced it (facts that change)."""
    _run(
        conn,
        "ALTER TABLE memories ADD COLUMN valid_until DOUBLE PRECISION",
        "ALTER TABLE memories ADD COLUMN superseded_by TEXT",
        "CREATE INDEX memories_superseded_by ON memories (workspace, superseded_by) "
        "WHERE superseded_by IS NOT NULL",
    )


def m009_feedback_sources(conn: Conn) -> None:
    """Who gave each feedback record (``source``: an API key or an agent), and the weight of
    an edge before each logged change (``before``), so a record can be undone exactly."""
    _run(
        conn,
        *(f"ALTER TABLE {t} ADD COLUMN source TEXT" for t in SOURCED_TABLES),
        "ALTER TABLE edge_changes ADD COLUMN before DOUBLE PRECISION",
        "CREATE INDEX edge_changes_recall ON edge_changes (workspace, recall_id)",
    )


def m010_memories_by_kind(conn: Conn) -> None:
    """Recall reads a scope's newest standing preferences (kind ``preference``) on every call:
    an index by kind keeps that read from scanning every memory of the user."""
    _run(conn, "CREATE INDEX memories_kind ON memories (workspace, user_id, kind, seq)")


def m011_memory_chunks(conn: Conn) -> None:
    """The vectors of a long memory's windows past the first (``Config.chunk_chars``): vector
    search scores a memory by the best of its own vector and these (scanned exactly within
    the searched scope: an untyped ``vector``, no index). Deleted with the memory."""
    _run(
        conn,
        """
        CREATE TABLE memory_chunks (
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            workspace TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            user_id TEXT,
            agent_id TEXT,
            session_id TEXT,
            start_char INTEGER NOT NULL,
            end_char INTEGER NOT NULL,
            embedding vector NOT NULL,
            PRIMARY KEY (workspace, memory_id, position),
            FOREIGN KEY (workspace, memory_id) REFERENCES memories (workspace, id)
                ON DELETE CASCADE
        )
        """,
        "CREATE INDEX memory_chunks_scope ON memory_chunks (workspace, user_id, seq)",
    )


def m012_keyword_terms(conn: Conn) -> None:
    """Per (workspace, user) partition and term, how many active memories hold the term (BM25's
    document frequency), kept exact by a trigger like ``keyword_stats``. Keyword search reads
    the frequencies instead of counting every row that matches a common term, and so can rank
    the rows of its rare terms first and skip the common ones when they cannot reach the top
    (see ``PostgresSearch.keyword_search``)."""
    _run(
        conn,
        """
        CREATE TABLE keyword_terms (
            workspace TEXT NOT NULL,
            user_key TEXT NOT NULL,
            term TEXT NOT NULL,
            df BIGINT NOT NULL,
            PRIMARY KEY (workspace, user_key, term)
        )
        """,
        """
        CREATE FUNCTION engrammar_keyword_terms() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'active' THEN
                UPDATE keyword_terms SET df = df - 1
                WHERE workspace = OLD.workspace AND user_key = coalesce(OLD.user_id, '')
                  AND term IN (SELECT lexeme FROM unnest(OLD.terms));
            END IF;
            IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.status = 'active' THEN
                -- In term order, so that two writers of one partition lock rows alike.
                INSERT INTO keyword_terms AS k (workspace, user_key, term, df)
                SELECT NEW.workspace, coalesce(NEW.user_id, ''), lexeme, 1
                FROM unnest(NEW.terms) ORDER BY lexeme
                ON CONFLICT (workspace, user_key, term) DO UPDATE SET df = k.df + 1;
            END IF;
            RETURN NULL;
        END
        $$
        """,
        """
        CREATE TRIGGER memories_keyword_terms
        AFTER INSERT OR DELETE OR UPDATE OF status, terms, user_id, workspace ON memories
        FOR EACH ROW EXECUTE FUNCTION engrammar_keyword_terms()
        """,
        """
        INSERT INTO keyword_terms (workspace, user_key, term, df)
        SELECT m.workspace, coalesce(m.user_id, ''), u.lexeme, count(*)
        FROM memories m CROSS JOIN LATERAL unnest(m.terms) AS u
        WHERE m.status = 'active' GROUP BY 1, 2, 3
        """,
    )


def m013_vector_buckets(conn: Conn) -> None:
    """Per-user vector search that stays fast in a large store (see :mod:`.vectors`):
    vectors stored inline (rows written from now on; ``VACUUM FULL memories`` moves the older
    ones), and the buckets' partial HNSW indexes beside the global one, built now when the
    store already has vectors (with the global index's parameters; this reads every memory
    once per bucket), else with the global index when the store learns its dimension."""
    _run(
        conn,
        f"ALTER TABLE memories ALTER COLUMN embedding SET STORAGE {VECTOR_STORAGE}",
        "ALTER TABLE memory_chunks ALTER COLUMN embedding SET STORAGE MAIN",
    )
    if conn.execute("SELECT to_regclass('memories_embedding_hnsw')").fetchone() != (None,):
        create_vector_indexes(conn, *hnsw_options(conn, 16, 64))


def m014_keyword_index_current(conn: Conn) -> None:
    """Keyword search's GIN index kept current on every write (``fastupdate`` off), its pending
    list flushed now. With the pending list (PostgreSQL's default) new rows' terms wait in an
    unsorted list, up to ``gin_pending_list_limit`` (4 MB: ~17,000 memories) of the whole
    table, until a vacuum or the write that overflows it merges them; every keyword search
    reads that whole list, for any user, and plans against its cost: at 10,000 memories in
    the list a search takes measurably longer."""
    _run(
        conn,
        "ALTER INDEX memories_terms SET (fastupdate = off)",
        "SELECT gin_clean_pending_list('memories_terms'::regclass)",
    )


def m015_vectors_inline_again(conn: Conn) -> None:
    """Vectors stored in the row again (m013's intent): a store that learned its embedder's
    dimension after m013 had ``ALTER COLUMN embedding TYPE vector(n)`` reset the column to
    ``vector``'s default storage (EXTERNAL), which moves the vector of most rows to TOAST, so
    an exact scan (a user below ``EXACT_MAX`` memories: an add's neighbours, a recall's vector
    search) read TOAST for every row: 3-4x slower at 1,800 memories. Rows written from now on
    keep theirs inline; ``VACUUM FULL memories`` moves the older ones."""
    _run(conn, f"ALTER TABLE memories ALTER COLUMN embedding SET STORAGE {VECTOR_STORAGE}")


def m016_keyword_postings(conn: Conn) -> None:
    """Keyword search's own postings: per (workspace, user) partition and term, one narrow row
    per active memory holding the term (its ``seq``, term frequency and length), kept exact by
    a trigger like ``keyword_terms``. Keyword search scores these rows by an
    index-only scan instead of reading each matching memory and unnesting all its terms
    (see :mod:`.keyword`), which in a large scope is most of the search's time."""
    _run(
        conn,
        """
        CREATE TABLE keyword_postings (
            workspace TEXT NOT NULL,
            user_key TEXT NOT NULL,
            term TEXT NOT NULL,
            seq BIGINT NOT NULL,
            tf INTEGER NOT NULL,
            doc_len INTEGER NOT NULL,
            PRIMARY KEY (workspace, user_key, term, seq) INCLUDE (tf, doc_len)
        )
        """,
        """
        CREATE FUNCTION engrammar_keyword_postings() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'active' THEN
                DELETE FROM keyword_postings
                WHERE workspace = OLD.workspace AND user_key = coalesce(OLD.user_id, '')
                  AND term IN (SELECT lexeme FROM unnest(OLD.terms)) AND seq = OLD.seq;
            END IF;
            IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.status = 'active' THEN
                INSERT INTO keyword_postings (workspace, user_key, term, seq, tf, doc_len)
                SELECT NEW.workspace, coalesce(NEW.user_id, ''), lexeme, NEW.seq,
                       cardinality(positions), NEW.doc_len
                FROM unnest(NEW.terms) ORDER BY lexeme;
            END IF;
            RETURN NULL;
        END
        $$
        """,
        """
        CREATE TRIGGER memories_keyword_postings
        AFTER INSERT OR DELETE OR UPDATE OF status, terms, doc_len, user_id, workspace, seq
        ON memories FOR EACH ROW EXECUTE FUNCTION engrammar_keyword_postings()
        """,
        """
        INSERT INTO keyword_postings (workspace, user_key, term, seq, tf, doc_len)
        SELECT m.workspace, coalesce(m.user_id, ''), u.lexeme, m.seq, cardinality(u.positions),
               m.doc_len
        FROM memories m CROSS JOIN LATERAL unnest(m.terms) AS u
        WHERE m.status = 'active'
        """,
        # Planned from the first search on (not after autovacuum's first visit).
        "ANALYZE keyword_postings",
    )


def m017_change_log(conn: Conn) -> None:
    """``change_log``: which memories, edge sources (of edges and of their logged changes) and
    chunked memories each write statement
    changed, with the writing transaction's id (``xid8``), so that a process holding a copy of
    a scope's graph (:mod:`.graph`) reads again only what changed since its last
    look. Statement-level triggers with transition tables: one row per statement and
    workspace. Rows older than an hour are pruned now and then by the writers themselves."""
    _run(
        conn,
        """
        CREATE TABLE change_log (
            workspace TEXT NOT NULL,
            xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
            tbl TEXT NOT NULL,
            ids TEXT[] NOT NULL,
            at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
        )
        """,
        "CREATE INDEX change_log_since ON change_log (workspace, xid)",
        "CREATE INDEX change_log_at ON change_log (at)",
    )
    for table, key, tag in (("memories", "id", "m"), ("edges", "src", "e"),
                            ("memory_chunks", "memory_id", "c"),
                            ("edge_changes", "src", "p")):  # fmt: skip
        _run(
            conn,
            f"""
            CREATE FUNCTION engrammar_log_{table}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP = 'DELETE' THEN
                    INSERT INTO change_log (workspace, tbl, ids)
                    SELECT workspace, '{tag}', array_agg(DISTINCT {key}) FROM old_rows
                    GROUP BY workspace;
                ELSE
                    INSERT INTO change_log (workspace, tbl, ids)
                    SELECT workspace, '{tag}', array_agg(DISTINCT {key}) FROM new_rows
                    GROUP BY workspace;
                END IF;
                IF random() < 0.01 THEN
                    DELETE FROM change_log WHERE ctid = ANY(ARRAY(
                        SELECT ctid FROM change_log WHERE at < clock_timestamp() - interval '1 hour'
                        LIMIT 1000 FOR UPDATE SKIP LOCKED));
                END IF;
                RETURN NULL;
            END
            $$
            """,
            f"CREATE TRIGGER {table}_log_insert AFTER INSERT ON {table} REFERENCING NEW TABLE "
            f"AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION engrammar_log_{table}()",
            f"CREATE TRIGGER {table}_log_update AFTER UPDATE ON {table} REFERENCING NEW TABLE "
            f"AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION engrammar_log_{table}()",
            f"CREATE TRIGGER {table}_log_delete AFTER DELETE ON {table} REFERENCING OLD TABLE "
            f"AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION engrammar_log_{table}()",
        )


def m018_keyword_insert_per_statement(conn: Conn) -> None:
    """The keyword tables (``keyword_stats``, ``keyword_terms``, ``keyword_postings``) kept for
    new memories by one statement-level trigger (a transition table of the inserted rows)
    instead of three row triggers, three calls per row: 1,000 rows inserted at 3,000-4,000
    memories took 0.78-0.86 s instead of 0.93-1.01 s. Each table is written once per insert,
    in key order (two writers of one partition lock its rows alike). Updates and deletes keep
    the row triggers (their functions are unchanged)."""
    _run(
        conn,
        "DROP TRIGGER memories_keyword_stats ON memories",
        "DROP TRIGGER memories_keyword_terms ON memories",
        "DROP TRIGGER memories_keyword_postings ON memories",
        """
        CREATE TRIGGER memories_keyword_stats
        AFTER DELETE OR UPDATE OF status, doc_len, user_id, workspace ON memories
        FOR EACH ROW EXECUTE FUNCTION engrammar_keyword_stats()
        """,
        """
        CREATE TRIGGER memories_keyword_terms
        AFTER DELETE OR UPDATE OF status, terms, user_id, workspace ON memories
        FOR EACH ROW EXECUTE FUNCTION engrammar_keyword_terms()
        """,
        """
        CREATE TRIGGER memories_keyword_postings
        AFTER DELETE OR UPDATE OF status, terms, doc_len, user_id, workspace, seq
        ON memories FOR EACH ROW EXECUTE FUNCTION engrammar_keyword_postings()
        """,
        """
        CREATE FUNCTION engrammar_keyword_insert() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO keyword_stats AS s (workspace, user_key, n, total_len)
            SELECT workspace, coalesce(user_id, ''), count(*), sum(doc_len) FROM new_rows
            WHERE status = 'active' GROUP BY 1, 2 ORDER BY 1, 2
            ON CONFLICT (workspace, user_key)
            DO UPDATE SET n = s.n + excluded.n, total_len = s.total_len + excluded.total_len;
            INSERT INTO keyword_terms AS k (workspace, user_key, term, df)
            SELECT r.workspace, coalesce(r.user_id, ''), u.lexeme, count(*)
            FROM new_rows r CROSS JOIN LATERAL unnest(r.terms) AS u
            WHERE r.status = 'active' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
            ON CONFLICT (workspace, user_key, term) DO UPDATE SET df = k.df + excluded.df;
            INSERT INTO keyword_postings (workspace, user_key, term, seq, tf, doc_len)
            SELECT r.workspace, coalesce(r.user_id, ''), u.lexeme, r.seq,
                   cardinality(u.positions), r.doc_len
            FROM new_rows r CROSS JOIN LATERAL unnest(r.terms) AS u
            WHERE r.status = 'active' ORDER BY 1, 2, 3, 4;
            RETURN NULL;
        END
        $$
        """,
        """
        CREATE TRIGGER memories_keyword_insert AFTER INSERT ON memories
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
        EXECUTE FUNCTION engrammar_keyword_insert()
        """,
    )


MIGRATIONS: list[Callable[[Conn], None]] = [
    m001_create_tables,
    m002_feedback_records,
    m003_api_keys,
    m004_reply_signals,
    m005_reply_signals_by_recall,
    m006_edge_changes,
    m007_knowledge,
    m008_memory_validity,
    m009_feedback_sources,
    m010_memories_by_kind,
    m011_memory_chunks,
    m012_keyword_terms,
    m013_vector_buckets,
    m014_keyword_index_current,
    m015_vectors_inline_again,
    m016_keyword_postings,
    m017_change_log,
    m018_keyword_insert_per_statement,
]

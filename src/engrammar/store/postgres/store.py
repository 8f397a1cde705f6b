"""The scale-out store: PostgreSQL with pgvector, behind the same contract as SQLite.

* **Connections.** A psycopg 3 pool per process (``Config.pool_size``); every call borrows one
  connection and runs in one transaction, committed when the call returns and rolled back
  when it raises. A transaction that loses a deadlock or a serialization conflict is retried.
* **Vectors.** A ``vector(dim)`` column (inline) with HNSW indexes (cosine), made when the
  store learns its embedder's dimension: a global one, and partial ones per bucket of users
  that a user's query walks instead (:mod:`.vectors`). ``hnsw.ef_search`` is raised
  to the query's ``k``; iterative index scans keep filtered queries from coming back short.
* **Keywords.** The same analysis as the embedded store (:func:`engrammar.recall.text.terms`:
  stop words, Snowball stems) stored as a ``tsvector`` with positions (a GIN index finds the
  candidates), ranked with the same BM25 formula and parameters as the in-process index, per
  (workspace, user) partition. Partition sizes come from ``keyword_stats``, which a trigger
  keeps exact; so both stores return the same hits with the same scores.
* **Concurrency.** A weight change reads the edge ``FOR UPDATE`` and writes the clamped sum
  with the weight before it into ``edge_changes`` (undo replays that log): the row lock makes
  concurrent deltas add up with no lost update. Edges are locked in a fixed order so that two
  feedback calls cannot deadlock each other. Duplicate inserts collapse on unique constraints.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import partial
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from ...errors import ConflictError, NotFoundError, StoreError
from ...models import MemoryRecord, Scope, StoreFacts
from ..base import EdgeBounds, ImportBundle, MemoryUpdate, NewEdge, NewMemory, RecallRecord
from ..sql.store import apply_migrations
from ..tables import EDGE_CHANGE_KNOWN, MEMORY_COLUMNS, write_records
from .connection import Conn
from .copy import PostgresCopy
from .edges import PostgresEdges
from .graph import GRAPH_MAX
from .ingest import INSERT_MEMORIES, INSERT_MEMORY, collapse_repeats
from .migrations import MIGRATIONS
from .recall_write import LATE, RecallWrites
from .replicas import Replicas
from .reply import PostgresReply
from .search import (
    DIALECT,
    PostgresSearch,
    Vector,
    analysed,
    jsonb,
    pg_scope_where,
    redact_url,
    register_vector,
    write_chunks,
)
from .vectors import VECTOR_STORAGE, create_vector_indexes, drop_vector_indexes

__all__ = ["PostgresStore", "redact_url"]

T = TypeVar("T")

# Any constant works; it only has to be the same in every process that migrates the schema.
_MIGRATION_LOCK = 0x656E6772616D6D  # "engramm"
#: A write of this many new memories looks whether the planner's statistics still hold.
ANALYZE_MIN_ROWS = 500


class PostgresStore(RecallWrites, PostgresReply, PostgresSearch, PostgresCopy, PostgresEdges):
    """The PostgreSQL + pgvector store (see the module docstring and :class:`~..base.Store`).

    Args:
        url: a libpq connection URL (``postgresql://user:password@host:5432/db``).
        pool_size: most connections this process keeps open.
        bm25_k1, bm25_b: the BM25 parameters (the same as the embedded store's).
        hnsw_m, hnsw_ef_construction: HNSW build parameters, used when the index is created.
        hnsw_ef_search: candidates visited per vector query (raised to the query's ``k``).
        connect_timeout: seconds to wait for the server.
        scope_cache_bytes, scope_graph_max: the scope graphs this process keeps (see
            ``Config`` and ``.graph``).
    """

    _insert_edges = staticmethod(PostgresSearch._write_edges)

    dialect = DIALECT

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 10,
        bm25_k1: float = 1.2,
        bm25_b: float = 0.1,
        hnsw_m: int = 16,
        hnsw_ef_construction: int = 64,
        hnsw_ef_search: int = 100,
        connect_timeout: float = 10.0,
        replica_urls: Sequence[str] = (),
        replica_wait_ms: int = 200,
        scope_cache_bytes: int = 64 * 1024 * 1024,
        scope_graph_max: int = GRAPH_MAX,
    ) -> None:
        self.url = url
        self._graph_bytes = scope_cache_bytes  # bound of the scope graphs (.postgres_graph)
        self._graph_max = scope_graph_max
        self._k1 = bm25_k1
        self._b = bm25_b
        self._hnsw_m = hnsw_m
        self._hnsw_ef_construction = hnsw_ef_construction
        self._ef_search = hnsw_ef_search
        self._dim: int | None = None
        self._closed = False
        self._local = threading.local()  # this thread's read session (see .postgres_reads)
        self._lsn_lock = threading.Lock()
        self._migrate(connect_timeout)
        self._pool: ConnectionPool[Conn] = ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            # Autocommit: a one-statement call costs one round trip (no BEGIN/COMMIT); calls of
            # several statements open a transaction explicitly (see _tx).
            kwargs={"autocommit": True, "connect_timeout": int(connect_timeout)},
            configure=self._configure,
            timeout=max(connect_timeout, 30.0),
            open=False,
            name="engrammar",
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
        except PoolTimeout as exc:
            self._pool.close()
            raise StoreError(f"cannot connect to {redact_url(url)}: {exc}") from exc
        self._written = 0  # WAL insert position after this process's newest write
        self._replicas = Replicas(
            tuple(replica_urls),
            configure=self._configure,
            pool_size=pool_size,
            wait_s=replica_wait_ms / 1000.0,
            connect_timeout=min(connect_timeout, 2.0),
        )

    # -- connections -----------------------------------------------------------------------------
    def _configure(self, conn: Conn) -> None:
        register_vector(conn)
        # Session defaults, so that the usual vector query needs no SET of its own. Iterative
        # scans (pgvector 0.8+; older versions ignore the setting) keep filtered HNSW queries
        # from coming back short.
        # Custom plans always: the best plan of one statement depends on its scope (a small
        # user's rows scanned exactly, a whole workspace through HNSW), which a cached generic
        # plan cannot know; planning costs well under a millisecond.
        conn.execute(
            "SELECT set_config('hnsw.ef_search', %s, false), "
            "set_config('hnsw.iterative_scan', 'relaxed_order', false), "
            "set_config('plan_cache_mode', 'force_custom_plan', false)",
            (str(self._ef_search),),
        )

    def _migrate(self, connect_timeout: float) -> None:
        try:
            with psycopg.connect(
                self.url, autocommit=False, connect_timeout=int(connect_timeout)
            ) as conn:
                # One migrator at a time across processes; the others wait, then find it done.
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                has_vector = conn.execute(
                    "SELECT 1 FROM pg_extension WHERE extname = 'vector'"
                ).fetchone()
                if has_vector is None:
                    try:
                        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                    except (pg_errors.InsufficientPrivilege, pg_errors.FeatureNotSupported) as exc:
                        raise StoreError(
                            f"the pgvector extension is missing in {redact_url(self.url)} and "
                            f"this user cannot create it ({exc}); a superuser must run "
                            "CREATE EXTENSION vector once"
                        ) from exc
                    except pg_errors.UndefinedFile as exc:
                        raise StoreError(
                            "pgvector is not installed on the PostgreSQL server "
                            f"({exc}); install it (e.g. the postgresql-NN-pgvector package)"
                        ) from exc
                apply_migrations(conn, MIGRATIONS, DIALECT, "DOUBLE PRECISION NOT NULL")
                conn.commit()
        except psycopg.Error as exc:
            raise StoreError(f"cannot prepare the store {redact_url(self.url)}: {exc}") from exc

    def get_recall(self, scope: Scope, recall_id: str | None) -> RecallRecord | None:
        # Feedback acts on a recall another process may have made a moment ago: read it where
        # it was written.
        with self._on_primary():
            found = self._recall(scope, recall_id)
            if found is None and recall_id is not None:  # sent a moment ago by another process?
                time.sleep(LATE)
                found = self._recall(scope, recall_id)
            return found

    def _recall(self, scope: Scope, recall_id: str | None) -> RecallRecord | None:
        if self._snap(scope.workspace) is None:
            return super().get_recall(scope, recall_id)
        return self._session_recall(scope, recall_id)

    def close(self) -> None:
        if not self._closed:
            self._close_recall_writes()
            self._close_graphs()
            self._closed = True
            self._replicas.close()
            self._pool.close()

    def applied_migrations(self) -> list[str]:
        return self._read(
            "reading migrations",
            lambda c: [r[0] for r in c.execute("SELECT name FROM migrations ORDER BY name")],
        )

    def _run(
        self,
        what: str,
        fn: Callable[[Conn], T],
        *,
        write: bool = True,
        single: bool = False,
        snapshot: bool = False,
    ) -> T:
        if snapshot:
            # One snapshot for the whole read, like a single SQLite read transaction.
            def read(conn: Conn) -> T:
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                return fn(conn)

            return self._read(what, read, transaction=True)
        if write:
            return self._tx(what, fn, transaction=not single)
        return self._read(what, fn)

    def _read_together(self, what: str, send: Callable[[Conn], Callable[[], T]]) -> T:
        # BEGIN, the statements and COMMIT go in one pipeline: one round trip. The answers
        # arrive with it; the cursors hold them for ``send``'s reader.
        def read(conn: Conn) -> Callable[[], T]:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return send(conn)

        finish = self._read(what, read, transaction=True, pipeline=True)
        try:
            return finish()
        except psycopg.Error as exc:
            raise StoreError(f"{what} failed: {exc}") from exc

    def _cursor(self, conn: Conn) -> psycopg.Cursor[Any]:
        return conn.cursor(binary=True)

    def _vanished(self, what: str) -> None:
        raise pg_errors.SerializationFailure(what)

    def _location(self) -> str:
        return redact_url(self.url)

    def _store_facts(self, conn: Conn) -> StoreFacts:
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        facts: StoreFacts = {
            "store": "postgresql",
            "url": redact_url(self.url),
            "bytes_on_disk": size[0] if size else 0,
        }
        if self._replicas:
            facts["replicas"] = self._replicas.facts(redact_url)
        return facts

    def _link_decision(
        self, conn: Conn, workspace: str, event_id: str, answer: str, memory_id: str, now: float
    ) -> None:
        # Two reviews racing to link the same answer: the first link stands.
        linked = conn.execute(
            "INSERT INTO decision_memories (workspace, event_id, answer, memory_id, "
            "created_at) VALUES (%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING RETURNING memory_id",
            (workspace, event_id, answer, memory_id, now),
        ).fetchone()
        if linked is None:
            raise pg_errors.SerializationFailure("answer linked concurrently")

    # -- meta ------------------------------------------------------------------------------------
    def _lock_meta(self, conn: Conn) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))

    def _first_embedder(self, conn: Conn, dim: int) -> None:
        self._set_dimension(conn, dim)

    def _set_dimension(self, conn: Conn, dim: int) -> None:
        # Fixing the column's dimension is what lets pgvector build an HNSW index on it. A
        # new type brings its default storage (``vector``'s: out of line): inline again, as
        # m013 set it (an exact scan reads no TOAST).
        conn.execute(f"ALTER TABLE memories ALTER COLUMN embedding TYPE vector({int(dim)})")
        conn.execute(f"ALTER TABLE memories ALTER COLUMN embedding SET STORAGE {VECTOR_STORAGE}")
        self._create_hnsw(conn)

    def _create_hnsw(self, conn: Conn) -> None:
        create_vector_indexes(conn, self._hnsw_m, self._hnsw_ef_construction)

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Load many rows without the HNSW index, then build it once (several times faster
        than growing it row by row) and refresh the planner's statistics; vector searches
        meanwhile scan exactly. For migrations and first loads: other writers are not blocked,
        but their searches are slow."""
        if self._dim is None:
            yield
            return
        self._tx("dropping the vector indexes", drop_vector_indexes)
        try:
            yield
        finally:
            self._tx("building the vector indexes", self._create_hnsw)
            # Fresh statistics, or the planner may scan all vectors instead of using the index.
            self._tx("analyzing", lambda c: c.execute("ANALYZE memories"), transaction=False)

    # -- memories --------------------------------------------------------------------------------
    def add_memories(
        self, rows: Sequence[NewMemory], edges: Sequence[NewEdge] = ()
    ) -> list[tuple[str, bool]]:
        out = self._write_memories(rows, edges)
        created = sum(1 for _, new in out if new)
        if created >= ANALYZE_MIN_ROWS:
            self._analyze_if_outgrown(created)
        return out

    def _analyze_if_outgrown(self, created: int) -> None:
        """ANALYZE ``memories`` and its keyword tables when a write of ``created`` rows more
        than doubled what the planner's statistics know (a first import or large batch): with
        empty tables' statistics a freshly filled 10,000-memory scope recalled in ~260 ms
        p50, not ~16 ms, until autovacuum came (up to a minute later). The write has
        committed: a failure here is not raised."""

        def run(conn: Conn) -> None:
            known = conn.execute(
                "SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass"
            ).fetchone()
            if known is not None and known[0] < created:  # (the keyword tables weigh most)
                conn.execute("ANALYZE memories, keyword_postings, keyword_terms")

        with suppress(StoreError):
            self._tx("analyzing", run, transaction=False)

    def _write_memories(
        self, rows: Sequence[NewMemory], edges: Sequence[NewEdge]
    ) -> list[tuple[str, bool]]:
        # Every row new, the usual case: the whole transaction in one pipelined round trip
        # (in an add session, begun when the searches answered: see ``add_ahead``). A row
        # whose content the scope holds already (or twice in the batch) makes it fail on the
        # unique key, and it runs again collapsing duplicates (answers read on the way).
        ahead = self._finish_write(rows, edges)
        if not isinstance(ahead, bool):
            return ahead
        try:
            if ahead:  # (False: the write begun ahead met a duplicate)
                return self._tx(
                    "add", self._adder(rows, edges, fresh=True), pipeline=True, rerunnable=True
                )
        except StoreError as exc:
            clash = exc.__cause__
            if not (
                isinstance(clash, pg_errors.UniqueViolation) and clash.diag.table_name == "memories"
            ):
                raise
        return self._tx("add", self._adder(rows, edges), pipeline=True, rerunnable=True)

    def import_bundle(self, bundle: ImportBundle) -> list[tuple[str, bool]]:
        rows, edges, records = bundle.rows, bundle.edges, bundle.records
        add = self._adder(rows, edges)

        def run(conn: Conn) -> list[tuple[str, bool]]:
            out = add(conn)
            rename = {r.id: got for r, (got, _) in zip(rows, out, strict=True) if got != r.id}

            def insert(table: str, mine: list[dict[str, Any]]) -> None:
                sql, params = self._copy_insert(table, mine)
                if table == "edge_changes":
                    # No id of its own: a row already there is the same edge, time and recall.
                    fields, _ = self._copy_spec(table)
                    keys = ("workspace", "src", "dst", "kind", "at", "recall_id")
                    sql = sql.replace(" VALUES (", " SELECT ", 1)[:-1]
                    sql += f" WHERE NOT EXISTS ({EDGE_CHANGE_KNOWN.replace('?', '%s')})"
                    params = [[*p, *(p[fields.index(k)] for k in keys)] for p in params]
                with conn.cursor() as cur:
                    cur.executemany(sql + " ON CONFLICT DO NOTHING", params)

            write_records(records, rename, insert, partial(self._stored_event, conn))
            return out

        return self._tx("import", run)

    def _adder(
        self, rows: Sequence[NewMemory], edges: Sequence[NewEdge], fresh: bool = False
    ) -> Callable[[Conn], list[tuple[str, bool]]]:
        """The transaction body of :meth:`add_memories` (retried as a whole by ``_tx``);
        ``fresh``: every row is taken to be new (a duplicate fails on the unique key) and no
        statement waits for another's answer."""
        now = time.time()
        params = _memory_params(rows, now)
        unique, rename = collapse_repeats(rows)

        def all_new(conn: Conn) -> list[tuple[str, bool]]:
            kept = [p for r, p in zip(rows, params, strict=True) if r.id not in rename]
            self._queue_new(conn, unique, now, kept)
            workspace = rows[0].workspace if rows else ""
            self._insert_edges(conn, workspace, edges, rename, now)
            self._supersede_queued(conn, workspace, edges, rename)
            return rename.ids(rows)

        def run(conn: Conn) -> list[tuple[str, bool]]:
            out: list[tuple[str, bool]] = []
            rename: dict[str, str] = {}
            created: list[NewMemory] = []
            with conn.cursor() as cur:
                # One pipelined round trip for the whole batch; rows are inserted in order, so a
                # duplicate later in the batch collapses onto the earlier one.
                cur.executemany(
                    INSERT_MEMORY + " ON CONFLICT (workspace, dedup_key) DO NOTHING RETURNING id",
                    params,
                    returning=True,
                )
                inserted: list[bool] = []
                for _ in rows:
                    inserted.append(cur.fetchone() is not None)
                    cur.nextset()
            for row, was_inserted in zip(rows, inserted, strict=True):
                if was_inserted:
                    created.append(row)
                    out.append((row.id, True))
                    continue
                rename[row.id] = _kept(conn, row)
                out.append((rename[row.id], False))
            self._log_added(conn, created, now, Vector)
            workspace = rows[0].workspace if rows else ""
            self._insert_edges(conn, workspace, edges, rename, now)
            self._supersede_queued(conn, workspace, edges, rename)
            return out

        return all_new if fresh else run

    def _queue_new(
        self, conn: Conn, rows: Sequence[NewMemory], now: float, params: Any = None
    ) -> None:
        """Queue the INSERT of new rows (one statement) with their history and chunk rows."""
        params = params if params is not None else _memory_params(rows, now)
        if params:
            conn.execute(INSERT_MEMORIES, [list(c) for c in zip(*params, strict=True)])
        self._log_added(conn, rows, now, Vector)

    def update_memory(self, workspace: str, memory_id: str, change: MemoryUpdate) -> MemoryRecord:
        content, embedding, dedup_key = change.content, change.embedding, change.dedup_key
        metadata, status = change.metadata, change.status

        def run(conn: Conn) -> MemoryRecord:
            row = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE workspace = %s AND id = %s "
                "FOR UPDATE",
                (workspace, memory_id),
            ).fetchone()
            if row is None:
                raise NotFoundError(f"memory {memory_id!r} not found in workspace {workspace!r}")
            old = self._record(row)
            sets: list[str] = ["updated_at = %s"]
            params: list[Any] = [time.time()]
            new_content = old.content
            if content is not None and embedding is not None and dedup_key is not None:
                new_content = content
                clash = conn.execute(
                    "SELECT id FROM memories WHERE workspace = %s AND dedup_key = %s AND id <> %s",
                    (workspace, dedup_key, memory_id),
                ).fetchone()
                if clash is not None:
                    raise ConflictError(
                        f"memory {clash[0]!r} of the same scope already has this content"
                    )
                sets += ["content = %s", "embedding = %b", "dedup_key = %s"]
                params += [content, Vector(embedding), dedup_key]
                write_chunks(conn, [(old, change.chunks)], replace=True)
            if metadata is not None:
                sets.append("metadata = %s")
                params.append(jsonb(metadata))
            if new_content != old.content or metadata is not None:
                # The indexed text holds the speaker (from metadata) and the content.
                tsv, doc_len = analysed(
                    new_content, metadata if metadata is not None else old.metadata
                )
                sets += ["terms = %s::tsvector", "doc_len = %s"]
                params += [tsv, doc_len]
            if status is not None:
                sets.append("status = %s")
                params.append(status)
            try:
                new = conn.execute(
                    f"UPDATE memories SET {', '.join(sets)} WHERE workspace = %s AND id = %s "
                    f"RETURNING {MEMORY_COLUMNS}",
                    [*params, workspace, memory_id],
                ).fetchone()
            except pg_errors.UniqueViolation as exc:  # a concurrent writer took the content
                raise ConflictError(
                    f"another memory of the same scope already has this content ({exc})"
                ) from exc
            assert new is not None
            self._updated(conn, old, change)
            return self._record(new)

        return self._tx("update", run)

    def forget(
        self, scope: Scope, ids: Sequence[str] | None, edge_bounds: EdgeBounds | None = None
    ) -> int:
        where, params = pg_scope_where(scope)

        def run(conn: Conn) -> int:
            if ids is None and edge_bounds is not None:
                self._forget_learning(conn, scope, *edge_bounds)
            if ids is None:
                deleted = conn.execute(
                    f"DELETE FROM memories WHERE {where} RETURNING id, user_id", params
                ).fetchall()
            else:
                deleted = conn.execute(
                    f"DELETE FROM memories WHERE {where} AND id = ANY(%s) RETURNING id, user_id",
                    [*params, list(ids)],
                ).fetchall()
            if ids is None:
                self._forget_feedback(conn, scope)
                # The scope's recalls hold its queries: forgetting a user removes them too.
                conn.execute(f"DELETE FROM recalls WHERE {where}", params)
            if not deleted:
                return 0
            gone = [r[0] for r in deleted]
            self._restore_superseded(conn, scope.workspace, gone)
            conn.execute(
                "DELETE FROM edges WHERE workspace = %s AND (src = ANY(%s) OR dst = ANY(%s))",
                (scope.workspace, gone, gone),
            )
            conn.execute(
                "DELETE FROM edge_changes WHERE workspace = %s "
                "AND (src = ANY(%s) OR dst = ANY(%s))",
                (scope.workspace, gone, gone),
            )
            if ids is not None:
                conn.execute(
                    "DELETE FROM memory_ratings WHERE workspace = %s AND memory_id = ANY(%s)",
                    (scope.workspace, gone),
                )
            # The history of a forgotten memory keeps no content.
            conn.execute(
                "UPDATE memory_changes SET before = NULL, after = NULL "
                "WHERE workspace = %s AND memory_id = ANY(%s)",
                (scope.workspace, gone),
            )
            now = time.time()
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO memory_changes (memory_id, workspace, user_id, op, before, "
                    "after, reason, created_at) VALUES (%s,%s,%s,'forget',NULL,NULL,'',%s)",
                    [(mid, scope.workspace, uid, now) for mid, uid in deleted],
                )
            return len(deleted)

        return self._tx("forget", run)

    # -- feedback records ------------------------------------------------------------------------
    def _insert_linked_memory(self, conn: Conn, row: NewMemory, now: float) -> str:
        """Insert a memory made by a feedback record, or return the identical one already there."""
        inserted = conn.execute(
            INSERT_MEMORY + " ON CONFLICT (workspace, dedup_key) DO NOTHING RETURNING id",
            _memory_params([row], now)[0],
        ).fetchone()
        if inserted is None:
            return _kept(conn, row)
        self._log(conn, row.id, row.workspace, row.user_id, "add", None, row.content)
        return row.id


def _kept(conn: Conn, row: NewMemory) -> str:
    """The id of the memory that ``row`` collapsed onto (the one with its ``dedup_key``)."""
    existing = conn.execute(
        "SELECT id FROM memories WHERE workspace = %s AND dedup_key = %s",
        (row.workspace, row.dedup_key),
    ).fetchone()
    if existing is None:  # the conflicting row was deleted meanwhile: the transaction retries
        raise pg_errors.SerializationFailure("the memory a duplicate collapsed onto vanished")
    return str(existing[0])


def _memory_params(rows: Sequence[NewMemory], now: float) -> list[tuple[Any, ...]]:
    """The parameters of :data:`INSERT_MEMORY` for each row."""
    out = []
    for r in rows:
        tsv, doc_len = analysed(r.content, r.metadata)
        updated = now if r.updated_at is None else r.updated_at
        out.append((r.id, r.workspace, r.user_id, r.agent_id, r.session_id, r.role, r.content,
                    r.kind, r.status, r.created_at, updated, jsonb(r.metadata), r.dedup_key,
                    Vector(r.embedding), tsv, doc_len, r.valid_until, r.superseded_by))  # fmt: skip
    return out

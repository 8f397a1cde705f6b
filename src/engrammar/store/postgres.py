"""The scale-out store: PostgreSQL with pgvector, behind the same contract as SQLite.

* **Connections.** A psycopg 3 pool per process (``Config.pool_size``); every call borrows one
  connection and runs in one transaction, committed when the call returns and rolled back
  when it raises. A transaction that loses a deadlock or a serialization conflict is retried.
* **Vectors.** A ``vector(dim)`` column with an HNSW index (cosine), created when the store
  first learns its embedder's dimension. ``hnsw.ef_search`` is raised to the query's ``k``
  and iterative index scans keep filtered queries from coming back short.
* **Keywords.** The same analysis as the embedded store (:func:`engrammar.recall.text.terms`:
  stop words, Snowball stems) stored as a ``tsvector`` with positions (a GIN index finds the
  candidates), ranked with the same BM25 formula and parameters as the in-process index, per
  (workspace, user) partition. Partition sizes come from ``keyword_stats``, which a trigger
  keeps exact; so both stores return the same hits with the same scores.
* **Concurrency.** Weight changes are ``UPDATE … SET weight = least(hi, greatest(lo, weight +
  delta))``: the row lock and PostgreSQL's re-check of the updated row make concurrent deltas
  add up with no lost update. Edges are updated in a fixed order so that two feedback calls
  cannot deadlock each other. Duplicate inserts collapse on unique constraints.
"""

from __future__ import annotations

import json
import struct
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg
from psycopg import errors as pg_errors
from psycopg.abc import Buffer
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout

from ..errors import ConflictError, EmbedderError, NotFoundError, StoreError, ValidationError
from ..learn.scoring import EventFacts, PairFacts, RatingFacts, ReplyFacts, ReviewFacts
from ..models import (
    DecisionReview,
    Edge,
    FeedbackEvent,
    LoggedEvent,
    MemoryRating,
    MemoryRecord,
    PreferencePair,
    Scope,
)
from ..recall.text import index_text, speaker_of, terms
from .base import (
    ApiKeyRecord,
    EdgeDelta,
    FeedbackRecord,
    NewEdge,
    NewFeedbackEvent,
    NewMemory,
    RecallRecord,
    ReplySignal,
    rebuilt_edges,
)
from .postgres_migrations import MIGRATIONS
from .tables import (
    COPY_JSON_FIELDS,
    COPY_TABLES,
    COPY_VECTOR_FIELDS,
    EVENT_COLUMNS,
    FEEDBACK_TABLES,
    MEMORY_COLUMNS,
    write_records,
)

__all__ = ["PostgresStore", "redact_url"]

T = TypeVar("T")
Conn = psycopg.Connection[Any]


# Any constant works; it only has to be the same in every process that migrates this schema.
_MIGRATION_LOCK = 0x656E6772616D6D  # "engramm"
_RETRYABLE = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure)
_MAX_POSITION = 16383  # tsvector positions saturate here; term counts above are approximate


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and stats)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


class _Vector:
    """A float32 vector on its way to a ``vector`` parameter (binary wire format)."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = np.ascontiguousarray(array, dtype=np.float32)


def _register_vector(conn: Conn) -> None:
    """Teach the connection pgvector's binary format, both ways, with no extra dependency."""
    info = TypeInfo.fetch(conn, "vector")
    if info is None:
        raise StoreError("the pgvector extension is not installed in this database")
    vector_oid = info.oid

    class VectorDumper(Dumper):
        format = Format.BINARY
        oid = vector_oid

        def dump(self, obj: _Vector) -> Buffer:
            a = obj.array
            return struct.pack(">HH", len(a), 0) + a.astype(">f4").tobytes()

    class VectorBinaryLoader(Loader):
        format = Format.BINARY

        def load(self, data: Buffer) -> np.ndarray:
            dim = struct.unpack_from(">H", data)[0]
            return np.frombuffer(data, dtype=">f4", count=dim, offset=4).astype(np.float32)

    class VectorTextLoader(Loader):
        format = Format.TEXT

        def load(self, data: Buffer) -> np.ndarray:
            text = bytes(data).decode()
            return np.array(text[1:-1].split(","), dtype=np.float32)

    conn.adapters.register_dumper(_Vector, VectorDumper)
    conn.adapters.register_loader(vector_oid, VectorBinaryLoader)
    conn.adapters.register_loader(vector_oid, VectorTextLoader)


def _quote_lexeme(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def _analysed(content: str, metadata: dict[str, Any]) -> tuple[str, int]:
    """The keyword terms of a memory, exactly as the embedded store indexes them (its speaker
    in front of its content), as a tsvector literal and a length."""
    doc_terms = terms(index_text(content, speaker_of(metadata)))
    return _tsvector(doc_terms), len(doc_terms)


def _tsvector(doc_terms: list[str]) -> str:
    """A tsvector literal of already-analysed terms, with positions (so that tf survives)."""
    positions: dict[str, list[str]] = {}
    for pos, term in enumerate(doc_terms, start=1):
        positions.setdefault(term, []).append(str(min(pos, _MAX_POSITION)))
    return " ".join(f"{_quote_lexeme(t)}:{','.join(p)}" for t, p in positions.items())


def _record(row: Sequence[Any]) -> MemoryRecord:
    return MemoryRecord(
        id=row[0],
        workspace=row[1],
        user_id=row[2],
        agent_id=row[3],
        session_id=row[4],
        role=row[5],
        content=row[6],
        kind=row[7],
        status=row[8],
        created_at=row[9],
        updated_at=row[10],
        metadata=row[11],
    )


def _scope_where(scope: Scope, alias: str = "") -> tuple[str, list[Any]]:
    p = f"{alias}." if alias else ""
    clauses = [f"{p}workspace = %s"]
    params: list[Any] = [scope.workspace]
    for key in ("user_id", "agent_id", "session_id"):
        value = getattr(scope, key)
        if value is not None:
            clauses.append(f"{p}{key} = %s")
            params.append(value)
    return " AND ".join(clauses), params


def _json(value: Any) -> Jsonb:
    return Jsonb(value)


class PostgresStore:
    """The PostgreSQL + pgvector store (see the module docstring and :class:`~.base.Store`).

    Args:
        url: a libpq connection URL (``postgresql://user:password@host:5432/db``).
        pool_size: most connections this process keeps open.
        bm25_k1, bm25_b: the BM25 parameters (the same as the embedded store's).
        hnsw_m, hnsw_ef_construction: HNSW build parameters, used when the index is created.
        hnsw_ef_search: candidates visited per vector query (raised to the query's ``k``).
        connect_timeout: seconds to wait for the server.
    """

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
    ) -> None:
        self.url = url
        self._k1 = bm25_k1
        self._b = bm25_b
        self._hnsw_m = hnsw_m
        self._hnsw_ef_construction = hnsw_ef_construction
        self._ef_search = hnsw_ef_search
        self._dim: int | None = None
        self._closed = False
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

    # -- connections -----------------------------------------------------------------------------
    def _configure(self, conn: Conn) -> None:
        _register_vector(conn)
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
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS migrations "
                    "(name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
                )
                done = {r[0] for r in conn.execute("SELECT name FROM migrations")}
                for migration in MIGRATIONS:
                    if migration.__name__ not in done:
                        migration(conn)
                        conn.execute(
                            "INSERT INTO migrations (name, applied_at) VALUES (%s, %s)",
                            (migration.__name__, time.time()),
                        )
                conn.commit()
        except psycopg.Error as exc:
            raise StoreError(f"cannot prepare the store {redact_url(self.url)}: {exc}") from exc

    @contextmanager
    def _conn(self) -> Iterator[Conn]:
        if self._closed:
            raise StoreError("the store is closed")
        with self._pool.connection() as conn:
            yield conn

    def _tx(
        self,
        what: str,
        fn: Callable[[Conn], T],
        *,
        transaction: bool = True,
        idempotent: bool = False,
        attempts: int = 4,
    ) -> T:
        """Run ``fn`` on a pooled connection, in one transaction unless ``transaction`` is false
        (``fn`` then runs a single statement, atomic by itself, or only reads).

        Retried: a transaction that lost a deadlock or a serialization conflict; and a call that
        met a connection the server had closed (restart, failover), when ``fn`` only reads or
        the connection failed before the transaction began. Other failures raise StoreError.
        """
        for attempt in range(attempts):
            held: list[Conn] = []
            began = False
            try:
                with self._conn() as conn:
                    held.append(conn)
                    if not transaction:
                        return fn(conn)
                    with conn.transaction():
                        began = True
                        return fn(conn)
            except _RETRYABLE:
                if attempt == attempts - 1:
                    raise StoreError(f"{what} failed: the database kept aborting it") from None
                time.sleep(0.01 * (2**attempt))
            except PoolTimeout as exc:
                raise StoreError(f"{what} failed: no database connection ({exc})") from exc
            except psycopg.OperationalError as exc:
                lost = bool(held) and held[0].closed
                if lost and (idempotent or not began) and attempt < attempts - 1:
                    continue  # the pool drops the dead connection; the next one is fresh
                raise StoreError(f"{what} failed: {exc}") from exc
            except psycopg.Error as exc:
                raise StoreError(f"{what} failed: {exc}") from exc
        raise AssertionError("unreachable")

    def _read(self, what: str, fn: Callable[[Conn], T]) -> T:
        return self._tx(what, fn, transaction=False, idempotent=True)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._pool.close()

    def applied_migrations(self) -> list[str]:
        return self._read(
            "reading migrations",
            lambda c: [r[0] for r in c.execute("SELECT name FROM migrations ORDER BY name")],
        )

    # -- meta ------------------------------------------------------------------------------------
    def check_embedder(self, name: str, dim: int) -> None:
        def run(conn: Conn) -> None:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            row = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('embedder', %s)",
                    (json.dumps({"name": name, "dim": dim}),),
                )
                self._set_dimension(conn, dim)
                return
            known = json.loads(row[0])
            if known["dim"] != dim:
                raise EmbedderError(
                    f"the store at {redact_url(self.url)} holds {known['dim']}-dimensional "
                    f"vectors from {known['name']!r}; the embedder {name!r} makes {dim}. Use the "
                    "same embedder, or export and re-import into a new store."
                )
            if known["name"] != name:
                conn.execute(
                    "UPDATE meta SET value = %s WHERE key = 'embedder'",
                    (json.dumps({"name": name, "dim": dim}),),
                )

        self._tx("checking the embedder", run)
        self._dim = dim

    def _set_dimension(self, conn: Conn, dim: int) -> None:
        # Fixing the column's dimension is what lets pgvector build an HNSW index on it.
        conn.execute(f"ALTER TABLE memories ALTER COLUMN embedding TYPE vector({int(dim)})")
        self._create_hnsw(conn)

    def _create_hnsw(self, conn: Conn) -> None:
        conn.execute(
            "CREATE INDEX IF NOT EXISTS memories_embedding_hnsw ON memories "
            "USING hnsw (embedding vector_cosine_ops) "
            f"WITH (m = {int(self._hnsw_m)}, ef_construction = {int(self._hnsw_ef_construction)})"
        )

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Load many rows without the HNSW index, then build it once (several times faster
        than growing it row by row) and refresh the planner's statistics; vector searches
        meanwhile scan exactly. For migrations and first loads: other writers are not blocked,
        but their searches are slow."""
        if self._dim is None:
            yield
            return
        self._tx("dropping the vector index", lambda c: c.execute(
            "DROP INDEX IF EXISTS memories_embedding_hnsw"
        ))  # fmt: skip
        try:
            yield
        finally:
            self._tx("building the vector index", self._create_hnsw)
            # Fresh statistics, or the planner may scan all vectors instead of using the index.
            self._tx("analyzing", lambda c: c.execute("ANALYZE memories"), transaction=False)

    # -- memories --------------------------------------------------------------------------------
    def add_memories(
        self, rows: Sequence[NewMemory], edges: Sequence[NewEdge] = ()
    ) -> list[tuple[str, bool]]:
        return self._tx("add", self._adder(rows, edges))

    def import_bundle(
        self,
        rows: Sequence[NewMemory],
        edges: Sequence[NewEdge],
        records: Sequence[tuple[str, dict[str, Any]]],
    ) -> list[tuple[str, bool]]:
        add = self._adder(rows, edges)

        def run(conn: Conn) -> list[tuple[str, bool]]:
            out = add(conn)
            rename = {r.id: got for r, (got, _) in zip(rows, out, strict=True) if got != r.id}

            def insert(table: str, mine: list[dict[str, Any]]) -> None:
                sql, params = self._copy_insert(table, mine)
                with conn.cursor() as cur:
                    cur.executemany(sql + " ON CONFLICT DO NOTHING", params)

            def stored_event(workspace: str, source_event_id: str) -> str | None:
                found = conn.execute(
                    "SELECT id FROM feedback_events WHERE workspace = %s AND source_event_id = %s",
                    (workspace, source_event_id),
                ).fetchone()
                return None if found is None else str(found[0])

            write_records(records, rename, insert, stored_event)
            return out

        return self._tx("import", run)

    def _adder(
        self, rows: Sequence[NewMemory], edges: Sequence[NewEdge]
    ) -> Callable[[Conn], list[tuple[str, bool]]]:
        """The transaction body of :meth:`add_memories` (retried as a whole by ``_tx``)."""
        now = time.time()
        params = []
        for row in rows:
            tsv, doc_len = _analysed(row.content, row.metadata)
            params.append(
                (
                    row.id,
                    row.workspace,
                    row.user_id,
                    row.agent_id,
                    row.session_id,
                    row.role,
                    row.content,
                    row.kind,
                    row.status,
                    row.created_at,
                    now if row.updated_at is None else row.updated_at,
                    _json(row.metadata),
                    row.dedup_key,
                    _Vector(row.embedding),
                    tsv,
                    doc_len,
                )
            )

        def run(conn: Conn) -> list[tuple[str, bool]]:
            out: list[tuple[str, bool]] = []
            rename: dict[str, str] = {}
            created: list[NewMemory] = []
            with conn.cursor() as cur:
                # One pipelined round trip for the whole batch; rows are inserted in order, so a
                # duplicate later in the batch collapses onto the earlier one.
                cur.executemany(
                    "INSERT INTO memories (id, workspace, user_id, agent_id, session_id, role, "
                    "content, kind, status, created_at, updated_at, metadata, dedup_key, "
                    "embedding, terms, doc_len) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,"
                    "%s,%s,%b,%s::tsvector,%s) ON CONFLICT (workspace, dedup_key) DO NOTHING "
                    "RETURNING id",
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
                existing = conn.execute(
                    "SELECT id FROM memories WHERE workspace = %s AND dedup_key = %s",
                    (row.workspace, row.dedup_key),
                ).fetchone()
                if existing is None:  # the conflicting row was deleted meanwhile
                    raise pg_errors.SerializationFailure("dedup row vanished")
                rename[row.id] = existing[0]
                out.append((existing[0], False))
            if created:
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO memory_changes (memory_id, workspace, user_id, op, before, "
                        "after, reason, created_at) VALUES (%s,%s,%s,'add',NULL,%s,'',%s)",
                        [(r.id, r.workspace, r.user_id, r.content, now) for r in created],
                    )
            self._insert_edges(conn, rows[0].workspace if rows else "", edges, rename, now)
            return out

        return run

    @staticmethod
    def _insert_edges(
        conn: Conn,
        workspace: str,
        edges: Sequence[NewEdge],
        rename: dict[str, str],
        now: float,
    ) -> None:
        params = []
        for edge in edges:
            src = rename.get(edge.src, edge.src)
            dst = rename.get(edge.dst, edge.dst)
            if src != dst:
                when = now if edge.updated_at is None else edge.updated_at
                params.append((workspace, src, dst, edge.kind, edge.weight, when))
        # Sorted: concurrent writers lock shared edges in the same order and cannot deadlock.
        params.sort(key=lambda p: (p[1], p[2], p[3]))
        if params:
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO edges AS e (workspace, src, dst, kind, weight, updated_at) "
                    "VALUES (%s,%s,%s,%s,%s,%s) ON CONFLICT (workspace, src, dst, kind) DO UPDATE "
                    "SET weight = greatest(e.weight, excluded.weight), "
                    "updated_at = excluded.updated_at",
                    params,
                )

    @staticmethod
    def _log(
        conn: Conn,
        memory_id: str,
        workspace: str,
        user_id: str | None,
        op: str,
        before: str | None,
        after: str | None,
        reason: str = "",
    ) -> None:
        conn.execute(
            "INSERT INTO memory_changes (memory_id, workspace, user_id, op, before, after, reason, "
            "created_at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s)",
            (memory_id, workspace, user_id, op, before, after, reason, time.time()),
        )

    def get_memories(self, workspace: str, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        rows = self._read(
            "get",
            lambda c: c.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE workspace = %s AND id = ANY(%s)",
                (workspace, ids),
            ).fetchall(),
        )
        return {r[0]: _record(r) for r in rows}

    def list_memories(self, scope: Scope, limit: int, offset: int) -> list[MemoryRecord]:
        where, params = _scope_where(scope)
        rows = self._read(
            "list",
            lambda c: c.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} "
                "ORDER BY seq LIMIT %s OFFSET %s",
                [*params, limit, offset],
            ).fetchall(),
        )
        return [_record(r) for r in rows]

    def update_memory(
        self,
        workspace: str,
        memory_id: str,
        *,
        content: str | None,
        embedding: np.ndarray | None,
        dedup_key: str | None,
        metadata: dict[str, Any] | None,
        status: str | None,
        reason: str,
        edges: Sequence[NewEdge] | None = None,
    ) -> MemoryRecord:
        def run(conn: Conn) -> MemoryRecord:
            row = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE workspace = %s AND id = %s "
                "FOR UPDATE",
                (workspace, memory_id),
            ).fetchone()
            if row is None:
                raise NotFoundError(f"memory {memory_id!r} not found in workspace {workspace!r}")
            old = _record(row)
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
                params += [content, _Vector(embedding), dedup_key]
            if metadata is not None:
                sets.append("metadata = %s")
                params.append(_json(metadata))
            if new_content != old.content or metadata is not None:
                # The indexed text holds the speaker (from metadata) and the content.
                tsv, doc_len = _analysed(
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
            op = "update" if content is not None else ("status" if status else "metadata")
            after = content if content is not None else (status or json.dumps(metadata))
            before = old.content if content is not None else (old.status if status else None)
            self._log(conn, memory_id, workspace, old.user_id, op, before, after, reason)
            if edges is not None:
                self._replace_edges(conn, workspace, memory_id, edges)
            return _record(new)

        return self._tx("update", run)

    def _replace_edges(
        self, conn: Conn, workspace: str, memory_id: str, edges: Sequence[NewEdge]
    ) -> None:
        where = "workspace = %s AND (src = %s OR dst = %s) AND kind <> 'sequence'"
        args = (workspace, memory_id, memory_id)
        learned = {
            (r[0], r[1], r[2]): r[3]
            for r in conn.execute(
                f"SELECT src, dst, kind, weight FROM edges WHERE {where}", args
            ).fetchall()
        }
        conn.execute(f"DELETE FROM edges WHERE {where}", args)
        self._insert_edges(conn, workspace, rebuilt_edges(edges, learned), {}, time.time())

    def forget(self, scope: Scope, ids: Sequence[str] | None) -> int:
        where, params = _scope_where(scope)

        def run(conn: Conn) -> int:
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
            conn.execute(
                "DELETE FROM edges WHERE workspace = %s AND (src = ANY(%s) OR dst = ANY(%s))",
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

    def history(self, workspace: str, memory_id: str) -> list[dict[str, Any]]:
        rows = self._read(
            "history",
            lambda c: c.execute(
                "SELECT rev, op, before, after, reason, created_at FROM memory_changes "
                "WHERE workspace = %s AND memory_id = %s ORDER BY rev",
                (workspace, memory_id),
            ).fetchall(),
        )
        if not rows:
            raise NotFoundError(f"memory {memory_id!r} not found in workspace {workspace!r}")
        return [
            {"rev": r[0], "op": r[1], "before": r[2], "after": r[3], "reason": r[4], "at": r[5]}
            for r in rows
        ]

    def stats(self, scope: Scope) -> dict[str, Any]:
        where, params = _scope_where(scope)
        where_m, params_m = _scope_where(scope, "m")

        def run(conn: Conn) -> dict[str, Any]:
            memories = conn.execute(f"SELECT count(*) FROM memories WHERE {where}", params)
            n_memories = memories.fetchone()[0]  # type: ignore[index]
            edges = conn.execute(
                "SELECT count(*) FROM edges e JOIN memories m ON m.workspace = e.workspace "
                f"AND m.id = e.src WHERE {where_m}",
                params_m,
            ).fetchone()[0]  # type: ignore[index]
            recalls = conn.execute(
                f"SELECT count(*) FROM recalls WHERE {where}", params
            ).fetchone()[0]  # type: ignore[index]
            by_kind = dict(
                conn.execute(
                    f"SELECT kind, count(*) FROM memories WHERE {where} GROUP BY kind", params
                ).fetchall()
            )
            size = conn.execute("SELECT pg_database_size(current_database())").fetchone()
            feedback = {}
            for kind, (table, _, has_session) in FEEDBACK_TABLES.items():
                narrowed = (
                    scope if has_session else Scope(scope.workspace, scope.user_id, scope.agent_id)
                )
                w, p = _scope_where(narrowed)
                row = conn.execute(f"SELECT count(*) FROM {table} WHERE {w}", p).fetchone()
                feedback[kind] = int(row[0]) if row else 0
            return {
                "memories": n_memories,
                "memories_by_kind": by_kind,
                "edges": edges,
                "recalls": recalls,
                "feedback_records": feedback,
                "store": "postgresql",
                "url": redact_url(self.url),
                "bytes_on_disk": size[0] if size else 0,
            }

        return self._read("stats", run)

    # -- search ----------------------------------------------------------------------------------
    def vector_search(self, scope: Scope, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        where, params = _scope_where(scope)
        ef = min(1000, max(self._ef_search, k))

        def run(conn: Conn) -> list[tuple[str, float]]:
            if ef != self._ef_search:
                # Transaction-local: the pooled connection goes back unchanged.
                conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
            return [
                (r[0], float(r[1]))
                for r in conn.execute(
                    "WITH hits AS MATERIALIZED (SELECT id, embedding <=> %b AS distance "
                    f"FROM memories WHERE {where} AND status = 'active' "
                    "ORDER BY embedding <=> %b LIMIT %s) "
                    "SELECT id, 1 - distance FROM hits ORDER BY distance, id",
                    [_Vector(query), *params, _Vector(query), k],
                )
            ]

        if ef == self._ef_search:
            return self._read("search", run)
        return self._tx("search", run, idempotent=True)

    def vector_searches(
        self, scope: Scope, queries: np.ndarray, k: int
    ) -> list[list[tuple[str, float]]]:
        # The HNSW index answers one vector per query: a batch is a loop of them.
        return [self.vector_search(scope, q, k) for q in queries]

    def keyword_search(self, scope: Scope, text: str, k: int) -> list[tuple[str, float]]:
        query_terms = terms(text)
        if not query_terms or k <= 0:
            return []
        counts = Counter(query_terms)
        words = list(counts)
        tsquery = " | ".join(_quote_lexeme(w) for w in words)
        part_where = ["m.workspace = %(ws)s", "m.status = 'active'"]
        filters = []
        params: dict[str, Any] = {
            "ws": scope.workspace,
            "words": words,
            "qtf": [counts[w] for w in words],
            "tsq": tsquery,
            "k1": self._k1,
            "b": self._b,
            "k": k,
        }
        if scope.user_id is not None:
            part_where.append("m.user_id = %(user_id)s")
            params["user_id"] = scope.user_id
        for key in ("agent_id", "session_id"):
            if getattr(scope, key) is not None:
                filters.append(f"c.{key} = %({key})s")
                params[key] = getattr(scope, key)
        # BM25 exactly as recall.keyword.BM25Index computes it: idf and the average length per
        # (workspace, user) partition, agent/session filters applied after df is counted. One
        # pass over the matching rows' matching lexemes (the GIN index finds the rows).
        sql = f"""
            WITH hits AS (
                SELECT m.seq, m.id, m.user_id, m.agent_id, m.session_id, m.doc_len,
                       u.lexeme AS term, cardinality(u.positions) AS tf
                FROM memories m CROSS JOIN LATERAL unnest(m.terms) AS u
                WHERE {" AND ".join(part_where)} AND m.terms @@ %(tsq)s::tsquery
                  AND u.lexeme = ANY(%(words)s::text[])
            ),
            df AS (SELECT user_id, term, count(*) AS df FROM hits GROUP BY user_id, term),
            q AS (SELECT * FROM unnest(%(words)s::text[], %(qtf)s::int[]) AS q(term, qtf))
            SELECT c.id, sum(
                q.qtf
                * ln(1.0 + (p.n - df.df + 0.5) / (df.df + 0.5))
                * c.tf * (%(k1)s + 1.0)
                / (c.tf + %(k1)s * (1.0 - %(b)s + %(b)s * c.doc_len
                    / greatest(p.total_len::float8 / greatest(p.n, 1), 1e-9)))
            ) AS score
            FROM hits c
            JOIN q ON q.term = c.term
            JOIN df ON df.user_id IS NOT DISTINCT FROM c.user_id AND df.term = c.term
            JOIN keyword_stats p ON p.workspace = %(ws)s AND p.user_key = coalesce(c.user_id, '')
            {"WHERE " + " AND ".join(filters) if filters else ""}
            GROUP BY c.seq, c.id
            ORDER BY score DESC, c.seq
            LIMIT %(k)s
        """
        rows = self._read("search", lambda c: c.execute(sql, params).fetchall())
        return [(r[0], float(r[1])) for r in rows]

    def vectors(self, workspace: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}

        def run(conn: Conn) -> dict[str, np.ndarray]:
            with conn.cursor(binary=True) as cur:
                cur.execute(
                    "SELECT id, embedding FROM memories WHERE workspace = %s AND id = ANY(%s)",
                    (workspace, ids),
                )
                return {r[0]: r[1] for r in cur}

        return self._read("reading vectors", run)

    def latest_memories(self, scope: Scope, limit: int) -> list[MemoryRecord]:
        where, params = _scope_where(scope)
        rows = self._read(
            "reading memories",
            lambda c: c.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} AND status = 'active' "
                "ORDER BY seq DESC LIMIT %s",
                [*params, limit],
            ).fetchall(),
        )
        return [_record(r) for r in rows]

    def memories_of_kind(self, scope: Scope, kind: str, limit: int) -> list[MemoryRecord]:
        where, params = _scope_where(scope)
        rows = self._read(
            "reading memories",
            lambda c: c.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} AND status = 'active' "
                "AND kind = %s ORDER BY seq DESC LIMIT %s",
                [*params, kind, limit],
            ).fetchall(),
        )
        return [_record(r) for r in rows]

    def term_postings(
        self, scope: Scope, terms: Sequence[str], limit: int
    ) -> tuple[int, dict[str, tuple[int, list[str]]]]:
        wanted = list(dict.fromkeys(terms))
        where, params = _scope_where(scope, "m")

        def run(conn: Conn) -> tuple[int, dict[str, tuple[int, list[str]]]]:
            total = conn.execute(
                f"SELECT count(*) FROM memories m WHERE {where} AND m.status = 'active'", params
            ).fetchone()
            out: dict[str, tuple[int, list[str]]] = {t: (0, []) for t in wanted}
            if wanted:
                rows = conn.execute(
                    "SELECT t.term, count(m.seq), "
                    "coalesce((array_agg(m.id ORDER BY m.seq DESC))[1:%s], '{}') "
                    "FROM unnest(%s::text[], %s::tsquery[]) AS t(term, q) JOIN memories m "
                    f"ON m.terms @@ t.q WHERE {where} AND m.status = 'active' GROUP BY t.term",
                    [limit, wanted, [_quote_lexeme(t) for t in wanted], *params],
                ).fetchall()
                for term, df, ids in rows:
                    out[term] = (int(df), [i for i in ids if i is not None])
            return int(total[0]) if total else 0, out

        return self._read("reading term postings", run)

    # -- graph -----------------------------------------------------------------------------------
    def edges_from(
        self, workspace: str, ids: Sequence[str], min_weight: float = 0.0, kind: str | None = None
    ) -> list[Edge]:
        return self._edges(workspace, ids, min_weight, "src", "dst", kind)

    def edges_to(self, workspace: str, ids: Sequence[str], min_weight: float = 0.0) -> list[Edge]:
        return self._edges(workspace, ids, min_weight, "dst", "src")

    def _edges(
        self,
        workspace: str,
        ids: Sequence[str],
        min_weight: float,
        end: str,
        other: str,
        kind: str | None = None,
    ) -> list[Edge]:
        """Edges whose ``end`` column ("src" or "dst") is one of ``ids`` (of ``kind`` only,
        if set)."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        of_kind = "" if kind is None else " AND kind = %s"
        rows = self._read(
            "reading edges",
            lambda c: c.execute(
                "SELECT src, dst, kind, weight, updated_at FROM edges WHERE workspace = %s "
                f"AND {end} = ANY(%s) AND weight >= %s{of_kind} ORDER BY {end}, {other}, kind",
                (workspace, ids, min_weight, *([] if kind is None else [kind])),
            ).fetchall(),
        )
        return [Edge(*r) for r in rows]

    def edge_counts(self, workspace: str, ids: Sequence[str]) -> dict[str, int]:
        ids = list(dict.fromkeys(ids))
        out = dict.fromkeys(ids, 0)
        if ids:
            rows = self._read(
                "counting edges",
                lambda c: c.execute(
                    "SELECT src, count(*) FROM edges WHERE workspace = %s AND src = ANY(%s) "
                    "GROUP BY src",
                    (workspace, ids),
                ).fetchall(),
            )
            out.update({src: int(n) for src, n in rows})
        return out

    def adjust_edges(
        self,
        workspace: str,
        deltas: Sequence[EdgeDelta],
        lo: float,
        hi: float,
        consume_recall: str | None = None,
        reply_signals: Sequence[ReplySignal] = (),
    ) -> list[Edge] | None:
        # A stable sort keeps the order of repeated deltas to one edge (clamping is not
        # commutative) while locking distinct edges in one global order.
        ordered = sorted(deltas, key=lambda d: (d.src, d.dst, d.kind))

        def run(conn: Conn) -> list[Edge] | None:
            now = time.time()
            if consume_recall is not None:
                consumed = conn.execute(
                    "UPDATE recalls SET consumed_at = %s WHERE workspace = %s AND id = %s "
                    "AND consumed_at IS NULL",
                    (now, workspace, consume_recall),
                )
                if consumed.rowcount != 1:
                    return None
            changed: list[Edge] = []
            if reply_signals:
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO reply_signals (workspace, user_id, agent_id, session_id, "
                        "recall_id, memory_id, value, alignment, context_embedding, created_at) "
                        "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING",
                        [
                            (
                                r.workspace,
                                r.user_id,
                                r.agent_id,
                                r.session_id,
                                r.recall_id,
                                r.memory_id,
                                r.value,
                                r.alignment,
                                _Vector(r.context_embedding),
                                r.created_at,
                            )
                            for r in reply_signals
                        ],
                    )
            if not ordered:
                return changed
            with conn.cursor() as cur:
                # The arithmetic runs in SQL on the locked row: no update is ever lost.
                cur.executemany(
                    "UPDATE edges SET weight = least(%(hi)s, greatest(%(lo)s, weight + %(d)s)), "
                    "updated_at = %(now)s WHERE workspace = %(ws)s AND src = %(src)s "
                    "AND dst = %(dst)s AND kind = %(kind)s "
                    "AND least(%(hi)s, greatest(%(lo)s, weight + %(d)s)) <> weight "
                    "RETURNING src, dst, kind, weight, updated_at",
                    [
                        {
                            "hi": hi,
                            "lo": lo,
                            "d": d.delta,
                            "now": now,
                            "ws": workspace,
                            "src": d.src,
                            "dst": d.dst,
                            "kind": d.kind,
                        }
                        for d in ordered
                    ],
                    returning=True,
                )
                while True:
                    row = cur.fetchone()
                    if row is not None:
                        changed.append(Edge(*row))
                    if not cur.nextset():
                        break
            return changed

        return self._tx("edge update", run)

    # -- recalls ---------------------------------------------------------------------------------
    def save_recall(self, record: RecallRecord) -> None:
        def run(conn: Conn) -> None:
            conn.execute(
                "INSERT INTO recalls (id, workspace, user_id, agent_id, session_id, query, "
                "created_at, memory_ids, paths, tensions, consumed_at) "
                "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                (
                    record.recall_id,
                    record.workspace,
                    record.user_id,
                    record.agent_id,
                    record.session_id,
                    record.query,
                    record.created_at,
                    _json(record.memory_ids),
                    _json(record.paths),
                    _json(record.tensions),
                    record.consumed_at,
                ),
            )

        self._tx("saving the recall", run, transaction=False)

    def get_recall(self, scope: Scope, recall_id: str | None) -> RecallRecord | None:
        where, params = _scope_where(scope)
        cols = (
            "id, workspace, user_id, agent_id, session_id, query, created_at, memory_ids, paths, "
            "tensions, consumed_at"
        )
        if recall_id is not None:
            sql = f"SELECT {cols} FROM recalls WHERE {where} AND id = %s"
            params = [*params, recall_id]
        else:
            sql = (
                f"SELECT {cols} FROM recalls WHERE {where} AND consumed_at IS NULL "
                "ORDER BY created_at DESC, seq DESC LIMIT 1"
            )
        row = self._read("reading the recall", lambda c: c.execute(sql, params).fetchone())
        if row is None:
            return None
        return RecallRecord(
            recall_id=row[0],
            workspace=row[1],
            user_id=row[2],
            agent_id=row[3],
            session_id=row[4],
            query=row[5],
            created_at=row[6],
            memory_ids=row[7],
            paths=row[8],
            tensions=row[9],
            consumed_at=row[10],
        )

    # -- feedback records ------------------------------------------------------------------------
    def _insert_linked_memory(self, conn: Conn, row: NewMemory, now: float) -> str:
        """Insert a memory made by a feedback record, or return the identical one already there."""
        tsv, doc_len = _analysed(row.content, row.metadata)
        inserted = conn.execute(
            "INSERT INTO memories (id, workspace, user_id, agent_id, session_id, role, content, "
            "kind, status, created_at, updated_at, metadata, dedup_key, embedding, terms, "
            "doc_len) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,'active',%s,%s,%s,%s,%b,%s::tsvector,%s) "
            "ON CONFLICT (workspace, dedup_key) DO NOTHING RETURNING id",
            (
                row.id, row.workspace, row.user_id, row.agent_id, row.session_id, row.role,
                row.content, row.kind, row.created_at, now, _json(row.metadata), row.dedup_key,
                _Vector(row.embedding), tsv, doc_len,
            ),
        ).fetchone()  # fmt: skip
        if inserted is not None:
            self._log(conn, row.id, row.workspace, row.user_id, "add", None, row.content)
            return row.id
        existing = conn.execute(
            "SELECT id FROM memories WHERE workspace = %s AND dedup_key = %s",
            (row.workspace, row.dedup_key),
        ).fetchone()
        if existing is None:  # the conflicting row was deleted meanwhile
            raise pg_errors.SerializationFailure("linked memory vanished")
        return str(existing[0])

    def create_feedback_event(self, new: NewFeedbackEvent) -> tuple[FeedbackEvent, bool]:
        e = new.event

        def run(conn: Conn) -> tuple[FeedbackEvent, bool]:
            now = time.time()
            # ON CONFLICT waits for a concurrent writer of the same source_event_id, then
            # yields: exactly one of them inserts.
            inserted = conn.execute(
                "INSERT INTO feedback_events (id, workspace, user_id, agent_id, session_id, "
                "input_context, ai_output, user_reaction, user_correction, corrected_output, "
                "state, reason, source_event_id, payload_hash, metadata, created_at, "
                "context_embedding, ai_output_embedding, corrected_embedding) "
                "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%b,%b,%b) "
                "ON CONFLICT (workspace, source_event_id) DO NOTHING RETURNING id",
                (
                    e.id, e.workspace, e.user_id, e.agent_id, e.session_id, e.input_context,
                    e.ai_output, e.user_reaction, e.user_correction, e.corrected_output,
                    e.state, e.reason, e.source_event_id, new.payload_hash, _json(e.metadata),
                    e.created_at, _Vector(new.context_embedding),
                    _Vector(new.ai_output_embedding),
                    None if new.corrected_embedding is None else _Vector(new.corrected_embedding),
                ),
            ).fetchone()  # fmt: skip
            if inserted is None:
                row = conn.execute(
                    "SELECT id, payload_hash FROM feedback_events "
                    "WHERE workspace = %s AND source_event_id = %s",
                    (e.workspace, e.source_event_id),
                ).fetchone()
                if row is None:
                    raise pg_errors.SerializationFailure("conflicting event vanished")
                if row[1] != new.payload_hash:
                    raise ConflictError(
                        f"source_event_id {e.source_event_id!r} already names event "
                        f"{row[0]!r} in workspace {e.workspace!r} with a different payload"
                    )
                return self._get_event(conn, e.workspace, row[0]), False
            if new.decision is not None and new.answer is not None:
                memory_id = self._insert_linked_memory(conn, new.decision, now)
                conn.execute(
                    "INSERT INTO decision_memories (workspace, event_id, answer, memory_id, "
                    "created_at) VALUES (%s,%s,%s,%s,%s)",
                    (e.workspace, e.id, new.answer, memory_id, now),
                )
            return self._get_event(conn, e.workspace, e.id), True

        return self._tx("creating the feedback event", run)

    def _get_event(self, conn: Conn, workspace: str, event_id: str) -> FeedbackEvent:
        row = conn.execute(
            f"SELECT {EVENT_COLUMNS} FROM feedback_events WHERE workspace = %s AND id = %s",
            (workspace, event_id),
        ).fetchone()
        assert row is not None
        return self._event(conn, row)

    @staticmethod
    def _event(conn: Conn, row: Sequence[Any]) -> FeedbackEvent:
        link = conn.execute(
            "SELECT memory_id FROM decision_memories WHERE workspace = %s AND event_id = %s "
            "AND answer = %s",
            (row[1], row[0], {"corrected": "corrected", "adopted": "ai_output"}.get(row[11], "")),
        ).fetchone()
        return FeedbackEvent(
            id=row[0],
            workspace=row[1],
            user_id=row[2],
            agent_id=row[3],
            session_id=row[4],
            input_context=row[5],
            ai_output=row[6],
            user_reaction=row[7],
            user_correction=row[8],
            corrected_output=row[9],
            state=row[11],
            reason=row[10],
            source_event_id=row[12],
            created_at=row[13],
            metadata=row[14],
            decision_memory_id=link[0] if link else None,
        )

    def create_decision_review(
        self, review: DecisionReview, decision: NewMemory | None, answer: str | None
    ) -> DecisionReview:
        def run(conn: Conn) -> DecisionReview:
            now = time.time()
            found = conn.execute(
                "SELECT 1 FROM feedback_events WHERE workspace = %s AND id = %s",
                (review.workspace, review.event_id),
            ).fetchone()
            if found is None:
                raise NotFoundError(
                    f"feedback event {review.event_id!r} not found in workspace "
                    f"{review.workspace!r}"
                )
            memory_id: str | None = None
            if answer is not None:
                link = conn.execute(
                    "SELECT memory_id FROM decision_memories WHERE workspace = %s "
                    "AND event_id = %s AND answer = %s",
                    (review.workspace, review.event_id, answer),
                ).fetchone()
                if link is not None:
                    memory_id = link[0]
                elif decision is not None:
                    memory_id = self._insert_linked_memory(conn, decision, now)
                    # Two reviews racing to link the same answer: the first link stands.
                    linked = conn.execute(
                        "INSERT INTO decision_memories (workspace, event_id, answer, memory_id, "
                        "created_at) VALUES (%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING "
                        "RETURNING memory_id",
                        (review.workspace, review.event_id, answer, memory_id, now),
                    ).fetchone()
                    if linked is None:
                        raise pg_errors.SerializationFailure("answer linked concurrently")
            conn.execute(
                "INSERT INTO decision_reviews (id, workspace, user_id, agent_id, event_id, "
                "final_decision, outcome, confidence, reversed, reason, decision_memory_id, "
                "created_at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                (
                    review.id, review.workspace, review.user_id, review.agent_id,
                    review.event_id, review.final_decision, review.outcome, review.confidence,
                    bool(review.reversed), review.reason, memory_id, review.created_at,
                ),
            )  # fmt: skip
            review.decision_memory_id = memory_id
            return review

        return self._tx("creating the decision review", run)

    def create_preference_pair(
        self,
        pair: PreferencePair,
        context_embedding: np.ndarray,
        accepted_embedding: np.ndarray,
        rejected_embedding: np.ndarray,
        memory: NewMemory,
    ) -> PreferencePair:
        def run(conn: Conn) -> PreferencePair:
            memory_id = self._insert_linked_memory(conn, memory, time.time())
            conn.execute(
                "INSERT INTO preference_pairs (id, workspace, user_id, agent_id, session_id, "
                "context, accepted_output, rejected_output, weight, memory_id, created_at, "
                "context_embedding, accepted_embedding, rejected_embedding) "
                "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%b,%b,%b)",
                (
                    pair.id, pair.workspace, pair.user_id, pair.agent_id, pair.session_id,
                    pair.context, pair.accepted_output, pair.rejected_output, pair.weight,
                    memory_id, pair.created_at, _Vector(context_embedding),
                    _Vector(accepted_embedding), _Vector(rejected_embedding),
                ),
            )  # fmt: skip
            pair.memory_id = memory_id
            return pair

        return self._tx("creating the preference pair", run)

    def log_event(self, event: LoggedEvent) -> LoggedEvent:
        self._tx(
            "logging the event",
            lambda c: c.execute(
                "INSERT INTO logged_events (id, workspace, user_id, agent_id, session_id, kind, "
                "payload, created_at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s)",
                (
                    event.id,
                    event.workspace,
                    event.user_id,
                    event.agent_id,
                    event.session_id,
                    event.kind,
                    _json(event.payload),
                    event.created_at,
                ),
            ),
        )
        return event

    def rate_memory(
        self,
        rating: MemoryRating,
        context_embedding: np.ndarray | None,
        correction: NewMemory | None,
    ) -> MemoryRating:
        def run(conn: Conn) -> MemoryRating:
            # FOR SHARE: a concurrent forget cannot delete the memory under the new rating.
            found = conn.execute(
                "SELECT 1 FROM memories WHERE workspace = %s AND id = %s FOR SHARE",
                (rating.workspace, rating.memory_id),
            ).fetchone()
            if found is None:
                raise NotFoundError(
                    f"memory {rating.memory_id!r} not found in workspace {rating.workspace!r}"
                )
            correction_id = None
            if correction is not None:
                correction_id = self._insert_linked_memory(conn, correction, time.time())
            conn.execute(
                "INSERT INTO memory_ratings (id, workspace, user_id, agent_id, session_id, "
                "memory_id, verdict, correction, correction_memory_id, weight, recall_id, "
                "context, context_embedding, created_at) "
                "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%b,%s)",
                (
                    rating.id, rating.workspace, rating.user_id, rating.agent_id,
                    rating.session_id, rating.memory_id, rating.verdict, rating.correction,
                    correction_id, rating.weight, rating.recall_id, rating.context,
                    None if context_embedding is None else _Vector(context_embedding),
                    rating.created_at,
                ),
            )  # fmt: skip
            if correction is not None:
                rating.correction_memory_id = correction_id
            return rating

        return self._tx("rating the memory", run)

    def get_feedback_record(self, kind: str, workspace: str, record_id: str) -> FeedbackRecord:
        table, columns, _ = FEEDBACK_TABLES[kind]

        def run(conn: Conn) -> FeedbackRecord:
            row = conn.execute(
                f"SELECT {columns} FROM {table} WHERE workspace = %s AND id = %s",
                (workspace, record_id),
            ).fetchone()
            if row is None:
                raise NotFoundError(
                    f"{kind.replace('_', ' ')} {record_id!r} not found in workspace {workspace!r}"
                )
            return self._feedback_record(conn, kind, row)

        return self._tx("reading the feedback record", run)

    def list_feedback_records(
        self, kind: str, scope: Scope, limit: int, offset: int
    ) -> list[FeedbackRecord]:
        table, columns, scoped = FEEDBACK_TABLES[kind]
        where, params = _scope_where(
            scope if scoped else Scope(scope.workspace, scope.user_id, scope.agent_id)
        )

        def run(conn: Conn) -> list[FeedbackRecord]:
            rows = conn.execute(
                f"SELECT {columns} FROM {table} WHERE {where} ORDER BY seq LIMIT %s OFFSET %s",
                [*params, limit, offset],
            ).fetchall()
            return [self._feedback_record(conn, kind, r) for r in rows]

        return self._tx("listing feedback records", run)

    def _feedback_record(self, conn: Conn, kind: str, row: Sequence[Any]) -> FeedbackRecord:
        if kind == "feedback_event":
            return self._event(conn, row)
        if kind == "decision_review":
            return DecisionReview(
                id=row[0],
                workspace=row[1],
                user_id=row[2],
                agent_id=row[3],
                event_id=row[4],
                final_decision=row[5],
                outcome=row[6],
                confidence=row[7],
                reversed=bool(row[8]),
                reason=row[9],
                decision_memory_id=row[10],
                created_at=row[11],
            )
        if kind == "preference_pair":
            return PreferencePair(*row)
        if kind == "logged_event":
            return LoggedEvent(*row)
        return MemoryRating(*row)

    def learning_facts(
        self,
        scope: Scope,
        memory_ids: Sequence[str],
        since: float | None = None,
        limit: int | None = None,
    ) -> tuple[list[EventFacts], list[PairFacts], list[RatingFacts]]:
        user_clause = ""
        params: list[Any] = [scope.workspace]
        if scope.user_id is not None:
            # A user's own records and the workspace-wide ones (no user) apply to that user.
            user_clause = " AND (user_id = %s OR user_id IS NULL)"
            params.append(scope.user_id)
        ids = list(dict.fromkeys(memory_ids))
        start = -1e300 if since is None else since

        def run(conn: Conn) -> tuple[list[EventFacts], list[PairFacts], list[RatingFacts]]:
            # One snapshot for the whole read, like a single SQLite read transaction.
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            cur = conn.cursor(binary=True)
            events: dict[str, EventFacts] = {}
            for r in cur.execute(
                "SELECT id, state, reason, created_at, context_embedding, ai_output_embedding, "
                "corrected_embedding, ai_output, coalesce(corrected_output, user_correction) "
                "FROM (SELECT * FROM feedback_events e "
                f"WHERE workspace = %s{user_clause} AND (created_at >= %s OR EXISTS "
                "(SELECT 1 FROM decision_reviews r WHERE r.workspace = e.workspace "
                "AND r.event_id = e.id AND r.created_at >= %s)) ORDER BY seq DESC LIMIT %s) t "
                "ORDER BY seq",
                [*params, start, start, limit],
            ).fetchall():
                events[r[0]] = EventFacts(
                    event_id=r[0],
                    state=r[1],
                    reason=r[2],
                    created_at=r[3],
                    context_vec=r[4],
                    ai_output_vec=r[5],
                    corrected_vec=r[6],
                    answers={},
                    ai_output=r[7],
                    corrected=r[8],
                )
            if events:
                event_ids = list(events)
                for event_id, answer, memory_id in cur.execute(
                    "SELECT d.event_id, d.answer, d.memory_id FROM decision_memories d "
                    "JOIN memories m ON m.workspace = d.workspace AND m.id = d.memory_id "
                    "AND m.status = 'active' WHERE d.workspace = %s AND d.event_id = ANY(%s)",
                    (scope.workspace, event_ids),
                ).fetchall():
                    events[event_id].answers[answer] = memory_id
                for r in cur.execute(
                    "SELECT event_id, final_decision, outcome, confidence, reversed, "
                    "created_at, reason FROM decision_reviews WHERE workspace = %s "
                    "AND event_id = ANY(%s) ORDER BY seq",
                    (scope.workspace, event_ids),
                ).fetchall():
                    if r[0] in events:
                        events[r[0]].reviews.append(
                            ReviewFacts(r[1], r[2], r[3], bool(r[4]), r[5], r[6])
                        )
            pairs = [
                PairFacts(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8])
                for r in cur.execute(
                    "SELECT id, weight, created_at, context_embedding, accepted_embedding, "
                    "rejected_embedding, memory_id, accepted_output, rejected_output "
                    "FROM (SELECT * FROM preference_pairs "
                    f"WHERE workspace = %s{user_clause} AND created_at >= %s "
                    "ORDER BY seq DESC LIMIT %s) t ORDER BY seq",
                    [*params, start, limit],
                ).fetchall()
            ]
            ratings = [
                RatingFacts(r[0], r[1], r[2], r[3], r[4], r[5], r[6])
                for r in cur.execute(
                    "SELECT id, memory_id, verdict, weight, created_at, context_embedding, "
                    "recall_id FROM memory_ratings WHERE workspace = %s AND memory_id = ANY(%s) "
                    "AND created_at >= %s ORDER BY seq",
                    (scope.workspace, ids, start),
                ).fetchall()
            ] if ids else []  # fmt: skip
            return list(events.values()), pairs, ratings

        return self._tx("reading feedback", run)

    def reply_facts(
        self,
        scope: Scope,
        context: Callable[[], np.ndarray],
        context_min: float,
        since: float,
        limit: int,
        witnesses: Sequence[tuple[str, str]] = (),
    ) -> list[ReplyFacts]:
        where, params = _scope_where(scope, "m")
        user_clause = ""
        user_params: list[Any] = []
        if scope.user_id is not None:
            user_clause = " AND (user_id = %s OR user_id IS NULL)"
            user_params.append(scope.user_id)
        wanted_pairs = set(witnesses)
        witness_recalls = list({r for r, _ in witnesses})

        def run(conn: Conn) -> list[Any]:
            cur = conn.cursor(binary=True)
            scoped = f"FROM reply_signals WHERE workspace = %s{user_clause} AND created_at >= %s"
            any_signal = cur.execute(
                f"SELECT 1 {scoped} LIMIT 1", [scope.workspace, *user_params, since]
            ).fetchone()
            # The matching recalls first (pgvector's distance in the server), then only
            # their signals: the cost follows the matches, not the signals stored.
            matched: list[str] = []
            if any_signal:
                matched = [
                    r[0]
                    for r in cur.execute(
                        f"SELECT recall_id {scoped} AND context_embedding <=> %b <= %s "
                        "GROUP BY recall_id ORDER BY max(seq) DESC LIMIT %s",
                        [
                            scope.workspace,
                            *user_params,
                            since,
                            _Vector(context()),
                            1.0 - context_min,
                            limit,
                        ],
                    ).fetchall()
                ]
            recall_ids = list(dict.fromkeys([*matched, *witness_recalls]))
            if not recall_ids:
                return []
            rows = cur.execute(
                "SELECT r.memory_id, r.recall_id, r.value, r.created_at, r.context_embedding "
                "FROM reply_signals r JOIN memories m ON m.workspace = r.workspace "
                "AND m.id = r.memory_id AND m.status = 'active' "
                f"WHERE r.workspace = %s AND r.recall_id = ANY(%s) AND r.created_at >= %s "
                f"AND {where}",
                [scope.workspace, recall_ids, since, *params],
            ).fetchall()
            keep = set(matched)
            return [r for r in rows if r[1] in keep or (r[1], r[0]) in wanted_pairs]

        rows = self._tx("reading reply signals", run)
        seen: set[tuple[str, str]] = set()
        out = []
        for memory_id, recall_id, value, created_at, vector in rows:
            if (recall_id, memory_id) not in seen:
                seen.add((recall_id, memory_id))
                out.append(ReplyFacts(memory_id, recall_id, value, created_at, vector))
        return out

    @staticmethod
    def _forget_feedback(conn: Conn, scope: Scope) -> None:
        """Delete a scope's feedback records (``forget`` of a whole user, agent or session)."""
        where, params = _scope_where(scope)
        gone = [
            r[0]
            for r in conn.execute(
                f"DELETE FROM feedback_events WHERE {where} RETURNING id", params
            ).fetchall()
        ]
        if gone:
            for table in ("decision_memories", "decision_reviews"):
                conn.execute(
                    f"DELETE FROM {table} WHERE workspace = %s AND event_id = ANY(%s)",
                    (scope.workspace, gone),
                )
        for table, scoped in (
            ("decision_reviews", False),
            ("preference_pairs", True),
            ("logged_events", True),
            ("memory_ratings", True),
            ("reply_signals", True),
        ):
            if not scoped and scope.session_id is not None:
                continue  # reviews carry no session; they went with their events above
            w, p = _scope_where(
                scope if scoped else Scope(scope.workspace, scope.user_id, scope.agent_id)
            )
            conn.execute(f"DELETE FROM {table} WHERE {w}", p)

    # -- API keys --------------------------------------------------------------------------------
    _KEY_COLUMNS = "key_id, key_hash, workspace, user_id, name, created_at, revoked_at"

    def create_api_key(self, record: ApiKeyRecord) -> None:
        def run(conn: Conn) -> None:
            inserted = conn.execute(
                f"INSERT INTO api_keys ({self._KEY_COLUMNS}) VALUES (%s,%s,%s,%s,%s,%s,%s) "
                "ON CONFLICT (key_id) DO NOTHING RETURNING key_id",
                (
                    record.key_id,
                    record.key_hash,
                    record.workspace,
                    record.user_id,
                    record.name,
                    record.created_at,
                    record.revoked_at,
                ),
            ).fetchone()
            if inserted is None:
                raise ConflictError(f"API key {record.key_id!r} already exists")

        self._tx("creating the API key", run)

    def get_api_key(self, key_id: str) -> ApiKeyRecord | None:
        row = self._tx(
            "reading the API key",
            lambda c: c.execute(
                f"SELECT {self._KEY_COLUMNS} FROM api_keys WHERE key_id = %s", (key_id,)
            ).fetchone(),
        )
        return ApiKeyRecord(*row) if row else None

    def list_api_keys(self, workspace: str | None) -> list[ApiKeyRecord]:
        def run(conn: Conn) -> list[Any]:
            if workspace is None:
                return conn.execute(
                    f"SELECT {self._KEY_COLUMNS} FROM api_keys ORDER BY created_at, key_id"
                ).fetchall()
            return conn.execute(
                f"SELECT {self._KEY_COLUMNS} FROM api_keys WHERE workspace = %s "
                "ORDER BY created_at, key_id",
                (workspace,),
            ).fetchall()

        return [ApiKeyRecord(*r) for r in self._tx("listing API keys", run)]

    def revoke_api_key(self, key_id: str) -> bool:
        def run(conn: Conn) -> bool:
            row = conn.execute(
                "SELECT revoked_at FROM api_keys WHERE key_id = %s FOR UPDATE", (key_id,)
            ).fetchone()
            if row is None:
                raise NotFoundError(f"API key {key_id!r} not found")
            if row[0] is not None:
                return False
            conn.execute(
                "UPDATE api_keys SET revoked_at = %s WHERE key_id = %s", (time.time(), key_id)
            )
            return True

        return self._tx("revoking the API key", run)

    # -- bulk copy (engrammar migrate) -----------------------------------------------------------
    #: table -> the columns that order its rows (the cursor of export_rows)
    _COPY_KEYS: dict[str, tuple[str, ...]] = {  # noqa: RUF012
        "meta": ("key",),
        "memories": ("seq",),
        "memory_changes": ("rev",),
        "edges": ("workspace", "src", "dst", "kind"),
        "recalls": ("seq",),
        "feedback_events": ("seq",),
        "decision_memories": ("workspace", "event_id", "answer"),
        "decision_reviews": ("seq",),
        "preference_pairs": ("seq",),
        "logged_events": ("seq",),
        "memory_ratings": ("seq",),
        "reply_signals": ("seq",),
        "api_keys": ("key_id",),
    }

    def _copy_spec(self, table: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        if table not in self._COPY_KEYS or table not in COPY_TABLES:
            raise ValidationError("table", f"cannot copy {table!r}; known: {sorted(COPY_TABLES)}")
        return COPY_TABLES[table], self._COPY_KEYS[table]

    def export_rows(self, table: str, after: Any, limit: int) -> tuple[list[dict[str, Any]], Any]:
        fields, keys = self._copy_spec(table)
        key_sql = ", ".join(keys)
        where = f"WHERE ({key_sql}) > ({', '.join(['%s'] * len(keys))})" if after else ""

        def run(conn: Conn) -> list[Any]:
            with conn.cursor(binary=True) as cur:
                cur.execute(
                    f"SELECT {key_sql}, {', '.join(fields)} FROM {table} {where} "
                    f"ORDER BY {key_sql} LIMIT %s",
                    [*(after or ()), limit],
                )
                return cur.fetchall()

        rows = self._read(f"exporting {table}", run)
        n = len(keys)
        out = [dict(zip(fields, row[n:], strict=True)) for row in rows]
        return out, (tuple(rows[-1][:n]) if len(rows) == limit else None)

    def import_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        sql, params = self._copy_insert(table, rows)
        if table == "meta":
            sql += " ON CONFLICT (key) DO UPDATE SET value = excluded.value"

        def run(conn: Conn) -> None:
            with conn.cursor() as cur:
                cur.executemany(sql, params)

        self._tx(f"importing {table}", run)

    def _copy_insert(
        self, table: str, rows: Sequence[dict[str, Any]]
    ) -> tuple[str, list[Sequence[Any]]]:
        """The INSERT statement and its parameters for exported rows of ``table``."""
        fields, _ = self._copy_spec(table)
        if table == "decision_memories":
            # The embedded store keys these by event alone; here they carry the event's
            # workspace (a distribution key), looked up from the event copied before them.
            sql = (
                "INSERT INTO decision_memories (workspace, event_id, answer, memory_id, "
                "created_at) SELECT e.workspace, %s, %s, %s, %s FROM feedback_events e "
                "WHERE e.id = %s"
            )
            links = [
                (r["event_id"], r["answer"], r["memory_id"], r["created_at"], r["event_id"])
                for r in rows
            ]
            return sql, list(links)
        columns = list(fields)
        marks = ["%b" if f in COPY_VECTOR_FIELDS else "%s" for f in fields]
        if table == "memories":
            columns += ["terms", "doc_len"]
            marks += ["%s::tsvector", "%s"]
        sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(marks)})"
        params: list[Sequence[Any]] = []
        for item in rows:
            values = []
            for name in fields:
                value = item[name]
                if value is not None and name in COPY_JSON_FIELDS:
                    value = _json(value)
                elif value is not None and name in COPY_VECTOR_FIELDS:
                    value = _Vector(value)
                values.append(value)
            if table == "memories":
                values += list(_analysed(item["content"], item["metadata"]))
            params.append(values)
        return sql, params

"""The embedded store: one SQLite database file (WAL) holding everything.

One writer connection (serialised by a lock, ``BEGIN IMMEDIATE`` so that concurrent processes
queue on SQLite's lock with a busy timeout); reads on per-thread connections that see every
committed write. Vector and keyword search run on an in-process :class:`ScopeIndex` per
(workspace, user) partition, refreshed from the ``memory_changes`` log whenever the database
changed (``PRAGMA data_version``), so writes from other processes become visible at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ...errors import ConflictError, NotFoundError, StoreError, ValidationError
from ...models import Edge, MemoryRecord, Scope, StoreFacts
from ..base import (
    EdgeAdjustment,
    EdgeBounds,
    ImportBundle,
    MemoryUpdate,
    NewEdge,
    NewMemory,
    RecallRecord,
)
from ..schema import row_order
from ..sql.chunk_rows import CHUNK_FIELDS, chunk_params
from ..sql.feedback import Facts
from ..sql.store import RECALL_COLUMNS, Dialect, apply_migrations, recall_values, scope_where
from ..tables import (
    COPY_BOOL_FIELDS,
    COPY_JSON_FIELDS,
    COPY_TABLES,
    COPY_VECTOR_FIELDS,
    EDGE_CHANGE_KNOWN,
    MEMORY_COLUMNS,
    write_records,
)
from .backup import backup_file, restore_file
from .index import ByteLRU, ContextIndex, ScopeIndex
from .index_terms import memory_terms
from .migrations import MIGRATIONS
from .search import SQLiteSearch

__all__ = ["SQLiteStore", "backup_file", "restore_file"]

T = TypeVar("T")

#: Scopes remembered as holding no feedback record (forgotten all at once past this many).
_WITHOUT_FEEDBACK = 4096


def _blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def _vec(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


# One encoder for every write: json.dumps builds a new one for any argument of its own.
_ENCODER = json.JSONEncoder(ensure_ascii=False)


def _json(value: Any) -> str:
    return _ENCODER.encode(value)


#: One writer at a time (BEGIN IMMEDIATE): no row locks; at most 500 values in one IN list.
DIALECT = Dialect(
    name="sqlite",
    mark="?",
    vector_mark="?",
    vector=_blob,
    json=_json,
    from_json=json.loads,
    in_chunk=500,
    from_vector=_vec,
    no_limit=-1,
    recall_order="rowid",
)

#: Decision links carry their event's workspace, looked up from the event copied before them
#: (an export names the event alone); a link to an event not stored is skipped.
#: The fields that tell an edge change apart, in EDGE_CHANGE_KNOWN's order.
_CHANGE_KEY = ("workspace", "src", "dst", "kind", "at", "recall_id")

_CHUNK_INSERT = (
    f"INSERT INTO memory_chunks ({', '.join(CHUNK_FIELDS)}) "
    f"VALUES ({', '.join('?' * len(CHUNK_FIELDS))})"
)
_MEMORY_INSERT = (
    "INSERT INTO memories (id, workspace, user_id, agent_id, session_id, role, content, kind, "
    "status, created_at, updated_at, metadata, dedup_key, embedding, valid_until, "
    "superseded_by, index_terms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
_CHANGE_INSERT = (
    "INSERT INTO memory_changes (memory_id, workspace, user_id, op, before, after, reason, "
    "created_at) VALUES (?,?,?,?,?,?,?,?)"
)
_DECISION_INSERT = (
    "INTO decision_memories (workspace, event_id, answer, memory_id, created_at) "
    "SELECT e.workspace, ?, ?, ?, ? FROM feedback_events e WHERE e.id = ?"
)


def _memory_params(row: NewMemory, now: float) -> tuple[Any, ...]:
    """The parameters of ``_MEMORY_INSERT`` for ``row``."""
    return (
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
        json.dumps(row.metadata, ensure_ascii=False),
        row.dedup_key,
        np.ascontiguousarray(row.embedding, dtype=np.float32).tobytes(),
        row.valid_until,
        row.superseded_by,
        memory_terms(row.content, row.metadata),
    )


def _private_store(file: Path) -> None:
    """Create the store's folder (0700) and database file (0600) readable by their owner
    only: memories are private. A folder or file that already exists keeps its mode (it is
    the user's to set); SQLite gives its -wal and -shm files the database file's mode."""
    folder = file.parent
    if not folder.exists():
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
    if not file.exists():
        with contextlib.suppress(FileExistsError):  # another process made it first
            os.close(os.open(file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def _begin_immediate(conn: sqlite3.Connection) -> None:
    """Begin a write transaction on ``conn`` now (taking SQLite's write lock), or say the
    store is busy."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise StoreError(f"the store is busy ({exc}); try again") from exc


class SQLiteStore(SQLiteSearch):
    """The embedded default store (see the module docstring and :class:`~..base.Store`)."""

    dialect = DIALECT

    def __init__(
        self,
        file: str | Path,
        *,
        busy_timeout_ms: int = 10_000,
        bm25_k1: float = 1.2,
        bm25_b: float = 0.1,
        ann_threshold: int = 200_000,
        scope_cache_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self.file = Path(file)
        # ":memory:": one private in-memory database per store, shared by all its connections
        # (each plain ":memory:" connection would open its own, empty one). The writer
        # connection holds it open until close().
        self._target: str | Path = self.file
        if str(file) == ":memory:":
            self._target = f"file:engrammar-{uuid.uuid4().hex}?mode=memory&cache=shared"
        else:
            try:
                _private_store(self.file)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the store folder {self.file.parent}: {exc}"
                ) from exc
        self._timeout = busy_timeout_ms / 1000
        self._k1 = bm25_k1
        self._b = bm25_b
        self._ann_threshold = ann_threshold
        self._write_lock = threading.RLock()
        self._index_lock = threading.Lock()
        self._local = threading.local()
        self._all_conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._closed = False
        self._dim: int | None = None
        # Scope indexes and feedback-context indexes in separate caches, each bounded by
        # scope_cache_bytes: in one, a scope over the budget (100k memories) and its user's
        # small context index evicted each other on every recall, and the scope was reloaded.
        self._indexes: ByteLRU[ScopeIndex] = ByteLRU(scope_cache_bytes)
        self._contexts: ByteLRU[ContextIndex] = ByteLRU(scope_cache_bytes)
        self._knowledge = ByteLRU(scope_cache_bytes)
        self._rows: OrderedDict[str, tuple[Any, ...]] = OrderedDict()
        self._rows_lock = threading.Lock()
        self._rows_rev = 0
        self._rows_version: int | None = None
        self._rows_epoch = 0
        # (workspace, user) -> the data_version at which the scope held no feedback record.
        self._without_feedback: dict[tuple[str, str | None], int] = {}
        self._edges_version: int | None = None
        self._edge_rows: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
        self._writer = self._connect()
        self._sync_conn = self._connect()
        self._migrate()

    # -- connections -----------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self._target,
                timeout=self._timeout,
                isolation_level=None,
                check_same_thread=False,
                uri=isinstance(self._target, str),
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the store {self.file}: {exc}") from exc
        with self._conns_lock:
            self._all_conns.append(conn)
        return conn

    def _reader(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError("the store is closed")
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        if self._closed:
            raise StoreError("the store is closed")
        with self._write_lock:
            conn = self._writer
            _begin_immediate(conn)
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                conn.execute("ROLLBACK")
                raise StoreError(f"commit failed: {exc}") from exc

    def save_recall(self, record: RecallRecord) -> None:
        # Written on the connection the caches are synced on, with the writer's lock: SQLite
        # leaves a connection's ``PRAGMA data_version`` as it was after its own commits, so a
        # recall's record (which no cache holds) does not make the next recall look again at
        # the change logs of memories, reply signals and knowledge (five reads). The write
        # lock is taken first, as every write takes it, then the caches' lock.
        if self._closed:
            raise StoreError("the store is closed")
        sql = f"INSERT INTO recalls ({RECALL_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
        args = recall_values(record, DIALECT.json)
        with self._write_lock, self._index_lock:
            conn = self._sync_conn
            _begin_immediate(conn)
            try:
                conn.execute(sql, args)
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                conn.execute("ROLLBACK")
                raise StoreError(f"saving the recall failed: {exc}") from exc

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            return self._reader().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"read failed: {exc}") from exc

    def close(self) -> None:
        self._closed = True
        with self._conns_lock:
            for conn in self._all_conns:
                with suppress(sqlite3.Error):
                    conn.close()
            self._all_conns.clear()

    def _migrate(self) -> None:
        try:
            with self._write() as conn:
                apply_migrations(conn, MIGRATIONS, DIALECT, "REAL")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot prepare the store {self.file}: {exc}") from exc

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self._read("SELECT name FROM migrations ORDER BY name")]

    def _run(
        self,
        what: str,
        fn: Callable[[sqlite3.Connection], T],
        *,
        write: bool = True,
        single: bool = False,
        snapshot: bool = False,
    ) -> T:
        try:
            if write:
                with self._write() as conn:
                    return fn(conn)
            if not snapshot:
                return fn(self._reader())
            conn = self._reader()
            conn.execute("BEGIN")
            try:
                return fn(conn)
            finally:
                conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"{what} failed: {exc}") from exc

    def _synced_version(self) -> int:
        """``PRAGMA data_version`` of the connection the caches are synced on."""
        try:
            with self._index_lock:
                return self._data_version()
        except sqlite3.Error as exc:
            raise StoreError(f"read failed: {exc}") from exc

    def _no_feedback_since(self, scope: Scope, since: float | None) -> bool:
        # Every recall asks; most scopes have no feedback record, which the probe of
        # ``_facts_reader`` found at a version of the database that nothing changed since.
        found = self._without_feedback.get((scope.workspace, scope.user_id))
        return found is not None and found == self._synced_version()

    def _read_together(self, what: str, send: Callable[[Any], Callable[[], T]]) -> T:
        return self._run(what, lambda conn: send(conn)(), write=False, snapshot=True)

    def _facts_reader(
        self, scope: Scope, memory_ids: Sequence[str], since: float | None, limit: int | None
    ) -> Callable[[Any], Callable[[], Facts]]:
        # One probe first, in the same snapshot: a scope without events, pairs or ratings
        # (most recalls' scopes) is not asked for them (five statements, one with an
        # ``IN`` list of every candidate).
        # The user's own records and the workspace-wide ones (each an index range).
        users = [(" AND user_id IS NULL", [scope.workspace])]
        if scope.user_id is not None:
            users.insert(0, (" AND user_id = ?", [scope.workspace, scope.user_id]))
        probe = " UNION ALL ".join(
            "SELECT "
            + " OR ".join(f"EXISTS (SELECT 1 FROM {t} WHERE workspace = ?{u})" for u, _ in users)
            for t in ("feedback_events", "preference_pairs", "memory_ratings")
        )
        args = [a for _ in range(3) for _, part in users for a in part]
        # The database's version before the probe's snapshot: a scope found without records
        # stays so until the version changes (:meth:`_no_feedback_since`).
        version = self._synced_version()

        def send(conn: Any) -> Callable[[], Facts]:
            found = [bool(r[0]) for r in conn.execute(probe, args).fetchall()]
            if not any(found):
                if len(self._without_feedback) >= _WITHOUT_FEEDBACK:
                    self._without_feedback.clear()
                self._without_feedback[(scope.workspace, scope.user_id)] = version
                return lambda: ([], [], [])
            parts = (found[0], found[1], found[2])
            return self._learning_reader(scope, memory_ids, since, limit, parts)(conn)

        return send

    def _location(self) -> str:
        return str(self.file)

    def _store_facts(self, conn: sqlite3.Connection) -> StoreFacts:
        size = sum(p.stat().st_size for p in (self.file, Path(f"{self.file}-wal")) if p.exists())
        return {"store": "sqlite", "file": str(self.file), "bytes_on_disk": size}

    def _link_decision(
        self,
        conn: sqlite3.Connection,
        workspace: str,
        event_id: str,
        answer: str,
        memory_id: str,
        now: float,
    ) -> None:
        conn.execute(
            "INSERT INTO decision_memories (workspace, event_id, answer, memory_id, created_at) "
            "VALUES (?,?,?,?,?)",
            (workspace, event_id, answer, memory_id, now),
        )

    def integrity_check(self) -> str:
        return str(self._read("PRAGMA integrity_check")[0][0])

    # -- memories --------------------------------------------------------------------------------
    def add_memories(
        self, rows: Sequence[NewMemory], edges: Sequence[NewEdge] = ()
    ) -> list[tuple[str, bool]]:
        try:
            with self._write() as conn:
                return self._add_rows(conn, rows, edges, time.time())
        except sqlite3.Error as exc:
            raise StoreError(f"add failed: {exc}") from exc

    def _insert_memory(self, conn: sqlite3.Connection, row: NewMemory, now: float) -> str | None:
        """Insert ``row`` with its windows and its history line; if a memory with the same
        ``dedup_key`` is there already, insert nothing and return that memory's id."""
        existing = conn.execute(
            "SELECT id FROM memories WHERE dedup_key = ?", (row.dedup_key,)
        ).fetchone()
        if existing is not None:
            return str(existing[0])
        self._insert_new(conn, [row], now)
        return None

    def _insert_new(self, conn: sqlite3.Connection, rows: Sequence[NewMemory], now: float) -> None:
        """Insert ``rows`` (none of them stored yet), then their windows, then their history
        lines: each table's rows in the order of ``rows``, one statement each."""
        conn.executemany(_MEMORY_INSERT, [_memory_params(row, now) for row in rows])
        conn.executemany(
            _CHUNK_INSERT,
            [p for row in rows if row.chunks for p in chunk_params(row, row.chunks, _blob)],
        )
        conn.executemany(
            _CHANGE_INSERT,
            [
                (row.id, row.workspace, row.user_id, "add", None, row.content, "", time.time())
                for row in rows
            ],
        )

    def _add_rows(
        self,
        conn: sqlite3.Connection,
        rows: Sequence[NewMemory],
        edges: Sequence[NewEdge],
        now: float,
    ) -> list[tuple[str, bool]]:
        # The stored memories of the batch's dedup keys, read at once; a repeat within the
        # batch is the first row of its key.
        keys = list(dict.fromkeys(row.dedup_key for row in rows))
        known: dict[str, str] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            known.update(
                conn.execute(
                    f"SELECT dedup_key, id FROM memories WHERE dedup_key IN ({marks})", chunk
                ).fetchall()
            )
        out: list[tuple[str, bool]] = []
        rename: dict[str, str] = {}
        fresh: list[NewMemory] = []
        for row in rows:
            existing = known.get(row.dedup_key)
            if existing is None:
                known[row.dedup_key] = row.id
                fresh.append(row)
                out.append((row.id, True))
            else:
                rename[row.id] = existing
                out.append((existing, False))
        self._insert_new(conn, fresh, now)
        workspace = rows[0].workspace if rows else ""
        self._insert_edges(conn, workspace, edges, rename, now)
        self._supersede(conn, workspace, edges, rename)
        return out

    def import_bundle(self, bundle: ImportBundle) -> list[tuple[str, bool]]:
        rows, edges, records = bundle.rows, bundle.edges, bundle.records
        try:
            with self._write() as conn:
                out = self._add_rows(conn, rows, edges, time.time())
                rename = {r.id: got for r, (got, _) in zip(rows, out, strict=True) if got != r.id}

                def insert(table: str, mine: list[dict[str, Any]]) -> None:
                    fields, _ = self._copy_spec(table)
                    sql = (
                        f"INSERT OR IGNORE INTO {table} ({', '.join(fields)}) "
                        f"SELECT {', '.join('?' * len(fields))}"
                    )
                    params = self._copy_params(fields, mine)
                    if table == "decision_memories":
                        # Only links to an event of this import (not one skipped as known).
                        sql = "INSERT OR IGNORE " + _DECISION_INSERT
                        params = [[*p, p[0]] for p in params]
                    elif table == "edge_changes":
                        sql += f" WHERE NOT EXISTS ({EDGE_CHANGE_KNOWN})"
                        at = fields.index
                        params = [[*p, *(p[at(k)] for k in _CHANGE_KEY)] for p in params]
                    conn.executemany(sql, params)

                write_records(records, rename, insert, partial(self._stored_event, conn))
                return out
        except sqlite3.Error as exc:
            raise StoreError(f"import failed: {exc}") from exc

    def _insert_edges(
        self,
        conn: sqlite3.Connection,
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
                updated = now if edge.updated_at is None else edge.updated_at
                params.append((workspace, src, dst, edge.kind, edge.weight, updated))
        conn.executemany(
            "INSERT INTO edges (workspace, src, dst, kind, weight, updated_at) "
            "VALUES (?,?,?,?,?,?) ON CONFLICT (src, dst, kind) DO UPDATE SET "
            "weight = max(weight, excluded.weight), updated_at = excluded.updated_at",
            params,
        )

    def update_memory(self, workspace: str, memory_id: str, change: MemoryUpdate) -> MemoryRecord:
        content, embedding, dedup_key = change.content, change.embedding, change.dedup_key
        metadata, status = change.metadata, change.status
        try:
            with self._write() as conn:
                row = conn.execute(
                    f"SELECT {MEMORY_COLUMNS} FROM memories WHERE workspace = ? AND id = ?",
                    (workspace, memory_id),
                ).fetchone()
                if row is None:
                    raise NotFoundError(
                        f"memory {memory_id!r} not found in workspace {workspace!r}"
                    )
                old = self._record(row)
                sets: list[str] = ["updated_at = ?"]
                params: list[Any] = [time.time()]
                if content is not None and embedding is not None and dedup_key is not None:
                    clash = conn.execute(
                        "SELECT id FROM memories WHERE dedup_key = ? AND id != ?",
                        (dedup_key, memory_id),
                    ).fetchone()
                    if clash is not None:
                        raise ConflictError(
                            f"memory {clash[0]!r} of the same scope already has this content"
                        )
                    sets += ["content = ?", "embedding = ?", "dedup_key = ?"]
                    params += [
                        content,
                        np.ascontiguousarray(embedding, dtype=np.float32).tobytes(),
                        dedup_key,
                    ]
                    # The windows of the old text go; the new text's (if long) replace them.
                    conn.execute("DELETE FROM memory_chunks WHERE memory_id = ?", (memory_id,))
                    conn.executemany(_CHUNK_INSERT, chunk_params(old, change.chunks, _blob))
                if metadata is not None:
                    sets.append("metadata = ?")
                    params.append(json.dumps(metadata, ensure_ascii=False))
                if status is not None:
                    sets.append("status = ?")
                    params.append(status)
                if "content = ?" in sets or metadata is not None:
                    text = content if "content = ?" in sets and content else old.content
                    sets.append("index_terms = ?")  # the text or its speaker changes
                    params.append(
                        memory_terms(text, old.metadata if metadata is None else metadata)
                    )
                conn.execute(
                    f"UPDATE memories SET {', '.join(sets)} WHERE id = ?", [*params, memory_id]
                )
                self._updated(conn, old, change)
                new = conn.execute(
                    f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,)
                ).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"update failed: {exc}") from exc
        return self._record(new)

    def forget(
        self, scope: Scope, ids: Sequence[str] | None, edge_bounds: EdgeBounds | None = None
    ) -> int:
        where, params = scope_where(scope)
        try:
            with self._write() as conn:
                if ids is None and edge_bounds is not None:
                    self._forget_learning(conn, scope, *edge_bounds)
                if ids is None:
                    rows = conn.execute(
                        f"SELECT id, workspace, user_id FROM memories WHERE {where}", params
                    ).fetchall()
                else:
                    rows = []
                    for start in range(0, len(ids), 500):
                        chunk = list(ids[start : start + 500])
                        marks = ",".join("?" * len(chunk))
                        rows += conn.execute(
                            f"SELECT id, workspace, user_id FROM memories WHERE {where} "
                            f"AND id IN ({marks})",
                            [*params, *chunk],
                        ).fetchall()
                for memory_id, workspace, user_id in rows:
                    self._restore_superseded(conn, workspace, [memory_id])
                    conn.execute(
                        "DELETE FROM edges WHERE src = ? OR dst = ?", (memory_id, memory_id)
                    )
                    conn.execute(
                        "DELETE FROM edge_changes WHERE workspace = ? AND (src = ? OR dst = ?)",
                        (workspace, memory_id, memory_id),
                    )
                    conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
                    # The history of a forgotten memory keeps no content.
                    conn.execute(
                        "UPDATE memory_changes SET before = NULL, after = NULL WHERE memory_id = ?",
                        (memory_id,),
                    )
                    self._log(conn, memory_id, workspace, user_id, "forget", None, None)
                if ids is None:
                    self._forget_feedback(conn, scope)
                    # The scope's recalls hold its queries: forgetting a user removes them too.
                    conn.execute(f"DELETE FROM recalls WHERE {where}", params)
                else:
                    for memory_id, _, _ in rows:
                        conn.execute("DELETE FROM memory_ratings WHERE memory_id = ?", (memory_id,))
        except sqlite3.Error as exc:
            raise StoreError(f"forget failed: {exc}") from exc
        return len(rows)

    # -- graph -----------------------------------------------------------------------------------
    def adjust_edges(self, workspace: str, change: EdgeAdjustment) -> list[Edge] | None:
        deltas, (lo, hi) = change.deltas, change.bounds
        consume_recall, reply_signals = change.consume_recall, change.reply_signals
        now = time.time()
        changed: list[Edge] = []
        try:
            with self._write() as conn:
                if consume_recall is not None:
                    cur = conn.execute(
                        "UPDATE recalls SET consumed_at = ? WHERE id = ? AND workspace = ? "
                        "AND consumed_at IS NULL",
                        (now, consume_recall, workspace),
                    )
                    if cur.rowcount != 1:
                        return None
                for d in deltas:
                    # One writer at a time: the weight read here is the one updated below.
                    found = conn.execute(
                        "SELECT weight FROM edges WHERE workspace = ? AND src = ? AND dst = ? "
                        "AND kind = ?",
                        (workspace, d.src, d.dst, d.kind),
                    ).fetchone()
                    if found is None:
                        continue
                    before = found[0]
                    after = min(hi, max(lo, before + d.delta))
                    if after != before:
                        conn.execute(
                            "UPDATE edges SET weight = ?, updated_at = ? WHERE workspace = ? "
                            "AND src = ? AND dst = ? AND kind = ?",
                            (after, now, workspace, d.src, d.dst, d.kind),
                        )
                        changed.append(Edge(d.src, d.dst, d.kind, after, now))
                    conn.execute(
                        "INSERT INTO edge_changes (workspace, src, dst, kind, delta, weight, "
                        "recall_id, at, before) VALUES (?,?,?,?,?,?,?,?,?)",
                        (
                            workspace,
                            d.src,
                            d.dst,
                            d.kind,
                            d.delta,
                            after,
                            consume_recall,
                            now,
                            before,
                        ),
                    )
                conn.executemany(
                    "INSERT OR IGNORE INTO reply_signals (workspace, user_id, agent_id, session_id, "
                    "recall_id, memory_id, value, alignment, context_embedding, created_at, "
                    "source) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
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
                            _blob(r.context_embedding),
                            r.created_at,
                            r.source,
                        )
                        for r in reply_signals
                    ],
                )
        except sqlite3.Error as exc:
            raise StoreError(f"edge update failed: {exc}") from exc
        return changed

    # -- bulk copy (engrammar migrate) -----------------------------------------------------------
    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        # Nothing to defer: the in-process index is built lazily on the first search.
        yield

    #: table -> the column that orders its rows (the cursor of export_rows)
    _COPY_KEYS: dict[str, str] = {  # noqa: RUF012
        table: row_order(table, "sqlite")[0] for table in COPY_TABLES
    }

    def _copy_spec(self, table: str) -> tuple[tuple[str, ...], str]:
        if table not in self._COPY_KEYS or table not in COPY_TABLES:
            raise ValidationError("table", f"cannot copy {table!r}; known: {sorted(COPY_TABLES)}")
        return COPY_TABLES[table], self._COPY_KEYS[table]

    def export_rows(self, table: str, after: Any, limit: int) -> tuple[list[dict[str, Any]], Any]:
        fields, key = self._copy_spec(table)
        rows = self._read(
            f"SELECT {key}, {', '.join(fields)} FROM {table} WHERE {key} > ? "
            f"ORDER BY {key} LIMIT ?",
            (after if after is not None else -1, limit),
        )
        out = []
        for row in rows:
            item = dict(zip(fields, row[1:], strict=True))
            for name, value in item.items():
                if value is None:
                    continue
                if name in COPY_JSON_FIELDS:
                    item[name] = json.loads(value)
                elif name in COPY_VECTOR_FIELDS:
                    item[name] = np.frombuffer(value, dtype=np.float32).copy()
                elif name in COPY_BOOL_FIELDS:
                    item[name] = bool(value)
            out.append(item)
        return out, (rows[-1][0] if len(rows) == limit else None)

    def import_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        fields, _ = self._copy_spec(table)
        verb = "INSERT OR REPLACE" if table == "meta" else "INSERT"
        sql = f"{verb} INTO {table} ({', '.join(fields)}) VALUES ({', '.join('?' * len(fields))})"
        params = self._copy_params(fields, rows)
        if table == "decision_memories":
            sql = "INSERT " + _DECISION_INSERT
            params = [[*p, p[0]] for p in params]
        try:
            with self._write() as conn:
                conn.executemany(sql, params)
        except sqlite3.Error as exc:
            raise StoreError(f"importing {table} failed: {exc}") from exc

    @staticmethod
    def _copy_params(fields: Sequence[str], rows: Sequence[dict[str, Any]]) -> list[list[Any]]:
        params = []
        for item in rows:
            values = []
            for name in fields:
                value = item[name]
                if value is not None and name in COPY_JSON_FIELDS:
                    value = json.dumps(value, ensure_ascii=False)
                elif value is not None and name in COPY_VECTOR_FIELDS:
                    value = np.ascontiguousarray(value, dtype=np.float32).tobytes()
                elif value is not None and name in COPY_BOOL_FIELDS:
                    value = int(value)
                values.append(value)
            params.append(values)
        return params

    # -- feedback records ------------------------------------------------------------------------
    def _insert_linked_memory(self, conn: sqlite3.Connection, row: NewMemory, now: float) -> str:
        """Insert a memory made by a feedback record, or return the identical one already there."""
        return self._insert_memory(conn, row, now) or row.id

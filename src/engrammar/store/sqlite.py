"""The embedded store: one SQLite database file (WAL) holding everything.

One writer connection (serialised by a lock, ``BEGIN IMMEDIATE`` so that concurrent processes
queue on SQLite's lock with a busy timeout); reads on per-thread connections that see every
committed write. Vector and keyword search run on an in-process :class:`ScopeIndex` per
(workspace, user) partition, refreshed from the ``memory_changes`` log whenever the database
changed (``PRAGMA data_version``), so writes from other processes become visible at once.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..errors import ConflictError, NotFoundError, StoreError, ValidationError
from ..learn.scoring import ReplyFacts
from ..models import (
    Edge,
    MemoryRecord,
    Scope,
)
from ..recall.text import index_text, terms
from .base import (
    EdgeDelta,
    NewEdge,
    NewMemory,
    ReplySignal,
)
from .index import ContextIndex, IndexRow, ScopeIndex
from .migrations import MIGRATIONS
from .sql import Dialect, SQLStore, scope_where
from .sqlite_backup import backup_file, restore_file
from .tables import (
    COPY_BOOL_FIELDS,
    COPY_JSON_FIELDS,
    COPY_TABLES,
    COPY_VECTOR_FIELDS,
    MEMORY_COLUMNS,
    write_records,
)

__all__ = ["SQLiteStore", "backup_file", "restore_file"]

T = TypeVar("T")

#: Memory rows kept in memory for ``get_memories`` (about 1 KB each).
_ROW_CACHE = 20_000


def _blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def _vec(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


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
_DECISION_INSERT = (
    "INTO decision_memories (workspace, event_id, answer, memory_id, created_at) "
    "SELECT e.workspace, ?, ?, ?, ? FROM feedback_events e WHERE e.id = ?"
)


def _speaker(metadata_json: str) -> str | None:
    # Only the speaker is needed for the index; skip decoding metadata that cannot hold one.
    if '"speaker"' not in metadata_json:
        return None
    speaker = json.loads(metadata_json).get("speaker")
    return speaker if isinstance(speaker, str) and speaker.strip() else None


def _partition_users(conn: sqlite3.Connection, scope: Scope, table: str) -> list[str | None]:
    """The users whose (workspace, user) partitions of ``table`` the scope covers."""
    if scope.user_id is not None:
        return [scope.user_id]
    return [
        r[0]
        for r in conn.execute(
            f"SELECT DISTINCT user_id FROM {table} WHERE workspace = ?", (scope.workspace,)
        )
    ]


class SQLiteStore(SQLStore):
    """The embedded default store (see the module docstring and :class:`~.base.Store`)."""

    dialect = DIALECT

    def __init__(
        self,
        file: str | Path,
        *,
        busy_timeout_ms: int = 10_000,
        bm25_k1: float = 1.2,
        bm25_b: float = 0.1,
        ann_threshold: int = 200_000,
    ) -> None:
        self.file = Path(file)
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the store folder {self.file.parent}: {exc}") from exc
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
        self._indexes: dict[tuple[str, str | None], ScopeIndex] = {}
        self._contexts: dict[tuple[str, str | None], ContextIndex] = {}
        self._rows: OrderedDict[str, tuple[Any, ...]] = OrderedDict()
        self._rows_lock = threading.Lock()
        self._rows_rev = 0
        self._rows_version: int | None = None
        self._rows_epoch = 0
        self._context_versions: dict[tuple[str, str | None], int | None] = {}
        self._writer = self._connect()
        self._sync_conn = self._connect()
        self._migrate()

    # -- connections -----------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.file, timeout=self._timeout, isolation_level=None, check_same_thread=False
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
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StoreError(f"the store is busy ({exc}); try again") from exc
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
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL)"
                )
                done = {r[0] for r in conn.execute("SELECT name FROM migrations")}
                for migration in MIGRATIONS:
                    if migration.__name__ not in done:
                        migration(conn)
                        conn.execute(
                            "INSERT INTO migrations (name, applied_at) VALUES (?, ?)",
                            (migration.__name__, time.time()),
                        )
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

    def _location(self) -> str:
        return str(self.file)

    def _store_facts(self, conn: sqlite3.Connection) -> dict[str, Any]:
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

    # -- meta ------------------------------------------------------------------------------------
    # -- memories --------------------------------------------------------------------------------
    def add_memories(
        self, rows: Sequence[NewMemory], edges: Sequence[NewEdge] = ()
    ) -> list[tuple[str, bool]]:
        try:
            with self._write() as conn:
                return self._add_rows(conn, rows, edges, time.time())
        except sqlite3.Error as exc:
            raise StoreError(f"add failed: {exc}") from exc

    def _add_rows(
        self,
        conn: sqlite3.Connection,
        rows: Sequence[NewMemory],
        edges: Sequence[NewEdge],
        now: float,
    ) -> list[tuple[str, bool]]:
        out: list[tuple[str, bool]] = []
        rename: dict[str, str] = {}
        for row in rows:
            existing = conn.execute(
                "SELECT id FROM memories WHERE dedup_key = ?", (row.dedup_key,)
            ).fetchone()
            if existing is not None:
                rename[row.id] = existing[0]
                out.append((existing[0], False))
                continue
            conn.execute(
                "INSERT INTO memories (id, workspace, user_id, agent_id, session_id, role, "
                "content, kind, status, created_at, updated_at, metadata, dedup_key, "
                "embedding) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
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
                    json.dumps(row.metadata, ensure_ascii=False),
                    row.dedup_key,
                    np.ascontiguousarray(row.embedding, dtype=np.float32).tobytes(),
                ),
            )
            self._log(conn, row.id, row.workspace, row.user_id, "add", None, row.content)
            out.append((row.id, True))
        self._insert_edges(conn, rows[0].workspace if rows else "", edges, rename, now)
        return out

    def import_bundle(
        self,
        rows: Sequence[NewMemory],
        edges: Sequence[NewEdge],
        records: Sequence[tuple[str, dict[str, Any]]],
    ) -> list[tuple[str, bool]]:
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
                    conn.executemany(sql, params)

                def stored_event(workspace: str, source_event_id: str) -> str | None:
                    found = conn.execute(
                        "SELECT id FROM feedback_events WHERE workspace = ? AND source_event_id = ?",
                        (workspace, source_event_id),
                    ).fetchone()
                    return None if found is None else str(found[0])

                write_records(records, rename, insert, stored_event)
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
        for edge in edges:
            src = rename.get(edge.src, edge.src)
            dst = rename.get(edge.dst, edge.dst)
            if src == dst:
                continue
            conn.execute(
                "INSERT INTO edges (workspace, src, dst, kind, weight, updated_at) "
                "VALUES (?,?,?,?,?,?) ON CONFLICT (src, dst, kind) DO UPDATE SET "
                "weight = max(weight, excluded.weight), updated_at = excluded.updated_at",
                (
                    workspace,
                    src,
                    dst,
                    edge.kind,
                    edge.weight,
                    now if edge.updated_at is None else edge.updated_at,
                ),
            )

    def get_memories(self, workspace: str, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        # Recall reads the rows of ~200 candidates and neighbours several times over; most
        # were read by the recall before. Rows (immutable tuples) are kept by id until the
        # change log names the memory; each caller still gets records of its own.
        cache = self._rows
        epoch = self._sync_rows()
        rows: dict[str, tuple[Any, ...]] = {}
        missing: list[str] = []
        with self._rows_lock:
            for memory_id in dict.fromkeys(ids):
                row = cache.get(memory_id)
                if row is not None and row[1] == workspace:
                    cache.move_to_end(memory_id)
                    rows[memory_id] = row
                else:
                    missing.append(memory_id)
        read: list[tuple[Any, ...]] = []
        for start in range(0, len(missing), 500):
            chunk = missing[start : start + 500]
            marks = ",".join("?" * len(chunk))
            read += self._read(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE +workspace = ? AND id IN ({marks})",
                [workspace, *chunk],
            )
        with self._rows_lock:
            # Rows read while another thread learned of a change may be stale: not kept.
            keep = epoch == self._rows_epoch
            for row in read:
                rows[row[0]] = row
                if keep:
                    cache[row[0]] = row
            while len(cache) > _ROW_CACHE:
                cache.popitem(last=False)
        return {memory_id: self._record(row) for memory_id, row in rows.items()}

    def _sync_rows(self) -> int:
        """Drop the cached rows of memories changed since the last look (by any process, from
        the change log), and return the cache's epoch (bumped on every drop)."""
        with self._index_lock:
            conn = self._sync_conn
            try:
                version = conn.execute("PRAGMA data_version").fetchone()[0]
                if version == self._rows_version:
                    return self._rows_epoch
                if self._rows_version is None:  # nothing cached yet: start at the log's end
                    self._rows_rev = conn.execute(
                        "SELECT coalesce(max(rev), 0) FROM memory_changes"
                    ).fetchone()[0]
                    self._rows_version = version
                    return self._rows_epoch
                changed = conn.execute(
                    "SELECT rev, memory_id FROM memory_changes WHERE rev > ? ORDER BY rev",
                    (self._rows_rev,),
                ).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"read failed: {exc}") from exc
            with self._rows_lock:
                if changed:
                    for _, memory_id in changed:
                        self._rows.pop(memory_id, None)
                    self._rows_rev = changed[-1][0]
                    self._rows_epoch += 1
                self._rows_version = version
                return self._rows_epoch

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
                if metadata is not None:
                    sets.append("metadata = ?")
                    params.append(json.dumps(metadata, ensure_ascii=False))
                if status is not None:
                    sets.append("status = ?")
                    params.append(status)
                conn.execute(
                    f"UPDATE memories SET {', '.join(sets)} WHERE id = ?", [*params, memory_id]
                )
                op = "update" if content is not None else ("status" if status else "metadata")
                after = content if content is not None else (status or json.dumps(metadata))
                before = old.content if content is not None else (old.status if status else None)
                self._log(conn, memory_id, workspace, old.user_id, op, before, after, reason)
                if edges is not None:
                    self._replace_edges(conn, workspace, memory_id, edges)
                new = conn.execute(
                    f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,)
                ).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"update failed: {exc}") from exc
        return self._record(new)

    def forget(self, scope: Scope, ids: Sequence[str] | None) -> int:
        where, params = scope_where(scope)
        try:
            with self._write() as conn:
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
                    conn.execute(
                        "DELETE FROM edges WHERE src = ? OR dst = ?", (memory_id, memory_id)
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

    # -- search ----------------------------------------------------------------------------------
    def _partitions(self, scope: Scope) -> list[ScopeIndex]:
        """The synced indexes of every (workspace, user) partition the scope covers."""
        with self._index_lock:
            conn = self._sync_conn
            data_version = conn.execute("PRAGMA data_version").fetchone()[0]
            out = []
            users = _partition_users(conn, scope, "memories")
            for user in users:
                index = self._indexes.get((scope.workspace, user))
                if index is None:
                    index = self._load_partition(scope.workspace, user)
                    index.data_version = data_version
                    self._indexes[(scope.workspace, user)] = index
                elif index.data_version != data_version:
                    self._refresh(index, scope.workspace, user)
                    index.data_version = data_version
                out.append(index)
            return out

    def _dimension(self) -> int:
        if self._dim is None:
            row = self._sync_conn.execute(
                "SELECT value FROM meta WHERE key = 'embedder'"
            ).fetchone()
            self._dim = json.loads(row[0])["dim"] if row else 384
        return self._dim

    def _load_partition(self, workspace: str, user: str | None) -> ScopeIndex:
        conn = self._sync_conn
        index = ScopeIndex(self._dimension(), self._k1, self._b, self._ann_threshold)
        conn.execute("BEGIN")
        try:
            rev = conn.execute("SELECT coalesce(max(rev), 0) FROM memory_changes").fetchone()[0]
            cursor = conn.execute(
                "SELECT id, agent_id, session_id, created_at, content, embedding, metadata FROM memories "
                "WHERE workspace = ? AND user_id IS ? AND status = 'active' ORDER BY seq",
                (workspace, user),
            )
            for row in cursor:
                index.upsert(self._index_row(row))
        finally:
            conn.execute("COMMIT")
        index.rev = rev
        return index

    @staticmethod
    def _index_row(row: tuple[Any, ...]) -> IndexRow:
        return IndexRow(
            id=row[0],
            agent_id=row[1],
            session_id=row[2],
            created_at=row[3],
            content=index_text(row[4], _speaker(row[6])),
            embedding=np.frombuffer(row[5], dtype=np.float32),
        )

    def _refresh(self, index: ScopeIndex, workspace: str, user: str | None) -> None:
        conn = self._sync_conn
        conn.execute("BEGIN")
        try:
            changes = conn.execute(
                "SELECT rev, memory_id FROM memory_changes WHERE workspace = ? AND user_id IS ? "
                "AND rev > ? ORDER BY rev",
                (workspace, user, index.rev),
            ).fetchall()
            top = conn.execute("SELECT coalesce(max(rev), 0) FROM memory_changes").fetchone()[0]
            touched = list(dict.fromkeys(c[1] for c in changes))
            current: dict[str, tuple[Any, ...]] = {}
            for start in range(0, len(touched), 500):
                chunk = touched[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for row in conn.execute(
                    "SELECT id, agent_id, session_id, created_at, content, embedding, metadata FROM memories "
                    f"WHERE id IN ({marks}) AND status = 'active' ORDER BY seq",
                    chunk,
                ):
                    current[row[0]] = row
        finally:
            conn.execute("COMMIT")
        for memory_id in touched:
            if memory_id in current:
                index.upsert(self._index_row(current[memory_id]))
            else:
                index.remove(memory_id)
        index.rev = top

    def vector_search(self, scope: Scope, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        try:
            parts = self._partitions(scope)
            hits: list[tuple[str, float]] = []
            with self._index_lock:
                for index in parts:
                    hits += index.vector_search(query, k, scope.agent_id, scope.session_id)
        except sqlite3.Error as exc:
            raise StoreError(f"search failed: {exc}") from exc
        hits.sort(key=lambda h: -h[1])
        return hits[:k]

    def vector_searches(
        self, scope: Scope, queries: np.ndarray, k: int
    ) -> list[list[tuple[str, float]]]:
        try:
            parts = self._partitions(scope)
            out: list[list[tuple[str, float]]] = [[] for _ in range(len(queries))]
            with self._index_lock:
                for index in parts:
                    found = index.vector_searches(queries, k, scope.agent_id, scope.session_id)
                    for row, hits in zip(out, found, strict=True):
                        row += hits
        except sqlite3.Error as exc:
            raise StoreError(f"search failed: {exc}") from exc
        if len(parts) > 1:
            out = [sorted(row, key=lambda h: -h[1])[:k] for row in out]
        return out

    def keyword_search(self, scope: Scope, text: str, k: int) -> list[tuple[str, float]]:
        query_terms = terms(text)
        if not query_terms:
            return []
        try:
            parts = self._partitions(scope)
            hits: list[tuple[str, float]] = []
            with self._index_lock:
                for index in parts:
                    hits += index.keyword_search(query_terms, k, scope.agent_id, scope.session_id)
        except sqlite3.Error as exc:
            raise StoreError(f"search failed: {exc}") from exc
        hits.sort(key=lambda h: -h[1])
        return hits[:k]

    def fts_search(self, scope: Scope, text: str, k: int) -> list[tuple[str, float]]:
        """Full-text search with SQLite FTS5 (porter stemming, its fixed BM25 parameters).

        The in-process index behind :meth:`keyword_search` ranks conversational text better
        (stop words, tunable length normalisation); FTS5 needs no index in memory.
        """
        words = [w for w in terms(text) if w]
        if not words:
            return []
        # Each term quoted: user text never reaches FTS5's query syntax.
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in dict.fromkeys(words))
        where, params = scope_where(scope, "m")
        rows = self._read(
            f"SELECT m.id, -bm25(memories_fts) FROM memories_fts JOIN memories m "
            f"ON m.seq = memories_fts.rowid WHERE memories_fts MATCH ? AND {where} "
            "AND m.status = 'active' ORDER BY bm25(memories_fts) LIMIT ?",
            [match, *params, k],
        )
        return [(r[0], float(r[1])) for r in rows]

    def vectors(self, workspace: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        ids = list(dict.fromkeys(ids))
        # Recall asks right after a search synced the partition: its in-memory vectors are
        # current whenever no commit happened since (the same data_version), and reading them
        # skips a blob query per call (~3 ms of a 10k-memory recall).
        with self._index_lock:
            data_version = self._sync_conn.execute("PRAGMA data_version").fetchone()[0]
            for (index_workspace, _), index in self._indexes.items():
                if index_workspace == workspace and index.data_version == data_version:
                    out.update(index.vectors_of([i for i in ids if i not in out]))
        ids = [i for i in ids if i not in out]
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for memory_id, blob in self._read(
                f"SELECT id, embedding FROM memories WHERE +workspace = ? AND id IN ({marks})",
                [workspace, *chunk],
            ):
                out[memory_id] = np.frombuffer(blob, dtype=np.float32)
        return out

    def term_postings(
        self, scope: Scope, terms: Sequence[str], limit: int
    ) -> tuple[int, dict[str, tuple[int, list[str]]]]:
        wanted = list(dict.fromkeys(terms))
        total = 0
        merged: dict[str, tuple[int, list[str]]] = {t: (0, []) for t in wanted}
        try:
            parts = self._partitions(scope)
            with self._index_lock:
                for index in parts:
                    n, found = index.term_postings(wanted, limit, scope.agent_id, scope.session_id)
                    total += n
                    for term, (df, ids) in found.items():
                        old_df, old_ids = merged[term]
                        merged[term] = (old_df + df, (old_ids + ids)[:limit])
        except sqlite3.Error as exc:
            raise StoreError(f"search failed: {exc}") from exc
        return total, merged

    # -- graph -----------------------------------------------------------------------------------
    def adjust_edges(
        self,
        workspace: str,
        deltas: Sequence[EdgeDelta],
        lo: float,
        hi: float,
        consume_recall: str | None = None,
        reply_signals: Sequence[ReplySignal] = (),
    ) -> list[Edge] | None:
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
                    # The arithmetic runs in SQL so concurrent writers never lose an update.
                    row = conn.execute(
                        "UPDATE edges SET weight = min(?, max(?, weight + ?)), updated_at = ? "
                        "WHERE workspace = ? AND src = ? AND dst = ? AND kind = ? "
                        "AND min(?, max(?, weight + ?)) != weight "
                        "RETURNING src, dst, kind, weight, updated_at",
                        (hi, lo, d.delta, now, workspace, d.src, d.dst, d.kind, hi, lo, d.delta),
                    ).fetchone()
                    if row is not None:
                        changed.append(Edge(*row))
                conn.executemany(
                    "INSERT OR IGNORE INTO reply_signals (workspace, user_id, agent_id, session_id, "
                    "recall_id, memory_id, value, alignment, context_embedding, created_at) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?)",
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
                        )
                        for r in reply_signals
                    ],
                )
        except sqlite3.Error as exc:
            raise StoreError(f"edge update failed: {exc}") from exc
        return changed

    # -- recalls ---------------------------------------------------------------------------------
    # -- bulk copy (engrammar migrate) -----------------------------------------------------------
    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        # Nothing to defer: the in-process index is built lazily on the first search.
        yield

    #: table -> the column that orders its rows (the cursor of export_rows)
    _COPY_KEYS: dict[str, str] = {  # noqa: RUF012
        "meta": "rowid",
        "memories": "seq",
        "memory_changes": "rev",
        "edges": "rowid",
        "recalls": "rowid",
        "feedback_events": "seq",
        "decision_memories": "rowid",
        "decision_reviews": "seq",
        "preference_pairs": "seq",
        "logged_events": "seq",
        "memory_ratings": "seq",
        "reply_signals": "seq",
        "api_keys": "rowid",
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
        existing = conn.execute(
            "SELECT id FROM memories WHERE dedup_key = ?", (row.dedup_key,)
        ).fetchone()
        if existing is not None:
            return str(existing[0])
        conn.execute(
            "INSERT INTO memories (id, workspace, user_id, agent_id, session_id, role, content, "
            "kind, status, created_at, updated_at, metadata, dedup_key, embedding) "
            "VALUES (?,?,?,?,?,?,?,?,'active',?,?,?,?,?)",
            (
                row.id,
                row.workspace,
                row.user_id,
                row.agent_id,
                row.session_id,
                row.role,
                row.content,
                row.kind,
                row.created_at,
                now,
                json.dumps(row.metadata, ensure_ascii=False),
                row.dedup_key,
                _blob(row.embedding),
            ),
        )
        self._log(conn, row.id, row.workspace, row.user_id, "add", None, row.content)
        return row.id

    def reply_facts(
        self,
        scope: Scope,
        context: Callable[[], np.ndarray],
        context_min: float,
        since: float,
        limit: int,
        witnesses: Sequence[tuple[str, str]] = (),
    ) -> list[ReplyFacts]:
        found, known = self._matching_recalls(scope, context, context_min, since)
        matched = [r for _, r in sorted(found, reverse=True)[:limit]]
        wanted_pairs = set(witnesses)
        recall_ids = list(dict.fromkeys([*matched, *(r for r, _ in witnesses)]))
        if not recall_ids:
            return []
        where, params = scope_where(scope, "m")
        matched_set = set(matched)
        rows: list[Any] = []
        for first in range(0, len(recall_ids), 500):
            chunk = recall_ids[first : first + 500]
            marks = ",".join("?" * len(chunk))
            rows += self._read(
                "SELECT r.memory_id, r.recall_id, r.value, r.created_at "
                "FROM reply_signals r JOIN memories m ON m.id = r.memory_id "
                f"AND m.status = 'active' WHERE r.workspace = ? AND r.recall_id IN ({marks}) "
                f"AND r.created_at >= ? AND r.workspace = m.workspace AND {where}",
                [scope.workspace, *chunk, since, *params],
            )
        rows = [r for r in rows if r[1] in matched_set or (r[1], r[0]) in wanted_pairs]
        missing = list({r[1] for r in rows} - set(known))
        for first in range(0, len(missing), 500):
            part = missing[first : first + 500]
            marks = ",".join("?" * len(part))
            for recall_id, blob in self._read(
                "SELECT recall_id, context_embedding FROM reply_signals "
                f"WHERE workspace = ? AND recall_id IN ({marks}) GROUP BY recall_id",
                [scope.workspace, *part],
            ):
                known[recall_id] = _vec(blob)
        seen: set[tuple[str, str]] = set()
        out = []
        for memory_id, recall_id, value, created_at in rows:
            if (recall_id, memory_id) not in seen and recall_id in known:
                seen.add((recall_id, memory_id))
                out.append(ReplyFacts(memory_id, recall_id, value, created_at, known[recall_id]))
        return out

    def _matching_recalls(
        self, scope: Scope, context: Callable[[], np.ndarray], context_min: float, since: float
    ) -> tuple[list[tuple[int, str]], dict[str, np.ndarray]]:
        """The fed-back recalls of the scope's users whose query matches ``context`` (see
        :class:`~.index.ContextIndex`), as ``(seq, recall_id)``, and their query vectors.
        Each partition's index catches up from ``seq`` whenever the database changed."""
        with self._index_lock:
            conn = self._sync_conn
            data_version = conn.execute("PRAGMA data_version").fetchone()[0]
            users = _partition_users(conn, scope, "reply_signals")
            if scope.user_id is not None:
                users.append(None)  # workspace-wide recalls count for every user
            indexes = []
            for user in users:
                key = (scope.workspace, user)
                index = self._contexts.get(key)
                if index is None:
                    index = self._contexts[key] = ContextIndex(self._dimension())
                    self._context_versions[key] = None
                if self._context_versions[key] != data_version:
                    self._catch_up(index, scope.workspace, user)
                    self._context_versions[key] = data_version
                    index.prune(since)
                if index.newest >= since:
                    indexes.append(index)
        matched: list[tuple[int, str]] = []
        known: dict[str, np.ndarray] = {}
        if not indexes:
            return matched, known
        query = context()  # embedding may take milliseconds: not under the lock
        with self._index_lock:
            for index in indexes:
                for seq, recall_id in index.matching(query, context_min, since):
                    matched.append((seq, recall_id))
                    vector = index.vector(recall_id)
                    if vector is not None:
                        known[recall_id] = vector.copy()
        return matched, known

    def _catch_up(self, index: ContextIndex, workspace: str, user: str | None) -> None:
        conn = self._sync_conn
        try:
            # A recall's signals share its query, time and transaction: one row each.
            for first, last, recall_id, created_at, blob in conn.execute(
                "SELECT min(seq), max(seq), recall_id, created_at, context_embedding "
                "FROM reply_signals WHERE workspace = ? AND user_id IS ? AND seq > ? "
                "GROUP BY recall_id ORDER BY 1",
                (workspace, user, index.last_seq),
            ):
                index.add(first, recall_id, created_at, _vec(blob))
                index.last_seq = max(index.last_seq, last)
        except sqlite3.Error as exc:
            raise StoreError(f"read failed: {exc}") from exc

    # -- API keys --------------------------------------------------------------------------------

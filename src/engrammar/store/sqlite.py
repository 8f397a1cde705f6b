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
from typing import Any

import numpy as np

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
from ..recall.text import index_text, terms
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
from .index import ContextIndex, IndexRow, ScopeIndex
from .migrations import MIGRATIONS
from .tables import (
    COPY_BOOL_FIELDS,
    COPY_JSON_FIELDS,
    COPY_TABLES,
    COPY_VECTOR_FIELDS,
    EVENT_COLUMNS,
    FEEDBACK_TABLES,
    MEMORY_COLUMNS,
    write_records,
)

__all__ = ["SQLiteStore"]

#: Memory rows kept in memory for ``get_memories`` (about 1 KB each).
_ROW_CACHE = 20_000


def _blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def _vec(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


def _record(row: sqlite3.Row | tuple[Any, ...]) -> MemoryRecord:
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
        metadata=json.loads(row[11]),
    )


def _speaker(metadata_json: str) -> str | None:
    # Only the speaker is needed for the index; skip decoding metadata that cannot hold one.
    if '"speaker"' not in metadata_json:
        return None
    speaker = json.loads(metadata_json).get("speaker")
    return speaker if isinstance(speaker, str) and speaker.strip() else None


def _scope_where(scope: Scope, alias: str = "") -> tuple[str, list[Any]]:
    p = f"{alias}." if alias else ""
    clauses = [f"{p}workspace = ?"]
    params: list[Any] = [scope.workspace]
    for key in ("user_id", "agent_id", "session_id"):
        value = getattr(scope, key)
        if value is not None:
            clauses.append(f"{p}{key} = ?")
            params.append(value)
    return " AND ".join(clauses), params


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


class SQLiteStore:
    """The embedded default store (see the module docstring and :class:`~.base.Store`)."""

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

    def integrity_check(self) -> str:
        return str(self._read("PRAGMA integrity_check")[0][0])

    # -- meta ------------------------------------------------------------------------------------
    def check_embedder(self, name: str, dim: int) -> None:
        with self._write() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('embedder', ?)",
                    (json.dumps({"name": name, "dim": dim}),),
                )
            else:
                known = json.loads(row[0])
                if known["dim"] != dim:
                    raise EmbedderError(
                        f"the store at {self.file} holds {known['dim']}-dimensional vectors from "
                        f"{known['name']!r}; the embedder {name!r} makes {dim}. Use the same "
                        "embedder, or export and re-import into a new store."
                    )
                if known["name"] != name:
                    conn.execute(
                        "UPDATE meta SET value = ? WHERE key = 'embedder'",
                        (json.dumps({"name": name, "dim": dim}),),
                    )
        self._dim = dim

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
                        sql += " WHERE EXISTS (SELECT 1 FROM feedback_events WHERE id = ?)"
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

    def _replace_edges(
        self, conn: sqlite3.Connection, workspace: str, memory_id: str, edges: Sequence[NewEdge]
    ) -> None:
        where = "workspace = ? AND (src = ? OR dst = ?) AND kind != 'sequence'"
        args = (workspace, memory_id, memory_id)
        learned = {
            (r[0], r[1], r[2]): r[3]
            for r in conn.execute(f"SELECT src, dst, kind, weight FROM edges WHERE {where}", args)
        }
        conn.execute(f"DELETE FROM edges WHERE {where}", args)
        self._insert_edges(conn, workspace, rebuilt_edges(edges, learned), {}, time.time())

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

    @staticmethod
    def _log(
        conn: sqlite3.Connection,
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
            "created_at) VALUES (?,?,?,?,?,?,?,?)",
            (memory_id, workspace, user_id, op, before, after, reason, time.time()),
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
        return {memory_id: _record(row) for memory_id, row in rows.items()}

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

    def list_memories(self, scope: Scope, limit: int, offset: int) -> list[MemoryRecord]:
        where, params = _scope_where(scope)
        rows = self._read(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY seq LIMIT ? OFFSET ?",
            [*params, limit, offset],
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
                old = _record(row)
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
        return _record(new)

    def forget(self, scope: Scope, ids: Sequence[str] | None) -> int:
        where, params = _scope_where(scope)
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

    def history(self, workspace: str, memory_id: str) -> list[dict[str, Any]]:
        rows = self._read(
            "SELECT rev, op, before, after, reason, created_at FROM memory_changes "
            "WHERE workspace = ? AND memory_id = ? ORDER BY rev",
            (workspace, memory_id),
        )
        if not rows:
            raise NotFoundError(f"memory {memory_id!r} not found in workspace {workspace!r}")
        return [
            {"rev": r[0], "op": r[1], "before": r[2], "after": r[3], "reason": r[4], "at": r[5]}
            for r in rows
        ]

    def stats(self, scope: Scope) -> dict[str, Any]:
        where, params = _scope_where(scope)
        memories = self._read(f"SELECT count(*) FROM memories WHERE {where}", params)[0][0]
        where_m, params_m = _scope_where(scope, "m")
        edges = self._read(
            f"SELECT count(*) FROM edges e JOIN memories m ON m.id = e.src WHERE {where_m}",
            params_m,
        )[0][0]
        recalls = self._read(f"SELECT count(*) FROM recalls WHERE {where}", params)[0][0]
        by_kind = dict(
            self._read(f"SELECT kind, count(*) FROM memories WHERE {where} GROUP BY kind", params)
        )
        size = sum(p.stat().st_size for p in (self.file, Path(f"{self.file}-wal")) if p.exists())
        return {
            "memories": memories,
            "memories_by_kind": by_kind,
            "edges": edges,
            "recalls": recalls,
            "feedback_records": self._feedback_counts(scope),
            "store": "sqlite",
            "file": str(self.file),
            "bytes_on_disk": size,
        }

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
        where, params = _scope_where(scope, "m")
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

    def latest_memories(self, scope: Scope, limit: int) -> list[MemoryRecord]:
        where, params = _scope_where(scope)
        rows = self._read(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} AND status = 'active' "
            "ORDER BY seq DESC LIMIT ?",
            [*params, limit],
        )
        return [_record(r) for r in rows]

    def memories_of_kind(self, scope: Scope, kind: str, limit: int) -> list[MemoryRecord]:
        where, params = _scope_where(scope)
        rows = self._read(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} AND status = 'active' "
            "AND kind = ? ORDER BY seq DESC LIMIT ?",
            [*params, kind, limit],
        )
        return [_record(r) for r in rows]

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
    def edges_from(
        self, workspace: str, ids: Sequence[str], min_weight: float = 0.0, kind: str | None = None
    ) -> list[Edge]:
        return self._edges("src", workspace, ids, min_weight, kind)

    def edges_to(self, workspace: str, ids: Sequence[str], min_weight: float = 0.0) -> list[Edge]:
        return self._edges("dst", workspace, ids, min_weight)

    def _edges(
        self,
        end: str,
        workspace: str,
        ids: Sequence[str],
        min_weight: float,
        kind: str | None = None,
    ) -> list[Edge]:
        """Edges whose ``end`` ("src" or "dst") is one of ``ids`` (of ``kind`` only, if set)."""
        out: list[Edge] = []
        ids = list(dict.fromkeys(ids))
        of_kind = "" if kind is None else " AND kind = ?"
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            out += [
                Edge(*r)
                for r in self._read(
                    "SELECT src, dst, kind, weight, updated_at FROM edges WHERE workspace = ? "
                    f"AND {end} IN ({marks}) AND weight >= ?{of_kind}",
                    [workspace, *chunk, min_weight, *([] if kind is None else [kind])],
                )
            ]
        return out

    def edge_counts(self, workspace: str, ids: Sequence[str]) -> dict[str, int]:
        ids = list(dict.fromkeys(ids))
        out = dict.fromkeys(ids, 0)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for src, count in self._read(
                f"SELECT src, count(*) FROM edges WHERE workspace = ? AND src IN ({marks}) "
                "GROUP BY src",
                [workspace, *chunk],
            ):
                out[src] = count
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
    def save_recall(self, record: RecallRecord) -> None:
        try:
            with self._write() as conn:
                conn.execute(
                    "INSERT INTO recalls (id, workspace, user_id, agent_id, session_id, query, "
                    "created_at, memory_ids, paths, tensions) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (
                        record.recall_id,
                        record.workspace,
                        record.user_id,
                        record.agent_id,
                        record.session_id,
                        record.query,
                        record.created_at,
                        json.dumps(record.memory_ids),
                        json.dumps(record.paths),
                        json.dumps(record.tensions),
                    ),
                )
        except sqlite3.Error as exc:
            raise StoreError(f"saving the recall failed: {exc}") from exc

    def get_recall(self, scope: Scope, recall_id: str | None) -> RecallRecord | None:
        where, params = _scope_where(scope)
        cols = (
            "id, workspace, user_id, agent_id, session_id, query, created_at, memory_ids, paths, "
            "tensions, consumed_at"
        )
        if recall_id is not None:
            rows = self._read(
                f"SELECT {cols} FROM recalls WHERE {where} AND id = ?", [*params, recall_id]
            )
        else:
            rows = self._read(
                f"SELECT {cols} FROM recalls WHERE {where} AND consumed_at IS NULL "
                "ORDER BY created_at DESC, rowid DESC LIMIT 1",
                params,
            )
        if not rows:
            return None
        r = rows[0]
        return RecallRecord(
            recall_id=r[0],
            workspace=r[1],
            user_id=r[2],
            agent_id=r[3],
            session_id=r[4],
            query=r[5],
            created_at=r[6],
            memory_ids=json.loads(r[7]),
            paths=json.loads(r[8]),
            tensions=json.loads(r[9]),
            consumed_at=r[10],
        )

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

    def create_feedback_event(self, new: NewFeedbackEvent) -> tuple[FeedbackEvent, bool]:
        e = new.event
        now = time.time()
        try:
            with self._write() as conn:
                if e.source_event_id is not None:
                    row = conn.execute(
                        "SELECT id, payload_hash FROM feedback_events "
                        "WHERE workspace = ? AND source_event_id = ?",
                        (e.workspace, e.source_event_id),
                    ).fetchone()
                    if row is not None:
                        if row[1] != new.payload_hash:
                            raise ConflictError(
                                f"source_event_id {e.source_event_id!r} already names event "
                                f"{row[0]!r} in workspace {e.workspace!r} with a different payload"
                            )
                        return self._get_event(conn, row[0]), False
                conn.execute(
                    "INSERT INTO feedback_events (id, workspace, user_id, agent_id, session_id, "
                    "input_context, ai_output, user_reaction, user_correction, corrected_output, "
                    "state, reason, source_event_id, payload_hash, metadata, created_at, "
                    "context_embedding, ai_output_embedding, corrected_embedding) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        e.id,
                        e.workspace,
                        e.user_id,
                        e.agent_id,
                        e.session_id,
                        e.input_context,
                        e.ai_output,
                        e.user_reaction,
                        e.user_correction,
                        e.corrected_output,
                        e.state,
                        e.reason,
                        e.source_event_id,
                        new.payload_hash,
                        json.dumps(e.metadata, ensure_ascii=False),
                        e.created_at,
                        _blob(new.context_embedding),
                        _blob(new.ai_output_embedding),
                        None if new.corrected_embedding is None else _blob(new.corrected_embedding),
                    ),
                )
                if new.decision is not None and new.answer is not None:
                    memory_id = self._insert_linked_memory(conn, new.decision, now)
                    conn.execute(
                        "INSERT INTO decision_memories (event_id, answer, memory_id, created_at) "
                        "VALUES (?,?,?,?)",
                        (e.id, new.answer, memory_id, now),
                    )
                return self._get_event(conn, e.id), True
        except sqlite3.IntegrityError as exc:
            # Only reachable if another writer slipped past BEGIN IMMEDIATE; the constraint holds.
            raise ConflictError(f"source_event_id {e.source_event_id!r}: {exc}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"creating the feedback event failed: {exc}") from exc

    def _get_event(self, conn: sqlite3.Connection, event_id: str) -> FeedbackEvent:
        row = conn.execute(
            f"SELECT {EVENT_COLUMNS} FROM feedback_events WHERE id = ?", (event_id,)
        ).fetchone()
        return self._event(conn, row)

    @staticmethod
    def _event(conn: sqlite3.Connection, row: tuple[Any, ...]) -> FeedbackEvent:
        link = conn.execute(
            "SELECT memory_id FROM decision_memories WHERE event_id = ? AND answer = ?",
            (row[0], {"corrected": "corrected", "adopted": "ai_output"}.get(row[11], "")),
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
            metadata=json.loads(row[14]),
            decision_memory_id=link[0] if link else None,
        )

    def create_decision_review(
        self, review: DecisionReview, decision: NewMemory | None, answer: str | None
    ) -> DecisionReview:
        now = time.time()
        try:
            with self._write() as conn:
                found = conn.execute(
                    "SELECT 1 FROM feedback_events WHERE workspace = ? AND id = ?",
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
                        "SELECT memory_id FROM decision_memories WHERE event_id = ? AND answer = ?",
                        (review.event_id, answer),
                    ).fetchone()
                    if link is not None:
                        memory_id = link[0]
                    elif decision is not None:
                        memory_id = self._insert_linked_memory(conn, decision, now)
                        conn.execute(
                            "INSERT INTO decision_memories (event_id, answer, memory_id, "
                            "created_at) VALUES (?,?,?,?)",
                            (review.event_id, answer, memory_id, now),
                        )
                review.decision_memory_id = memory_id
                conn.execute(
                    "INSERT INTO decision_reviews (id, workspace, user_id, agent_id, event_id, "
                    "final_decision, outcome, confidence, reversed, reason, decision_memory_id, "
                    "created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        review.id,
                        review.workspace,
                        review.user_id,
                        review.agent_id,
                        review.event_id,
                        review.final_decision,
                        review.outcome,
                        review.confidence,
                        int(review.reversed),
                        review.reason,
                        memory_id,
                        review.created_at,
                    ),
                )
        except sqlite3.Error as exc:
            raise StoreError(f"creating the decision review failed: {exc}") from exc
        return review

    def create_preference_pair(
        self,
        pair: PreferencePair,
        context_embedding: np.ndarray,
        accepted_embedding: np.ndarray,
        rejected_embedding: np.ndarray,
        memory: NewMemory,
    ) -> PreferencePair:
        now = time.time()
        try:
            with self._write() as conn:
                pair.memory_id = self._insert_linked_memory(conn, memory, now)
                conn.execute(
                    "INSERT INTO preference_pairs (id, workspace, user_id, agent_id, session_id, "
                    "context, accepted_output, rejected_output, weight, memory_id, created_at, "
                    "context_embedding, accepted_embedding, rejected_embedding) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        pair.id,
                        pair.workspace,
                        pair.user_id,
                        pair.agent_id,
                        pair.session_id,
                        pair.context,
                        pair.accepted_output,
                        pair.rejected_output,
                        pair.weight,
                        pair.memory_id,
                        pair.created_at,
                        _blob(context_embedding),
                        _blob(accepted_embedding),
                        _blob(rejected_embedding),
                    ),
                )
        except sqlite3.Error as exc:
            raise StoreError(f"creating the preference pair failed: {exc}") from exc
        return pair

    def log_event(self, event: LoggedEvent) -> LoggedEvent:
        try:
            with self._write() as conn:
                conn.execute(
                    "INSERT INTO logged_events (id, workspace, user_id, agent_id, session_id, kind, "
                    "payload, created_at) VALUES (?,?,?,?,?,?,?,?)",
                    (
                        event.id,
                        event.workspace,
                        event.user_id,
                        event.agent_id,
                        event.session_id,
                        event.kind,
                        json.dumps(event.payload, ensure_ascii=False),
                        event.created_at,
                    ),
                )
        except sqlite3.Error as exc:
            raise StoreError(f"logging the event failed: {exc}") from exc
        return event

    def rate_memory(
        self,
        rating: MemoryRating,
        context_embedding: np.ndarray | None,
        correction: NewMemory | None,
    ) -> MemoryRating:
        now = time.time()
        try:
            with self._write() as conn:
                found = conn.execute(
                    "SELECT 1 FROM memories WHERE workspace = ? AND id = ?",
                    (rating.workspace, rating.memory_id),
                ).fetchone()
                if found is None:
                    raise NotFoundError(
                        f"memory {rating.memory_id!r} not found in workspace {rating.workspace!r}"
                    )
                if correction is not None:
                    rating.correction_memory_id = self._insert_linked_memory(conn, correction, now)
                conn.execute(
                    "INSERT INTO memory_ratings (id, workspace, user_id, agent_id, session_id, "
                    "memory_id, verdict, correction, correction_memory_id, weight, recall_id, "
                    "context, context_embedding, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        rating.id,
                        rating.workspace,
                        rating.user_id,
                        rating.agent_id,
                        rating.session_id,
                        rating.memory_id,
                        rating.verdict,
                        rating.correction,
                        rating.correction_memory_id,
                        rating.weight,
                        rating.recall_id,
                        rating.context,
                        None if context_embedding is None else _blob(context_embedding),
                        rating.created_at,
                    ),
                )
        except sqlite3.Error as exc:
            raise StoreError(f"rating the memory failed: {exc}") from exc
        return rating

    def get_feedback_record(self, kind: str, workspace: str, record_id: str) -> FeedbackRecord:
        table, columns, _ = FEEDBACK_TABLES[kind]
        conn = self._reader()
        try:
            row = conn.execute(
                f"SELECT {columns} FROM {table} WHERE workspace = ? AND id = ?",
                (workspace, record_id),
            ).fetchone()
            if row is None:
                raise NotFoundError(
                    f"{kind.replace('_', ' ')} {record_id!r} not found in workspace {workspace!r}"
                )
            return self._feedback_record(conn, kind, row)
        except sqlite3.Error as exc:
            raise StoreError(f"read failed: {exc}") from exc

    def list_feedback_records(
        self, kind: str, scope: Scope, limit: int, offset: int
    ) -> list[FeedbackRecord]:
        table, columns, scoped = FEEDBACK_TABLES[kind]
        where, params = _scope_where(
            scope if scoped else Scope(scope.workspace, scope.user_id, scope.agent_id)
        )
        conn = self._reader()
        try:
            rows = conn.execute(
                f"SELECT {columns} FROM {table} WHERE {where} ORDER BY seq LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
            return [self._feedback_record(conn, kind, r) for r in rows]
        except sqlite3.Error as exc:
            raise StoreError(f"read failed: {exc}") from exc

    def _feedback_record(
        self, conn: sqlite3.Connection, kind: str, row: tuple[Any, ...]
    ) -> FeedbackRecord:
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
            return LoggedEvent(
                id=row[0],
                workspace=row[1],
                user_id=row[2],
                agent_id=row[3],
                session_id=row[4],
                kind=row[5],
                payload=json.loads(row[6]),
                created_at=row[7],
            )
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
            user_clause = " AND (user_id = ? OR user_id IS NULL)"
            params.append(scope.user_id)
        start = -1e300 if since is None else since
        newest = -1 if limit is None else limit
        conn = self._reader()
        try:
            conn.execute("BEGIN")
            try:
                events: dict[str, EventFacts] = {}
                for r in conn.execute(
                    "SELECT id, state, reason, created_at, context_embedding, ai_output_embedding, "
                    "corrected_embedding, ai_output, coalesce(corrected_output, user_correction) "
                    "FROM (SELECT * FROM feedback_events "
                    f"WHERE workspace = ?{user_clause} AND (created_at >= ? OR EXISTS "
                    "(SELECT 1 FROM decision_reviews r WHERE r.event_id = feedback_events.id "
                    "AND r.created_at >= ?)) ORDER BY seq DESC LIMIT ?) ORDER BY seq",
                    [*params, start, start, newest],
                ):
                    events[r[0]] = EventFacts(
                        event_id=r[0],
                        state=r[1],
                        reason=r[2],
                        created_at=r[3],
                        context_vec=_vec(r[4]),
                        ai_output_vec=_vec(r[5]),
                        corrected_vec=None if r[6] is None else _vec(r[6]),
                        answers={},
                        ai_output=r[7],
                        corrected=r[8],
                    )
                if events:
                    event_ids = list(events)
                    for first in range(0, len(event_ids), 500):
                        chunk = event_ids[first : first + 500]
                        marks = ",".join("?" * len(chunk))
                        for event_id, answer, memory_id in conn.execute(
                            "SELECT d.event_id, d.answer, d.memory_id FROM decision_memories d "
                            "JOIN memories m ON m.id = d.memory_id AND m.status = 'active' "
                            f"WHERE d.event_id IN ({marks})",
                            chunk,
                        ):
                            events[event_id].answers[answer] = memory_id
                        for r in conn.execute(
                            "SELECT event_id, final_decision, outcome, confidence, reversed, "
                            "created_at, reason FROM decision_reviews "
                            f"WHERE workspace = ? AND event_id IN ({marks}) ORDER BY seq",
                            [scope.workspace, *chunk],
                        ):
                            events[r[0]].reviews.append(
                                ReviewFacts(r[1], r[2], r[3], bool(r[4]), r[5], r[6])
                            )
                pairs = [
                    PairFacts(
                        r[0], r[1], r[2], _vec(r[3]), _vec(r[4]), _vec(r[5]), r[6], r[7], r[8]
                    )
                    for r in conn.execute(
                        "SELECT id, weight, created_at, context_embedding, accepted_embedding, "
                        "rejected_embedding, memory_id, accepted_output, rejected_output "
                        "FROM (SELECT * FROM preference_pairs "
                        f"WHERE workspace = ?{user_clause} AND created_at >= ? "
                        "ORDER BY seq DESC LIMIT ?) ORDER BY seq",
                        [*params, start, newest],
                    )
                ]
                ratings: list[RatingFacts] = []
                ids = list(dict.fromkeys(memory_ids))
                for first in range(0, len(ids), 500):
                    chunk = ids[first : first + 500]
                    marks = ",".join("?" * len(chunk))
                    ratings += [
                        RatingFacts(
                            r[0], r[1], r[2], r[3], r[4], None if r[5] is None else _vec(r[5]), r[6]
                        )
                        for r in conn.execute(
                            "SELECT id, memory_id, verdict, weight, created_at, context_embedding, "
                            "recall_id FROM memory_ratings WHERE workspace = ? "
                            f"AND memory_id IN ({marks}) AND created_at >= ?",
                            [scope.workspace, *chunk, start],
                        )
                    ]
            finally:
                conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"read failed: {exc}") from exc
        return list(events.values()), pairs, ratings

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
        where, params = _scope_where(scope, "m")
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

    def _feedback_counts(self, scope: Scope) -> dict[str, int]:
        out = {}
        for kind, (table, _, has_session) in FEEDBACK_TABLES.items():
            narrowed = (
                scope if has_session else Scope(scope.workspace, scope.user_id, scope.agent_id)
            )
            where, params = _scope_where(narrowed)
            out[kind] = int(self._read(f"SELECT count(*) FROM {table} WHERE {where}", params)[0][0])
        return out

    def _forget_feedback(self, conn: sqlite3.Connection, scope: Scope) -> None:
        """Delete a scope's feedback records (``forget`` of a whole user, agent or session)."""
        where, params = _scope_where(scope)
        event_ids = [
            r[0] for r in conn.execute(f"SELECT id FROM feedback_events WHERE {where}", params)
        ]
        for start in range(0, len(event_ids), 500):
            chunk = event_ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            conn.execute(f"DELETE FROM decision_memories WHERE event_id IN ({marks})", chunk)
            conn.execute(f"DELETE FROM decision_reviews WHERE event_id IN ({marks})", chunk)
        conn.execute(f"DELETE FROM feedback_events WHERE {where}", params)
        for table, scoped in (
            ("decision_reviews", False),
            ("preference_pairs", True),
            ("logged_events", True),
            ("memory_ratings", True),
            ("reply_signals", True),
        ):
            w, p = _scope_where(
                scope if scoped else Scope(scope.workspace, scope.user_id, scope.agent_id)
            )
            if not scoped and scope.session_id is not None:
                continue  # reviews carry no session; they go with their events above
            conn.execute(f"DELETE FROM {table} WHERE {w}", p)

    # -- API keys --------------------------------------------------------------------------------
    _KEY_COLUMNS = "key_id, key_hash, workspace, user_id, name, created_at, revoked_at"

    def create_api_key(self, record: ApiKeyRecord) -> None:
        try:
            with self._write() as conn:
                if conn.execute(
                    "SELECT 1 FROM api_keys WHERE key_id = ?", (record.key_id,)
                ).fetchone():
                    raise ConflictError(f"API key {record.key_id!r} already exists")
                conn.execute(
                    f"INSERT INTO api_keys ({self._KEY_COLUMNS}) VALUES (?,?,?,?,?,?,?)",
                    (
                        record.key_id,
                        record.key_hash,
                        record.workspace,
                        record.user_id,
                        record.name,
                        record.created_at,
                        record.revoked_at,
                    ),
                )
        except sqlite3.Error as exc:
            raise StoreError(f"creating the API key failed: {exc}") from exc

    def get_api_key(self, key_id: str) -> ApiKeyRecord | None:
        rows = self._read(f"SELECT {self._KEY_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,))
        return ApiKeyRecord(*rows[0]) if rows else None

    def list_api_keys(self, workspace: str | None) -> list[ApiKeyRecord]:
        if workspace is None:
            rows = self._read(f"SELECT {self._KEY_COLUMNS} FROM api_keys ORDER BY created_at")
        else:
            rows = self._read(
                f"SELECT {self._KEY_COLUMNS} FROM api_keys WHERE workspace = ? ORDER BY created_at",
                (workspace,),
            )
        return [ApiKeyRecord(*r) for r in rows]

    def revoke_api_key(self, key_id: str) -> bool:
        try:
            with self._write() as conn:
                row = conn.execute(
                    "SELECT revoked_at FROM api_keys WHERE key_id = ?", (key_id,)
                ).fetchone()
                if row is None:
                    raise NotFoundError(f"API key {key_id!r} not found")
                if row[0] is not None:
                    return False
                conn.execute(
                    "UPDATE api_keys SET revoked_at = ? WHERE key_id = ?", (time.time(), key_id)
                )
        except sqlite3.Error as exc:
            raise StoreError(f"revoking the API key failed: {exc}") from exc
        return True


# -- online backup and restore (engrammar backup / restore) ------------------------------------------
def _check_engrammar_db(conn: sqlite3.Connection, what: str) -> None:
    try:
        ok = conn.execute("PRAGMA integrity_check").fetchone()[0]
        has_meta = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{what} is not a readable SQLite database: {exc}") from exc
    if ok != "ok":
        raise StoreError(f"{what} fails the integrity check: {ok}")
    if not has_meta:
        raise StoreError(f"{what} is not an engrammar store (no meta table)")


def backup_file(db_file: str | Path, target: str | Path, *, busy_timeout_ms: int = 10_000) -> int:
    """Copy the live store ``db_file`` to ``target`` with SQLite's online backup API.

    Writers in other processes keep working (WAL: the copy reads one consistent snapshot).
    The copy is written to a temporary file, checked (integrity and schema) and then renamed,
    so ``target`` is either a complete backup or untouched. Returns the pages copied.
    """
    source, dest = Path(db_file), Path(target)
    if not source.is_file():
        raise StoreError(f"no store at {source}")
    if dest.resolve() == source.resolve():
        raise ValidationError("file", "the backup must not be the store itself")
    partial = dest.with_name(dest.name + ".partial")
    partial.unlink(missing_ok=True)
    pages = 0
    try:
        src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=busy_timeout_ms / 1000)
        out = sqlite3.connect(partial)
        try:

            def count(status: int, remaining: int, total: int) -> None:
                nonlocal pages
                pages = total

            src.backup(out, progress=count)
            _check_engrammar_db(out, f"the backup {partial}")
        finally:
            out.close()
            src.close()
        partial.replace(dest)
    except sqlite3.Error as exc:
        raise StoreError(f"backup of {source} to {dest} failed: {exc}") from exc
    finally:
        partial.unlink(missing_ok=True)
    return pages


def restore_file(backup: str | Path, db_file: str | Path, *, busy_timeout_ms: int = 10_000) -> int:
    """Replace the contents of the store ``db_file`` with the backup ``backup``, online.

    The backup is checked first (integrity and schema); the copy runs as one write into the
    live database, so other connections see the old or the new contents, never a mix.
    Processes holding the store open should reopen it afterwards (in-memory caches).
    Returns the pages copied.
    """
    source, dest = Path(backup), Path(db_file)
    if not source.is_file():
        raise ValidationError("file", f"no backup file at {source}")
    pages = 0
    try:
        src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
        try:
            _check_engrammar_db(src, f"the backup {source}")
            dest.parent.mkdir(parents=True, exist_ok=True)
            out = sqlite3.connect(dest, timeout=busy_timeout_ms / 1000)
            try:

                def count(status: int, remaining: int, total: int) -> None:
                    nonlocal pages
                    pages = total

                src.backup(out, progress=count)
                _check_engrammar_db(out, f"the restored store {dest}")
            finally:
                out.close()
        finally:
            src.close()
    except sqlite3.Error as exc:
        raise StoreError(f"restore of {source} into {dest} failed: {exc}") from exc
    return pages

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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConflictError, EmbedderError, NotFoundError, StoreError
from ..models import Edge, MemoryRecord, Scope
from ..recall.text import index_text, terms
from .base import EdgeDelta, NewEdge, NewMemory, RecallRecord
from .index import IndexRow, ScopeIndex
from .migrations import MIGRATIONS

__all__ = ["SQLiteStore"]

_MEMORY_COLUMNS = (
    "id, workspace, user_id, agent_id, session_id, role, content, kind, status, created_at, "
    "updated_at, metadata"
)


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
        now = time.time()
        out: list[tuple[str, bool]] = []
        rename: dict[str, str] = {}
        try:
            with self._write() as conn:
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
                        "embedding) VALUES (?,?,?,?,?,?,?,?,'active',?,?,?,?,?)",
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
                            np.ascontiguousarray(row.embedding, dtype=np.float32).tobytes(),
                        ),
                    )
                    self._log(conn, row.id, row.workspace, row.user_id, "add", None, row.content)
                    out.append((row.id, True))
                self._insert_edges(conn, rows[0].workspace if rows else "", edges, rename, now)
        except sqlite3.Error as exc:
            raise StoreError(f"add failed: {exc}") from exc
        return out

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
                (workspace, src, dst, edge.kind, edge.weight, now),
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
        out: dict[str, MemoryRecord] = {}
        ids = list(dict.fromkeys(ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._read(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE +workspace = ? AND id IN ({marks})",
                [workspace, *chunk],
            ):
                out[row[0]] = _record(row)
        return out

    def list_memories(self, scope: Scope, limit: int, offset: int) -> list[MemoryRecord]:
        where, params = _scope_where(scope)
        rows = self._read(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY seq LIMIT ? OFFSET ?",
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
    ) -> MemoryRecord:
        try:
            with self._write() as conn:
                row = conn.execute(
                    f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE workspace = ? AND id = ?",
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
                new = conn.execute(
                    f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,)
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
            if scope.user_id is not None:
                users: list[str | None] = [scope.user_id]
            else:
                users = [
                    r[0]
                    for r in conn.execute(
                        "SELECT DISTINCT user_id FROM memories WHERE workspace = ?",
                        (scope.workspace,),
                    )
                ]
            out = []
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
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE {where} AND status = 'active' "
            "ORDER BY seq DESC LIMIT ?",
            [*params, limit],
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
    def edges_from(self, workspace: str, ids: Sequence[str], min_weight: float = 0.0) -> list[Edge]:
        out: list[Edge] = []
        ids = list(dict.fromkeys(ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            out += [
                Edge(*r)
                for r in self._read(
                    "SELECT src, dst, kind, weight, updated_at FROM edges WHERE workspace = ? "
                    f"AND src IN ({marks}) AND weight >= ?",
                    [workspace, *chunk, min_weight],
                )
            ]
        return out

    def edges_to(self, workspace: str, ids: Sequence[str], min_weight: float = 0.0) -> list[Edge]:
        out: list[Edge] = []
        ids = list(dict.fromkeys(ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            out += [
                Edge(*r)
                for r in self._read(
                    "SELECT src, dst, kind, weight, updated_at FROM edges WHERE workspace = ? "
                    f"AND dst IN ({marks}) AND weight >= ?",
                    [workspace, *chunk, min_weight],
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

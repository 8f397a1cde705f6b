"""The search half of the embedded store: the in-process indexes and the row cache.

Vector and keyword search run on an in-process :class:`~.index.ScopeIndex` per (workspace,
user) partition, caught up from the ``memory_changes`` log whenever the database changed
(``PRAGMA data_version``), so that writes from other processes become visible at once; the
queries of fed-back recalls live in a :class:`~.index.ContextIndex` per partition, caught up
from ``reply_signals`` the same way. Memory rows read by recall are kept by id until the change
log names them. FTS5 backs :meth:`SQLiteSearch.fts_search`.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from operator import itemgetter
from typing import Any

import numpy as np

from ...errors import StoreError
from ...learn.scoring import ReplyFacts
from ...models import Edge, KnowledgeChunk, MemoryRecord, RecallFilter, Scope
from ...recall.text import index_text, terms
from ..base import ChunkVector, ReplyQuery, SearchQuery
from ..sql.chunk_rows import chunk_vector
from ..sql.dialect import scope_where
from ..sql.knowledge import CHUNK_COLUMNS as KNOWLEDGE_COLUMNS
from ..sql.store import SQLStore, memory_record
from ..tables import MEMORY_COLUMNS
from .index import ByteLRU, ContextIndex, IndexColumns, IndexRow, ScopeIndex, Within
from .index_terms import read_terms
from .knowledge_index import KnowledgeIndex, load_knowledge, partition_version

__all__ = ["CHUNK_COLUMNS", "SQLiteSearch", "chunk_lists"]

#: Memory rows kept in memory for ``get_memories`` (about 1 KB each).
_ROW_CACHE = 20_000
#: Memories whose outgoing edges are kept (all forgotten at once past this many).
_EDGE_CACHE = 50_000
#: The columns of an edge, in :class:`~engrammar.models.Edge`'s order.
_EDGE_COLUMNS = "src, dst, kind, weight, updated_at"


def _vec(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


CHUNK_COLUMNS = "memory_id, position, start_char, end_char, embedding"


def chunk_lists(rows: Iterable[tuple[Any, ...]]) -> dict[str, list[ChunkVector]]:
    """``memory_chunks`` rows (:data:`CHUNK_COLUMNS`, ordered), grouped by memory."""
    grouped: dict[str, list[ChunkVector]] = {}
    for row in rows:
        grouped.setdefault(row[0], []).append(chunk_vector(row[1:], _vec))
    return grouped


@lru_cache(maxsize=_ROW_CACHE)
def _flat_metadata(text: str) -> dict[str, Any] | None:
    """``text`` decoded when it is a JSON object of scalars (whose copy is a ``dict`` call),
    else ``None``: kept for the next read of the same row (json.loads cost ~5 us a record)."""
    value = json.loads(text)
    if isinstance(value, dict) and all(
        v is None or isinstance(v, str | int | float) for v in value.values()
    ):
        return value
    return None


def _metadata(text: Any) -> Any:
    """A memory row's metadata column decoded, a new object for each record."""
    flat = _flat_metadata(text) if isinstance(text, str) else None
    return dict(flat) if flat is not None else json.loads(text)


def _speaker(metadata: Any) -> str | None:
    speaker = metadata.get("speaker") if isinstance(metadata, dict) else None
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


class _Versioned(tuple[int, KnowledgeIndex]):
    """A cached knowledge index with the ``data_version`` it was last checked at."""

    def __new__(cls, data_version: int, index: KnowledgeIndex) -> _Versioned:
        return super().__new__(cls, (data_version, index))

    @property
    def nbytes(self) -> int:
        return self[1].nbytes


class SQLiteSearch(SQLStore):
    """Search, row reads and recall matching of :class:`~.store.SQLiteStore`."""

    _k1: float
    _b: float
    _ann_threshold: int
    _index_lock: threading.Lock
    _local: threading.local
    _sync_conn: sqlite3.Connection
    _indexes: ByteLRU[ScopeIndex]
    _contexts: ByteLRU[ContextIndex]
    _knowledge: ByteLRU[_Versioned]
    _rows: OrderedDict[str, tuple[Any, ...]]
    _rows_lock: threading.Lock
    _rows_rev: int
    _rows_version: int | None
    _rows_epoch: int
    _edges_version: int | None
    _edge_rows: dict[tuple[str, str], list[tuple[Any, ...]]]

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Rows of one read statement (provided by ``SQLiteStore``)."""
        raise NotImplementedError

    def _record(self, row: Sequence[Any]) -> MemoryRecord:
        return memory_record(row, _metadata(row[11]))

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
        record, decoded = memory_record, _metadata  # what _record does, without its call
        return {memory_id: record(row, decoded(row[11])) for memory_id, row in rows.items()}

    def edges_from(
        self, workspace: str, ids: Sequence[str], min_weight: float = 0.0, kind: str | None = None
    ) -> list[Edge]:
        # Every recall reads the edges of its head and walks the graph from its seeds, and the
        # next recall of the scope reads many of the same: each memory's outgoing edges are
        # kept until the database changes (``data_version``), and handed out as the database
        # reads them (per ``IN`` list of 500, by its key: src, dst, kind).
        ids = list(dict.fromkeys(ids))
        try:
            with self._index_lock:
                version = self._data_version()
                if self._edges_version != version:
                    self._edge_rows.clear()
                    self._edges_version = version
                cache = self._edge_rows
                held = {i: found for i in ids if (found := cache.get((workspace, i))) is not None}
        except sqlite3.Error as exc:
            raise StoreError(f"reading edges failed: {exc}") from exc
        missing = [i for i in ids if i not in held]
        if missing:
            read: dict[str, list[tuple[Any, ...]]] = {i: [] for i in missing}
            for start in range(0, len(missing), 500):
                chunk = missing[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for row in self._read(
                    f"SELECT {_EDGE_COLUMNS} FROM edges WHERE workspace = ? AND src IN ({marks})",
                    [workspace, *chunk],
                ):
                    read[row[0]].append(row)
            for rows in read.values():
                rows.sort()  # by src, dst, kind: the table's key (unique), as it is read
            with self._index_lock:
                # Read at this version or later: kept while the database stays at it.
                if self._edges_version == version:
                    if len(cache) + len(read) > _EDGE_CACHE:
                        cache.clear()
                    for i, rows in read.items():
                        cache[(workspace, i)] = rows
            held.update(read)
        out: list[Edge] = []
        for start in range(0, len(ids), 500):
            for i in sorted(ids[start : start + 500]):
                for row in held[i]:
                    if row[3] >= min_weight and (kind is None or row[2] == kind):
                        out.append(Edge(*row))
        return out

    def _data_version(self) -> int:
        """``PRAGMA data_version`` of the sync connection (call with ``_index_lock`` held):
        inside :meth:`pinned`, read once for the whole block."""
        pin: list[int | None] | None = getattr(self._local, "pin", None)
        if pin is not None and pin[0] is not None:
            return pin[0]
        version: int = self._sync_conn.execute("PRAGMA data_version").fetchone()[0]
        if pin is not None:
            pin[0] = version
        return version

    @contextmanager
    def pinned(self) -> Iterator[None]:
        """One recall's reads in this thread: whether the database changed is looked at once,
        at the first read, instead of at each of them (a cache checked then may have been
        caught up further since, never less)."""
        if getattr(self._local, "pin", None) is not None:
            yield
            return
        self._local.pin = [None]
        try:
            yield
        finally:
            self._local.pin = None

    def _sync_rows(self) -> int:
        """Drop the cached rows of memories changed since the last look (by any process, from
        the change log), and return the cache's epoch (bumped on every drop)."""
        with self._index_lock:
            conn = self._sync_conn
            try:
                version = self._data_version()
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

    def _partitions(self, scope: Scope) -> list[ScopeIndex]:
        """The synced indexes of every (workspace, user) partition the scope covers."""
        with self._index_lock:
            conn = self._sync_conn
            data_version = self._data_version()
            out = []
            users = _partition_users(conn, scope, "memories")
            for user in users:
                key = ("scope", scope.workspace, user)
                index = self._indexes.get(key)
                if index is None:
                    index = self._load_partition(scope.workspace, user)
                    index.data_version = data_version
                elif index.data_version != data_version:
                    self._refresh(index, scope.workspace, user)
                    index.data_version = data_version
                else:  # current, and already moved to the front by get(): its size stands
                    out.append(index)
                    continue
                if len(index):
                    self._indexes.put(key, index)  # bounded by bytes (scope_cache_bytes)
                else:
                    # An empty scope (a new user only searched for) is not kept: it costs
                    # one empty read per search, and no memory however many there are.
                    self._indexes.pop(key)
                out.append(index)
            return out

    def search_knowledge(
        self, scope: Scope, vector: np.ndarray, limit: int, min_score: float = 0.0
    ) -> list[KnowledgeChunk]:
        try:
            indexes = self._knowledge_partitions(scope)
        except sqlite3.Error as exc:
            raise StoreError(f"searching knowledge failed: {exc}") from exc
        if not indexes:  # most scopes hold no knowledge
            return []
        query = np.asarray(vector, dtype=np.float32)
        # np.linalg.norm's own sum for a vector (sqrt of x.dot(x)) without its checks.
        query = query / (float(np.sqrt(query.dot(query))) or 1.0)
        hits = [
            hit
            for index in indexes
            for hit in index.top(query, limit, min_score, scope.agent_id, scope.session_id)
        ]
        hits.sort(key=lambda h: (-round(h[0], 6), h[1]))
        hits = hits[:limit]
        if not hits:
            return []
        marks = ",".join("?" * len(hits))
        rows = self._read(
            f"SELECT {KNOWLEDGE_COLUMNS} FROM knowledge_chunks "
            f"WHERE workspace = ? AND id IN ({marks})",
            [scope.workspace, *(h[2] for h in hits)],
        )
        found = {r[0]: r for r in rows}
        out = []
        for score, _, chunk_id in hits:
            row = found.get(chunk_id)
            if row is None:  # deleted since the index was read
                continue
            chunk = self._chunk(row)
            chunk.score = round(score, 6)
            out.append(chunk)
        return out

    def _knowledge_partitions(self, scope: Scope) -> list[KnowledgeIndex]:
        """The current knowledge index of every (workspace, user) partition the scope covers
        (reloaded where its chunks changed; checked only when the database changed)."""
        with self._index_lock:
            conn = self._sync_conn
            data_version = self._data_version()
            out = []
            for user in _partition_users(conn, scope, "knowledge_chunks"):
                key = ("knowledge", scope.workspace, user)
                cached = self._knowledge.get(key)
                if cached is not None and cached[0] == data_version:
                    if cached[1].ids:
                        out.append(cached[1])
                    continue
                if cached is None or cached[1].version != partition_version(
                    conn, scope.workspace, user
                ):
                    index = load_knowledge(conn, scope.workspace, user)
                else:
                    index = cached[1]
                # Empty too: a scope without knowledge is read again only once it changed.
                self._knowledge.put(key, _Versioned(data_version, index))
                if index.ids:
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
        """The partition's index, read in one transaction; its rows kept for
        :meth:`get_memories` too (:meth:`_keep_rows`). Call with ``_index_lock`` held."""
        conn = self._sync_conn
        index = ScopeIndex(self._dimension(), self._k1, self._b, self._ann_threshold)
        data_version = self._data_version()  # before the transaction: see _keep_rows
        conn.execute("BEGIN")
        try:
            rev = conn.execute("SELECT coalesce(max(rev), 0) FROM memory_changes").fetchone()[0]
            cursor = conn.execute(
                "SELECT id, agent_id, session_id, created_at, content, embedding, metadata, kind, "
                "role, index_terms, seq, updated_at, valid_until, superseded_by FROM memories "
                "WHERE workspace = ? AND user_id IS ? AND status = 'active'",
                (workspace, user),
            )
            # In insertion order, sorted here: ORDER BY made SQLite sort every row, vectors
            # and all, in a temporary B-tree (half the read's time at 100k). The rows come in
            # runs already in order (by kind, from the index it searches): a cheap sort.
            rows = cursor.fetchall()
            rows.sort(key=itemgetter(10))
            chunks = chunk_lists(
                conn.execute(
                    f"SELECT {CHUNK_COLUMNS} FROM memory_chunks "
                    "WHERE workspace = ? AND user_id IS ? ORDER BY memory_id, position",
                    (workspace, user),
                )
            )
            columns = self._index_columns(rows, chunks, index.dim)
            if columns is not None:
                index.extend(columns)
            else:  # vectors of another dimension: upsert raises as it always did
                for row in rows:
                    index.upsert(self._index_row(row, chunks.get(row[0])))
        finally:
            conn.execute("COMMIT")
        index.rev = rev
        self._keep_rows(workspace, user, rows, rev, data_version)
        return index

    def _keep_rows(
        self,
        workspace: str,
        user: str | None,
        rows: list[tuple[Any, ...]],
        rev: int,
        data_version: int,
    ) -> None:
        """Keep the rows a partition's load read (as of the change log's ``rev``), in
        :meth:`get_memories`'s row cache, as far as it has room, the newest first, each as
        the least recently used (what a recall reads later goes before them). Recall reads
        the rows of its ~60 best candidates, and a freshly opened scope's were read from the
        table one ``IN`` list a recall: half a millisecond of each of a 10k-memory scope's
        first few hundred recalls, measured. Call with ``_index_lock`` held."""
        with self._rows_lock:
            if self._rows_version is None:
                # Nothing synced yet: the log is followed from ``rev``, which the rows are as
                # of, and looked at again at the first ``data_version`` other than
                # ``data_version``, read before the load's transaction (any commit since).
                self._rows_rev, self._rows_version = rev, data_version
            # Else the cache has followed the log up to a ``_rows_rev`` <= ``rev`` (both read
            # under ``_index_lock``): a kept row changed since then is dropped at the next
            # look, as any row read now would be.
            cache = self._rows
            room = _ROW_CACHE - len(cache)
            for row in reversed(rows):
                if room <= 0:
                    break
                memory_id = row[0]
                if memory_id in cache:
                    continue
                # MEMORY_COLUMNS: id, workspace, user_id, agent_id, session_id, role,
                # content, kind, status, created_at, updated_at, metadata, valid_until,
                # superseded_by (the load reads active memories of this partition only).
                cache[memory_id] = (
                    memory_id,
                    workspace,
                    user,
                    row[1],
                    row[2],
                    row[8],
                    row[4],
                    row[7],
                    "active",
                    row[3],
                    row[11],
                    row[6],
                    row[12],
                    row[13],
                )
                cache.move_to_end(memory_id, last=False)
                room -= 1

    @staticmethod
    def _index_columns(
        rows: list[tuple[Any, ...]], chunks: dict[str, list[ChunkVector]], dim: int
    ) -> IndexColumns | None:
        """:meth:`_index_row` of every row, as columns (the vectors one matrix); None when
        not every vector has ``dim`` components."""
        if not rows:
            return None
        ids, agents, sessions, created, contents, blobs, metas, kinds, roles, stored, *_ = zip(
            *rows, strict=True
        )
        if set(map(len, blobs)) != {dim * 4}:
            return None
        vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(rows), dim)
        decoded = [json.loads(m) if m and m != "{}" else None for m in metas]
        texts = [
            index_text(c, _speaker(m)) if m is not None else c
            for c, m in zip(contents, decoded, strict=True)
        ]
        return IndexColumns(
            ids=ids,
            agent_ids=agents,
            session_ids=sessions,
            created_at=created,
            contents=texts,
            vectors=vectors,
            kinds=kinds,
            roles=roles,
            metadata=[m if isinstance(m, dict) and m else None for m in decoded],
            metadata_bytes=[len(t) if m else 0 for t, m in zip(metas, decoded, strict=True)],
            chunks=chunks,
            terms=read_terms(texts, stored),
        )

    @staticmethod
    def _index_row(row: tuple[Any, ...], chunks: list[ChunkVector] | None = None) -> IndexRow:
        metadata = json.loads(row[6]) if row[6] and row[6] != "{}" else None
        return IndexRow(
            id=row[0],
            agent_id=row[1],
            session_id=row[2],
            created_at=row[3],
            content=index_text(row[4], _speaker(metadata)),
            embedding=np.frombuffer(row[5], dtype=np.float32),
            kind=row[7],
            role=row[8],
            metadata=metadata if isinstance(metadata, dict) and metadata else None,
            metadata_bytes=len(row[6]) if metadata else 0,
            chunks=chunks,
        )

    def _refresh(self, index: ScopeIndex, workspace: str, user: str | None) -> None:
        conn = self._sync_conn
        # The database changed, most often elsewhere (another scope, a recall's record): one
        # look at the partition's log before the transaction that reads what changed in it.
        if not conn.execute(
            "SELECT 1 FROM memory_changes WHERE workspace = ? AND user_id IS ? AND rev > ? LIMIT 1",
            (workspace, user, index.rev),
        ).fetchall():
            return
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
            chunks: dict[str, list[ChunkVector]] = {}
            for start in range(0, len(touched), 500):
                chunk = touched[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for row in conn.execute(
                    "SELECT id, agent_id, session_id, created_at, content, embedding, metadata, kind, role "
                    "FROM memories "
                    f"WHERE id IN ({marks}) AND status = 'active' ORDER BY seq",
                    chunk,
                ):
                    current[row[0]] = row
                chunks.update(
                    chunk_lists(
                        conn.execute(
                            f"SELECT {CHUNK_COLUMNS} FROM memory_chunks "
                            f"WHERE memory_id IN ({marks}) ORDER BY memory_id, position",
                            chunk,
                        )
                    )
                )
        finally:
            conn.execute("COMMIT")
        for memory_id in touched:
            if memory_id in current:
                index.upsert(self._index_row(current[memory_id], chunks.get(memory_id)))
            else:
                index.remove(memory_id)
        index.rev = top

    def memories_of_kind(self, scope: Scope, kind: str, limit: int) -> list[MemoryRecord]:
        # Every recall asks for the scope's preferences; most scopes have none, which the
        # partitions' indexes tell without reading the table.
        if not any(index.holds_kind(kind) for index in self._searched(scope)):
            return []
        return super().memories_of_kind(scope, kind, limit)

    def vector_search(
        self, scope: Scope, query: np.ndarray, k: int, where: RecallFilter | None = None
    ) -> list[tuple[str, float]]:
        return self._best_hits(
            self._searched(scope),
            Within(scope.agent_id, scope.session_id, where),
            k,
            lambda index, within: index.vector_search(query, k, within),
        )

    def _searched(self, scope: Scope) -> list[ScopeIndex]:
        try:
            return self._partitions(scope)
        except sqlite3.Error as exc:
            raise StoreError(f"search failed: {exc}") from exc

    def _best_hits(
        self,
        parts: list[ScopeIndex],
        within: Within,
        k: int,
        search: Callable[[ScopeIndex, Within], list[tuple[str, float]]],
    ) -> list[tuple[str, float]]:
        """The best ``k`` hits of ``search`` in the partitions ``parts``, each narrowed by
        ``within``."""
        hits: list[tuple[str, float]] = []
        try:
            with self._index_lock:
                for index in parts:
                    hits += search(index, within)
        except sqlite3.Error as exc:
            raise StoreError(f"search failed: {exc}") from exc
        if len(parts) > 1:  # one partition's hits come best first already
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
                    found = index.vector_searches(
                        queries, k, Within(scope.agent_id, scope.session_id)
                    )
                    for row, hits in zip(out, found, strict=True):
                        row += hits
        except sqlite3.Error as exc:
            raise StoreError(f"search failed: {exc}") from exc
        if len(parts) > 1:
            out = [sorted(row, key=lambda h: -h[1])[:k] for row in out]
        return out

    def searches(
        self, scope: Scope, ask: SearchQuery
    ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        words, query, k, where = ask
        # The partitions synced once for both searches.
        parts = self._searched(scope)
        within = Within(scope.agent_id, scope.session_id, where)
        query_terms = list(words)
        if len(parts) == 1 and query_terms:
            # One partition (a user's scope): its index completes the vector list too.
            with self._index_lock:
                return parts[0].searches(query_terms, query, k, within)
        keyword = (
            self._best_hits(
                parts, within, k, lambda index, w: index.keyword_search(query_terms, k, w)
            )
            if query_terms
            else []
        )
        return keyword, self._best_hits(
            parts, within, k, lambda index, w: index.vector_search(query, k, w)
        )

    def keyword_search(
        self, scope: Scope, text: str, k: int, where: RecallFilter | None = None
    ) -> list[tuple[str, float]]:
        query_terms = terms(text)
        if not query_terms:
            return []
        return self._best_hits(
            self._searched(scope),
            Within(scope.agent_id, scope.session_id, where),
            k,
            lambda index, within: index.keyword_search(query_terms, k, within),
        )

    def keyword_scores(
        self, scope: Scope, words: Sequence[str], ids: Sequence[str]
    ) -> dict[str, float]:
        query_terms = list(words)
        if not query_terms or not ids:
            return {}
        parts = self._searched(scope)
        out: dict[str, float] = {}
        try:
            with self._index_lock:
                for index in parts:
                    out.update(index.keyword_scores(query_terms, ids))
        except sqlite3.Error as exc:
            raise StoreError(f"search failed: {exc}") from exc
        return out

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

    def _current_scope_indexes(self, workspace: str) -> list[ScopeIndex]:
        """The in-process scope indexes of ``workspace`` that are current (no commit since
        they were synced: the same ``data_version``). Call with ``_index_lock`` held."""
        data_version = self._data_version()
        return [
            index
            for (kind, index_workspace, _), index in self._indexes.items()
            if kind == "scope"
            and index_workspace == workspace
            and index.data_version == data_version
        ]

    def vectors(self, workspace: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        ids = list(dict.fromkeys(ids))
        # Recall asks right after a search synced the partition: its in-memory vectors are
        # current whenever no commit happened since (the same data_version), and reading them
        # skips a blob query per call (~3 ms of a 10k-memory recall).
        with self._index_lock:
            for index in self._current_scope_indexes(workspace):
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

    def memory_chunks(self, workspace: str, ids: Sequence[str]) -> dict[str, list[ChunkVector]]:
        out: dict[str, list[ChunkVector]] = {}
        ids = list(dict.fromkeys(ids))
        # Served from the in-process indexes when current (recall asks on every query), as
        # :meth:`vectors` does; only ids no current index holds are read.
        with self._index_lock:
            for index in self._current_scope_indexes(workspace):
                found, ids = index.chunks_of(ids)
                out.update(found)
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            for row in self._read(
                "SELECT memory_id, position, start_char, end_char, embedding FROM memory_chunks "
                f"WHERE workspace = ? AND memory_id IN ({marks}) ORDER BY memory_id, position",
                [workspace, *part],
            ):
                out.setdefault(row[0], []).append(chunk_vector(row[1:], _vec))
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
                    n, found = index.term_postings(
                        wanted, limit, Within(scope.agent_id, scope.session_id)
                    )
                    total += n
                    for term, (df, ids) in found.items():
                        old_df, old_ids = merged[term]
                        merged[term] = (old_df + df, (old_ids + ids)[:limit])
        except sqlite3.Error as exc:
            raise StoreError(f"search failed: {exc}") from exc
        return total, merged

    def reply_facts(
        self, scope: Scope, ask: ReplyQuery, witnesses: Sequence[tuple[str, str]] = ()
    ) -> list[ReplyFacts]:
        context, context_min, since, limit = ask
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
                "SELECT r.memory_id, r.recall_id, r.value, r.created_at, r.source "
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
        for memory_id, recall_id, value, created_at, source in rows:
            if (recall_id, memory_id) not in seen and recall_id in known:
                seen.add((recall_id, memory_id))
                out.append(
                    ReplyFacts(memory_id, recall_id, value, created_at, known[recall_id], source)
                )
        return out

    def _matching_recalls(
        self, scope: Scope, context: Callable[[], np.ndarray], context_min: float, since: float
    ) -> tuple[list[tuple[int, str]], dict[str, np.ndarray]]:
        """The fed-back recalls of the scope's users whose query matches ``context`` (see
        :class:`~.index.ContextIndex`), as ``(seq, recall_id)``, and their query vectors.
        Each partition's index catches up from ``seq`` whenever the database changed."""
        with self._index_lock:
            data_version = self._data_version()
            # A user's fed-back recalls count for that user, the workspace-wide ones (no
            # user) for everyone: a recall made without a user reads no user's.
            users: list[str | None] = [None]
            if scope.user_id is not None:
                users.insert(0, scope.user_id)
            indexes = []
            for user in users:
                key = ("context", scope.workspace, user)
                index = self._contexts.get(key)
                if index is None:
                    index = ContextIndex(self._dimension())
                if index.data_version != data_version:
                    self._catch_up(index, scope.workspace, user)
                    index.data_version = data_version
                    index.prune(since)
                    # Empty too: a scope without signals is read again only once it changed.
                    self._contexts.put(key, index)
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

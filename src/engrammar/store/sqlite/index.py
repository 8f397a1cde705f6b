"""The in-process search index of one (workspace, user) partition: vectors + BM25.

Exact cosine search over a contiguous float32 matrix is ~0.7 ms at 10k and ~30 ms at 100k
vectors on a 2-core machine, faster than any on-disk brute force we measured, so the embedded
store keeps one matrix per partition, refreshed incrementally from the database's change log.
Above ``ann_threshold`` vectors an optional IVF index (k-means cells, ``nprobe`` searched)
trades a little recall for sub-linear time.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import numpy as np

from ...models import RecallFilter, json_key
from ...recall.fusion import missed_hits
from ...recall.keyword import BM25Index, TermLists, pack_terms
from ...recall.text import terms
from ..base import ChunkVector, Completed

__all__ = [
    "EVERYWHERE",
    "ByteLRU",
    "ContextIndex",
    "IndexColumns",
    "IndexRow",
    "ScopeIndex",
    "Within",
    "cosines",
]

_SCORE = itemgetter(1)  # of a (memory id, score) hit

#: What one indexed row holds besides its vector (id, scope keys, time, terms, postings),
#: roughly, in bytes: counted so that a cache of many small scopes is bounded too.
ROW_OVERHEAD = 400
#: Metadata keys a partition keeps a value index for (each ~40 bytes a row).
_MAX_VALUE_INDEXES = 16


def cosines(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``matrix @ query`` for unit rows, computed by numpy's own single-threaded loop.

    A matrix-vector product is bound by memory bandwidth, so BLAS threads gain little, and on
    a busy 2-core machine (the embedder's threads, a server's workers) OpenBLAS's spinning
    threads made ``@`` at 10k x 384 take 1.4-23 ms (median over 30) against einsum's steady
    0.7 ms, measured side by side on this project's 2-core machine under load.
    """
    sims: np.ndarray = np.einsum("ij,j->i", matrix, query.astype(matrix.dtype, copy=False))
    return sims


def _numbered(names: Sequence[str | None], numbers: dict[str | None, int]) -> np.ndarray:
    """The number of each of ``names`` (``numbers`` gives each new name the next one)."""
    return np.fromiter(
        (numbers.setdefault(name, len(numbers)) for name in names), np.int32, len(names)
    )


def _time(value: object) -> float:
    """A stored time as a number; NaN (no time filter matches it) for one that is not."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float("nan")


class Within(NamedTuple):
    """What a search keeps of a partition: the memories of ``agent_id`` and of
    ``session_id`` (``None``: any) that ``where`` matches (``None``: every one)."""

    agent_id: str | None = None
    session_id: str | None = None
    where: RecallFilter | None = None


#: The whole partition.
EVERYWHERE = Within()


@dataclass
class IndexRow:
    id: str
    agent_id: str | None
    session_id: str | None
    created_at: float
    content: str
    embedding: np.ndarray
    # What recall's filters read (``RecallFilter``); ``metadata`` None when empty.
    kind: str = "message"
    role: str = "user"
    metadata: dict[str, Any] | None = None
    metadata_bytes: int = 0
    # Its windows past the first (``memory_chunks``), by position, or None.
    chunks: list[ChunkVector] | None = None


@dataclass
class IndexColumns:
    """Many :class:`IndexRow` as columns (a partition's load): ``vectors`` one matrix,
    ``chunks`` by id for the memories that have any, ``terms`` each content's
    :func:`~engrammar.recall.text.terms` if known (else computed)."""

    ids: Sequence[str]
    agent_ids: Sequence[str | None]
    session_ids: Sequence[str | None]
    created_at: Sequence[float]
    contents: Sequence[str]
    vectors: np.ndarray
    kinds: Sequence[str]
    roles: Sequence[str]
    metadata: Sequence[dict[str, Any] | None]
    metadata_bytes: Sequence[int]
    chunks: dict[str, list[ChunkVector]] | None = None
    terms: Sequence[list[str]] | None = None


class ContextIndex:
    """The query vectors of one (workspace, user) partition's fed-back recalls.

    Reply signals count only for a recall whose query nearly matches the current one, and
    every signal of a recall shares that query, so recall first finds the matching recalls
    here (one matrix product) and then reads just their signals. Reading every candidate's
    signals with their vectors instead grew with the feedback given: in a small scope the
    candidates are the whole scope, and recall's median went 3.3 -> 7.4 ms over 4,000 mixed
    operations. Append-only, fed from the store's ``seq``: a recall whose signals were
    deleted only costs a read that finds nothing.
    """

    def __init__(self, dim: int) -> None:
        self.last_seq = 0
        self.data_version: int | None = None
        self.newest = float("-inf")  # the newest recall's time
        self._dim = dim
        self._ids: list[str] = []
        self._slot: dict[str, int] = {}
        self._seqs = np.zeros(0, dtype=np.int64)
        self._times = np.zeros(0, dtype=np.float64)
        self._vectors = np.zeros((0, dim), dtype=np.float32)
        self._used = 0

    def __len__(self) -> int:
        return self._used

    def add(self, seq: int, recall_id: str, created_at: float, vector: np.ndarray) -> None:
        """Record a signal row; only a recall's first row adds its query vector."""
        self.last_seq = max(self.last_seq, seq)
        if recall_id in self._slot:
            return
        if self._used == len(self._seqs):
            grow = max(64, len(self._seqs))
            self._seqs = np.concatenate([self._seqs, np.zeros(grow, dtype=np.int64)])
            self._times = np.concatenate([self._times, np.zeros(grow, dtype=np.float64)])
            self._vectors = np.vstack([self._vectors, np.zeros((grow, self._dim), np.float32)])
        slot = self._used
        self._ids.append(recall_id)
        self._slot[recall_id] = slot
        self._seqs[slot] = seq
        self._times[slot] = created_at
        self.newest = max(self.newest, created_at)
        self._vectors[slot] = vector
        self._used += 1

    @property
    def nbytes(self) -> int:
        """The memory this index holds, roughly (an empty one counts as a row: the cache
        keeps those too, so that a scope without signals is not read again until it changes)."""
        arrays = self._seqs.nbytes + self._times.nbytes + self._vectors.nbytes
        return arrays + ROW_OVERHEAD * (self._used + 1)

    def vector(self, recall_id: str) -> np.ndarray | None:
        slot = self._slot.get(recall_id)
        return None if slot is None else self._vectors[slot]

    def prune(self, before: float) -> None:
        """Forget recalls older than ``before`` (past the learning horizon they never count
        again), once they are at least half of the index and over 1,024."""
        n = self._used
        if n < 1024:  # fewer than 1,024 to forget, whatever their times
            return
        keep = np.flatnonzero(self._times[:n] >= before)
        if n - len(keep) < max(1024, n // 2):
            return
        self._ids = [self._ids[i] for i in keep]
        self._slot = {recall_id: slot for slot, recall_id in enumerate(self._ids)}
        self._seqs = self._seqs[keep].copy()
        self._times = self._times[keep].copy()
        self._vectors = self._vectors[keep].copy()
        self._used = len(keep)

    def matching(self, query: np.ndarray, minimum: float, since: float) -> list[tuple[int, str]]:
        """``(seq, recall_id)`` of the recalls since ``since`` whose query has a cosine of at
        least ``minimum`` with ``query``."""
        n = self._used
        if n == 0:
            return []
        sims = cosines(self._vectors[:n], query)
        hits = np.flatnonzero((sims >= minimum) & (self._times[:n] >= since))
        return [(int(self._seqs[i]), self._ids[i]) for i in hits]


class ScopeIndex:
    """Vectors and keyword postings of one partition; not thread-safe (the store locks)."""

    def __init__(self, dim: int, k1: float, b: float, ann_threshold: int = 200_000) -> None:
        self.dim = dim
        self.rev = 0
        self.data_version: int | None = None
        # Nothing allocated up front: a scope that is only ever searched stays empty.
        self._vectors = np.zeros((0, dim), dtype=np.float32)
        self._alive = np.zeros(0, dtype=bool)
        # What filters test, as arrays beside the vectors: times, and kinds and roles coded by
        # ``_codes`` (a mask over 10k rows then costs microseconds, not a Python loop).
        self._created = np.zeros(0, dtype=np.float64)
        self._kind_codes = np.zeros(0, dtype=np.int16)
        self._role_codes = np.zeros(0, dtype=np.int16)
        self._codes: dict[str, int] = {}
        self._agents: list[str | None] = []
        self._sessions: list[str | None] = []
        # Agents and sessions coded too (each its own numbering, None included): a scope's
        # mask is then one comparison over an array, not a Python loop over every row.
        self._agent_codes = np.zeros(0, dtype=np.int32)
        self._session_codes = np.zeros(0, dtype=np.int32)
        self._agent_numbers: dict[str | None, int] = {}
        self._session_numbers: dict[str | None, int] = {}
        self._metadata: list[dict[str, Any] | None] = []
        self._metadata_bytes = 0
        # Per metadata key a filter asked about: slots by value (json_key), built on first use
        # and kept up to date by _append (a removed slot is dead in _alive).
        self._by_value: dict[str, dict[tuple[str, Any], list[int]]] = {}
        self._ids: list[str] = []
        # Each slot's terms; None for those of a bulk load, which _packed_terms holds.
        self._terms: list[list[str] | None] = []
        self._packed_terms: TermLists | None = None
        self._slot: dict[str, int] = {}
        self._bm25 = BM25Index(k1=k1, b=b)
        self._ann_threshold = ann_threshold
        self._ivf: _IVF | None = None
        self._ivf_size = 0
        # Chunk vectors of long memories and the slot each belongs to (a removed memory's
        # stay until compaction, masked by its slot).
        self._chunks = np.zeros((0, dim), dtype=np.float32)
        self._owners = np.zeros(0, dtype=np.int64)
        self._n_chunks = 0
        self._chunk_rows: dict[int, list[ChunkVector]] = {}

    def __len__(self) -> int:
        return len(self._slot)

    @property
    def nbytes(self) -> int:
        """The memory this index holds, roughly (vectors, and a per-row estimate of the rest)."""
        ivf = self._ivf.nbytes if self._ivf is not None else 0
        rows = ROW_OVERHEAD * len(self._ids) + self._metadata_bytes
        rows += 40 * len(self._ids) * len(self._by_value)
        columns = self._created.nbytes + self._kind_codes.nbytes + self._role_codes.nbytes
        columns += self._agent_codes.nbytes + self._session_codes.nbytes
        chunks = self._chunks.nbytes + self._owners.nbytes
        if self._packed_terms is not None:
            rows += self._packed_terms.nbytes
        return self._vectors.nbytes + self._alive.nbytes + columns + rows + ivf + chunks

    def __contains__(self, memory_id: str) -> bool:
        return memory_id in self._slot

    def upsert(self, row: IndexRow) -> None:
        if row.id in self._slot:
            self.remove(row.id)
        self._append(row, terms(row.content))

    def reserve(self, rows: int) -> None:
        """Room for ``rows`` slots in all, allocated at once (a partition's load knows its
        size: no doubling copies of 100k vectors)."""
        grow = rows - len(self._vectors)
        if grow > 0:
            self._vectors = np.vstack([self._vectors, np.zeros((grow, self.dim), np.float32)])
            self._alive = np.concatenate([self._alive, np.zeros(grow, dtype=bool)])
            self._created = np.concatenate([self._created, np.zeros(grow, dtype=np.float64)])
            self._kind_codes = np.concatenate([self._kind_codes, np.zeros(grow, np.int16)])
            self._role_codes = np.concatenate([self._role_codes, np.zeros(grow, np.int16)])
            self._agent_codes = np.concatenate([self._agent_codes, np.zeros(grow, np.int32)])
            self._session_codes = np.concatenate([self._session_codes, np.zeros(grow, np.int32)])

    def extend(self, rows: IndexColumns) -> None:
        """:meth:`upsert` of every row, at once: the vectors as one matrix, BM25 postings built
        per term with numpy (:meth:`BM25Index.add_many`), terms kept packed. Row by row, a
        100k-memory partition's load spent seconds in per-row Python. An index that already
        holds rows, or ids given twice, take the row-by-row path."""
        n = len(rows.ids)
        slots = dict(zip(rows.ids, range(n), strict=True))
        if self._ids or len(slots) < n or rows.vectors.shape != (n, self.dim):
            for i in range(n):
                self.upsert(self._row(rows, i))
            return
        # Allocated at their size (the index is empty). The vectors are taken as given, not
        # copied (154 MB at 100k): the next _append outgrows them and reserve() copies them
        # into a matrix of its own; read-only ones (a database's bytes) stay read-only.
        self._vectors = np.asarray(rows.vectors, dtype=np.float32)
        self._alive = np.ones(n, dtype=bool)
        self._created = np.zeros(n, dtype=np.float64)
        self._kind_codes = np.zeros(n, dtype=np.int16)
        self._role_codes = np.zeros(n, dtype=np.int16)
        try:
            self._created[:n] = np.asarray(rows.created_at, dtype=np.float64)
        except (TypeError, ValueError):
            self._created[:n] = np.fromiter(map(_time, rows.created_at), np.float64, n)
        codes = self._codes
        for name in dict.fromkeys(chain.from_iterable(zip(rows.kinds, rows.roles, strict=True))):
            codes.setdefault(name, len(codes))
        self._kind_codes[:n] = np.fromiter(map(codes.__getitem__, rows.kinds), np.int16, n)
        self._role_codes[:n] = np.fromiter(map(codes.__getitem__, rows.roles), np.int16, n)
        self._ids = list(rows.ids)
        self._agents = list(rows.agent_ids)
        self._sessions = list(rows.session_ids)
        self._agent_codes = _numbered(self._agents, self._agent_numbers)
        self._session_codes = _numbered(self._sessions, self._session_numbers)
        self._metadata = list(rows.metadata)
        self._metadata_bytes = 4 * sum(rows.metadata_bytes)
        known = rows.terms if rows.terms is not None else [terms(t) for t in rows.contents]
        self._packed_terms = pack_terms(known)
        self._terms = [None] * n
        self._bm25.add_many(0, self._packed_terms)
        self._slot = slots
        # In slot order, as upsert one row at a time would add them: one matrix at once.
        owned = [(slots[m], c) for m, c in (rows.chunks or {}).items() if c and m in slots]
        owned.sort(key=lambda sc: sc[0])
        if owned:
            vectors = [c.embedding for _, chunks in owned for c in chunks]
            self._chunks = np.stack(vectors).astype(np.float32, copy=False)
            self._owners = np.repeat(
                np.array([slot for slot, _ in owned], dtype=np.int64),
                [len(chunks) for _, chunks in owned],
            )
            self._n_chunks = len(self._owners)
            self._chunk_rows.update(owned)

    @staticmethod
    def _row(rows: IndexColumns, i: int) -> IndexRow:
        return IndexRow(
            rows.ids[i],
            rows.agent_ids[i],
            rows.session_ids[i],
            rows.created_at[i],
            rows.contents[i],
            rows.vectors[i],
            rows.kinds[i],
            rows.roles[i],
            rows.metadata[i],
            rows.metadata_bytes[i],
            (rows.chunks or {}).get(rows.ids[i]),
        )

    def _doc_terms(self, slot: int) -> list[str]:
        found = self._terms[slot]
        if found is None:
            assert self._packed_terms is not None
            found = self._packed_terms[slot]
        return found

    def _append(self, row: IndexRow, doc_terms: list[str]) -> None:
        slot = len(self._ids)
        if slot >= len(self._vectors):
            self.reserve(len(self._vectors) + max(8, len(self._vectors)))
        self._vectors[slot] = row.embedding
        self._alive[slot] = True
        self._created[slot] = _time(row.created_at)
        self._kind_codes[slot] = self._codes.setdefault(row.kind, len(self._codes))
        self._role_codes[slot] = self._codes.setdefault(row.role, len(self._codes))
        self._ids.append(row.id)
        self._agents.append(row.agent_id)
        self._sessions.append(row.session_id)
        numbers = self._agent_numbers
        self._agent_codes[slot] = numbers.setdefault(row.agent_id, len(numbers))
        numbers = self._session_numbers
        self._session_codes[slot] = numbers.setdefault(row.session_id, len(numbers))
        self._metadata.append(row.metadata)
        # Decoded JSON takes several times its text's size in Python objects.
        self._metadata_bytes += 4 * row.metadata_bytes
        for key, postings in self._by_value.items():
            value = row.metadata.get(key) if row.metadata else None
            postings.setdefault(json_key(value), []).append(slot)
        self._terms.append(doc_terms)
        self._bm25.add(slot, doc_terms)
        self._slot[row.id] = slot
        if row.chunks:
            self._add_chunks(slot, row.chunks)

    def _add_chunks(self, slot: int, chunks: list[ChunkVector]) -> None:
        self._chunk_rows[slot] = chunks
        need = self._n_chunks + len(chunks)
        if need > len(self._chunks):
            grow = max(need - len(self._chunks), 8, len(self._chunks))
            self._chunks = np.vstack([self._chunks, np.zeros((grow, self.dim), np.float32)])
            self._owners = np.concatenate([self._owners, np.zeros(grow, dtype=np.int64)])
        self._chunks[self._n_chunks : need] = np.stack([c.embedding for c in chunks])
        self._owners[self._n_chunks : need] = slot
        self._n_chunks = need

    def _best_of_chunks(self, sims: np.ndarray, query: np.ndarray) -> None:
        """Raise each slot's cosine in ``sims`` to its best chunk's (in place)."""
        if self._n_chunks:
            chunk_sims = cosines(self._chunks[: self._n_chunks], query)
            np.maximum.at(sims, self._owners[: self._n_chunks], chunk_sims)

    def remove(self, memory_id: str) -> None:
        slot = self._slot.pop(memory_id, None)
        if slot is None:
            return
        self._alive[slot] = False
        self._chunk_rows.pop(slot, None)
        self._bm25.remove(slot, self._doc_terms(slot))
        self._terms[slot] = []
        if self._metadata[slot] is not None:
            self._metadata[slot] = None
        if len(self._ids) > 256 and len(self._slot) < len(self._ids) // 2:
            self._compact()

    def _compact(self) -> None:
        fresh = ScopeIndex(self.dim, self._bm25.k1, self._bm25.b, self._ann_threshold)
        fresh.reserve(len(self._slot))
        names = {code: name for name, code in self._codes.items()}
        for s in range(len(self._ids)):
            if self._alive[s]:
                row = IndexRow(
                    self._ids[s],
                    self._agents[s],
                    self._sessions[s],
                    float(self._created[s]),
                    "",
                    self._vectors[s],
                    names[int(self._kind_codes[s])],
                    names[int(self._role_codes[s])],
                    self._metadata[s],
                    chunks=self._chunk_rows.get(s),
                )
                fresh._append(row, self._doc_terms(s))
        fresh._metadata_bytes = self._metadata_bytes
        fresh.rev, fresh.data_version = self.rev, self.data_version
        self.__dict__.update(fresh.__dict__)

    def _mask(self, within: Within) -> np.ndarray:
        n = len(self._ids)
        mask = self._alive[:n].copy()
        agent_id, session_id, where = within
        for wanted, numbers, codes in (
            (agent_id, self._agent_numbers, self._agent_codes),
            (session_id, self._session_numbers, self._session_codes),
        ):
            if wanted is not None:
                code = numbers.get(wanted)
                if code is None:
                    mask[:] = False
                else:
                    mask &= codes[:n] == code
        if where is not None:
            mask &= self._filter_mask(where, n)
        return mask

    def _filter_mask(self, where: RecallFilter, n: int) -> np.ndarray:
        """Which slots ``where`` matches: times, kinds and roles on their arrays, metadata one
        row at a time, only the rows still in."""
        mask = np.ones(n, dtype=bool)
        if where.since is not None:
            mask &= self._created[:n] >= where.since
        if where.until is not None:
            mask &= self._created[:n] < where.until
        for codes, allowed in ((self._kind_codes, where.kinds), (self._role_codes, where.roles)):
            if allowed is not None:
                wanted = [self._codes[v] for v in allowed if v in self._codes]
                mask &= np.isin(codes[:n], wanted)
        keys = [key for key, _ in where.metadata]
        # A filter naming more keys than the value indexes hold builds none: each one built
        # would evict another this same filter needs, and every search would rebuild them
        # all. Keys without an index are read row by row, on the rows still in.
        build = len(keys) <= _MAX_VALUE_INDEXES
        by_row = []
        for key in sorted(keys, key=lambda k: k not in self._by_value):  # indexed ones first
            postings = self._postings(key, build)
            if postings is None:
                by_row.append(key)
                continue
            keep = np.zeros(n, dtype=bool)
            for value in where.allowed(key) or ():
                slots = postings.get(value)
                if slots:
                    keep[slots] = True
            mask &= keep
        if by_row:
            values_of = {key: set(where.allowed(key) or ()) for key in by_row}
            for slot in np.flatnonzero(mask):
                metadata = self._metadata[slot] or {}
                if not all(json_key(metadata.get(k)) in values_of[k] for k in by_row):
                    mask[slot] = False
        return mask

    def _postings(self, key: str, build: bool = True) -> dict[tuple[str, Any], list[int]] | None:
        """The slots of every value of metadata ``key`` (built once: ~10 ms at 10k rows;
        ``None`` when not built yet and not to be built now). The least recently used of
        ``_MAX_VALUE_INDEXES`` goes first."""
        postings = self._by_value.pop(key, None)
        if postings is None:
            if not build:
                return None
            postings = {}
            for slot, metadata in enumerate(self._metadata):
                value = metadata.get(key) if metadata else None
                postings.setdefault(json_key(value), []).append(slot)
            if len(self._by_value) >= _MAX_VALUE_INDEXES:
                del self._by_value[next(iter(self._by_value))]
        self._by_value[key] = postings  # the most recently used last
        return postings

    def vector_search(
        self, query: np.ndarray, k: int, within: Within = EVERYWHERE
    ) -> list[tuple[str, float]]:
        n = len(self._ids)
        if not self._slot or k <= 0:
            return []
        if n < self._ann_threshold:
            sims = cosines(self._vectors[:n], query)
            self._best_of_chunks(sims, query)
            if not self._all_in(within):
                sims[~self._mask(within)] = -np.inf
            return self._top(sims, k)
        mask = self._mask(within)
        if within.where is not None:
            # A filter may keep only memories the probed cells miss: what it keeps, if
            # few enough, is scanned exactly instead.
            kept = np.flatnonzero(mask)
            if len(kept) < self._ann_threshold:
                sims = cosines(self._vectors[kept], query)
                order = np.argsort(-sims, kind="stable")[:k]
                return [(self._ids[kept[i]], float(sims[i])) for i in order]
        slots = self._ann_candidates(query, max(k * 8, 256))
        if self._n_chunks:  # chunks are scanned exactly: their best owners join in
            best = np.full(n, -np.inf, dtype=np.float32)
            self._best_of_chunks(best, query)
            best[~mask] = -np.inf
            top = np.argpartition(-best, min(k, n - 1))[: k + 1]
            slots = np.unique(np.concatenate([slots, top[np.isfinite(best[top])]]))
        sims = cosines(self._vectors[slots], query)
        if self._n_chunks:
            sims = np.maximum(sims, best[slots])
        sims[~mask[slots]] = -np.inf
        order = np.argsort(-sims)[:k]
        return [(self._ids[slots[i]], float(sims[i])) for i in order if np.isfinite(sims[i])]

    def vector_searches(
        self, queries: np.ndarray, k: int, within: Within = EVERYWHERE
    ) -> list[list[tuple[str, float]]]:
        """:meth:`vector_search` for each row of ``queries``: one matrix product per block of
        rows (compute-bound, unlike one matrix-vector product per row), so a batch of adds
        pays for its neighbours' search once."""
        n = len(self._ids)
        # A few rows: matrix-vector products by einsum (see :func:`cosines`); BLAS's threads
        # made one row of a single add take ~5 ms instead of ~0.1 ms on a busy machine.
        if not self._slot or k <= 0 or n >= self._ann_threshold or len(queries) < 16:
            return [self.vector_search(q, k, within) for q in queries]
        mask = self._mask(within)
        matrix = self._vectors[:n]
        out: list[list[tuple[str, float]]] = []
        block = max(1, 4_000_000 // max(n, 1))  # ~16 MB of scores at a time
        for start in range(0, len(queries), block):
            part = np.asarray(queries[start : start + block], dtype=np.float32)
            sims = part @ matrix.T
            if self._n_chunks:
                chunk_sims = part @ self._chunks[: self._n_chunks].T
                owners = self._owners[: self._n_chunks]
                for row, chunk_row in zip(sims, chunk_sims, strict=True):
                    np.maximum.at(row, owners, chunk_row)
            sims[:, ~mask] = -np.inf
            out += [self._top(row, k) for row in sims]
        return out

    def keyword_search(
        self, query_terms: list[str], k: int, within: Within = EVERYWHERE
    ) -> list[tuple[str, float]]:
        n = len(self._ids)
        if not self._slot or not query_terms or k <= 0:
            return []
        scores = self._bm25.scores(query_terms, n)
        # A slot scored above 0 holds a query term, so it is alive (postings hold live
        # documents only): the partition's mask is needed only when ``within`` narrows it.
        out = ~(scores > 0)
        if not self._whole(within):
            out |= ~self._mask(within)
        scores[out] = -np.inf
        return self._top(scores, k)

    def searches(
        self, query_terms: list[str], query: np.ndarray, k: int, within: Within = EVERYWHERE
    ) -> tuple[Completed, Completed]:
        """:meth:`keyword_search` and :meth:`vector_search`, each list completed with the
        other's hits it missed (as ``Store.searches`` may): the vector list followed by the
        keyword hits it missed with their cosines (:func:`~engrammar.recall.fusion.missed_hits`),
        the keyword list by the vector hits it missed that hold a query term with their BM25
        scores (:meth:`keyword_scores`: the scores the keyword search just computed), best
        first. Their vectors, windows and slots are at hand here, where recall would ask the
        store for them again."""
        keyword = self.keyword_search(query_terms, k, within)
        vector = self.vector_search(query, k, within)
        in_keyword = {memory_id for memory_id, _ in keyword}
        unscored = [memory_id for memory_id, _ in vector if memory_id not in in_keyword]
        scored: list[tuple[str, float]] = []
        if unscored and query_terms:
            slot = self._slot
            found = self._bm25.slot_scores(query_terms, [slot[i] for i in unscored])
            scored = [(i, s) for i, s in zip(unscored, found, strict=True) if s > 0]
            scored.sort(key=_SCORE, reverse=True)  # stable: ties in the vector list's order
        in_vector = {memory_id for memory_id, _ in vector}
        missed = [memory_id for memory_id, _ in keyword if memory_id not in in_vector]
        if missed:
            slots = [self._slot[memory_id] for memory_id in missed]
            rows = self._chunk_rows
            windows = [[c.embedding for c in rows.get(s, ())] for s in slots] if rows else None
            vector += missed_hits(missed, self._vectors[slots], windows, query)
        return Completed(keyword + scored), Completed(vector)

    def keyword_scores(self, query_terms: list[str], ids: Sequence[str]) -> dict[str, float]:
        """The BM25 score above 0 of each of ``ids`` this partition holds (as
        :meth:`keyword_search` scores it)."""
        held = [memory_id for memory_id in ids if memory_id in self._slot]
        if not held or not query_terms:
            return {}
        found = self._bm25.slot_scores(query_terms, [self._slot[i] for i in held])
        return {i: score for i, score in zip(held, found, strict=True) if score > 0}

    @staticmethod
    def _whole(within: Within) -> bool:
        """Whether ``within`` keeps every memory of the partition."""
        return within.agent_id is None and within.session_id is None and within.where is None

    def _all_in(self, within: Within) -> bool:
        """Whether ``within`` keeps every slot: the whole partition, and no slot removed (a
        search then masks nothing)."""
        return self._whole(within) and len(self._slot) == len(self._ids)

    def _top(self, scores: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The ``k`` best finite scores, best first (ties in the order the partition gives)."""
        k = min(k, len(scores))
        neg = -scores
        idx = np.argpartition(neg, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        idx = idx[np.argsort(neg[idx], kind="stable")]
        found = scores[idx]
        cut = len(found)  # what is not finite sorts last: cut after the last finite score
        if cut and not math.isfinite(found[-1]):
            finite = np.flatnonzero(np.isfinite(found))
            cut = int(finite[-1]) + 1 if len(finite) else 0
        return list(
            zip(map(self._ids.__getitem__, idx[:cut].tolist()), found[:cut].tolist(), strict=True)
        )

    def term_postings(
        self, query_terms: list[str], limit: int, within: Within = EVERYWHERE
    ) -> tuple[int, dict[str, tuple[int, list[str]]]]:
        """Documents in the (filtered) partition, and per term its document frequency and up
        to ``limit`` of the documents holding it, newest first."""
        if not self._slot:  # a new scope's first add: no term is held by any document
            return 0, {term: (0, []) for term in dict.fromkeys(query_terms)}
        mask = self._mask(within)
        out: dict[str, tuple[int, list[str]]] = {}
        for term in dict.fromkeys(query_terms):
            slots = self._bm25.slots(term)
            kept = np.sort(slots[mask[slots]])[::-1].tolist()
            out[term] = (len(kept), [self._ids[s] for s in kept[:limit]])
        return int(mask.sum()), out

    def holds_kind(self, kind: str) -> bool:
        """Whether a live memory of the partition is of ``kind``."""
        code = self._codes.get(kind)
        if code is None:
            return False
        n = len(self._ids)
        return bool(np.any((self._kind_codes[:n] == code) & self._alive[:n]))

    def vectors_of(self, ids: list[str]) -> dict[str, np.ndarray]:
        slot, vectors = self._slot, self._vectors
        return {i: vectors[slot[i]] for i in ids if i in slot}

    def chunks_of(self, ids: list[str]) -> tuple[dict[str, list[ChunkVector]], list[str]]:
        """The chunk vectors of those of ``ids`` indexed here (memories without any are
        missing from the dict), and the ids not indexed here."""
        found: dict[str, list[ChunkVector]] = {}
        absent: list[str] = []
        for i in ids:
            slot = self._slot.get(i)
            if slot is None:
                absent.append(i)
            elif slot in self._chunk_rows:
                found[i] = self._chunk_rows[slot]
        return found, absent

    def _ann_candidates(self, query: np.ndarray, want: int) -> np.ndarray:
        n = len(self._ids)
        if self._ivf is None or n > self._ivf_size * 1.2:
            self._ivf = _IVF.build(self._vectors[:n], self._alive[:n])
            self._ivf_size = n
        slots = self._ivf.candidates(query, want)
        # Slots added since the IVF was built are always scanned exactly.
        fresh = np.arange(self._ivf_size, n)
        return np.unique(np.concatenate([slots, fresh])) if len(fresh) else slots


class _IVF:
    """Inverted-file index: vectors bucketed by their nearest k-means centroid."""

    def __init__(self, centroids: np.ndarray, cells: list[np.ndarray]) -> None:
        self.centroids = centroids
        self.cells = cells

    @property
    def nbytes(self) -> int:
        return self.centroids.nbytes + sum(c.nbytes for c in self.cells)

    @classmethod
    def build(cls, vectors: np.ndarray, alive: np.ndarray, seed: int = 0) -> _IVF:
        slots = np.flatnonzero(alive)
        n_cells = max(1, int(np.sqrt(len(slots))))
        rng = np.random.default_rng(seed)
        sample = vectors[rng.choice(slots, size=min(len(slots), n_cells * 32), replace=False)]
        centroids = sample[rng.choice(len(sample), size=n_cells, replace=False)].copy()
        for _ in range(8):
            assign = np.argmax(sample @ centroids.T, axis=1)
            for c in range(n_cells):
                members = sample[assign == c]
                if len(members):
                    mean = members.mean(axis=0)
                    centroids[c] = mean / max(float(np.linalg.norm(mean)), 1e-9)
        assign = np.empty(len(slots), dtype=np.int64)
        for start in range(0, len(slots), 65536):
            chunk = slots[start : start + 65536]
            assign[start : start + len(chunk)] = np.argmax(vectors[chunk] @ centroids.T, axis=1)
        cells = [slots[assign == c] for c in range(n_cells)]
        return cls(centroids, cells)

    def candidates(self, query: np.ndarray, want: int) -> np.ndarray:
        order = np.argsort(-cosines(self.centroids, query))
        picked: list[np.ndarray] = []
        total = 0
        for c in order:
            picked.append(self.cells[c])
            total += len(self.cells[c])
            if total >= want and len(picked) >= 8:
                break
        return np.concatenate(picked) if picked else np.empty(0, dtype=np.int64)


class _Sized(Protocol):
    @property
    def nbytes(self) -> int: ...


V = TypeVar("V", bound=_Sized)
Key = tuple[str, str, str | None]  # (what, workspace, user)


class ByteLRU(Generic[V]):
    """Indexes by scope, least recently used dropped first once they hold over ``max_bytes``.

    A dropped index is rebuilt from the database on its next use, so the bound costs time,
    never data. The newest entry stays even when it alone is over the bound (a search needs
    it); not thread-safe (the store locks).
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[Key, V] = OrderedDict()
        self._sizes: dict[Key, int] = {}
        self.total = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Key) -> V | None:
        item = self._items.get(key)
        if item is not None:
            self._items.move_to_end(key)
        return item

    def put(self, key: Key, item: V) -> None:
        """Keep ``item`` under ``key`` (or re-measure it after it changed), then evict."""
        self.total -= self._sizes.pop(key, 0)
        self._items[key] = item
        self._items.move_to_end(key)
        size = item.nbytes
        self._sizes[key] = size
        self.total += size
        while self.total > self.max_bytes and len(self._items) > 1:
            old, _ = self._items.popitem(last=False)
            self.total -= self._sizes.pop(old)

    def pop(self, key: Key) -> None:
        if self._items.pop(key, None) is not None:
            self.total -= self._sizes.pop(key)

    def items(self) -> Iterator[tuple[Key, V]]:
        return iter(list(self._items.items()))

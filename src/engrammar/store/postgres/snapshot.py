"""What one PostgreSQL read session holds (see :mod:`.reads`): the snapshot of one
thread's recall, its lazily decoded rows, and the aggregates the wide statements return."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from ...learn.scoring import EventFacts, PairFacts
from ...models import Edge, MemoryRecord, Scope
from ..base import ChunkVector, ReadPlan

__all__ = [
    "NARROW_KINDS",
    "PARTS_OF",
    "WINDOW_AGGREGATES",
    "Ahead",
    "Lazy",
    "Part",
    "Snapshot",
    "change_rows",
    "edges",
    "keep_parts",
    "keep_raw",
    "no_decoder",
    "vector",
    "wants_parts",
    "windows",
]

V = TypeVar("V")
#: The kinds of edge the prefetch reads of every full node; the many ``semantic`` and
#: ``entity`` edges it reads only of the nodes a graph walk is likely to leave.
NARROW_KINDS = ("sequence", "supersedes", "contradicts")
#: One logged change of an edge: ``(src, dst, kind, recall_id, applied)`` (``learned_edge_parts``)
Part = tuple[str, str, str, str | None, float]


class Lazy(Generic[V]):
    """A dict whose values may be kept undecoded (``put_raw``) until first read."""

    __slots__ = ("_decode", "_done", "_raw", "fallback")

    def __init__(self, decode: Callable[[Any], V]) -> None:
        self._decode = decode
        self._done: dict[str, V] = {}
        self._raw: dict[str, Any] = {}
        #: raw values of keys the dict was not given (None: no value), e.g. a scope's graph
        self.fallback: Callable[[str], Any] | None = None

    def put_raw(self, key: str, raw: Any) -> None:
        self._done.pop(key, None)
        self._raw[key] = raw

    def __contains__(self, key: object) -> bool:
        if key in self._done or key in self._raw:
            return True
        return self.fallback is not None and self.fallback(key) is not None  # type: ignore[arg-type]

    def __getitem__(self, key: str) -> V:
        if key in self._raw:
            self._done[key] = self._decode(self._raw.pop(key))
        elif key not in self._done and self.fallback is not None:
            raw = self.fallback(key)
            if raw is not None:
                self._done[key] = self._decode(raw)
        return self._done[key]

    def __setitem__(self, key: str, value: V) -> None:
        self._raw.pop(key, None)
        self._done[key] = value

    def __iter__(self) -> Iterator[str]:
        return iter([*self._done, *self._raw])

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


def vector(data: Any) -> np.ndarray:
    """A vector from pgvector's binary format (``vector_send``)."""
    dim = struct.unpack_from(">H", data)[0]
    return np.frombuffer(data, dtype=">f4", count=dim, offset=4).astype(np.float32)


def keep_raw(snap: Snapshot, rows: Sequence[Sequence[Any]], at: int, width: int) -> None:
    """Keep rows of ``M_RAW`` (``width`` record columns from column ``at``, then the vector)
    in ``snap`` undecoded: a record or vector is decoded when first read."""
    for r in rows:
        snap.records.put_raw(r[at], r[at : at + width])
        if r[at + width] is not None:
            snap.vecs.put_raw(r[at], r[at + width])


def edges(raw: tuple[str, list[str], list[str], list[float], list[float]]) -> list[Edge]:
    src, dsts, kinds, weights, ups = raw
    return [Edge(src, d, k, w, u) for d, k, w, u in zip(dsts, kinds, weights, ups, strict=True)]


@dataclass
class Snapshot:
    """What one read session of one thread has read so far."""

    #: what the caller said it will read (see ``Store.reading``)
    plan: ReadPlan
    scope: Scope | None = None
    records: Lazy[MemoryRecord] = field(default_factory=lambda: Lazy(no_decoder))
    vecs: Lazy[np.ndarray] = field(default_factory=lambda: Lazy(vector))
    #: src -> every edge leaving it (only for the sources read in full)
    out_edges: Lazy[list[Edge]] = field(default_factory=lambda: Lazy(edges))
    #: src -> its edges of the ``NARROW_KINDS`` (sources a walk is unlikely to leave)
    narrow_edges: Lazy[list[Edge]] = field(default_factory=lambda: Lazy(edges))
    keyword_ids: list[str] = field(default_factory=list)
    keyword_scores: list[float] = field(default_factory=list)
    prefetched: bool = False
    #: (the query vector, the scope's nearest chunks to it, as ``search_knowledge`` reads them)
    knowledge_ahead: tuple[np.ndarray, list[Any]] | None = None
    scope_read: bool = False
    #: the scope's graph the session falls back on (``.graph``), if any
    graph: Any = None
    kinds: dict[tuple[str, int], list[MemoryRecord]] = field(default_factory=dict)
    #: memory id -> its chunk vectors (``memory_chunks``; empty: none), for the ids read
    windows: dict[str, list[ChunkVector]] = field(default_factory=dict)
    #: no feedback record of the scope at or after ``feedback_since`` (the probe's answer)
    no_feedback: bool = False
    #: the probe found reply signals of the scope's user at or after ``feedback_since``
    signals: bool = False
    #: the probe found events, preference pairs, ratings at or after ``feedback_since``
    found: tuple[bool, bool, bool] = (True, True, True)
    #: what was read of the learned ranking's records with the neighbourhood
    learned: Ahead | None = None
    #: src -> the logged changes of the edges leaving it (``learned_edge_parts`` rows), for
    #: every source read in full while ``ahead.edge_parts`` asked for them
    edge_parts: dict[str, list[Part]] = field(default_factory=dict)


@dataclass
class Ahead:
    """The learned ranking's records read with the neighbourhood (``feedback_since`` as the
    horizon): what was sent, and the answers."""

    sent: tuple[bool, bool, bool]  # events, pairs, reply signals matched by the query
    events: list[EventFacts]
    pairs: list[PairFacts]
    replies: list[Any]  # rows of ``_replies_statement`` (no witnesses)
    #: the vector search's query vector when it differs from the session's query's (the
    #: edge context matches with it), and the rows of ``_replies_statement`` matched with it
    searched: np.ndarray | None = None
    searched_replies: list[Any] = field(default_factory=list)


def no_decoder(raw: Any) -> Any:
    raise AssertionError("records are kept raw only by a session that decodes them")


# A memory's chunk vectors (``memory_chunks`` rows ``c``) as the four columns :func:`windows`
# decodes: positions, starts, ends, and the vectors in pgvector's binary format, end to end.
WINDOW_AGGREGATES = (
    "array_agg(c.position ORDER BY c.position) AS pos, "
    "array_agg(c.start_char ORDER BY c.position) AS starts, "
    "array_agg(c.end_char ORDER BY c.position) AS ends, "
    "string_agg(vector_send(c.embedding), ''::bytea ORDER BY c.position) AS vecs"
)


def windows(
    positions: list[int] | None, starts: list[int] | None, ends: list[int] | None, vecs: Any
) -> list[ChunkVector]:
    """Chunk vectors from the prefetch's aggregates (``vecs``: pgvector's binary format of
    each, one after another)."""
    if not positions or starts is None or ends is None or vecs is None:
        return []
    data = bytes(vecs)
    out = []
    offset = 0
    for position, start, end in zip(positions, starts, ends, strict=True):
        dim = struct.unpack_from(">H", data, offset)[0]
        vector = np.frombuffer(data, dtype=">f4", count=dim, offset=offset + 4)
        out.append(ChunkVector(int(position), int(start), int(end), vector.astype(np.float32)))
        offset += 4 + 4 * dim
    return out


# The logged changes of the edges leaving each source of ``{sources}`` (an array expression),
# aggregated per source (the columns ``keep_parts`` reads): what ``learned_edge_parts`` returns.
# ``{ws}``: the workspace's placeholder.
PARTS_OF = """
    SELECT src, array_agg(dst) AS dsts, array_agg(kind) AS kinds, array_agg(recall_id) AS recalls,
           array_agg(COALESCE(weight - before, delta)) AS applied
    FROM edge_changes WHERE workspace = {ws} AND src = ANY({sources}) GROUP BY src
"""


def change_rows(
    src: str,
    dsts: Sequence[str] | None,
    kinds: Sequence[str] | None,
    recalls: Sequence[str | None] | None,
    applied: Sequence[float] | None,
) -> list[Part]:
    """One source's rows of ``PARTS_OF`` as ``learned_edge_parts`` rows (none: no change)."""
    if not dsts or kinds is None or recalls is None or applied is None:
        return []
    return [
        (src, d, k, r, float(a)) for d, k, r, a in zip(dsts, kinds, recalls, applied, strict=True)
    ]


def keep_parts(snap: Snapshot, sources: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Store ``PARTS_OF``'s rows for ``sources`` (those without a row had no change)."""
    for src in sources:
        snap.edge_parts[src] = []
    for src, dsts, kinds, recalls, applied in rows:
        snap.edge_parts[src] = change_rows(src, dsts, kinds, recalls, applied)


def wants_parts(snap: Snapshot) -> bool:
    """Whether the session reads the edges' logged changes with their out-edges."""
    return (
        snap.plan.learning is not None and snap.plan.learning.edge_parts and snap.plan.neighbourhood
    )

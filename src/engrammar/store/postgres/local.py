"""A small scope's vector hits from the process's copy of its graph.

A user with at most ``EXACT_MAX`` active memories is searched exactly in the server: the
scope's rows read through its btree and every distance computed (``own_hits``' exact
branch), and the chunk vectors of its long memories (``chunk_hits``). When this process
holds the scope's graph (:mod:`.graph`: every row with its vector, every chunk
vector, refreshed in the exchange that would have carried the search), the same answer
costs a matrix product in process: ~0.2 ms at 1,000 memories, against ~1.8 ms of server
time (planning ~0.7, the scan ~1.1) in a recall's or a feedback's first exchange.

The answer is the server's: the scope's active memories and the active owners of its chunk
vectors, by the smallest cosine distance of the memory's vector and its windows', ties by
id, at most ``k``, as ``(id, similarity, distance)`` rows. The search is the batched add's
(:func:`.exact_vectors.nearest_in`) over the graph's vectors, prepared once per change
of the graph's rows or windows: scaled to length 1 in single precision (~1.5 kB a memory
besides the graph's copy of the row) and summed in single precision, as pgvector sums, in
another order. Distances agree with the server's to ~1e-7, so only memories that tie to that
precision can swap places. (A zero vector, which no embedder gives, scores 0 here and NaN in
the server.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import StoreError
from ..tables import MEMORY_COLUMNS
from .exact_vectors import Searchable, nearest_in, searchable, stacked
from .statements import N_MEMORY
from .vectors import EXACT_MAX

__all__ = ["local_hits", "local_vectors", "searched_locally"]

_STATUS = [c.strip() for c in MEMORY_COLUMNS.split(",")].index("status")


def searched_locally(graph: Any) -> bool:
    """Whether a scope whose graph is ``graph`` is searched in process: one the server
    searches exactly (at most ``EXACT_MAX`` memories, so at most as many active ones)."""
    return graph is not None and len(graph.rows) <= EXACT_MAX


def _build(graph: Any) -> Searchable | None:
    """The graph's active memories and their windows as :func:`.exact_vectors.stacked`
    reads them from the server (ids in order, pgvector's binary format one after another);
    None when they are not all of one dimension."""
    ids = sorted(i for i, row in graph.rows.items() if row[_STATUS] == "active")
    ids = [i for i in ids if graph.rows[i][N_MEMORY] is not None]
    owners: list[str] = []
    for mid in ids:
        found = graph.wins.get(mid)
        if found and found[0] is not None and found[3] is not None:
            owners += [mid] * len(found[0])
    try:
        rows = stacked((ids, b"".join(bytes(graph.rows[i][N_MEMORY]) for i in ids)))
        window_rows = stacked(
            (owners, b"".join(bytes(graph.wins[i][3]) for i in dict.fromkeys(owners)))
        )
    except StoreError:
        return None  # vectors of two sizes: the server answers
    return searchable(rows, window_rows)


def local_vectors(graph: Any) -> Searchable | None:
    """The graph's searchable vectors, built on first use after a change of its rows or
    windows (``ScopeGraph.apply`` drops them)."""
    with graph.lock:
        if graph.local is None:
            graph.local = _build(graph) or False
        return graph.local or None


def local_hits(graph: Any, query: np.ndarray, k: int) -> list[tuple[str, float, float]] | None:
    """The vector statement's rows for the graph's scope (see the module docstring), or
    None when the graph cannot answer (vectors of another size than the query's)."""
    found = local_vectors(graph)
    if found is None:
        return None
    if found.ids and found.matrix.shape[1] != np.shape(query)[-1]:
        return None
    (hits,) = nearest_in(found, np.asarray(query, dtype=np.float32)[None, :], k)
    return [(memory_id, similarity, 1.0 - similarity) for memory_id, similarity in hits]

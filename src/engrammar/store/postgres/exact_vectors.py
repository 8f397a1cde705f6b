"""Exact nearest-neighbour search of one scope in process, as the PostgreSQL store's vector
statement scores a small scope: a memory by the best cosine of its own vector and
its windows', ties by id. Used by a batched add (:mod:`.add_search`, many queries
against vectors read for it) and by recall and feedback on a scope whose graph the process
holds (:mod:`.local`, one query against vectors prepared once)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import StoreError

__all__ = ["Searchable", "nearest", "nearest_in", "searchable", "stacked"]

# Scores computed at a time (float32: ~16 MB).
_BLOCK = 4_000_000


def stacked(row: Sequence[Any] | None) -> tuple[list[str], np.ndarray]:
    """The ids and the float32 matrix of a :func:`queue_scope_vectors` row."""
    if row is None or not row[0]:
        return [], np.empty((0, 0), dtype=np.float32)
    ids, data = list(row[0]), bytes(row[1])
    dim = int.from_bytes(data[:2], "big")
    width = 4 + 4 * dim  # pgvector's header (dimension, unused), then big-endian floats
    if len(data) != width * len(ids):
        raise StoreError("the scope's vectors are not all of one dimension")
    raw = np.frombuffer(data, dtype=np.uint8).reshape(len(ids), width)[:, 4:]
    return ids, np.ascontiguousarray(raw).view(">f4").astype(np.float32)


@dataclass(frozen=True)
class Searchable:
    """What :func:`nearest_in` scores: the scope's memory ids, their vectors and their
    windows' scaled to length 1 (float32), each window's memory, and each id's rank in id
    order (the tie-break)."""

    ids: list[str]
    matrix: np.ndarray
    windows: np.ndarray | None
    owners: np.ndarray
    order_of_id: np.ndarray


def searchable(
    rows: tuple[list[str], np.ndarray], window_rows: tuple[list[str], np.ndarray]
) -> Searchable:
    """``rows``: the ids and vectors of the scope's active memories; ``window_rows``: the
    memory ids and vectors of their windows (those of other memories are left out); both as
    :func:`stacked` gives them."""
    ids, vectors = rows
    slot = {mid: i for i, mid in enumerate(ids)}
    owner_ids, window_vectors = window_rows
    keep = [i for i, mid in enumerate(owner_ids) if mid in slot]
    return Searchable(
        ids,
        _unit(np.asarray(vectors, dtype=np.float32)) if ids else np.empty((0, 0), np.float32),
        _unit(np.asarray(window_vectors, dtype=np.float32)[keep]) if keep else None,
        np.array([slot[owner_ids[i]] for i in keep], dtype=np.intp),
        np.argsort(np.array(ids, dtype=object)).argsort(),  # rank of each id
    )


def nearest(
    queries: np.ndarray,
    rows: tuple[list[str], np.ndarray],
    window_rows: tuple[list[str], np.ndarray],
    k: int,
) -> list[list[tuple[str, float]]]:
    """Each query's ``k`` nearest memories by cosine, a memory scored by the best of its own
    vector and its windows' (as the server's vector statement scores it); the best first,
    ties by id. ``rows``, ``window_rows``: see :func:`searchable`."""
    return nearest_in(searchable(rows, window_rows), queries, k)


def nearest_in(scope: Searchable, queries: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
    """:func:`nearest` over vectors prepared once (a scope searched again and again)."""
    ids, matrix, windows, owners, order_of_id = (
        scope.ids, scope.matrix, scope.windows, scope.owners, scope.order_of_id
    )  # fmt: skip
    if not ids or k <= 0:
        return [[] for _ in queries]
    n = len(ids)
    k = min(k, n)
    out: list[list[tuple[str, float]]] = []
    block = max(1, _BLOCK // n)
    for start in range(0, len(queries), block):
        part = _unit(np.asarray(queries[start : start + block], dtype=np.float32))
        sims = part @ matrix.T
        if windows is not None:
            window_sims = part @ windows.T
            for row, window_row in zip(sims, window_sims, strict=True):
                np.maximum.at(row, owners, window_row)
        for row in sims:
            top = np.argpartition(-row, k - 1)[:k] if k < n else np.arange(n)
            top = top[np.lexsort((order_of_id[top], -row[top]))]
            out.append([(ids[i], float(row[i])) for i in top.tolist()])
    return out


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: np.ndarray = matrix / np.maximum(norms, np.float32(1e-12))
    return unit

"""The rows of ``memory_chunks``: the vectors of a long memory's windows past the first.

A message longer than the embedder reads (``Config.chunk_chars``) keeps its full text in
``memories`` and one vector per further window here, written in the same transaction as the
memory and deleted with it. Both backends write them through these helpers, so their rows
match field for field (``engrammar migrate`` copies them as they are).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from ..base import ChunkVector

__all__ = ["CHUNK_FIELDS", "chunk_params", "chunk_vector"]

#: The fields of a ``memory_chunks`` row, in insert order (``COPY_TABLES`` lists the same).
CHUNK_FIELDS = (
    "workspace",
    "memory_id",
    "position",
    "user_id",
    "agent_id",
    "session_id",
    "start_char",
    "end_char",
    "embedding",
)


class Owner(Protocol):
    """What a chunk row copies from its memory (a NewMemory or a MemoryRecord)."""

    @property
    def id(self) -> str: ...
    @property
    def workspace(self) -> str: ...
    @property
    def user_id(self) -> str | None: ...
    @property
    def agent_id(self) -> str | None: ...
    @property
    def session_id(self) -> str | None: ...


def chunk_params(
    owner: Owner, chunks: Sequence[ChunkVector], vector: Callable[[np.ndarray], Any]
) -> list[tuple[Any, ...]]:
    """Insert parameters (:data:`CHUNK_FIELDS` order) of ``chunks`` of the memory ``owner``;
    ``vector`` turns an array into the backend's vector parameter."""
    return [
        (
            owner.workspace,
            owner.id,
            c.position,
            owner.user_id,
            owner.agent_id,
            owner.session_id,
            c.start,
            c.end,
            vector(np.asarray(c.embedding, dtype=np.float32)),
        )
        for c in chunks
    ]


def chunk_vector(row: Sequence[Any], load: Callable[[Any], np.ndarray]) -> ChunkVector:
    """A ``(position, start_char, end_char, embedding)`` row as a :class:`ChunkVector`."""
    return ChunkVector(int(row[0]), int(row[1]), int(row[2]), load(row[3]))

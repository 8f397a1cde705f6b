"""Knowledge bases: documents of a scope split into embedded chunks, searched beside the
conversation memories (``search_knowledge``, and the ``knowledge`` of a recall)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..deadline import check as check_deadline
from ..errors import TooLargeError
from ..models import KnowledgeBase, KnowledgeChunk, Scope
from ..recall.chunks import split_document
from ..store import NewKnowledgeBase
from ..store.sql.knowledge import scope_full
from .base import Engine
from .ids import new_id
from .ranking import query_vector

__all__ = ["MIN_CHUNK_CHARS", "add", "search", "split_document"]

#: The shortest passage a document may be split into: below about a sentence a passage
#: means nothing on its own, and a document becomes as many vectors as it has characters.
MIN_CHUNK_CHARS = 100


def add(
    engine: Engine,
    scope: Scope,
    name: str,
    passages: Sequence[tuple[str, dict[str, Any]]],
    metadata: dict[str, Any],
    source: str = "chunks",
) -> KnowledgeBase:
    """Embed checked ``(content, metadata)`` passages and store them as one knowledge base.

    Refused with :class:`~engrammar.errors.TooLargeError` before anything is embedded when
    the passages pass ``Config.max_chunks_per_knowledge_base`` or, with what the workspace
    and user hold already, ``Config.max_knowledge_chunks_per_scope`` (the store checks the
    latter again in the write's transaction)."""
    config = engine.config
    field = "text" if source == "text" else "chunks"
    if len(passages) > config.max_chunks_per_knowledge_base:
        raise TooLargeError(
            field,
            f"makes {len(passages)} passages; a knowledge base holds at most "
            f"{config.max_chunks_per_knowledge_base} (max_chunks_per_knowledge_base)",
        )
    held = engine.store.count_knowledge_chunks(scope.workspace, scope.user_id)
    if held + len(passages) > config.max_knowledge_chunks_per_scope:
        raise TooLargeError(
            field,
            scope_full(
                scope.workspace,
                scope.user_id,
                held,
                len(passages),
                config.max_knowledge_chunks_per_scope,
            ),
        )
    now = time.time()
    base = KnowledgeBase(
        id=f"kb_{new_id()}",
        name=name,
        **scope.owner(),
        chunk_count=len(passages),
        created_at=now,
        metadata=metadata,
    )
    vectors = (
        engine.embed([content for content, _ in passages])
        if passages
        else np.zeros((0, engine.embedder.dim), dtype=np.float32)
    )
    chunks = [
        (
            KnowledgeChunk(
                id=f"{base.id}_{i}",
                kb_id=base.id,
                position=i,
                content=content,
                **scope.owner(),
                created_at=now,
                metadata=meta,
            ),
            vectors[i],
        )
        for i, (content, meta) in enumerate(passages)
    ]
    check_deadline("storing the knowledge base")  # nothing is written yet
    engine.store.add_knowledge(
        NewKnowledgeBase(base, chunks), config.max_knowledge_chunks_per_scope
    )
    return base


def search(
    engine: Engine, scope: Scope, query: str, limit: int, min_score: float = 0.0
) -> list[KnowledgeChunk]:
    """The scope's chunks most similar to ``query`` (cosine, clipped to [0, 1]), best first;
    those scoring below ``min_score`` are left out."""
    return engine.store.search_knowledge(scope, query_vector(engine, query), limit, min_score)

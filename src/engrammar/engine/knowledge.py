"""Knowledge bases: documents of a scope split into embedded chunks, searched beside the
conversation memories (``search_knowledge``, and the ``knowledge`` of a recall)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..models import KnowledgeBase, KnowledgeChunk, Scope
from ..recall.chunks import split_document
from .base import Engine

__all__ = ["add", "search", "split_document"]


def add(
    engine: Engine,
    scope: Scope,
    name: str,
    passages: Sequence[tuple[str, dict[str, Any]]],
    metadata: dict[str, Any],
) -> KnowledgeBase:
    """Embed checked ``(content, metadata)`` passages and store them as one knowledge base."""
    now = time.time()
    base = KnowledgeBase(
        id=f"kb_{uuid.uuid4().hex}",
        name=name,
        workspace=scope.workspace,
        user_id=scope.user_id,
        agent_id=scope.agent_id,
        session_id=scope.session_id,
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
                workspace=scope.workspace,
                user_id=scope.user_id,
                agent_id=scope.agent_id,
                session_id=scope.session_id,
                created_at=now,
                metadata=meta,
            ),
            vectors[i],
        )
        for i, (content, meta) in enumerate(passages)
    ]
    engine.store.add_knowledge(base, chunks)
    return base


def search(
    engine: Engine, scope: Scope, query: str, limit: int, min_score: float = 0.0
) -> list[KnowledgeChunk]:
    """The scope's chunks most similar to ``query`` (cosine, clipped to [0, 1]), best first;
    those scoring below ``min_score`` are left out."""
    found = engine.store.knowledge_chunks(scope)
    if not found:
        return []
    q = engine.embed_one(query)
    matrix = np.stack([v for _, v in found])
    norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(q)) or 1.0)
    scores = np.clip(matrix @ q / np.where(norms == 0, 1.0, norms), 0.0, 1.0)
    order = sorted(range(len(found)), key=lambda i: (-float(scores[i]), i))
    out = []
    for i in order[:limit]:
        if float(scores[i]) < min_score:
            break
        chunk = found[i][0]
        chunk.score = round(float(scores[i]), 6)
        out.append(chunk)
    return out

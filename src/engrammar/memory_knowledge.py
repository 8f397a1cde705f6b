"""Knowledge bases, as ``Memory`` methods (a part of the facade kept in its own file).

:class:`Memory` inherits them: named documents of a scope, split into embedded chunks that
``search_knowledge`` and every ``recall`` of the scope search beside the conversation memories.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from .engine import knowledge
from .engine import validate as v
from .errors import NotFoundError, ValidationError
from .memory_base import FacadeBase
from .models import KnowledgeBase, KnowledgeChunk

__all__ = ["KnowledgeMixin"]


class KnowledgeMixin(FacadeBase):
    """add_knowledge, search_knowledge, list_knowledge, delete_knowledge."""

    def add_knowledge(
        self,
        name: str,
        chunks: Sequence[str | dict[str, Any]] | None = None,
        *,
        text: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        metadata: dict[str, Any] | None = None,
        chunk_chars: int = 1000,
        chunk_overlap: int = 100,
    ) -> KnowledgeBase:
        """Store a document as a knowledge base: embedded chunks that ``search_knowledge`` and
        every ``recall`` of the scope search beside the conversation memories.

        Args:
            name: what the knowledge base is called (e.g. ``"Company handbook"``).
            chunks: passages as strings or ``{"content", "metadata"}`` dicts, stored as given.
            text: a whole document instead, split into passages of at most ``chunk_chars``
                characters (at least 100) at paragraph and sentence ends (``chunk_overlap``
                characters repeated where a sentence must be cut). Blank passages are dropped.
            user_id, agent_id, session_id, workspace: the scope; at least one of the first three.
            metadata: kept with the knowledge base.

        Returns:
            The stored :class:`~engrammar.models.KnowledgeBase` (its ``id`` names it later).

        Raises:
            ValidationError: naming the first bad field; nothing is written.
            TooLargeError: more passages than ``Config.max_chunks_per_knowledge_base``, or
                more than ``Config.max_knowledge_chunks_per_scope`` in the workspace and user
                with the ones already there; nothing is written.
        """
        scope = self._scope(user_id, agent_id, session_id, workspace)
        name = v.text("name", name, 500)
        meta = v.metadata("metadata", metadata)
        if (chunks is None) == (text is None):
            raise ValidationError("chunks", "give chunks or text, not both")
        passages: builtins.list[tuple[str, dict[str, Any]]] = []
        if text is not None:
            text = v.text("text", text, self.config.max_content_chars * 100)
            size = v.positive_int(
                "chunk_chars", chunk_chars, minimum=knowledge.MIN_CHUNK_CHARS, maximum=100_000
            )
            v.non_negative_int("chunk_overlap", chunk_overlap)
            passages = [(p, {}) for p in knowledge.split_document(text, size, chunk_overlap)]
        else:
            if not isinstance(chunks, builtins.list | tuple):
                raise ValidationError("chunks", "must be a list")
            for i, chunk in enumerate(chunks):
                raw = chunk if isinstance(chunk, dict) else {"content": chunk}
                content = v.text(
                    f"chunks[{i}].content", raw.get("content"), self.config.max_content_chars
                )
                passages.append((content, v.metadata(f"chunks[{i}].metadata", raw.get("metadata"))))
        for i, (content, _) in enumerate(passages):
            if len(content) > self.config.max_content_chars:
                raise ValidationError(
                    f"chunks[{i}].content",
                    f"must be at most {self.config.max_content_chars} characters",
                )
        source = "text" if text is not None else "chunks"
        return knowledge.add(self._engine, scope, name, passages, meta, source)

    def search_knowledge(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int = 5,
    ) -> builtins.list[KnowledgeChunk]:
        """The scope's knowledge-base chunks most similar to ``query``, best first; each
        ``score`` is the cosine similarity clipped to [0, 1]."""
        query = v.text("query", query, self.config.max_content_chars)
        scope = self._scope(user_id, agent_id, session_id, workspace)
        return knowledge.search(self._engine, scope, query, self._limit(limit))

    def list_knowledge(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
    ) -> builtins.list[KnowledgeBase]:
        """The knowledge bases of a scope, oldest first."""
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        return self.store.list_knowledge(scope)

    def delete_knowledge(
        self,
        kb_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
    ) -> int:
        """Delete a knowledge base of the scope and its chunks; returns the chunks deleted.

        Raises:
            NotFoundError: the scope holds no knowledge base ``kb_id``.
        """
        kb_id = v.scope_id("kb_id", kb_id, required=True) or ""
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        deleted = self.store.delete_knowledge(scope, kb_id)
        if deleted < 0:
            raise NotFoundError(f"knowledge base {kb_id!r} not found in this scope")
        return deleted

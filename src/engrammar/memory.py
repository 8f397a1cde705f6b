"""``Memory``: the one facade. It validates, embeds, orchestrates stores and scoring; no SQL."""

from __future__ import annotations

import builtins
import hashlib
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _graphops
from . import _validate as v
from ._refine import refine_candidates
from .config import Config
from .embed import CachedEmbedder, Embedder, make_embedder
from .errors import EmbedderError, NotFoundError, ValidationError
from .models import KINDS, ROLES, MemoryRecord, RecallResult, Scope, ScoredMemory
from .recall.format import format_memories
from .recall.fusion import Candidate, fuse
from .recall.text import embedding_text, embedding_texts, speaker_of
from .store import NewMemory, RecallRecord, Store, open_store

__all__ = ["Memory"]

_MESSAGE_KEYS = {"role", "content", "metadata", "timestamp", "kind", "name"}


def _dedup_key(scope: Scope, role: str, content: str) -> str:
    raw = "\x00".join(
        [
            scope.workspace,
            scope.user_id or "",
            scope.agent_id or "",
            scope.session_id or "",
            role,
            content,
        ]
    )
    return hashlib.sha256(raw.encode()).hexdigest()


class Memory:
    """Long-term memory for agents that learns from feedback.

    Args:
        config: settings; ``Config()`` (embedded SQLite under ``./engrammar_data``) by default.
        embedder: an :class:`~engrammar.embed.Embedder` to use instead of ``config.embedder``.
        store: a :class:`~engrammar.store.Store` to use instead of opening ``config.store``.

    Example:
        >>> mem = Memory(Config(path="./data"))
        >>> mem.add([{"role": "user", "content": "I write docs before code."}], user_id="alice")
        >>> mem.recall("How do you approach projects?", user_id="alice").formatted
    """

    def __init__(
        self,
        config: Config | None = None,
        *,
        embedder: Embedder | None = None,
        store: Store | None = None,
    ) -> None:
        self.config = config or Config()
        inner = embedder or make_embedder(self.config)
        if not isinstance(inner, Embedder):
            raise EmbedderError(f"{inner!r} does not implement the Embedder protocol")
        self.embedder = CachedEmbedder(inner, self.config.embed_cache_size)
        self.store: Store = store or open_store(self.config)
        self.store.check_embedder(self.embedder.name, self.embedder.dim)
        self._lock = threading.Lock()

    # -- lifecycle ----------------------------------------------------------------------------
    def close(self) -> None:
        """Close the store's connections."""
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers ------------------------------------------------------------------------------
    def _scope(
        self,
        user_id: Any,
        agent_id: Any,
        session_id: Any,
        workspace: Any,
        *,
        need_one: bool = True,
    ) -> Scope:
        ws = v.scope_id("workspace", workspace) if workspace is not None else self.config.workspace
        scope = Scope(
            workspace=ws or self.config.workspace,
            user_id=v.scope_id("user_id", user_id),
            agent_id=v.scope_id("agent_id", agent_id),
            session_id=v.scope_id("session_id", session_id),
        )
        if (
            need_one
            and scope.user_id is None
            and scope.agent_id is None
            and scope.session_id is None
        ):
            raise ValidationError("user_id", "one of user_id, agent_id or session_id is required")
        return scope

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.embedder.embed(texts)
        if vectors.shape != (len(texts), self.embedder.dim) or not np.all(np.isfinite(vectors)):
            raise EmbedderError(f"embedder {self.embedder.name!r} returned invalid vectors")
        return vectors

    # -- writing ------------------------------------------------------------------------------
    def add(
        self,
        messages: str | Sequence[dict[str, Any]] | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        metadata: dict[str, Any] | None = None,
        timestamp: Any = None,
        kind: str = "message",
        content: str | None = None,
    ) -> builtins.list[str]:
        """Store what was said: one memory per message, in one transaction.

        Args:
            messages: a list of ``{"role", "content"}`` dicts (optional per-message keys:
                ``metadata``, ``timestamp``, ``kind``, ``name`` = the speaker) or plain strings
                (user messages), or one plain string. ``content=`` is an alias for a string.
            user_id, agent_id, session_id, workspace: the scope; at least one of the first three.
            metadata: merged into every message's metadata.
            timestamp: when it was said (datetime, ISO-8601 or epoch seconds); default now.
            kind: ``message``, ``fact``, ``decision``, ``preference`` or ``event``.

        Returns:
            The ids, one per message in order; an exact duplicate within the scope returns the
            id already stored instead of a new one.

        Raises:
            ValidationError: naming the first bad field; nothing is written.
        """
        if messages is None:
            messages = content
        elif content is not None:
            raise ValidationError("content", "give messages or content, not both")
        scope = self._scope(user_id, agent_id, session_id, workspace)
        base_meta = v.metadata("metadata", metadata)
        base_time = v.timestamp("timestamp", timestamp)
        v.choice("kind", kind, KINDS)
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        if messages is None:
            raise ValidationError("messages", "is required (a string or a list of messages)")
        if isinstance(messages, dict) or not isinstance(messages, Sequence):
            raise ValidationError("messages", "must be a string or a list of {role, content} dicts")
        if not messages:
            raise ValidationError("messages", "must not be empty")
        if len(messages) > self.config.max_messages_per_add:
            raise ValidationError(
                "messages",
                f"has {len(messages)} items; the limit is {self.config.max_messages_per_add}",
            )
        now = time.time()
        prepared: builtins.list[tuple[str, str, str, float, dict[str, Any]]] = []
        for i, msg in enumerate(messages):
            field = f"messages[{i}]"
            if isinstance(msg, str):
                msg = {"role": "user", "content": msg}
            if not isinstance(msg, dict):
                raise ValidationError(
                    field, f"must be a dict with role and content, got {type(msg).__name__}"
                )
            unknown = set(msg) - _MESSAGE_KEYS
            if unknown:
                raise ValidationError(field, f"unknown keys {sorted(unknown)}")
            role = v.choice(f"{field}.role", msg.get("role"), ROLES)
            text = v.text(f"{field}.content", msg.get("content"), self.config.max_content_chars)
            msg_kind = v.choice(f"{field}.kind", msg.get("kind", kind), KINDS)
            when = v.timestamp(f"{field}.timestamp", msg.get("timestamp"))
            meta = {**base_meta, **v.metadata(f"{field}.metadata", msg.get("metadata"))}
            if msg.get("name") is not None:
                meta["speaker"] = v.text(f"{field}.name", msg["name"], 256)
            prepared.append((role, text, msg_kind, when or base_time or now, meta))
        vectors = self._embed(
            embedding_texts(
                [(p[1], speaker_of(p[4]), p[0]) for p in prepared], self.config.embed_context
            )
        )
        rows = [
            NewMemory(
                id=uuid.uuid4().hex,
                workspace=scope.workspace,
                user_id=scope.user_id,
                agent_id=scope.agent_id,
                session_id=scope.session_id,
                role=role,
                content=text,
                kind=msg_kind,
                created_at=when,
                metadata=meta,
                dedup_key=_dedup_key(scope, role, text),
                embedding=vectors[i],
            )
            for i, (role, text, msg_kind, when, meta) in enumerate(prepared)
        ]
        edges = _graphops.build_edges(self.store, self.config, scope, rows)
        return [memory_id for memory_id, _ in self.store.add_memories(rows, edges)]

    def update(
        self,
        memory_id: str,
        content: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        workspace: str | None = None,
        reason: str = "",
    ) -> MemoryRecord:
        """Change a memory's content (re-embedded) and/or metadata; recorded in its history."""
        ws = self._workspace(workspace)
        v.scope_id("memory_id", memory_id, required=True)
        if content is None and metadata is None:
            raise ValidationError("content", "give content and/or metadata to update")
        new_meta = v.metadata("metadata", metadata) if metadata is not None else None
        embedding = dedup = None
        if content is not None:
            content = v.text("content", content, self.config.max_content_chars)
            current = self.get(memory_id, workspace=ws)
            scope = Scope(ws, current.user_id, current.agent_id, current.session_id)
            embedding = self._embed([embedding_text(content, speaker_of(current.metadata))])[0]
            dedup = _dedup_key(scope, current.role, content)
        return self.store.update_memory(
            ws,
            memory_id,
            content=content,
            embedding=embedding,
            dedup_key=dedup,
            metadata=new_meta,
            status=None,
            reason=v.text("reason", reason, 2000) if reason else "",
        )

    def forget(
        self,
        memory_id: str | Sequence[str] | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
    ) -> int:
        """Delete memories with the graph edges they own; returns how many were deleted.

        Give ``memory_id`` (one id or a list) to delete those, or only scope keys to delete
        everything of that scope (e.g. ``forget(user_id="alice")``).
        """
        if memory_id is None:
            scope = self._scope(user_id, agent_id, session_id, workspace)
            return self.store.forget(scope, None)
        ids = [memory_id] if isinstance(memory_id, str) else list(memory_id)
        for i, mid in enumerate(ids):
            v.scope_id(f"memory_id[{i}]", mid, required=True)
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        return self.store.forget(scope, ids)

    def _workspace(self, workspace: str | None) -> str:
        return v.scope_id("workspace", workspace) or self.config.workspace

    # -- reading ------------------------------------------------------------------------------
    def get(self, memory_id: str, *, workspace: str | None = None) -> MemoryRecord:
        """One memory by id. Raises ``NotFoundError`` if it is not in the workspace."""
        ws = self._workspace(workspace)
        v.scope_id("memory_id", memory_id, required=True)
        found = self.store.get_memories(ws, [memory_id]).get(memory_id)
        if found is None:
            raise NotFoundError(f"memory {memory_id!r} not found in workspace {ws!r}")
        return found

    def list(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[MemoryRecord]:
        """Memories of a scope, oldest first, ``limit`` at a time from ``offset``."""
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        v.positive_int("limit", limit, maximum=10_000)
        v.non_negative_int("offset", offset)
        return self.store.list_memories(scope, limit, offset)

    def history(
        self, memory_id: str, *, workspace: str | None = None
    ) -> builtins.list[dict[str, Any]]:
        """What changed a memory and why, oldest first."""
        v.scope_id("memory_id", memory_id, required=True)
        return self.store.history(self._workspace(workspace), memory_id)

    def stats(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
    ) -> dict[str, Any]:
        """Counts of memories, edges, recalls and feedback records of a scope."""
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        out = self.store.stats(scope)
        out["embedder"] = {"name": self.embedder.name, "dim": self.embedder.dim}
        return out

    # -- recall -------------------------------------------------------------------------------
    def _candidates(self, scope: Scope, query: str) -> builtins.list[Candidate]:
        qvec = self._embed([query])[0]
        pool = self.config.candidate_pool
        cands = fuse(
            self.store.vector_search(scope, qvec, pool),
            self.store.keyword_search(scope, query, pool),
            keyword_weight=self.config.keyword_weight,
            mode=self.config.fusion,
        )
        return refine_candidates(self.store, self.config, scope, query, cands)

    def _ranked(self, scope: Scope, query: str, limit: int) -> builtins.list[ScoredMemory]:
        cands = self._candidates(scope, query)[:limit]
        records = self.store.get_memories(scope.workspace, [c.id for c in cands])
        out = []
        for cand in cands:
            record = records.get(cand.id)
            if record is None:  # forgotten between search and fetch
                continue
            comps = dict(cand.components)
            comps["final"] = round(cand.relevance, 6)
            out.append(ScoredMemory(record, cand.relevance, comps))
        return out

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int | None = None,
    ) -> builtins.list[ScoredMemory]:
        """Hybrid (vector + full-text) search within the scope, ranked, without the graph."""
        query = v.text("query", query, self.config.max_content_chars)
        scope = self._scope(user_id, agent_id, session_id, workspace)
        limit = v.positive_int("limit", limit or self.config.recall_limit, maximum=1000)
        return self._ranked(scope, query, limit)

    def recall(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int | None = None,
    ) -> RecallResult:
        """What matters for the next turn: ranked memories, graph paths, tensions, a text block.

        The recall is recorded; ``feedback`` later acts on it (once).
        """
        query = v.text("query", query, self.config.max_content_chars)
        scope = self._scope(user_id, agent_id, session_id, workspace)
        limit = v.positive_int("limit", limit or self.config.recall_limit, maximum=1000)
        qvec = self._embed([query])[0]
        ranking = _graphops.graph_rank(self.store, self.config, scope, query, qvec)
        top = ranking.entries[:limit]
        records = self.store.get_memories(scope.workspace, [e.id for e in top])
        items = [
            ScoredMemory(records[e.id], e.final, e.components, via=e.via)
            for e in top
            if e.id in records  # forgotten between search and fetch
        ]
        shown = {i.id for i in items}
        paths = _graphops.result_paths(ranking.walks, shown, self.config.graph_max_paths)
        tensions = _graphops.recall_tensions(
            self.store, self.config, scope.workspace, [i.memory for i in items]
        )
        result = RecallResult(
            recall_id=uuid.uuid4().hex,
            query=query,
            memories=items,
            paths=paths,
            tensions=tensions,
            formatted=format_memories(items, tensions, self.config.formatted_max_chars),
        )
        self.store.save_recall(
            RecallRecord(
                recall_id=result.recall_id,
                workspace=scope.workspace,
                user_id=scope.user_id,
                agent_id=scope.agent_id,
                session_id=scope.session_id,
                query=query,
                created_at=time.time(),
                memory_ids=[m.id for m in items],
                paths=[p.to_dict() for p in paths],
                tensions=[t.to_dict() for t in tensions],
            )
        )
        return result

    # -- the feedback loop and explanations ------------------------------------------------------
    def feedback(
        self,
        response: str | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        recall_id: str | None = None,
        assistant_response: str | None = None,
    ) -> dict[str, Any]:
        """Learn from the LLM's reply to the last recall (MemWire's adaptive feedback loop).

        The reply is embedded; each path of the scope's newest unconsumed recall (or of
        ``recall_id``) is aligned with it (mean cosine between the reply and the path's
        memories). Paths aligned above ``feedback_align_strengthen`` have their edges raised by
        ``feedback_strengthen_rate x alignment``, paths below ``feedback_align_weaken`` lowered
        by ``feedback_weaken_rate``, within ``[edge_weight_min, edge_weight_max]``. For each
        tension of the recall, the side the reply agreed with is strengthened and the other
        weakened. Only changed edges are written, in one transaction that also marks the recall
        consumed: a second call without a new recall changes nothing and says so.

        Args:
            response: the reply (``assistant_response`` is MemWire's name for it).
            user_id, agent_id, session_id, workspace: the scope the recall was made in.
            recall_id: act on this recall instead of the newest unconsumed one.

        Returns:
            ``{"strengthened": n, "weakened": m, "recall_id": ..., "consumed": bool, ...}``
            counting distinct edges whose weight changed; ``message`` explains a no-op.

        Raises:
            ValidationError: no reply, or both ``response`` and ``assistant_response``.
            NotFoundError: ``recall_id`` is not a recall of this scope.
        """
        if response is not None and assistant_response is not None:
            raise ValidationError(
                "assistant_response", "give response or assistant_response, not both"
            )
        name = "response" if assistant_response is None else "assistant_response"
        reply = v.text(
            name,
            response if assistant_response is None else assistant_response,
            self.config.max_content_chars,
        )
        scope = self._scope(user_id, agent_id, session_id, workspace)
        rid = v.scope_id("recall_id", recall_id)
        return _graphops.apply_feedback(self.store, self.config, scope, reply, self._embed, rid)

    def explain(
        self,
        query: str,
        memory_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """Why ``memory_id`` ranks where it does for ``query``, component by component.

        Returns the memory's rank among everything recall scored (also when it falls outside
        the top ``limit``), its vector cosine and rank, keyword (BM25) score and rank, fused
        relevance, graph support with the best path and its edge weights, every edge touching
        it, and the final score. Nothing is recorded.

        Raises:
            NotFoundError: the memory is not in the scope.
        """
        query = v.text("query", query, self.config.max_content_chars)
        v.scope_id("memory_id", memory_id, required=True)
        scope = self._scope(user_id, agent_id, session_id, workspace)
        limit = v.positive_int("limit", limit or self.config.recall_limit, maximum=1000)
        qvec = self._embed([query])[0]
        return _graphops.explain(self.store, self.config, scope, query, qvec, memory_id, limit)

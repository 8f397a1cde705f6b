"""``Memory``: the one facade. It validates, embeds, orchestrates stores and scoring; no SQL."""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

from . import _graphops
from . import _validate as v
from ._refine import refine_candidates, search_hits
from .config import Config
from .embed import CachedEmbedder, Embedder, make_embedder
from .embed.base import blend_context
from .errors import EmbedderError, NotFoundError, ValidationError
from .learn.preferences import recognise_preference, select_preferences
from .learn.scoring import LearnParams, learned_ranking, standing_answer
from .models import (
    FEEDBACK_STATES,
    KINDS,
    RATING_VERDICTS,
    REVIEW_OUTCOMES,
    ROLES,
    DecisionReview,
    FeedbackEvent,
    LoggedEvent,
    MemoryRating,
    MemoryRecord,
    PreferencePair,
    RecallResult,
    Scope,
    ScoredMemory,
)
from .recall.format import format_memories
from .recall.fusion import Candidate, fuse
from .recall.text import context_sources, embedding_text, speaker_of
from .store import NewMemory, RecallRecord, Store, open_store
from .store.base import NewFeedbackEvent

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

    def _embed_one(self, text: str) -> np.ndarray:
        vector: np.ndarray = self._embed([text])[0]
        return vector

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
        if self.config.recognise_preferences:
            prepared = self._recognise_preferences(scope, prepared)
        vectors = self._embed([embedding_text(p[1], speaker_of(p[4])) for p in prepared])
        if self.config.embed_context:
            before, before_vec = self._session_tail(scope)
            replies_to = context_sources([(speaker_of(p[4]), p[0]) for p in prepared], before)
            vectors = blend_context(vectors, replies_to, self.config.context_weight, before_vec)
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

    def _recognise_preferences(
        self, scope: Scope, prepared: builtins.list[tuple[str, str, str, float, dict[str, Any]]]
    ) -> builtins.list[tuple[str, str, str, float, dict[str, Any]]]:
        """User messages of kind ``message`` that state a standing preference become kind
        ``preference`` (see :mod:`engrammar.learn.preferences`); a pick among options is read
        with the message before it (in this call, or the session's latest memory)."""
        out = []
        previous: tuple[str, str] | None = None
        if scope.session_id is not None and any(p[0] == "user" for p in prepared):
            latest = self.store.latest_memories(scope, 1)
            previous = (latest[0].content, latest[0].role) if latest else None
        for role, text, kind, when, meta in prepared:
            if role == "user" and kind == "message":
                before, before_role = previous if previous else (None, None)
                if recognise_preference(text, before, before_role) is not None:
                    kind = "preference"
            out.append((role, text, kind, when, meta))
            previous = (text, role)
        return out

    def _session_tail(
        self, scope: Scope
    ) -> tuple[tuple[str | None, str] | None, np.ndarray | None]:
        """The (speaker, role) and vector of the session's latest memory, so that a reply
        added on its own still leans towards what it answers; (None, None) outside a session."""
        if scope.session_id is None:
            return None, None
        latest = self.store.latest_memories(scope, 1)
        if not latest:
            return None, None
        vector = self.store.vectors(scope.workspace, [latest[0].id]).get(latest[0].id)
        if vector is None:
            return None, None
        return (speaker_of(latest[0].metadata), latest[0].role), vector

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
        embedding = dedup = edges = None
        if content is not None:
            content = v.text("content", content, self.config.max_content_chars)
            current = self.get(memory_id, workspace=ws)
            scope = Scope(ws, current.user_id, current.agent_id, current.session_id)
            embedding = self._embed([embedding_text(content, speaker_of(current.metadata))])[0]
            dedup = _dedup_key(scope, current.role, content)
            # New content means new neighbours, shared names and contradictions.
            changed = NewMemory(
                id=current.id,
                workspace=ws,
                user_id=current.user_id,
                agent_id=current.agent_id,
                session_id=current.session_id,
                role=current.role,
                content=content,
                kind=current.kind,
                created_at=current.created_at,
                metadata=new_meta if new_meta is not None else current.metadata,
                dedup_key=dedup,
                embedding=embedding,
            )
            edges = _graphops.build_edges(self.store, self.config, scope, [changed], replacing=True)
        return self.store.update_memory(
            ws,
            memory_id,
            content=content,
            embedding=embedding,
            dedup_key=dedup,
            metadata=new_meta,
            status=None,
            reason=v.text("reason", reason, 2000) if reason else "",
            edges=edges,
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
        if not isinstance(memory_id, str | builtins.list | tuple):
            raise ValidationError(
                "memory_id", f"must be an id or a list of ids, got {type(memory_id).__name__}"
            )
        ids = [memory_id] if isinstance(memory_id, str) else builtins.list(memory_id)
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
    def _candidates(
        self, scope: Scope, query: str, qvec: np.ndarray | None = None
    ) -> builtins.list[Candidate]:
        # A caller holding the vector already (a reply's) searches with it as it is.
        given = qvec
        embed = self._embed_one if given is None else (lambda _text: given)
        qvec, vector_hits, keyword_hits = search_hits(self.store, self.config, scope, query, embed)
        cands = fuse(
            vector_hits,
            keyword_hits,
            keyword_weight=self.config.keyword_weight,
            mode=self.config.fusion,
        )
        return refine_candidates(self.store, self.config, scope, query, cands, qvec)

    def _ranked(self, scope: Scope, query: str, limit: int) -> builtins.list[ScoredMemory]:
        cands = self._candidates(scope, query)
        ranked = self._learned(
            scope, query, [_Ranked(c.id, c.relevance, dict(c.components)) for c in cands]
        )
        records = self.store.get_memories(scope.workspace, [r.id for r in ranked[: limit * 2]])
        out = []
        for item in ranked:
            record = records.get(item.id)
            if record is None:  # forgotten between search and fetch
                continue
            comps = dict(item.components)
            comps["final"] = round(item.score, 6)
            out.append(ScoredMemory(record, item.score, comps, via=item.via, note=item.note))
            if len(out) == limit:
                break
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
        limit = v.positive_int(
            "limit", self.config.recall_limit if limit is None else limit, maximum=1000
        )
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
        limit = v.positive_int(
            "limit", self.config.recall_limit if limit is None else limit, maximum=1000
        )
        ranking = _graphops.graph_rank(self.store, self.config, scope, query, self._embed_one)
        learned = self._learned(scope, query, _graph_items(ranking.entries))
        records = self.store.get_memories(scope.workspace, [e.id for e in learned[: limit * 2]])
        items = [
            ScoredMemory(records[e.id], e.score, e.components, via=e.via, note=e.note)
            for e in learned
            if e.id in records  # forgotten between search and fetch
        ][:limit]
        preferences = self._preferences(scope, query)
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
            formatted=format_memories(
                items, tensions, self.config.formatted_max_chars, preferences
            ),
            preferences=preferences,
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

    def _preferences(self, scope: Scope, query: str) -> builtins.list[ScoredMemory]:
        """The scope's standing preferences that bear on ``query``, best first: memories of
        kind ``preference`` whose cosine with the query reaches
        ``preferences_min_similarity``, at most ``preferences_limit`` of them (the newest
        ``_PREFERENCES_READ`` are considered)."""
        limit = self.config.preferences_limit
        if limit == 0:
            return []
        found = self.store.memories_of_kind(scope, "preference", _PREFERENCES_READ)
        if not found:
            return []
        vecs = self.store.vectors(scope.workspace, [m.id for m in found])
        qvec = self._embed_one(query)
        chosen = select_preferences(
            [(m.id, float(vecs[m.id] @ qvec)) for m in found if m.id in vecs],
            min_similarity=self.config.preferences_min_similarity,
            limit=limit,
        )
        by_id = {m.id: m for m in found}
        return [
            ScoredMemory(by_id[i], s, {"preference_similarity": round(s, 6)}, via="preference")
            for i, s in chosen
        ]

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
        weakened. The reply also feeds the learned ranking: the memories it drew on (its best
        ``feedback_reply_top`` matches in the recall's scope) and the recalled ones it left are
        kept as reply signals tied to the recall's query; they confirm or contradict the
        ratings of the same recall (see docs/learning.md). Only changed edges are written, with
        the reply signals, in one transaction that also marks the recall consumed: a second
        call without a new recall changes nothing and says so.

        Args:
            response: the reply (``assistant_response`` is MemWire's name for it).
            user_id, agent_id, session_id, workspace: the scope the recall was made in.
            recall_id: act on this recall instead of the newest unconsumed one.

        Returns:
            ``{"strengthened": n, "weakened": m, "recall_id": ..., "consumed": bool, ...}``
            counting distinct edges whose weight changed, with ``drawn_on`` / ``left`` (memory
            ids of the reply signals); ``message`` explains a no-op.

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
        return _graphops.apply_feedback(
            self.store, self.config, scope, reply, self._embed, rid, self._drawn_on
        )

    def _drawn_on(
        self, scope: Scope, reply: str, reply_vec: np.ndarray
    ) -> builtins.list[tuple[str, float]]:
        """The memories a reply drew on: its best hybrid matches in the recall's scope, as
        (id, cosine with the reply), at most ``feedback_reply_top``."""
        top = self.config.feedback_reply_top
        if top == 0:
            return []
        ids = [c.id for c in self._candidates(scope, reply, reply_vec)[:top]]
        vecs = self.store.vectors(scope.workspace, ids)
        return [(i, float(vecs[i] @ reply_vec)) for i in ids if i in vecs]

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
        limit = v.positive_int(
            "limit", self.config.recall_limit if limit is None else limit, maximum=1000
        )
        out = _graphops.explain(
            self.store, self.config, scope, query, self._embed_one, memory_id, limit
        )
        return self._explain_learned(out, scope, query, memory_id, limit)

    # -- learning from feedback records (seeds 002 and 003) --------------------------------------
    def _learned(
        self, scope: Scope, query: str, items: Sequence[_Ranked]
    ) -> builtins.list[_Ranked]:
        """Re-rank scored items by the feedback records (see :mod:`engrammar.learn.scoring`).

        A pipeline step of its own: any ranking (search's fused relevance, recall's graph
        score) goes in as ``_Ranked`` items with scores in [0, 1] and comes out re-ranked, with
        memories surfaced by matching decisions or preference pairs added and every learned
        component in ``components``.
        """
        items = list(items)
        cfg = self.config
        now = time.time()
        # Older signals weigh < 1/1000 of a fresh one: not worth reading.
        since = now - _HORIZON_HALF_LIVES * cfg.feedback_half_life_days * 86_400.0
        ids = [i.id for i in items]
        events, pairs, ratings = self.store.learning_facts(
            scope, ids, since=since, limit=cfg.feedback_records_limit
        )
        query_vec: list[np.ndarray] = []

        def context() -> np.ndarray:
            # Embedded at most once, and only when some record may use it.
            if not query_vec:
                query_vec.append(self._embed([query])[0])
            return query_vec[0]

        # Reply signals count only for a matching query (and as witnesses of ratings given
        # on their recall), so the store searches the recalls' queries before reading any.
        replies = self.store.reply_facts(
            scope,
            context,
            cfg.feedback_reply_context_min,
            since,
            min(cfg.feedback_records_limit, _MATCHING_RECALLS),
            witnesses=[(r.recall_id, r.memory_id) for r in ratings if r.recall_id is not None],
        )
        if not (events or pairs or ratings or replies):
            return items
        qvec = context()
        params = LearnParams(
            half_life_days=cfg.feedback_half_life_days,
            min_samples=cfg.feedback_min_samples,
            max_adjustment=cfg.feedback_max_adjustment,
            context_min=cfg.feedback_context_min,
            context_full=cfg.feedback_context_full,
            same_output=cfg.feedback_same_output,
            reply_weight=cfg.feedback_reply_weight,
            conflict_weight=cfg.feedback_conflict_weight,
            reply_top=max(1, cfg.feedback_reply_top),
            reply_context_min=cfg.feedback_reply_context_min,
            reply_context_full=cfg.feedback_reply_context_full,
            rating_context_min=cfg.feedback_rating_context_min,
            rating_context_full=cfg.feedback_rating_context_full,
        )
        vecs = self.store.vectors(scope.workspace, [i.id for i in items])
        kept = [(i.id, i.score) for i in items if i.id in vecs]
        base = {i.id: i for i in items}
        out = []
        texts = None
        if events or pairs:
            records = self.store.get_memories(scope.workspace, [i.id for i in items])
            texts = {memory_id: r.content for memory_id, r in records.items()}
        ranked = learned_ranking(
            kept, qvec, vecs, events, pairs, ratings, params, now, texts, replies
        )
        for position, s in enumerate(ranked, 1):
            before = base.get(s.id)
            comps = {**(before.components if before else {}), **s.components}
            comps["final"] = round(s.score, 6)
            if "rank" in comps:
                comps["rank"] = position
            via = before.via if before else "feedback"
            out.append(_Ranked(s.id, s.score, comps, s.note, via))
        return out

    def _explain_learned(
        self,
        out: dict[str, Any],
        scope: Scope,
        query: str,
        memory_id: str,
        limit: int,
    ) -> dict[str, Any]:
        """Add the feedback records' part to the graph's explanation: each learned component,
        the note, and the rank and score after learning (what recall returns)."""
        ranking = _graphops.graph_rank(
            self.store, self.config, scope, query, self._embed_one, focus=memory_id
        )
        learned = self._learned(scope, query, _graph_items(ranking.entries))
        position = next((i for i, e in enumerate(learned) if e.id == memory_id), None)
        if position is None:
            return out
        entry = learned[position]
        out["rank_before_learning"] = out["rank"]
        out["score_before_learning"] = out["score"]
        out["rank"] = position + 1
        out["in_results"] = position < limit
        out["score"] = round(entry.score, 6)
        out["components"] = {**out["components"], **entry.components, "rank": position + 1}
        out["learned"] = {
            k: v
            for k, v in entry.components.items()
            if k.startswith("learned") or k == "context_match"
        }
        out["note"] = entry.note
        out["score_to_beat"] = round(learned[position - 1].score, 6) if position else None
        out["formula"] += (
            "; then × (1 + learned), learned = bounded, decayed, shrunk sum of feedback-record "
            "signals (see learned_*); matching prior decisions rank first"
        )
        return out

    def _record_scope(self, user_id: Any, agent_id: Any, session_id: Any, workspace: Any) -> Scope:
        return self._scope(user_id, agent_id, session_id, workspace)

    def _linked_memory(
        self,
        scope: Scope,
        kind: str,
        content: str,
        vector: np.ndarray,
        when: float,
        metadata: dict[str, Any],
    ) -> NewMemory:
        role = "user" if kind == "fact" else "assistant"
        return NewMemory(
            id=uuid.uuid4().hex,
            workspace=scope.workspace,
            user_id=scope.user_id,
            agent_id=scope.agent_id,
            session_id=scope.session_id,
            role=role,
            content=content,
            kind=kind,
            created_at=when,
            metadata=metadata,
            # Kind-qualified: a decision never collapses into an ordinary message of that text.
            dedup_key=_dedup_key(scope, role, f"{kind}\x00{content}"),
            embedding=vector,
        )

    def create_feedback_event(
        self,
        input_context: str,
        ai_output: str,
        state: str,
        *,
        user_reaction: str | None = None,
        user_correction: str | None = None,
        corrected_output: str | None = None,
        reason: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        source_event_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        timestamp: Any = None,
    ) -> FeedbackEvent:
        """Record what happened to an agent's output (MCP ``memory_create_feedback_event``).

        The standing answer (``corrected_output``, else ``user_correction``, when ``corrected``;
        ``ai_output`` when ``adopted``) is stored in the same transaction as a memory of kind
        ``decision`` linked to the event: a later recall whose query resembles ``input_context``
        puts it first, marked as a prior decision with ``reason``. A rejected output is never
        stored as an answer; memories repeating it are demoted for similar contexts.

        Args:
            input_context: what the agent was asked or working on.
            ai_output: what the agent produced.
            state: ``corrected``, ``adopted`` or ``rejected``.
            user_reaction, user_correction, corrected_output, reason: as in the seed example.
            agent_id, user_id, session_id, workspace: the scope; at least one of the first three.
            source_event_id: idempotency key: the same value in the same workspace returns the
                existing event and writes nothing.
            metadata: extra JSON data kept with the event.
            timestamp: when it happened; default now.

        Raises:
            ValidationError: naming the bad field; nothing is written.
            ConflictError: ``source_event_id`` already names an event with another payload.
        """
        limit = self.config.max_content_chars
        scope = self._record_scope(user_id, agent_id, session_id, workspace)
        input_context = v.text("input_context", input_context, limit)
        ai_output = v.text("ai_output", ai_output, limit)
        state = v.choice("state", state, FEEDBACK_STATES)
        user_reaction = v.optional_text("user_reaction", user_reaction, limit)
        user_correction = v.optional_text("user_correction", user_correction, limit)
        corrected_output = v.optional_text("corrected_output", corrected_output, limit)
        reason = v.optional_text("reason", reason, limit)
        source_event_id = v.scope_id("source_event_id", source_event_id)
        meta = v.metadata("metadata", metadata)
        when = v.timestamp("timestamp", timestamp) or time.time()
        if state == "corrected" and corrected_output is None and user_correction is None:
            raise ValidationError(
                "corrected_output", "a corrected event needs corrected_output or user_correction"
            )
        corrected = corrected_output or user_correction
        payload = {
            "user_id": scope.user_id,
            "agent_id": scope.agent_id,
            "session_id": scope.session_id,
            "input_context": input_context,
            "ai_output": ai_output,
            "user_reaction": user_reaction,
            "user_correction": user_correction,
            "corrected_output": corrected_output,
            "state": state,
            "reason": reason,
            "metadata": meta,
        }
        payload_hash = hashlib.sha256(
            json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()
        ).hexdigest()
        texts = [input_context, ai_output] + ([corrected] if corrected else [])
        vectors = self._embed(texts)
        event_id = uuid.uuid4().hex
        answer = standing_answer(state)
        decision = None
        if answer is not None:
            text = corrected if answer == "corrected" else ai_output
            assert text is not None  # checked above for "corrected"
            decision = self._linked_memory(
                scope,
                "decision",
                text,
                vectors[2] if answer == "corrected" else vectors[1],
                when,
                {
                    "event_id": event_id,
                    "input_context": input_context,
                    "state": state,
                    "reason": reason,
                },
            )
        event = FeedbackEvent(
            id=event_id,
            workspace=scope.workspace,
            user_id=scope.user_id,
            agent_id=scope.agent_id,
            session_id=scope.session_id,
            input_context=input_context,
            ai_output=ai_output,
            user_reaction=user_reaction,
            user_correction=user_correction,
            corrected_output=corrected_output,
            state=state,
            reason=reason,
            source_event_id=source_event_id,
            created_at=when,
            metadata=meta,
        )
        stored, _ = self.store.create_feedback_event(
            NewFeedbackEvent(
                event=event,
                payload_hash=payload_hash,
                context_embedding=vectors[0],
                ai_output_embedding=vectors[1],
                corrected_embedding=vectors[2] if corrected else None,
                decision=decision,
                answer=answer,
            )
        )
        return stored

    def create_decision_review(
        self,
        event_id: str,
        final_decision: str,
        outcome: str = "unknown",
        confidence: float = 1.0,
        *,
        reason: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        workspace: str | None = None,
        timestamp: Any = None,
    ) -> DecisionReview:
        """Review a feedback event later (MCP ``memory_create_decision_review``).

        Args:
            event_id: the feedback event reviewed (same workspace).
            final_decision: ``corrected``, ``adopted`` or ``rejected``; when it differs from the
                event's ``state`` the review is ``reversed`` and the other output stands from
                now on (recall flips accordingly).
            outcome: ``success``, ``partial``, ``failure`` or ``unknown``; scales the standing
                decision up or down by ``confidence``.
            confidence: in [0, 1].
            reason: why, optionally.

        Raises:
            ValidationError: naming the bad field. NotFoundError: no such event.
        """
        ws = self._workspace(workspace)
        v.scope_id("event_id", event_id, required=True)
        final_decision = v.choice("final_decision", final_decision, FEEDBACK_STATES)
        outcome = v.choice("outcome", outcome, REVIEW_OUTCOMES)
        confidence = v.unit_float("confidence", confidence)
        reason = v.optional_text("reason", reason, self.config.max_content_chars)
        user = v.scope_id("user_id", user_id)
        agent = v.scope_id("agent_id", agent_id)
        when = v.timestamp("timestamp", timestamp) or time.time()
        event = self.get_feedback_event(event_id, workspace=ws)
        answer = standing_answer(final_decision)
        decision = None
        if answer is not None:
            text = (
                (event.corrected_output or event.user_correction)
                if answer == "corrected"
                else event.ai_output
            )
            if text is None:
                raise ValidationError(
                    "final_decision",
                    f"the event {event_id!r} has no corrected output to stand as 'corrected'",
                )
            scope = Scope(ws, event.user_id, event.agent_id, event.session_id)
            decision = self._linked_memory(
                scope,
                "decision",
                text,
                self._embed([text])[0],
                when,
                {
                    "event_id": event_id,
                    "input_context": event.input_context,
                    "state": final_decision,
                    "reason": reason or event.reason,
                },
            )
        review = DecisionReview(
            id=uuid.uuid4().hex,
            workspace=ws,
            user_id=user if user is not None else event.user_id,
            agent_id=agent,
            event_id=event_id,
            final_decision=final_decision,
            outcome=outcome,
            confidence=confidence,
            reversed=final_decision != event.state,
            created_at=when,
            reason=reason,
        )
        return self.store.create_decision_review(review, decision, answer)

    def create_preference_pair(
        self,
        context: str,
        accepted_output: str,
        rejected_output: str,
        weight: float = 1.0,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        timestamp: Any = None,
    ) -> PreferencePair:
        """Record that one output was preferred over another for a context
        (MCP ``memory_create_preference_pair``).

        The accepted output is stored as a memory of kind ``preference`` in the same
        transaction; for similar contexts it is surfaced and lifted, and memories repeating the
        rejected output are lowered, by ``weight`` (in (0, 10]).
        """
        limit = self.config.max_content_chars
        scope = self._record_scope(user_id, agent_id, session_id, workspace)
        context = v.text("context", context, limit)
        accepted_output = v.text("accepted_output", accepted_output, limit)
        rejected_output = v.text("rejected_output", rejected_output, limit)
        weight = v.unit_float("weight", weight, 0.0, 10.0)
        if weight == 0:
            raise ValidationError("weight", "must be > 0")
        if accepted_output.strip() == rejected_output.strip():
            raise ValidationError("rejected_output", "must differ from accepted_output")
        when = v.timestamp("timestamp", timestamp) or time.time()
        vectors = self._embed([context, accepted_output, rejected_output])
        pair = PreferencePair(
            id=uuid.uuid4().hex,
            workspace=scope.workspace,
            user_id=scope.user_id,
            agent_id=scope.agent_id,
            session_id=scope.session_id,
            context=context,
            accepted_output=accepted_output,
            rejected_output=rejected_output,
            weight=weight,
            created_at=when,
        )
        memory = self._linked_memory(
            scope,
            "preference",
            accepted_output,
            vectors[1],
            when,
            {"pair_id": pair.id, "context": context},
        )
        return self.store.create_preference_pair(pair, vectors[0], vectors[1], vectors[2], memory)

    def log_event(
        self,
        kind: str,
        payload: dict[str, Any] | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        timestamp: Any = None,
    ) -> LoggedEvent:
        """Record any other event, e.g. a checkpoint (MCP ``memory_log_event``)."""
        scope = self._record_scope(user_id, agent_id, session_id, workspace)
        event = LoggedEvent(
            id=uuid.uuid4().hex,
            workspace=scope.workspace,
            user_id=scope.user_id,
            agent_id=scope.agent_id,
            session_id=scope.session_id,
            kind=str(v.scope_id("kind", kind, required=True)),
            payload=v.metadata("payload", payload),
            created_at=v.timestamp("timestamp", timestamp) or time.time(),
        )
        return self.store.log_event(event)

    def rate_memory(
        self,
        memory_id: str,
        verdict: str,
        correction: str | None = None,
        *,
        recall_id: str | None = None,
        context: str | None = None,
        weight: float = 1.0,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        timestamp: Any = None,
    ) -> MemoryRating:
        """Say whether a memory helped (MCP ``memory_feedback``).

        Args:
            memory_id: the memory rated.
            verdict: ``accepted``, ``rejected`` or ``corrected``.
            correction: the right content; stored as a memory of kind ``fact`` (same scope as
                the rated memory) in the same transaction.
            recall_id: the recall the memory came from; its query becomes the ``context``.
            context: the query the rating applies to. With a context the rating counts for
                similar queries only; without one it counts wherever the memory is recalled.
            weight: how much this rating counts, in (0, 10] (implicit signals pass their
                strength).
            user_id, agent_id, session_id: who rated; default the rated memory's scope.

        Raises:
            ValidationError: naming the bad field. NotFoundError: no such memory or recall.
        """
        ws = self._workspace(workspace)
        target = self.get(v.scope_id("memory_id", memory_id, required=True) or "", workspace=ws)
        verdict = v.choice("verdict", verdict, RATING_VERDICTS)
        correction = v.optional_text("correction", correction, self.config.max_content_chars)
        weight = v.unit_float("weight", weight, 0.0, 10.0)
        if weight == 0:
            raise ValidationError("weight", "must be > 0")
        context = v.optional_text("context", context, self.config.max_content_chars)
        v.scope_id("recall_id", recall_id)
        if recall_id is not None:
            if context is not None:
                raise ValidationError("context", "give recall_id or context, not both")
            recall = self.store.get_recall(Scope(ws), recall_id)
            if recall is None:
                raise NotFoundError(f"recall {recall_id!r} not found in workspace {ws!r}")
            context = recall.query
        user = v.scope_id("user_id", user_id)
        agent = v.scope_id("agent_id", agent_id)
        session = v.scope_id("session_id", session_id)
        when = v.timestamp("timestamp", timestamp) or time.time()
        texts = [t for t in (context, correction) if t is not None]
        vectors = self._embed(texts) if texts else None
        context_vec = vectors[0] if vectors is not None and context is not None else None
        correction_memory = None
        if correction is not None:
            assert vectors is not None
            owner = Scope(ws, target.user_id, target.agent_id, target.session_id)
            correction_memory = self._linked_memory(
                owner, "fact", correction, vectors[-1], when, {"corrects": target.id}
            )
        rating = MemoryRating(
            id=uuid.uuid4().hex,
            workspace=ws,
            user_id=user if user is not None else target.user_id,
            agent_id=agent if agent is not None else target.agent_id,
            session_id=session if session is not None else target.session_id,
            memory_id=target.id,
            verdict=verdict,
            correction=correction,
            weight=weight,
            created_at=when,
            recall_id=recall_id,
            context=context,
        )
        return self.store.rate_memory(rating, context_vec, correction_memory)

    def _get_record(self, kind: str, record_id: str, workspace: str | None) -> Any:
        v.scope_id(f"{kind}_id", record_id, required=True)
        return self.store.get_feedback_record(kind, self._workspace(workspace), record_id)

    def _list_records(
        self,
        kind: str,
        user_id: Any,
        agent_id: Any,
        session_id: Any,
        workspace: Any,
        limit: int,
        offset: int,
    ) -> builtins.list[Any]:
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        v.positive_int("limit", limit, maximum=10_000)
        v.non_negative_int("offset", offset)
        return self.store.list_feedback_records(kind, scope, limit, offset)

    def get_feedback_event(self, event_id: str, *, workspace: str | None = None) -> FeedbackEvent:
        """One feedback event by id (``NotFoundError`` if not in the workspace)."""
        event: FeedbackEvent = self._get_record("feedback_event", event_id, workspace)
        return event

    def list_feedback_events(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[FeedbackEvent]:
        """Feedback events of a scope, oldest first."""
        return self._list_records(
            "feedback_event", user_id, agent_id, session_id, workspace, limit, offset
        )

    def get_decision_review(
        self, review_id: str, *, workspace: str | None = None
    ) -> DecisionReview:
        """One decision review by id."""
        review: DecisionReview = self._get_record("decision_review", review_id, workspace)
        return review

    def list_decision_reviews(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        workspace: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[DecisionReview]:
        """Decision reviews of a scope, oldest first."""
        return self._list_records(
            "decision_review", user_id, agent_id, None, workspace, limit, offset
        )

    def get_preference_pair(self, pair_id: str, *, workspace: str | None = None) -> PreferencePair:
        """One preference pair by id."""
        pair: PreferencePair = self._get_record("preference_pair", pair_id, workspace)
        return pair

    def list_preference_pairs(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[PreferencePair]:
        """Preference pairs of a scope, oldest first."""
        return self._list_records(
            "preference_pair", user_id, agent_id, session_id, workspace, limit, offset
        )

    def get_logged_event(self, event_id: str, *, workspace: str | None = None) -> LoggedEvent:
        """One logged event by id."""
        event: LoggedEvent = self._get_record("logged_event", event_id, workspace)
        return event

    def list_logged_events(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[LoggedEvent]:
        """Logged events of a scope, oldest first."""
        return self._list_records(
            "logged_event", user_id, agent_id, session_id, workspace, limit, offset
        )

    def get_memory_rating(self, rating_id: str, *, workspace: str | None = None) -> MemoryRating:
        """One memory rating by id."""
        rating: MemoryRating = self._get_record("memory_rating", rating_id, workspace)
        return rating

    def list_memory_ratings(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[MemoryRating]:
        """Memory ratings of a scope, oldest first."""
        return self._list_records(
            "memory_rating", user_id, agent_id, session_id, workspace, limit, offset
        )

    # -- export / import ----------------------------------------------------------------------
    def export(
        self,
        destination: str | os.PathLike[str] | IO[str],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Write the memories of a scope, the edges between them and the scope's recall and
        feedback records (events, reviews, pairs, logged events, ratings) as JSON Lines.

        Args:
            destination: a file path or an open text file.
            user_id, agent_id, session_id, workspace: the scope (default: the whole workspace).
            progress: called as ``progress(done, total)`` while writing.

        Returns:
            How many memories were written. Vectors are not exported (see ``import_``).
        """
        from ._transfer import export_jsonl

        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        return export_jsonl(self, destination, scope, progress)

    def import_(
        self,
        source: str | os.PathLike[str] | IO[str],
        *,
        workspace: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, int]:
        """Read an export (JSON Lines) into this store, embedding each memory with this store's
        model; all of it lands in one transaction or none of it does.

        Args:
            source: a file path or an open text file.
            workspace: put every memory into this workspace instead of the one it came from.
            progress: called as ``progress(done, total)`` while embedding.

        Returns:
            ``{"memories": created, "duplicates": already_present, "edges": edges,
            "records": records_read}`` (records already present are skipped).

        Raises:
            ValidationError: naming the line and field of the first bad record; nothing is
                written.
        """
        from ._transfer import import_jsonl

        return import_jsonl(self, source, workspace, progress)


@dataclass
class _Ranked:
    id: str
    score: float
    components: dict[str, float]
    note: str | None = None
    via: str = "search"


_HORIZON_HALF_LIVES = 10
# The newest recalls whose replies count for a query: an agent asking the same question again
# and again would otherwise make every recall read more signals (up to feedback_records_limit
# recalls, ~10 signals each); 200 matching recalls already saturate the shrinkage
# (N / (N + feedback_min_samples)).
_MATCHING_RECALLS = 200


def _graph_items(entries: Sequence[Any]) -> list[_Ranked]:
    """The graph ranking's entries as items for the learned step."""
    return [_Ranked(e.id, e.final, dict(e.components), via=e.via) for e in entries]


# Recall weighs at most this many of a scope's newest standing preferences for its slot.
_PREFERENCES_READ = 500

"""Drop-in replacement for MemWire 0.1.x: change only the import line.

::

    from engrammar.compat.memwire import MemWire, MemWireConfig   # was: from memwire import ...

    memory = MemWire(config=MemWireConfig(qdrant_path="./memwire_data"))
    records = memory.add(user_id="alice", messages=[{"role": "user", "content": "I prefer tea."}])
    result = memory.recall("What do I drink?", user_id="alice")
    result.formatted, result.supporting, result.conflicting, result.knowledge
    memory.feedback(assistant_response=reply, user_id="alice")   # {"strengthened": n, "weakened": m}

Every public name of MemWire 0.1.x is here with its parameters, defaults and result fields:
:class:`MemWire`, :class:`MemWireConfig`, :class:`MemoryRecord`, :class:`RecallPath`,
:class:`RecallResult`, :class:`KnowledgeChunk`, :class:`GraphNode`, :class:`GraphEdge`,
:class:`TokenEmbedding`. Underneath, everything is engrammar's own machinery: memories, graph
edges, feedback and knowledge bases in one engrammar store (SQLite under ``qdrant_path``, or the
``database_url`` store), with MemWire's tenancy mapped onto engrammar workspaces
(:func:`workspace_of`). MemWire's input leniency (empty content skipped, a missing role taken
as ``user``, an empty message list or query giving an empty answer) lives here only; engrammar's
own API keeps refusing such input. What differs from MemWire on purpose, and why, is in
``docs/memwire.md``.
"""

from __future__ import annotations

import shutil
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from ..embed import Embedder
from ..engine.knowledge import MIN_CHUNK_CHARS, split_document
from ..errors import NotFoundError, ValidationError
from ..memory import Memory
from ..models import KnowledgeChunk as EngrammarChunk
from ..models import MemoryRecord as EngrammarRecord
from .memwire_types import (
    APPLIED,
    IGNORED,
    LOGGED_CATEGORY,
    MAPPED,
    GraphEdge,
    GraphNode,
    KnowledgeChunk,
    MemoryRecord,
    MemWireConfig,
    MemWireRecallResult,
    RecallPath,
    RecallResult,
    TokenEmbedding,
    clip_score,
    format_recall,
    read_document,
    workspace_of,
)

__all__ = [
    "APPLIED",
    "IGNORED",
    "MAPPED",
    "GraphEdge",
    "GraphNode",
    "KnowledgeChunk",
    "MemWire",
    "MemWireConfig",
    "MemWireRecallResult",
    "MemoryRecord",
    "RecallPath",
    "RecallResult",
    "TokenEmbedding",
    "workspace_of",
]

__version__ = "0.1.2"

#: Scopes (workspace, user) whose categories and centroids one :class:`MemWire` keeps in
#: memory, and knowledge bases whose workspace it remembers; past it the least recently used
#: are dropped (categories are read again from the store, centroids computed again).
SCOPE_CACHE_SIZE = 1024

V = TypeVar("V")


class _Recent(Generic[V]):
    """At most ``size`` entries, the least recently used dropped first (thread-safe: the REST
    adapter calls one facade from several worker threads)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item

    def put(self, key: Hashable, item: V) -> None:
        with self._lock:
            self._items[key] = item
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def pop(self, key: Hashable) -> V | None:
        with self._lock:
            return self._items.pop(key, None)


# -- the client ----------------------------------------------------------------------------------
class MemWire:
    """MemWire's client API on top of :class:`~engrammar.Memory`.

    Args:
        config: a :class:`MemWireConfig` (MemWire's only constructor argument).
        embedder: an embedder to use instead of the one the config names (tests).
        user_id: the user of calls that name none (MemWire requires ``user_id`` on every call;
            this default only serves code written for the earlier engrammar adapter).
        memory: an open :class:`~engrammar.Memory` to serve instead of opening the config's
            store (the REST adapter passes the server's).
    """

    def __init__(
        self,
        config: MemWireConfig | None = None,
        *,
        embedder: Embedder | None = None,
        user_id: str = "default",
        memory: Memory | None = None,
    ) -> None:
        if config is not None and not isinstance(config, MemWireConfig):
            raise ValidationError("config", f"must be a MemWireConfig, got {type(config).__name__}")
        self.config = config or MemWireConfig()
        self.user_id = user_id
        self._temp: str | None = None
        self._owns_memory = memory is None
        if memory is None:
            engrammar_config, self._temp = self.config.to_config()
            if embedder is None and self.config.embedding_provider == "openai-compatible":
                from ..embed.providers import OpenAICompatibleEmbedder

                embedder = OpenAICompatibleEmbedder(
                    self.config.embedding_model,
                    base_url=self.config.embedding_api_url,
                    api_key=self.config.embedding_api_key,
                )
            memory = Memory(engrammar_config, embedder=embedder)
        self.memory = memory
        # The default categories, and their centroids once computed, are shared by every
        # scope; only a scope's own categories (add_category) take an entry per scope.
        self._defaults = {
            name: list(texts) if isinstance(texts, list | tuple) else [str(texts)]
            for name, texts in self.config.default_anchors.items()
        }
        self._default_centroids: dict[str, np.ndarray] | None = None
        self._own_anchors: _Recent[dict[str, list[str]]] = _Recent(SCOPE_CACHE_SIZE)
        self._centroids: _Recent[dict[str, np.ndarray]] = _Recent(SCOPE_CACHE_SIZE)
        self._kb_workspaces: _Recent[str] = _Recent(SCOPE_CACHE_SIZE)

    # -- helpers ----------------------------------------------------------------------------------
    def _ws(self, workspace_id: str | None, app_id: str | None) -> str:
        return workspace_of(self.config.org_id, workspace_id, app_id)

    def _user(self, user_id: str | None) -> str:
        return user_id if user_id is not None else self.user_id

    def _record(
        self,
        m: EngrammarRecord,
        vector: np.ndarray | None,
        workspace_id: str | None,
        app_id: str | None,
    ) -> MemoryRecord:
        category = m.metadata.get("category")
        return MemoryRecord(
            memory_id=m.id,
            user_id=m.user_id or "",
            content=m.content,
            role=m.role,
            embedding=vector if vector is not None else np.zeros(0, dtype=np.float32),
            category=category if isinstance(category, str) else None,
            timestamp=m.created_at,
            node_ids=[m.id],
            agent_id=m.agent_id,
            org_id=self.config.org_id,
            workspace_id=workspace_id,
            app_id=app_id,
        )

    def _records(
        self, ws: str, ids: Sequence[str], workspace_id: str | None, app_id: str | None
    ) -> dict[str, MemoryRecord]:
        found = self.memory.store.get_memories(ws, list(ids))
        vectors = self.memory.store.vectors(ws, list(found))
        return {
            i: self._record(found[i], vectors.get(i), workspace_id, app_id)
            for i in ids
            if i in found
        }

    def _chunk(
        self, c: EngrammarChunk, workspace_id: str | None, app_id: str | None
    ) -> KnowledgeChunk:
        return KnowledgeChunk(
            chunk_id=c.id,
            kb_id=c.kb_id,
            user_id=c.user_id or "",
            agent_id=c.agent_id,
            content=c.content,
            metadata=c.metadata,
            score=clip_score(c.score),
            workspace_id=workspace_id,
            app_id=app_id,
        )

    # -- categories -------------------------------------------------------------------------------
    def _own_categories(self, ws: str, user_id: str) -> dict[str, list[str]]:
        """The examples the scope added with :meth:`add_category` (kept as logged events)."""
        own = self._own_anchors.get((ws, user_id))
        if own is None:
            own = {}
            for event in self.memory.list_logged_events(
                user_id=user_id, workspace=ws, limit=10_000
            ):
                if event.kind == LOGGED_CATEGORY:
                    own.setdefault(str(event.payload["name"]), []).append(
                        str(event.payload["text"])
                    )
            self._own_anchors.put((ws, user_id), own)
        return own

    def _scope_anchors(self, ws: str, user_id: str) -> dict[str, list[str]]:
        anchors = {name: list(texts) for name, texts in self._defaults.items()}
        for name, texts in self._own_categories(ws, user_id).items():
            anchors.setdefault(name, []).extend(texts)
        return anchors

    def _scope_centroids(self, ws: str, user_id: str) -> dict[str, np.ndarray]:
        own = bool(self._own_categories(ws, user_id))
        centroids = self._centroids.get((ws, user_id)) if own else self._default_centroids
        if centroids is None:
            centroids = {
                name: self.memory.embedder.embed(list(examples)).mean(axis=0)
                for name, examples in self._scope_anchors(ws, user_id).items()
                if examples
            }
            if own:
                self._centroids.put((ws, user_id), centroids)
            else:
                self._default_centroids = centroids
        return centroids

    def _classify(self, ws: str, user_id: str, texts: Sequence[str]) -> list[str]:
        centroids = self._scope_centroids(ws, user_id) if texts else {}
        if not centroids:
            return ["unknown"] * len(texts)
        names = list(centroids)
        matrix = np.stack([centroids[n] for n in names])
        matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        vectors = self.memory.embedder.embed(list(texts))
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        sims = vectors @ matrix.T
        out = []
        for row in sims:
            best = int(np.argmax(row))
            out.append(
                names[best] if row[best] >= self.config.classification_threshold else "unknown"
            )
        return out

    def add_category(
        self,
        name: str,
        text: str,
        *,
        user_id: str | None = None,
        app_id: str | None = None,
        workspace_id: str | None = None,
    ) -> None:
        """Add an example text to category ``name`` (a new category if it has none yet).

        Memories added later in this scope are classified against it. The example is kept as a
        logged event of the scope, so it survives a restart.
        """
        ws, user = self._ws(workspace_id, app_id), self._user(user_id)
        self.memory.log_event(
            LOGGED_CATEGORY, {"name": name, "text": text}, user_id=user, workspace=ws
        )
        own = self._own_anchors.get((ws, user))
        if own is not None:
            own.setdefault(name, []).append(text)
        self._centroids.pop((ws, user))

    # -- memories ---------------------------------------------------------------------------------
    def add(
        self,
        messages: Sequence[dict[str, Any] | str] | str | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        app_id: str | None = None,
        workspace_id: str | None = None,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[MemoryRecord]:
        """Store messages, one memory each, classified into a category; returns the records.

        As in MemWire: messages with empty or missing content are skipped, a missing role is
        ``user``, and an exact repeat is stored again as a memory of its own.
        """
        if messages is None:
            return []
        if isinstance(messages, str):
            messages = [messages]
        kept: list[dict[str, Any]] = []
        for msg in messages:
            if isinstance(msg, str):
                msg = {"role": "user", "content": msg}
            if not isinstance(msg, dict):
                raise ValidationError("messages", f"must hold dicts, got {type(msg).__name__}")
            content = msg.get("content")
            if content is None or (isinstance(content, str) and not content.strip()):
                continue
            kept.append({**msg, "role": msg.get("role") or "user"})
        if not kept:
            return []
        ws, user = self._ws(workspace_id, app_id), self._user(user_id)
        texts = [m["content"] for m in kept if isinstance(m["content"], str)]
        categories = iter(self._classify(ws, user, texts) if len(texts) == len(kept) else [])
        for m in kept:
            meta = dict(m.get("metadata") or {})
            meta.setdefault("category", next(categories, "unknown"))
            m["metadata"] = meta
        ids = self.memory.add(
            kept,
            user_id=user,
            agent_id=agent_id,
            session_id=session_id,
            workspace=ws,
            metadata=metadata,
            dedup=False,
        )
        found = self._records(ws, ids.stored, workspace_id, app_id)
        return [found[i] for i in ids.stored if i in found]

    def recall(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        app_id: str | None = None,
        workspace_id: str | None = None,
        session_id: str | None = None,
        limit: int | None = None,
    ) -> RecallResult:
        """Recall the memory paths, conflicts and knowledge relevant to ``query``.

        Memories whose cosine similarity to the query is below ``recall_min_relevance`` are
        left out (an unrelated query gives an empty result); scores are in [0, 1].
        """
        if not isinstance(query, str) or not query.strip():
            return RecallResult(query=query if isinstance(query, str) else "")
        ws = self._ws(workspace_id, app_id)
        result = self.memory.recall(
            query,
            user_id=self._user(user_id),
            agent_id=agent_id,
            session_id=session_id,
            workspace=ws,
            limit=limit,
        )
        floor = self.config.recall_min_relevance
        cosine = {m.id: clip_score(m.components.get("vector", 0.0)) for m in result.memories}
        relevant = {i for i, c in cosine.items() if c >= floor}
        in_paths = {n for p in result.paths for n in p.nodes}
        in_tensions = {x for t in result.tensions for x in (t.a, t.b)}
        records = self._records(
            ws, list(dict.fromkeys([*cosine, *in_paths, *in_tensions])), workspace_id, app_id
        )
        conflicted = {x for t in result.tensions for x in (t.a, t.b) if relevant & {t.a, t.b}}

        def node(memory_id: str) -> GraphNode:
            r = records[memory_id]
            return GraphNode(
                memory_id, r.content, r.embedding, [memory_id], r.user_id, app_id, workspace_id
            )

        supporting: list[RecallPath] = []
        covered: set[str] = set()
        for p in result.paths:
            nodes = p.nodes
            if not relevant & set(nodes) or conflicted & set(nodes):
                continue
            if any(n not in records for n in nodes):
                continue
            edges = [
                GraphEdge(a, b, w, 0.0, records[a].user_id)
                for a, b, w in zip(nodes, nodes[1:], p.weights, strict=False)
            ]
            score = clip_score(max(cosine.get(n, 0.0) for n in nodes) * (0.5 + 0.5 * p.score))
            supporting.append(
                RecallPath([node(n) for n in nodes], edges, score, [records[n] for n in nodes])
            )
            covered.update(nodes)
        for m in result.memories:
            if m.id in relevant and m.id not in covered and m.id not in conflicted:
                supporting.append(RecallPath([node(m.id)], [], cosine[m.id], [records[m.id]]))
        supporting.sort(key=lambda p: -p.score)
        supporting = supporting[: self.config.recall_max_paths]
        conflicting = [
            RecallPath(
                [node(t.a), node(t.b)],
                [GraphEdge(t.a, t.b, clip_score(t.confidence), 0.0, records[t.a].user_id)],
                clip_score(t.confidence),
                [records[t.a], records[t.b]],
            )
            for t in result.tensions
            if t.a in records and t.b in records and relevant & {t.a, t.b}
        ]
        out = RecallResult(
            query=query,
            supporting=supporting,
            conflicting=conflicting,
            knowledge=[self._chunk(c, workspace_id, app_id) for c in result.knowledge],
            engrammar=result,
        )
        out.formatted = format_recall(out)
        return out

    def feedback(
        self,
        assistant_response: str | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        app_id: str | None = None,
        workspace_id: str | None = None,
        session_id: str | None = None,
        response: str | None = None,
        recall_id: str | None = None,
    ) -> dict[str, int]:
        """Learn from the LLM's reply to the scope's last recall.

        Returns ``{"strengthened": n, "weakened": m}`` (edges changed); both 0 when there is no
        recall to act on or the reply is empty. ``response=`` is accepted as an alias.
        """
        reply = assistant_response if assistant_response is not None else response
        if not isinstance(reply, str) or not reply.strip():
            return {"strengthened": 0, "weakened": 0}
        out = self.memory.feedback(
            reply,
            user_id=self._user(user_id),
            agent_id=agent_id,
            session_id=session_id,
            workspace=self._ws(workspace_id, app_id),
            recall_id=recall_id,
        )
        return {"strengthened": int(out["strengthened"]), "weakened": int(out["weakened"])}

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        app_id: str | None = None,
        workspace_id: str | None = None,
        category: str | None = None,
        top_k: int = 10,
        session_id: str | None = None,
    ) -> list[tuple[MemoryRecord, float]]:
        """Ranked ``(memory, score)`` pairs, scores in [0, 1] (cosine similarity to the
        query); ``category`` keeps only memories of that category."""
        if not isinstance(query, str) or not query.strip():
            return []
        ws = self._ws(workspace_id, app_id)
        pool = top_k if category is None else min(1000, max(top_k * 10, 100))
        hits = self.memory.search(
            query,
            user_id=self._user(user_id),
            agent_id=agent_id,
            session_id=session_id,
            workspace=ws,
            limit=pool,
        )
        if category is not None:
            hits = [h for h in hits if h.memory.metadata.get("category") == category]
        hits = hits[:top_k]
        vectors = self.memory.store.vectors(ws, [h.id for h in hits])
        return [
            (
                self._record(h.memory, vectors.get(h.id), workspace_id, app_id),
                clip_score(h.components.get("vector", 0.0)),
            )
            for h in hits
        ]

    # -- knowledge bases --------------------------------------------------------------------------
    def add_knowledge(
        self,
        name: str,
        chunks: Sequence[dict[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        app_id: str | None = None,
        workspace_id: str | None = None,
    ) -> str:
        """Store passages (``{"content", "metadata"}``; empty ones skipped) as a knowledge
        base; returns its ``kb_id``."""
        ws = self._ws(workspace_id, app_id)
        passages = [
            c
            for c in chunks
            if isinstance(c, dict) and isinstance(c.get("content"), str) and c["content"].strip()
        ]
        kb = self.memory.add_knowledge(
            name,
            [{"content": c["content"], "metadata": c.get("metadata") or {}} for c in passages],
            user_id=self._user(user_id),
            agent_id=agent_id,
            workspace=ws,
        )
        self._kb_workspaces.put(kb.id, ws)
        return kb.id

    def ingest(
        self,
        file_path: str | Path,
        name: str | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        app_id: str | None = None,
        workspace_id: str | None = None,
        chunk_max_characters: int | None = None,
        chunk_overlap: int | None = None,
    ) -> str:
        """Read a text, Markdown, CSV, JSON or HTML file, split it into passages and store them
        as a knowledge base (named after the file unless ``name`` is given); returns its
        ``kb_id``. Each passage's metadata names the ``source`` file."""
        path = Path(file_path)
        text = read_document(path)
        size = chunk_max_characters or self.config.ingest_chunk_max_characters
        if size < MIN_CHUNK_CHARS:
            raise ValidationError(
                "chunk_max_characters", f"must be >= {MIN_CHUNK_CHARS}, got {size}"
            )
        overlap = self.config.ingest_chunk_overlap if chunk_overlap is None else chunk_overlap
        ws = self._ws(workspace_id, app_id)
        parts = split_document(text, size, overlap)
        kb = self.memory.add_knowledge(
            name or path.name,
            [{"content": p, "metadata": {"source": path.name}} for p in parts],
            user_id=self._user(user_id),
            agent_id=agent_id,
            workspace=ws,
            metadata={"source": str(path)},
        )
        self._kb_workspaces.put(kb.id, ws)
        return kb.id

    def search_knowledge(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        app_id: str | None = None,
        workspace_id: str | None = None,
        top_k: int = 5,
    ) -> list[KnowledgeChunk]:
        """The scope's knowledge chunks most similar to ``query`` (scores in [0, 1])."""
        if not isinstance(query, str) or not query.strip():
            return []
        found = self.memory.search_knowledge(
            query,
            user_id=self._user(user_id),
            agent_id=agent_id,
            workspace=self._ws(workspace_id, app_id),
            limit=top_k,
        )
        return [self._chunk(c, workspace_id, app_id) for c in found]

    def delete_knowledge(
        self,
        kb_id: str,
        *,
        user_id: str | None = None,
        app_id: str | None = None,
        workspace_id: str | None = None,
    ) -> None:
        """Delete a knowledge base and its chunks (one of this organisation's; a missing one
        is ignored, as in MemWire)."""
        ws = self._kb_workspaces.pop(kb_id) or self._ws(workspace_id, app_id)
        try:
            self.memory.delete_knowledge(kb_id, user_id=user_id, workspace=ws)
        except NotFoundError:
            return

    # -- stats and lifecycle ----------------------------------------------------------------------
    def get_stats(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        app_id: str | None = None,
        workspace_id: str | None = None,
    ) -> dict[str, Any]:
        """``{"memories", "nodes", "edges", "anchors", "knowledge_bases"}`` of the scope.

        A node is a memory here, so ``nodes`` equals ``memories``.
        """
        ws, user = self._ws(workspace_id, app_id), self._user(user_id)
        stats = self.memory.stats(user_id=user, agent_id=agent_id, workspace=ws)
        bases = self.memory.list_knowledge(user_id=user, agent_id=agent_id, workspace=ws)
        return {
            "memories": stats["memories"],
            "nodes": stats["memories"],
            "edges": stats["edges"],
            "anchors": list(self._scope_anchors(ws, user)),
            "knowledge_bases": len(bases),
        }

    def close(self) -> None:
        """Close the store (and remove the temporary folder of ``qdrant_path=':memory:'``).
        Writes are synchronous, so there is nothing left to flush."""
        if self._owns_memory:
            self.memory.close()
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
            self._temp = None

    def __enter__(self) -> MemWire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

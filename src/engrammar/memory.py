"""``Memory``: the one facade. It checks every argument (``engine.validate``), hands the work to
the engine (``engine.ingest``, ``recall``, ``feedback``, ``records``, ``knowledge``,
``transfer``, ``inspect``) and returns the records of :mod:`engrammar.models`; plain reads go
straight to the store.

One class, in sections: writing, reading, recall, the feedback loop, export / import,
knowledge bases (named documents split into embedded chunks that every recall of the scope
searches too), feedback records (events and their reviews, preference pairs, ratings, logged
events, each written whole) and the web inspector's reads."""

from __future__ import annotations

import builtins
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, cast

from .config import Config, RankingProfile
from .embed import CachedEmbedder, Embedder, make_embedder
from .engine import Engine, feedback, ingest, knowledge, records, transfer
from .engine import ranking as core
from .engine import validate as v
from .engine.filters import parse_filters
from .engine.inspect import Inspector
from .engine.records import feedback_source
from .errors import EmbedderError, NotFoundError, StoreError, ValidationError
from .models import (
    FEEDBACK_STATES,
    KEY_SEPARATOR,
    KINDS,
    RATING_VERDICTS,
    REVIEW_OUTCOMES,
    AddResult,
    DecisionReview,
    EmbedderFacts,
    Explanation,
    FeedbackEvent,
    FeedbackResult,
    HistoryEntry,
    KnowledgeBase,
    KnowledgeChunk,
    LoggedEvent,
    MemoryLearning,
    MemoryList,
    MemoryRating,
    MemoryRecord,
    Neighbourhood,
    PreferencePair,
    RankShifts,
    RecallFilter,
    RecallResult,
    Scope,
    ScopeList,
    ScoredMemory,
    Skipped,
    Stats,
    Tensions,
    Timeline,
    UndoResult,
)
from .store import Backend, EdgeBounds, open_store

__all__ = ["Memory"]


class Closed:
    """What a closed ``Memory`` holds instead of its store and engine: any use of either says
    that the ``Memory`` is closed, in place of whatever the closed connection would raise."""

    def __getattr__(self, name: str) -> Any:
        raise StoreError("Memory is closed: open a new Memory to use the store again")


class Memory:
    """Long-term memory for agents that learns from feedback.

    Args:
        config: settings; ``Config()`` (embedded SQLite under ``./engrammar_data``) by default.
        embedder: an :class:`~engrammar.embed.Embedder` to use instead of ``config.embedder``.
        store: a :class:`~engrammar.store.Backend` to use instead of opening ``config.store``.

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
        store: Backend | None = None,
    ) -> None:
        self.config = config or Config()
        inner = embedder or make_embedder(self.config)
        if not isinstance(inner, Embedder):
            raise EmbedderError(f"{inner!r} does not implement the Embedder protocol")
        self.embedder = CachedEmbedder(inner, self.config.embed_cache_size)
        self.store: Backend = store or open_store(self.config)
        self.store.check_embedder(self.embedder.name, self.embedder.dim)
        self._engine = Engine(self.store, self.embedder, self.config)

    # -- the argument helpers every method starts with ----------------------------------------
    def _scope(
        self, user_id: Any, agent_id: Any, session_id: Any, workspace: Any, *, need_one: bool = True
    ) -> Scope:
        return v.scope(
            user_id, agent_id, session_id, workspace, self.config.workspace, need_one=need_one
        )

    def _limit(self, limit: Any) -> int:
        return v.positive_int(
            "limit", self.config.recall_limit if limit is None else limit, maximum=1000
        )

    def _workspace(self, workspace: str | None) -> str:
        return v.scope_id("workspace", workspace) or self.config.workspace

    def get(self, memory_id: str, *, workspace: str | None = None) -> MemoryRecord:
        """One memory by id. Raises ``NotFoundError`` if it is not in the workspace."""
        ws = self._workspace(workspace)
        v.scope_id("memory_id", memory_id, required=True)
        found = self.store.get_memories(ws, [memory_id]).get(memory_id)
        if found is None:
            raise NotFoundError(f"memory {memory_id!r} not found in workspace {ws!r}")
        return found

    # -- lifecycle ----------------------------------------------------------------------------
    def close(self) -> None:
        """Close the store's connections. A later call on this ``Memory`` raises
        ``StoreError("Memory is closed: ...")``; closing twice is harmless."""
        if isinstance(self.store, Closed):
            return
        store, closed = self.store, Closed()
        self.store = cast(Backend, closed)
        self._engine = cast(Engine, closed)
        store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------------------
    def add(
        self,
        messages: str | Sequence[Any] | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        metadata: dict[str, Any] | None = None,
        timestamp: Any = None,
        kind: str = "message",
        content: str | None = None,
        dedup: bool = True,
    ) -> AddResult:
        """Store what was said: one memory per message, in one transaction.

        Args:
            messages: a list of messages, or one plain string (a user message); ``content=``
                is an alias for a string. A message is a plain string (a user message), a
                ``{"role", "content"}`` dict (optional keys: ``metadata``, ``timestamp``,
                ``kind``, ``name`` = the speaker), or a message as the ``openai`` and
                ``anthropic`` SDKs write it, as a dict or as their objects: ``content`` a
                string, a list of parts / content blocks, or null; assistant ``tool_calls``,
                ``tool`` messages with ``tool_call_id``, ``tool_use`` / ``tool_result``
                blocks. Text parts are joined; tool calls and results are stored as readable
                text of kind ``event``; other parts (images, files, ...) are noted in the
                metadata (``non_text_parts``).
            user_id, agent_id, session_id, workspace: the scope; at least one of the first three.
            metadata: merged into every message's metadata.
            timestamp: when it was said (datetime, ISO-8601 or epoch seconds); default now.
            kind: ``message``, ``fact``, ``decision``, ``preference`` or ``event``.
            dedup: ``False`` stores every message as a memory of its own, also an exact
                repeat (what MemWire does); by default a repeat is stored once.

        Returns:
            A list with one entry per message, in order: the stored id (an exact duplicate
            within the scope returns the id already stored), or None for a message with
            nothing to remember (empty or whitespace-only content, only images or other
            parts without text). ``result.skipped`` lists those as ``Skipped(index,
            reason)``; ``result.stored`` is the ids without the gaps. An exact duplicate is
            stored again when ``dedup`` is off.

        Raises:
            ValidationError: naming the first bad field (e.g. ``messages[3].content[1].type``),
                or when no message has anything to store; nothing is written.
        """
        if messages is None:
            messages = content
        elif content is not None:
            raise ValidationError("content", "give messages or content, not both")
        scope = self._scope(user_id, agent_id, session_id, workspace)
        base_meta = v.metadata("metadata", metadata)
        base_time = v.timestamp("timestamp", timestamp)
        v.choice("kind", kind, KINDS)
        checked = v.messages(
            messages,
            default_kind=kind,
            base_metadata=base_meta,
            default_time=base_time or time.time(),
            max_messages=self.config.max_messages_per_add,
            max_chars=self.config.max_content_chars,
        )
        stored = ingest.add(self._engine, scope, checked.messages, dedup=dedup is not False)
        ids: builtins.list[str | None] = [None] * (len(checked.positions) + len(checked.skipped))
        for position, memory_id in zip(checked.positions, stored, strict=True):
            ids[position] = memory_id
        return AddResult(ids, [Skipped(i, reason) for i, reason in checked.skipped])

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
        change = None
        if content is not None:
            content = v.text("content", content, self.config.max_content_chars)
            change = (self.get(memory_id, workspace=ws), content)
        reason = v.text("reason", reason, 2000) if reason else ""
        return ingest.update(self._engine, ws, memory_id, new_meta, reason, change)

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
        everything of that scope (e.g. ``forget(user_id="alice")``): its feedback records go
        with it, and the edge weights its replies changed are replayed without them (as
        ``undo`` does).
        """
        if memory_id is None:
            scope = self._scope(user_id, agent_id, session_id, workspace)
            bounds = EdgeBounds(self.config.edge_weight_min, self.config.edge_weight_max)
            return self.store.forget(scope, None, bounds)
        if not isinstance(memory_id, str | builtins.list | tuple):
            raise ValidationError(
                "memory_id", f"must be an id or a list of ids, got {type(memory_id).__name__}"
            )
        ids = [memory_id] if isinstance(memory_id, str) else builtins.list(memory_id)
        for i, mid in enumerate(ids):
            v.scope_id(f"memory_id[{i}]", mid, required=True)
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        return self.store.forget(scope, ids)

    # -- reading ------------------------------------------------------------------------------
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
        """Memories of a scope, oldest first (by when each was said, ``created_at``), ``limit``
        at a time from ``offset``."""
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        v.positive_int("limit", limit, maximum=10_000)
        v.non_negative_int("offset", offset)
        return self.store.list_memories(scope, limit, offset)

    def history(
        self, memory_id: str, *, workspace: str | None = None
    ) -> builtins.list[HistoryEntry]:
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
    ) -> Stats:
        """Counts of memories, edges, recalls and feedback records of a scope."""
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        embedder: EmbedderFacts = {"name": self.embedder.name, "dim": self.embedder.dim}
        return {**self.store.stats(scope), "embedder": embedder}

    # -- recall -------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int | None = None,
        min_score: float | None = None,
        as_of: Any = None,
        filters: Mapping[str, Any] | RecallFilter | None = None,
        profile: RankingProfile | Mapping[str, Any] | None = None,
    ) -> builtins.list[ScoredMemory]:
        """Hybrid (vector + full-text) search within the scope, ranked, without the graph.

        Scores are absolute (comparable across queries; see ``engine.ranking.search``): a
        query nothing matches scores low. ``min_score`` drops results scoring below it.
        ``as_of``, ``filters`` and ``profile`` as in :meth:`recall`.
        """
        query = v.text("query", query, self.config.max_content_chars)
        scope = self._scope(user_id, agent_id, session_id, workspace)
        limit = self._limit(limit)
        floor = 0.0 if min_score is None else v.unit_float("min_score", min_score, 0.0, 10.0)
        where = parse_filters(filters)
        when = v.timestamp("as_of", as_of)
        ranking = self._profile(profile)
        return core.search(self._engine, scope, query, limit, floor, when, where, ranking)

    def recall(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int | None = None,
        as_of: Any = None,
        filters: Mapping[str, Any] | RecallFilter | None = None,
        min_score: float | None = None,
        profile: RankingProfile | Mapping[str, Any] | None = None,
    ) -> RecallResult:
        """What matters for the next turn: ranked memories, graph paths, tensions, a text block.

        The recall is recorded; ``feedback`` later acts on it (once). ``as_of`` (datetime,
        ISO-8601 or epoch seconds; default now) is when the question is asked: "last weekend",
        "two weeks ago" or "in May" in the query are read relative to it, and the ranking is
        by what was current then (memories added later are left out). What is current ranks
        first: a memory a newer one superseded (see ``MemoryRecord.superseded_by``) ranks below
        it for a question about the present and above it for one about the past ("where did I
        live before Berlin?").

        ``filters`` keeps the recall to the memories it matches, before the top ``limit`` are
        cut (search, graph walks and the preferences slot alike; knowledge-base passages are
        not memories and are not filtered)::

            {"metadata": {"topic": "billing", "team": {"in": ["a", "b"]}},
             "kind": "fact" or ["fact", "decision"], "role": "user" or [...],
             "since": <time>, "until": <time>}

        ``since`` (inclusive) and ``until`` (exclusive) bound ``created_at`` and take what
        ``as_of`` takes. ``min_score`` leaves out memories whose absolute score
        (``components["absolute"]``, the scale ``search`` returns) is below it; a memory that
        matches the query neither by its words nor by its meaning is never returned. See
        docs/recall.md, "Filters". ``profile`` ranks this call with other weights: a
        :class:`~engrammar.RankingProfile` or a mapping of some of its weights (the rest from
        ``Config.ranking``).

        Raises:
            ValidationError: a bad filter, named by its path (``filters.metadata.topic.in``).
        """
        query = v.text("query", query, self.config.max_content_chars)
        scope = self._scope(user_id, agent_id, session_id, workspace)
        limit = self._limit(limit)
        floor = 0.0 if min_score is None else v.unit_float("min_score", min_score, 0.0, 10.0)
        where = parse_filters(filters)
        when = v.timestamp("as_of", as_of)
        ranking = self._profile(profile)
        return core.recall(
            self._engine, scope, query, limit, when, where=where, min_score=floor, profile=ranking
        )

    # -- the feedback loop and explanations ---------------------------------------------------
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
        source: str | None = None,
    ) -> FeedbackResult:
        """Learn from the LLM's reply to the last recall (MemWire's adaptive feedback loop).

        The reply is embedded; each path of the scope's newest recall (or of ``recall_id``) is
        aligned with it (mean cosine between the reply and the path's
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
            recall_id: act on this recall instead of the scope's newest. Without it the
                newest is taken only if it has had no reply yet and was made within
                ``feedback_recall_window_s``; otherwise nothing changes and ``message`` says
                why, naming that recall (never an earlier one instead).
            source: who sends the reply (default ``agent:<agent_id>`` when an agent is named);
                over HTTP the API key's id. ``undo(recall_id)`` takes it all back.

        Returns:
            ``{"strengthened": n, "weakened": m, "recall_id": ..., "query": ..., "consumed": bool,
            ...}`` (``recall_id`` and ``query`` name the recall used)
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
        return feedback.apply_feedback(
            self._engine, scope, reply, rid, feedback_source(source, agent_id)
        )

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
        profile: RankingProfile | Mapping[str, Any] | None = None,
    ) -> Explanation:
        """Why ``memory_id`` ranks where it does for ``query``, component by component.

        Returns the memory's rank among everything recall scored (also when it falls outside
        the top ``limit``), its vector cosine and rank, keyword (BM25) score and rank, fused
        relevance, graph support with the best path and its edge weights, every edge touching
        it, and the final score. Nothing is recorded. When feedback moved it, ``learned``
        holds the learned components, ``records`` each feedback record that moved it
        (``record_id`` to ``undo``, ``signal``, ``source``, ``contribution`` now, after decay)
        and ``sources`` the contributions summed per source; they add up to ``learned``.

        Raises:
            NotFoundError: the memory is not in the scope.
        """
        query = v.text("query", query, self.config.max_content_chars)
        v.scope_id("memory_id", memory_id, required=True)
        scope = self._scope(user_id, agent_id, session_id, workspace)
        limit = self._limit(limit)
        ranking = self._profile(profile)
        return core.explain(self._engine, scope, query, memory_id, limit, ranking)

    def _profile(self, profile: RankingProfile | Mapping[str, Any] | None) -> RankingProfile:
        """``profile`` over ``Config.ranking``: a mapping changes only the weights it names."""
        if profile is None or isinstance(profile, RankingProfile):
            return profile or self.config.ranking
        if not isinstance(profile, Mapping):
            raise ValidationError("profile", "must be a RankingProfile or a mapping of weights")
        base = self.config.ranking.to_dict()
        return RankingProfile.of({**base, **dict(profile)})

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
        """Write the memories of a scope, the edges between them, the scope's recall and
        feedback records (events, reviews, pairs, logged events, ratings, reply signals) and
        its knowledge bases with their passages as JSON Lines. Not written: API keys
        (credentials of this store) and the history of each memory's changes (an import
        records its own); ``engrammar backup`` and ``engrammar migrate`` keep both.

        Args:
            destination: a file path or an open text file.
            user_id, agent_id, session_id, workspace: the scope (default: the whole workspace).
            progress: called as ``progress(done, total)`` while writing.

        Returns:
            How many memories were written. Vectors are not exported (see ``import_``).
        """
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        return transfer.export_jsonl(self._engine, destination, scope, progress)

    def import_(
        self,
        source: str | os.PathLike[str] | IO[str],
        *,
        workspace: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, Any]:
        """Read an export (JSON Lines) into this store, embedding each memory with this store's
        model; all of it lands in one transaction or none of it does.

        Args:
            source: a file path or an open text file.
            workspace: put every memory into this workspace instead of the one it came from.
            progress: called as ``progress(done, total)`` while embedding.

        Returns:
            ``{"memories": created, "duplicates": already_present, "edges": links_written,
            "records": records_written, "knowledge_bases": bases_written, "knowledge_chunks":
            their_passages, "edges_built": links_built, "skipped": [{"line", "reason"}]}``:
            what this import wrote (records and links already present are
            skipped). An export without link lines gets the links ``add`` would have built
            (``edges_built``). A memory line whose content is blank is skipped and listed, as
            ``add`` skips such a message; content may also be a list of parts as in ``add``.

        Raises:
            ValidationError: naming the line and field of the first bad record; nothing is
                written.
        """
        return transfer.import_jsonl(self._engine, source, workspace, progress)

    # -- knowledge bases ----------------------------------------------------------------------
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
        # Checked whichever way the passages come: a bad setting is refused, not ignored.
        size = v.positive_int(
            "chunk_chars", chunk_chars, minimum=knowledge.MIN_CHUNK_CHARS, maximum=100_000
        )
        v.non_negative_int("chunk_overlap", chunk_overlap)
        passages: builtins.list[tuple[str, dict[str, Any]]] = []
        if text is not None:
            text = v.text("text", text, self.config.max_content_chars * 100)
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

    # -- feedback records ---------------------------------------------------------------------
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
        source: str | None = None,
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
            user_reaction, user_correction, corrected_output, reason: how the user reacted, the
                correction they gave, the output as corrected, and why; kept with the event.
            agent_id, user_id, session_id, workspace: the scope; at least one of the first three.
            source_event_id: idempotency key: the same value for the same user (or, for an
                event without a user, in the same workspace) returns the existing event and
                writes nothing. Each user has a key space of their own, so a key never
                reveals or blocks another user's event.
            metadata: extra JSON data kept with the event.
            timestamp: when it happened; default now.
            source: who gives this feedback (default ``agent:<agent_id>`` when an agent is
                named, else unattributed); over HTTP the API key's id replaces it. One
                source's burst counts as one signal (``feedback_source_window_s``).

        Raises:
            ValidationError: naming the bad field; nothing is written.
            ConflictError: ``source_event_id`` already names an event with another payload.
        """
        limit = self.config.max_content_chars
        scope = self._scope(user_id, agent_id, session_id, workspace)
        input_context = v.text("input_context", input_context, limit)
        ai_output = v.text("ai_output", ai_output, limit)
        state = v.choice("state", state, FEEDBACK_STATES)
        user_reaction = v.optional_text("user_reaction", user_reaction, limit)
        user_correction = v.optional_text("user_correction", user_correction, limit)
        corrected_output = v.optional_text("corrected_output", corrected_output, limit)
        reason = v.optional_text("reason", reason, limit)
        source_event_id = v.scope_id("source_event_id", source_event_id)
        if source_event_id is not None and KEY_SEPARATOR in source_event_id:
            raise ValidationError("source_event_id", "must not contain the character U+001F")
        meta = v.metadata("metadata", metadata)
        when = v.timestamp("timestamp", timestamp) or time.time()
        if state == "corrected" and corrected_output is None and user_correction is None:
            raise ValidationError(
                "corrected_output", "a corrected event needs corrected_output or user_correction"
            )
        return records.create_feedback_event(
            self._engine,
            scope,
            when,
            input_context=input_context,
            ai_output=ai_output,
            user_reaction=user_reaction,
            user_correction=user_correction,
            corrected_output=corrected_output,
            state=state,
            reason=reason,
            source_event_id=source_event_id,
            metadata=meta,
            source=feedback_source(source, agent_id),
        )

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
        source: str | None = None,
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
            source: who gives this feedback (default ``agent:<agent_id>`` when an agent is
                named, else unattributed); over HTTP the API key's id replaces it. One
                source's burst counts as one signal (``feedback_source_window_s``).

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
        return records.create_decision_review(
            self._engine,
            ws,
            event_id,
            final_decision,
            outcome,
            confidence,
            reason,
            user,
            agent,
            when,
            feedback_source(source, agent),
        )

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
        source: str | None = None,
    ) -> PreferencePair:
        """Record that one output was preferred over another for a context
        (MCP ``memory_create_preference_pair``).

        The accepted output is stored as a memory of kind ``preference`` in the same
        transaction; for similar contexts it is surfaced and lifted, and memories repeating the
        rejected output are lowered, by ``weight`` (in (0, 10]).
        """
        limit = self.config.max_content_chars
        scope = self._scope(user_id, agent_id, session_id, workspace)
        context = v.text("context", context, limit)
        accepted_output = v.text("accepted_output", accepted_output, limit)
        rejected_output = v.text("rejected_output", rejected_output, limit)
        weight = v.unit_float("weight", weight, 0.0, 10.0)
        if weight == 0:
            raise ValidationError("weight", "must be > 0")
        if accepted_output.strip() == rejected_output.strip():
            raise ValidationError("rejected_output", "must differ from accepted_output")
        when = v.timestamp("timestamp", timestamp) or time.time()
        return records.create_preference_pair(
            self._engine,
            scope,
            context,
            accepted_output,
            rejected_output,
            weight,
            when,
            feedback_source(source, agent_id),
        )

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
        source: str | None = None,
    ) -> LoggedEvent:
        """Record any other event, e.g. a checkpoint (MCP ``memory_log_event``)."""
        scope = self._scope(user_id, agent_id, session_id, workspace)
        kind = str(v.scope_id("kind", kind, required=True))
        payload = v.metadata("payload", payload)
        when = v.timestamp("timestamp", timestamp) or time.time()
        return records.log_event(
            self._engine, scope, kind, payload, when, feedback_source(source, agent_id)
        )

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
        source: str | None = None,
    ) -> MemoryRating:
        """Say whether a memory helped (MCP ``memory_feedback``).

        Args:
            memory_id: the memory rated.
            verdict: ``accepted``, ``rejected`` or ``corrected``.
            correction: the right content, required with ``corrected``; stored as a memory of
                kind ``fact`` (same scope as the rated memory) in the same transaction.
            recall_id: the recall the memory came from; its query becomes the ``context``.
            context: the query the rating applies to. With a context the rating counts for
                similar queries only; without one it counts wherever the memory is recalled.
            weight: how much this rating counts, in (0, 10] (implicit signals pass their
                strength).
            user_id, agent_id, session_id: who rated; default the rated memory's scope.
            source: who gives this feedback (default ``agent:<agent_id>`` when an agent is
                named, else unattributed); over HTTP the API key's id replaces it. One
                source's burst counts as one signal (``feedback_source_window_s``).

        Raises:
            ValidationError: naming the bad field. NotFoundError: no such memory or recall.
        """
        ws = self._workspace(workspace)
        target = self.get(v.scope_id("memory_id", memory_id, required=True) or "", workspace=ws)
        verdict = v.choice("verdict", verdict, RATING_VERDICTS)
        correction = v.optional_text("correction", correction, self.config.max_content_chars)
        if verdict == "corrected" and correction is None:
            # A correction without the right content teaches nothing to surface instead.
            raise ValidationError("correction", "is required when verdict is 'corrected'")
        weight = v.unit_float("weight", weight, 0.0, 10.0)
        if weight == 0:
            raise ValidationError("weight", "must be > 0")
        context = v.optional_text("context", context, self.config.max_content_chars)
        v.scope_id("recall_id", recall_id)
        if recall_id is not None:
            if context is not None:
                raise ValidationError("context", "give recall_id or context, not both")
            context = records.recall_query(self._engine, ws, recall_id)
        user = v.scope_id("user_id", user_id)
        agent = v.scope_id("agent_id", agent_id)
        session = v.scope_id("session_id", session_id)
        when = v.timestamp("timestamp", timestamp) or time.time()
        rater = Scope(
            ws,
            user if user is not None else target.user_id,
            agent if agent is not None else target.agent_id,
            session if session is not None else target.session_id,
        )
        return records.rate_memory(
            self._engine,
            target,
            rater,
            verdict,
            correction,
            weight,
            when,
            recall_id,
            context,
            feedback_source(source, agent),
        )

    def undo(
        self, record_id: str, *, user_id: str | None = None, workspace: str | None = None
    ) -> UndoResult:
        """Take a feedback record back: every score becomes what it would be had the record
        never been given.

        Args:
            record_id: the id of a feedback event (its reviews go with it), a decision review,
                a preference pair, a memory rating (implicit signals are ratings), a logged
                event, or a recall that received a reply through ``feedback`` (its reply
                signals go, the edge weights it changed are replayed without it, and the
                recall can receive feedback again).
            user_id: only undo a record of this user (else not found).
            workspace: default the configured one.

        Returns:
            ``record_id``, ``kind``, ``user_id``, ``source``, ``undone`` (the ids taken back),
            ``memories_removed`` (a decision, preference or correction the record stored and
            nothing else refers to) and ``edges_restored``.

        Raises:
            NotFoundError: no such record in the workspace (or not the user's).
        """
        v.scope_id("record_id", record_id, required=True)
        user = v.scope_id("user_id", user_id)
        return records.undo(self._engine, self._workspace(workspace), record_id, user)

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

    # -- the inspector's reads ----------------------------------------------------------------
    def _inspector(self) -> Inspector:
        return Inspector(self._engine)

    def scopes(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        workspace: str | None = None,
        limit: int | None = None,
    ) -> ScopeList:
        """The users, agents and sessions of a workspace: one row per distinct
        ``(user_id, agent_id, session_id)`` with its number of memories (at most ``limit``
        rows, default 2,000; ``truncated`` says whether there were more)."""
        scope = self._scope(user_id, agent_id, None, workspace, need_one=False)
        return self._inspector().scopes(scope, limit)

    def find_memories(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int = 100,
        offset: int = 0,
        kind: str | None = None,
        role: str | None = None,
        status: str | None = None,
        since: str | float | None = None,
        until: str | float | None = None,
        text: str | None = None,
        order: str | None = None,
    ) -> MemoryList:
        """A page of a scope's memories with filters, and how many match in all.

        ``since`` / ``until`` bound ``created_at`` (epoch seconds or ISO-8601; ``until`` is
        exclusive), ``text`` keeps memories whose content contains it (any case), ``order`` is
        ``oldest`` (default) or ``newest``. Returns ``{"memories": [...], "total": n}``.
        """
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        return self._inspector().find_memories(
            scope,
            limit=limit,
            offset=offset,
            kind=kind,
            role=role,
            status=status,
            since=since,
            until=until,
            text=text,
            order=order,
        )

    def memory_edges(
        self,
        memory_id: str,
        *,
        user_id: str | None = None,
        workspace: str | None = None,
        depth: int | None = None,
        limit: int | None = None,
    ) -> Neighbourhood:
        """A memory's graph neighbourhood: its edges (both directions) out to ``depth`` hops
        (1 or 2), the memories at their ends (``user_id``'s only, when given), and every weight
        change feedback made to those edges, oldest first.

        Raises:
            NotFoundError: no such memory in the workspace.
        """
        center = self.get(memory_id, workspace=workspace)
        only_user = v.scope_id("user_id", user_id)
        return self._inspector().memory_edges(center, depth=depth, limit=limit, only_user=only_user)

    def memory_learning(self, memory_id: str, *, workspace: str | None = None) -> MemoryLearning:
        """The feedback signals on a memory (ratings, accepted preference pairs, reply
        signals), oldest first, each with the learned multiplier after it for a query that
        fully matches their contexts.

        Raises:
            NotFoundError: no such memory in the workspace.
        """
        return self._inspector().memory_learning(self.get(memory_id, workspace=workspace))

    def timeline(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int | None = None,
    ) -> Timeline:
        """A scope's feedback of every kind on one time line, newest first: feedback events,
        decision reviews, preference pairs, ratings, logged events and reply signals."""
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        return self._inspector().timeline(scope, limit)

    def rank_shifts(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int | None = None,
    ) -> RankShifts:
        """For the newest ``limit`` recalls that got feedback (ratings or a reply): each
        touched memory's rank in that recall and its rank for the same query now."""
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        return self._inspector().rank_shifts(scope, limit)

    def tensions(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int | None = None,
    ) -> Tensions:
        """Contradictions between a scope's memories: both sides, the kind and reason, the
        newer side, and the ratings each side has had."""
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        return self._inspector().tensions(scope, limit)

    # -- for the interfaces -------------------------------------------------------------------
    def has_recall(
        self,
        recall_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
    ) -> bool:
        """Whether ``recall_id`` is a recall made in the scope (consumed or not); with no
        scope key, any recall of the workspace. Raises ``ValidationError`` for a bad id."""
        v.scope_id("recall_id", recall_id, required=True)
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        return records.find_recall(self._engine, scope, recall_id) is not None

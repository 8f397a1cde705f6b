"""``Memory``: the one facade. It checks every argument (``engine.validate``), hands the work to
the engine (``engine.ingest``, ``recall``, ``feedback``, ``records``, ``transfer``) and returns
the records of :mod:`engrammar.models`; plain reads go straight to the store."""

from __future__ import annotations

import builtins
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, cast

from .config import Config, RankingProfile
from .embed import CachedEmbedder, Embedder, make_embedder
from .engine import Engine, feedback, ingest, knowledge, recall, records, transfer
from .engine import validate as v
from .engine.filters import parse_filters
from .engine.records import feedback_source
from .errors import EmbedderError, ValidationError
from .memory_base import Closed, FacadeBase
from .memory_inspect import InspectingMixin
from .memory_knowledge import KnowledgeMixin
from .memory_records import RecordsMixin
from .models import (
    KINDS,
    AddResult,
    MemoryRecord,
    RecallFilter,
    RecallResult,
    ScoredMemory,
    Skipped,
)
from .store import Backend, open_store

__all__ = ["Memory"]


class Memory(InspectingMixin, KnowledgeMixin, RecordsMixin, FacadeBase):
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
            bounds = (self.config.edge_weight_min, self.config.edge_weight_max)
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

        Scores are absolute (comparable across queries; see ``engine.recall.search``): a
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
        return recall.search(self._engine, scope, query, limit, floor, when, where, ranking)

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
        with recall.session(self._engine, query, profile=ranking):  # one read session
            result = recall.recall(
                self._engine,
                scope,
                query,
                limit,
                when,
                where=where,
                min_score=floor,
                profile=ranking,
            )
            if self.config.knowledge_recall_limit:
                result.knowledge = knowledge.search(
                    self._engine,
                    scope,
                    query,
                    self.config.knowledge_recall_limit,
                    self.config.knowledge_min_score,
                )
            if result.knowledge:
                block = "\n".join(f"- {k.content}" for k in result.knowledge)
                text = f"Knowledge:\n{block}"
                result.formatted = f"{result.formatted}\n\n{text}" if result.formatted else text
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
        source: str | None = None,
    ) -> dict[str, Any]:
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
    ) -> dict[str, Any]:
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
        return recall.explain(self._engine, scope, query, memory_id, limit, ranking)

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

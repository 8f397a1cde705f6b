"""The storage contract every backend implements.

A store holds everything engrammar knows: memories with their vectors, graph edges, recall
records and feedback records. ``Memory`` orchestrates; a store never embeds, scores or learns.

Contract, for every method:

* **Atomic.** A method that writes runs in one transaction: when it returns, all of its effect
  is durable and visible to every other connection and process; when it raises, none of it is.
* **Scoped.** Every read and write names a workspace; nothing crosses workspaces. The other
  scope keys (``user_id``, ``agent_id``, ``session_id``) filter when not ``None``.
* **Raises.** :class:`~engrammar.errors.StoreError` for backend failures (I/O, lock timeout),
  :class:`~engrammar.errors.NotFoundError` for ids that are absent in the given workspace,
  :class:`~engrammar.errors.EmbedderError` when the store was built with another vector size.
* **Concurrent.** Safe to call from several threads; several processes may open one store.
  Weight updates are applied as deltas inside the database (no lost updates).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, cast, runtime_checkable

import numpy as np

from ..learn.scoring import EventFacts, PairFacts, RatingFacts, ReplyFacts
from ..models import (
    DecisionReview,
    Edge,
    EdgeChange,
    FeedbackEvent,
    HistoryEntry,
    KnowledgeBase,
    KnowledgeChunk,
    LoggedEvent,
    MemoryRating,
    MemoryRecord,
    PreferencePair,
    RecallFilter,
    Scope,
    StoreStats,
    UndoResult,
)

__all__ = [
    "FEEDBACK_RECORD_KINDS",
    "AddAhead",
    "ApiKeyRecord",
    "ApiKeyStore",
    "Backend",
    "ChunkVector",
    "Completed",
    "EdgeAdjustment",
    "EdgeBounds",
    "EdgeDelta",
    "FeedbackRecords",
    "ImportBundle",
    "InspectorReads",
    "KnowledgeStore",
    "LearningAhead",
    "MemoryFilter",
    "MemoryUpdate",
    "NewEdge",
    "NewFeedbackEvent",
    "NewKnowledgeBase",
    "NewMemory",
    "ReadAhead",
    "ReadPlan",
    "RecallRecord",
    "RefineAhead",
    "ReplyQuery",
    "ReplySignal",
    "RowCopy",
    "SearchQuery",
    "Store",
    "read_ahead",
    "rebuilt_edges",
]

FeedbackRecord = FeedbackEvent | DecisionReview | PreferencePair | LoggedEvent | MemoryRating

#: The kinds of feedback record, as named by ``get_feedback_record`` / ``list_feedback_records``.
FEEDBACK_RECORD_KINDS = (
    "feedback_event",
    "decision_review",
    "preference_pair",
    "logged_event",
    "memory_rating",
)


class ChunkVector(NamedTuple):
    """The vector of one window of a memory's text longer than the embedder reads: its
    ``position`` (1, 2, ...: the memory's own vector reads the start), the window's
    ``[start, end)`` in the content, and the vector."""

    position: int
    start: int
    end: int
    embedding: np.ndarray


@dataclass(frozen=True)
class MemoryFilter:
    """What a memory list narrows to, beyond its scope; ``None`` means no condition."""

    kind: str | None = None
    role: str | None = None
    status: str | None = None
    since: float | None = None
    until: float | None = None
    text: str | None = None
    newest_first: bool = False


class ReplyQuery(NamedTuple):
    """Which recalls' reply signals count (``Store.reply_facts``): of those created at or
    after ``since``, the newest ``limit`` recalls whose query has a cosine of at least
    ``context_min`` with ``context()``, the vector of the query asked now (called only when
    there are such signals at all)."""

    context: Callable[[], np.ndarray]
    context_min: float
    since: float
    limit: int


@dataclass(frozen=True)
class AddAhead:
    """What an add session (``ReadAhead.adding``) will ask: ``latest_memories(scope, 1)`` and
    the vectors of what it returns, ``term_postings(graph, terms, limit)``,
    ``vector_searches(graph, ..., k)`` with the records of the hits, and ``edge_counts`` of
    the memories those return. ``keys``: the dedup keys of the rows the add will write (a
    server store learns which the scope holds already, and writes those as duplicates
    without a failed try)."""

    scope: Scope
    graph: Scope
    terms: Sequence[str]
    limit: int
    keys: Sequence[str] = ()


@dataclass(frozen=True)
class RefineAhead:
    """How a read session will fuse its search's candidates (``score`` fusion with
    ``keyword_weight``) and of how many of the best it reads the conversation neighbours
    (``depth``), so that a server store reads ahead the neighbours of those, not of every
    candidate."""

    keyword_weight: float
    depth: int


@dataclass(frozen=True)
class LearningAhead:
    """What a read session's learned ranking will ask (``Store.learning_reads``' arguments
    other than the memory ids and the horizon), so that a server store can read it ahead:
    ``context`` gives the query's vector (called at most once per session, and only when the
    scope is likely to have reply signals)."""

    context: Callable[[], np.ndarray]
    limit: int
    context_min: float
    reply_limit: int
    #: the walk weighs what feedback moved its edges by (``learned_edge_parts`` of the
    #: sources whose edges it reads, and ``reply_facts`` without witnesses with ``context``,
    #: ``context_min`` and ``reply_limit``: ``Config.feedback_edge_context``)
    edge_parts: bool = False


@dataclass(frozen=True)
class ReadPlan:
    """What a read session (``ReadAhead.reading``) will ask, so that a server store can read
    it ahead: ``feedback_since``, the oldest feedback record; ``preferences``, the ``limit``
    of ``memories_of_kind(scope, "preference", limit)`` (0: none); ``knowledge``, whether it
    searches the scope's knowledge (a hint only: a knowledge search is one query of its own,
    by vector, never read ahead whole); ``neighbourhood``, whether it walks the graph from
    the search's candidates (if not, their neighbourhood is not read ahead); ``learning``,
    what the learned ranking will ask ``learning_reads`` (with ``since`` no older than
    ``feedback_since``); ``refine``, how the search's candidates are fused and refined."""

    feedback_since: float | None = None
    preferences: int = 0
    knowledge: bool = False
    neighbourhood: bool = True
    learning: LearningAhead | None = None
    refine: RefineAhead | None = None


class Completed(list[tuple[str, float]]):
    """A hit list of ``Store.searches`` that the store completed with the other list's hits
    it missed, as recall would (:meth:`Store.searches`): recall adds none to it."""


class SearchQuery(NamedTuple):
    """The two searches of one query (``Store.searches``): by its index terms (``terms``, as
    :func:`~engrammar.recall.text.terms` finds them in the query's text) and by its
    ``vector``, ``k`` hits each, of the memories ``where`` matches."""

    terms: tuple[str, ...]
    vector: np.ndarray
    k: int
    where: RecallFilter | None = None


@dataclass
class NewMemory:
    """A memory about to be written; ``dedup_key`` makes exact duplicates collapse.

    ``status`` is ``active`` except when an import restores a superseded or forgotten memory
    (written in the same transaction as the rest of the import); ``updated_at`` is the time of
    the write unless an import restores the exported one.
    """

    id: str
    workspace: str
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    role: str
    content: str
    kind: str
    created_at: float
    metadata: dict[str, Any]
    dedup_key: str
    embedding: np.ndarray
    status: str = "active"
    updated_at: float | None = None
    valid_until: float | None = None  # an import restores a superseded memory as it was
    superseded_by: str | None = None
    # The windows of a long text past the first (``Config.chunk_chars``), stored with it.
    chunks: tuple[ChunkVector, ...] = ()


@dataclass(frozen=True)
class NewKnowledgeBase:
    """A knowledge base about to be written whole: the ``base`` and each of its ``chunks``
    with its vector."""

    base: KnowledgeBase
    chunks: Sequence[tuple[KnowledgeChunk, np.ndarray]]


@dataclass
class NewEdge:
    """An edge to create (or to raise to at least ``weight`` if it already exists);
    ``updated_at`` as in :class:`NewMemory`."""

    src: str
    dst: str
    kind: str
    weight: float
    updated_at: float | None = None


@dataclass(frozen=True)
class MemoryUpdate:
    """What ``Store.update_memory`` changes of a stored memory; ``None`` leaves it as it is.

    A new text is ``content`` with its ``embedding`` and ``dedup_key`` (the three together, or
    the text stays) and the vectors of its windows (``chunks``); ``edges`` replace its
    content-derived edges. ``reason`` is written into the memory's history.
    """

    reason: str
    content: str | None = None
    embedding: np.ndarray | None = None
    dedup_key: str | None = None
    metadata: dict[str, Any] | None = None
    status: str | None = None
    edges: Sequence[NewEdge] | None = None
    chunks: Sequence[ChunkVector] = ()


def rebuilt_edges(
    edges: Sequence[NewEdge], learned: dict[tuple[str, str, str], float]
) -> list[NewEdge]:
    """The content-derived ``edges`` of an updated memory, each at its ``learned`` weight when
    the (src, dst, kind) edge existed before the update (see ``Store.update_memory``)."""
    return [
        NewEdge(e.src, e.dst, e.kind, learned.get((e.src, e.dst, e.kind), e.weight))
        for e in edges
        if e.kind != "sequence"
    ]


class EdgeBounds(NamedTuple):
    """The range feedback keeps an edge's weight in: ``[lo, hi]``, the configured
    ``[edge_weight_min, edge_weight_max]``."""

    lo: float
    hi: float


@dataclass
class EdgeDelta:
    """A change to an existing edge's weight, applied and clamped inside the store."""

    src: str
    dst: str
    kind: str
    delta: float


@dataclass
class ReplySignal:
    """What a reply sent through ``feedback`` said about one memory (see ``learn.scoring``)."""

    workspace: str
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    recall_id: str
    memory_id: str
    value: float  # +1 drawn on by the reply, -1 recalled but not drawn on
    alignment: float  # cosine(reply, memory)
    created_at: float
    context_embedding: np.ndarray  # the recall's query
    source: str | None = None  # who sent the reply (see ``models.FeedbackEvent.source``)


@dataclass(frozen=True)
class EdgeAdjustment:
    """One feedback write (``Store.adjust_edges``): the ``deltas`` to add to edges' weights,
    each clamped to ``bounds``; the recall the reply consumes (``consume_recall``) and the
    ``reply_signals`` it leaves, written in the same transaction."""

    deltas: Sequence[EdgeDelta]
    bounds: EdgeBounds
    consume_recall: str | None = None
    reply_signals: Sequence[ReplySignal] = ()


@dataclass(frozen=True)
class ImportBundle:
    """What one import writes in one transaction (``Store.import_bundle``): the memories
    (``rows``), their ``edges``, and the feedback ``records`` as ``(table, row)`` of
    :data:`.tables.RECORD_TABLES` in the :meth:`~RowCopy.export_rows` format."""

    rows: Sequence[NewMemory]
    edges: Sequence[NewEdge]
    records: Sequence[tuple[str, dict[str, Any]]]


@dataclass
class RecallRecord:
    """What one recall returned, kept so that feedback can act on it once."""

    recall_id: str
    workspace: str
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    query: str
    created_at: float
    memory_ids: list[str]
    paths: list[dict[str, Any]] = field(default_factory=list)
    tensions: list[dict[str, Any]] = field(default_factory=list)
    consumed_at: float | None = None


@dataclass
class NewFeedbackEvent:
    """A feedback event about to be written, with its vectors and its decision memory.

    ``payload_hash`` identifies the caller's payload: a second write with the same
    ``source_event_id`` and the same hash returns the first event; another hash is a conflict.
    ``decision`` (the standing answer as a memory of kind ``decision``) is linked to the event
    as ``answer`` (``"corrected"`` or ``"ai_output"``); ``None`` for a rejected output.
    """

    event: FeedbackEvent
    payload_hash: str
    context_embedding: np.ndarray
    ai_output_embedding: np.ndarray
    corrected_embedding: np.ndarray | None
    decision: NewMemory | None
    answer: str | None


@dataclass
class ApiKeyRecord:
    """An API key as stored: never the key itself, only its SHA-256 hash."""

    key_id: str
    key_hash: str
    workspace: str
    user_id: str | None
    name: str
    created_at: float
    revoked_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields, without the hash."""
        return {
            "key_id": self.key_id,
            "workspace": self.workspace,
            "user_id": self.user_id,
            "name": self.name,
            "created_at": self.created_at,
            "revoked_at": self.revoked_at,
        }


class Store(Protocol):
    """What the engine reads and writes of memories, their vectors and keyword terms, the graph,
    recall records and the facts learning reads (see the module docstring for the contract
    every method keeps). The other concepts a backend stores have protocols of their own
    below; :class:`Backend` is all of them."""

    def close(self) -> None:
        """Release connections; the store is unusable afterwards."""

    def check_embedder(self, name: str, dim: int) -> None:
        """Record the embedder on first use; raise ``EmbedderError`` if ``dim`` differs later."""

    def add_memories(
        self, rows: Sequence[NewMemory], edges: Sequence[NewEdge] = ()
    ) -> list[tuple[str, bool]]:
        """Insert rows (and edges between them or to existing memories) in one transaction.

        Returns, per row, ``(id, created)``; a row whose ``dedup_key`` exists returns the
        existing id with ``created=False``. Edges naming a collapsed row follow it to that id.
        A ``supersedes`` edge (newer -> older) also marks the older memory as no longer current,
        in the same transaction: its ``valid_until`` becomes the newer one's ``created_at`` and
        its ``superseded_by`` the newer one's id, unless it was replaced earlier already (op
        ``supersede`` in its history).
        """

    def get_memories(self, workspace: str, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """The memories of ``workspace`` among ``ids`` (absent ids are simply missing)."""

    def list_memories(self, scope: Scope, limit: int, offset: int) -> list[MemoryRecord]:
        """Memories of the scope, oldest first: by ``created_at``, then in the order stored."""

    def update_memory(self, workspace: str, memory_id: str, change: MemoryUpdate) -> MemoryRecord:
        """Change a memory as ``change`` says; records the change in its history.

        ``change.edges`` (given with a content change) replace, in the same transaction, the
        memory's content-derived edges in both directions: every kind but ``sequence``. An
        edge present before and after keeps its learned weight. With a content change the
        memory's chunk vectors become ``change.chunks``.
        """

    def forget(
        self, scope: Scope, ids: Sequence[str] | None, edge_bounds: EdgeBounds | None = None
    ) -> int:
        """Delete the given memories (or all of the scope's when ``ids`` is None) with their
        edges; returns how many were deleted. A memory one of them had superseded is current
        again (``valid_until`` and ``superseded_by`` cleared, op ``restore``). Forgetting a
        whole scope deletes its feedback records too, and (given ``edge_bounds``) takes back
        the edge changes its
        replies made to edges that remain, as :meth:`undo_record` does."""

    def history(self, workspace: str, memory_id: str) -> list[HistoryEntry]:
        """What changed the memory, oldest first."""

    def stats(self, scope: Scope) -> StoreStats:
        """Counts of memories, edges, recalls and feedback records in the scope."""

    def vector_search(
        self, scope: Scope, query: np.ndarray, k: int, where: RecallFilter | None = None
    ) -> list[tuple[str, float]]:
        """Up to ``k`` (id, cosine) of active memories in scope, best first; with ``where``,
        only memories it matches, the top ``k`` of those (the filter applies before the cut:
        a match far down the unfiltered ranking still comes back); a memory with chunk
        vectors scores the best cosine of its own vector and its chunks'."""

    def vector_searches(
        self, scope: Scope, queries: np.ndarray, k: int
    ) -> list[list[tuple[str, float]]]:
        """:meth:`vector_search` for each row of ``queries`` (a batch of adds looks up the
        neighbours of every new memory); one list per row."""

    def searches(
        self, scope: Scope, ask: SearchQuery
    ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        """``(keyword_search(scope, text, k, where), vector_search(scope, vector, k, where))``
        of ``ask`` (the keyword search by the text's ``terms``) when the query's vector is
        known before its keyword hits (a reply's): a server store sends both at once. The
        vector list may go on past its ``k`` hits with every keyword hit it missed, as
        :func:`~engrammar.recall.fusion.missed_hits` scores them (recall appends them
        otherwise, reading their vectors): a store that holds the vectors at hand saves
        those reads. The keyword list may go on likewise with the BM25 score
        (:meth:`keyword_scores`) of every one of the first ``k`` vector hits it missed that
        holds a term, best first, ties in the vector list's order. A list returned as
        :class:`Completed` holds all of those already: recall then adds nothing to it."""

    def keyword_search(
        self, scope: Scope, text: str, k: int, where: RecallFilter | None = None
    ) -> list[tuple[str, float]]:
        """Up to ``k`` (id, BM25 score > 0) of active memories in scope, best first; with
        ``where``, the top ``k`` of those it matches (BM25's statistics stay the partition's,
        as for the agent and session keys, so a filter never changes a memory's score)."""

    def keyword_scores(
        self, scope: Scope, words: Sequence[str], ids: Sequence[str]
    ) -> dict[str, float]:
        """The BM25 score of each of ``ids`` (memories of ``scope``) for the index terms
        ``words``, as :meth:`keyword_search` scores it (the same statistics); a memory that
        holds none of the terms is left out. What recall asks for the vector hits the
        keyword list missed."""

    def vectors(self, workspace: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of the given memories."""

    def memory_chunks(self, workspace: str, ids: Sequence[str]) -> dict[str, list[ChunkVector]]:
        """The chunk vectors of the given memories, by position (memories without any are
        missing). :meth:`vector_search` scores a memory by the best of its own vector and
        these."""

    def insertion_order(self, workspace: str, ids: Sequence[str]) -> dict[str, int]:
        """A number per given memory that grows in the order they were stored (message order
        within an ``add``): what tells memories of the same ``created_at`` apart."""

    def latest_memories(self, scope: Scope, limit: int) -> list[MemoryRecord]:
        """The scope's newest active memories, newest first (by insertion order)."""

    def memories_of_kind(self, scope: Scope, kind: str, limit: int) -> list[MemoryRecord]:
        """The scope's newest active memories of ``kind``, newest first (recall's standing
        preferences)."""

    def term_postings(
        self, scope: Scope, terms: Sequence[str], limit: int
    ) -> tuple[int, dict[str, tuple[int, list[str]]]]:
        """Document frequencies of index terms (``recall.text.terms``) among the scope's active
        memories: returns ``(n_memories, {term: (df, ids)})`` where ``ids`` holds up to
        ``limit`` of the memories containing the term, newest first. Every asked term is a key.
        """

    def edges_from(
        self, workspace: str, ids: Sequence[str], min_weight: float = 0.0, kind: str | None = None
    ) -> list[Edge]:
        """Edges leaving any of ``ids`` with weight >= ``min_weight`` (of ``kind`` only, if
        given)."""

    def edges_to(self, workspace: str, ids: Sequence[str], min_weight: float = 0.0) -> list[Edge]:
        """Edges arriving at any of ``ids`` with weight >= ``min_weight``."""

    def edge_counts(self, workspace: str, ids: Sequence[str]) -> dict[str, int]:
        """How many edges leave each of ``ids`` (ids without edges map to 0)."""

    def learned_edge_parts(
        self, workspace: str, src_ids: Sequence[str], kind: str | None = None
    ) -> list[tuple[str, str, str, str | None, float]]:
        """What feedback moved each edge leaving ``src_ids`` by (of ``kind`` only, if
        given): ``(src, dst, kind, recall_id, applied)`` per logged change, ``applied`` the
        change of the weight after clamping (see ``engine.edge_context``)."""

    def adjust_edges(self, workspace: str, change: EdgeAdjustment) -> list[Edge] | None:
        """Add each of ``change.deltas`` to its edge's weight, clamped to ``change.bounds``,
        atomically in the database; returns the edges whose weight actually changed (with
        their new weights).

        Every delta to an existing edge is logged in ``edge_changes`` with the weight before and
        after (also when clamping left the weight as it was: undoing an earlier change may make
        it count, see :meth:`undo_record`).

        With ``change.consume_recall``, that recall is marked consumed in the same transaction;
        if it was already consumed (by a concurrent call), nothing is written and ``None``
        returned. ``change.reply_signals`` are appended in the same transaction (and only
        then).
        """

    def save_recall(self, record: RecallRecord) -> None:
        """Persist a recall record."""

    def get_recall(self, scope: Scope, recall_id: str | None) -> RecallRecord | None:
        """The given recall of the scope, or the scope's newest recall when ``recall_id`` is
        None (consumed or not, either way); ``None`` if there is no such recall."""

    def learning_facts(
        self,
        scope: Scope,
        memory_ids: Sequence[str],
        since: float | None = None,
        limit: int | None = None,
    ) -> tuple[list[EventFacts], list[PairFacts], list[RatingFacts]]:
        """What recall needs to apply feedback: the events (with their reviews and decision
        memories) and preference pairs of the workspace visible to ``scope.user_id`` (its own
        and workspace-wide records, any agent or session: decisions are shared), and the
        ratings of ``memory_ids``. With ``since``, only records created (events: or reviewed)
        at or after it; with ``limit``, only the newest ``limit`` events and pairs."""

    def reply_facts(
        self, scope: Scope, ask: ReplyQuery, witnesses: Sequence[tuple[str, str]] = ()
    ) -> list[ReplyFacts]:
        """Reply signals created at or after ``ask.since`` that recall can use: every signal
        of the newest ``ask.limit`` recalls of ``scope.user_id`` (and user-less ones) whose
        query has a cosine of at least ``ask.context_min`` with the vector ``ask.context()``,
        about memories active in ``scope``; and the signals naming a ``(recall_id,
        memory_id)`` of ``witnesses`` (the recalls ratings were given on), whatever their
        query.

        ``context`` is called only if the scope has such recalls at all: a scope without
        feedback costs no query embedding. The cost follows the matching recalls, not the
        signals stored: the recalls' query vectors are searched first."""

    def learning_reads(
        self,
        scope: Scope,
        memory_ids: Sequence[str],
        since: float,
        limit: int,
        context: Callable[[], np.ndarray],
        context_min: float,
        reply_limit: int,
    ) -> tuple[list[EventFacts], list[PairFacts], list[RatingFacts], list[ReplyFacts]]:
        """Everything the learned ranking reads, in one call: ``learning_facts(scope,
        memory_ids, since, limit)`` and ``reply_facts(scope, ReplyQuery(context, context_min,
        since, reply_limit), witnesses)`` with the recalls the ratings were given on as witnesses
        (a server store sends them together)."""


@runtime_checkable
class ReadAhead(Protocol):
    """A store whose reads cost a round trip each (PostgreSQL) may answer a flow's questions
    from a session it fills ahead, and send a write before the flow needs its answer. A store
    whose reads are function calls (SQLite) has none of this; the engine checks for it
    (:func:`read_ahead`) and calls the plain reads of :class:`Store` the same way either way."""

    def reading(self, plan: ReadPlan | None = None) -> AbstractContextManager[None]:
        """A read session of the calling thread: until the block ends the store may answer
        reads from what it read ahead (a server store answers a recall's dozen questions in
        a few round trips). Every answer equals the plain call's; writes inside the block
        are not seen by its reads of memories already read. What the caller will ask, so that
        it can be read ahead: ``plan`` (none: nothing is known ahead)."""

    def adding(self, ahead: AddAhead) -> AbstractContextManager[None]:
        """An add session of the calling thread: until the block ends the store may answer
        the reads of one add in ``ahead.scope`` from what it read ahead (a server store, in
        two round trips). Every answer equals the plain call's. What the caller will ask:
        :class:`AddAhead`."""

    def add_ahead(self, rows: Sequence[NewMemory]) -> None:
        """Announce, in an add session, the rows its :meth:`add_memories` will write (with
        the edges still to be built): a server store may begin their transaction meanwhile,
        committed with the write or rolled back when the session ends without it. Nothing
        changes for a store that writes in process."""

    def search_ahead(self, scope: Scope, queries: np.ndarray, k: int) -> None:
        """Announce, in an add session, the :meth:`vector_searches` the caller will ask next
        with these arguments: a server store sends them now, so that they travel while the
        caller does work that needs no hits. Nothing changes for a store that searches in
        process."""

    def reply_ahead(
        self,
        scope: Scope,
        text: str,
        query: Callable[[], np.ndarray],
        k: int,
        where: RecallFilter | None = None,
    ) -> None:
        """Announce, in a read session, the :meth:`searches` that will follow the next
        :meth:`get_recall` (feedback's reply): a server store sends them with the recall's
        read. ``query``: computes the reply's vector (kept after the first call); a server
        store calls it once the recall's read is on its way, so that the embedding runs
        while the server answers. Nothing changes for a store that answers in process."""


class FeedbackRecords(Protocol):
    """The feedback records, append-only (events, reviews, pairs, logged events, ratings) and
    their undo."""

    def create_feedback_event(self, new: NewFeedbackEvent) -> tuple[FeedbackEvent, bool]:
        """Insert the event and its decision memory in one transaction; returns
        ``(event, created)``.

        Idempotent: if the workspace already holds an event with the same ``source_event_id``,
        nothing is written and that event is returned with ``created=False`` (also when several
        processes race: exactly one inserts). A different ``payload_hash`` under the same
        ``source_event_id`` raises :class:`~engrammar.errors.ConflictError`. A decision memory
        whose ``dedup_key`` exists is not duplicated: the event links to the existing one.
        """

    def create_decision_review(
        self, review: DecisionReview, decision: NewMemory | None, answer: str | None
    ) -> DecisionReview:
        """Insert a review of an event of the same workspace (``NotFoundError`` if absent).

        When ``answer`` names the output standing after the review and the event has no decision
        memory for it yet, ``decision`` is inserted and linked in the same transaction. The
        returned review carries the standing decision memory id (``None`` when rejected).
        """

    def create_preference_pair(
        self,
        pair: PreferencePair,
        context_embedding: np.ndarray,
        accepted_embedding: np.ndarray,
        rejected_embedding: np.ndarray,
        memory: NewMemory,
    ) -> PreferencePair:
        """Insert the pair and the memory of its accepted output (or link to an identical
        existing one) in one transaction; returns the pair with ``memory_id`` set."""

    def log_event(self, event: LoggedEvent) -> LoggedEvent:
        """Insert a logged event."""

    def rate_memory(
        self,
        rating: MemoryRating,
        context_embedding: np.ndarray | None,
        correction: NewMemory | None,
    ) -> MemoryRating:
        """Insert a rating of a memory of the same workspace (``NotFoundError`` if absent), and
        the memory made from its correction, if any, in one transaction."""

    def get_feedback_record(self, kind: str, workspace: str, record_id: str) -> FeedbackRecord:
        """One record of ``kind`` (see ``FEEDBACK_RECORD_KINDS``) by id; ``NotFoundError``."""

    def list_feedback_records(
        self, kind: str, scope: Scope, limit: int, offset: int
    ) -> list[FeedbackRecord]:
        """Records of ``kind`` in the scope, oldest first."""

    def undo_record(
        self, workspace: str, record_id: str, lo: float, hi: float, user_id: str | None = None
    ) -> UndoResult:
        """Take back the feedback record ``record_id`` of ``workspace`` in one transaction, so
        that every score is what it would be had the record never been given.

        ``record_id`` names a feedback event (its reviews go with it), a decision review, a
        preference pair, a memory rating, a logged event, or a recall that received a reply
        (``feedback``): its reply signals are deleted, its edge changes replayed away within
        ``[lo, hi]`` (``learn.replay``) and the recall can receive feedback again. A memory
        the record stored beside itself goes too when nothing else refers to it. Returns
        ``record_id``, ``kind``, ``user_id``, ``source``, ``undone`` (the record ids taken
        back), ``memories_removed`` and ``edges_restored``; ``NotFoundError`` when there is
        no such record (or, with ``user_id``, when it is not that user's).
        """


class InspectorReads(Protocol):
    """The web inspector's reads (see :mod:`.sql.inspect`)."""

    def find_memories(
        self, scope: Scope, where: MemoryFilter, limit: int, offset: int
    ) -> tuple[list[MemoryRecord], int]:
        """A page of the scope's memories matching ``where``, and how many match in all."""

    def scope_counts(
        self, scope: Scope, limit: int
    ) -> list[tuple[str | None, str | None, str | None, int]]:
        """(user_id, agent_id, session_id, memories) of each distinct scope
        key combination within ``scope``, sorted by the keys, at most ``limit`` rows."""

    def scope_edges(self, scope: Scope, kind: str, limit: int) -> list[Edge]:
        """Edges of ``kind`` between memories of ``scope``, most recently updated first."""

    def edge_changes(
        self, workspace: str, memory_ids: Sequence[str], limit: int
    ) -> list[EdgeChange]:
        """Weight changes made by feedback to edges touching ``memory_ids``, oldest first:
        ``src``, ``dst``, ``kind``, ``delta`` (as asked, before clamping), ``weight`` (after),
        ``recall_id``, ``at``."""

    def rating_rows(self, scope: Scope, limit: int) -> list[tuple[str, str, str]]:
        """(recall_id, memory_id, verdict) of the scope's newest ``limit`` memory ratings
        made for a recall, newest first."""

    def reply_signal_rows(
        self, scope: Scope, memory_id: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """Reply signals of the scope (of one memory, if given), newest first, without their
        vectors: ``recall_id``, ``memory_id``, ``value``, ``alignment``, ``created_at`` and the
        scope keys."""


class RowCopy(Protocol):
    """Whole tables in the export row format of :mod:`.tables` (``engrammar migrate``,
    export and import)."""

    def export_rows(self, table: str, after: Any, limit: int) -> tuple[list[dict[str, Any]], Any]:
        """Up to ``limit`` rows of ``table`` (a key of :data:`.tables.COPY_TABLES`) in a
        stable order, after the cursor ``after`` (``None``: from the start); returns the rows
        and the cursor of the next page (``None`` when there is none)."""

    def bulk_load(self) -> AbstractContextManager[None]:
        """A context for loading many rows: the store may defer index maintenance to its end."""

    def import_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        """Write rows exported by any store's :meth:`export_rows` as they are, in one
        transaction (no history entries, no new timestamps); ``meta`` rows are upserted."""

    def import_bundle(self, bundle: ImportBundle) -> list[tuple[str, bool]]:
        """What :meth:`add_memories` does with ``bundle.rows`` and ``bundle.edges``, then
        insert ``bundle.records``, all in one transaction (``Memory.import_``).

        Memory ids in records follow rows that collapsed onto an existing memory. A record whose
        id exists already (or, for a feedback event, whose ``source_event_id`` exists in its
        workspace; for a decision link, whose event and answer) is skipped: importing the same
        export twice writes it once. Returns what :meth:`add_memories` returns.
        """


class ApiKeyStore(Protocol):
    """API keys (hashed; see :mod:`engrammar.keys`)."""

    def create_api_key(self, record: ApiKeyRecord) -> None:
        """Persist a new key record; ``ConflictError`` if ``key_id`` exists."""

    def get_api_key(self, key_id: str) -> ApiKeyRecord | None:
        """The key record with this id (revoked or not), or ``None``."""

    def list_api_keys(self, workspace: str | None) -> list[ApiKeyRecord]:
        """Key records of a workspace (of every workspace when ``None``), oldest first."""

    def revoke_api_key(self, key_id: str) -> bool:
        """Mark a key revoked; ``True`` if it was active, ``NotFoundError`` if it is unknown."""


class KnowledgeStore(Protocol):
    """Knowledge bases: written whole (the base and all its chunks) or not at all."""

    def add_knowledge(self, new: NewKnowledgeBase, max_scope_chunks: int | None = None) -> None:
        """Store a knowledge base and its chunks (with their vectors) in one transaction.

        With ``max_scope_chunks``, raises :class:`~engrammar.errors.TooLargeError` and writes
        nothing when the base's workspace and user would then hold more chunks than that
        (counted inside the transaction: two writers racing cannot both pass it)."""

    def count_knowledge_chunks(self, workspace: str, user_id: str | None) -> int:
        """How many chunks the knowledge bases of this workspace and user (``None``: the
        workspace's own, of no user) hold."""

    def search_knowledge(
        self, scope: Scope, vector: np.ndarray, limit: int, min_score: float = 0.0
    ) -> list[KnowledgeChunk]:
        """The scope's ``limit`` chunks nearest ``vector`` by cosine, best first (ties: the
        older first), each with ``score`` the cosine clipped to [0, 1]; those below
        ``min_score`` are left out. Found by the database's vector search or an index kept
        between calls: a search never reads every vector of the scope into the caller."""

    def list_knowledge(self, scope: Scope) -> list[KnowledgeBase]:
        """The scope's knowledge bases, oldest first."""

    def delete_knowledge(self, scope: Scope, kb_id: str) -> int:
        """Delete a knowledge base of the scope with its chunks; the chunks deleted, or -1 if
        the scope holds no knowledge base ``kb_id``."""


class Backend(
    Store, FeedbackRecords, InspectorReads, RowCopy, ApiKeyStore, KnowledgeStore, Protocol
):
    """Everything a backend stores: what ``open_store`` returns and ``Memory`` runs on. A backend
    may also be a :class:`ReadAhead`."""


# Whether a type of store reads ahead: a protocol's isinstance check looks up every method,
# and a recall asks it several times.
_READS_AHEAD: dict[type, bool] = {}


def read_ahead(store: object) -> ReadAhead | None:
    """``store`` as a :class:`ReadAhead` when it reads ahead, else ``None``."""
    kind = type(store)
    found = _READS_AHEAD.get(kind)
    if found is None:
        found = _READS_AHEAD[kind] = isinstance(store, ReadAhead)
    return cast(ReadAhead, store) if found else None

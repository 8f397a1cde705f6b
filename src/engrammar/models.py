"""Records returned by the public API. Plain dataclasses; ``to_dict()`` gives JSON-ready data."""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, NotRequired, TypedDict

__all__ = [
    "AddAnswer",
    "AddResult",
    "AddedIds",
    "AlignedPath",
    "DecisionReview",
    "Doc",
    "Edge",
    "EdgeChange",
    "EmbedderFacts",
    "ExplainedEdge",
    "ExplainedEdges",
    "Explanation",
    "FeedbackEvent",
    "FeedbackResult",
    "ForgetResult",
    "History",
    "HistoryEntry",
    "KnowledgeBase",
    "KnowledgeBaseList",
    "KnowledgeChunk",
    "KnowledgeDeleted",
    "KnowledgeSearchResult",
    "LearnedRecord",
    "LearnedSource",
    "LearningPoint",
    "LoggedEvent",
    "MemoryLearning",
    "MemoryList",
    "MemoryRating",
    "MemoryRecord",
    "Neighbourhood",
    "Path",
    "PreferencePair",
    "RankShift",
    "RankShifts",
    "RecallFilter",
    "RecallResult",
    "ReplicaFacts",
    "Scope",
    "ScopeList",
    "ScopeRow",
    "ScoredMemory",
    "SearchResult",
    "SignalGiven",
    "Skipped",
    "Stats",
    "StoreCounts",
    "StoreFacts",
    "StoreStats",
    "TakenSide",
    "Tension",
    "TensionRating",
    "TensionRow",
    "Tensions",
    "Timeline",
    "TimelineItem",
    "UndoResult",
    "Undone",
]

KINDS = ("message", "fact", "decision", "preference", "event")
ROLES = ("user", "assistant", "system", "tool")
#: OpenAI Responses items other than messages that ``add`` takes: calls and their outputs
#: are stored as tool traffic; reasoning and hosted tools' items are skipped.
RESPONSES_ITEM_TYPES = (
    "function_call", "custom_tool_call", "mcp_call", "function_call_output",
    "custom_tool_call_output", "reasoning", "web_search_call", "file_search_call",
    "computer_call", "computer_call_output", "code_interpreter_call", "image_generation_call",
    "local_shell_call", "local_shell_call_output", "shell_call", "shell_call_output",
    "apply_patch_call", "apply_patch_call_output", "mcp_list_tools", "mcp_approval_request",
    "mcp_approval_response", "item_reference", "compaction",
)  # fmt: skip
EDGE_KINDS = ("semantic", "sequence", "entity", "supersedes", "contradicts")
#: Why ``add`` skipped a message: ``empty`` (no text and no tool call or result) or
#: ``no_text`` (only images, audio, files or other parts without text).
SKIP_REASONS = ("empty", "no_text")
#: The kinds of feedback record, as ``undo``, the timeline and ``stats`` name them.
RECORD_KINDS = (
    "feedback_event", "decision_review", "preference_pair", "memory_rating", "logged_event",
)  # fmt: skip
#: What ``undo`` can take back: a record, or the reply ``feedback`` applied to a recall.
UNDO_KINDS = (*RECORD_KINDS, "reply")


@dataclass(frozen=True)
class Doc:
    """What a field of an answer says besides its type (``Annotated[int, Doc(...)]``): a
    description, a least value, the values it takes. The OpenAPI document reads it."""

    text: str = ""
    minimum: int | None = None
    choices: tuple[str, ...] | None = None


#: A number of things: never negative.
Count = Annotated[int, Doc(minimum=0)]


def iso(ts: float) -> str:
    """``ts`` (epoch seconds) as ISO-8601 UTC; a stored value no date can show (written by
    hand or by an older version) comes back as ``"invalid time <value>"`` rather than an
    error, so one bad row never takes its scope down."""
    try:
        return datetime.fromtimestamp(ts, tz=UTC).isoformat()
    except (OverflowError, ValueError, OSError, TypeError):
        return f"invalid time {ts!r}"


def json_time(ts: float) -> float | None:
    """``ts`` as JSON can carry it: ``None`` for a stored value that is not a finite number."""
    return ts if isinstance(ts, int | float) and math.isfinite(ts) else None


#: Separates a stored idempotency key from the user whose key space it belongs to.
KEY_SEPARATOR = "\x1f"


def idempotency_key(source_event_id: str | None, user_id: str | None) -> str | None:
    """How ``source_event_id`` is stored: within its user's own key space when the event
    has a user, so one user's key neither reveals nor blocks another's."""
    if source_event_id is None or user_id is None:
        return source_event_id
    return f"{source_event_id}{KEY_SEPARATOR}{user_id}"


def visible_key(stored: str | None) -> str | None:
    """The caller's own ``source_event_id`` from its stored form."""
    return None if stored is None else stored.split(KEY_SEPARATOR, 1)[0]


def _json_copy(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars)."""
    if isinstance(value, dict):
        return {k: _json_copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_copy(v) for v in value]
    return value


class _Dict:
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload, no-any-return]


@dataclass(frozen=True)
class Skipped(_Dict):
    """A message of ``add`` that was not stored: its position in the call and why
    (``empty``: no text and no tool call or result; ``no_text``: only images, audio, files or
    other parts without text)."""

    index: Annotated[int, Doc(minimum=0)]
    reason: Annotated[str, Doc(choices=SKIP_REASONS)]


class AddResult(list[str | None]):
    """What ``add`` returns: a list with one entry per message, in order: the memory's id
    (an exact duplicate's stored id), or None for a message that was skipped; ``skipped``
    says which positions and why. With nothing skipped it is the plain list of ids it
    always was."""

    def __init__(self, ids: list[str | None], skipped: list[Skipped] | None = None) -> None:
        super().__init__(ids)
        self.skipped: list[Skipped] = list(skipped or [])

    @property
    def stored(self) -> list[str]:
        """The ids of the stored messages, in order (skipped positions left out)."""
        return [i for i in self if i is not None]

    def to_dict(self) -> AddedIds:
        return {"ids": list(self), "skipped": [s.to_dict() for s in self.skipped]}


@dataclass(frozen=True)
class Scope(_Dict):
    """Who a memory belongs to. ``workspace`` always; the other keys filter when given."""

    workspace: str
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None

    def owner(self) -> ScopeFields:
        """The four keys as the keyword arguments of a record that belongs to this scope."""
        return {
            "workspace": self.workspace,
            "user_id": self.user_id,
            "agent_id": self.agent_id,
            "session_id": self.session_id,
        }


class ScopeFields(TypedDict):
    """The keys every scoped record carries (see :meth:`Scope.owner`)."""

    workspace: str
    user_id: str | None
    agent_id: str | None
    session_id: str | None


@dataclass
class MemoryRecord(_Dict):
    """One stored memory (a node of the memory graph).

    ``valid_until`` and ``superseded_by``: when a newer memory contradicted this one (a changed
    value, a negation, "I moved to ..."), the time it stopped being current and the id of the
    memory that replaced it; ``None`` while it is current. A superseded memory stays stored
    and recallable (see ``recall.supersession``).
    """

    id: str
    content: str
    role: str
    kind: str
    workspace: str
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    created_at: float
    updated_at: float
    status: str = "active"
    metadata: dict[str, Any] = field(default_factory=dict)
    valid_until: float | None = None
    superseded_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        # Field by field: recall returns dozens of these per call, and dataclasses.asdict's
        # generic recursion was ~3 % of a loaded server's time.
        return {
            "id": self.id,
            "content": self.content,
            "role": self.role,
            "kind": self.kind,
            "workspace": self.workspace,
            "user_id": self.user_id,
            "agent_id": self.agent_id,
            "session_id": self.session_id,
            "created_at": json_time(self.created_at),
            "updated_at": json_time(self.updated_at),
            "status": self.status,
            "metadata": _json_copy(self.metadata),
            "valid_until": self.valid_until,
            "superseded_by": self.superseded_by,
            "created_at_iso": iso(self.created_at),
        }


@dataclass
class ScoredMemory(_Dict):
    """A memory with the score that ranked it and every component of that score."""

    memory: MemoryRecord
    score: float
    components: dict[str, float] = field(default_factory=dict)
    via: str = "search"  # "search" (a direct hit) or "graph" (reached along a path)
    note: str | None = None  # e.g. "prior decision: ..." for decisions surfaced from feedback
    # For a memory longer than ``excerpt_chars``: the window of it the query is about.
    excerpt: str | None = None

    @property
    def id(self) -> str:
        return self.memory.id

    @property
    def content(self) -> str:
        return self.memory.content

    def to_dict(self) -> dict[str, Any]:
        return {
            "memory": self.memory.to_dict(),
            "score": self.score,
            "components": dict(self.components),
            "via": self.via,
            "note": self.note,
            "excerpt": self.excerpt,
        }


@dataclass
class Edge(_Dict):
    """A weighted, directed link between two memories of one scope."""

    src: str
    dst: str
    kind: str
    weight: float
    updated_at: float


@dataclass
class Path(_Dict):
    """A walk through the memory graph that recall followed from a seed memory."""

    nodes: list[str]
    weights: list[float]
    kinds: list[str]
    score: float

    def to_dict(self) -> dict[str, Any]:
        # Field by field: every recall records its paths, and dataclasses.asdict's generic
        # recursion cost more than the graph walk that found them.
        return {
            "nodes": list(self.nodes),
            "weights": list(self.weights),
            "kinds": list(self.kinds),
            "score": self.score,
        }


@dataclass
class Tension(_Dict):
    """Two recalled memories that contradict each other; ``newer`` supersedes when known."""

    a: str
    b: str
    kind: str  # "negation", "changed_value", "superseded"
    confidence: float
    newer: str | None = None
    reason: str = ""


def json_key(value: Any) -> tuple[str, Any]:
    """A JSON scalar as filters compare it: a boolean is no number (``True`` does not match
    ``1``), an integer equals the same float (``1`` matches ``1.0``), as JSON (and
    PostgreSQL's ``jsonb``) compares them."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", float(value))
    if value is None:
        return ("null", None)
    if isinstance(value, str):
        return ("string", value)
    return ("other", repr(value))  # a list or object never equals a scalar


@dataclass(frozen=True)
class RecallFilter:
    """Which memories ``recall`` and ``search`` may return, beyond their scope (see
    docs/recall.md, "Filters"); ``None`` (or no metadata condition) means no condition.

    ``metadata``: per top-level key, the JSON scalars its value may equal (one for equality,
    several for ``in``); ``null`` also matches a memory without the key. ``kinds`` and
    ``roles``: the allowed values. ``since`` (inclusive) and ``until`` (exclusive): bounds on
    ``created_at``, in epoch seconds.
    """

    metadata: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    kinds: tuple[str, ...] | None = None
    roles: tuple[str, ...] | None = None
    since: float | None = None
    until: float | None = None

    def matches(self, record: MemoryRecord) -> bool:
        """Whether ``record`` passes every condition."""
        return self.matches_fields(record.kind, record.role, record.created_at, record.metadata)

    def matches_fields(
        self, kind: str, role: str, created_at: float, metadata: dict[str, Any] | None
    ) -> bool:
        if self.kinds is not None and kind not in self.kinds:
            return False
        if self.roles is not None and role not in self.roles:
            return False
        if self.since is not None and not created_at >= self.since:
            return False
        if self.until is not None and not created_at < self.until:
            return False
        return all(self.metadata_matches(key, metadata) for key, _ in self.metadata)

    def metadata_matches(self, key: str, metadata: dict[str, Any] | None) -> bool:
        """Whether ``metadata`` passes the condition on ``key`` (true when there is none)."""
        allowed = self._allowed.get(key)
        return allowed is None or json_key((metadata or {}).get(key)) in allowed

    def allowed(self, key: str) -> frozenset[tuple[str, Any]] | None:
        """The :func:`json_key` of every value the condition on ``key`` allows (``None``:
        no condition on it)."""
        return self._allowed.get(key)

    @functools.cached_property
    def _allowed(self) -> dict[str, frozenset[tuple[str, Any]]]:
        return {key: frozenset(json_key(v) for v in values) for key, values in self.metadata}


@dataclass
class RecallResult(_Dict):
    """What ``Memory.recall`` returns: ranked memories, the paths behind them, and conflicts."""

    recall_id: str
    query: str
    memories: list[ScoredMemory]
    paths: list[Path] = field(default_factory=list)
    tensions: list[Tension] = field(default_factory=list)
    formatted: str = ""
    knowledge: list[KnowledgeChunk] = field(default_factory=list)
    # Standing preferences of the scope that bear on the query, whether or not search ranked
    # them (``Config.preferences_limit``); ``formatted`` lists them first.
    preferences: list[ScoredMemory] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "recall_id": self.recall_id,
            "query": self.query,
            "memories": [m.to_dict() for m in self.memories],
            "paths": [p.to_dict() for p in self.paths],
            "tensions": [t.to_dict() for t in self.tensions],
            "formatted": self.formatted,
            "knowledge": [k.to_dict() for k in self.knowledge],
            "preferences": [m.to_dict() for m in self.preferences],
        }


@dataclass
class KnowledgeBase(_Dict):
    """A named document (or set of passages) of a scope, stored as embedded chunks."""

    id: str
    name: str
    workspace: str
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    chunk_count: int
    created_at: float
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class KnowledgeChunk(_Dict):
    """One passage of a knowledge base; ``score`` is its relevance to a search, in [0, 1]."""

    id: str
    kb_id: str
    position: int
    content: str
    workspace: str
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    created_at: float
    metadata: dict[str, Any] = field(default_factory=dict)
    score: float = 0.0


# -- feedback records ("Decisions and feedback" of the design; field names are part of the contract) --
FEEDBACK_STATES = ("corrected", "adopted", "rejected")
REVIEW_OUTCOMES = ("success", "partial", "failure", "unknown")
RATING_VERDICTS = ("accepted", "rejected", "corrected")


@dataclass
class FeedbackEvent(_Dict):
    """What happened to an agent's output: corrected, adopted or rejected, and why.

    ``decision_memory_id`` is the memory of kind ``decision`` the event created in the same
    transaction (the corrected or adopted output, which recall surfaces for similar contexts);
    ``None`` for a rejected output, which is never stored as an answer.
    """

    id: str
    workspace: str
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    input_context: str
    ai_output: str
    user_reaction: str | None
    user_correction: str | None
    corrected_output: str | None
    state: str
    reason: str | None
    source_event_id: str | None
    created_at: float
    metadata: dict[str, Any] = field(default_factory=dict)
    decision_memory_id: str | None = None
    source: str | None = None  # who gave it: 'key:<key_id>', 'agent:<agent_id>' or given


@dataclass
class DecisionReview(_Dict):
    """A later look at a feedback event; ``reversed`` when ``final_decision`` differs from the
    event's ``state``. ``decision_memory_id`` is the memory that stands after the review."""

    id: str
    workspace: str
    user_id: str | None
    agent_id: str | None
    event_id: str
    final_decision: str
    outcome: str
    confidence: float
    reversed: bool
    created_at: float
    reason: str | None = None
    decision_memory_id: str | None = None
    source: str | None = None  # who gave it: 'key:<key_id>', 'agent:<agent_id>' or given


@dataclass
class PreferencePair(_Dict):
    """An accepted and a rejected output for the same context; ``memory_id`` is the memory of
    kind ``preference`` holding the accepted output."""

    id: str
    workspace: str
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    context: str
    accepted_output: str
    rejected_output: str
    weight: float
    created_at: float
    memory_id: str | None = None
    source: str | None = None  # who gave it: 'key:<key_id>', 'agent:<agent_id>' or given


@dataclass
class LoggedEvent(_Dict):
    """Any other event an agent wants on record (a checkpoint, a tool run) with a JSON payload."""

    id: str
    workspace: str
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    kind: str
    payload: dict[str, Any]
    created_at: float
    source: str | None = None  # who gave it: 'key:<key_id>', 'agent:<agent_id>' or given


@dataclass
class MemoryRating(_Dict):
    """Whether one memory helped (MCP ``memory_feedback``): accepted, rejected or corrected.

    With a ``context`` (the query of ``recall_id``, or given) the rating counts for similar
    contexts only; without one it counts wherever the memory is recalled.
    ``correction_memory_id`` is the memory created from ``correction``, if one was given.
    """

    id: str
    workspace: str
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    memory_id: str
    verdict: str
    correction: str | None
    weight: float
    created_at: float
    recall_id: str | None = None
    context: str | None = None
    correction_memory_id: str | None = None
    source: str | None = None  # who gave it: 'key:<key_id>', 'agent:<agent_id>' or given


# -- the answers that are JSON objects ------------------------------------------------------
# What the methods of ``Memory`` (and the REST envelopes around them) return as plain dicts;
# the OpenAPI document derives their schemas from these types. A field typed
# ``Annotated[dict[str, Any], <model>]`` holds that model's ``to_dict()``.
MemoryJSON = Annotated[dict[str, Any], MemoryRecord]
EdgeJSON = Annotated[dict[str, Any], Edge]
PathJSON = Annotated[dict[str, Any], Path]


class AddedIds(TypedDict):
    """``AddResult.to_dict()``."""

    ids: Annotated[list[str | None], Doc("One per message, in order: its id, or null if skipped.")]
    skipped: Annotated[
        list[Annotated[dict[str, Any], Skipped]],
        Doc(
            "The messages not stored: position and reason (`empty`: no text and no tool call "
            "or result; `no_text`: only images, audio, files or other parts without text)."
        ),
    ]


class AddAnswer(AddedIds):
    """What REST and MCP answer to ``add``: the ids, what was skipped, the workspace."""

    workspace: str


class MemoryList(TypedDict):
    """A page of memories and how many match in all."""

    memories: list[MemoryJSON]
    total: Annotated[int, Doc("Matches in all.", minimum=0)]


class SearchResult(TypedDict):
    """What REST answers to ``search``: the query and the memories found, best first."""

    query: str
    results: list[Annotated[dict[str, Any], ScoredMemory]]


class KnowledgeSearchResult(TypedDict):
    """What REST answers to ``search_knowledge``: the query and the passages, best first."""

    query: str
    results: list[Annotated[dict[str, Any], KnowledgeChunk]]


class ForgetResult(TypedDict):
    """How many memories ``forget`` deleted."""

    deleted: Count


class HistoryEntry(TypedDict):
    """One change of a memory (``Memory.history``): its revision, what was done (``add``,
    ``update``, ``status``, ``metadata``, ``supersede``, ``restore``, ``forget``), the text
    before and after, why, and when."""

    rev: int
    op: str
    before: str | None
    after: str | None
    reason: str | None
    at: float


class History(TypedDict):
    """A memory's history over REST."""

    memory_id: str
    history: list[HistoryEntry]


class Undone(TypedDict):
    """What undoing a record took back with it."""

    undone: Annotated[list[str], Doc("The ids taken back (an event's reviews go with it).")]
    memories_removed: Annotated[
        list[str],
        Doc("A decision, preference or correction the record stored and nothing else used."),
    ]
    edges_restored: Count


class UndoResult(Undone):
    """What ``undo`` took back: the record, whose it was, and what went with it."""

    record_id: str
    kind: Annotated[str, Doc(choices=UNDO_KINDS)]
    user_id: str | None
    source: str | None


class AlignedPath(TypedDict):
    """How one recalled path lined up with the reply, and what feedback did to its edges."""

    nodes: list[str]
    alignment: float
    action: Annotated[str, Doc(choices=("strengthen", "weaken", "keep"))]


class TakenSide(TypedDict):
    """A tension the reply took a side in: the memory it agreed with, and the other."""

    agreed: str
    other: str


class FeedbackResult(TypedDict):
    """What ``feedback`` did with a reply."""

    strengthened: Annotated[int, Doc("Edges whose weight rose.", minimum=0)]
    weakened: Annotated[int, Doc("Edges whose weight fell.", minimum=0)]
    recall_id: str | None
    query: Annotated[
        str | None,
        Doc("The query of the recall the reply was applied to (or refused for)."),
    ]
    consumed: bool
    paths: NotRequired[list[AlignedPath]]
    tensions: NotRequired[list[TakenSide]]
    drawn_on: NotRequired[
        Annotated[list[str], Doc("Recalled memories the reply drew on (reply signals).")]
    ]
    left: NotRequired[Annotated[list[str], Doc("Recalled memories the reply left out.")]]
    message: NotRequired[Annotated[str, Doc("Why nothing changed (or that no graph link did).")]]


class LearnedRecord(TypedDict):
    """A feedback record that moved a memory for a query, with its share now."""

    record_id: NotRequired[
        Annotated[str, Doc("Absent for another API key's record seen by a user-bound key.")]
    ]
    signal: str
    source: str | None
    contribution: float


class LearnedSource(TypedDict):
    """The contributions of one source, summed."""

    source: str | None
    contribution: float
    placement: NotRequired[
        Annotated[float, Doc("How far its acceptance or reply lifted the relevance.")]
    ]


class ExplainedEdge(TypedDict):
    """An edge touching the explained memory."""

    src: str
    dst: str
    kind: str
    weight: float


ExplainedEdges = TypedDict(
    "ExplainedEdges", {"out": list[ExplainedEdge], "in": list[ExplainedEdge]}
)


class Explanation(TypedDict):
    """Why a memory ranks where it does for a query (``Memory.explain``)."""

    memory_id: str
    content: str
    query: str
    rank: Annotated[int | None, Doc("Among everything recall scored (null: not scored).")]
    in_results: Annotated[bool, Doc("Whether the rank is within `limit`.")]
    limit: int
    via: str | None
    is_seed: bool
    score: float | None
    components: dict[str, float]
    best_path: PathJSON | None
    paths: list[PathJSON]
    edges: ExplainedEdges
    score_to_beat: float | None
    learned: dict[str, float]
    note: str | None
    formula: str
    records: Annotated[
        list[LearnedRecord],
        Doc(
            "Each feedback record that moved the memory for this query, with its share of "
            "`learned` now (after decay); `record_id` can be undone."
        ),
    ]
    sources: Annotated[list[LearnedSource], Doc("The contributions summed per source.")]


class EmbedderFacts(TypedDict):
    name: str
    dim: int


class ReplicaFacts(TypedDict):
    """A read replica of a PostgreSQL store: its URL (password hidden), whether it is in
    use, how many reads it served."""

    url: str
    up: bool
    reads: int


class StoreFacts(TypedDict):
    """The backend's part of the counts: its name, where it lives, its size."""

    store: Annotated[str, Doc(choices=("sqlite", "postgresql"))]
    file: NotRequired[Annotated[str, Doc("SQLite: the file (not shown to a remote client).")]]
    url: NotRequired[Annotated[str, Doc("PostgreSQL: the server (password hidden).")]]
    bytes_on_disk: NotRequired[Annotated[int, Doc("Not shown to a remote client.", minimum=0)]]
    replicas: NotRequired[list[ReplicaFacts]]


class StoreCounts(TypedDict):
    """What a store counts of a scope."""

    memories: Count
    memories_by_kind: dict[str, int]
    edges: Count
    recalls: Count
    feedback_records: Annotated[dict[str, int], Doc("Per record kind, and `reply`.")]


class StoreStats(StoreCounts, StoreFacts):
    """What a store says of a scope: its counts, and the backend's facts."""


class Stats(StoreStats):
    """Counts of a scope (``Memory.stats``), with the embedder in use."""

    embedder: EmbedderFacts


class KnowledgeBaseList(TypedDict):
    knowledge_bases: list[Annotated[dict[str, Any], KnowledgeBase]]


class KnowledgeDeleted(TypedDict):
    """A deleted knowledge base and how many chunks went with it."""

    kb_id: str
    deleted: Count


# -- the web inspector's reads --------------------------------------------------------------
class ScopeRow(TypedDict):
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    memories: Annotated[int, Doc(minimum=1)]


class ScopeList(TypedDict):
    """The distinct scopes of a workspace with their memory counts."""

    workspace: str
    scopes: list[ScopeRow]
    truncated: Annotated[bool, Doc("Whether there were more rows than `limit`.")]


class EdgeChange(TypedDict):
    """A change feedback made to an edge's weight."""

    src: str
    dst: str
    kind: str
    delta: float
    weight: float | None
    recall_id: str | None
    at: float


class Neighbourhood(TypedDict):
    """A memory's graph neighbourhood and the weight changes of its edges."""

    memory_id: str
    depth: int
    nodes: list[MemoryJSON]
    edges: list[EdgeJSON]
    changes: list[EdgeChange]


class SignalGiven(TypedDict):
    """A feedback signal on a memory: its kind, the record to undo, the verdict, who gave it."""

    source: Annotated[str, Doc(choices=("rating", "pair", "reply"))]
    id: Annotated[str, Doc("The record to undo (a reply's: its recall).")]
    verdict: str
    given_by: str | None


class LearningPoint(SignalGiven):
    """A feedback signal on a memory and the learned multiplier after it."""

    at: float
    value: float
    weight: float
    multiplier: float


class MemoryLearning(TypedDict):
    memory_id: str
    signals: list[LearningPoint]


class TimelineItem(TypedDict):
    """One piece of feedback on the time line; ``record`` is the record as its own read
    gives it (a reply signal: its row)."""

    type: Annotated[str, Doc(choices=(*RECORD_KINDS, "reply_signal"))]
    id: str
    at: float
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    record: dict[str, Any]


class Timeline(TypedDict):
    items: list[TimelineItem]
    counts: Annotated[dict[str, int], Doc("Records per kind (reply signals as far as read).")]


class RankShift(TypedDict):
    """A memory feedback touched: its rank in the recall rated, and for the query now."""

    recall_id: str
    query: str
    recalled_at: float
    memory_id: str
    signal: float
    rank_before: int
    rank_after: int | None


class RankShifts(TypedDict):
    shifts: list[RankShift]


class TensionRating(TypedDict):
    rating_id: str
    verdict: str
    at: float


class TensionRow(TypedDict):
    """Two memories that contradict each other, and the ratings each has had."""

    a: MemoryJSON
    b: MemoryJSON
    kind: str
    confidence: float | None
    reason: str
    newer: str
    ratings: Annotated[dict[str, list[TensionRating]], Doc("Per memory id, oldest first.")]


class Tensions(TypedDict):
    tensions: list[TensionRow]

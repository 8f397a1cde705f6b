"""Records returned by the public API. Plain dataclasses; ``to_dict()`` gives JSON-ready data."""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypedDict

__all__ = [
    "AddResult",
    "DecisionReview",
    "Edge",
    "FeedbackEvent",
    "KnowledgeBase",
    "KnowledgeChunk",
    "LoggedEvent",
    "MemoryRating",
    "MemoryRecord",
    "Path",
    "PreferencePair",
    "RecallFilter",
    "RecallResult",
    "Scope",
    "ScoredMemory",
    "Skipped",
    "Tension",
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

    index: int
    reason: str


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

    def to_dict(self) -> dict[str, Any]:
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

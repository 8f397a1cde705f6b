"""Records returned by the public API. Plain dataclasses; ``to_dict()`` gives JSON-ready data."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "Edge",
    "MemoryRecord",
    "Path",
    "RecallResult",
    "Scope",
    "ScoredMemory",
    "Tension",
]

KINDS = ("message", "fact", "decision", "preference", "event")
ROLES = ("user", "assistant", "system", "tool")
EDGE_KINDS = ("semantic", "sequence", "entity", "supersedes", "contradicts")


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat()


class _Dict:
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload, no-any-return]


@dataclass(frozen=True)
class Scope(_Dict):
    """Who a memory belongs to. ``workspace`` always; the other keys filter when given."""

    workspace: str
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None


@dataclass
class MemoryRecord(_Dict):
    """One stored memory (a node of the memory graph)."""

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

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["created_at_iso"] = iso(self.created_at)
        return d


@dataclass
class ScoredMemory(_Dict):
    """A memory with the score that ranked it and every component of that score."""

    memory: MemoryRecord
    score: float
    components: dict[str, float] = field(default_factory=dict)
    via: str = "search"  # "search" (a direct hit) or "graph" (reached along a path)
    note: str | None = None  # e.g. "prior decision: ..." for decisions surfaced from feedback

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


@dataclass
class Tension(_Dict):
    """Two recalled memories that contradict each other; ``newer`` supersedes when known."""

    a: str
    b: str
    kind: str  # "negation", "changed_value", "superseded"
    confidence: float
    newer: str | None = None
    reason: str = ""


@dataclass
class RecallResult(_Dict):
    """What ``Memory.recall`` returns: ranked memories, the paths behind them, and conflicts."""

    recall_id: str
    query: str
    memories: list[ScoredMemory]
    paths: list[Path] = field(default_factory=list)
    tensions: list[Tension] = field(default_factory=list)
    formatted: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "recall_id": self.recall_id,
            "query": self.query,
            "memories": [m.to_dict() for m in self.memories],
            "paths": [p.to_dict() for p in self.paths],
            "tensions": [t.to_dict() for t in self.tensions],
            "formatted": self.formatted,
        }

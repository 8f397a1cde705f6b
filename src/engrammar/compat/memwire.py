"""Drop-in replacement for MemWire (``from memwire import MemWire, MemWireConfig``).

Change only the import line of MemWire code::

    from engrammar.compat.memwire import MemWire, MemWireConfig

    memory = MemWire(config=MemWireConfig(qdrant_path="./memwire_data"))
    memory.add(user_id="alice", messages=[{"role": "user", "content": "I write docs first."}])
    result = memory.recall("How do you approach projects?", user_id="alice")
    result.formatted, result.supporting, result.conflicting
    memory.feedback(response=reply, user_id="alice")     # or assistant_response=reply

Everything is stored by engrammar (SQLite under ``qdrant_path``; no Qdrant server, no
network). ``MemWireConfig`` accepts MemWire's option names. Those with an engrammar
counterpart are passed on (see :data:`MAPPED`); the others are accepted so existing code keeps
working and are ignored because they describe machinery engrammar does not have (see
:data:`IGNORED` for why, option by option).
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config import Config
from ..embed import Embedder
from ..errors import ValidationError
from ..memory import Memory
from ..models import MemoryRecord, RecallResult

__all__ = ["IGNORED", "MAPPED", "MemWire", "MemWireConfig", "MemWireRecallResult", "RecallPath"]

#: MemWire option -> engrammar ``Config`` field it sets.
MAPPED = {
    "qdrant_path": "path",
    "database_url": "store",
    "org_id": "workspace",
    "edge_weight_min": "edge_weight_min",
    "edge_weight_max": "edge_weight_max",
    "feedback_strengthen_rate": "feedback_strengthen_rate",
    "feedback_weaken_rate": "feedback_weaken_rate",
    "feedback_align_strengthen": "feedback_align_strengthen",
    "feedback_align_weaken": "feedback_align_weaken",
    "recall_max_paths": "graph_max_paths",
    "recall_max_depth": "graph_depth",
    "recall_seed_top_k": "graph_seeds",
    "recall_bfs_max_branch": "graph_fanout",
    "embedding_cache_maxsize": "embed_cache_size",
}

#: MemWire options accepted and ignored, with the reason.
IGNORED = {
    "qdrant_url": "no Qdrant: vectors live in engrammar's own store",
    "qdrant_api_key": "no Qdrant: vectors live in engrammar's own store",
    "qdrant_collection_prefix": "no Qdrant collections; use org_id (workspace) to separate data",
    "model_name": "the offline all-MiniLM-L6-v2 model is built in (MemWire's default model)",
    "embedding_dim": "given by the embedder (384 for the built-in model)",
    "sparse_model_name": "keyword search is BM25 over the store; no sparse model",
    "reranker_model_name": "no cross-encoder reranker",
    "use_hybrid_search": "search is always hybrid (vector + BM25)",
    "use_reranking": "no cross-encoder reranker",
    "displacement_threshold": "edges come from whole-message similarity, rare terms and order "
    "(graph_semantic_threshold), not token displacement",
    "node_merge_similarity": "exact duplicates collapse; near-duplicates stay separate memories",
    "edge_weight_default": "initial weights follow the edge kind (similarity, IDF, sequence)",
    "edge_decay_rate": "edges change only through feedback",
    "edge_reinforce_amount": "reinforcement is feedback_strengthen_rate x alignment",
    "classification_threshold": "no zero-shot category classifier",
    "default_anchors": "no zero-shot category classifier",
    "recall_min_relevance": "recall returns the best `limit` memories, ranked",
    "recall_bfs_max_paths": "walks are bounded by graph_depth, graph_fanout and graph_seeds",
    "tension_threshold": "tensions are judged by negation, changed values and supersession, "
    "gated by tension_min_similarity",
    "recency_weight": "no recency term in the ranking",
    "recency_halflife": "no recency term in the ranking",
    "cross_memory_recent_limit": "edges are chosen among all memories of the scope",
    "background_threads": "writes are synchronous single transactions",
}


@dataclass
class MemWireConfig:
    """MemWire's configuration names (see the module docstring for what each does here).

    ``qdrant_path`` is the folder of the store (``":memory:"`` = a temporary folder removed on
    ``close``); ``database_url`` may name a ``postgresql://`` server store instead. Recall
    options left at ``None`` keep engrammar's defaults. Any other engrammar setting can be given
    in ``engrammar`` (a dict of :class:`~engrammar.Config` fields).
    """

    qdrant_path: str | None = None
    database_url: str | None = None
    org_id: str = "default"
    user_id: str = "default"
    # Feedback loop: the seed's parameters and defaults.
    feedback_strengthen_rate: float = 0.1
    feedback_weaken_rate: float = 0.05
    feedback_align_strengthen: float = 0.5
    feedback_align_weaken: float = 0.2
    edge_weight_min: float = 0.01
    edge_weight_max: float = 1.0
    # Recall (None: engrammar's default).
    recall_max_paths: int | None = None
    recall_max_depth: int | None = None
    recall_seed_top_k: int | None = None
    recall_bfs_max_branch: int | None = None
    embedding_cache_maxsize: int | None = None
    # Accepted and ignored (see IGNORED).
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    qdrant_collection_prefix: str = ""
    model_name: str = "sentence-transformers/all-MiniLM-L6-v2"
    embedding_dim: int = 384
    sparse_model_name: str | None = None
    reranker_model_name: str | None = None
    use_hybrid_search: bool = True
    use_reranking: bool = False
    displacement_threshold: float = 0.15
    node_merge_similarity: float = 0.85
    edge_weight_default: float = 0.5
    edge_decay_rate: float = 0.02
    edge_reinforce_amount: float = 0.1
    classification_threshold: float = 0.05
    default_anchors: dict[str, list[str]] | None = None
    recall_min_relevance: float = 0.25
    recall_bfs_max_paths: int = 200
    tension_threshold: float = 0.6
    recency_weight: float = 0.3
    recency_halflife: float = 3600.0
    cross_memory_recent_limit: int = 50
    background_threads: int = 2
    engrammar: dict[str, Any] = field(default_factory=dict)

    def to_config(self) -> tuple[Config, str | None]:
        """The engrammar ``Config`` (and a temporary folder to remove on close, if any)."""
        values: dict[str, Any] = {}
        temp = None
        if self.qdrant_path == ":memory:":
            temp = tempfile.mkdtemp(prefix="engrammar-memwire-")
            values["path"] = temp
        elif self.qdrant_path is not None:
            values["path"] = self.qdrant_path
        if self.database_url is not None:
            url = self.database_url
            if url.startswith(("sqlite:///", "postgresql://", "postgres://")):
                values["store"] = url
            else:
                raise ValidationError("database_url", "must be a sqlite:/// or postgresql:// URL")
        for name, target in MAPPED.items():
            if name in ("qdrant_path", "database_url"):
                continue
            value = getattr(self, name)
            if value is not None:
                values[target] = value
        unknown = set(self.engrammar) - {f.name for f in dataclasses.fields(Config)}
        if unknown:
            raise ValidationError("engrammar", f"unknown engrammar settings {sorted(unknown)}")
        values.update(self.engrammar)
        return Config(**values), temp


@dataclass
class RecallPath:
    """A recalled chain of memories (MemWire's shape): the memories, edge weights, score."""

    memories: list[MemoryRecord]
    weights: list[float]
    kinds: list[str]
    score: float

    @property
    def nodes(self) -> list[str]:
        return [m.id for m in self.memories]

    @property
    def total_weight(self) -> float:
        """Mean edge weight along the path (0 for a single memory)."""
        return sum(self.weights) / len(self.weights) if self.weights else 0.0


@dataclass
class MemWireRecallResult:
    """MemWire's recall result: ``supporting`` and ``conflicting`` paths, ``formatted`` text.

    ``supporting`` holds the graph paths free of conflict and, as single-memory paths, the
    recalled memories no path covers; ``conflicting`` holds one two-memory path per tension.
    The engrammar result is in ``result``.
    """

    query: str
    supporting: list[RecallPath]
    conflicting: list[RecallPath]
    formatted: str
    result: RecallResult
    knowledge: list[Any] = field(default_factory=list)

    @property
    def has_tensions(self) -> bool:
        return bool(self.conflicting)

    @property
    def all_paths(self) -> list[RecallPath]:
        return self.supporting + self.conflicting

    @property
    def recall_id(self) -> str:
        return self.result.recall_id

    @property
    def memories(self) -> list[MemoryRecord]:
        return [m.memory for m in self.result.memories]


class MemWire:
    """MemWire's client API on top of :class:`~engrammar.Memory`.

    Args:
        user_id: the default user of calls that name none (MemWire's constructor argument).
        agent_id: the default agent.
        config: a :class:`MemWireConfig`.
        embedder: an embedder to use instead of the built-in model (tests).
    """

    def __init__(
        self,
        user_id: str = "default",
        agent_id: str | None = None,
        config: MemWireConfig | None = None,
        *,
        embedder: Embedder | None = None,
    ) -> None:
        self.config = config or MemWireConfig()
        if user_id != "default" or self.config.user_id == "default":
            self.config.user_id = user_id
        self.user_id = self.config.user_id
        self.agent_id = agent_id
        engrammar_config, self._temp = self.config.to_config()
        self.memory = Memory(engrammar_config, embedder=embedder)

    def _user(self, user_id: str | None) -> str:
        return user_id or self.user_id

    def _agent(self, agent_id: str | None) -> str | None:
        return agent_id or self.agent_id

    def add(
        self,
        messages: Sequence[dict[str, Any]] | str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[MemoryRecord]:
        """Store messages; returns the stored memories (MemWire returns records too)."""
        ids = self.memory.add(
            messages,
            session_id=session_id,
            metadata=metadata,
            user_id=self._user(user_id),
            agent_id=self._agent(agent_id),
        )
        found = self.memory.store.get_memories(self.memory.config.workspace, ids.stored)
        return [found[i] for i in ids.stored if i in found]

    def recall(
        self,
        query: str,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        limit: int | None = None,
    ) -> MemWireRecallResult:
        """Recall memories, paths and tensions for ``query``."""
        result = self.memory.recall(
            query,
            session_id=session_id,
            limit=limit,
            user_id=self._user(user_id),
            agent_id=self._agent(agent_id),
        )
        records = {m.id: m.memory for m in result.memories}
        conflicted = {t.a for t in result.tensions} | {t.b for t in result.tensions}
        missing = [n for p in result.paths for n in p.nodes if n not in records]
        if missing:
            records.update(self.memory.store.get_memories(self.memory.config.workspace, missing))
        supporting: list[RecallPath] = []
        covered: set[str] = set()
        for p in result.paths:
            if conflicted & set(p.nodes) or any(n not in records for n in p.nodes):
                continue
            supporting.append(
                RecallPath([records[n] for n in p.nodes], p.weights, p.kinds, p.score)
            )
            covered.update(p.nodes)
        for m in result.memories:
            if m.id not in covered and m.id not in conflicted:
                supporting.append(RecallPath([m.memory], [], [], m.score))
        conflicting = [
            RecallPath([records[t.a], records[t.b]], [], [t.kind], t.confidence)
            for t in result.tensions
            if t.a in records and t.b in records
        ]
        return MemWireRecallResult(query, supporting, conflicting, result.formatted, result)

    def feedback(
        self,
        response: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        *,
        assistant_response: str | None = None,
        recall_id: str | None = None,
    ) -> dict[str, Any]:
        """Learn from the LLM's reply (``response=`` as documented, or ``assistant_response=``)."""
        return self.memory.feedback(
            response,
            assistant_response=assistant_response,
            recall_id=recall_id,
            user_id=self._user(user_id),
            agent_id=self._agent(agent_id),
        )

    def search(
        self,
        query: str,
        user_id: str | None = None,
        agent_id: str | None = None,
        category: str | None = None,
        top_k: int = 10,
    ) -> list[tuple[MemoryRecord, float]]:
        """Ranked ``(memory, score)`` pairs; ``category`` filters on the memory kind."""
        hits = self.memory.search(
            query, limit=top_k, user_id=self._user(user_id), agent_id=self._agent(agent_id)
        )
        return [(h.memory, h.score) for h in hits if category is None or h.memory.kind == category]

    def get_stats(self, user_id: str | None = None) -> dict[str, Any]:
        """Counts of memories and edges of the user."""
        return self.memory.stats(user_id=user_id or self.user_id)

    def close(self) -> None:
        """Close the store (and remove the temporary folder of ``qdrant_path=':memory:'``)."""
        self.memory.close()
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
            self._temp = None

    def __enter__(self) -> MemWire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

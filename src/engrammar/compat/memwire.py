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

import dataclasses
import html
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Config
from ..embed import Embedder
from ..engine.knowledge import split_document
from ..errors import NotFoundError, ValidationError
from ..memory import Memory
from ..models import KnowledgeChunk as EngrammarChunk
from ..models import MemoryRecord as EngrammarRecord
from ..models import RecallResult as EngrammarRecall

__all__ = [
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

#: MemWire option -> the engrammar ``Config`` field it sets.
MAPPED = {
    "qdrant_path": "path",
    "database_url": "store",
    "org_id": "workspace",
    "embedding_provider": "embedder",
    "embedding_api_url": "embedder_url",
    "embedding_model": "embedder_model",
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

#: MemWire options this layer applies itself (no engrammar ``Config`` counterpart).
APPLIED = {
    "embedding_api_key": "the key of the openai-compatible embedder",
    "recall_min_relevance": "recall keeps memories whose cosine similarity to the query reaches it",
    "default_anchors": "the categories add() assigns (nearest anchor centroid)",
    "classification_threshold": "below it a memory's category is 'unknown'",
    "ingest_chunk_max_characters": "the passage size of ingest()",
    "ingest_chunk_overlap": "characters repeated where ingest() cuts a sentence",
}

#: MemWire options accepted and ignored, with the reason.
IGNORED = {
    "model_name": "the offline all-MiniLM-L6-v2 model is built in (MemWire's default model)",
    "embedding_dim": "given by the embedder (384 for the built-in model)",
    "qdrant_url": "no Qdrant: vectors live in engrammar's own store",
    "qdrant_api_key": "no Qdrant: vectors live in engrammar's own store",
    "qdrant_collection_prefix": "no Qdrant collections; org_id / workspace_id / app_id separate "
    "data",
    "sparse_model_name": "keyword search is BM25 over the store; no sparse model",
    "reranker_model_name": "no cross-encoder reranker",
    "use_hybrid_search": "search is always hybrid (vector + BM25)",
    "use_reranking": "no cross-encoder reranker",
    "displacement_threshold": "no token-displacement graph: edges link whole memories "
    "(similarity, rare shared terms, order); see docs/memwire.md",
    "node_merge_similarity": "a node is a memory; memories are never merged",
    "edge_weight_default": "initial weights follow the edge kind (similarity, IDF, sequence)",
    "edge_decay_rate": "edges change only through feedback",
    "edge_reinforce_amount": "reinforcement is feedback_strengthen_rate x alignment",
    "recall_bfs_max_paths": "walks are bounded by graph_depth, graph_fanout and graph_seeds",
    "tension_threshold": "tensions are judged by negation, changed values and supersession, "
    "gated by tension_min_similarity",
    "recency_weight": "no recency term in the ranking",
    "recency_halflife": "no recency term in the ranking",
    "cross_memory_recent_limit": "edges are chosen among all memories of the scope",
    "background_threads": "writes are synchronous single transactions: nothing to flush",
}

_LOGGED_CATEGORY = "memwire_category"
_TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".rst", ".csv", ".tsv", ".json", ".log", ".text"}
_HTML_SUFFIXES = {".html", ".htm", ".xml"}


def _default_anchors() -> dict[str, list[str]]:
    # MemWire's five categories, each described by a few example statements.
    return {
        "fact": [
            "This is a factual statement or piece of information",
            "The capital of France is Paris",
            "Water boils at 100 degrees Celsius",
        ],
        "preference": [
            "This is a personal preference or opinion",
            "I prefer dark mode over light mode",
            "I like my coffee black",
        ],
        "instruction": [
            "This is an instruction or directive to follow",
            "Always respond in formal English",
            "Never share my personal information",
        ],
        "event": [
            "This is an event or something that happened",
            "We had a team meeting yesterday",
            "The server crashed last Tuesday",
        ],
        "entity": [
            "This is information about a specific person, place, or organization",
            "John Smith is our project manager",
            "Acme Corp is based in San Francisco",
            "The Tesla Model 3 is an electric vehicle",
        ],
    }


@dataclass
class MemWireConfig:
    """MemWire's configuration, with its names and defaults.

    ``qdrant_path`` is the folder of the embedded store (``":memory:"``: a temporary folder
    removed on ``close``); ``database_url`` names the store itself instead: ``sqlite:///file.db``,
    ``sqlite:///:memory:`` (one in-memory database for this instance) or a ``postgresql://``
    server. ``embedding_provider="openai-compatible"`` embeds through
    ``embedding_api_url`` / ``embedding_model`` / ``embedding_api_key``. See :data:`MAPPED`,
    :data:`APPLIED` and :data:`IGNORED` for what each option does here. Any other engrammar
    setting can be given in ``engrammar`` (a dict of :class:`~engrammar.Config` fields).
    """

    embedding_provider: str = "fastembed"
    model_name: str = "sentence-transformers/all-MiniLM-L6-v2"
    embedding_dim: int = 384
    embedding_api_url: str = "http://localhost:11434/v1"
    embedding_api_key: str | None = None
    embedding_model: str = "nomic-embed-text"
    sparse_model_name: str = "prithivida/Splade_PP_en_v1"
    reranker_model_name: str = "Xenova/ms-marco-MiniLM-L-6-v2"
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    qdrant_path: str | None = None
    qdrant_collection_prefix: str = ""
    use_hybrid_search: bool = True
    use_reranking: bool = False
    displacement_threshold: float = 0.15
    edge_weight_default: float = 0.5
    edge_weight_min: float = 0.01
    edge_weight_max: float = 1.0
    edge_decay_rate: float = 0.02
    edge_reinforce_amount: float = 0.1
    node_merge_similarity: float = 0.85
    classification_threshold: float = 0.05
    default_anchors: dict[str, Any] = field(default_factory=_default_anchors)
    recall_max_paths: int = 10
    recall_max_depth: int = 4
    recall_min_relevance: float = 0.25
    tension_threshold: float = 0.6
    recency_weight: float = 0.3
    recency_halflife: float = 3600.0
    recall_seed_top_k: int = 5
    recall_bfs_max_branch: int = 5
    recall_bfs_max_paths: int = 200
    feedback_strengthen_rate: float = 0.1
    feedback_weaken_rate: float = 0.05
    feedback_align_strengthen: float = 0.5
    feedback_align_weaken: float = 0.2
    database_url: str | None = None
    org_id: str = "default"
    embedding_cache_maxsize: int = 10_000
    cross_memory_recent_limit: int = 50
    background_threads: int = 2
    ingest_chunk_max_characters: int = 1000
    ingest_chunk_overlap: int = 100
    engrammar: dict[str, Any] = field(default_factory=dict)

    def get_database_url(self) -> str:
        """The database URL: ``database_url``, else MemWire's default ``sqlite:///memwire_{org_id}.db``.

        (That default names only where MemWire would keep its metadata; with neither
        ``database_url`` nor ``qdrant_path`` set, engrammar keeps everything in that file.)
        """
        return self.database_url or f"sqlite:///memwire_{self.org_id}.db"

    def to_config(self) -> tuple[Config, str | None]:
        """The engrammar ``Config`` (and a temporary folder to remove on close, if any)."""
        values: dict[str, Any] = {"workspace": self.org_id}
        temp = None
        if self.database_url is not None:
            # SQLAlchemy's driver spellings name the same servers.
            url = re.sub(r"^(postgresql|postgres|sqlite)\+\w+://", r"\1://", self.database_url)
            if not url.startswith(("sqlite:///", "postgresql://", "postgres://")):
                raise ValidationError("database_url", "must be a sqlite:/// or postgresql:// URL")
            values["store"] = url
        elif self.qdrant_path == ":memory:":
            temp = tempfile.mkdtemp(prefix="engrammar-memwire-")
            values["path"] = temp
        elif self.qdrant_path is not None:
            values["path"] = self.qdrant_path
        else:
            values["store"] = self.get_database_url()
        if self.embedding_provider == "openai-compatible":
            values["embedder"] = "openai"
            values["embedder_url"] = self.embedding_api_url
            values["embedder_model"] = self.embedding_model
        elif self.embedding_provider != "fastembed":
            raise ValidationError(
                "embedding_provider", "must be 'fastembed' or 'openai-compatible'"
            )
        for name in (
            "edge_weight_min", "edge_weight_max", "feedback_strengthen_rate",
            "feedback_weaken_rate", "feedback_align_strengthen", "feedback_align_weaken",
        ):  # fmt: skip
            values[MAPPED[name]] = getattr(self, name)
        # Recall bounds: MemWire's names, engrammar's limits (graph_depth is at most 4).
        values["graph_max_paths"] = self.recall_max_paths
        values["graph_depth"] = min(self.recall_max_depth, 4)
        values["graph_seeds"] = self.recall_seed_top_k
        values["graph_fanout"] = self.recall_bfs_max_branch
        values["embed_cache_size"] = self.embedding_cache_maxsize
        unknown = set(self.engrammar) - {f.name for f in dataclasses.fields(Config)}
        if unknown:
            raise ValidationError("engrammar", f"unknown engrammar settings {sorted(unknown)}")
        values.update(self.engrammar)
        return Config(**values), temp


# -- MemWire's records -------------------------------------------------------------------------
@dataclass
class TokenEmbedding:
    """MemWire's token embedding record. Exported for imports and type hints; engrammar builds
    no token-level graph, so no API call returns one."""

    token: str
    position: int
    isolated: np.ndarray
    contextual: np.ndarray
    displacement: np.ndarray

    @property
    def displacement_magnitude(self) -> float:
        return float(np.linalg.norm(self.displacement))


@dataclass
class GraphNode:
    """A node of the memory graph. In engrammar a node is a whole memory: ``node_id`` is the
    memory's id, ``token`` its content, ``memory_ids`` that one memory."""

    node_id: str
    token: str
    embedding: np.ndarray = field(repr=False)
    memory_ids: list[str] = field(default_factory=list)
    user_id: str = ""
    app_id: str | None = None
    workspace_id: str | None = None

    def __hash__(self) -> int:
        return hash(self.node_id)


@dataclass
class GraphEdge:
    """A weighted edge between two nodes (memories); ``displacement_sim`` holds the kind's
    similarity where engrammar knows it (0 otherwise)."""

    source_id: str
    target_id: str
    weight: float = 0.5
    displacement_sim: float = 0.0
    user_id: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.source_id, self.target_id)


@dataclass
class MemoryRecord:
    """A stored memory, with MemWire's fields (``memory_id`` is engrammar's memory id)."""

    memory_id: str
    user_id: str
    content: str
    role: str
    embedding: np.ndarray = field(repr=False)
    category: str | None = None
    strength: float = 1.0
    timestamp: float = 0.0
    node_ids: list[str] = field(default_factory=list)
    agent_id: str | None = None
    access_count: int = 0
    org_id: str = ""
    workspace_id: str | None = None
    app_id: str | None = None

    @property
    def id(self) -> str:
        """engrammar's name for ``memory_id``."""
        return self.memory_id


@dataclass
class KnowledgeChunk:
    """A passage of a knowledge base; ``score`` (in [0, 1]) is set by searches."""

    chunk_id: str
    kb_id: str
    user_id: str
    agent_id: str | None = None
    content: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    score: float = 0.0
    workspace_id: str | None = None
    app_id: str | None = None


@dataclass
class RecallPath:
    """A chain of related memories: its nodes, the edges between them, a score in [0, 1]."""

    nodes: list[GraphNode]
    edges: list[GraphEdge]
    score: float = 0.0
    memories: list[MemoryRecord] = field(default_factory=list)

    @property
    def total_weight(self) -> float:
        """Mean edge weight along the path (0 for a single memory)."""
        return sum(e.weight for e in self.edges) / len(self.edges) if self.edges else 0.0


@dataclass
class RecallResult:
    """What recall returns: supporting and conflicting paths, knowledge chunks, prompt text.

    ``engrammar`` holds engrammar's own result (ranked memories with score components, the
    ``recall_id`` feedback acts on); ``None`` for an empty query.
    """

    query: str
    supporting: list[RecallPath] = field(default_factory=list)
    conflicting: list[RecallPath] = field(default_factory=list)
    knowledge: list[KnowledgeChunk] = field(default_factory=list)
    formatted: str = ""
    engrammar: EngrammarRecall | None = field(default=None, repr=False, compare=False)

    @property
    def has_conflicts(self) -> bool:
        return bool(self.conflicting)

    @property
    def all_paths(self) -> list[RecallPath]:
        return self.supporting + self.conflicting

    @property
    def recall_id(self) -> str | None:
        return self.engrammar.recall_id if self.engrammar is not None else None


#: The name this module gave the result before it carried MemWire's exact shape.
MemWireRecallResult = RecallResult


def workspace_of(org_id: str, workspace_id: str | None, app_id: str | None) -> str:
    """The engrammar workspace holding a MemWire (org, workspace, app) tenant.

    The organisation's own data (no workspace or app named) is the workspace ``org_id``; a
    workspace or app gets a workspace of its own below it, so nothing crosses between them.
    """
    if workspace_id is None and app_id is None:
        return org_id
    return f"{org_id}/{workspace_id or ''}/{app_id or ''}"


def _clip(value: float) -> float:
    return round(min(1.0, max(0.0, float(value))), 6)


def _format(result: RecallResult) -> str:
    sections = []
    for header, paths in (
        ("Relevant memories", result.supporting),
        ("Potentially conflicting memories (review carefully)", result.conflicting),
    ):
        if not paths:
            continue
        lines, seen = [f"[{header}]"], set()
        for path in paths:
            for m in path.memories:
                if m.content not in seen:
                    seen.add(m.content)
                    lines.append(f"- {m.content}" + (f" [{m.category}]" if m.category else ""))
        sections.append("\n".join(lines))
        if header == "Relevant memories" and result.knowledge:
            sections.append(_format_knowledge(result.knowledge))
    if result.knowledge and not result.supporting:
        sections.insert(0, _format_knowledge(result.knowledge))
    return "\n\n".join(sections)


def _format_knowledge(chunks: Sequence[KnowledgeChunk]) -> str:
    lines = ["[Relevant knowledge]"]
    for c in chunks:
        source = c.metadata.get("source", "")
        lines.append(f"- {c.content}" + (f" [{source}]" if source else ""))
    return "\n".join(lines)


def _read_document(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in _TEXT_SUFFIXES | _HTML_SUFFIXES:
        raise ValidationError(
            "file_path",
            f"cannot read {suffix or 'extension-less'} files; give a text, Markdown, CSV, JSON "
            "or HTML file (convert PDF/DOCX to text first), or pass passages to add_knowledge",
        )
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ValidationError("file_path", f"cannot read {path}: {exc}") from exc
    if suffix in _HTML_SUFFIXES:
        text = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", text)
        text = re.sub(r"(?i)<\s*(br|/p|/div|/h[1-6]|/li|/tr)\s*/?>", "\n\n", text)
        text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    return text


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
        self._anchors: dict[str, dict[str, list[str]]] = {}
        self._centroids: dict[str, dict[str, np.ndarray]] = {}
        self._kb_workspaces: dict[str, str] = {}

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
            score=_clip(c.score),
            workspace_id=workspace_id,
            app_id=app_id,
        )

    # -- categories -------------------------------------------------------------------------------
    def _scope_anchors(self, ws: str, user_id: str) -> dict[str, list[str]]:
        key = f"{ws}\x00{user_id}"
        if key not in self._anchors:
            anchors = {
                name: list(texts) if isinstance(texts, list | tuple) else [str(texts)]
                for name, texts in self.config.default_anchors.items()
            }
            for event in self.memory.list_logged_events(
                user_id=user_id, workspace=ws, limit=10_000
            ):
                if event.kind == _LOGGED_CATEGORY:
                    anchors.setdefault(str(event.payload["name"]), []).append(
                        str(event.payload["text"])
                    )
            self._anchors[key] = anchors
        return self._anchors[key]

    def _classify(self, ws: str, user_id: str, texts: Sequence[str]) -> list[str]:
        anchors = self._scope_anchors(ws, user_id)
        if not anchors or not texts:
            return ["unknown"] * len(texts)
        key = f"{ws}\x00{user_id}"
        if key not in self._centroids:
            self._centroids[key] = {
                name: self.memory.embedder.embed(list(examples)).mean(axis=0)
                for name, examples in anchors.items()
                if examples
            }
        names = list(self._centroids[key])
        matrix = np.stack([self._centroids[key][n] for n in names])
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
            _LOGGED_CATEGORY, {"name": name, "text": text}, user_id=user, workspace=ws
        )
        self._scope_anchors(ws, user).setdefault(name, []).append(text)
        self._centroids.pop(f"{ws}\x00{user}", None)

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
        cosine = {m.id: _clip(m.components.get("vector", 0.0)) for m in result.memories}
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
            score = _clip(max(cosine.get(n, 0.0) for n in nodes) * (0.5 + 0.5 * p.score))
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
                [GraphEdge(t.a, t.b, _clip(t.confidence), 0.0, records[t.a].user_id)],
                _clip(t.confidence),
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
        out.formatted = _format(out)
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
                _clip(h.components.get("vector", 0.0)),
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
        self._kb_workspaces[kb.id] = ws
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
        text = _read_document(path)
        size = chunk_max_characters or self.config.ingest_chunk_max_characters
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
        self._kb_workspaces[kb.id] = ws
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
        ws = self._kb_workspaces.pop(kb_id, None) or self._ws(workspace_id, app_id)
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

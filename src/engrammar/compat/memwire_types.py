"""The data side of the MemWire 0.1.x drop-in (:mod:`engrammar.compat.memwire`): its options
and how each maps onto engrammar's ``Config`` (:class:`MemWireConfig`), its result types with
their exact fields, the tenancy mapping (:func:`workspace_of`), and the text helpers the client
uses (formatting a recall, reading a document for ``ingest``). Import them from
``engrammar.compat.memwire``; this module only keeps that one under the size the project allows.
"""

from __future__ import annotations

import dataclasses
import html
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Config, RankingProfile
from ..errors import ValidationError
from ..models import RecallResult as EngrammarRecall

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
    "recall_max_depth": "ranking.graph_depth",
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

LOGGED_CATEGORY = "memwire_category"
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
        ranking = {
            "graph_depth": min(self.recall_max_depth, 4),
            "graph_seeds": self.recall_seed_top_k,
            "graph_fanout": self.recall_bfs_max_branch,
        }
        values["ranking"] = RankingProfile.of({**ranking, **self.engrammar.get("ranking", {})})
        values["embed_cache_size"] = self.embedding_cache_maxsize
        unknown = set(self.engrammar) - {f.name for f in dataclasses.fields(Config)}
        if unknown:
            raise ValidationError("engrammar", f"unknown engrammar settings {sorted(unknown)}")
        values.update({k: v for k, v in self.engrammar.items() if k != "ranking"})
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


def clip_score(value: float) -> float:
    return round(min(1.0, max(0.0, float(value))), 6)


def format_recall(result: RecallResult) -> str:
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


def read_document(path: Path) -> str:
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

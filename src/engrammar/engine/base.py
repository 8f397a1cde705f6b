"""What every flow of the engine shares: the store, the embedder and the settings it runs on,
and the few rules about memories that several flows apply alike."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import Config
from ..embed import Embedder
from ..errors import EmbedderError
from ..models import MemoryRecord, RecallFilter, Scope
from ..recall.chunks import message_windows
from ..recall.tensions import Statement
from ..recall.text import embedding_text
from ..store import Backend, ChunkVector, ReadPlan, read_ahead

__all__ = [
    "Engine",
    "adding",
    "dedup_key",
    "embed_memories",
    "in_scope",
    "pinned",
    "reaches",
    "reading",
    "recorded",
    "shared",
    "statement",
]


@dataclass(frozen=True)
class Engine:
    """The store, the embedder and the settings one :class:`~engrammar.Memory` runs on.

    Every flow (``ingest``, ``recall``, ``feedback``, ``records``, ``transfer``) is a set of
    functions over an ``Engine``: they read and write through the store, embed through the
    embedder and leave every decision to the pure functions of ``recall/`` and ``learn/``.
    """

    store: Backend
    embedder: Embedder
    config: Config

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One vector per text; ``EmbedderError`` when the embedder returns anything else."""
        vectors = self.embedder.embed(texts)
        if vectors.shape != (len(texts), self.embedder.dim) or not np.isfinite(vectors).all():
            raise EmbedderError(f"embedder {self.embedder.name!r} returned invalid vectors")
        return vectors

    def embed_one(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed([text])[0]
        return vector


def reading(store: object, *args: Any, **kwargs: Any) -> AbstractContextManager[None]:
    """A read session of ``store`` (:meth:`~engrammar.store.ReadAhead.reading`) with the plan
    ``ReadPlan(*args, **kwargs)`` when it reads ahead; otherwise nothing: its reads are
    answered as they come."""
    ahead = read_ahead(store)
    return ahead.reading(ReadPlan(*args, **kwargs)) if ahead is not None else nullcontext()


def pinned(store: object) -> AbstractContextManager[None]:
    """The store's reads of one recall checked for changes once (``SQLiteStore.pinned``), when
    it has that; otherwise nothing. Only around reads: a write inside would not be seen."""
    pin = getattr(store, "pinned", None)
    return pin() if callable(pin) else nullcontext()


def adding(store: object, *args: Any, **kwargs: Any) -> AbstractContextManager[None]:
    """An add session of ``store`` (:meth:`~engrammar.store.ReadAhead.adding`) when it reads
    ahead; otherwise nothing."""
    ahead = read_ahead(store)
    return ahead.adding(*args, **kwargs) if ahead is not None else nullcontext()


def embed_memories(
    engine: Engine, items: Sequence[tuple[str, str | None, str]]
) -> tuple[np.ndarray, list[tuple[ChunkVector, ...]]]:
    """The vector of each ``(content, speaker, role)`` and, for a text longer than
    ``Config.chunk_chars``, the vectors of its windows (at most ``Config.window_limit``), all
    in one call to the embedder. Every role alike: what an assistant said, decided or wrote
    is memory too. A windowed message's own vector is the mean of its windows' (the model
    reads only a text's start, and embedding that start twice would buy nothing)."""
    size, cap = engine.config.chunk_chars, engine.config.window_limit
    spans = [message_windows(content, size, cap) for content, _, _ in items]
    texts = [
        embedding_text(content, who)
        for (content, who, _), windows in zip(items, spans, strict=True)
        if not windows
    ]
    texts += [
        embedding_text(content[a:b], who)
        for (content, who, _), windows in zip(items, spans, strict=True)
        for a, b in windows
    ]
    vectors = engine.embed(texts)
    own = np.empty((len(items), engine.embedder.dim), np.float32)
    chunks: list[tuple[ChunkVector, ...]] = []
    plain, at = 0, sum(1 for windows in spans if not windows)
    for i, windows in enumerate(spans):
        if not windows:
            own[i] = vectors[plain]
            plain += 1
            chunks.append(())
            continue
        part = vectors[at : at + len(windows)]
        mean = part.mean(axis=0)
        own[i] = mean / (float(np.linalg.norm(mean)) or 1.0)
        chunks.append(tuple(ChunkVector(k + 1, a, b, part[k]) for k, (a, b) in enumerate(windows)))
        at += len(windows)
    return own, chunks


def dedup_key(scope: Scope, role: str, content: str) -> str:
    """The key under which a scope stores a text once: the same message added twice to the
    same scope is one memory. A system prompt is one memory across the sessions of its
    user and agent: a transcript repeats it at the top of every conversation."""
    raw = "\x00".join(
        [
            scope.workspace,
            scope.user_id or "",
            scope.agent_id or "",
            "" if role == "system" else scope.session_id or "",
            role,
            content,
        ]
    )
    return hashlib.sha256(raw.encode()).hexdigest()


def recorded(record: MemoryRecord) -> bool:
    """Whether a memory is what a feedback record left behind (an event's or a review's
    decision, a pair's preference): its reach is the record's, not a conversation's
    (docs/learning.md, "Who sees a record")."""
    return (record.kind == "decision" and "event_id" in record.metadata) or (
        record.kind == "preference" and "pair_id" in record.metadata
    )


def shared(record: MemoryRecord) -> bool:
    """Whether a memory is the workspace's knowledge: a decision or preference recorded
    without a user, seen by every agent, session and user of its workspace."""
    return record.user_id is None and recorded(record)


def reaches(record: MemoryRecord, scope: Scope) -> bool:
    """Whether a memory the scope's keys select may reach a recall of ``scope``: what a
    user's record left reaches that user's recalls only (a recall made without a user
    selects every user's memories, but no one's records)."""
    return record.user_id in (None, scope.user_id) or not recorded(record)


def in_scope(record: MemoryRecord, scope: Scope, where: RecallFilter | None = None) -> bool:
    """Whether an active memory belongs to ``scope`` (or is its workspace's knowledge) and
    passes ``where`` (what graph walks may bring in)."""
    if (
        (where is not None and not where.matches(record))
        or record.workspace != scope.workspace
        or record.status != "active"
    ):
        return False
    if shared(record):
        return True
    return reaches(record, scope) and all(
        getattr(scope, key) is None or getattr(record, key) == getattr(scope, key)
        for key in ("user_id", "agent_id", "session_id")
    )


def speaker(metadata: dict[str, Any], role: str) -> str:
    """Who said it, for the tension rules: the named speaker, else the role."""
    return str(metadata.get("speaker") or role)


def states_facts(role: str, kind: str) -> bool:
    """Whether a memory can state a fact of the user's that changes (and so contradict or
    replace another): not an assistant's chat message, which answers a request rather than
    telling how things are ("Participating in weekly chats ... is an excellent way" is no
    new version of the advice before it); two answers of an assistant on one subject are two
    answers, not an old and a new fact."""
    return not (role == "assistant" and kind == "message")


def own_word(role: str, kind: str) -> bool:
    """Whether a memory is someone's own word on how things are, which a later one can
    restate for a question about the present: a message, fact, preference or decision of the
    user's (or a fact written by the agent), not a tool call or a tool's output (kind
    ``event``), a system prompt or an assistant's chat answer. A tool call that names Berlin
    restates nothing of "I moved to Berlin last month"."""
    return states_facts(role, kind) and kind != "event" and role not in ("system", "tool")


def statement(record: MemoryRecord) -> Statement:
    """A stored memory as the tension rules read it."""
    return Statement(
        record.id, record.content, record.created_at, speaker(record.metadata, record.role)
    )

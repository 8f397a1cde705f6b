"""Feedback records: what happened to an agent's outputs, kept to rank later recalls.

Feedback events, decision reviews, preference pairs, logged events and memory ratings are
append-only. The texts a record's learning needs are embedded when it is written, and the
standing answer of a decision, the accepted output of a pair or a rating's correction is
stored in the same transaction as a memory linked to it (see docs/learning.md and
``learn.scoring``). The arguments arrive checked (``engine.validate``).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

from ..errors import NotFoundError, ValidationError
from ..learn.scoring import standing_answer
from ..models import (
    DecisionReview,
    FeedbackEvent,
    LoggedEvent,
    MemoryRating,
    MemoryRecord,
    PreferencePair,
    Scope,
    UndoResult,
    idempotency_key,
)
from ..store import NewMemory, RecallRecord
from ..store.base import NewFeedbackEvent
from . import validate as v
from .base import Engine, dedup_key
from .ids import new_id
from .ranking import vector_text

__all__ = [
    "create_decision_review",
    "create_feedback_event",
    "create_preference_pair",
    "feedback_source",
    "find_recall",
    "linked_memory",
    "log_event",
    "rate_memory",
    "recall_query",
    "undo",
]


def feedback_source(source: Any, agent_id: str | None) -> str | None:
    """Who gave a feedback record: ``source`` when given (checked), else ``agent:<agent_id>``,
    else ``None`` (unattributed)."""
    if source is not None:
        return v.scope_id("source", source)
    return None if agent_id is None else f"agent:{agent_id}"


def linked_memory(
    scope: Scope,
    kind: str,
    content: str,
    vector: np.ndarray,
    when: float,
    metadata: dict[str, Any],
) -> NewMemory:
    """The memory a record stores beside itself (a decision, a preference, a correction)."""
    role = "user" if kind == "fact" else "assistant"
    return NewMemory(
        id=new_id(),
        **scope.owner(),
        role=role,
        content=content,
        kind=kind,
        created_at=when,
        metadata=metadata,
        # Kind-qualified: a decision never collapses into an ordinary message of that text.
        dedup_key=dedup_key(scope, role, f"{kind}\x00{content}"),
        embedding=vector,
    )


def create_feedback_event(
    engine: Engine,
    scope: Scope,
    when: float,
    *,
    input_context: str,
    ai_output: str,
    state: str,
    user_reaction: str | None,
    user_correction: str | None,
    corrected_output: str | None,
    reason: str | None,
    source_event_id: str | None,
    metadata: dict[str, Any],
    source: str | None = None,
) -> FeedbackEvent:
    """Store a feedback event of ``scope`` (fields as in
    :class:`~engrammar.models.FeedbackEvent`) with its vectors and, when an answer stands,
    its decision memory; an event with a known ``source_event_id`` returns the stored one."""
    event = FeedbackEvent(
        id=new_id(),
        **scope.owner(),
        input_context=input_context,
        ai_output=ai_output,
        user_reaction=user_reaction,
        user_correction=user_correction,
        corrected_output=corrected_output,
        state=state,
        reason=reason,
        source_event_id=idempotency_key(source_event_id, scope.user_id),
        created_at=when,
        metadata=metadata,
        source=source,
    )
    corrected = event.corrected_output or event.user_correction
    payload = {
        "user_id": event.user_id,
        "agent_id": event.agent_id,
        "session_id": event.session_id,
        "input_context": event.input_context,
        "ai_output": event.ai_output,
        "user_reaction": event.user_reaction,
        "user_correction": event.user_correction,
        "corrected_output": event.corrected_output,
        "state": event.state,
        "reason": event.reason,
        "metadata": event.metadata,
    }
    payload_hash = hashlib.sha256(
        json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()
    ).hexdigest()
    # The context is matched against later queries: embedded as a query is (vector_text).
    context = vector_text(event.input_context, engine.config.ranking)
    texts = [context, event.ai_output] + ([corrected] if corrected else [])
    vectors = engine.embed(texts)
    answer = standing_answer(event.state)
    decision = None
    if answer is not None:
        text = corrected if answer == "corrected" else event.ai_output
        assert text is not None  # a corrected event has a correction (checked by the caller)
        decision = linked_memory(
            Scope(event.workspace, event.user_id, event.agent_id, event.session_id),
            "decision",
            text,
            vectors[2] if answer == "corrected" else vectors[1],
            event.created_at,
            {
                "event_id": event.id,
                "input_context": event.input_context,
                "state": event.state,
                "reason": event.reason,
            },
        )
    stored, _ = engine.store.create_feedback_event(
        NewFeedbackEvent(
            event=event,
            payload_hash=payload_hash,
            context_embedding=vectors[0],
            ai_output_embedding=vectors[1],
            corrected_embedding=vectors[2] if corrected else None,
            decision=decision,
            answer=answer,
        )
    )
    return stored


def create_decision_review(
    engine: Engine,
    workspace: str,
    event_id: str,
    final_decision: str,
    outcome: str,
    confidence: float,
    reason: str | None,
    user: str | None,
    agent: str | None,
    when: float,
    source: str | None = None,
) -> DecisionReview:
    """Review the feedback event ``event_id``: the answer of ``final_decision`` stands from
    now on (a decision memory of the event's scope), scaled by ``outcome`` and
    ``confidence``."""
    event = engine.store.get_feedback_record("feedback_event", workspace, event_id)
    assert isinstance(event, FeedbackEvent)
    answer = standing_answer(final_decision)
    decision = None
    if answer is not None:
        text = (
            (event.corrected_output or event.user_correction)
            if answer == "corrected"
            else event.ai_output
        )
        if text is None:
            raise ValidationError(
                "final_decision",
                f"the event {event_id!r} has no corrected output to stand as 'corrected'",
            )
        decision = linked_memory(
            Scope(workspace, event.user_id, event.agent_id, event.session_id),
            "decision",
            text,
            engine.embed_one(text),
            when,
            {
                "event_id": event_id,
                "input_context": event.input_context,
                "state": final_decision,
                "reason": reason or event.reason,
            },
        )
    review = DecisionReview(
        id=new_id(),
        workspace=workspace,
        user_id=user if user is not None else event.user_id,
        agent_id=agent,
        event_id=event_id,
        final_decision=final_decision,
        outcome=outcome,
        confidence=confidence,
        reversed=final_decision != event.state,
        created_at=when,
        reason=reason,
        source=source,
    )
    return engine.store.create_decision_review(review, decision, answer)


def create_preference_pair(
    engine: Engine,
    scope: Scope,
    context: str,
    accepted_output: str,
    rejected_output: str,
    weight: float,
    when: float,
    source: str | None = None,
) -> PreferencePair:
    """Store a preference pair with its vectors and the accepted output as a memory of kind
    ``preference``."""
    vectors = engine.embed(
        [vector_text(context, engine.config.ranking), accepted_output, rejected_output]
    )
    pair = PreferencePair(
        id=new_id(),
        **scope.owner(),
        context=context,
        accepted_output=accepted_output,
        rejected_output=rejected_output,
        weight=weight,
        created_at=when,
        source=source,
    )
    memory = linked_memory(
        scope,
        "preference",
        pair.accepted_output,
        vectors[1],
        pair.created_at,
        {"pair_id": pair.id, "context": pair.context, "rejected_output": pair.rejected_output},
    )
    return engine.store.create_preference_pair(pair, vectors[0], vectors[1], vectors[2], memory)


def log_event(
    engine: Engine,
    scope: Scope,
    kind: str,
    payload: dict[str, Any],
    when: float,
    source: str | None = None,
) -> LoggedEvent:
    """Store any other event of ``scope`` (e.g. a checkpoint)."""
    event = LoggedEvent(
        id=new_id(),
        **scope.owner(),
        kind=kind,
        payload=payload,
        created_at=when,
        source=source,
    )
    return engine.store.log_event(event)


def undo(engine: Engine, workspace: str, record_id: str, user_id: str | None) -> UndoResult:
    """Take the feedback record ``record_id`` back (see ``Store.undo_record``)."""
    cfg = engine.config
    return engine.store.undo_record(
        workspace, record_id, cfg.edge_weight_min, cfg.edge_weight_max, user_id
    )


def find_recall(engine: Engine, scope: Scope, recall_id: str) -> RecallRecord | None:
    """The recall ``recall_id`` if it was made in ``scope``."""
    return engine.store.get_recall(scope, recall_id)


def recall_query(engine: Engine, workspace: str, recall_id: str) -> str:
    """The query of the recall ``recall_id``; ``NotFoundError`` when the workspace has none."""
    recall = find_recall(engine, Scope(workspace), recall_id)
    if recall is None:
        raise NotFoundError(f"recall {recall_id!r} not found in workspace {workspace!r}")
    return recall.query


def rate_memory(
    engine: Engine,
    target: MemoryRecord,
    rater: Scope,
    verdict: str,
    correction: str | None,
    weight: float,
    when: float,
    recall_id: str | None,
    context: str | None,
    source: str | None = None,
) -> MemoryRating:
    """Store ``rater``'s rating of ``target`` with its context's vector and its correction
    as a memory of kind ``fact`` in the rated memory's scope."""
    rating = MemoryRating(
        id=new_id(),
        **rater.owner(),
        memory_id=target.id,
        verdict=verdict,
        correction=correction,
        weight=weight,
        created_at=when,
        recall_id=recall_id,
        context=context,
        source=source,
    )
    asked = None if rating.context is None else vector_text(rating.context, engine.config.ranking)
    texts = [t for t in (asked, rating.correction) if t is not None]
    vectors = engine.embed(texts) if texts else None
    context_vec = vectors[0] if vectors is not None and rating.context is not None else None
    correction_memory = None
    if rating.correction is not None:
        assert vectors is not None
        owner = Scope(target.workspace, target.user_id, target.agent_id, target.session_id)
        correction_memory = linked_memory(
            owner,
            "fact",
            rating.correction,
            vectors[-1],
            rating.created_at,
            {"corrects": target.id},
        )
    return engine.store.rate_memory(rating, context_vec, correction_memory)

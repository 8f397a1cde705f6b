"""Feedback records, as ``Memory`` methods (a part of the facade kept in its own file).

:class:`Memory` inherits them: feedback events and their reviews, preference pairs, ratings of
memories and logged events, each written whole, read back and listed per scope.
"""

from __future__ import annotations

import builtins
import time
from typing import Any

from .engine import records
from .engine import validate as v
from .engine.records import feedback_source
from .errors import ValidationError
from .memory_base import FacadeBase
from .models import (
    FEEDBACK_STATES,
    KEY_SEPARATOR,
    RATING_VERDICTS,
    REVIEW_OUTCOMES,
    DecisionReview,
    FeedbackEvent,
    LoggedEvent,
    MemoryRating,
    PreferencePair,
    Scope,
)

__all__ = ["RecordsMixin"]


class RecordsMixin(FacadeBase):
    """Feedback events, decision reviews, preference pairs, ratings and logged events."""

    def create_feedback_event(
        self,
        input_context: str,
        ai_output: str,
        state: str,
        *,
        user_reaction: str | None = None,
        user_correction: str | None = None,
        corrected_output: str | None = None,
        reason: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        source_event_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        timestamp: Any = None,
        source: str | None = None,
    ) -> FeedbackEvent:
        """Record what happened to an agent's output (MCP ``memory_create_feedback_event``).

        The standing answer (``corrected_output``, else ``user_correction``, when ``corrected``;
        ``ai_output`` when ``adopted``) is stored in the same transaction as a memory of kind
        ``decision`` linked to the event: a later recall whose query resembles ``input_context``
        puts it first, marked as a prior decision with ``reason``. A rejected output is never
        stored as an answer; memories repeating it are demoted for similar contexts.

        Args:
            input_context: what the agent was asked or working on.
            ai_output: what the agent produced.
            state: ``corrected``, ``adopted`` or ``rejected``.
            user_reaction, user_correction, corrected_output, reason: how the user reacted, the
                correction they gave, the output as corrected, and why; kept with the event.
            agent_id, user_id, session_id, workspace: the scope; at least one of the first three.
            source_event_id: idempotency key: the same value for the same user (or, for an
                event without a user, in the same workspace) returns the existing event and
                writes nothing. Each user has a key space of their own, so a key never
                reveals or blocks another user's event.
            metadata: extra JSON data kept with the event.
            timestamp: when it happened; default now.
            source: who gives this feedback (default ``agent:<agent_id>`` when an agent is
                named, else unattributed); over HTTP the API key's id replaces it. One
                source's burst counts as one signal (``feedback_source_window_s``).

        Raises:
            ValidationError: naming the bad field; nothing is written.
            ConflictError: ``source_event_id`` already names an event with another payload.
        """
        limit = self.config.max_content_chars
        scope = self._scope(user_id, agent_id, session_id, workspace)
        input_context = v.text("input_context", input_context, limit)
        ai_output = v.text("ai_output", ai_output, limit)
        state = v.choice("state", state, FEEDBACK_STATES)
        user_reaction = v.optional_text("user_reaction", user_reaction, limit)
        user_correction = v.optional_text("user_correction", user_correction, limit)
        corrected_output = v.optional_text("corrected_output", corrected_output, limit)
        reason = v.optional_text("reason", reason, limit)
        source_event_id = v.scope_id("source_event_id", source_event_id)
        if source_event_id is not None and KEY_SEPARATOR in source_event_id:
            raise ValidationError("source_event_id", "must not contain the character U+001F")
        meta = v.metadata("metadata", metadata)
        when = v.timestamp("timestamp", timestamp) or time.time()
        if state == "corrected" and corrected_output is None and user_correction is None:
            raise ValidationError(
                "corrected_output", "a corrected event needs corrected_output or user_correction"
            )
        return records.create_feedback_event(
            self._engine,
            scope,
            when,
            input_context=input_context,
            ai_output=ai_output,
            user_reaction=user_reaction,
            user_correction=user_correction,
            corrected_output=corrected_output,
            state=state,
            reason=reason,
            source_event_id=source_event_id,
            metadata=meta,
            source=feedback_source(source, agent_id),
        )

    def create_decision_review(
        self,
        event_id: str,
        final_decision: str,
        outcome: str = "unknown",
        confidence: float = 1.0,
        *,
        reason: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        workspace: str | None = None,
        timestamp: Any = None,
        source: str | None = None,
    ) -> DecisionReview:
        """Review a feedback event later (MCP ``memory_create_decision_review``).

        Args:
            event_id: the feedback event reviewed (same workspace).
            final_decision: ``corrected``, ``adopted`` or ``rejected``; when it differs from the
                event's ``state`` the review is ``reversed`` and the other output stands from
                now on (recall flips accordingly).
            outcome: ``success``, ``partial``, ``failure`` or ``unknown``; scales the standing
                decision up or down by ``confidence``.
            confidence: in [0, 1].
            reason: why, optionally.
            source: who gives this feedback (default ``agent:<agent_id>`` when an agent is
                named, else unattributed); over HTTP the API key's id replaces it. One
                source's burst counts as one signal (``feedback_source_window_s``).

        Raises:
            ValidationError: naming the bad field. NotFoundError: no such event.
        """
        ws = self._workspace(workspace)
        v.scope_id("event_id", event_id, required=True)
        final_decision = v.choice("final_decision", final_decision, FEEDBACK_STATES)
        outcome = v.choice("outcome", outcome, REVIEW_OUTCOMES)
        confidence = v.unit_float("confidence", confidence)
        reason = v.optional_text("reason", reason, self.config.max_content_chars)
        user = v.scope_id("user_id", user_id)
        agent = v.scope_id("agent_id", agent_id)
        when = v.timestamp("timestamp", timestamp) or time.time()
        return records.create_decision_review(
            self._engine,
            ws,
            event_id,
            final_decision,
            outcome,
            confidence,
            reason,
            user,
            agent,
            when,
            feedback_source(source, agent),
        )

    def create_preference_pair(
        self,
        context: str,
        accepted_output: str,
        rejected_output: str,
        weight: float = 1.0,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        timestamp: Any = None,
        source: str | None = None,
    ) -> PreferencePair:
        """Record that one output was preferred over another for a context
        (MCP ``memory_create_preference_pair``).

        The accepted output is stored as a memory of kind ``preference`` in the same
        transaction; for similar contexts it is surfaced and lifted, and memories repeating the
        rejected output are lowered, by ``weight`` (in (0, 10]).
        """
        limit = self.config.max_content_chars
        scope = self._scope(user_id, agent_id, session_id, workspace)
        context = v.text("context", context, limit)
        accepted_output = v.text("accepted_output", accepted_output, limit)
        rejected_output = v.text("rejected_output", rejected_output, limit)
        weight = v.unit_float("weight", weight, 0.0, 10.0)
        if weight == 0:
            raise ValidationError("weight", "must be > 0")
        if accepted_output.strip() == rejected_output.strip():
            raise ValidationError("rejected_output", "must differ from accepted_output")
        when = v.timestamp("timestamp", timestamp) or time.time()
        return records.create_preference_pair(
            self._engine,
            scope,
            context,
            accepted_output,
            rejected_output,
            weight,
            when,
            feedback_source(source, agent_id),
        )

    def log_event(
        self,
        kind: str,
        payload: dict[str, Any] | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        timestamp: Any = None,
        source: str | None = None,
    ) -> LoggedEvent:
        """Record any other event, e.g. a checkpoint (MCP ``memory_log_event``)."""
        scope = self._scope(user_id, agent_id, session_id, workspace)
        kind = str(v.scope_id("kind", kind, required=True))
        payload = v.metadata("payload", payload)
        when = v.timestamp("timestamp", timestamp) or time.time()
        return records.log_event(
            self._engine, scope, kind, payload, when, feedback_source(source, agent_id)
        )

    def rate_memory(
        self,
        memory_id: str,
        verdict: str,
        correction: str | None = None,
        *,
        recall_id: str | None = None,
        context: str | None = None,
        weight: float = 1.0,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        timestamp: Any = None,
        source: str | None = None,
    ) -> MemoryRating:
        """Say whether a memory helped (MCP ``memory_feedback``).

        Args:
            memory_id: the memory rated.
            verdict: ``accepted``, ``rejected`` or ``corrected``.
            correction: the right content, required with ``corrected``; stored as a memory of
                kind ``fact`` (same scope as the rated memory) in the same transaction.
            recall_id: the recall the memory came from; its query becomes the ``context``.
            context: the query the rating applies to. With a context the rating counts for
                similar queries only; without one it counts wherever the memory is recalled.
            weight: how much this rating counts, in (0, 10] (implicit signals pass their
                strength).
            user_id, agent_id, session_id: who rated; default the rated memory's scope.
            source: who gives this feedback (default ``agent:<agent_id>`` when an agent is
                named, else unattributed); over HTTP the API key's id replaces it. One
                source's burst counts as one signal (``feedback_source_window_s``).

        Raises:
            ValidationError: naming the bad field. NotFoundError: no such memory or recall.
        """
        ws = self._workspace(workspace)
        target = self.get(v.scope_id("memory_id", memory_id, required=True) or "", workspace=ws)
        verdict = v.choice("verdict", verdict, RATING_VERDICTS)
        correction = v.optional_text("correction", correction, self.config.max_content_chars)
        if verdict == "corrected" and correction is None:
            # A correction without the right content teaches nothing to surface instead.
            raise ValidationError("correction", "is required when verdict is 'corrected'")
        weight = v.unit_float("weight", weight, 0.0, 10.0)
        if weight == 0:
            raise ValidationError("weight", "must be > 0")
        context = v.optional_text("context", context, self.config.max_content_chars)
        v.scope_id("recall_id", recall_id)
        if recall_id is not None:
            if context is not None:
                raise ValidationError("context", "give recall_id or context, not both")
            context = records.recall_query(self._engine, ws, recall_id)
        user = v.scope_id("user_id", user_id)
        agent = v.scope_id("agent_id", agent_id)
        session = v.scope_id("session_id", session_id)
        when = v.timestamp("timestamp", timestamp) or time.time()
        rater = Scope(
            ws,
            user if user is not None else target.user_id,
            agent if agent is not None else target.agent_id,
            session if session is not None else target.session_id,
        )
        return records.rate_memory(
            self._engine,
            target,
            rater,
            verdict,
            correction,
            weight,
            when,
            recall_id,
            context,
            feedback_source(source, agent),
        )

    def undo(
        self, record_id: str, *, user_id: str | None = None, workspace: str | None = None
    ) -> dict[str, Any]:
        """Take a feedback record back: every score becomes what it would be had the record
        never been given.

        Args:
            record_id: the id of a feedback event (its reviews go with it), a decision review,
                a preference pair, a memory rating (implicit signals are ratings), a logged
                event, or a recall that received a reply through ``feedback`` (its reply
                signals go, the edge weights it changed are replayed without it, and the
                recall can receive feedback again).
            user_id: only undo a record of this user (else not found).
            workspace: default the configured one.

        Returns:
            ``record_id``, ``kind``, ``user_id``, ``source``, ``undone`` (the ids taken back),
            ``memories_removed`` (a decision, preference or correction the record stored and
            nothing else refers to) and ``edges_restored``.

        Raises:
            NotFoundError: no such record in the workspace (or not the user's).
        """
        v.scope_id("record_id", record_id, required=True)
        user = v.scope_id("user_id", user_id)
        return records.undo(self._engine, self._workspace(workspace), record_id, user)

    def _get_record(self, kind: str, record_id: str, workspace: str | None) -> Any:
        v.scope_id(f"{kind}_id", record_id, required=True)
        return self.store.get_feedback_record(kind, self._workspace(workspace), record_id)

    def _list_records(
        self,
        kind: str,
        user_id: Any,
        agent_id: Any,
        session_id: Any,
        workspace: Any,
        limit: int,
        offset: int,
    ) -> builtins.list[Any]:
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        v.positive_int("limit", limit, maximum=10_000)
        v.non_negative_int("offset", offset)
        return self.store.list_feedback_records(kind, scope, limit, offset)

    def get_feedback_event(self, event_id: str, *, workspace: str | None = None) -> FeedbackEvent:
        """One feedback event by id (``NotFoundError`` if not in the workspace)."""
        event: FeedbackEvent = self._get_record("feedback_event", event_id, workspace)
        return event

    def list_feedback_events(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[FeedbackEvent]:
        """Feedback events of a scope, oldest first."""
        return self._list_records(
            "feedback_event", user_id, agent_id, session_id, workspace, limit, offset
        )

    def get_decision_review(
        self, review_id: str, *, workspace: str | None = None
    ) -> DecisionReview:
        """One decision review by id."""
        review: DecisionReview = self._get_record("decision_review", review_id, workspace)
        return review

    def list_decision_reviews(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        workspace: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[DecisionReview]:
        """Decision reviews of a scope, oldest first."""
        return self._list_records(
            "decision_review", user_id, agent_id, None, workspace, limit, offset
        )

    def get_preference_pair(self, pair_id: str, *, workspace: str | None = None) -> PreferencePair:
        """One preference pair by id."""
        pair: PreferencePair = self._get_record("preference_pair", pair_id, workspace)
        return pair

    def list_preference_pairs(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[PreferencePair]:
        """Preference pairs of a scope, oldest first."""
        return self._list_records(
            "preference_pair", user_id, agent_id, session_id, workspace, limit, offset
        )

    def get_logged_event(self, event_id: str, *, workspace: str | None = None) -> LoggedEvent:
        """One logged event by id."""
        event: LoggedEvent = self._get_record("logged_event", event_id, workspace)
        return event

    def list_logged_events(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[LoggedEvent]:
        """Logged events of a scope, oldest first."""
        return self._list_records(
            "logged_event", user_id, agent_id, session_id, workspace, limit, offset
        )

    def get_memory_rating(self, rating_id: str, *, workspace: str | None = None) -> MemoryRating:
        """One memory rating by id."""
        rating: MemoryRating = self._get_record("memory_rating", rating_id, workspace)
        return rating

    def list_memory_ratings(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[MemoryRating]:
        """Memory ratings of a scope, oldest first."""
        return self._list_records(
            "memory_rating", user_id, agent_id, session_id, workspace, limit, offset
        )

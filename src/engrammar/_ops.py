"""Operations shared by the MCP tools and the REST endpoints, with tenant isolation.

Every request runs as a :class:`Principal`. Over HTTP the principal comes from the API key and
is *fixed*: its workspace (and user, when the key is bound to one) replaces whatever scope the
request names, a different workspace or user is refused with ``ForbiddenError``, and a memory
id outside the principal's reach is reported as not found, exactly as if it did not exist.
Over stdio (or ``--no-auth`` on loopback) the principal is the local user: scope arguments are
honoured and the configured workspace is only the default.
"""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._inspector import InspectorOperations
from .errors import ForbiddenError, NotFoundError, ValidationError
from .memory import Memory
from .models import MemoryRecord, Scope

__all__ = ["Operations", "Principal"]


@dataclass(frozen=True)
class Principal:
    """Who is calling: a workspace, optionally a user, and whether they are fixed."""

    workspace: str
    user_id: str | None = None
    key_id: str | None = None
    fixed: bool = True

    def resolve(self, workspace: Any, user_id: Any) -> tuple[str, str | None]:
        """The (workspace, user_id) a call may act on, given what it asked for."""
        if not self.fixed:
            return (workspace if workspace is not None else self.workspace), user_id
        if workspace is not None and workspace != self.workspace:
            raise ForbiddenError(
                f"this API key is bound to workspace {self.workspace!r}; "
                f"it cannot reach workspace {workspace!r}"
            )
        if self.user_id is not None:
            if user_id is not None and user_id != self.user_id:
                raise ForbiddenError(
                    f"this API key is bound to user_id {self.user_id!r}; "
                    f"it cannot act for user_id {user_id!r}"
                )
            user_id = self.user_id
        return self.workspace, user_id


class Operations(InspectorOperations):
    """The operations of the interface layer over one ``Memory``, for one principal.

    Methods take JSON-shaped keyword arguments and return JSON-ready dicts; the web
    inspector's reads come from :class:`~engrammar._inspector.InspectorOperations`.
    """

    def __init__(self, memory: Memory, principal: Principal) -> None:
        self.memory = memory
        self.principal = principal

    # -- helpers ------------------------------------------------------------------------------
    def _own(self, memory_id: Any, workspace: str) -> MemoryRecord:
        if not isinstance(memory_id, str):
            raise ValidationError("memory_id", "must be a string")
        record = self.memory.get(memory_id, workspace=workspace)
        bound = self.principal.user_id if self.principal.fixed else None
        if bound is not None and record.user_id != bound:
            # Same answer as an absent id: a key must not learn what other users hold.
            raise NotFoundError(f"memory {memory_id!r} not found in workspace {workspace!r}")
        return record

    # -- memories -----------------------------------------------------------------------------
    def add(
        self,
        *,
        messages: Any = None,
        content: Any = None,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        metadata: Any = None,
        timestamp: Any = None,
        kind: Any = "message",
    ) -> dict[str, Any]:
        ws, user = self.principal.resolve(workspace, user_id)
        ids = self.memory.add(
            messages,
            content=content,
            user_id=user,
            agent_id=agent_id,
            session_id=session_id,
            workspace=ws,
            metadata=metadata,
            timestamp=timestamp,
            kind=kind,
        )
        return {"ids": ids, "workspace": ws}

    def recall(
        self,
        *,
        query: Any,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        limit: Any = None,
    ) -> dict[str, Any]:
        ws, user = self.principal.resolve(workspace, user_id)
        result = self.memory.recall(
            query,
            user_id=user,
            agent_id=agent_id,
            session_id=session_id,
            workspace=ws,
            limit=limit,
        )
        return result.to_dict()

    def search(
        self,
        *,
        query: Any,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        limit: Any = None,
    ) -> dict[str, Any]:
        ws, user = self.principal.resolve(workspace, user_id)
        hits = self.memory.search(
            query,
            user_id=user,
            agent_id=agent_id,
            session_id=session_id,
            workspace=ws,
            limit=limit,
        )
        return {"query": query, "results": [h.to_dict() for h in hits]}

    def get(self, *, memory_id: Any, workspace: Any = None) -> dict[str, Any]:
        ws, _ = self.principal.resolve(workspace, None)
        return self._own(memory_id, ws).to_dict()

    def list(
        self,
        *,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        limit: Any = 100,
        offset: Any = 0,
    ) -> dict[str, Any]:
        ws, user = self.principal.resolve(workspace, user_id)
        records = self.memory.list(
            user_id=user,
            agent_id=agent_id,
            session_id=session_id,
            workspace=ws,
            limit=limit,
            offset=offset,
        )
        return {"memories": [r.to_dict() for r in records]}

    def update(
        self,
        *,
        memory_id: Any,
        content: Any = None,
        metadata: Any = None,
        reason: Any = "",
        workspace: Any = None,
    ) -> dict[str, Any]:
        ws, _ = self.principal.resolve(workspace, None)
        self._own(memory_id, ws)
        return self.memory.update(
            memory_id, content, metadata=metadata, workspace=ws, reason=reason
        ).to_dict()

    def forget(
        self,
        *,
        memory_id: Any = None,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
    ) -> dict[str, Any]:
        ws, user = self.principal.resolve(workspace, user_id)
        if memory_id is not None:
            ids = [memory_id] if isinstance(memory_id, str) else memory_id
            if not isinstance(ids, list) or not ids:
                raise ValidationError("memory_id", "must be an id or a non-empty list of ids")
            for mid in ids:
                record = self._own(mid, ws)
                # A scope given with ids narrows them: a memory outside it is not found, so a
                # delete either happens or says why not.
                for key, wanted in (
                    ("user_id", user),
                    ("agent_id", agent_id),
                    ("session_id", session_id),
                ):
                    if wanted is not None and getattr(record, key) != wanted:
                        raise NotFoundError(
                            f"memory {mid!r} not found for {key} {wanted!r} in workspace {ws!r}"
                        )
            deleted = self.memory.forget(
                ids, user_id=user, agent_id=agent_id, session_id=session_id, workspace=ws
            )
        else:
            deleted = self.memory.forget(
                user_id=user, agent_id=agent_id, session_id=session_id, workspace=ws
            )
        return {"deleted": deleted}

    def history(self, *, memory_id: Any, workspace: Any = None) -> dict[str, Any]:
        ws, _ = self.principal.resolve(workspace, None)
        self._own(memory_id, ws)
        return {"memory_id": memory_id, "history": self.memory.history(memory_id, workspace=ws)}

    def stats(
        self,
        *,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
    ) -> dict[str, Any]:
        ws, user = self.principal.resolve(workspace, user_id)
        out = self.memory.stats(
            user_id=user, agent_id=agent_id, session_id=session_id, workspace=ws
        )
        if self.principal.fixed:
            # Where the store lives on the server is none of a remote client's business.
            out.pop("file", None)
        return out

    # -- the feedback loop and explanations --------------------------------------------------
    def feedback(
        self,
        *,
        response: Any,
        recall_id: Any = None,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
    ) -> dict[str, Any]:
        ws, user = self.principal.resolve(workspace, user_id)
        # The recall is looked up within the principal's scope, so another tenant's
        # recall_id is not found rather than consumed.
        return self.memory.feedback(
            response,
            user_id=user,
            agent_id=agent_id,
            session_id=session_id,
            workspace=ws,
            recall_id=recall_id,
        )

    def explain(
        self,
        *,
        query: Any,
        memory_id: Any,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        limit: Any = None,
    ) -> dict[str, Any]:
        ws, user = self.principal.resolve(workspace, user_id)
        self._own(memory_id, ws)
        return self.memory.explain(
            query,
            memory_id,
            user_id=user,
            agent_id=agent_id,
            session_id=session_id,
            workspace=ws,
            limit=limit,
        )

    # -- feedback records (seed 003) ----------------------------------------------------------
    def _own_record(self, kind: str, getter: str, record_id: Any, workspace: Any) -> dict[str, Any]:
        ws, _ = self.principal.resolve(workspace, None)
        record: dict[str, Any] = getattr(self.memory, getter)(record_id, workspace=ws).to_dict()
        bound = self.principal.user_id if self.principal.fixed else None
        if bound is not None and record["user_id"] != bound:
            raise NotFoundError(f"{kind} {record_id!r} not found in workspace {ws!r}")
        return record

    def _list_records(self, lister: str, args: dict[str, Any]) -> builtins.list[dict[str, Any]]:
        ws, user = self.principal.resolve(args.pop("workspace"), args.pop("user_id"))
        records = getattr(self.memory, lister)(workspace=ws, user_id=user, **args)
        return [r.to_dict() for r in records]

    def create_feedback_event(
        self,
        *,
        input_context: Any,
        ai_output: Any,
        state: Any,
        user_reaction: Any = None,
        user_correction: Any = None,
        corrected_output: Any = None,
        reason: Any = None,
        agent_id: Any = None,
        user_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        source_event_id: Any = None,
        metadata: Any = None,
        timestamp: Any = None,
    ) -> dict[str, Any]:
        ws, user = self.principal.resolve(workspace, user_id)
        return self.memory.create_feedback_event(
            input_context,
            ai_output,
            state,
            user_reaction=user_reaction,
            user_correction=user_correction,
            corrected_output=corrected_output,
            reason=reason,
            agent_id=agent_id,
            user_id=user,
            session_id=session_id,
            workspace=ws,
            source_event_id=source_event_id,
            metadata=metadata,
            timestamp=timestamp,
        ).to_dict()

    def get_feedback_event(self, *, event_id: Any, workspace: Any = None) -> dict[str, Any]:
        return self._own_record("feedback event", "get_feedback_event", event_id, workspace)

    def list_feedback_events(
        self,
        *,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        limit: Any = 100,
        offset: Any = 0,
    ) -> dict[str, Any]:
        args = dict(locals())
        del args["self"]
        return {"feedback_events": self._list_records("list_feedback_events", args)}

    def create_decision_review(
        self,
        *,
        event_id: Any,
        final_decision: Any,
        outcome: Any = "unknown",
        confidence: Any = 1.0,
        reason: Any = None,
        user_id: Any = None,
        agent_id: Any = None,
        workspace: Any = None,
        timestamp: Any = None,
    ) -> dict[str, Any]:
        ws, user = self.principal.resolve(workspace, user_id)
        # Only an event the principal can see may be reviewed.
        self._own_record("feedback event", "get_feedback_event", event_id, ws)
        return self.memory.create_decision_review(
            event_id,
            final_decision,
            outcome,
            confidence,
            reason=reason,
            user_id=user,
            agent_id=agent_id,
            workspace=ws,
            timestamp=timestamp,
        ).to_dict()

    def get_decision_review(self, *, review_id: Any, workspace: Any = None) -> dict[str, Any]:
        return self._own_record("decision review", "get_decision_review", review_id, workspace)

    def list_decision_reviews(
        self,
        *,
        user_id: Any = None,
        agent_id: Any = None,
        workspace: Any = None,
        limit: Any = 100,
        offset: Any = 0,
    ) -> dict[str, Any]:
        args = dict(locals())
        del args["self"]
        return {"decision_reviews": self._list_records("list_decision_reviews", args)}

    def create_preference_pair(
        self,
        *,
        context: Any,
        accepted_output: Any,
        rejected_output: Any,
        weight: Any = 1.0,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        timestamp: Any = None,
    ) -> dict[str, Any]:
        ws, user = self.principal.resolve(workspace, user_id)
        return self.memory.create_preference_pair(
            context,
            accepted_output,
            rejected_output,
            weight,
            user_id=user,
            agent_id=agent_id,
            session_id=session_id,
            workspace=ws,
            timestamp=timestamp,
        ).to_dict()

    def get_preference_pair(self, *, pair_id: Any, workspace: Any = None) -> dict[str, Any]:
        return self._own_record("preference pair", "get_preference_pair", pair_id, workspace)

    def list_preference_pairs(
        self,
        *,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        limit: Any = 100,
        offset: Any = 0,
    ) -> dict[str, Any]:
        args = dict(locals())
        del args["self"]
        return {"preference_pairs": self._list_records("list_preference_pairs", args)}

    def log_event(
        self,
        *,
        kind: Any,
        payload: Any = None,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        timestamp: Any = None,
    ) -> dict[str, Any]:
        ws, user = self.principal.resolve(workspace, user_id)
        return self.memory.log_event(
            kind,
            payload,
            user_id=user,
            agent_id=agent_id,
            session_id=session_id,
            workspace=ws,
            timestamp=timestamp,
        ).to_dict()

    def get_logged_event(self, *, event_id: Any, workspace: Any = None) -> dict[str, Any]:
        return self._own_record("logged event", "get_logged_event", event_id, workspace)

    def list_logged_events(
        self,
        *,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        limit: Any = 100,
        offset: Any = 0,
    ) -> dict[str, Any]:
        args = dict(locals())
        del args["self"]
        return {"logged_events": self._list_records("list_logged_events", args)}

    def rate_memory(
        self,
        *,
        memory_id: Any,
        verdict: Any,
        correction: Any = None,
        recall_id: Any = None,
        context: Any = None,
        weight: Any = 1.0,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        timestamp: Any = None,
    ) -> dict[str, Any]:
        ws, user = self.principal.resolve(workspace, user_id)
        self._own(memory_id, ws)
        bound = self.principal.user_id if self.principal.fixed else None
        if (
            recall_id is not None
            and bound is not None
            and (
                not isinstance(recall_id, str)
                or self.memory.store.get_recall(Scope(ws, bound), recall_id) is None
            )
        ):
            # A user-bound key may rate in the light of its own user's recalls only.
            raise NotFoundError(f"recall {recall_id!r} not found in workspace {ws!r}")
        return self.memory.rate_memory(
            memory_id,
            verdict,
            correction,
            recall_id=recall_id,
            context=context,
            weight=weight,
            user_id=user,
            agent_id=agent_id,
            session_id=session_id,
            workspace=ws,
            timestamp=timestamp,
        ).to_dict()

    def get_memory_rating(self, *, rating_id: Any, workspace: Any = None) -> dict[str, Any]:
        return self._own_record("memory rating", "get_memory_rating", rating_id, workspace)

    def list_memory_ratings(
        self,
        *,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        limit: Any = 100,
        offset: Any = 0,
    ) -> dict[str, Any]:
        args = dict(locals())
        del args["self"]
        return {"memory_ratings": self._list_records("list_memory_ratings", args)}


def call(op: Callable[..., dict[str, Any]], args: dict[str, Any]) -> dict[str, Any]:
    """Call an operation with a JSON object, refusing unknown and missing fields by name."""
    params = inspect.signature(op).parameters
    unknown = sorted(set(args) - set(params))
    if unknown:
        raise ValidationError(unknown[0], f"unknown field; accepted: {', '.join(params)}")
    for name, param in params.items():
        if param.default is inspect.Parameter.empty and name not in args:
            raise ValidationError(name, "is required")
    return op(**args)

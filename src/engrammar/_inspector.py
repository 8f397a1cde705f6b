"""The web inspector's REST operations, with the same tenant rules as every other endpoint.

A mixin of :class:`~engrammar._ops.Operations`: each method resolves the caller's scope through
its :class:`~engrammar._ops.Principal` (an API key sees only its workspace, and only its user
when bound to one; a memory out of reach is not found), then asks the
:class:`~engrammar._inspect.Inspector`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _validate as v
from ._inspect import Inspector
from .models import MemoryRecord, Scope

if TYPE_CHECKING:
    from ._ops import Principal
    from .memory import Memory

__all__ = ["InspectorOperations"]


class InspectorOperations:
    """Scopes with counts, filtered memory pages, a memory's neighbourhood and learning,
    a scope's feedback timeline, rank shifts and tensions."""

    memory: Memory
    principal: Principal

    if TYPE_CHECKING:  # provided by Operations

        def _own(self, memory_id: Any, workspace: str) -> MemoryRecord: ...

    def _inspector(self) -> Inspector:
        return Inspector(self.memory.store, self.memory.config, self.memory.explain)

    def _inspect_scope(
        self, workspace: Any, user_id: Any, agent_id: Any = None, session_id: Any = None
    ) -> Scope:
        ws, user = self.principal.resolve(workspace, user_id)
        return Scope(
            workspace=v.scope_id("workspace", ws) or ws,
            user_id=v.scope_id("user_id", user),
            agent_id=v.scope_id("agent_id", agent_id),
            session_id=v.scope_id("session_id", session_id),
        )

    def scopes(
        self, *, user_id: Any = None, agent_id: Any = None, workspace: Any = None, limit: Any = None
    ) -> dict[str, Any]:
        scope = self._inspect_scope(workspace, user_id, agent_id)
        return self._inspector().scopes(scope, limit)

    def find_memories(
        self,
        *,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        limit: Any = 100,
        offset: Any = 0,
        kind: Any = None,
        role: Any = None,
        status: Any = None,
        since: Any = None,
        until: Any = None,
        text: Any = None,
        order: Any = None,
    ) -> dict[str, Any]:
        """``GET /v1/memories``: a page of a scope's memories with the list filters."""
        scope = self._inspect_scope(workspace, user_id, agent_id, session_id)
        return self._inspector().find_memories(
            scope,
            limit=limit,
            offset=offset,
            kind=kind,
            role=role,
            status=status,
            since=since,
            until=until,
            text=text,
            order=order,
        )

    def memory_edges(
        self,
        *,
        memory_id: Any,
        user_id: Any = None,
        workspace: Any = None,
        depth: Any = None,
        limit: Any = None,
    ) -> dict[str, Any]:
        # user_id narrows the neighbours to one user's memories; a user-bound key is narrowed
        # to its own user whatever it asks.
        ws, user = self.principal.resolve(workspace, user_id)
        center = self._own(memory_id, ws)
        only_user = v.scope_id("user_id", user)
        return self._inspector().memory_edges(center, depth=depth, limit=limit, only_user=only_user)

    def memory_learning(self, *, memory_id: Any, workspace: Any = None) -> dict[str, Any]:
        ws, _ = self.principal.resolve(workspace, None)
        return self._inspector().memory_learning(self._own(memory_id, ws))

    def timeline(
        self,
        *,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        limit: Any = None,
    ) -> dict[str, Any]:
        scope = self._inspect_scope(workspace, user_id, agent_id, session_id)
        return self._inspector().timeline(scope, limit)

    def rank_shifts(
        self,
        *,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        limit: Any = None,
    ) -> dict[str, Any]:
        scope = self._inspect_scope(workspace, user_id, agent_id, session_id)
        return self._inspector().rank_shifts(scope, limit)

    def tensions(
        self,
        *,
        user_id: Any = None,
        agent_id: Any = None,
        session_id: Any = None,
        workspace: Any = None,
        limit: Any = None,
    ) -> dict[str, Any]:
        scope = self._inspect_scope(workspace, user_id, agent_id, session_id)
        return self._inspector().tensions(scope, limit)

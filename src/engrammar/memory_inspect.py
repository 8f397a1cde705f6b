"""The web inspector's reads, as ``Memory`` methods (a part of the facade kept in its own file).

:class:`Memory` inherits them; they read through the engine's :class:`Inspector`.
"""

from __future__ import annotations

from typing import Any

from .engine import validate as v
from .engine.inspect import Inspector
from .memory_base import FacadeBase

__all__ = ["InspectingMixin"]


class InspectingMixin(FacadeBase):
    """Scopes, filtered memory lists, a memory's edges and learning, the timeline, rank shifts
    and tensions of a scope."""

    def _inspector(self) -> Inspector:
        return Inspector(self._engine)

    def scopes(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        workspace: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """The users, agents and sessions of a workspace: one row per distinct
        ``(user_id, agent_id, session_id)`` with its number of memories (at most ``limit``
        rows, default 2,000; ``truncated`` says whether there were more)."""
        scope = self._scope(user_id, agent_id, None, workspace, need_one=False)
        return self._inspector().scopes(scope, limit)

    def find_memories(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int = 100,
        offset: int = 0,
        kind: str | None = None,
        role: str | None = None,
        status: str | None = None,
        since: str | float | None = None,
        until: str | float | None = None,
        text: str | None = None,
        order: str | None = None,
    ) -> dict[str, Any]:
        """A page of a scope's memories with filters, and how many match in all.

        ``since`` / ``until`` bound ``created_at`` (epoch seconds or ISO-8601; ``until`` is
        exclusive), ``text`` keeps memories whose content contains it (any case), ``order`` is
        ``oldest`` (default) or ``newest``. Returns ``{"memories": [...], "total": n}``.
        """
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
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
        memory_id: str,
        *,
        user_id: str | None = None,
        workspace: str | None = None,
        depth: int | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """A memory's graph neighbourhood: its edges (both directions) out to ``depth`` hops
        (1 or 2), the memories at their ends (``user_id``'s only, when given), and every weight
        change feedback made to those edges, oldest first.

        Raises:
            NotFoundError: no such memory in the workspace.
        """
        center = self.get(memory_id, workspace=workspace)
        only_user = v.scope_id("user_id", user_id)
        return self._inspector().memory_edges(center, depth=depth, limit=limit, only_user=only_user)

    def memory_learning(self, memory_id: str, *, workspace: str | None = None) -> dict[str, Any]:
        """The feedback signals on a memory (ratings, accepted preference pairs, reply
        signals), oldest first, each with the learned multiplier after it for a query that
        fully matches their contexts.

        Raises:
            NotFoundError: no such memory in the workspace.
        """
        return self._inspector().memory_learning(self.get(memory_id, workspace=workspace))

    def timeline(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """A scope's feedback of every kind on one time line, newest first: feedback events,
        decision reviews, preference pairs, ratings, logged events and reply signals."""
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        return self._inspector().timeline(scope, limit)

    def rank_shifts(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """For the newest ``limit`` recalls that got feedback (ratings or a reply): each
        touched memory's rank in that recall and its rank for the same query now."""
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        return self._inspector().rank_shifts(scope, limit)

    def tensions(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """Contradictions between a scope's memories: both sides, the kind and reason, the
        newer side, and the ratings each side has had."""
        scope = self._scope(user_id, agent_id, session_id, workspace, need_one=False)
        return self._inspector().tensions(scope, limit)

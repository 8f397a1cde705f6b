"""What every part of the ``Memory`` facade shares: its configuration, store and engine, and
the argument helpers each method starts with (scope, limit, workspace). ``Memory`` and its
parts kept in their own files (:mod:`.memory_inspect`, :mod:`.memory_knowledge`,
:mod:`.memory_records`) inherit it, so the parts read the same attributes and helpers
``Memory`` has instead of declaring stand-ins for them."""

from __future__ import annotations

from typing import Any

from .config import Config
from .engine import Engine
from .engine import validate as v
from .errors import NotFoundError, StoreError
from .models import MemoryRecord, Scope
from .store import Backend

__all__ = ["Closed", "FacadeBase"]


class Closed:
    """What a closed ``Memory`` holds instead of its store and engine: any use of either says
    that the ``Memory`` is closed, in place of whatever the closed connection would raise."""

    def __getattr__(self, name: str) -> Any:
        raise StoreError("Memory is closed: open a new Memory to use the store again")


class FacadeBase:
    """The state and argument helpers of ``Memory`` (set by ``Memory.__init__``)."""

    config: Config
    store: Backend
    _engine: Engine

    def _scope(
        self, user_id: Any, agent_id: Any, session_id: Any, workspace: Any, *, need_one: bool = True
    ) -> Scope:
        return v.scope(
            user_id, agent_id, session_id, workspace, self.config.workspace, need_one=need_one
        )

    def _limit(self, limit: Any) -> int:
        return v.positive_int(
            "limit", self.config.recall_limit if limit is None else limit, maximum=1000
        )

    def _workspace(self, workspace: str | None) -> str:
        return v.scope_id("workspace", workspace) or self.config.workspace

    def get(self, memory_id: str, *, workspace: str | None = None) -> MemoryRecord:
        """One memory by id. Raises ``NotFoundError`` if it is not in the workspace."""
        ws = self._workspace(workspace)
        v.scope_id("memory_id", memory_id, required=True)
        found = self.store.get_memories(ws, [memory_id]).get(memory_id)
        if found is None:
            raise NotFoundError(f"memory {memory_id!r} not found in workspace {ws!r}")
        return found

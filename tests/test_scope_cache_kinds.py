"""A scope whose index alone is over ``scope_cache_bytes`` stays cached through recalls with
feedback: the feedback-context indexes have a cache of their own and do not evict it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engrammar import Config, HashEmbedder, Memory
from engrammar.store.sqlite.search import SQLiteSearch


def test_context_indexes_do_not_evict_an_oversized_scope(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[tuple[str, str | None]] = []
    load = SQLiteSearch._load_partition

    def counted(self: SQLiteSearch, workspace: str, user: str | None) -> Any:
        loads.append((workspace, user))
        return load(self, workspace, user)

    monkeypatch.setattr(SQLiteSearch, "_load_partition", counted)
    budget = 20_000  # well under one index of 120 memories (~50 bytes a dimension's row)
    memory = Memory(
        Config(path=str(tmp_path / "store"), scope_cache_bytes=budget), embedder=HashEmbedder()
    )
    try:
        for i in range(120):
            memory.add(f"note {i} on the garden, the shed and dog {i % 7}", user_id="u")
        first = memory.recall("garden dog", user_id="u")
        memory.feedback(response="dog 3 in the shed", user_id="u", recall_id=first.recall_id)
        scopes, contexts = memory.store._indexes, memory.store._contexts  # type: ignore[attr-defined]
        assert scopes.total > budget and len(scopes) == 1  # the scope alone is over budget
        before = len(loads)
        ids = []
        for i in range(4):
            result = memory.recall(f"garden dog {i}", user_id="u")
            ids.append([h.id for h in result.memories])
            memory.feedback(response=f"dog {i}", user_id="u", recall_id=result.recall_id)
        # Writes since are caught up from the change log, never by reloading the partition.
        assert loads[before:] == []
        assert all(ids)
        assert len(contexts) >= 1  # the fed-back recalls' queries, in the other cache
        assert contexts.total <= budget or len(contexts) == 1
    finally:
        memory.close()

"""What differs between the SQL of the two stores, and the helpers their shared SQL uses.

Shared statements are written once with ``?`` for a parameter and ``?v`` for a vector
parameter; :meth:`Dialect.sql` turns them into the database's own placeholders.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ...models import MemoryRecord, Scope

__all__ = ["Dialect", "memory_record", "scope_where"]


def _identity(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Dialect:
    """What differs between the SQL of two databases, for the statements they share.

    Args:
        name: the backend's name (``sqlite``, ``postgresql``).
        mark: a parameter placeholder; ``vector_mark``: a vector parameter's.
        vector: a float32 array as a parameter; ``json``: a JSON value as a parameter;
            ``from_json`` / ``from_vector``: a JSON / vector column's value as Python.
        no_limit: the ``LIMIT`` parameter that means no limit.
        in_chunk: most values in one ``IN`` list (``None``: one array parameter, ``= ANY(?)``).
        for_update, for_share: the row-lock clauses of a ``SELECT`` (empty where writers are
            serialised anyway).
        recall_order: the column that orders recalls made in the same instant;
            ``key_order``: the tie-break of API keys made in the same instant.
        ordered: whether reads of several rows per key (edges, ratings) are sorted.
    """

    name: str
    mark: str
    vector_mark: str
    vector: Callable[[np.ndarray], Any]
    json: Callable[[Any], Any]
    from_json: Callable[[Any], Any] = _identity
    from_vector: Callable[[Any], np.ndarray] = _identity
    no_limit: int | None = None
    in_chunk: int | None = None
    for_update: str = ""
    for_share: str = ""
    recall_order: str = "seq"
    ordered: bool = False
    key_order: str = ""

    def sql(self, text: str) -> str:
        """``text`` with the dialect's placeholders."""
        return _translate(text, self.mark, self.vector_mark)

    def in_list(self, column: str, values: Sequence[Any]) -> Iterator[tuple[str, list[Any]]]:
        """``column`` is one of ``values``: as (condition, parameters), in as many
        statements as the dialect needs (none for no values)."""
        if not values:
            return
        if self.in_chunk is None:
            yield f"{column} = ANY(?)", [list(values)]
            return
        for start in range(0, len(values), self.in_chunk):
            chunk = list(values[start : start + self.in_chunk])
            yield f"{column} IN ({','.join('?' * len(chunk))})", chunk


@lru_cache(maxsize=4096)
def _translate(text: str, mark: str, vector_mark: str) -> str:
    if mark == "?" and vector_mark == "?":
        return text.replace("?v", "?")
    return text.replace("?v", "\0").replace("?", mark).replace("\0", vector_mark)


def scope_where(scope: Scope, alias: str = "") -> tuple[str, list[Any]]:
    """The ``WHERE`` condition (``?`` placeholders) and parameters that select a scope."""
    p = f"{alias}." if alias else ""
    clauses = [f"{p}workspace = ?"]
    params: list[Any] = [scope.workspace]
    for key in ("user_id", "agent_id", "session_id"):
        value = getattr(scope, key)
        if value is not None:
            clauses.append(f"{p}{key} = ?")
            params.append(value)
    return " AND ".join(clauses), params


def stored_time(value: Any) -> float:
    """A stored time as a float; NaN for what is not a number (a row written by hand), so a
    bad value reads back as "invalid" instead of failing the read of its whole scope."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def memory_record(row: Sequence[Any], metadata: Any) -> MemoryRecord:
    """A :class:`MemoryRecord` from a row of ``MEMORY_COLUMNS`` (``metadata`` decoded)."""
    # By position, in the order of MemoryRecord's fields (id, content, role, kind, workspace,
    # user_id, agent_id, session_id, created_at, updated_at, status, metadata, valid_until,
    # superseded_by): recall reads dozens of rows, and keywords cost three times the time.
    return MemoryRecord(
        row[0],
        row[6],
        row[5],
        row[7],
        row[1],
        row[2],
        row[3],
        row[4],
        stored_time(row[9]),
        stored_time(row[10]),
        row[8],
        metadata,
        row[12],
        row[13],
    )

"""The web inspector's reads, written once for every SQL store (a mixin of :class:`.store.SQLStore`).

Only portable SQL (``lower``, ``LIKE ... ESCAPE``, ``GROUP BY``, ``IS NOT NULL`` in an ``ORDER
BY``) with ``?`` placeholders, so SQLite and PostgreSQL answer each question identically.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ...models import Edge, EdgeChange, MemoryRecord, Scope
from ..base import MemoryFilter
from ..tables import MEMORY_COLUMNS
from .dialect import scope_where

if TYPE_CHECKING:
    from .dialect import Dialect

__all__ = ["EDGE_CHANGE_COLUMNS", "REPLY_SIGNAL_COLUMNS", "SQLInspect"]

#: Columns of an edge-weight change, in the order they are read.
EDGE_CHANGE_COLUMNS = ("src", "dst", "kind", "delta", "weight", "recall_id", "at")
#: Columns of a reply signal as the inspector reads it (no vector).
REPLY_SIGNAL_COLUMNS = (
    "recall_id",
    "memory_id",
    "value",
    "alignment",
    "created_at",
    "user_id",
    "agent_id",
    "session_id",
    "source",
)


def _like(text: str) -> str:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class SQLInspect:
    """Reads for the inspector over the shared SQL (see :class:`~..base.Store`)."""

    dialect: ClassVar[Dialect]

    if TYPE_CHECKING:

        def _fetch(self, what: str, sql: str, args: Sequence[Any]) -> list[Any]: ...

        def _record(self, row: Sequence[Any]) -> MemoryRecord: ...

    def find_memories(
        self, scope: Scope, where: MemoryFilter, limit: int, offset: int
    ) -> tuple[list[MemoryRecord], int]:
        clause, params = scope_where(scope)
        clauses = [clause]
        for column, value in (("kind", where.kind), ("role", where.role), ("status", where.status)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if where.since is not None:
            clauses.append("created_at >= ?")
            params.append(where.since)
        if where.until is not None:
            clauses.append("created_at < ?")
            params.append(where.until)
        if where.text is not None:
            clauses.append("lower(content) LIKE ? ESCAPE '\\'")
            params.append(_like(where.text))
        cond = " AND ".join(clauses)
        # By when each was said (an import keeps the time of the export), then as stored.
        order = "created_at DESC, seq DESC" if where.newest_first else "created_at, seq"
        # The page's seqs first, then their rows: the sort carries (created_at, seq), not whole
        # rows (~14 ms a page for 10,000 memories of a user on SQLite, against ~90 ms when
        # whole rows went through it).
        # SQLite finds a row by seq (its rowid); PostgreSQL by (workspace, seq).
        outer, head = (
            ("", []) if self.dialect.name == "sqlite" else ("workspace = ? AND ", [scope.workspace])
        )
        rows = self._fetch(
            "listing memories",
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {outer}seq IN "
            f"(SELECT seq FROM memories WHERE {cond} ORDER BY {order} LIMIT ? OFFSET ?) "
            f"ORDER BY {order}",
            [*head, *params, limit, offset],
        )
        total = self._fetch(
            "counting memories", f"SELECT count(*) FROM memories WHERE {cond}", params
        )
        return [self._record(r) for r in rows], int(total[0][0])

    def scope_counts(
        self, scope: Scope, limit: int
    ) -> list[tuple[str | None, str | None, str | None, int]]:
        cond, params = scope_where(scope)
        rows = self._fetch(
            "counting scopes",
            "SELECT user_id, agent_id, session_id, count(*) FROM memories "
            f"WHERE {cond} GROUP BY user_id, agent_id, session_id "
            # NULL first on both stores (PostgreSQL sorts NULL last by default).
            "ORDER BY user_id IS NOT NULL, user_id, agent_id IS NOT NULL, agent_id, "
            "session_id IS NOT NULL, session_id LIMIT ?",
            [*params, limit],
        )
        return [(r[0], r[1], r[2], int(r[3])) for r in rows]

    def scope_edges(self, scope: Scope, kind: str, limit: int) -> list[Edge]:
        a_cond, a_params = scope_where(scope, "a")
        b_cond, b_params = scope_where(scope, "b")
        rows = self._fetch(
            "reading edges",
            "SELECT e.src, e.dst, e.kind, e.weight, e.updated_at FROM edges e "
            "JOIN memories a ON a.workspace = e.workspace AND a.id = e.src "
            "JOIN memories b ON b.workspace = e.workspace AND b.id = e.dst "
            f"WHERE e.workspace = ? AND e.kind = ? AND {a_cond} AND {b_cond} "
            "ORDER BY e.updated_at DESC, e.src, e.dst LIMIT ?",
            [scope.workspace, kind, *a_params, *b_params, limit],
        )
        return [Edge(*r) for r in rows]

    def edge_changes(
        self, workspace: str, memory_ids: Sequence[str], limit: int
    ) -> list[EdgeChange]:
        ids = list(dict.fromkeys(memory_ids))[:400]
        rows: dict[Any, Sequence[Any]] = {}  # by seq: an edge between two of them is read twice
        for end in ("src", "dst"):
            for cond, chunk in self.dialect.in_list(end, ids):
                for r in self._fetch(
                    "reading edge changes",
                    f"SELECT {', '.join(EDGE_CHANGE_COLUMNS)}, seq FROM edge_changes "
                    f"WHERE workspace = ? AND {cond} ORDER BY at, seq LIMIT ?",
                    [workspace, *chunk, limit],
                ):
                    rows[r[7]] = r
        ordered = sorted(rows.values(), key=lambda r: (r[6], r[7]))[:limit]
        return [
            {"src": r[0], "dst": r[1], "kind": r[2], "delta": r[3], "weight": r[4],
             "recall_id": r[5], "at": r[6]}
            for r in ordered
        ]  # fmt: skip

    def learned_edge_parts(
        self, workspace: str, src_ids: Sequence[str], kind: str | None = None
    ) -> list[tuple[str, str, str, str | None, float]]:
        ids = list(dict.fromkeys(src_ids))
        of_kind = "" if kind is None else " AND kind = ?"
        out: list[tuple[str, str, str, str | None, float]] = []
        for cond, chunk in self.dialect.in_list("src", ids):
            # What each change moved the weight by (after clamping); a row from before the
            # weight before a change was logged counts its asked delta.
            out += [
                (r[0], r[1], r[2], r[3], float(r[4]))
                for r in self._fetch(
                    "reading edge changes",
                    "SELECT src, dst, kind, recall_id, COALESCE(weight - before, delta) "
                    f"FROM edge_changes WHERE workspace = ? AND {cond}{of_kind}",
                    [workspace, *chunk, *([] if kind is None else [kind])],
                )
            ]
        return out

    def rating_rows(self, scope: Scope, limit: int) -> list[tuple[str, str, str]]:
        cond, params = scope_where(scope)
        rows = self._fetch(
            "reading ratings",
            f"SELECT recall_id, memory_id, verdict FROM memory_ratings WHERE {cond} "
            "AND recall_id IS NOT NULL ORDER BY seq DESC LIMIT ?",
            [*params, limit],
        )
        return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]

    def reply_signal_rows(
        self, scope: Scope, memory_id: str | None, limit: int
    ) -> list[dict[str, Any]]:
        cond, params = scope_where(scope)
        if memory_id is not None:
            cond += " AND memory_id = ?"
            params.append(memory_id)
        rows = self._fetch(
            "reading reply signals",
            f"SELECT {', '.join(REPLY_SIGNAL_COLUMNS)} FROM reply_signals WHERE {cond} "
            "ORDER BY created_at DESC, seq DESC LIMIT ?",
            [*params, limit],
        )
        return [dict(zip(REPLY_SIGNAL_COLUMNS, r, strict=True)) for r in rows]

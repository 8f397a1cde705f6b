"""The knowledge-base half of the shared SQL: named documents of a scope, stored as chunks with
their vectors. Chunks are read whole per scope and ranked by the engine (a scope's knowledge is
small next to its memories), so the SQL is the same in every database."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...models import KnowledgeBase, KnowledgeChunk, Scope
from .dialect import scope_where
from .feedback import SQLRecords

__all__ = ["SQLKnowledge"]

_BASE_COLUMNS = (
    "id, name, workspace, user_id, agent_id, session_id, chunk_count, created_at, metadata"
)
_CHUNK_COLUMNS = (
    "id, kb_id, position, content, workspace, user_id, agent_id, session_id, created_at, "
    "metadata, embedding"
)


class SQLKnowledge(SQLRecords):
    """Knowledge bases over the shared SQL (``knowledge_bases``, ``knowledge_chunks``)."""

    def add_knowledge(
        self, base: KnowledgeBase, chunks: Sequence[tuple[KnowledgeChunk, np.ndarray]]
    ) -> None:
        j, vec, q = self.dialect.json, self.dialect.vector, self._q
        base_sql = q(f"INSERT INTO knowledge_bases ({_BASE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)")
        chunk_sql = q(
            f"INSERT INTO knowledge_chunks ({_CHUNK_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?v)"
        )

        def run(conn: Any) -> None:
            conn.execute(
                base_sql,
                (
                    base.id, base.name, base.workspace, base.user_id, base.agent_id,
                    base.session_id, base.chunk_count, base.created_at, j(base.metadata),
                ),
            )  # fmt: skip
            for chunk, vector in chunks:
                conn.execute(
                    chunk_sql,
                    (
                        chunk.id, chunk.kb_id, chunk.position, chunk.content, chunk.workspace,
                        chunk.user_id, chunk.agent_id, chunk.session_id, chunk.created_at,
                        j(chunk.metadata), vec(vector),
                    ),
                )  # fmt: skip

        self._run("storing the knowledge base", run)

    def knowledge_chunks(self, scope: Scope) -> list[tuple[KnowledgeChunk, np.ndarray]]:
        sql, params = self._chunks_query(scope)
        return self._chunks(self._fetch("reading knowledge", sql, params))

    @staticmethod
    def _chunks_query(scope: Scope) -> tuple[str, list[Any]]:
        """The statement (``?`` placeholders) that reads a scope's chunks, and its parameters."""
        where, params = scope_where(scope)
        return f"SELECT {_CHUNK_COLUMNS} FROM knowledge_chunks WHERE {where} ORDER BY seq", params

    def _chunks(self, rows: Sequence[Sequence[Any]]) -> list[tuple[KnowledgeChunk, np.ndarray]]:
        out = []
        for r in rows:
            chunk = KnowledgeChunk(
                r[0], r[1], int(r[2]), r[3], r[4], r[5], r[6], r[7], float(r[8]),
                self.dialect.from_json(r[9]),
            )  # fmt: skip
            out.append((chunk, np.asarray(self.dialect.from_vector(r[10]), dtype=np.float32)))
        return out

    def list_knowledge(self, scope: Scope) -> list[KnowledgeBase]:
        where, params = scope_where(scope)
        rows = self._fetch(
            "reading knowledge bases",
            f"SELECT {_BASE_COLUMNS} FROM knowledge_bases WHERE {where} ORDER BY seq",
            params,
        )
        return [
            KnowledgeBase(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                r[5],
                int(r[6]),
                float(r[7]),
                self.dialect.from_json(r[8]),
            )
            for r in rows
        ]

    def delete_knowledge(self, scope: Scope, kb_id: str) -> int:
        where, params = scope_where(scope)
        q = self._q

        def run(conn: Any) -> int:
            found = conn.execute(
                q(f"SELECT id FROM knowledge_bases WHERE {where} AND id = ?"), [*params, kb_id]
            ).fetchone()
            if found is None:
                return -1
            cur = conn.execute(
                q("DELETE FROM knowledge_chunks WHERE workspace = ? AND kb_id = ?"),
                (scope.workspace, kb_id),
            )
            conn.execute(
                q("DELETE FROM knowledge_bases WHERE workspace = ? AND id = ?"),
                (scope.workspace, kb_id),
            )
            return int(cur.rowcount)

        return self._run("deleting the knowledge base", run)

"""The knowledge-base half of the shared SQL: named documents of a scope, stored as chunks with
their vectors. Writing, listing and deleting are the same SQL in every database; searching is
each backend's own (:meth:`search_knowledge`): the database's vector search, or an index kept
between calls, so no search reads every vector of the scope."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import TooLargeError
from ...models import KnowledgeBase, KnowledgeChunk, Scope
from ..base import NewKnowledgeBase
from .dialect import scope_where
from .feedback import SQLRecords

__all__ = ["CHUNK_COLUMNS", "SQLKnowledge", "scope_full"]

_BASE_COLUMNS = (
    "id, name, workspace, user_id, agent_id, session_id, chunk_count, created_at, metadata"
)
#: A chunk's columns without its vector, in the order :meth:`SQLKnowledge._chunk` reads them.
CHUNK_COLUMNS = (
    "id, kb_id, position, content, workspace, user_id, agent_id, session_id, created_at, metadata"
)


def scope_full(workspace: str, user_id: str | None, held: int, adding: int, most: int) -> str:
    """What a :class:`~engrammar.errors.TooLargeError` says when a knowledge base does not
    fit in its workspace and user."""
    whose = f"workspace {workspace!r}" + (f" and user {user_id!r}" if user_id else "")
    return (
        f"{adding} passages would make {held + adding} in {whose}; at most {most} "
        "(max_knowledge_chunks_per_scope): delete a knowledge base first"
    )


class SQLKnowledge(SQLRecords):
    """Knowledge bases over the shared SQL (``knowledge_bases``, ``knowledge_chunks``)."""

    def add_knowledge(self, new: NewKnowledgeBase, max_scope_chunks: int | None = None) -> None:
        base, chunks = new.base, new.chunks
        j, vec, q = self.dialect.json, self.dialect.vector, self._q
        base_sql = q(f"INSERT INTO knowledge_bases ({_BASE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)")
        chunk_sql = q(
            f"INSERT INTO knowledge_chunks ({CHUNK_COLUMNS}, embedding) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?v)"
        )

        def run(conn: Any) -> None:
            if max_scope_chunks is not None:
                # Counted in the write's own transaction, so two writers racing cannot both
                # pass the limit (the backend serialises them for this partition).
                self._lock_knowledge_partition(conn, base.workspace, base.user_id)
                held = self._count_chunks(conn, base.workspace, base.user_id)
                if held + len(chunks) > max_scope_chunks:
                    raise TooLargeError(
                        "chunks",
                        scope_full(
                            base.workspace, base.user_id, held, len(chunks), max_scope_chunks
                        ),
                    )
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

    def count_knowledge_chunks(self, workspace: str, user_id: str | None) -> int:
        return int(
            self._run(
                "counting knowledge",
                lambda conn: self._count_chunks(conn, workspace, user_id),
                write=False,
            )
        )

    def _count_chunks(self, conn: Any, workspace: str, user_id: str | None) -> int:
        user = "user_id IS NULL" if user_id is None else "user_id = ?"
        params = [workspace] if user_id is None else [workspace, user_id]
        row = conn.execute(
            self._q(f"SELECT count(*) FROM knowledge_chunks WHERE workspace = ? AND {user}"),
            params,
        ).fetchone()
        return int(row[0])

    def _lock_knowledge_partition(self, conn: Any, workspace: str, user_id: str | None) -> None:
        """Hold off other writers of this (workspace, user)'s knowledge until the transaction
        ends; nothing to do where writers are serial anyway."""

    def _chunk(self, r: Sequence[Any]) -> KnowledgeChunk:
        """A chunk from a row of :data:`CHUNK_COLUMNS`."""
        return KnowledgeChunk(
            r[0], r[1], int(r[2]), r[3], r[4], r[5], r[6], r[7], float(r[8]),
            self.dialect.from_json(r[9]),
        )  # fmt: skip

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

"""The in-process index of one (workspace, user) partition's knowledge-base chunks: their
unit vectors as one matrix with the few columns a scope filter reads, kept between searches
and reloaded only when the partition's chunks changed (a knowledge base is written and
deleted whole, so its count and newest ``seq`` tell). A search then costs one matrix-vector
product and a read of the ``limit`` chunks it returns, not a read of every vector."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import numpy as np

from .index import ROW_OVERHEAD, cosines

__all__ = ["KnowledgeIndex", "load_knowledge", "partition_version"]


@dataclass(frozen=True)
class KnowledgeIndex:
    """One partition's chunks, oldest first."""

    version: tuple[int, int]
    ids: list[str]
    seqs: np.ndarray
    agent_ids: np.ndarray
    session_ids: np.ndarray
    matrix: np.ndarray

    @property
    def nbytes(self) -> int:
        # An empty index counts as a row: the cache keeps those too.
        return int(self.matrix.nbytes) + (len(self.ids) + 1) * ROW_OVERHEAD

    def top(
        self,
        query: np.ndarray,
        limit: int,
        min_score: float,
        agent_id: str | None,
        session_id: str | None,
    ) -> list[tuple[float, int, str]]:
        """``(score, seq, id)`` of the best ``limit`` chunks of the scope scoring at least
        ``min_score``, best first."""
        if not self.ids:
            return []
        scores = np.clip(cosines(self.matrix, query), 0.0, 1.0)
        keep = scores >= min_score
        if agent_id is not None:
            keep &= self.agent_ids == agent_id
        if session_id is not None:
            keep &= self.session_ids == session_id
        rows = np.flatnonzero(keep)
        if len(rows) > limit:
            # the limit best, ties to the older (lower seq) by a stable sort of a small slice
            part = rows[np.argpartition(-scores[rows], limit - 1)[:limit]]
            cut = scores[part].min() - 1e-6
            rows = rows[scores[rows] >= cut]
        # scores equal to 6 places are ties, the older first (as in every store)
        order = sorted(rows.tolist(), key=lambda i: (-round(float(scores[i]), 6), self.seqs[i]))
        return [(float(scores[i]), int(self.seqs[i]), self.ids[i]) for i in order[:limit]]


def _user_clause(user_id: str | None) -> tuple[str, list[str]]:
    return ("user_id IS NULL", []) if user_id is None else ("user_id = ?", [user_id])


def partition_version(
    conn: sqlite3.Connection, workspace: str, user_id: str | None
) -> tuple[int, int]:
    """(chunks, newest ``seq``) of the partition: changes with every knowledge base written
    or deleted there (``seq`` is never reused)."""
    user, params = _user_clause(user_id)
    row = conn.execute(
        f"SELECT count(*), coalesce(max(seq), 0) FROM knowledge_chunks "
        f"WHERE workspace = ? AND {user}",
        [workspace, *params],
    ).fetchone()
    return int(row[0]), int(row[1])


def load_knowledge(conn: sqlite3.Connection, workspace: str, user_id: str | None) -> KnowledgeIndex:
    """The partition's index, read in one transaction (its version matches its rows)."""
    user, params = _user_clause(user_id)
    conn.execute("BEGIN")
    try:
        rows = conn.execute(
            f"SELECT seq, id, agent_id, session_id, embedding FROM knowledge_chunks "
            f"WHERE workspace = ? AND {user} ORDER BY seq",
            [workspace, *params],
        ).fetchall()
    finally:
        conn.execute("COMMIT")
    if not rows:
        none = np.zeros(0, dtype=object)
        return KnowledgeIndex((0, 0), [], np.zeros(0, np.int64), none, none, np.zeros((0, 0)))
    dim = len(rows[0][4]) // 4
    matrix = np.frombuffer(b"".join(r[4] for r in rows), dtype=np.float32).reshape(len(rows), dim)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)
    seqs = np.array([r[0] for r in rows], dtype=np.int64)
    return KnowledgeIndex(
        (len(rows), int(seqs[-1])),
        [r[1] for r in rows],
        seqs,
        np.array([r[2] for r in rows], dtype=object),
        np.array([r[3] for r in rows], dtype=object),
        matrix,
    )

"""Undoing a feedback record in SQL, shared by both stores (see :meth:`..base.Store.undo_record`).

A record's learning is read from the record itself (events, reviews, pairs, ratings, reply
signals are read at ranking time), so deleting it takes that part back exactly. What a record
wrote elsewhere is taken back with it, in the same transaction:

* the memory it stored beside itself (a decision, a preference, a correction), when this
  record created it and nothing else refers to it;
* a reply's edge changes: replayed without them (:func:`~engrammar.learn.replay.replay_edge`),
  and its recall can receive feedback again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import NotFoundError
from ...learn.replay import LoggedChange, replay_edge
from ...models import Scope, Undone, UndoResult
from .dialect import scope_where
from .feedback import SQLRecords

__all__ = ["SQLUndo"]

#: kind -> its table (a reply's feedback is found by its recall's id)
_KINDS = (
    ("memory_rating", "memory_ratings"),
    ("preference_pair", "preference_pairs"),
    ("decision_review", "decision_reviews"),
    ("feedback_event", "feedback_events"),
    ("logged_event", "logged_events"),
)


class SQLUndo(SQLRecords):
    """``undo_record`` over the shared SQL."""

    if TYPE_CHECKING:  # SQLStore's

        def _restore_superseded(self, conn: Any, workspace: str, gone: Sequence[str]) -> None: ...

    def undo_record(
        self, workspace: str, record_id: str, lo: float, hi: float, user_id: str | None = None
    ) -> UndoResult:
        q = self._q
        missing = (
            f"no feedback record {record_id!r} in workspace {workspace!r} (an id of a "
            "feedback event, review, preference pair, rating, logged event, or a recall "
            "that received feedback)"
        )

        def run(conn: Any) -> UndoResult:
            for kind, table in _KINDS:
                row = conn.execute(
                    q(f"SELECT user_id, source, created_at FROM {table} "
                      f"WHERE workspace = ? AND id = ?{self.dialect.for_update}"),
                    (workspace, record_id),
                ).fetchone()  # fmt: skip
                if row is not None:
                    if user_id is not None and row[0] != user_id:
                        raise NotFoundError(missing)
                    undone = self._undo(conn, workspace, kind, record_id, row[2], lo, hi)
                    return {
                        "record_id": record_id,
                        "kind": kind,
                        "user_id": row[0],
                        "source": row[1],
                        **undone,
                    }
            found = conn.execute(
                q(f"SELECT user_id, consumed_at FROM recalls WHERE workspace = ? AND id = ?"
                  f"{self.dialect.for_update}"),
                (workspace, record_id),
            ).fetchone()  # fmt: skip
            if found is None or found[1] is None or (user_id is not None and found[0] != user_id):
                raise NotFoundError(missing)
            source = conn.execute(
                q("SELECT source FROM reply_signals WHERE workspace = ? AND recall_id = ?"),
                (workspace, record_id),
            ).fetchone()
            return {
                "record_id": record_id,
                "kind": "reply",
                "user_id": found[0],
                "source": None if source is None else source[0],
                **self._undo_reply(conn, workspace, record_id, lo, hi),
            }

        return self._run("undoing the feedback record", run)

    # -- records -------------------------------------------------------------------------------
    def _undo(
        self,
        conn: Any,
        workspace: str,
        kind: str,
        record_id: str,
        created_at: float,
        lo: float,
        hi: float,
    ) -> Undone:
        q = self._q
        undone = [record_id]
        # (memory id, metadata key and value naming this record, the times it may be from)
        linked: list[tuple[str, str, str, frozenset[float]]] = []
        when = frozenset({created_at})

        def take(table: str, columns: str) -> Any:
            """The record's ``columns``, read as its row is deleted."""
            key = (workspace, record_id)
            where = "WHERE workspace = ? AND id = ?"
            row = conn.execute(q(f"SELECT {columns} FROM {table} {where}"), key).fetchone()
            conn.execute(q(f"DELETE FROM {table} {where}"), key)
            return row

        if kind == "memory_rating":
            row = take("memory_ratings", "memory_id, correction_memory_id")
            if row[1] is not None:
                linked.append((row[1], "corrects", row[0], when))
        elif kind == "preference_pair":
            row = take("preference_pairs", "memory_id")
            if row[0] is not None:
                linked.append((row[0], "pair_id", record_id, when))
        elif kind == "decision_review":
            row = take("decision_reviews", "event_id, decision_memory_id")
            if row[1] is not None:
                linked.append((row[1], "event_id", row[0], when))
        elif kind == "feedback_event":
            # Its reviews are about it: they go with it (and what they stored).
            reviews = conn.execute(
                q("SELECT id, created_at FROM decision_reviews WHERE workspace = ? "
                  "AND event_id = ? ORDER BY seq"),
                (workspace, record_id),
            ).fetchall()  # fmt: skip
            undone += [r[0] for r in reviews]
            when = when | {r[1] for r in reviews}
            links = conn.execute(
                q("SELECT memory_id FROM decision_memories WHERE workspace = ? AND event_id = ?"),
                (workspace, record_id),
            ).fetchall()
            linked += [(r[0], "event_id", record_id, when) for r in links]
            for table, column in (
                ("decision_reviews", "event_id"),
                ("decision_memories", "event_id"),
                ("feedback_events", "id"),
            ):
                conn.execute(
                    q(f"DELETE FROM {table} WHERE workspace = ? AND {column} = ?"),
                    (workspace, record_id),
                )
        else:
            take("logged_events", "id")
        removed = self._remove_linked(conn, workspace, linked, record_id, lo, hi)
        return {"undone": undone, "memories_removed": removed, "edges_restored": 0}

    def _remove_linked(
        self,
        conn: Any,
        workspace: str,
        linked: Sequence[tuple[str, str, str, frozenset[float]]],
        record_id: str,
        lo: float,
        hi: float,
    ) -> list[str]:
        """Delete the memories the undone record stored beside itself: each one this record
        created (its metadata names the record, its time is the record's) that nothing left
        refers to. One another record (or a rating, a reply) refers to stays."""
        q = self._q
        removed: list[str] = []
        for memory_id, key, expected, times in dict.fromkeys(linked):
            row = conn.execute(
                q("SELECT created_at, metadata, user_id FROM memories "
                  "WHERE workspace = ? AND id = ?"),
                (workspace, memory_id),
            ).fetchone()  # fmt: skip
            if row is None:
                continue
            metadata = self.dialect.from_json(row[1]) or {}
            if metadata.get(key) != expected or row[0] not in times:
                continue
            if self._referenced(conn, workspace, memory_id):
                continue
            conn.execute(
                q("DELETE FROM decision_memories WHERE workspace = ? AND memory_id = ?"),
                (workspace, memory_id),
            )
            self._delete_memory(conn, workspace, memory_id, row[2], f"undo {record_id}", lo, hi)
            removed.append(memory_id)
        return removed

    def _referenced(self, conn: Any, workspace: str, memory_id: str) -> bool:
        q = self._q
        for table, column in (
            ("decision_memories", "memory_id"),
            ("decision_reviews", "decision_memory_id"),
            ("preference_pairs", "memory_id"),
            ("memory_ratings", "correction_memory_id"),
            ("memory_ratings", "memory_id"),
            ("reply_signals", "memory_id"),
        ):
            if conn.execute(
                q(f"SELECT 1 FROM {table} WHERE workspace = ? AND {column} = ? LIMIT 1"),
                (workspace, memory_id),
            ).fetchone():
                return True
        return False

    def _delete_memory(
        self,
        conn: Any,
        workspace: str,
        memory_id: str,
        user_id: str | None,
        reason: str,
        lo: float,
        hi: float,
    ) -> None:
        """Delete one memory as ``forget`` does, with its edges and their change log."""
        q = self._q
        self._restore_superseded(conn, workspace, [memory_id])
        for table in ("edges", "edge_changes"):
            conn.execute(
                q(f"DELETE FROM {table} WHERE workspace = ? AND (src = ? OR dst = ?)"),
                (workspace, memory_id, memory_id),
            )
        conn.execute(
            q("DELETE FROM memories WHERE workspace = ? AND id = ?"), (workspace, memory_id)
        )
        conn.execute(
            q("UPDATE memory_changes SET before = NULL, after = NULL "
              "WHERE workspace = ? AND memory_id = ?"),
            (workspace, memory_id),
        )  # fmt: skip
        self._log(conn, memory_id, workspace, user_id, "forget", None, None, reason)

    def _forget_learning(self, conn: Any, scope: Scope, lo: float, hi: float) -> None:
        """Before a scope is forgotten: take back the edge changes of its replies."""
        where, params = scope_where(scope)
        recalls = [
            r[0]
            for r in conn.execute(
                self._q(f"SELECT id FROM recalls WHERE {where} AND consumed_at IS NOT NULL"),
                params,
            ).fetchall()
        ]
        if recalls:
            self._replay_edges(conn, scope.workspace, recalls, lo, hi)

    # -- a reply's feedback --------------------------------------------------------------------
    def _undo_reply(
        self, conn: Any, workspace: str, recall_id: str, lo: float, hi: float
    ) -> Undone:
        q = self._q
        conn.execute(
            q("DELETE FROM reply_signals WHERE workspace = ? AND recall_id = ?"),
            (workspace, recall_id),
        )
        conn.execute(
            q("UPDATE recalls SET consumed_at = NULL WHERE workspace = ? AND id = ?"),
            (workspace, recall_id),
        )
        return {
            "undone": [recall_id],
            "memories_removed": [],
            "edges_restored": self._replay_edges(conn, workspace, [recall_id], lo, hi),
        }

    def _replay_edges(
        self, conn: Any, workspace: str, recall_ids: Sequence[str], lo: float, hi: float
    ) -> int:
        """Take the edge changes of ``recall_ids`` back (see :mod:`~engrammar.learn.replay`);
        returns how many edges had changes logged."""
        q = self._q
        undone = set(recall_ids)
        edges: set[tuple[str, str, str]] = set()
        for cond, chunk in self.dialect.in_list("recall_id", list(undone)):
            edges |= {
                (r[0], r[1], r[2])
                for r in conn.execute(
                    q(f"SELECT src, dst, kind FROM edge_changes WHERE workspace = ? AND {cond}"),
                    [workspace, *chunk],
                ).fetchall()
            }
        for src, dst, kind in sorted(edges):  # one lock order, as adjust_edges
            current = conn.execute(
                q(f"SELECT weight FROM edges WHERE workspace = ? AND src = ? AND dst = ? "
                  f"AND kind = ?{self.dialect.for_update}"),
                (workspace, src, dst, kind),
            ).fetchone()  # fmt: skip
            rows = conn.execute(
                q("SELECT seq, delta, before, weight, recall_id FROM edge_changes "
                  "WHERE workspace = ? AND src = ? AND dst = ? AND kind = ? ORDER BY seq"),
                (workspace, src, dst, kind),
            ).fetchall()  # fmt: skip
            log = [LoggedChange(r[0], r[1], r[2], r[3], r[4] in undone) for r in rows]
            if current is not None:
                weight, rewritten = replay_edge(log, current[0], lo, hi)
                conn.execute(
                    q("UPDATE edges SET weight = ? WHERE workspace = ? AND src = ? AND dst = ? "
                      "AND kind = ?"),
                    (weight, workspace, src, dst, kind),
                )  # fmt: skip
                for seq, before, after in rewritten:
                    conn.execute(
                        q("UPDATE edge_changes SET before = ?, weight = ? "
                          "WHERE workspace = ? AND seq = ?"),
                        (before, after, workspace, seq),
                    )  # fmt: skip
            for cond, chunk in self.dialect.in_list("recall_id", list(undone)):
                conn.execute(
                    q(f"DELETE FROM edge_changes WHERE workspace = ? AND src = ? AND dst = ? "
                      f"AND kind = ? AND {cond}"),
                    [workspace, src, dst, kind, *chunk],
                )  # fmt: skip
        return len(edges)

"""The SQL both stores share: one :class:`SQLStore` over a small :class:`Dialect`.

Every statement here is written once with ``?`` for a parameter and ``?v`` for a vector
parameter; the dialect turns them into its own placeholders (``%s`` / ``%b`` for psycopg).
What a backend adds is what is truly its own: how a call gets a connection and a transaction
(:meth:`SQLStore._run`), how a memory row is inserted and indexed for search, and the SQL that
only one database can run (see :mod:`.sqlite` and :mod:`.postgres`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, TypeVar

import numpy as np

from ..errors import EmbedderError, NotFoundError
from ..models import (
    DecisionReview,
    Edge,
    FeedbackEvent,
    LoggedEvent,
    MemoryRating,
    MemoryRecord,
    PreferencePair,
    Scope,
)
from .base import ApiKeyRecord, FeedbackRecord, NewEdge, NewMemory, RecallRecord, rebuilt_edges
from .tables import EVENT_COLUMNS, FEEDBACK_TABLES, MEMORY_COLUMNS

__all__ = ["KEY_COLUMNS", "Dialect", "SQLStore", "memory_record", "scope_where"]

T = TypeVar("T")

_RECALL_COLUMNS = (
    "id, workspace, user_id, agent_id, session_id, query, created_at, memory_ids, paths, "
    "tensions, consumed_at"
)
KEY_COLUMNS = "key_id, key_hash, workspace, user_id, name, created_at, revoked_at"


def _identity(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Dialect:
    """What differs between the SQL of two databases, for the statements they share.

    Args:
        name: the backend's name (``sqlite``, ``postgresql``).
        mark: a parameter placeholder; ``vector_mark``: a vector parameter's.
        vector: a float32 array as a parameter; ``json``: a JSON value as a parameter;
            ``from_json``: a JSON column's value as Python.
        in_chunk: most values in one ``IN`` list (``None``: one array parameter, ``= ANY(?)``).
        for_update, for_share: the row-lock clauses of a ``SELECT`` (empty where writers are
            serialised anyway).
        recall_order: the column that orders recalls made in the same instant;
            ``key_order``: the tie-break of API keys made in the same instant.
        edge_order: whether edge reads come back in a fixed order.
    """

    name: str
    mark: str
    vector_mark: str
    vector: Callable[[np.ndarray], Any]
    json: Callable[[Any], Any]
    from_json: Callable[[Any], Any] = _identity
    in_chunk: int | None = None
    for_update: str = ""
    for_share: str = ""
    recall_order: str = "seq"
    edge_order: bool = False
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


def memory_record(row: Sequence[Any], metadata: Any) -> MemoryRecord:
    """A :class:`MemoryRecord` from a row of ``MEMORY_COLUMNS`` (``metadata`` decoded)."""
    return MemoryRecord(
        id=row[0],
        workspace=row[1],
        user_id=row[2],
        agent_id=row[3],
        session_id=row[4],
        role=row[5],
        content=row[6],
        kind=row[7],
        status=row[8],
        created_at=row[9],
        updated_at=row[10],
        metadata=metadata,
    )


class SQLStore:
    """The logic of :class:`~.base.Store` that is the same in every SQL database.

    A backend sets :attr:`dialect` and implements :meth:`_run` and the hooks below
    (``_insert_linked_memory``, ``_insert_edges``, ``_link_decision``, ``_store_facts``,
    ``_location``); it may override any method with SQL of its own.
    """

    dialect: ClassVar[Dialect]
    _dim: int | None

    # -- what a backend provides -------------------------------------------------------------
    def _run(
        self,
        what: str,
        fn: Callable[[Any], T],
        *,
        write: bool = True,
        single: bool = False,
        snapshot: bool = False,
    ) -> T:
        """Run ``fn(connection)``: a write in one transaction (``single``: one statement,
        atomic by itself), a read (``snapshot``: several statements that must agree).
        Backend failures raise :class:`~engrammar.errors.StoreError` naming ``what``."""
        raise NotImplementedError

    def _insert_linked_memory(self, conn: Any, row: NewMemory, now: float) -> str:
        """Insert a memory made by a feedback record, or return the identical one already
        there."""
        raise NotImplementedError

    def _insert_edges(
        self,
        conn: Any,
        workspace: str,
        edges: Sequence[NewEdge],
        rename: dict[str, str],
        now: float,
    ) -> None:
        raise NotImplementedError

    def _link_decision(
        self, conn: Any, workspace: str, event_id: str, answer: str, memory_id: str, now: float
    ) -> None:
        """Record that ``memory_id`` holds the ``answer`` of a feedback event."""
        raise NotImplementedError

    def _store_facts(self, conn: Any) -> dict[str, Any]:
        """The backend's part of :meth:`stats` (its name, where it lives, its size)."""
        raise NotImplementedError

    def _location(self) -> str:
        """Where the store lives, for messages."""
        raise NotImplementedError

    def _lock_meta(self, conn: Any) -> None:
        """Serialise embedder checks across processes (a no-op where writes are serial)."""

    def _first_embedder(self, conn: Any, dim: int) -> None:
        """Prepare the store for vectors of ``dim`` (the first embedder it meets)."""

    def _q(self, sql: str) -> str:
        return self.dialect.sql(sql)

    def _fetch(self, what: str, sql: str, args: Sequence[Any]) -> list[Any]:
        """The rows of one read statement (``?`` placeholders)."""
        sql = self._q(sql)
        return list(self._run(what, lambda c: c.execute(sql, args).fetchall(), write=False))

    # -- meta ----------------------------------------------------------------------------------
    def check_embedder(self, name: str, dim: int) -> None:
        value = json.dumps({"name": name, "dim": dim})

        def run(conn: Any) -> None:
            self._lock_meta(conn)
            row = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
            if row is None:
                conn.execute(
                    self._q("INSERT INTO meta (key, value) VALUES ('embedder', ?)"), (value,)
                )
                self._first_embedder(conn, dim)
                return
            known = json.loads(row[0])
            if known["dim"] != dim:
                raise EmbedderError(
                    f"the store at {self._location()} holds {known['dim']}-dimensional vectors "
                    f"from {known['name']!r}; the embedder {name!r} makes {dim}. Use the same "
                    "embedder, or export and re-import into a new store."
                )
            if known["name"] != name:
                conn.execute(self._q("UPDATE meta SET value = ? WHERE key = 'embedder'"), (value,))

        self._run("checking the embedder", run)
        self._dim = dim

    # -- memories ------------------------------------------------------------------------------
    def _record(self, row: Sequence[Any]) -> MemoryRecord:
        return memory_record(row, self.dialect.from_json(row[11]))

    def _log(
        self,
        conn: Any,
        memory_id: str,
        workspace: str,
        user_id: str | None,
        op: str,
        before: str | None,
        after: str | None,
        reason: str = "",
    ) -> None:
        conn.execute(
            self._q(
                "INSERT INTO memory_changes (memory_id, workspace, user_id, op, before, after, "
                "reason, created_at) VALUES (?,?,?,?,?,?,?,?)"
            ),
            (memory_id, workspace, user_id, op, before, after, reason, time.time()),
        )

    def list_memories(self, scope: Scope, limit: int, offset: int) -> list[MemoryRecord]:
        where, params = scope_where(scope)
        sql = self._q(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY seq LIMIT ? OFFSET ?"
        )
        rows = self._run(
            "listing memories",
            lambda c: c.execute(sql, [*params, limit, offset]).fetchall(),
            write=False,
        )
        return [self._record(r) for r in rows]

    def latest_memories(self, scope: Scope, limit: int) -> list[MemoryRecord]:
        where, params = scope_where(scope)
        sql = self._q(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} AND status = 'active' "
            "ORDER BY seq DESC LIMIT ?"
        )
        rows = self._run(
            "reading memories", lambda c: c.execute(sql, [*params, limit]).fetchall(), write=False
        )
        return [self._record(r) for r in rows]

    def history(self, workspace: str, memory_id: str) -> list[dict[str, Any]]:
        sql = self._q(
            "SELECT rev, op, before, after, reason, created_at FROM memory_changes "
            "WHERE workspace = ? AND memory_id = ? ORDER BY rev"
        )
        rows = self._run(
            "reading the history",
            lambda c: c.execute(sql, (workspace, memory_id)).fetchall(),
            write=False,
        )
        if not rows:
            raise NotFoundError(f"memory {memory_id!r} not found in workspace {workspace!r}")
        return [
            {"rev": r[0], "op": r[1], "before": r[2], "after": r[3], "reason": r[4], "at": r[5]}
            for r in rows
        ]

    def stats(self, scope: Scope) -> dict[str, Any]:
        where, params = scope_where(scope)
        where_m, params_m = scope_where(scope, "m")
        q = self._q

        def count(conn: Any, sql: str, args: Sequence[Any]) -> int:
            row = conn.execute(q(sql), args).fetchone()
            return int(row[0]) if row else 0

        def run(conn: Any) -> dict[str, Any]:
            feedback = {}
            for kind, (table, _, has_session) in FEEDBACK_TABLES.items():
                narrowed = (
                    scope if has_session else Scope(scope.workspace, scope.user_id, scope.agent_id)
                )
                w, p = scope_where(narrowed)
                feedback[kind] = count(conn, f"SELECT count(*) FROM {table} WHERE {w}", p)
            by_kind = q(f"SELECT kind, count(*) FROM memories WHERE {where} GROUP BY kind")
            return {
                "memories": count(conn, f"SELECT count(*) FROM memories WHERE {where}", params),
                "memories_by_kind": dict(conn.execute(by_kind, params).fetchall()),
                "edges": count(
                    conn,
                    "SELECT count(*) FROM edges e JOIN memories m ON m.workspace = e.workspace "
                    f"AND m.id = e.src WHERE {where_m}",
                    params_m,
                ),
                "recalls": count(conn, f"SELECT count(*) FROM recalls WHERE {where}", params),
                "feedback_records": feedback,
                **self._store_facts(conn),
            }

        return self._run("stats", run, write=False)

    def _replace_edges(
        self, conn: Any, workspace: str, memory_id: str, edges: Sequence[NewEdge]
    ) -> None:
        where = "workspace = ? AND (src = ? OR dst = ?) AND kind <> 'sequence'"
        args = (workspace, memory_id, memory_id)
        learned = {
            (r[0], r[1], r[2]): r[3]
            for r in conn.execute(
                self._q(f"SELECT src, dst, kind, weight FROM edges WHERE {where}"), args
            ).fetchall()
        }
        conn.execute(self._q(f"DELETE FROM edges WHERE {where}"), args)
        self._insert_edges(conn, workspace, rebuilt_edges(edges, learned), {}, time.time())

    # -- graph ---------------------------------------------------------------------------------
    def edges_from(
        self, workspace: str, ids: Sequence[str], min_weight: float = 0.0, kind: str | None = None
    ) -> list[Edge]:
        return self._edges(workspace, ids, min_weight, "src", "dst", kind)

    def edges_to(self, workspace: str, ids: Sequence[str], min_weight: float = 0.0) -> list[Edge]:
        return self._edges(workspace, ids, min_weight, "dst", "src")

    def _edges(
        self,
        workspace: str,
        ids: Sequence[str],
        min_weight: float,
        end: str,
        other: str,
        kind: str | None = None,
    ) -> list[Edge]:
        """Edges whose ``end`` column ("src" or "dst") is one of ``ids`` (of ``kind`` only,
        if set)."""
        of_kind = "" if kind is None else " AND kind = ?"
        order = f" ORDER BY {end}, {other}, kind" if self.dialect.edge_order else ""
        out: list[Edge] = []
        for cond, chunk in self.dialect.in_list(end, list(dict.fromkeys(ids))):
            out += [
                Edge(*r)
                for r in self._fetch(
                    "reading edges",
                    "SELECT src, dst, kind, weight, updated_at FROM edges WHERE workspace = ? "
                    f"AND {cond} AND weight >= ?{of_kind}{order}",
                    [workspace, *chunk, min_weight, *([] if kind is None else [kind])],
                )
            ]
        return out

    def edge_counts(self, workspace: str, ids: Sequence[str]) -> dict[str, int]:
        ids = list(dict.fromkeys(ids))
        out = dict.fromkeys(ids, 0)
        for cond, chunk in self.dialect.in_list("src", ids):
            rows = self._fetch(
                "counting edges",
                f"SELECT src, count(*) FROM edges WHERE workspace = ? AND {cond} GROUP BY src",
                [workspace, *chunk],
            )
            out.update({src: int(n) for src, n in rows})
        return out

    # -- recalls -------------------------------------------------------------------------------
    def save_recall(self, record: RecallRecord) -> None:
        j = self.dialect.json
        sql = self._q(f"INSERT INTO recalls ({_RECALL_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)")
        args = (
            record.recall_id,
            record.workspace,
            record.user_id,
            record.agent_id,
            record.session_id,
            record.query,
            record.created_at,
            j(record.memory_ids),
            j(record.paths),
            j(record.tensions),
            record.consumed_at,
        )
        self._run("saving the recall", lambda c: c.execute(sql, args), single=True)

    def get_recall(self, scope: Scope, recall_id: str | None) -> RecallRecord | None:
        where, params = scope_where(scope)
        if recall_id is not None:
            sql = f"SELECT {_RECALL_COLUMNS} FROM recalls WHERE {where} AND id = ?"
            params = [*params, recall_id]
        else:
            sql = (
                f"SELECT {_RECALL_COLUMNS} FROM recalls WHERE {where} AND consumed_at IS NULL "
                f"ORDER BY created_at DESC, {self.dialect.recall_order} DESC LIMIT 1"
            )
        sql = self._q(sql)
        row = self._run(
            "reading the recall", lambda c: c.execute(sql, params).fetchone(), write=False
        )
        if row is None:
            return None
        from_json = self.dialect.from_json
        return RecallRecord(
            recall_id=row[0],
            workspace=row[1],
            user_id=row[2],
            agent_id=row[3],
            session_id=row[4],
            query=row[5],
            created_at=row[6],
            memory_ids=from_json(row[7]),
            paths=from_json(row[8]),
            tensions=from_json(row[9]),
            consumed_at=row[10],
        )

    # -- feedback records ----------------------------------------------------------------------
    def _get_event(self, conn: Any, workspace: str, event_id: str) -> FeedbackEvent:
        row = conn.execute(
            self._q(f"SELECT {EVENT_COLUMNS} FROM feedback_events WHERE workspace = ? AND id = ?"),
            (workspace, event_id),
        ).fetchone()
        assert row is not None
        return self._event(conn, row)

    def _event(self, conn: Any, row: Sequence[Any]) -> FeedbackEvent:
        link = conn.execute(
            self._q(
                "SELECT memory_id FROM decision_memories WHERE workspace = ? AND event_id = ? "
                "AND answer = ?"
            ),
            (row[1], row[0], {"corrected": "corrected", "adopted": "ai_output"}.get(row[11], "")),
        ).fetchone()
        return FeedbackEvent(
            id=row[0],
            workspace=row[1],
            user_id=row[2],
            agent_id=row[3],
            session_id=row[4],
            input_context=row[5],
            ai_output=row[6],
            user_reaction=row[7],
            user_correction=row[8],
            corrected_output=row[9],
            state=row[11],
            reason=row[10],
            source_event_id=row[12],
            created_at=row[13],
            metadata=self.dialect.from_json(row[14]),
            decision_memory_id=link[0] if link else None,
        )

    def create_decision_review(
        self, review: DecisionReview, decision: NewMemory | None, answer: str | None
    ) -> DecisionReview:
        q = self._q

        def run(conn: Any) -> DecisionReview:
            now = time.time()
            found = conn.execute(
                q("SELECT 1 FROM feedback_events WHERE workspace = ? AND id = ?"),
                (review.workspace, review.event_id),
            ).fetchone()
            if found is None:
                raise NotFoundError(
                    f"feedback event {review.event_id!r} not found in workspace "
                    f"{review.workspace!r}"
                )
            memory_id: str | None = None
            if answer is not None:
                link = conn.execute(
                    q(
                        "SELECT memory_id FROM decision_memories WHERE workspace = ? "
                        "AND event_id = ? AND answer = ?"
                    ),
                    (review.workspace, review.event_id, answer),
                ).fetchone()
                if link is not None:
                    memory_id = link[0]
                elif decision is not None:
                    memory_id = self._insert_linked_memory(conn, decision, now)
                    self._link_decision(
                        conn, review.workspace, review.event_id, answer, memory_id, now
                    )
            conn.execute(
                q(
                    "INSERT INTO decision_reviews (id, workspace, user_id, agent_id, event_id, "
                    "final_decision, outcome, confidence, reversed, reason, decision_memory_id, "
                    "created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
                ),
                (
                    review.id, review.workspace, review.user_id, review.agent_id,
                    review.event_id, review.final_decision, review.outcome, review.confidence,
                    bool(review.reversed), review.reason, memory_id, review.created_at,
                ),
            )  # fmt: skip
            review.decision_memory_id = memory_id
            return review

        return self._run("creating the decision review", run)

    def create_preference_pair(
        self,
        pair: PreferencePair,
        context_embedding: np.ndarray,
        accepted_embedding: np.ndarray,
        rejected_embedding: np.ndarray,
        memory: NewMemory,
    ) -> PreferencePair:
        vec = self.dialect.vector
        sql = self._q(
            "INSERT INTO preference_pairs (id, workspace, user_id, agent_id, session_id, "
            "context, accepted_output, rejected_output, weight, memory_id, created_at, "
            "context_embedding, accepted_embedding, rejected_embedding) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?v,?v,?v)"
        )

        def run(conn: Any) -> PreferencePair:
            memory_id = self._insert_linked_memory(conn, memory, time.time())
            conn.execute(
                sql,
                (
                    pair.id, pair.workspace, pair.user_id, pair.agent_id, pair.session_id,
                    pair.context, pair.accepted_output, pair.rejected_output, pair.weight,
                    memory_id, pair.created_at, vec(context_embedding),
                    vec(accepted_embedding), vec(rejected_embedding),
                ),
            )  # fmt: skip
            pair.memory_id = memory_id
            return pair

        return self._run("creating the preference pair", run)

    def log_event(self, event: LoggedEvent) -> LoggedEvent:
        sql = self._q(
            "INSERT INTO logged_events (id, workspace, user_id, agent_id, session_id, kind, "
            "payload, created_at) VALUES (?,?,?,?,?,?,?,?)"
        )
        args = (
            event.id,
            event.workspace,
            event.user_id,
            event.agent_id,
            event.session_id,
            event.kind,
            self.dialect.json(event.payload),
            event.created_at,
        )
        self._run("logging the event", lambda c: c.execute(sql, args))
        return event

    def rate_memory(
        self,
        rating: MemoryRating,
        context_embedding: np.ndarray | None,
        correction: NewMemory | None,
    ) -> MemoryRating:
        q = self._q
        vector = None if context_embedding is None else self.dialect.vector(context_embedding)

        def run(conn: Any) -> MemoryRating:
            # FOR SHARE (where rows lock): a concurrent forget cannot delete the memory under
            # the new rating.
            found = conn.execute(
                q(f"SELECT 1 FROM memories WHERE workspace = ? AND id = ?{self.dialect.for_share}"),
                (rating.workspace, rating.memory_id),
            ).fetchone()
            if found is None:
                raise NotFoundError(
                    f"memory {rating.memory_id!r} not found in workspace {rating.workspace!r}"
                )
            correction_id = None
            if correction is not None:
                correction_id = self._insert_linked_memory(conn, correction, time.time())
            conn.execute(
                q(
                    "INSERT INTO memory_ratings (id, workspace, user_id, agent_id, session_id, "
                    "memory_id, verdict, correction, correction_memory_id, weight, recall_id, "
                    "context, context_embedding, created_at) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?v,?)"
                ),
                (
                    rating.id, rating.workspace, rating.user_id, rating.agent_id,
                    rating.session_id, rating.memory_id, rating.verdict, rating.correction,
                    correction_id, rating.weight, rating.recall_id, rating.context, vector,
                    rating.created_at,
                ),
            )  # fmt: skip
            if correction is not None:
                rating.correction_memory_id = correction_id
            return rating

        return self._run("rating the memory", run)

    def get_feedback_record(self, kind: str, workspace: str, record_id: str) -> FeedbackRecord:
        table, columns, _ = FEEDBACK_TABLES[kind]
        sql = self._q(f"SELECT {columns} FROM {table} WHERE workspace = ? AND id = ?")

        def run(conn: Any) -> FeedbackRecord:
            row = conn.execute(sql, (workspace, record_id)).fetchone()
            if row is None:
                raise NotFoundError(
                    f"{kind.replace('_', ' ')} {record_id!r} not found in workspace {workspace!r}"
                )
            return self._feedback_record(conn, kind, row)

        return self._run("reading the feedback record", run, write=False, snapshot=True)

    def list_feedback_records(
        self, kind: str, scope: Scope, limit: int, offset: int
    ) -> list[FeedbackRecord]:
        table, columns, scoped = FEEDBACK_TABLES[kind]
        where, params = scope_where(
            scope if scoped else Scope(scope.workspace, scope.user_id, scope.agent_id)
        )
        sql = self._q(f"SELECT {columns} FROM {table} WHERE {where} ORDER BY seq LIMIT ? OFFSET ?")

        def run(conn: Any) -> list[FeedbackRecord]:
            rows = conn.execute(sql, [*params, limit, offset]).fetchall()
            return [self._feedback_record(conn, kind, r) for r in rows]

        return self._run("listing feedback records", run, write=False, snapshot=True)

    def _feedback_record(self, conn: Any, kind: str, row: Sequence[Any]) -> FeedbackRecord:
        if kind == "feedback_event":
            return self._event(conn, row)
        if kind == "decision_review":
            return DecisionReview(
                id=row[0],
                workspace=row[1],
                user_id=row[2],
                agent_id=row[3],
                event_id=row[4],
                final_decision=row[5],
                outcome=row[6],
                confidence=row[7],
                reversed=bool(row[8]),
                reason=row[9],
                decision_memory_id=row[10],
                created_at=row[11],
            )
        if kind == "preference_pair":
            return PreferencePair(*row)
        if kind == "logged_event":
            return LoggedEvent(
                id=row[0],
                workspace=row[1],
                user_id=row[2],
                agent_id=row[3],
                session_id=row[4],
                kind=row[5],
                payload=self.dialect.from_json(row[6]),
                created_at=row[7],
            )
        return MemoryRating(*row)

    # -- API keys ------------------------------------------------------------------------------
    def get_api_key(self, key_id: str) -> ApiKeyRecord | None:
        sql = self._q(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_id = ?")
        row = self._run(
            "reading the API key", lambda c: c.execute(sql, (key_id,)).fetchone(), write=False
        )
        return ApiKeyRecord(*row) if row else None

    def list_api_keys(self, workspace: str | None) -> list[ApiKeyRecord]:
        if workspace is None:
            sql, args = f"SELECT {KEY_COLUMNS} FROM api_keys ORDER BY created_at", []
        else:
            sql = f"SELECT {KEY_COLUMNS} FROM api_keys WHERE workspace = ? ORDER BY created_at"
            args = [workspace]
        sql = self._q(sql + self.dialect.key_order)
        rows = self._run("listing API keys", lambda c: c.execute(sql, args).fetchall(), write=False)
        return [ApiKeyRecord(*r) for r in rows]

    def revoke_api_key(self, key_id: str) -> bool:
        q = self._q

        def run(conn: Any) -> bool:
            row = conn.execute(
                q(f"SELECT revoked_at FROM api_keys WHERE key_id = ?{self.dialect.for_update}"),
                (key_id,),
            ).fetchone()
            if row is None:
                raise NotFoundError(f"API key {key_id!r} not found")
            if row[0] is not None:
                return False
            conn.execute(
                q("UPDATE api_keys SET revoked_at = ? WHERE key_id = ?"), (time.time(), key_id)
            )
            return True

        return self._run("revoking the API key", run)

"""The feedback records in SQL, shared by both stores: events, reviews, preference pairs,
logged events, ratings, and the facts that learning reads from them (see :mod:`.store`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np

from ...errors import ConflictError, NotFoundError, StoreError
from ...learn.scoring import EventFacts, PairFacts, RatingFacts, ReplyFacts, ReviewFacts
from ...models import (
    DecisionReview,
    FeedbackEvent,
    LoggedEvent,
    MemoryRating,
    PreferencePair,
    Scope,
    visible_key,
)
from ..base import FeedbackRecord, LearningAhead, NewFeedbackEvent, NewMemory, ReplyQuery
from ..tables import EVENT_COLUMNS, FEEDBACK_TABLES
from .dialect import Dialect, scope_where

__all__ = ["SQLRecords"]

T = TypeVar("T")
Facts = tuple[list[EventFacts], list[PairFacts], list[RatingFacts]]
LearningReads = tuple[list[EventFacts], list[PairFacts], list[RatingFacts], list[ReplyFacts]]


class SQLRecords:
    """The feedback-record half of :class:`~.store.SQLStore`, and the hooks both halves use."""

    dialect: ClassVar[Dialect]

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

    def _read_together(self, what: str, send: Callable[[Any], Callable[[], T]]) -> T:
        """A read of several statements that must agree, none waiting for another's answer:
        ``send(connection)`` executes them all and returns the function that reads their
        answers (a server store sends them in one round trip and reads after it)."""
        raise NotImplementedError

    def _insert_linked_memory(self, conn: Any, row: NewMemory, now: float) -> str:
        """Insert a memory made by a feedback record, or return the identical one already
        there."""
        raise NotImplementedError

    def _link_decision(
        self, conn: Any, workspace: str, event_id: str, answer: str, memory_id: str, now: float
    ) -> None:
        """Record that ``memory_id`` holds the ``answer`` of a feedback event."""
        raise NotImplementedError

    def _q(self, sql: str) -> str:
        return self.dialect.sql(sql)

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
        """Add a change to ``memory_id``'s history (``memory_changes``)."""
        conn.execute(
            self._q(
                "INSERT INTO memory_changes (memory_id, workspace, user_id, op, before, after, "
                "reason, created_at) VALUES (?,?,?,?,?,?,?,?)"
            ),
            (memory_id, workspace, user_id, op, before, after, reason, time.time()),
        )

    def _fetch(self, what: str, sql: str, args: Sequence[Any]) -> list[Any]:
        """The rows of one read statement (``?`` placeholders)."""
        sql = self._q(sql)
        return list(self._run(what, lambda c: c.execute(sql, args).fetchall(), write=False))

    def _vanished(self, what: str) -> None:
        """A row that a conflict named is gone: make the transaction run again (where a
        concurrent writer can do that; unreachable where writers are serial)."""
        raise StoreError(f"{what}; try again")

    def create_feedback_event(self, new: NewFeedbackEvent) -> tuple[FeedbackEvent, bool]:
        e = new.event
        vec = self.dialect.vector
        q = self._q

        def run(conn: Any) -> tuple[FeedbackEvent, bool]:
            now = time.time()
            # ON CONFLICT waits for a concurrent writer of the same source_event_id, then
            # yields: exactly one of them inserts.
            inserted = conn.execute(
                q(
                    "INSERT INTO feedback_events (id, workspace, user_id, agent_id, session_id, "
                    "input_context, ai_output, user_reaction, user_correction, corrected_output, "
                    "state, reason, source_event_id, payload_hash, metadata, created_at, "
                    "context_embedding, ai_output_embedding, corrected_embedding, source) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?v,?v,?v,?) "
                    "ON CONFLICT (workspace, source_event_id) DO NOTHING RETURNING id"
                ),
                (
                    e.id, e.workspace, e.user_id, e.agent_id, e.session_id, e.input_context,
                    e.ai_output, e.user_reaction, e.user_correction, e.corrected_output,
                    e.state, e.reason, e.source_event_id, new.payload_hash,
                    self.dialect.json(e.metadata), e.created_at, vec(new.context_embedding),
                    vec(new.ai_output_embedding),
                    None if new.corrected_embedding is None else vec(new.corrected_embedding),
                    e.source,
                ),
            ).fetchone()  # fmt: skip
            if inserted is None:
                row = conn.execute(
                    q(
                        "SELECT id, payload_hash FROM feedback_events "
                        "WHERE workspace = ? AND source_event_id = ?"
                    ),
                    (e.workspace, e.source_event_id),
                ).fetchone()
                if row is None:
                    self._vanished("the conflicting event vanished")
                if row[1] != new.payload_hash:
                    raise ConflictError(
                        f"source_event_id {visible_key(e.source_event_id)!r} already names event "
                        f"{row[0]!r} in workspace {e.workspace!r} with a different payload"
                    )
                return self._get_event(conn, e.workspace, row[0]), False
            if new.decision is not None and new.answer is not None:
                memory_id = self._insert_linked_memory(conn, new.decision, now)
                conn.execute(
                    q(
                        "INSERT INTO decision_memories (workspace, event_id, answer, memory_id, "
                        "created_at) VALUES (?,?,?,?,?)"
                    ),
                    (e.workspace, e.id, new.answer, memory_id, now),
                )
            return self._get_event(conn, e.workspace, e.id), True

        return self._run("creating the feedback event", run)

    def _stored_event(self, conn: Any, workspace: str, source_event_id: str) -> str | None:
        """The id of the stored event that ``source_event_id`` names in ``workspace``."""
        found = conn.execute(
            self._q("SELECT id FROM feedback_events WHERE workspace = ? AND source_event_id = ?"),
            (workspace, source_event_id),
        ).fetchone()
        return None if found is None else str(found[0])

    def _forget_feedback(self, conn: Any, scope: Scope) -> None:
        """Delete a scope's feedback records (``forget`` of a whole user, agent or session)."""
        q = self._q
        where, params = scope_where(scope)
        gone = [
            r[0]
            for r in conn.execute(
                q(f"DELETE FROM feedback_events WHERE {where} RETURNING id"), params
            ).fetchall()
        ]
        for cond, chunk in self.dialect.in_list("event_id", gone):
            for table in ("decision_memories", "decision_reviews"):
                conn.execute(
                    q(f"DELETE FROM {table} WHERE workspace = ? AND {cond}"),
                    [scope.workspace, *chunk],
                )
        for table, scoped in (
            ("decision_reviews", False),
            ("preference_pairs", True),
            ("logged_events", True),
            ("memory_ratings", True),
            ("reply_signals", True),
        ):
            if not scoped and scope.session_id is not None:
                continue  # reviews carry no session; they went with their events above
            w, p = scope_where(
                scope if scoped else Scope(scope.workspace, scope.user_id, scope.agent_id)
            )
            conn.execute(q(f"DELETE FROM {table} WHERE {w}"), p)

    def _cursor(self, conn: Any) -> Any:
        """What reads vectors on ``conn`` (a cursor in the database's binary format, if any)."""
        return conn

    def learning_facts(
        self,
        scope: Scope,
        memory_ids: Sequence[str],
        since: float | None = None,
        limit: int | None = None,
    ) -> tuple[list[EventFacts], list[PairFacts], list[RatingFacts]]:
        if self._no_feedback_since(scope, since):
            return [], [], []
        return self._read_together(
            "reading feedback", self._facts_reader(scope, memory_ids, since, limit)
        )

    def _facts_reader(
        self, scope: Scope, memory_ids: Sequence[str], since: float | None, limit: int | None
    ) -> Callable[[Any], Callable[[], Facts]]:
        """``learning_facts`` as a ``_read_together`` sender: every kind of record (a store
        may first probe which kinds the scope holds)."""
        return self._learning_reader(scope, memory_ids, since, limit)

    def learning_reads(
        self,
        scope: Scope,
        memory_ids: Sequence[str],
        since: float,
        limit: int,
        context: Callable[[], np.ndarray],
        context_min: float,
        reply_limit: int,
    ) -> tuple[list[EventFacts], list[PairFacts], list[RatingFacts], list[ReplyFacts]]:
        ask = LearningAhead(context, limit, context_min, reply_limit)
        ahead = self._learning_reads_ahead(scope, memory_ids, since, ask)
        if ahead is not None:
            return ahead
        events, pairs, ratings = self.learning_facts(scope, memory_ids, since, limit)
        witnesses = [(r.recall_id, r.memory_id) for r in ratings if r.recall_id is not None]
        replies = self.reply_facts(
            scope, ReplyQuery(context, context_min, since, reply_limit), witnesses
        )
        return events, pairs, ratings, replies

    def _no_feedback_since(self, scope: Scope, since: float | None) -> bool:
        """Whether the store knows, without a read, that ``scope`` has no feedback record
        since ``since`` (a server store's read session probed for it); false: read."""
        return False

    def _learning_reads_ahead(
        self, scope: Scope, memory_ids: Sequence[str], since: float, ask: LearningAhead
    ) -> LearningReads | None:
        """``learning_reads`` answered from what a read session read ahead (a server store),
        or ``None``: read them now."""
        return None

    #: The backend's search half answers it (``Store.reply_facts``).
    reply_facts: Callable[[Scope, ReplyQuery, Sequence[tuple[str, str]]], list[ReplyFacts]]

    def _learning_reader(
        self,
        scope: Scope,
        memory_ids: Sequence[str],
        since: float | None,
        limit: int | None,
        parts: tuple[bool, bool, bool] = (True, True, True),
    ) -> Callable[[Any], Callable[[], Facts]]:
        """``learning_facts`` as a ``_read_together`` sender: it executes every statement
        and returns the function that reads their answers. ``parts``: whether to read the
        events, the pairs, the ratings (the caller knows there are none of the others)."""
        # A user's own records and the workspace-wide ones (no user) apply to that user; a
        # recall made without a user reads only the workspace-wide ones: what a user recorded
        # (a pair, an event, a rating) reaches no one else's recalls.
        user_clause = " AND user_id IS NULL"
        params: list[Any] = [scope.workspace]
        if scope.user_id is not None:
            user_clause = " AND (user_id = ? OR user_id IS NULL)"
            params.append(scope.user_id)
        ids = list(dict.fromkeys(memory_ids))
        start = -1e300 if since is None else since
        newest = self.dialect.no_limit if limit is None else limit
        vec = self.dialect.from_vector
        q = self._q
        in_list = self.dialect.in_list
        order = " ORDER BY seq" if self.dialect.ordered else ""

        # The newest events of the scope in the horizon (or reviewed in it); their answers and
        # reviews are read by the same condition, so that no statement waits for another's
        # answer (a server store sends them all at once: see ``_read_together``).
        newest_events = (
            "SELECT * FROM feedback_events e "
            f"WHERE workspace = ?{user_clause} AND (created_at >= ? OR EXISTS "
            "(SELECT 1 FROM decision_reviews r WHERE r.workspace = e.workspace "
            "AND r.event_id = e.id AND r.created_at >= ?)) ORDER BY seq DESC LIMIT ?"
        )
        event_params = [*params, start, start, newest]

        with_events, with_pairs, with_ratings = parts

        def send(conn: Any) -> Callable[[], Facts]:
            if not with_events:
                event_rows = links = reviews = None
            else:
                event_rows, links, reviews = send_events(conn)
            pair_rows = send_pairs(conn) if with_pairs else None
            rating_rows = [
                self._cursor(conn).execute(
                    q(
                        "SELECT id, memory_id, verdict, weight, created_at, "
                        "context_embedding, recall_id, source, context, user_id "
                        "FROM memory_ratings "
                        f"WHERE workspace = ? AND {cond}{user_clause} AND created_at >= ?{order}"
                    ),
                    [scope.workspace, *chunk, *params[1:], start],
                )
                for cond, chunk in (in_list("memory_id", ids) if with_ratings else ())
            ]
            return lambda: read(event_rows, links, reviews, pair_rows, rating_rows)

        def send_events(conn: Any) -> tuple[Any, Any, Any]:
            event_rows = self._cursor(conn).execute(
                q(
                    "SELECT id, state, reason, created_at, context_embedding, "
                    "ai_output_embedding, corrected_embedding, ai_output, "
                    "coalesce(corrected_output, user_correction), source "
                    f"FROM ({newest_events}) t ORDER BY seq"
                ),
                event_params,
            )
            links = self._cursor(conn).execute(
                q(
                    "SELECT d.event_id, d.answer, d.memory_id FROM decision_memories d "
                    "JOIN memories m ON m.workspace = d.workspace AND m.id = d.memory_id "
                    "AND m.status = 'active' WHERE d.workspace = ? AND d.event_id IN "
                    f"(SELECT id FROM ({newest_events}) t)"
                ),
                [scope.workspace, *event_params],
            )
            reviews = self._cursor(conn).execute(
                q(
                    "SELECT event_id, final_decision, outcome, confidence, reversed, "
                    "created_at, reason, id, source FROM decision_reviews WHERE workspace = ? "
                    f"AND event_id IN (SELECT id FROM ({newest_events}) t) ORDER BY seq"
                ),
                [scope.workspace, *event_params],
            )
            return event_rows, links, reviews

        def send_pairs(conn: Any) -> Any:
            return self._cursor(conn).execute(
                q(
                    "SELECT id, weight, created_at, context_embedding, accepted_embedding, "
                    "rejected_embedding, memory_id, accepted_output, rejected_output, source "
                    "FROM (SELECT * FROM preference_pairs "
                    f"WHERE workspace = ?{user_clause} AND created_at >= ? "
                    "ORDER BY seq DESC LIMIT ?) t ORDER BY seq"
                ),
                [*params, start, newest],
            )

        def read(
            event_rows: Any, links: Any, reviews: Any, pair_rows: Any, rating_rows: Any
        ) -> Facts:
            events: dict[str, EventFacts] = {}
            for r in event_rows.fetchall() if event_rows is not None else ():
                events[r[0]] = EventFacts(
                    event_id=r[0],
                    state=r[1],
                    reason=r[2],
                    created_at=r[3],
                    context_vec=vec(r[4]),
                    ai_output_vec=vec(r[5]),
                    corrected_vec=None if r[6] is None else vec(r[6]),
                    answers={},
                    ai_output=r[7],
                    corrected=r[8],
                    source=r[9],
                )
            for event_id, answer, memory_id in links.fetchall() if links is not None else ():
                if event_id in events:
                    events[event_id].answers[answer] = memory_id
            for r in reviews.fetchall() if reviews is not None else ():
                if r[0] in events:
                    events[r[0]].reviews.append(
                        ReviewFacts(r[1], r[2], r[3], bool(r[4]), r[5], r[6], r[7], r[8])
                    )
            pairs = [
                PairFacts(r[0], r[1], r[2], vec(r[3]), vec(r[4]), vec(r[5]), r[6], r[7], r[8], r[9])
                for r in (pair_rows.fetchall() if pair_rows is not None else ())
            ]
            ratings = [
                RatingFacts(
                    r[0],
                    r[1],
                    r[2],
                    r[3],
                    r[4],
                    None if r[5] is None else vec(r[5]),
                    r[6],
                    r[7],
                    r[8],
                    r[9],
                )
                for rows in rating_rows
                for r in rows.fetchall()
            ]
            return list(events.values()), pairs, ratings

        return send

    # -- feedback records ----------------------------------------------------------------------
    def _get_event(self, conn: Any, workspace: str, event_id: str) -> FeedbackEvent:
        row = conn.execute(
            self._q(f"SELECT {EVENT_COLUMNS} FROM feedback_events WHERE workspace = ? AND id = ?"),
            (workspace, event_id),
        ).fetchone()
        assert row is not None
        return self._event(conn, row)

    def _event(self, conn: Any, row: Sequence[Any]) -> FeedbackEvent:
        values = list(row)  # EVENT_COLUMNS: the dataclass's fields but the decision memory
        answer = {"corrected": "corrected", "adopted": "ai_output"}.get(values[10], "")
        link = conn.execute(
            self._q(
                "SELECT memory_id FROM decision_memories WHERE workspace = ? AND event_id = ? "
                "AND answer = ?"
            ),
            (values[1], values[0], answer),
        ).fetchone()
        values[12] = visible_key(values[12])  # source_event_id
        values[14] = self.dialect.from_json(values[14])  # metadata
        values.insert(15, link[0] if link else None)  # decision_memory_id
        return FeedbackEvent(*values)

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
                    "created_at, source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
                ),
                (
                    review.id, review.workspace, review.user_id, review.agent_id,
                    review.event_id, review.final_decision, review.outcome, review.confidence,
                    bool(review.reversed), review.reason, memory_id, review.created_at,
                    review.source,
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
            "context_embedding, accepted_embedding, rejected_embedding, source) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?v,?v,?v,?)"
        )

        def run(conn: Any) -> PreferencePair:
            memory_id = self._insert_linked_memory(conn, memory, time.time())
            conn.execute(
                sql,
                (
                    pair.id, pair.workspace, pair.user_id, pair.agent_id, pair.session_id,
                    pair.context, pair.accepted_output, pair.rejected_output, pair.weight,
                    memory_id, pair.created_at, vec(context_embedding),
                    vec(accepted_embedding), vec(rejected_embedding), pair.source,
                ),
            )  # fmt: skip
            pair.memory_id = memory_id
            return pair

        return self._run("creating the preference pair", run)

    def log_event(self, event: LoggedEvent) -> LoggedEvent:
        sql = self._q(
            "INSERT INTO logged_events (id, workspace, user_id, agent_id, session_id, kind, "
            "payload, created_at, source) VALUES (?,?,?,?,?,?,?,?,?)"
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
            event.source,
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
                    "context, context_embedding, created_at, source) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?v,?,?)"
                ),
                (
                    rating.id, rating.workspace, rating.user_id, rating.agent_id,
                    rating.session_id, rating.memory_id, rating.verdict, rating.correction,
                    correction_id, rating.weight, rating.recall_id, rating.context, vector,
                    rating.created_at, rating.source,
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
        # The columns of FEEDBACK_TABLES are in dataclass order: rows fill records in place.
        values = list(row)
        if kind == "decision_review":
            values[8] = bool(values[8])  # reversed
            return DecisionReview(*values)
        if kind == "preference_pair":
            return PreferencePair(*values)
        if kind == "logged_event":
            values[6] = self.dialect.from_json(values[6])  # payload
            return LoggedEvent(*values)
        return MemoryRating(*values)

"""Weight changes of the PostgreSQL store: feedback's one write (see :meth:`adjust_edges`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import psycopg

from ..models import Edge
from .base import EdgeDelta, ReplySignal
from .postgres_search import Vector

__all__ = ["PostgresEdges"]

T = TypeVar("T")
Conn = psycopg.Connection[Any]


class _Consumed(Exception):
    """The recall a feedback call consumes had been consumed already."""


class PostgresEdges:
    """The edge-update half of :class:`~.postgres.PostgresStore`."""

    def _tx(
        self,
        what: str,
        fn: Callable[[Conn], T],
        *,
        transaction: bool = True,
        idempotent: bool = False,
        attempts: int = 4,
        pipeline: bool = False,
    ) -> T:
        raise NotImplementedError

    def adjust_edges(
        self,
        workspace: str,
        deltas: Sequence[EdgeDelta],
        lo: float,
        hi: float,
        consume_recall: str | None = None,
        reply_signals: Sequence[ReplySignal] = (),
    ) -> list[Edge] | None:
        # A stable sort keeps the order of repeated deltas to one edge (clamping is not
        # commutative) while locking distinct edges in one global order.
        ordered = sorted(deltas, key=lambda d: (d.src, d.dst, d.kind))

        def run(conn: Conn) -> list[Edge] | None:
            # Pipelined (see _tx): BEGIN, the recall's consumption, the reply signals and the
            # edges' locking read travel together; the edge writes go with COMMIT.
            now = time.time()
            consumed = None
            if consume_recall is not None:
                consumed = conn.execute(
                    "UPDATE recalls SET consumed_at = %s WHERE workspace = %s AND id = %s "
                    "AND consumed_at IS NULL RETURNING id",
                    (now, workspace, consume_recall),
                )
            changed: list[Edge] = []
            if reply_signals:
                _insert_signals(conn, reply_signals)
            locked = None
            if ordered:
                # One statement locks every edge, in one global order (ORDER BY under FOR
                # UPDATE: rows are locked as the sort returns them): no deadlock between writers.
                keys = sorted({(d.src, d.dst, d.kind) for d in ordered})
                locked = conn.execute(
                    "SELECT e.src, e.dst, e.kind, e.weight FROM edges e JOIN unnest("
                    "%s::text[], %s::text[], %s::text[]) AS k(src, dst, kind) ON e.workspace = %s "
                    "AND e.src = k.src AND e.dst = k.dst AND e.kind = k.kind "
                    "ORDER BY e.src, e.dst, e.kind FOR UPDATE OF e",
                    ([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys], workspace),
                )
            weights = {(r[0], r[1], r[2]): r[3] for r in (locked.fetchall() if locked else [])}
            if consumed is not None and consumed.fetchone() is None:
                raise _Consumed  # rolls back what was sent with the check
            if not ordered:
                return changed
            logged = []
            for d in ordered:  # in order: repeated deltas to one edge clamp one after another
                key = (d.src, d.dst, d.kind)
                if key not in weights:
                    continue
                before = weights[key]
                after = min(hi, max(lo, before + d.delta))
                if after != before:
                    weights[key] = after
                    changed.append(Edge(d.src, d.dst, d.kind, after, now))
                logged.append(
                    (workspace, d.src, d.dst, d.kind, d.delta, after, consume_recall, now, before)
                )
            final = {(e.src, e.dst, e.kind): e.weight for e in changed}
            if final:
                conn.execute(
                    "UPDATE edges e SET weight = v.weight, updated_at = %s FROM unnest("
                    "%s::text[], %s::text[], %s::text[], %s::float8[]) AS v(src, dst, kind, weight) "
                    "WHERE e.workspace = %s AND e.src = v.src AND e.dst = v.dst AND e.kind = v.kind",
                    (now, [k[0] for k in final], [k[1] for k in final], [k[2] for k in final],
                     list(final.values()), workspace),
                )  # fmt: skip
            if logged:
                # One statement (rows in order, as the log's sequence numbers follow it).
                conn.execute(
                    "INSERT INTO edge_changes (workspace, src, dst, kind, delta, weight, "
                    "recall_id, at, before) SELECT %s, c.src, c.dst, c.kind, c.delta, c.weight, "
                    "%s, %s, c.before FROM unnest(%s::text[], %s::text[], %s::text[], "
                    "%s::float8[], %s::float8[], %s::float8[]) WITH ORDINALITY "
                    "AS c(src, dst, kind, delta, weight, before, n) ORDER BY c.n",
                    (workspace, consume_recall, now, *(list(col) for col in zip(*[
                        (src, dst, kind, float(delta), float(after), float(before))
                        for _, src, dst, kind, delta, after, _, _, before in logged
                    ], strict=True))),
                )  # fmt: skip
            return changed

        try:
            return self._tx("edge update", run, pipeline=True)
        except _Consumed:
            return None


def _insert_signals(conn: Conn, signals: Sequence[ReplySignal]) -> None:
    """Insert reply signals (a duplicate (recall, memory) is left out): one statement when
    they share their context vector (one feedback call's all do), else one per signal."""
    context = signals[0].context_embedding
    if not all(np.array_equal(r.context_embedding, context) for r in signals):
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO reply_signals (workspace, user_id, agent_id, session_id, "
                "recall_id, memory_id, value, alignment, context_embedding, created_at, "
                "source) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING",
                [
                    (r.workspace, r.user_id, r.agent_id, r.session_id, r.recall_id,
                     r.memory_id, r.value, r.alignment, Vector(r.context_embedding),
                     r.created_at, r.source)
                    for r in signals
                ],
            )  # fmt: skip
        return
    columns = [
        [r.workspace for r in signals],
        [r.user_id for r in signals],
        [r.agent_id for r in signals],
        [r.session_id for r in signals],
        [r.recall_id for r in signals],
        [r.memory_id for r in signals],
        [float(r.value) for r in signals],
        [float(r.alignment) for r in signals],
        [float(r.created_at) for r in signals],
        [r.source for r in signals],
    ]
    conn.execute(
        "INSERT INTO reply_signals (workspace, user_id, agent_id, session_id, recall_id, "
        "memory_id, value, alignment, context_embedding, created_at, source) "
        "SELECT s.workspace, s.user_id, s.agent_id, s.session_id, s.recall_id, s.memory_id, "
        "s.value, s.alignment, %b, s.created_at, s.source FROM unnest(%s::text[], %s::text[], "
        "%s::text[], %s::text[], %s::text[], %s::text[], %s::float8[], %s::float8[], "
        "%s::float8[], %s::text[]) WITH ORDINALITY AS s(workspace, user_id, agent_id, "
        "session_id, recall_id, memory_id, value, alignment, created_at, source, n) "
        "ORDER BY s.n ON CONFLICT DO NOTHING",
        [Vector(context), *columns],
    )

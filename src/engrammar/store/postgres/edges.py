"""Weight changes of the PostgreSQL store: feedback's one write (see :meth:`adjust_edges`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from ...models import Edge
from ..base import EdgeAdjustment, EdgeDelta, ReplySignal
from .connection import Conn, Connected
from .search import Vector
from .statements import planned_once

__all__ = ["PostgresEdges"]

T = TypeVar("T")


class _Consumed(Exception):
    """The recall a feedback call consumes had been consumed already."""


class PostgresEdges(Connected):
    """The edge-update half of :class:`~.store.PostgresStore`."""

    #: Distinct edges and one context vector: the write as one statement (off: the pipelined
    #: transaction, as for repeated edges; the tests compare the two).
    _edges_at_once = True

    def adjust_edges(self, workspace: str, change: EdgeAdjustment) -> list[Edge] | None:
        deltas, (lo, hi) = change.deltas, change.bounds
        consume_recall, reply_signals = change.consume_recall, change.reply_signals
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

        keys = [(d.src, d.dst, d.kind) for d in ordered]
        shared = not reply_signals or all(
            np.array_equal(r.context_embedding, reply_signals[0].context_embedding)
            for r in reply_signals
        )
        if self._edges_at_once and len(set(keys)) == len(keys) and shared:
            # Each edge named once (feedback's deltas are a dict) and one context vector: the
            # whole write is one statement, BEGIN and COMMIT with it: one round trip.
            return self._adjust_at_once(workspace, ordered, lo, hi, consume_recall, reply_signals)
        try:
            return self._tx(
                "edge update", run, pipeline=True, rerunnable=consume_recall is not None
            )
        except _Consumed:
            return None

    def _adjust_at_once(
        self,
        workspace: str,
        ordered: Sequence[EdgeDelta],
        lo: float,
        hi: float,
        consume_recall: str | None,
        reply_signals: Sequence[ReplySignal],
    ) -> list[Edge] | None:
        """:meth:`adjust_edges` as ONE statement (distinct edges, one context vector): the
        recall's consumption gates everything else; the edges are locked in one global order
        (ORDER BY under FOR UPDATE), the new weights clamped as the loop above clamps them
        (IEEE doubles on both sides), changed edges written and every delta logged in order.
        Data-modifying CTEs see one snapshot; a row another writer changed meanwhile is read
        at its newest version by the lock and updated at it (READ COMMITTED re-check)."""
        now = time.time()
        gate = "EXISTS (SELECT 1 FROM c)" if consume_recall is not None else "TRUE"
        params: dict[str, Any] = {
            "ws": workspace,
            "now": now,
            "rid": consume_recall,
            "lo": float(lo),
            "hi": float(hi),
            "src": [d.src for d in ordered],
            "dst": [d.dst for d in ordered],
            "kind": [d.kind for d in ordered],
            "delta": [float(d.delta) for d in ordered],
        }
        signals = ""
        if reply_signals:
            params.update(_signal_columns(reply_signals))
            signals = (
                ", sig AS (INSERT INTO reply_signals (workspace, user_id, agent_id, session_id, "
                "recall_id, memory_id, value, alignment, context_embedding, created_at, source) "
                "SELECT s.workspace, s.user_id, s.agent_id, s.session_id, s.recall_id, "
                "s.memory_id, s.value, s.alignment, %(ctx)b, s.created_at, s.source "
                "FROM unnest(%(s_ws)s::text[], %(s_user)s::text[], %(s_agent)s::text[], "
                "%(s_session)s::text[], %(s_recall)s::text[], %(s_memory)s::text[], "
                "%(s_value)s::float8[], %(s_align)s::float8[], %(s_at)s::float8[], "
                "%(s_source)s::text[]) WITH ORDINALITY AS s(workspace, user_id, agent_id, "
                "session_id, recall_id, memory_id, value, alignment, created_at, source, n) "
                f"WHERE {gate} ORDER BY s.n ON CONFLICT DO NOTHING)"
            )
        consume = (
            "c AS (UPDATE recalls SET consumed_at = %(now)s WHERE workspace = %(ws)s "
            "AND id = %(rid)s AND consumed_at IS NULL RETURNING id), "
            if consume_recall is not None
            else ""
        )
        sql = (
            f"WITH {consume}old AS (SELECT e.src, e.dst, e.kind, e.weight AS before, d.delta, d.n "
            "FROM edges e JOIN unnest(%(src)s::text[], %(dst)s::text[], %(kind)s::text[], "
            "%(delta)s::float8[]) WITH ORDINALITY AS d(src, dst, kind, delta, n) "
            "ON e.workspace = %(ws)s AND e.src = d.src AND e.dst = d.dst AND e.kind = d.kind "
            f"WHERE {gate} ORDER BY e.src, e.dst, e.kind FOR UPDATE OF e), "
            "new AS (SELECT *, least(%(hi)s, greatest(%(lo)s, before + delta)) AS after "
            "FROM old), "
            "upd AS (UPDATE edges e SET weight = new.after, updated_at = %(now)s FROM new "
            "WHERE e.workspace = %(ws)s AND e.src = new.src AND e.dst = new.dst "
            "AND e.kind = new.kind AND new.after <> new.before "
            "RETURNING e.src, e.dst, e.kind, e.weight), "
            "log AS (INSERT INTO edge_changes (workspace, src, dst, kind, delta, weight, "
            "recall_id, at, before) SELECT %(ws)s, src, dst, kind, delta, after, %(rid)s, "
            f"%(now)s, before FROM new ORDER BY n){signals} "
            f"SELECT {gate}, NULL, NULL, NULL, NULL::float8 "
            "UNION ALL SELECT TRUE, src, dst, kind, weight FROM upd"
        )

        def run(conn: Conn) -> Any:
            cur = conn.cursor(binary=True)
            with planned_once(conn):
                cur.execute(sql, params)
            return cur  # read after the pipeline's one sync (BEGIN, this, COMMIT)

        rows = self._tx(
            "edge update", run, pipeline=True, rerunnable=consume_recall is not None
        ).fetchall()
        if not any(r[0] for r in rows if r[1] is None):  # the gate's row: consumed by another
            return None
        changed = sorted((r[1:] for r in rows if r[1] is not None), key=lambda r: r[:3])
        return [Edge(r[0], r[1], r[2], float(r[3]), now) for r in changed]


def _signal_columns(signals: Sequence[ReplySignal]) -> dict[str, Any]:
    """The named parameters of reply signals sharing one context vector, column by column."""
    return {
        "ctx": Vector(signals[0].context_embedding),
        "s_ws": [r.workspace for r in signals],
        "s_user": [r.user_id for r in signals],
        "s_agent": [r.agent_id for r in signals],
        "s_session": [r.session_id for r in signals],
        "s_recall": [r.recall_id for r in signals],
        "s_memory": [r.memory_id for r in signals],
        "s_value": [float(r.value) for r in signals],
        "s_align": [float(r.alignment) for r in signals],
        "s_at": [float(r.created_at) for r in signals],
        "s_source": [r.source for r in signals],
    }


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

"""Feedback's reads of the PostgreSQL store: the recall, the reply's search and its refinement
in two exchanges.

``feedback`` reads the recall, then looks for the memories the reply drew on
(``engine.feedback.drawn_on``): keyword and vector search with the reply's vector, the chunk
vectors of keyword hits the vector list missed, then the refinement of the head of the fused
list: its sequence edges, two steps, and the records and vectors of the memories they reach
and of the head itself. Asked one by one that is six or seven round trips; in a read session
without a graph walk (``reading(neighbourhood=False)``, feedback's) they take two:

1. the recall's read, with the reply's searches announced by :meth:`PostgresReply.reply_ahead`
   (the keyword statement, its hits coming with their records, vectors and chunk vectors, and
   the vector statement) in the same pipeline; :meth:`PostgresReply.searches` answers from
   them when asked with the same arguments (the recall's scope is the feedback's), else sends
   both statements together;
2. the first ``edges_from(..., kind="sequence")``: one statement returning every sequence edge
   leaving the ids and leaving the memories those reach, with the records and vectors of all
   of them that the session lacks; the second step's ``edges_from`` is answered from it.

With the edge update, feedback is three exchanges. Every answer is exactly what the plain call
returns (the same statements, or the same rows selected a step ahead); a question outside what
was read goes to the server as usual. What was read lives as long as the thread's session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...models import Edge, RecallFilter, Scope
from ...recall.text import terms
from ..base import RecallRecord, SearchQuery
from ..tables import MEMORY_COLUMNS
from .connection import Conn
from .local import local_hits, searched_locally
from .reads import M_COLUMNS
from .snapshot import WINDOW_AGGREGATES, edges, keep_raw, windows
from .statements import M_RAW, N_MEMORY, planned_once
from .vectors import execute_searching

if TYPE_CHECKING:
    from .search import PostgresSearch

    _Base = PostgresSearch
else:
    _Base = object

__all__ = ["PostgresReply"]


# A keyword hit's chunk vectors (``memory_chunks`` by position), aggregated on its row.
_CHUNKS = (
    f"LEFT JOIN LATERAL (SELECT {WINDOW_AGGREGATES} "
    "FROM memory_chunks c WHERE c.workspace = %(ws)s AND c.memory_id = t.id) ca ON true"
)

# Sequence edges leaving ``ids`` (step 1), then leaving where they lead that is neither one of
# ``ids`` nor a source read before (step 2, ``mid``).
_STEPS = (
    "WITH e1 AS MATERIALIZED (SELECT src, dst, kind, weight, updated_at FROM edges "
    "WHERE workspace = %(ws)s AND src = ANY(%(ids)s) AND kind = 'sequence'), "
    "mid AS (SELECT DISTINCT dst AS id FROM e1 "
    "WHERE NOT dst = ANY(%(ids)s) AND NOT dst = ANY(%(known)s)), "
    "e2 AS MATERIALIZED (SELECT src, dst, kind, weight, updated_at FROM edges "
    "WHERE workspace = %(ws)s AND src = ANY(ARRAY(SELECT id FROM mid)) AND kind = 'sequence') "
)


class PostgresReply(_Base):
    """Feedback's reply reads (see the module docstring); first among the store's bases, so
    that its ``edges_from`` answers before the read session's."""

    #: Answer feedback's reads in two exchanges (off: one by one; tests compare the two).
    _reply_reads = True

    def _session_recall(self, scope: Scope, recall_id: str | None) -> RecallRecord | None:
        """``get_recall`` in a read session: the records and vectors of the memories the recall
        names (shown, on its paths, in its tensions: what feedback reads next) come in the
        same exchange, selected in the server from the recall row."""
        snap = self._snap(scope.workspace)
        assert snap is not None
        feedback = self._reply_snap(scope.workspace) is not None
        if feedback and self._graph_cache and self._graph_scope(scope):
            self._graph_of(scope)  # feedback reads from the scope's graph as recall does
        sql, params = self._recall_query(scope, recall_id)
        named = (
            f"WITH r AS ({sql}) SELECT {MEMORY_COLUMNS}, embedding FROM memories "
            "WHERE workspace = %s AND id = ANY(ARRAY("
            "SELECT jsonb_array_elements_text(memory_ids) FROM r "
            "UNION SELECT jsonb_array_elements_text(p -> 'nodes') "
            "FROM r, jsonb_array_elements(r.paths) p "
            "UNION SELECT t ->> side FROM r, jsonb_array_elements(r.tensions) t, "
            "unnest(ARRAY['a', 'b']) side))"
        )

        def run(conn: Conn) -> tuple[Any, list[Any], Callable[[], None]]:
            record, memories = conn.cursor(), conn.cursor(binary=True)
            with conn.pipeline():
                with planned_once(conn):
                    record.execute(sql, params)
                    memories.execute(named, [*params, scope.workspace])
                reply = self._queue_reply(conn, scope)  # the reply's searches, if announced
            return record.fetchone(), memories.fetchall(), reply

        row, rows, reply = self._read("reading the recall", run)
        self._keep_rows(snap, rows, 0)
        reply()
        return self._recall_record(row)

    def _reply_snap(self, workspace: str) -> Any:
        """This thread's read session if it is one without a graph walk (feedback's)."""
        snap = self._snap(workspace)
        if snap is None or snap.plan.neighbourhood or not self._reply_reads:
            return None
        return snap

    def reply_ahead(
        self,
        scope: Scope,
        text: str,
        query: Callable[[], np.ndarray],
        k: int,
        where: RecallFilter | None = None,
    ) -> None:
        snap = self._reply_snap(scope.workspace)
        if snap is not None and not snap.keyword_ids and k > 0:
            snap.reply_ahead = (scope, tuple(terms(text)), query, k, where)

    def _queue_reply(self, conn: Conn, scope: Scope) -> Callable[[], None]:
        """Queue, in the open pipeline of ``conn`` (the recall's read), the reply's searches
        announced by :meth:`reply_ahead`, and what changed in the scope's graph if this
        process holds it (:mod:`.graph`: the refinement's sequence edges and rows
        then come from it); the returned function keeps their answers."""
        snap = self._reply_snap(scope.workspace)
        graph = self._held_graph(scope) if snap is not None else None
        if graph is None:
            return self._queue_searches_ahead(conn, scope, snap)
        with planned_once(conn):
            refreshed = self._queue_refresh(conn, graph, scope)
        searched = self._queue_searches_ahead(conn, scope, snap, graph)

        def keep() -> None:
            refreshed()
            self._fall_back(snap, graph)
            searched()

        return keep

    def _queue_searches_ahead(
        self, conn: Conn, scope: Scope, snap: Any, graph: Any = None
    ) -> Callable[[], None]:
        """Queue the searches :meth:`reply_ahead` announced; ``graph``: the held graph of
        ``scope``, refreshed in the same exchange (the vector hits of a scope small enough
        are then found in process, :mod:`.local`)."""
        ahead = getattr(snap, "reply_ahead", None) if snap is not None else None
        if ahead is None or snap.keyword_ids or snap.scope not in (None, ahead[0]):
            return lambda: None
        snap.reply_ahead = None
        a_scope, a_words, a_query, a_k, a_where = ahead
        local = graph if a_scope == scope and a_where is None and searched_locally(graph) else None
        got = self._queue_searches(conn, snap, a_scope, a_words, a_query, a_k, a_where, local)
        if got is None:
            return lambda: None

        def keep() -> None:
            snap.reply_hits = ((a_scope, a_words, a_query(), a_k, a_where), got())

        return keep

    def searches(
        self, scope: Scope, ask: SearchQuery
    ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        words, query, k, where = ask
        snap = self._reply_snap(scope.workspace)
        done = getattr(snap, "reply_hits", None) if snap is not None else None
        if done is not None:
            (a_scope, a_words, a_query, a_k, a_where), got = done
            hits: tuple[list[tuple[str, float]], list[tuple[str, float]]] = got
            snap.reply_hits = None
            if (a_scope, a_words, a_k, a_where) == (
                scope,
                tuple(words),
                k,
                where,
            ) and np.array_equal(a_query, query):
                return hits
        if snap is not None and not snap.keyword_ids and snap.scope in (None, scope):

            def run(conn: Conn) -> Callable[[], Any] | None:
                with conn.pipeline():
                    return self._queue_searches(conn, snap, scope, words, query, k, where)

            got = self._read("searching the reply", run)
            if got is not None:
                found: tuple[list[tuple[str, float]], list[tuple[str, float]]] = got()
                return found
        return self._keyword_hits(scope, words, k, where), self.vector_search(
            scope, query, k, where
        )

    def _queue_searches(
        self,
        conn: Conn,
        snap: Any,
        scope: Scope,
        words: Sequence[str],
        query: np.ndarray | Callable[[], np.ndarray],
        k: int,
        where: RecallFilter | None,
        local: Any = None,
    ) -> Callable[[], Any] | None:
        """Queue the keyword statement (its hits with their records, vectors and chunk
        vectors) and the vector statement in the open pipeline of ``conn``; the returned
        function keeps the keyword hits' rows in the session and returns both lists of hits.
        None (nothing queued) when there is no keyword term (``words``). ``query``: the vector, or
        what computes it (called once everything before the vector statement is on its way
        to the server). ``local``: a graph that will be up to date when the function is
        called: the vector hits come from it."""
        keyword = self._keyword_query(scope, words, k, where)
        if keyword is None or k <= 0:
            return None
        snap.scope = scope
        kw_sql, kw_args = keyword
        kw_sql = (
            f"SELECT t.id, t.score, ca.pos, ca.starts, ca.ends, ca.vecs, {M_RAW} "
            f"FROM ({kw_sql}) t JOIN memories m ON m.workspace = %(ws)s "
            f"AND m.id = t.id {_CHUNKS} ORDER BY t.score DESC, m.seq"
        )
        kw, vec = conn.cursor(binary=True), conn.cursor(binary=True)
        with planned_once(conn):
            finish = self._queue_scope_reads(conn, snap, scope)
            kw.execute(kw_sql, kw_args)
        # Sent already (pipeline mode): the server reads while the vector is computed.
        vector = query() if callable(query) else query
        if local is None:
            execute_searching(vec, *self._vector_query(scope, vector, k, where))

        def answers() -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
            finish()
            kw_rows = kw.fetchall()
            vec_rows = vec.fetchall() if local is None else local_hits(local, vector, k)
            if vec_rows is None:  # vectors of another size: the server answers
                vec_rows = self._server_hits(scope, vector, k)
            keep_raw(snap, kw_rows, 6, N_MEMORY)  # decoded when read
            for r in kw_rows:
                snap.windows[r[0]] = windows(r[2], r[3], r[4], r[5])
            snap.keyword_ids = [r[0] for r in kw_rows]
            return [(r[0], float(r[1])) for r in kw_rows], [(r[0], float(r[1])) for r in vec_rows]

        return answers

    def edges_from(
        self, workspace: str, ids: Sequence[str], min_weight: float = 0.0, kind: str | None = None
    ) -> list[Edge]:
        snap = self._reply_snap(workspace)
        if snap is None or snap.scope is None or kind != "sequence":
            return super().edges_from(workspace, ids, min_weight, kind)
        # Kept on the session (a plain object): gone when the session ends.
        known: dict[str, list[Edge]] | None = getattr(snap, "sequence_edges", None)
        if known is None:
            known = {}
            snap.sequence_edges = known
        wanted = list(dict.fromkeys(ids))
        missing = [i for i in wanted if i not in known]
        graph = snap.graph
        if graph is not None:  # the scope's graph (refreshed with the recall's read)
            for src in missing:
                found = graph.edges(src)
                if found is not None:
                    known[src] = [e for e in edges(found) if e.kind == "sequence"]
            missing = [i for i in missing if i not in known]
        if missing:
            self._read_steps(snap, workspace, missing, known)
        return [e for src in sorted(wanted) for e in known[src] if e.weight >= min_weight]

    def _read_steps(
        self, snap: Any, workspace: str, ids: list[str], known: dict[str, list[Edge]]
    ) -> None:
        """The sequence edges of ``ids`` and of where they lead (two steps), and the records
        and vectors of all of them the session lacks, in one statement: a row per memory,
        with the edges it is the source of (aggregated) and its row (if not read before)."""
        have = [i for i in snap.records if i in snap.vecs]
        args = {"ws": workspace, "ids": ids, "known": list(known), "have": have}
        sql = (
            _STEPS + ", ea AS (SELECT src, array_agg(dst ORDER BY dst, kind) AS dsts, "
            "array_agg(kind ORDER BY dst, kind) AS kinds, "
            "array_agg(weight ORDER BY dst, kind) AS weights, "
            "array_agg(updated_at ORDER BY dst, kind) AS ups "
            "FROM (SELECT * FROM e1 UNION ALL SELECT * FROM e2) e GROUP BY src), "
            "nodes AS (SELECT unnest(%(ids)s::text[]) AS id UNION SELECT dst FROM e1 "
            "UNION SELECT dst FROM e2), "
            "mm AS (SELECT * FROM memories WHERE workspace = %(ws)s "
            "AND id = ANY(ARRAY(SELECT id FROM nodes)) AND NOT id = ANY(%(have)s)) "
            f"SELECT n.id, ea.dsts, ea.kinds, ea.weights, ea.ups, {M_COLUMNS}, m.embedding "
            "FROM nodes n LEFT JOIN ea ON ea.src = n.id LEFT JOIN mm m ON m.id = n.id"
        )

        def run(conn: Conn) -> list[Any]:
            return conn.cursor(binary=True).execute(sql, args).fetchall()

        rows = self._read("reading sequence edges", run)
        out = {r[0]: r[1:5] for r in rows if r[1] is not None}
        asked = set(ids)
        # The sources step 2 read in full, selected as ``mid`` selects them.
        onward = {d for i in ids if i in out for d in out[i][0]} - asked - set(known)
        for src in [*ids, *onward]:
            dsts, kinds, weights, ups = out.get(src, ((), (), (), ()))
            known[src] = [
                Edge(src, d, k, float(w), float(u))
                for d, k, w, u in zip(dsts, kinds, weights, ups, strict=True)
            ]
        self._keep_rows(snap, [r[5:] for r in rows if r[5] is not None], 0)

"""Read sessions of the PostgreSQL store: one recall in few round trips.

A recall asks the store a dozen small questions (keyword hits, vector hits, the records and
vectors of candidates, sequence neighbours, graph edges hop by hop, feedback records, the
tensions among the results). Each is a round trip to the server; on SQLite they are function
calls. Inside :meth:`PostgresReads.reading` the store answers them from a per-thread snapshot
that a few wide statements fill:

1. keyword search returns its hits' records and vectors with them;
2. vector search runs, in one pipelined exchange, a statement that finds the vector hits and
   returns the out-edge lists of every candidate (keyword and vector hits), of the sequence
   neighbours of the head of the fused candidates (guessed in the statement from both hits'
   scores when the session knows the fusion, ``RefineAhead``) and of the nodes one hop from
   the likely graph seeds: complete for the likely seeds and where their strongest edges lead
   (the walk leaves those by any kind), the ``NARROW_KINDS`` only for the others (refinement
   reads their sequence edges, the tensions their contradicts / supersedes edges); the
   records and vectors of those a recall is likely to read (not of a seed's neighbour beyond
   the strongest edges the walk follows), of the head's second sequence neighbours and of the
   nodes two hops out along the strongest edges (where a walk of depth 2 ends); with
   ``LearningAhead.edge_parts``
   (``feedback_edge_context``) every full node's logged edge changes; a probe of whether any
   feedback record of the scope is recent enough to count, and the learned ranking's records
   of the kinds the scope had last time (their reply signals also answer the edge context's
   ``reply_facts``);
3. the recall record is written (outside this module).

Every answer is exactly what the plain call would return: a question the snapshot cannot
answer completely (an id it never read, an edge list it holds only in part, every kind of a
node read for its narrow kinds) goes to the server, and what comes back joins the snapshot. The snapshot lives for one ``with`` block of
one thread. Across calls only a small user scope's graph is kept (:mod:`.graph`: then
step 2 is the vector hits and what changed since, the snapshot falling back on the graph).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ...learn.scoring import EventFacts, PairFacts, ReplyFacts
from ...models import Edge, MemoryRecord, Scope
from ..base import ChunkVector, ReadPlan, ReplyQuery
from ..tables import MEMORY_COLUMNS
from .connection import Conn
from .graph import PostgresGraph, hint_key
from .snapshot import (
    NARROW_KINDS,
    PARTS_OF,
    WINDOW_AGGREGATES,
    Ahead,
    Lazy,
    Snapshot,
    change_rows,
    keep_parts,
    wants_parts,
    windows,
)
from .statements import (
    HEAD_GUESS,
    HEAD_MARGIN,
    M_COLUMNS,
    M_RAW,
    N_MEMORY,
    NARROW,
    SIGNAL_MEMORIES,
    replies_statement,
)
from .vectors import chunk_scope, own_hits, scope_keys

__all__ = ["M_COLUMNS", "PostgresReads", "Snapshot"]

_METADATA = 11
# Candidates whose one-hop graph neighbours are read ahead: the head of either list and of the
# guessed fused list (the walk starts from the best few refined candidates, which are nearly
# always among the head of the two lists).
_SEED_GUESS = 12
# Edges of a likely seed the walk may follow (graph_fanout 3, plus up to graph_depth 2 to
# nodes it has visited): the nodes they reach come with their records and vectors.
_WALK_GUESS = 5
# Edges followed from each node a seed's strongest edges reach (graph_fanout 3): where they
# lead (two hops from the seeds, where a walk of graph_depth 2 ends) comes with its record and
# vector, not its edges. Edges back to a seed are not counted: the walk does not go back to
# the node it came from, and a node's strongest edge often leads back to the seed that
# reached it (semantic edges go both ways), so counting them missed the walk's third
# choice (a record read of its own in 39 of 100 recalls at 10k; 3 of 100 without them).
_HOP2_GUESS = 3
_SCOPE_KEYS = ("user_id", "agent_id", "session_id")


class PostgresReads(PostgresGraph):
    """The read-session half of :class:`~.search.PostgresSearch`."""

    _ef_search: int
    _local: threading.local

    # provided by the store
    def _record(self, row: Sequence[Any]) -> MemoryRecord:
        raise NotImplementedError

    #: :meth:`..sql.feedback.SQLRecords._learning_reader` (the store's feedback half).
    _learning_reader: Callable[
        [Scope, Sequence[str], float | None, int | None, tuple[bool, bool, bool]],
        Callable[[Any], Callable[[], tuple[list[EventFacts], list[PairFacts], Any]]],
    ]

    # -- the session ---------------------------------------------------------------------------
    @contextmanager
    def reading(self, plan: ReadPlan | None = None) -> Iterator[None]:
        """Answer this thread's reads from one snapshot until the block ends (see the module
        docstring and :meth:`~..base.ReadAhead.reading` for the arguments)."""
        if getattr(self._local, "snap", None) is not None:
            yield  # nested: the outer session goes on
            return
        snap = Snapshot(plan if plan is not None else ReadPlan())
        snap.records = Lazy(self._raw_record)
        self._local.snap = snap
        try:
            yield
        finally:
            self._local.snap = None

    def _snap(self, workspace: str | None = None) -> Snapshot | None:
        """This thread's session, if it has one that covers ``workspace``."""
        snap: Snapshot | None = getattr(self._local, "snap", None)
        if snap is None or workspace is None or snap.scope is None:
            return snap
        return snap if snap.scope.workspace == workspace else None

    def _raw_record(self, row: Sequence[Any]) -> MemoryRecord:
        """A record from a row of ``M_RAW`` without its vector (metadata as JSON text)."""
        fields = list(row)
        fields[_METADATA] = json.loads(fields[_METADATA])
        return self._record(fields)

    def _keep_rows(self, snap: Snapshot, rows: Sequence[Sequence[Any]], at: int) -> None:
        """Cache records (``MEMORY_COLUMNS`` from column ``at``) and the vector after them."""
        for r in rows:
            rec = self._record(r[at : at + N_MEMORY])
            snap.records[rec.id] = rec
            vec = r[at + N_MEMORY]
            if vec is not None:
                snap.vecs[rec.id] = vec

    def _queue_scope_reads(self, conn: Conn, snap: Snapshot, scope: Scope) -> Callable[[], None]:
        """Queue, in the open pipeline of ``conn``, the scope reads the session was told of
        (the newest preferences with their vectors); the returned function stores their
        answers once the pipeline has delivered them."""
        if snap.scope_read or not snap.plan.preferences:
            return lambda: None
        snap.scope_read = True
        where = " AND ".join(
            ["workspace = %s"] + [f"{k} = %s" for k in _SCOPE_KEYS if getattr(scope, k) is not None]
        )
        params = [scope.workspace] + [
            getattr(scope, k) for k in _SCOPE_KEYS if getattr(scope, k) is not None
        ]
        prefs = conn.cursor(binary=True)
        limit = snap.plan.preferences
        prefs.execute(
            f"SELECT {MEMORY_COLUMNS}, embedding FROM memories WHERE {where} "
            "AND status = 'active' AND kind = 'preference' ORDER BY seq DESC LIMIT %s",
            [*params, limit],
        )

        def finish() -> None:
            rows = prefs.fetchall()
            self._keep_rows(snap, rows, 0)
            snap.kinds[("preference", limit)] = [snap.records[r[0]] for r in rows]

        return finish

    def _cached_kind(self, scope: Scope, kind: str, limit: int) -> list[MemoryRecord] | None:
        snap = self._snap(scope.workspace)
        if snap is None or snap.scope != scope:
            return None
        return snap.kinds.get((kind, limit))

    # -- cached reads --------------------------------------------------------------------------
    def _cached_records(self, workspace: str, ids: list[str]) -> dict[str, MemoryRecord] | None:
        snap = self._snap(workspace)
        if snap is None:
            return None
        self._fill(snap, workspace, [i for i in ids if i not in snap.records])
        return {i: snap.records[i] for i in ids if i in snap.records}

    def _cached_vectors(self, workspace: str, ids: list[str]) -> dict[str, np.ndarray] | None:
        snap = self._snap(workspace)
        if snap is None:
            return None
        self._fill(snap, workspace, [i for i in ids if i not in snap.vecs])
        return {i: snap.vecs[i] for i in ids if i in snap.vecs}

    def _fill(self, snap: Snapshot, workspace: str, missing: list[str]) -> None:
        """Read the records and vectors of ``missing`` (one round trip; absent ids stay out)."""
        if not missing:
            return
        rows = self._read(
            "get",
            lambda c: (
                c.cursor(binary=True)
                .execute(
                    f"SELECT {MEMORY_COLUMNS}, embedding FROM memories "
                    "WHERE workspace = %s AND id = ANY(%s)",
                    (workspace, missing),
                )
                .fetchall()
            ),
        )
        self._keep_rows(snap, rows, 0)

    def _cached_windows(
        self, workspace: str, ids: Sequence[str]
    ) -> dict[str, list[ChunkVector]] | None:
        """The chunk vectors of ``ids`` (as ``memory_chunks`` returns them) from the session,
        the ones it has not read yet read in one round trip."""
        snap = self._snap(workspace)
        if snap is None or snap.scope is None:
            return None
        wanted = list(dict.fromkeys(ids))
        missing = [i for i in wanted if i not in snap.windows]
        if missing:
            rows = self._read(
                "reading chunk vectors",
                lambda c: (
                    c.cursor(binary=True)
                    .execute(
                        "SELECT memory_id, position, start_char, end_char, embedding "
                        "FROM memory_chunks WHERE workspace = %s AND memory_id = ANY(%s) "
                        "ORDER BY memory_id, position",
                        (workspace, missing),
                    )
                    .fetchall()
                ),
            )
            for i in missing:
                snap.windows[i] = []
            for r in rows:
                snap.windows[r[0]].append(
                    ChunkVector(int(r[1]), int(r[2]), int(r[3]), np.asarray(r[4]))
                )
        return {i: list(snap.windows[i]) for i in wanted if snap.windows[i]}

    def _cached_edges(
        self, workspace: str, ids: Sequence[str], min_weight: float, kind: str | None
    ) -> list[Edge] | None:
        snap = self._snap(workspace)
        if snap is None or snap.scope is None or not snap.plan.neighbourhood:
            return None  # without a walk the plain read is the lighter one
        wanted = list(dict.fromkeys(ids))
        # A source read for its edges of the narrow kinds answers for those kinds.
        partial = snap.narrow_edges if kind in NARROW_KINDS else None
        missing = [
            i for i in wanted if i not in snap.out_edges and (partial is None or i not in partial)
        ]
        if missing:
            self._fill_edges(snap, workspace, missing)
        out: list[Edge] = []
        for src in sorted(wanted):
            found = snap.out_edges.get(src)
            if found is None and partial is not None:
                found = partial.get(src, ())
            out += [
                e
                for e in found or ()
                if e.weight >= min_weight and (kind is None or e.kind == kind)
            ]
        return out

    def _fill_edges(self, snap: Snapshot, workspace: str, missing: list[str]) -> None:
        """Every edge leaving ``missing``, with the records and vectors of where they lead
        (the next question of a graph walk), in one round trip."""

        with_parts = wants_parts(snap)

        def joined(conn: Conn) -> tuple[list[Any], list[Any], list[Any]]:
            cur = conn.cursor(binary=True)
            changes = conn.cursor(binary=True)
            with conn.pipeline():
                cur.execute(
                    "WITH e AS (SELECT src, dst, kind, weight, updated_at FROM edges "
                    "WHERE workspace = %s AND src = ANY(%s)) "
                    "SELECT e.src, e.dst, e.kind, e.weight, e.updated_at, "
                    f"{M_COLUMNS}, m.embedding FROM e LEFT JOIN memories m "
                    "ON m.workspace = %s AND m.id = e.dst AND NOT (m.id = ANY(%s)) "
                    "ORDER BY e.src, e.dst, e.kind",
                    (workspace, missing, workspace, list(snap.records)),
                )
                if with_parts:  # what feedback moved them by (the edge context), alongside
                    changes.execute(
                        PARTS_OF.format(ws="%s", sources="%s::text[]"), (workspace, missing)
                    )
            rows = cur.fetchall()
            found = changes.fetchall() if with_parts else []
            return [r[:5] for r in rows], [r[5:] for r in rows if r[5] is not None], found

        edges, rows, changed = self._read("reading edges", joined)
        for src in missing:
            snap.out_edges[src] = []
        for e in edges:
            snap.out_edges[e[0]].append(Edge(*e))
        if with_parts:
            keep_parts(snap, missing, changed)
        self._keep_rows(snap, rows, 0)

    def _cached_parts(
        self, workspace: str, ids: Sequence[str], kind: str | None
    ) -> list[tuple[str, str, str, str | None, float]] | None:
        """``learned_edge_parts`` from the session: the sources whose out-edges it read come
        with their logged changes; the others are read with their out-edges (one exchange)."""
        snap = self._snap(workspace)
        if snap is None or snap.scope is None or not wants_parts(snap):
            return None
        wanted = list(dict.fromkeys(ids))
        missing = [i for i in wanted if i not in snap.edge_parts]
        if missing:
            self._fill_edges(snap, workspace, missing)
        return [p for i in wanted for p in snap.edge_parts[i] if kind is None or p[2] == kind]

    # -- the prefetch --------------------------------------------------------------------------
    def _prefetch(
        self,
        snap: Snapshot,
        scope: Scope,
        query: Any,
        k: int,
        narrowed: tuple[str, str, dict[str, Any]] = ("", "", {}),
    ) -> list[tuple[str, float]]:
        """The vector search of a session: its hits, and the neighbourhood every later
        question of the recall is about, in one exchange (see the module docstring).
        ``narrowed``: the filter's conditions on ``memories`` unaliased and aliased ``m``
        (``%(name)s`` placeholders), and their parameters."""
        graph_hits = self._graph_prefetch(snap, scope, query, k, bool(narrowed[0] or narrowed[1]))
        if graph_hits is not None:  # the scope's graph is held in process (.postgres_graph)
            return graph_hits
        ws = scope.workspace
        keys = scope_keys(scope)
        chunk_where = chunk_scope(keys)
        own_filter, chunk_filter, filter_args = narrowed
        ef = min(1000, max(self._ef_search, k))
        kw = list(snap.keyword_ids)
        # With the edge context, each full node's logged edge changes (learned_edge_parts).
        with_parts = wants_parts(snap)
        parts_cte = parts_cols = parts_join = ""
        if with_parts:
            sources = "ARRAY(SELECT id FROM nodes WHERE full_node)"
            parts_cte = f",\n            pa AS ({PARTS_OF.format(ws='%(ws)s', sources=sources)})"
            parts_cols = ", pa.dsts, pa.kinds, pa.recalls, pa.applied"
            parts_join = "\n            LEFT JOIN pa ON n.full_node AND pa.src = n.id"
        # Refinement reads the conversation neighbours of the head of the fused candidates:
        # of the best ``depth`` (and a margin) by the fused score, the keyword hits' cosine
        # from their own vector (a chunk's may be higher), when the session knows the fusion.
        refine = snap.plan.refine
        head_cte = (
            HEAD_GUESS
            if refine is not None
            else "\n            head AS (SELECT id, NULL::bigint AS rk FROM cand),"
        )
        # hits: exactly vector_search's (a memory scores its best of its own vector and its
        # chunk vectors); then the candidates' neighbourhood, with every full node's chunks.
        sql = f"""
            WITH own AS MATERIALIZED ({own_hits(keys, own_filter)}),
            -- The scope's chunk vectors, nearest first, each memory checked by key (active,
            -- the filter) until k are found: no scan of the workspace's memories.
            chunk_hits AS MATERIALIZED (
                SELECT d.id, d.distance FROM (
                    SELECT c.memory_id AS id, min(c.embedding <=> %(q)s) AS distance
                    FROM memory_chunks c WHERE {chunk_where} GROUP BY c.memory_id) d
                CROSS JOIN LATERAL (
                    SELECT 1 FROM memories m WHERE m.workspace = %(ws)s AND m.id = d.id
                    AND m.status = 'active'{chunk_filter} OFFSET 0) ok
                ORDER BY d.distance LIMIT %(k)s),
            hits AS MATERIALIZED (
                SELECT id, min(distance) AS distance
                FROM (SELECT * FROM own UNION ALL SELECT * FROM chunk_hits) b
                GROUP BY id ORDER BY min(distance), id LIMIT %(k)s),
            cand AS MATERIALIZED (
                SELECT id, min(distance) AS distance FROM (
                    SELECT id, distance FROM hits
                    UNION ALL SELECT unnest(%(kw)s::text[]), NULL) b GROUP BY id),
{head_cte}
            seeds AS ((SELECT id FROM hits ORDER BY distance, id LIMIT %(seeds)s)
                      UNION SELECT unnest(%(kw_seeds)s::text[])
                      UNION SELECT id FROM head WHERE rk <= %(seeds)s),
            -- Every edge leaving a candidate, then leaving n1 (one index scan each, by array).
            e1 AS MATERIALIZED (
                SELECT src, dst, kind, weight, updated_at FROM edges
                WHERE workspace = %(ws)s AND src = ANY(ARRAY(SELECT id FROM cand))),
            -- n1: sequence neighbours of the candidates and every neighbour of the likely
            -- seeds. ``likely``: reached along a sequence edge, or among the strongest edges
            -- of a seed (the walk follows only those): their records and vectors come along.
            reach1 AS (
                SELECT dst AS id, false AS by_sequence, row_number() OVER (
                           PARTITION BY src ORDER BY max(weight) DESC, dst) <= %(walk)s AS likely
                FROM e1 WHERE src IN (SELECT id FROM seeds) GROUP BY src, dst
                UNION ALL
                SELECT dst, true, true FROM e1 WHERE kind = 'sequence'
                AND src IN (SELECT id FROM head)),
            n1 AS MATERIALIZED (
                SELECT id, bool_or(by_sequence) AS by_sequence, bool_or(likely) AS likely
                FROM reach1 WHERE id NOT IN (SELECT id FROM cand) GROUP BY id),
            -- hop1: where a seed's strongest edges lead (a walk's first hop). The walk reads
            -- every out-edge of the seeds and of hop1 (``walkers``); the other full nodes are
            -- read for their edges of the narrow kinds (refinement's sequence neighbours, one
            -- and two steps; the tensions among the results).
            hop1 AS MATERIALIZED (SELECT DISTINCT id FROM reach1 WHERE likely AND NOT by_sequence),
            walkers AS MATERIALIZED (SELECT id FROM seeds UNION SELECT id FROM hop1),
            e2 AS MATERIALIZED (
                SELECT src, dst, kind, weight, updated_at FROM edges
                WHERE workspace = %(ws)s AND src = ANY(ARRAY(SELECT id FROM n1))
                AND (kind IN {NARROW} OR src IN (SELECT id FROM hop1))),
            -- Second sequence neighbours of the head (through a candidate or not); n2:
            -- those not read in full.
            sec AS MATERIALIZED (
                SELECT dst AS id FROM (SELECT * FROM e1 UNION ALL SELECT * FROM e2) e
                WHERE kind = 'sequence' AND src IN (
                    SELECT dst FROM e1 WHERE kind = 'sequence'
                    AND src IN (SELECT id FROM head))),
            n2 AS (SELECT id FROM sec EXCEPT (SELECT id FROM cand UNION SELECT id FROM n1)),
            -- n3: two hops out, along the strongest edges of hop1 (a walk's second hop) but
            -- those back to a seed (a walk skips the node it came from); not read in full.
            reach2 AS (
                SELECT dst AS id, row_number() OVER (
                           PARTITION BY src ORDER BY max(weight) DESC, dst) <= %(hop2)s AS top
                FROM (SELECT * FROM e1 UNION ALL SELECT * FROM e2) e
                WHERE src IN (SELECT id FROM hop1) AND dst NOT IN (SELECT id FROM seeds)
                GROUP BY src, dst),
            hop2 AS MATERIALIZED (SELECT DISTINCT id FROM reach2 WHERE top),
            n3 AS (SELECT id FROM hop2
                   EXCEPT (SELECT id FROM cand UNION SELECT id FROM n1 UNION SELECT id FROM sec)),
            nodes AS MATERIALIZED (
                SELECT id, distance, true AS full_node, true AS likely FROM cand
                UNION ALL SELECT id, NULL, true,
                                 likely OR id IN (SELECT id FROM sec UNION SELECT id FROM hop2)
                          FROM n1
                UNION ALL SELECT id, NULL, false, true FROM n2
                UNION ALL SELECT id, NULL, false, true FROM n3),
            -- A full node's out-edges, a walker's all, the others' of the narrow kinds (the four
            -- aggregates share one sort).
            ea AS (SELECT src, array_agg(dst ORDER BY dst, kind) AS dsts,
                          array_agg(kind ORDER BY dst, kind) AS kinds,
                          array_agg(weight ORDER BY dst, kind) AS weights,
                          array_agg(updated_at ORDER BY dst, kind) AS ups
                   FROM (SELECT * FROM e1 UNION ALL SELECT * FROM e2) e
                   WHERE kind IN {NARROW} OR src IN (SELECT id FROM walkers) GROUP BY src),
            ca AS (SELECT memory_id, {WINDOW_AGGREGATES}
                   FROM memory_chunks c WHERE c.workspace = %(ws)s
                   AND c.memory_id = ANY(ARRAY(SELECT id FROM nodes WHERE full_node))
                   GROUP BY memory_id),
            -- The rows of the likely nodes, by one index scan (an array of keys), but the
            -- keyword hits' (their search brought them: the session holds them).
            mm AS (SELECT * FROM memories WHERE workspace = %(ws)s
                   AND id = ANY(ARRAY(SELECT id FROM nodes WHERE likely
                                      AND id NOT IN (SELECT unnest(%(kw)s::text[]))))){parts_cte}
            SELECT n.id, n.distance, n.full_node, n.id IN (SELECT id FROM walkers),
                   ea.dsts, ea.kinds, ea.weights, ea.ups,
                   ca.pos, ca.starts, ca.ends, ca.vecs, {M_RAW}{parts_cols}
            FROM nodes n LEFT JOIN mm m ON m.id = n.id
            LEFT JOIN ea ON n.full_node AND ea.src = n.id
            LEFT JOIN ca ON n.full_node AND ca.memory_id = n.id{parts_join}
        """
        args = {
            "q": query,
            "k": k,
            "kw": kw,
            "kw_seeds": kw[:_SEED_GUESS],
            "seeds": _SEED_GUESS,
            "walk": _WALK_GUESS,
            "hop2": _HOP2_GUESS,
            "kw_scores": list(snap.keyword_scores),
            "kw_cos": _cosines(snap, kw, query.array) if refine is not None else [],
            "kw_weight": (refine.keyword_weight if kw else 0.0) if refine is not None else 0.0,
            "head": (refine.depth if refine is not None else 0) + HEAD_MARGIN,
            "ws": ws,
            **{key: getattr(scope, key) for key in _SCOPE_KEYS},
            **filter_args,
        }
        rows, found = self._vector_exchange(
            snap, scope, query, (sql, args, ef if ef != self._ef_search else None)
        )
        hits: list[tuple[str, float]] = []
        at = 12
        for r in rows:
            memory_id = r[0]
            if r[at] is not None:  # the likely nodes' records and vectors
                snap.records.put_raw(memory_id, r[at : at + N_MEMORY])
                snap.vecs.put_raw(memory_id, r[at + N_MEMORY])
            if r[1] is not None:
                hits.append((memory_id, 1 - float(r[1])))
            if r[2]:
                lists = snap.out_edges if r[3] else snap.narrow_edges
                lists.put_raw(memory_id, (memory_id, r[4] or [], r[5] or [], r[6] or [],
                                          r[7] or []))  # fmt: skip
                snap.windows[memory_id] = windows(r[8], r[9], r[10], r[11])
                if with_parts:
                    snap.edge_parts[memory_id] = change_rows(memory_id, *r[-4:])
        hits.sort(key=lambda h: (1 - h[1], h[0]))
        self._prefetched(snap, scope, found)
        return hits

    # -- the learned ranking's reads, ahead ----------------------------------------------------
    def _queue_learning(
        self, conn: Conn, snap: Snapshot, scope: Scope, since: float, searched: np.ndarray
    ) -> Callable[[], Ahead | None]:
        """Queue, in the open pipeline of ``conn``, the learned ranking's reads of the kinds
        of record the scope had last time (the events, the preference pairs, the reply
        signals whose recall's query matches the session's query), in one read-only
        transaction; the returned function collects their answers. Ratings are read by
        memory id (known after the walk), so they are not read ahead. With the edge context,
        the reply signals matched by ``searched`` too (the vector search's query vector,
        which the edge context's ``reply_facts`` matches with) when it differs."""
        ahead = snap.plan.learning
        if ahead is None:
            return lambda: None
        events, pairs, _, signals = self._hints().get(hint_key(scope), (True, True, False, False))
        if not (events or pairs or signals):
            return lambda: None
        reader = None
        replies = conn.cursor(binary=True)
        by_search = conn.cursor(binary=True)
        edge_vec = None
        if signals and ahead.edge_parts and not np.array_equal(searched, ahead.context()):
            edge_vec = searched
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            if events or pairs:
                reader = self._learning_reader(
                    scope, [], since, ahead.limit, (events, pairs, False)
                )(conn)
            if signals:
                sql, args = replies_statement(
                    scope, since, ahead.context(), ahead.context_min, ahead.reply_limit,
                    "%s::text[]", [[]],
                )  # fmt: skip
                # The signals' memories may join the ranking (and its head's reads, the
                # tensions among the results): their rows and out-edges come along, once each.
                sql = SIGNAL_MEMORIES.replace("{signals}", sql)
                args = [*args, scope.workspace, scope.workspace, scope.workspace]
                replies.execute(sql, args)
            if edge_vec is not None:
                sql, args = replies_statement(
                    scope, since, edge_vec, ahead.context_min, ahead.reply_limit,
                    "%s::text[]", [[]],
                )  # fmt: skip
                by_search.execute(sql, args)

        def collect() -> Ahead:
            found_events, found_pairs, _ = reader() if reader is not None else ([], [], [])
            rows = replies.fetchall() if signals else []
            for r in rows:
                if r[9] is None:
                    continue  # not the first row of its memory
                memory_id = r[0]
                if memory_id not in snap.records:
                    snap.records.put_raw(memory_id, r[14 : 14 + N_MEMORY])
                    snap.vecs.put_raw(memory_id, r[14 + N_MEMORY])
                if memory_id not in snap.out_edges:
                    snap.out_edges.put_raw(memory_id, (memory_id, r[10] or [], r[11] or [],
                                                       r[12] or [], r[13] or []))  # fmt: skip
                    if wants_parts(snap):
                        snap.edge_parts[memory_id] = change_rows(memory_id, *r[-4:])
            searched_rows = by_search.fetchall() if edge_vec is not None else []
            return Ahead(
                (events, pairs, signals), found_events, found_pairs, rows, edge_vec, searched_rows
            )

        return collect

    def _learned_ahead(
        self, scope: Scope, since: float, limit: int, context_min: float, reply_limit: int
    ) -> tuple[list[EventFacts], list[PairFacts], list[Any]] | None:
        """The session's records read ahead, as ``learning_reads`` with ``since`` (no older
        than the session's horizon) would read them (no ratings, no witnesses), or ``None``
        when they may differ: the probe found a kind not read ahead, or ratings; other
        arguments; or a record read lies between the two horizons (the read-ahead, cut at
        ``limit`` from the newest, may then hold what the later horizon leaves out)."""
        snap = self._snap(scope.workspace)
        if (
            snap is None
            or snap.learned is None
            or snap.plan.learning is None
            or snap.scope != scope
        ):
            return None
        got, ahead = snap.learned, snap.plan.learning
        events, pairs, ratings = snap.found
        if (
            snap.plan.feedback_since is None
            or since < snap.plan.feedback_since
            or ratings
            or (events and not got.sent[0])
            or (pairs and not got.sent[1])
            or (snap.signals and not got.sent[2])
            or (limit, context_min, reply_limit)
            != (ahead.limit, ahead.context_min, ahead.reply_limit)
        ):
            return None
        kept_events = [e for e in got.events if _in_horizon(e, since)]
        kept_pairs = [p for p in got.pairs if p.created_at >= since]
        # Cut at ``limit`` from the newest: a cut list is the later horizon's as long as all
        # it holds is in that horizon; a list that was not cut holds all of it.
        for before, after in ((got.events, kept_events), (got.pairs, kept_pairs)):
            if len(after) < len(before) and len(before) >= limit:
                return None
        rows = got.replies
        if rows and rows[0][8] >= reply_limit:
            return None  # the matching recalls were cut: their order may change
        # A recall matches in the later horizon if its newest matching signal is in it.
        replies = [r[:6] for r in rows if r[7] is not None and r[7] >= since and r[3] >= since]
        return (
            kept_events if events else [],
            kept_pairs if pairs else [],
            replies if snap.signals else [],
        )

    def _replies_ahead(self, scope: Scope, ask: ReplyQuery) -> list[Any] | None:
        """``reply_facts`` without witnesses (the edge context's read) from the session, as
        rows, or ``None`` when the session cannot answer it: the probe found no reply signal
        of the user (none), or the signals were read ahead with the same arguments and the
        same vector."""
        context, context_min, since, limit = ask
        snap = self._snap(scope.workspace)
        if (
            snap is None
            or snap.scope != scope
            or not snap.prefetched
            or snap.plan.feedback_since is None
            or since < snap.plan.feedback_since
        ):
            return None
        if not snap.signals:
            return []  # no signal of the user since an older horizon: no recall matches
        got, ahead = snap.learned, snap.plan.learning
        if (
            got is None
            or ahead is None
            or not got.sent[2]
            or (context_min, limit) != (ahead.context_min, ahead.reply_limit)
        ):
            return None
        # The plain read asks for the query's vector too (signals found): the rows matched
        # with that vector (the session's query's, or the vector search's), if read.
        vec = context()
        if np.array_equal(vec, ahead.context()):
            rows = got.replies
        elif got.searched is not None and np.array_equal(vec, got.searched):
            rows = got.searched_replies
        else:
            return None
        if rows and rows[0][8] >= limit:
            return None  # the matching recalls were cut: their order may change
        return [r[:6] for r in rows if r[7] is not None and r[7] >= since and r[3] >= since]

    def _no_feedback(self, scope: Scope, since: float | None) -> bool:
        """Whether the session's probe showed no feedback record of ``scope`` since
        ``since`` (the caller's horizon, no older than the probe's)."""
        snap = self._snap(scope.workspace)
        return (
            snap is not None
            and snap.no_feedback
            and snap.scope == scope
            and snap.plan.feedback_since is not None
            and since is not None
            and since >= snap.plan.feedback_since
        )

    def _empty_replies(self, scope: Scope, since: float) -> list[ReplyFacts] | None:
        return [] if self._no_feedback(scope, since) else None

    def _signals_likely(self, scope: Scope) -> bool:
        """Whether the session's probe found reply signals of the scope's user (those
        ``reply_facts`` matches against the query's vector)."""
        snap = self._snap(scope.workspace)
        return snap is not None and snap.signals and snap.scope == scope


def _cosines(snap: Snapshot, ids: Sequence[str], query: np.ndarray) -> list[float | None]:
    """The cosine of each of ``ids``' vector (those the session holds) with ``query``."""
    return [float(snap.vecs[i] @ query) if i in snap.vecs else None for i in ids]


def _in_horizon(event: EventFacts, since: float) -> bool:
    """Whether the event counts with the horizon ``since`` (made or reviewed since)."""
    return event.created_at >= since or any(r.created_at >= since for r in event.reviews)

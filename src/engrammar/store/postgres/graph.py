"""A process's copy of a user scope's graph, for PostgreSQL recall.

The recall prefetch (:meth:`.reads.PostgresReads._prefetch`) spends most of its time
in the server guessing which neighbours, edges and rows a recall will read (at 10,000
memories in one scope ~22 of ~24 ms, against ~2 ms for the vector hits alone). The embedded
store answers those questions in process; this module does the same for PostgreSQL: the first
recall of a (workspace, user) scope that fits ``Config.scope_cache_bytes`` (or, as the most
recently used, has at most ``Config.scope_graph_max`` memories) reads the scope's
memory rows (with their vectors), every edge leaving them and their chunk vectors in one
repeatable-read transaction, and keeps them with that snapshot's ``xmin`` as its watermark.
Every later recall of the scope sends, in the one exchange that finds its vector hits, what
``change_log`` (migration m017, kept by triggers on ``memories``, ``edges`` and
``memory_chunks``) names as changed by transactions at or after the watermark: those rows,
edge lists and chunk vectors are read again, and the watermark moves to the new snapshot's
``xmin``. A transaction the snapshot did not see has an id at or above its ``xmin``, so no
committed change is missed, whichever process made it; a change seen twice is read twice.

The session then answers reads of the scope's memories from the copy (the snapshot's lazy
dicts fall back on it); anything else (another scope's memory, a memory added after the
copy's last look) is read from the server as before. Not used with a recall filter, agent or
session keys, or a larger scope (the plain prefetch runs); a copy older than :data:`STALE_S`
is read again whole (the change log keeps an hour).
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from array import array
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard

from ...errors import StoreError
from ...models import Scope
from .connection import Conn, Connected
from .local import local_hits, searched_locally
from .snapshot import PARTS_OF, WINDOW_AGGREGATES, Snapshot, change_rows, windows
from .statements import M_RAW, N_MEMORY, PROBE, planned_once
from .vectors import execute_searching

__all__ = ["GRAPH_MAX", "MEMORY_BYTES", "STALE_S", "PostgresGraph", "ScopeGraph", "hint_key"]

#: The default of ``Config.scope_graph_max``: a scope of at most this many memories is kept
#: in process past ``scope_cache_bytes`` while it is the most recently used (scopes that fit
#: the budget, at :data:`MEMORY_BYTES` each, are kept in any case).
GRAPH_MAX = 100_000
#: What a memory costs in a graph: its row and vector (~2 kB) and its edge lists (measured:
#: ~42 MB for 10,000 chat turns with about 129,000 edges). All of a store's graphs together
#: stay within ``scope_cache_bytes`` at this rate; past it the least recently used go.
MEMORY_BYTES = 4096
#: A copy not refreshed for this long is read again whole (``change_log`` keeps an hour).
STALE_S = 1800.0
_FIRST = threading.Lock()
# What a graph read answers for a scope past the budget (read again behind the recalls).
_PAST_BUDGET = object()
# How long a scope found too large is not looked at again.
_TOO_LARGE_S = 600.0

# The columns of ``M_RAW`` many rows of a scope share: id (a destination of edges too),
# workspace, user, agent, session, role; kind, status.
_SHARED = frozenset({0, 1, 2, 3, 4, 5, 7, 8})
_SCOPE = "workspace = %(ws)s AND user_id = %(user)s"
_ROWS = f"SELECT {M_RAW} FROM memories m WHERE m.{_SCOPE}"
_EDGES = (
    "SELECT src, array_agg(dst ORDER BY dst, kind), array_agg(kind ORDER BY dst, kind), "
    "array_agg(weight ORDER BY dst, kind), array_agg(updated_at ORDER BY dst, kind) "
    "FROM edges WHERE workspace = %(ws)s AND src IN (SELECT id FROM memories WHERE "
    f"{_SCOPE}) GROUP BY src"
)
_WINDOWS = (
    f"SELECT c.memory_id, {WINDOW_AGGREGATES} FROM memory_chunks c WHERE c.workspace = %(ws)s "
    f"AND c.memory_id IN (SELECT id FROM memories WHERE {_SCOPE}) GROUP BY c.memory_id"
)
# Scopes whose kinds of feedback record are remembered (then forgotten all at once).
_HINTS = 10_000
_PARTS = PARTS_OF.format(ws="%(ws)s", sources=f"ARRAY(SELECT id FROM memories WHERE {_SCOPE})")
_MARK = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text"


def _changed(tag: str, mine: bool = True) -> str:
    """The ids ``change_log`` lists under ``tag`` since the watermark; with ``mine``, only
    those of the scope's user's memories (the log is kept per workspace: other users' changes
    are not shipped).

    The planner cannot tell how many ids the log's arrays hold (it guesses about a thousand
    for a handful), so every join on them is written as index lookups (``= ANY(ARRAY(...))``
    or ``LATERAL``): joined plainly, a 10k scope's refresh scanned all its memories and edges
    (~40 ms after each feedback at 10,000 memories, instead of ~1 ms)."""
    logged = (
        "SELECT DISTINCT unnest(ids) AS id FROM change_log WHERE workspace = %(ws)s "
        f"AND xid >= %(wm)s::xid8 AND tbl = '{tag}'"
    )
    if not mine:
        return logged
    return (
        "SELECT o.id FROM memories o WHERE o.workspace = %(ws)s AND o.user_id = %(user)s "
        f"AND o.id = ANY(ARRAY({logged}))"
    )


# The rows, edge lists and chunk vectors of what changed since the watermark: the user's
# (an id whose row is gone, or another user's, comes with NULLs / false).
_NEW_ROWS = (
    f"WITH ch AS ({_changed('m', mine=False)}) SELECT ch.id, m.id IS NOT NULL, "
    f"{M_RAW} FROM ch LEFT JOIN LATERAL (SELECT * FROM memories r WHERE r.workspace = %(ws)s "
    "AND r.id = ch.id AND r.user_id = %(user)s LIMIT 1) m ON true"
)
_NEW_EDGES = (
    f"WITH ch AS ({_changed('e')}) SELECT e.src, array_agg(dst ORDER BY dst, kind), "
    "array_agg(kind ORDER BY dst, kind), array_agg(weight ORDER BY dst, kind), "
    "array_agg(updated_at ORDER BY dst, kind) FROM edges e "
    "WHERE e.workspace = %(ws)s AND e.src = ANY(ARRAY(SELECT id FROM ch)) GROUP BY e.src "
    "UNION ALL SELECT ch.id, NULL, NULL, NULL, NULL FROM ch WHERE NOT EXISTS ("
    "SELECT 1 FROM edges e WHERE e.workspace = %(ws)s AND e.src = ch.id)"
)
_NEW_WINDOWS = (
    f"WITH ch AS ({_changed('c')}) SELECT ch.id, ca.* FROM ch LEFT JOIN LATERAL ("
    f"SELECT {WINDOW_AGGREGATES} FROM memory_chunks c WHERE c.workspace = %(ws)s "
    "AND c.memory_id = ch.id) ca ON true"
)


def hint_key(scope: Scope) -> tuple[Any, ...]:
    return (scope.workspace, scope.user_id, scope.agent_id, scope.session_id)


_NEW_PARTS = (
    f"WITH ch AS ({_changed('p')}), pa AS ("
    + PARTS_OF.format(ws="%(ws)s", sources="ARRAY(SELECT id FROM ch)")
    + ") SELECT ch.id, pa.dsts, pa.kinds, pa.recalls, pa.applied FROM ch "
    "LEFT JOIN pa ON pa.src = ch.id"
)


@dataclass
class ScopeGraph:
    """One scope's memory rows (``M_RAW``: the record's columns, then the vector), complete
    out-edge lists (``(src, dsts, kinds, weights, ups)``; a memory without one has none) and
    chunk aggregates (``windows``' four columns) and logged edge changes by source
    (``PARTS_OF``'s four arrays), as of watermark ``wm`` (an ``xid8``)."""

    wm: int
    rows: dict[str, tuple[Any, ...]]
    out: dict[str, tuple[Any, ...]]
    wins: dict[str, tuple[Any, ...]]
    parts: dict[str, tuple[Any, ...]]
    at: float = field(default_factory=time.monotonic)
    used: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: the scope's vectors as :mod:`.local` searches them (None: not built since
    #: the rows or windows last changed; False: none to search)
    local: Any = None

    def record(self, memory_id: str) -> Any:
        row = self.rows.get(memory_id)
        return row[:N_MEMORY] if row is not None else None

    def vector(self, memory_id: str) -> Any:
        row = self.rows.get(memory_id)
        return row[N_MEMORY] if row is not None else None

    def edges(self, src: str) -> Any:
        if src not in self.rows:
            return None
        return self.out.get(src) or (src, [], [], [], [])

    def apply(self, wm: int, since: int, rows: Sequence[Any], edges: Sequence[Any],
              wins: Sequence[Any], parts: Sequence[Any]) -> None:  # fmt: skip
        """What changed between ``since`` and ``wm``; ignored if another thread moved the
        copy on meanwhile (its look was as new as this one's or newer)."""
        with self.lock:
            if self.wm != since:
                return
            for r in rows:
                if r[1]:
                    row = compact_row(r[2:])
                    self.rows[row[0]] = row
                else:
                    self.rows.pop(r[0], None)
            for e in edges:
                if e[1] is None:
                    self.out.pop(e[0], None)
                else:
                    self.out[sys.intern(e[0])] = compact_edges(e)
            for held, changed in ((self.wins, wins), (self.parts, parts)):
                for c in changed:  # (id, aggregates...): NULL aggregates when it has none
                    if c[1]:
                        held[c[0]] = tuple(c[1:])
                    else:
                        held.pop(c[0], None)
            if rows or wins:
                self.local = None
            self.wm = wm
            self.at = time.monotonic()


def compact_row(row: Sequence[Any]) -> tuple[Any, ...]:
    """A row of ``M_RAW`` as the graph keeps it: the id, scope keys, role, kind and status
    shared with every other row that has them (``sys.intern``), so that a scope's many rows
    do not each carry a copy."""
    return tuple(
        sys.intern(v) if i in _SHARED and isinstance(v, str) else v for i, v in enumerate(row)
    )


def compact_edges(found: Sequence[Any]) -> tuple[Any, ...]:
    """An out-edge list ``(src, dsts, kinds, weights, ups)`` as the graph keeps it: ids and
    kinds shared (``sys.intern``; a destination is some row's id), weights and times packed
    as doubles. About a third of the lists' size at 10-13 edges a memory."""
    src, dsts, kinds, weights, ups = found
    return (
        sys.intern(src),
        tuple(map(sys.intern, dsts)),
        tuple(map(sys.intern, kinds)),
        array("d", weights),
        array("d", ups),
    )


def _fresh(found: Any) -> TypeGuard[ScopeGraph]:
    """Whether a store's entry for a scope (a graph, or when it was found too large) is a
    graph looked at within :data:`STALE_S`."""
    return isinstance(found, ScopeGraph) and time.monotonic() - found.at < STALE_S


class GraphBacked(dict[str, Any]):
    """A session's reads of one kind by memory id (chunk vectors, logged edge changes),
    falling back on that part of a scope's graph: ``build(id, found)`` makes the value of a
    memory the part holds; a memory of the scope it does not hold has none (``[]``)."""

    def __init__(
        self,
        graph: ScopeGraph,
        part: dict[str, tuple[Any, ...]],
        build: Callable[[str, tuple[Any, ...]], Any],
    ) -> None:
        super().__init__()
        self._graph, self._part, self._build = graph, part, build

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self._graph.rows

    def __missing__(self, key: str) -> Any:
        if key not in self._graph.rows:
            raise KeyError(key)
        found = self._part.get(key)
        value = self._build(key, found) if found is not None else []
        self[key] = value
        return value


class PostgresGraph(Connected):
    """The scope graphs of one store (see the module docstring); a base of
    :class:`~.reads.PostgresReads`."""

    #: Keep small scopes' graphs in process (off: every recall prefetches; tests compare).
    _graph_cache = True

    def _graphs(self) -> dict[tuple[str, str], Any]:
        graphs: dict[tuple[str, str], Any] | None = getattr(self, "_scope_graphs", None)
        if graphs is None:
            with _FIRST:  # two threads' first recalls make one dict and one lock
                graphs = getattr(self, "_scope_graphs", None)
                if graphs is None:
                    self._graphs_lock = threading.Lock()
                    self._graph_reads: dict[tuple[str, str], threading.Lock] = {}
                    self._graphs_behind: set[tuple[str, str]] = set()
                    graphs = {}
                    self._scope_graphs = graphs
        return graphs

    def _graph_of(self, scope: Scope) -> ScopeGraph | None:
        """The scope's graph, read whole if this process has none (or an old one); None for
        a scope too large to keep, or one past the budget whose graph is being read behind
        the recalls (they prefetch meanwhile). While one scope is read, the others' recalls go
        on: a scope's first recalls wait only for its own graph, and only if it fits."""
        assert scope.user_id is not None
        key = (scope.workspace, scope.user_id)
        graphs = self._graphs()
        found = graphs.get(key)
        if _fresh(found):
            found.used = time.monotonic()
            return found
        if isinstance(found, float) and time.monotonic() - found < _TOO_LARGE_S:
            return None
        if key in self._graphs_behind:
            return None
        with self._graphs_lock:
            reading = self._graph_reads.setdefault(key, threading.Lock())
        with reading:
            found = graphs.get(key)
            if _fresh(found):
                return found  # read by the thread this one waited for
            if isinstance(found, float) and time.monotonic() - found < _TOO_LARGE_S:
                return None
            if key in self._graphs_behind:
                return None
            budget = getattr(self, "_graph_bytes", 64 * 1024 * 1024) // MEMORY_BYTES
            # Past the budget only as the newest (as the embedded store keeps its scope index).
            limit = max(budget, getattr(self, "_graph_max", GRAPH_MAX))
            read = self._read_graph(scope, limit, budget)
            with self._graphs_lock:
                self._graph_reads.pop(key, None)
                if read is _PAST_BUDGET:  # seconds to read: not while a recall waits
                    with suppress(RuntimeError):  # the store is closing: no read
                        self._graph_worker().submit(self._read_behind, scope, limit, budget)
                        self._graphs_behind.add(key)
                    return None
                graph = read if isinstance(read, ScopeGraph) else None
                self._keep_graph(key, graph, budget)
            return graph

    def _read_behind(self, scope: Scope, limit: int, budget: int) -> None:
        """Read a scope's graph past the budget on the store's worker thread and keep it; if
        the read fails, the scope prefetches for a while before trying again."""
        key = (scope.workspace, scope.user_id or "")
        graph = None
        try:
            graph = self._read_graph(scope, limit)
        except StoreError:
            pass  # the store closed, the server went: the recalls go on prefetching
        finally:
            with self._graphs_lock:
                self._keep_graph(key, graph if isinstance(graph, ScopeGraph) else None, budget)
                self._graphs_behind.discard(key)

    def _graph_worker(self) -> ThreadPoolExecutor:
        """The store's thread for graph reads behind the recalls (call under _graphs_lock)."""
        worker: ThreadPoolExecutor | None = getattr(self, "_graphs_worker", None)
        if worker is None:
            worker = ThreadPoolExecutor(1, thread_name_prefix="engrammar-scope-graph")
            self._graphs_worker = worker
        return worker

    def _close_graphs(self) -> None:
        """Stop reading graphs behind the recalls (a read under way ends on its own)."""
        worker: ThreadPoolExecutor | None = getattr(self, "_graphs_worker", None)
        if worker is not None:
            worker.shutdown(wait=False, cancel_futures=True)

    def _read_graph(self, scope: Scope, limit: int, budget: int | None = None) -> Any:
        """The scope's graph as of one snapshot; None if it has more than ``limit`` memories,
        :data:`_PAST_BUDGET` (nothing read) if it has more than ``budget``."""
        args = {"ws": scope.workspace, "user": scope.user_id}

        def load(conn: Conn) -> Any:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                wm = conn.execute(_MARK).fetchone()
                size = conn.execute(f"SELECT count(*) FROM memories WHERE {_SCOPE}", args)
                count = int(size.fetchone()[0])  # type: ignore[index]
                if count > limit:
                    return None
                if budget is not None and count > budget:
                    return _PAST_BUDGET
                cur = conn.cursor(binary=True)
                rows = cur.execute(_ROWS, args).fetchall()
                out = cur.execute(_EDGES, args).fetchall()
                wins = cur.execute(_WINDOWS, args).fetchall()
                parts = cur.execute(_PARTS, args).fetchall()
            assert wm is not None
            return ScopeGraph(
                int(wm[0]),
                {row[0]: row for row in map(compact_row, rows)},
                {sys.intern(e[0]): compact_edges(e) for e in out},
                {w[0]: tuple(w[1:]) for w in wins},
                {p[0]: tuple(p[1:]) for p in parts},
            )

        # Hundreds of thousands of new tuples: the cyclic collector would walk the growing
        # graph again and again while it is built (none of it is garbage).
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._read("reading the scope's graph", load)
        finally:
            if collecting:
                gc.enable()

    def _keep_graph(self, key: tuple[str, str], graph: ScopeGraph | None, budget: int) -> None:
        """Hold ``graph`` (None: mark the scope too large for a while), then drop the least
        recently used others until the graphs fit ``budget`` memories (never the newest)."""
        graphs = self._graphs()
        now = time.monotonic()
        graphs[key] = graph if graph is not None else now
        held = sorted((g.used, k) for k, g in graphs.items() if isinstance(g, ScopeGraph))
        total = sum(len(graphs[k].rows) for _, k in held)
        large = graph is not None and len(graph.rows) > budget
        for _, k in held[:-1]:  # the least recently used first, never the newest
            if total <= budget:
                break
            gone = len(graphs[k].rows)
            total -= gone
            # A graph past the budget, or pushed out by one, is not read again for a while
            # (its recalls prefetch): two large scopes in turn would read each other out.
            if large or gone > budget:
                graphs[k] = now
            else:
                del graphs[k]

    @staticmethod
    def _graph_scope(scope: Scope) -> bool:
        """Whether ``scope`` is one a graph is kept for: a user's, without agent or session."""
        return scope.user_id is not None and scope.agent_id is None and scope.session_id is None

    def _held_graph(self, scope: Scope) -> ScopeGraph | None:
        """The scope's graph if this process holds a fresh one (none is read for it)."""
        if not self._graph_cache or not self._graph_scope(scope):
            return None
        found = self._graphs().get((scope.workspace, scope.user_id or ""))
        if _fresh(found):
            return found
        return None

    def _queue_refresh(self, conn: Conn, graph: ScopeGraph, scope: Scope) -> Callable[[], None]:
        """Queue, in the open pipeline of ``conn``, the reads of what changed since the
        graph's watermark; the returned function applies them once the pipeline delivered."""
        since = graph.wm
        args = {"ws": scope.workspace, "user": scope.user_id, "wm": str(since)}
        curs = [conn.cursor(binary=True) for _ in range(5)]
        for cur, sql in zip(
            curs, (_MARK, _NEW_ROWS, _NEW_EDGES, _NEW_WINDOWS, _NEW_PARTS), strict=True
        ):
            cur.execute(sql, args if sql is not _MARK else None)

        def apply() -> None:
            mark, rows, edges, wins, parts = (c.fetchall() for c in curs)
            graph.apply(int(mark[0][0]), since, rows, edges, wins, parts)

        return apply

    @staticmethod
    def _fall_back(snap: Snapshot, graph: ScopeGraph) -> None:
        """Let the session answer from ``graph`` what it was not given."""
        snap.records.fallback = graph.record
        snap.vecs.fallback = graph.vector
        snap.out_edges.fallback = graph.edges
        read = snap.windows, snap.edge_parts  # what the session was given stays
        snap.windows = GraphBacked(graph, graph.wins, lambda _, found: windows(*found))
        snap.windows.update(read[0])
        snap.edge_parts = GraphBacked(
            graph, graph.parts, lambda key, found: change_rows(key, *found)
        )
        snap.edge_parts.update(read[1])
        snap.graph = graph

    def _graph_prefetch(
        self, snap: Snapshot, scope: Scope, query: Any, k: int, filtered: bool
    ) -> list[tuple[str, float]] | None:
        """The prefetch's answer from the scope's graph: the vector hits and what changed
        since the graph's last look in one exchange (with the probe and the learned
        ranking's reads, as the prefetch sends them); None where the graph is not used."""
        if not self._graph_cache or filtered or not self._graph_scope(scope):
            return None
        graph = self._graph_of(scope)
        if graph is None:
            return None
        # A scope the server would scan exactly is searched here, once the exchange has
        # brought the graph up to date (.postgres_local).
        local = searched_locally(graph)
        statement = None if local else self._vector_query(scope, query.array, k)
        hits_rows, found = self._vector_exchange(
            snap, scope, query, statement, lambda conn: self._queue_refresh(conn, graph, scope)
        )
        if local:
            in_process = local_hits(graph, query.array, k)
            # vectors of another size than the query's: the server answers as before
            hits_rows = (
                in_process if in_process is not None else self._server_hits(scope, query.array, k)
            )
        self._fall_back(snap, graph)
        hits = [(r[0], 1 - float(r[2])) for r in hits_rows]
        hits.sort(key=lambda h: (1 - h[1], h[0]))
        self._prefetched(snap, scope, found)
        return hits

    def _vector_exchange(
        self,
        snap: Snapshot,
        scope: Scope,
        query: Any,
        statement: tuple[str, dict[str, Any], int | None] | None,
        also: Callable[[Conn], Callable[[], None]] | None = None,
    ) -> tuple[list[Any], Any]:
        """The exchange that finds a recall's vector hits (the plain prefetch's or the
        graph's): in one pipeline the scope's reads, ``also``'s statements, ``statement``
        (sql, parameters, the ``hnsw.ef_search`` it needs set first or None; None: no vector
        statement, the hits are found in process) and, with feedback records possibly there,
        the probe and the learned ranking's reads. Returns the statement's rows (none
        without one) and the probe's row (None without the probe)."""
        since = snap.plan.feedback_since

        def run(conn: Conn) -> tuple[list[Any], Any]:
            cur = conn.cursor(binary=True)
            probe = conn.cursor()
            with conn.pipeline():
                with planned_once(conn):
                    finish = self._queue_scope_reads(conn, snap, scope)
                    knowledge = self._queue_knowledge(conn, snap, scope, query.array)
                    extra = also(conn) if also is not None else None
                if statement is not None:
                    execute_searching(cur, *statement)
                if since is not None:
                    with planned_once(conn):
                        probe.execute(PROBE, {"ws": scope.workspace, "user": scope.user_id,
                                              "since": since})  # fmt: skip
                        learned = self._queue_learning(conn, snap, scope, since, query.array)
            finish()
            knowledge()
            if extra is not None:
                extra()
            if since is not None:
                snap.learned = learned()
            rows = cur.fetchall() if statement is not None else []
            return rows, (probe.fetchone() if since is not None else None)

        result: tuple[list[Any], Any] = self._read("vector search and neighbourhood", run)
        return result

    def _server_hits(self, scope: Scope, query: Any, k: int) -> list[Any]:
        """The vector statement's rows, from the server on their own."""
        sql, args, ef = self._vector_query(scope, query, k)

        def run(conn: Conn) -> list[Any]:
            cur = conn.cursor(binary=True)
            with conn.pipeline():
                execute_searching(cur, sql, args, ef)
            return cur.fetchall()

        rows: list[Any] = self._read("vector search", run)
        return rows

    def _prefetched(self, snap: Snapshot, scope: Scope, found: Any) -> None:
        """The session has its neighbourhood; ``found``: the probe's row (or None)."""
        snap.prefetched = True
        snap.no_feedback = found is not None and not any(found)
        snap.signals = found is not None and bool(found[3])
        if found is not None:
            snap.found = (bool(found[0]), bool(found[1]), bool(found[2]))
            self._hints()[hint_key(scope)] = (*snap.found, snap.signals)

    def _hints(self) -> dict[tuple[Any, ...], tuple[bool, bool, bool, bool]]:
        """Scope -> which kinds of feedback record its last probe found (events, pairs,
        ratings, reply signals): what the next session of the scope reads ahead. A guess
        only: the probe of the same exchange decides whether what was read is used."""
        hints: dict[tuple[Any, ...], tuple[bool, bool, bool, bool]] | None = getattr(
            self, "_learn_hints", None
        )
        if hints is None or len(hints) > _HINTS:
            hints = {}
            self._learn_hints = hints
        return hints

    if TYPE_CHECKING:  # provided by PostgresReads and the store

        def _vector_query(
            self, scope: Scope, query: Any, k: int
        ) -> tuple[str, dict[str, Any], int | None]: ...

        def _queue_scope_reads(
            self, conn: Conn, snap: Snapshot, scope: Scope
        ) -> Callable[[], None]: ...

        def _queue_knowledge(
            self, conn: Conn, snap: Snapshot, scope: Scope, vector: Any
        ) -> Callable[[], None]: ...

        def _queue_learning(
            self, conn: Conn, snap: Snapshot, scope: Scope, since: float, query: Any
        ) -> Callable[[], Any]: ...

"""Add sessions of the PostgreSQL store: the reads of one add in two round trips.

Adding a message asks the store what links it to what is stored: the session's latest memory
and its vector, the stored memories that share its terms, its nearest stored memories with
their records, and how many edges the memories it would link to have already. Asked one by
one that is six round trips before the write; inside :meth:`PostgresIngest.adding` they take
two exchanges:

1. sent when the session opens, on a worker thread, so that it travels while the message
   is embedded: the latest memory with its vector, the scope's size and the postings of the
   batch's terms, and which of the rows' dedup keys the workspace holds already, pipelined;
   the first question waits for it (the read runs again on the calling thread if the
   worker's failed);
2. the vector searches, one statement for the whole batch (a small user's rows read once
   for all of them), each query's hits with their records and edge counts, pipelined with
   the edge counts of the latest memory and of the postings' memories; sent on a worker
   when the caller announces them (:meth:`PostgresIngest.search_ahead`), so that the batch's
   own contradictions are judged while the server searches (a growing scope's HNSW walks:
   ~2 s of server time per 1,000 messages at 3,000 memories). A batch of at least 16 into a
   user scope of at most 20 memories per message (20,000 in all) is searched in process
   instead (:mod:`.add_search`): the scope's vectors are read in this exchange and
   the hits' rows, with the server's similarities, in a second.

The write starts ahead too: when the add announced its rows (:meth:`PostgresIngest.add_ahead`),
the transaction begins beside the searches (on a connection of its own, once they hold theirs)
or, when they were not announced, as soon as they have answered: BEGIN and the rows' INSERTs
(with their history and chunk rows) are sent without waiting, so the server inserts (the
HNSW, GIN and keyword-table work: ~3 s per 1,000 new vectors at 4,000 memories, most of it
the two HNSW graphs) while it searches and the caller builds the edges; ``add_memories``
then sends the edges and COMMIT and waits once. A row repeating an earlier row of the
batch, or a memory the first exchange found stored (kept from deletion until COMMIT), is
not inserted: it takes that memory's id, as the plain write's ``ON CONFLICT`` would give it.
Anything else (a duplicate stored meanwhile, a lost connection, a deadlock, an add that ends
without writing) rolls that transaction back, and the write runs as usual.

Every answer is exactly what the plain call would return; a question the session was not
told of, or cannot answer completely, goes to the server as usual. The session lives for
one ``with`` block of one thread.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from psycopg import errors as pg_errors
from psycopg.pq import TransactionStatus

from ...models import MemoryRecord, Scope
from ..base import AddAhead, NewEdge, NewMemory
from ..sql.chunk_rows import CHUNK_FIELDS, chunk_params
from ..sql.store import supersessions
from ..tables import MEMORY_COLUMNS
from .add_search import hit_rows, queue_scope_vectors, searched_here
from .connection import Conn, Connected
from .exact_vectors import nearest, stacked
from .reads import M_COLUMNS
from .vectors import Vector, exact_rows, execute_searching, scope_keys

V = TypeVar("V")
__all__ = ["PostgresIngest"]

_N_MEMORY = len(MEMORY_COLUMNS.split(","))
# The term postings' statements (``PostgresSearch.term_postings``): the scope's size, then
# per term its document count and newest ids.
Postings = tuple[int, dict[str, tuple[int, list[str]]]]
# The workers that send an add session's first exchange while its message is embedded (the
# model's run releases the GIL). Shared by every store of the process: a task is one short
# read on a pooled connection, and a caller never holds a connection while it waits for one.
_AHEAD = ThreadPoolExecutor(max_workers=8, thread_name_prefix="engrammar-add-ahead")
# A new memory's row (every row new: a duplicate fails on the unique key).
INSERT_MEMORY = (
    "INSERT INTO memories (id, workspace, user_id, agent_id, session_id, role, content, kind, "
    "status, created_at, updated_at, metadata, dedup_key, embedding, terms, doc_len, "
    "valid_until, superseded_by) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%b,"
    "%s::tsvector,%s,%s,%s)"
)
# New memories' rows in one statement, a column array per parameter (the parameters of
# INSERT_MEMORY transposed): one plan and one change-log entry for the whole batch (1,000
# rows: ~1.7 s of server time, against ~2.9 s as a statement per row).
INSERT_MEMORIES = (
    "INSERT INTO memories (id, workspace, user_id, agent_id, session_id, role, content, kind, "
    "status, created_at, updated_at, metadata, dedup_key, embedding, terms, doc_len, "
    "valid_until, superseded_by) SELECT id, workspace, user_id, agent_id, session_id, role, "
    "content, kind, status, created_at, updated_at, metadata, dedup_key, embedding, "
    "terms::tsvector, doc_len, valid_until, superseded_by FROM unnest(%s::text[], %s::text[], "
    "%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
    "%s::float8[], %s::float8[], %s::jsonb[], %s::text[], %b::vector[], %s::text[], "
    "%s::int[], %s::float8[], %s::text[]) WITH ORDINALITY AS r(id, workspace, user_id, "
    "agent_id, session_id, role, content, kind, status, created_at, updated_at, metadata, "
    "dedup_key, embedding, terms, doc_len, valid_until, superseded_by, ord) ORDER BY ord"
)
# The write started ahead: resumed with the edges it commits with (None: roll back).
EarlyWrite = Generator[None, Sequence[NewEdge] | None, None]
# The search exchange's answer: per query its rows, the extra edge counts, and the function
# that stores exchange 1's answers when they came with it.
_Searched = tuple[list[list[Any]], list[Any], Callable[[], None]]


@dataclass
class AddSnapshot:
    """What one add session of one thread was told it will be asked, and has read."""

    scope: Scope
    graph: Scope
    terms: list[str]
    limit: int
    read: bool = False
    latest: list[MemoryRecord] = field(default_factory=list)
    vecs: dict[str, np.ndarray] = field(default_factory=dict)
    postings: Postings | None = None
    records: dict[str, MemoryRecord] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    ahead: Future[None] | None = None
    rows: list[NewMemory] | None = None
    write: tuple[EarlyWrite, list[NewMemory], Renames] | None = None
    clash: bool = False  # the write begun ahead met a stored memory's unique key
    keys: list[str] = field(default_factory=list)  # the rows' dedup keys
    stored: dict[str, str] = field(default_factory=dict)  # those the scope holds: their ids
    # The vector searches sent ahead (``search_ahead``): their k, queries, whether exchange 1
    # had been read when they went, and the exchange's answer to come.
    searching: tuple[int, np.ndarray, bool, Future[_Searched]] | None = None


def _duplicate(exc: BaseException) -> bool:
    """Whether a write failed on a memory's unique key (a row the scope holds already)."""
    return isinstance(exc, pg_errors.UniqueViolation) and exc.diag.table_name == "memories"


class _Abandoned(Exception):
    """The add ended without its write: the transaction started ahead rolls back."""


class Renames(dict[str, str]):
    """The ids of a batch's repeated rows, each to the id of its first occurrence."""

    def ids(self, rows: Sequence[NewMemory]) -> list[tuple[str, bool]]:
        """``add_memories``'s answer: each row's id and whether it was created."""
        return [(self.get(r.id, r.id), r.id not in self) for r in rows]


def collapse_repeats(
    rows: Sequence[NewMemory], stored: dict[str, str] | None = None
) -> tuple[list[NewMemory], Renames]:
    """The rows without those repeating an earlier row's content (the same dedup key) or a
    stored memory's (``stored``: dedup key -> id, of the rows' workspace), and the repeats'
    ids renamed to the first occurrence: what the plain write's ``ON CONFLICT`` would make
    of them, known without asking the server (a repeat would make a write that takes every
    row as new fail, and run again)."""
    first: dict[tuple[str, str], str] = {
        (r.workspace, r.dedup_key): stored[r.dedup_key]
        for r in rows
        if stored and r.dedup_key in stored
    }
    kept: list[NewMemory] = []
    rename = Renames()
    for r in rows:
        key = (r.workspace, r.dedup_key)
        if key in first:
            rename[r.id] = first[key]
        else:
            first[key] = r.id
            kept.append(r)
    return kept, rename


class PostgresIngest(Connected):
    """The add-session half of :class:`~.search.PostgresSearch`."""

    _local: threading.local
    #: Send exchange 1 on a worker when the session opens (off: at the first question, on
    #: the calling thread; benches compare the two).
    _read_ahead = True
    #: Start the write when the searches answer (see :meth:`add_ahead`; off: all of it at
    #: ``add_memories``; benches compare the two).
    _write_ahead = True
    #: Begin that write beside the searches sent ahead (off: when they answer).
    _write_beside_search = True
    #: The fewest queries sent ahead: a small batch has little to judge meanwhile, and the
    #: worker's hand-over and an insert beside the search cost more than they hide (one
    #: message: 22.0 ms p50 against 19.4 ms searching when asked).
    _search_ahead_min = 16
    #: Answer a batch's searches of a small enough user scope in process
    #: (:mod:`.add_search`; off: on the server; benches compare the two).
    _search_in_process = True

    # provided by the store
    def _queue_new(self, conn: Conn, rows: Sequence[NewMemory], now: float) -> None:
        raise NotImplementedError

    def _record(self, row: Sequence[Any]) -> MemoryRecord:
        raise NotImplementedError

    def _latest_query(self, scope: Scope) -> tuple[str, list[Any]]:
        raise NotImplementedError

    def _postings_queries(
        self, scope: Scope, terms: Sequence[str], limit: int
    ) -> tuple[tuple[str, list[Any]], tuple[str, list[Any]]]:
        raise NotImplementedError

    def _vector_query(
        self, scope: Scope, query: np.ndarray, k: int, *, rows: str | None = None
    ) -> tuple[str, dict[str, Any], int | None]:
        raise NotImplementedError

    # -- the session ---------------------------------------------------------------------------
    @contextmanager
    def adding(self, ahead: AddAhead) -> Iterator[None]:
        """Answer this thread's reads of one add from few exchanges until the block ends (see
        the module docstring and :meth:`~..base.ReadAhead.adding`)."""
        if getattr(self._local, "add", None) is not None:
            yield
            return
        snap = AddSnapshot(ahead.scope, ahead.graph, list(dict.fromkeys(ahead.terms)), ahead.limit)
        snap.keys = list(dict.fromkeys(ahead.keys))
        if self._read_ahead:
            snap.ahead = _AHEAD.submit(self._read_first_ahead, snap)
        self._local.add = snap
        try:
            yield
        finally:
            self._local.add = None
            if snap.ahead is not None:  # never asked: let it end before the session does
                with suppress(Exception):
                    snap.ahead.result()
            if snap.searching is not None:  # sent, never asked for
                with suppress(Exception):
                    snap.searching[3].result()
            if snap.write is not None:  # started, never finished: roll it back
                with suppress(Exception):
                    snap.write[0].close()

    def add_ahead(self, rows: Sequence[NewMemory]) -> None:
        """The rows this add session's ``add_memories`` will write (see the module
        docstring): their transaction starts when the vector searches have answered."""
        snap: AddSnapshot | None = getattr(self._local, "add", None)
        if snap is not None and rows and self._write_ahead and not self._replicas:
            snap.rows = list(rows)

    def search_ahead(self, scope: Scope, queries: np.ndarray, k: int) -> None:
        """Send this add session's vector searches now, on a worker (see
        :meth:`~..base.ReadAhead.search_ahead`), and begin the write announced by
        :meth:`add_ahead` beside them on a connection of its own: the server inserts while it
        searches, and the caller judges its batch's own pairs meanwhile. Not with read
        replicas (a worker does not know where this thread must read)."""
        snap = self._add_snap()
        if (
            snap is None
            or snap.searching is not None
            or self._replicas
            or scope != snap.graph
            or k <= 0
            or len(queries) < self._search_ahead_min
        ):
            return
        had_read = snap.read
        exchange = self._search_exchange(snap, scope, queries, k)
        connected = threading.Event()

        def on_connection(conn: Conn) -> _Searched:
            connected.set()
            return exchange(conn)

        def searched() -> _Searched:
            try:
                answer: _Searched = self._read("search", on_connection)
            finally:
                connected.set()
            if had_read and not self._write_beside_search:
                self._begin_write(snap)
            return answer

        snap.searching = (k, queries, had_read, _AHEAD.submit(searched))
        if had_read and self._write_beside_search:  # the stored duplicates are known
            # Once the search holds its connection: a write holding the last free one while
            # the search waits for it would wait for itself.
            connected.wait()
            self._begin_write(snap)

    def _begin_write(self, snap: AddSnapshot) -> None:
        """Start the announced rows' transaction: BEGIN and their INSERTs sent, not awaited."""
        rows, snap.rows = snap.rows, None
        if not rows:
            return
        unique, rename = collapse_repeats(rows, snap.stored)
        write = self._early_write(rows[0].workspace, unique, rename)
        try:
            next(write)
        except Exception as exc:  # rolled back (or nothing sent): the add writes as usual
            snap.clash = _duplicate(exc)
            return
        snap.write = (write, rows, rename)

    def _early_write(self, workspace: str, rows: list[NewMemory], rename: Renames) -> EarlyWrite:
        """The transaction of new ``rows``; ``rename``: the batch's repeats, of each other or
        of stored memories, which it keeps from being deleted until it commits (one deleted
        since it was read makes it roll back, and the add write as usual)."""
        now = time.time()
        kept = sorted(set(rename.values()) - {r.id for r in rows})
        with self._conn() as conn:
            # Unprepared: psycopg may take a statement it prepares in a pipeline that fails
            # part way (a duplicate) for one the server has.
            threshold, conn.prepare_threshold = conn.prepare_threshold, None
            try:
                with conn.pipeline():
                    conn.execute("BEGIN")
                    held = conn.cursor()
                    if kept:
                        held.execute(
                            "SELECT id FROM memories WHERE workspace = %s AND id = ANY(%s) "
                            "FOR KEY SHARE",
                            (workspace, kept),
                        )
                    # Sent as queued (psycopg flushes a pipeline's commands as they come).
                    self._queue_new(conn, rows, now)
                    edges = yield
                    if edges is None:
                        raise _Abandoned
                    if kept and len(held.fetchall()) != len(kept):
                        raise _Abandoned  # a stored duplicate was deleted meanwhile
                    self._write_edges(conn, workspace, edges, rename, now)
                    self._supersede_queued(conn, workspace, edges, rename)
                    conn.execute("COMMIT")
            except BaseException:
                if not conn.closed and conn.info.transaction_status != TransactionStatus.IDLE:
                    conn.execute("ROLLBACK")
                raise
            finally:
                conn.prepare_threshold = threshold

    def _finish_write(
        self, rows: Sequence[NewMemory], edges: Sequence[NewEdge]
    ) -> list[tuple[str, bool]] | bool:
        """``add_memories`` on the transaction started ahead: the ids (every row new); False
        when a row clashed with a stored one's unique key, True when there was no such
        transaction or it failed otherwise (both rolled back: write as usual)."""
        snap: AddSnapshot | None = getattr(self._local, "add", None)
        if snap is None or snap.write is None:
            clash = snap is not None and snap.clash
            if snap is not None:
                snap.clash = False
            return not clash
        (write, announced, rename), snap.write = snap.write, None
        if [id(r) for r in announced] != [id(r) for r in rows]:
            with suppress(Exception):
                write.close()
            return True
        try:
            write.send(list(edges))
        except StopIteration:
            return rename.ids(rows)
        except Exception as exc:
            return not _duplicate(exc)
        with suppress(Exception):  # it never yields twice
            write.close()
        return True

    def _read_first_ahead(self, snap: AddSnapshot) -> None:
        """Exchange 1 on a worker; its answers land in a copy that :meth:`_add_snap` takes
        over once the worker is done (the calling thread never sees a half-filled session)."""
        work = AddSnapshot(snap.scope, snap.graph, snap.terms, snap.limit, keys=snap.keys)
        self._read_first(work)
        snap.latest, snap.vecs, snap.records = work.latest, work.vecs, work.records
        snap.postings, snap.stored, snap.read = work.postings, work.stored, True

    def _add_snap(self) -> AddSnapshot | None:
        snap: AddSnapshot | None = getattr(self._local, "add", None)
        if snap is not None and snap.ahead is not None:
            ahead, snap.ahead = snap.ahead, None
            try:
                ahead.result()
            except Exception:  # read again on this thread, raising what that raises
                snap.read = False
        return snap

    def _queue_first(self, conn: Conn, snap: AddSnapshot) -> Callable[[], None]:
        """Queue exchange 1's statements in the open pipeline of ``conn``; the returned
        function stores their answers once the pipeline has delivered them."""
        latest = conn.cursor(binary=True)
        total = conn.cursor(binary=True)
        postings = conn.cursor(binary=True)
        with_latest = snap.scope.session_id is not None
        if with_latest:
            sql, params = self._latest_query(snap.scope)
            latest.execute(sql.replace(f"SELECT {MEMORY_COLUMNS} ", f"SELECT {MEMORY_COLUMNS}, "
                                       "embedding ", 1), params)  # fmt: skip
        (count_sql, count_params), (terms_sql, terms_params) = self._postings_queries(
            snap.graph, snap.terms, snap.limit
        )
        total.execute(count_sql, count_params)
        if snap.terms:
            postings.execute(terms_sql, terms_params)
        stored = conn.cursor()
        if snap.keys:
            stored.execute(
                "SELECT dedup_key, id FROM memories WHERE workspace = %s AND dedup_key = ANY(%s)",
                (snap.scope.workspace, snap.keys),
            )

        def finish() -> None:
            if with_latest:
                for row in latest.fetchall():
                    record = self._record(row[:_N_MEMORY])
                    snap.latest.append(record)
                    snap.records[record.id] = record
                    snap.vecs[record.id] = row[_N_MEMORY]
            found = total.fetchone()
            out: dict[str, tuple[int, list[str]]] = {t: (0, []) for t in snap.terms}
            if snap.terms:
                for term, df, ids in postings.fetchall():
                    out[term] = (int(df), [i for i in ids if i is not None])
            snap.postings = (int(found[0]) if found else 0, out)
            if snap.keys:
                snap.stored = dict(stored.fetchall())
            snap.read = True

        return finish

    def _read_first(self, snap: AddSnapshot) -> None:
        if snap.read:
            return

        def run(conn: Conn) -> Callable[[], None]:
            with conn.pipeline():
                return self._queue_first(conn, snap)

        self._read("reading what an add links to", run)()

    # -- answers -------------------------------------------------------------------------------
    def _added_latest(self, scope: Scope, limit: int) -> list[MemoryRecord] | None:
        snap = self._add_snap()
        if snap is None or scope != snap.scope or limit != 1 or scope.session_id is None:
            return None
        self._read_first(snap)
        return list(snap.latest)

    def _added_vectors(self, workspace: str, ids: Sequence[str]) -> dict[str, np.ndarray] | None:
        snap = self._add_snap()
        return (
            _of_session(snap, workspace, ids, snap.vecs) if snap is not None and snap.read else None
        )

    def _added_records(self, workspace: str, ids: Sequence[str]) -> dict[str, MemoryRecord] | None:
        snap = self._add_snap()
        return _of_session(snap, workspace, ids, snap.records) if snap is not None else None

    def _added_postings(self, scope: Scope, terms: Sequence[str], limit: int) -> Postings | None:
        snap = self._add_snap()
        if snap is None or scope != snap.graph or limit != snap.limit:
            return None
        wanted = list(dict.fromkeys(terms))
        if not set(wanted) <= set(snap.terms):
            return None
        self._read_first(snap)
        assert snap.postings is not None
        total, postings = snap.postings
        return total, {t: (postings[t][0], list(postings[t][1])) for t in wanted}

    def _added_counts(self, workspace: str, ids: Sequence[str]) -> dict[str, int] | None:
        snap = self._add_snap()
        return _of_session(snap, workspace, ids, snap.counts) if snap is not None else None

    def _added_searches(
        self, scope: Scope, queries: np.ndarray, k: int
    ) -> list[list[tuple[str, float]]] | None:
        """The vector searches of an add session: each one's hits with their records and edge
        counts, and the edge counts of the latest memory and the postings' memories, in one
        exchange (with exchange 1's statements, if they are still to be read); the exchange
        sent ahead when it was for these arguments."""
        snap = self._add_snap()
        if snap is None or scope != snap.graph or k <= 0 or len(queries) == 0:
            return None
        sent, snap.searching = snap.searching, None
        if sent is not None and sent[0] == k and np.array_equal(sent[1], queries):
            had_read, (rows_per_query, counted, first) = sent[2], sent[3].result()
        else:
            if sent is not None:  # for other arguments: let it end, unread
                with suppress(Exception):
                    sent[3].result()
            had_read = snap.read
            exchange = self._search_exchange(snap, scope, queries, k)
            rows_per_query, counted, first = self._read("search", exchange)
        first()  # (the stored duplicates known before the write begins)
        if snap.rows is not None:  # (not begun by the worker that searched)
            self._begin_write(snap)
        out: list[list[tuple[str, float]]] = []
        for rows in rows_per_query:
            hits = []
            for r in rows:
                record = self._record(r[2 : 2 + _N_MEMORY])
                snap.records[record.id] = record
                snap.vecs[record.id] = r[2 + _N_MEMORY]
                snap.counts[record.id] = int(r[3 + _N_MEMORY])
                hits.append((r[0], float(r[1])))
            out.append(hits)
        if had_read:
            extra = self._extra_ids(snap)
            snap.counts.update(dict.fromkeys(extra, 0))
            snap.counts.update({src: int(n) for src, n in counted})
        return out

    def _search_exchange(
        self, snap: AddSnapshot, scope: Scope, queries: np.ndarray, k: int
    ) -> Callable[[Conn], _Searched]:
        """The search exchange of :meth:`_added_searches`, to run on a connection: it reads
        the session only as it stands now (a worker may run it)."""
        ws = scope.workspace
        # One statement for every query, planned once (a statement per message spent ~1.5 ms
        # of its ~1.6 ms of server time planning): each vector of the batch searched in turn,
        # a small user's rows read once for all of them.
        keys = scope_keys(scope)
        own = "user_id" in keys and len(queries) > 1
        sql, args, ef = self._vector_query(scope, queries[0], k, rows="own" if own else None)
        args = {key: value for key, value in args.items() if key != "q"}
        args["qs"] = [Vector(q) for q in queries]
        batched = (
            (f"WITH own AS MATERIALIZED ({exact_rows(keys, '')}) " if own else "")
            + f"SELECT x.i, s.id, s.similarity, {M_COLUMNS}, m.embedding, "
            "(SELECT count(*) FROM edges e WHERE e.workspace = %(ws)s AND e.src = s.id) "
            "FROM unnest(%(qs)b::vector[]) WITH ORDINALITY AS x(q, i) "
            f"CROSS JOIN LATERAL ({sql.replace('%(q)s', 'x.q')}) s "
            "CROSS JOIN LATERAL (SELECT * FROM memories WHERE workspace = %(ws)s "
            "AND id = s.id OFFSET 0) m ORDER BY x.i, s.distance, s.id"
        )
        had_read = snap.read
        extra = self._extra_ids(snap) if had_read else []
        size = snap.postings[0] if had_read and snap.postings is not None else None
        if self._search_in_process and keys == ["user_id"] and searched_here(len(queries), size):
            here = {"ws": ws, "user_id": scope.user_id}
            return lambda conn: self._search_here(conn, here, queries, k, extra)

        def run(conn: Conn) -> _Searched:
            cur = conn.cursor(binary=True)
            counts = conn.cursor()
            with conn.pipeline():
                first = (lambda: None) if had_read else self._queue_first(conn, snap)
                execute_searching(cur, batched, args, ef)
                if had_read:
                    counts.execute(
                        "SELECT src, count(*) FROM edges WHERE workspace = %s "
                        "AND src = ANY(%s) GROUP BY src",
                        (ws, extra),
                    )
            per_query: list[list[Any]] = [[] for _ in queries]
            for row in cur.fetchall():
                per_query[row[0] - 1].append(row[1:])
            return per_query, (counts.fetchall() if had_read else []), first

        return run

    @staticmethod
    def _search_here(
        conn: Conn,
        args: dict[str, Any],
        queries: np.ndarray,
        k: int,
        extra: list[str],
    ) -> _Searched:
        """The search exchange answered in process (:mod:`.add_search`) for the user
        scope ``args`` (``ws``, ``user_id``): the scope's vectors and the extra edge counts in
        one exchange, the hits' rows in a second."""
        vectors, windows, counts = conn.cursor(binary=True), conn.cursor(binary=True), conn.cursor()
        with conn.pipeline():
            queue_scope_vectors(vectors, windows, args, ["user_id"])
            counts.execute(
                "SELECT src, count(*) FROM edges WHERE workspace = %s AND src = ANY(%s) "
                "GROUP BY src",
                (args["ws"], extra),
            )
        # Two candidates more than asked: the server's similarities rank them.
        scope_rows, window_rows = stacked(vectors.fetchone()), stacked(windows.fetchone())
        found = nearest(queries, scope_rows, window_rows, k + 2)
        cur = conn.cursor(binary=True)
        per_query = hit_rows(cur, args, queries, found, k, scope_rows, set(window_rows[0]))
        return per_query, counts.fetchall(), lambda: None

    @staticmethod
    def _extra_ids(snap: AddSnapshot) -> list[str]:
        """The stored memories besides the vector hits that an add may link from."""
        ids = [r.id for r in snap.latest]
        if snap.postings is not None:
            ids += [i for _, found in snap.postings[1].values() for i in found]
        return sorted(set(ids))

    # -- the write's statements (queued one by one: executemany would sync, a round trip) ----
    @staticmethod
    def _log_added(
        conn: Conn, created: Sequence[NewMemory], now: float, vector: Callable[[np.ndarray], Any]
    ) -> None:
        """The history entries and chunk vectors (``vector`` makes their parameters) of newly
        inserted memories, a statement each (the store's ``_insert_edges`` is
        :meth:`_write_edges`)."""
        if not created:
            return
        conn.execute(
            "INSERT INTO memory_changes (memory_id, workspace, user_id, op, before, after, "
            "reason, created_at) SELECT memory_id, workspace, user_id, 'add', NULL, after, '', "
            "%s FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[]) WITH ORDINALITY "
            "AS r(memory_id, workspace, user_id, after, ord) ORDER BY ord",
            (
                now,
                [r.id for r in created],
                [r.workspace for r in created],
                [r.user_id for r in created],
                [r.content for r in created],
            ),
        )
        chunks = [p for r in created for p in chunk_params(r, r.chunks, vector)]
        if chunks:
            fields = ", ".join(CHUNK_FIELDS)
            columns = list(zip(*chunks, strict=True))
            conn.execute(
                f"INSERT INTO memory_chunks ({fields}) SELECT {fields} FROM unnest(%s::text[], "
                "%s::text[], %s::int[], %s::text[], %s::text[], %s::text[], %s::int[], "
                f"%s::int[], %b::vector[]) WITH ORDINALITY AS c({fields}, ord) ORDER BY ord",
                [list(c) for c in columns],
            )

    @staticmethod
    def _write_edges(
        conn: Conn,
        workspace: str,
        edges: Sequence[NewEdge],
        rename: dict[str, str],
        now: float,
    ) -> None:
        params = []
        for edge in edges:
            src = rename.get(edge.src, edge.src)
            dst = rename.get(edge.dst, edge.dst)
            if src != dst:
                when = now if edge.updated_at is None else edge.updated_at
                params.append((workspace, src, dst, edge.kind, edge.weight, when))
        # Sorted: concurrent writers lock shared edges in the same order and cannot deadlock.
        params.sort(key=lambda p: (p[1], p[2], p[3]))
        # One statement: an edge named twice goes in once, with the greater weight and the
        # later time (what inserting them one after the other leaves).
        merged: dict[tuple[str, str, str], tuple[float, float]] = {}
        for _, src, dst, kind, weight, when in params:
            before = merged.get((src, dst, kind))
            merged[(src, dst, kind)] = (weight if before is None else max(before[0], weight), when)
        if merged:
            conn.execute(
                "INSERT INTO edges AS e (workspace, src, dst, kind, weight, updated_at) "
                "SELECT %s, v.src, v.dst, v.kind, v.weight, v.at FROM unnest(%s::text[], "
                "%s::text[], %s::text[], %s::float8[], %s::float8[]) WITH ORDINALITY "
                "AS v(src, dst, kind, weight, at, n) ORDER BY v.n "
                "ON CONFLICT (workspace, src, dst, kind) DO UPDATE "
                "SET weight = greatest(e.weight, excluded.weight), "
                "updated_at = excluded.updated_at",
                (workspace, [k[0] for k in merged], [k[1] for k in merged],
                 [k[2] for k in merged], [float(w) for w, _ in merged.values()],
                 [float(t) for _, t in merged.values()]),
            )  # fmt: skip

    @staticmethod
    def _supersede_queued(
        conn: Conn, workspace: str, edges: Sequence[NewEdge], rename: dict[str, str]
    ) -> None:
        """``SQLStore._supersede`` with no answer awaited: a statement per ``supersedes``
        edge (in order: each sees what the one before changed) that reads both memories,
        moves the older one's ``valid_until`` and ``superseded_by`` and logs the change with
        the same text; there a read would cost a round trip in the pipeline."""
        first = True
        for new, old in supersessions(edges, rename):
            if first:  # the history's numbers as Python writes them (shortest round trip)
                conn.execute("SELECT set_config('extra_float_digits', '1', true)")
                first = False
            args = {"ws": workspace, "new": new, "old": old, "new_json": json.dumps(new)}
            conn.execute(_SUPERSEDE, {**args, "now": time.time()})


# One ``supersedes`` edge: what ``SQLStore._supersede`` does for it, as one statement. The
# history's text is ``json.dumps({"superseded_by": new, "valid_until": at})``: Python writes a
# whole float with ".0".
_SUPERSEDE = (
    "WITH f AS (SELECT created_at FROM memories WHERE workspace = %(ws)s AND id = %(new)s), "
    "o AS (SELECT user_id, valid_until FROM memories WHERE workspace = %(ws)s AND id = %(old)s), "
    "u AS (UPDATE memories m SET valid_until = f.created_at, superseded_by = %(new)s "
    "FROM f, o WHERE m.workspace = %(ws)s AND m.id = %(old)s "
    "AND (o.valid_until IS NULL OR o.valid_until > f.created_at) "
    "RETURNING f.created_at AS at, o.user_id) "
    "INSERT INTO memory_changes (memory_id, workspace, user_id, op, before, after, reason, "
    "created_at) SELECT %(old)s, %(ws)s, u.user_id, 'supersede', NULL, "
    "'{\"superseded_by\": ' || %(new_json)s || ', \"valid_until\": ' || "
    "CASE WHEN u.at = trunc(u.at) AND abs(u.at) < 1e16 THEN trunc(u.at)::numeric::text || '.0' "
    "ELSE u.at::text END || '}', '', %(now)s FROM u"
)


def _of_session(
    snap: AddSnapshot, workspace: str, ids: Sequence[str], known: dict[str, V]
) -> dict[str, V] | None:
    """``known``'s entries for ``ids``, from the add session ``snap`` if it covers
    ``workspace`` and has them all; ``None`` sends the read to the database."""
    if workspace != snap.scope.workspace or any(i not in known for i in ids):
        return None
    return {i: known[i] for i in dict.fromkeys(ids)}

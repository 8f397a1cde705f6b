"""The search half of the PostgreSQL store, and how vectors and keyword terms travel.

Vectors go to and from pgvector in its binary format (no extra dependency); a memory's keyword
terms are analysed exactly as the embedded store analyses them and stored as a ``tsvector``
with positions, so that BM25 over them gives the same scores (see :mod:`.store`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import numpy as np
from psycopg.types.json import Jsonb

from ...learn.scoring import ReplyFacts
from ...models import Edge, KnowledgeChunk, MemoryRecord, RecallFilter, Scope
from ...recall.text import index_text, speaker_of, terms
from ..base import ChunkVector, LearningAhead, ReplyQuery
from ..schema import row_order
from ..sql.chunk_rows import CHUNK_FIELDS, Owner, chunk_params, chunk_vector
from ..sql.feedback import LearningReads
from ..sql.knowledge import CHUNK_COLUMNS
from ..sql.store import Dialect, SQLStore
from ..tables import COPY_TABLES, MEMORY_COLUMNS
from .connection import Conn
from .ingest import PostgresIngest
from .keyword import keyword_query, quote_lexeme
from .reads import PostgresReads
from .snapshot import Snapshot, keep_raw
from .statements import M_RAW, N_MEMORY, pg_scope_where, planned_once, replies_statement
from .vectors import Vector, chunk_scope, own_hits, register_vector, scope_keys

__all__ = [
    "COPY_KEYS",
    "PostgresSearch",
    "Vector",
    "analysed",
    "jsonb",
    "named",
    "pg_filter_where",
    "pg_scope_where",
    "register_vector",
    "write_chunks",
]

T = TypeVar("T")

_MAX_POSITION = 16383  # tsvector positions saturate here; term counts above are approximate


def analysed(content: str, metadata: dict[str, Any]) -> tuple[str, int]:
    """The keyword terms of a memory, exactly as the embedded store indexes them (its speaker
    in front of its content), as a tsvector literal and a length."""
    doc_terms = terms(index_text(content, speaker_of(metadata)))
    return _tsvector(doc_terms), len(doc_terms)


def _tsvector(doc_terms: list[str]) -> str:
    """A tsvector literal of already-analysed terms, with positions (so that tf survives)."""
    positions: dict[str, list[str]] = {}
    for pos, term in enumerate(doc_terms, start=1):
        positions.setdefault(term, []).append(str(min(pos, _MAX_POSITION)))
    return " ".join(f"{quote_lexeme(t)}:{','.join(p)}" for t, p in positions.items())


def jsonb(value: Any) -> Jsonb:
    return Jsonb(value)


def pg_filter_where(
    where: RecallFilter | None, alias: str = "", name: str | None = None
) -> tuple[str, list[Any]]:
    """The condition (empty for no filter, else starting with `` AND``) and parameters that
    keep what ``where`` matches: ``%s`` placeholders, or ``%(name0)s``, ``%(name1)s`` ... with
    ``name`` (the parameters then go into a dict under those names, see :func:`named`).
    Metadata compares as ``jsonb``: ``true`` is no ``1``, ``1`` equals ``1.0`` (as
    :meth:`RecallFilter.matches` compares)."""
    if where is None:
        return "", []
    p = f"{alias}." if alias else ""
    clauses: list[str] = []
    params: list[Any] = []
    for column, values in (("kind", where.kinds), ("role", where.roles)):
        if values is not None:
            clauses.append(f"{p}{column} = ANY(?::text[])")
            params.append(list(values))
    if where.since is not None:
        clauses.append(f"{p}created_at >= ?")
        params.append(where.since)
    if where.until is not None:
        clauses.append(f"{p}created_at < ?")
        params.append(where.until)
    for key, values in where.metadata:
        test = f"{p}metadata -> ?::text = ANY(?::jsonb[])"
        params += [key, [Jsonb(v) for v in values]]
        if None in values:  # null also matches a memory without the key
            test = f"({p}metadata -> ?::text IS NULL OR {test})"
            params.insert(len(params) - 2, key)
        clauses.append(test)
    sql = "".join(f" AND {c}" for c in clauses)
    parts = sql.split("?")
    marks = ["%s"] * len(params) if name is None else [f"%({name}{i})s" for i in range(len(params))]
    return "".join(a + b for a, b in zip(parts, [*marks, ""], strict=True)), params


def named(name: str, params: list[Any]) -> dict[str, Any]:
    """The parameters of :func:`pg_filter_where` called with ``name``, by name."""
    return {f"{name}{i}": value for i, value in enumerate(params)}


#: table -> the columns that order its rows (the cursor of ``export_rows``)
COPY_KEYS: dict[str, tuple[str, ...]] = {
    table: row_order(table, "postgresql") for table in COPY_TABLES
}


def write_chunks(
    conn: Conn, owned: Sequence[tuple[Owner, Sequence[ChunkVector]]], replace: bool = False
) -> None:
    """Insert the chunk vectors of memories (``replace``: instead of their stored ones)."""
    if replace:
        for owner, _ in owned:
            conn.execute(
                "DELETE FROM memory_chunks WHERE workspace = %s AND memory_id = %s",
                (owner.workspace, owner.id),
            )
    params = [p for owner, chunks in owned for p in chunk_params(owner, chunks, Vector)]
    if params:
        marks = ",".join(["%s"] * (len(CHUNK_FIELDS) - 1) + ["%b"])
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO memory_chunks ({', '.join(CHUNK_FIELDS)}) VALUES ({marks})", params
            )


def _held(
    ids: list[str],
    workspace: str,
    *aheads: Callable[[str, list[str]], dict[str, T] | None],
) -> dict[str, T] | None:
    """What the first read-ahead that covers ``ids`` holds of them (a recall's, else an
    add's); ``{}`` for no ids; None when no read-ahead covers them."""
    if not ids:
        return {}
    for ahead in aheads:
        held = ahead(workspace, ids)
        if held is not None:
            return held
    return None


class PostgresSearch(SQLStore, PostgresReads, PostgresIngest):
    """Search and vector reads of :class:`~.store.PostgresStore`."""

    _k1: float
    _b: float
    _ef_search: int

    def get_memories(self, workspace: str, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        ids = list(dict.fromkeys(ids))
        held = _held(ids, workspace, self._cached_records, self._added_records)
        if held is not None:
            return held
        rows = self._read(
            "get",
            lambda c: c.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE workspace = %s AND id = ANY(%s)",
                (workspace, ids),
            ).fetchall(),
        )
        return {r[0]: self._record(r) for r in rows}

    def vector_search(
        self, scope: Scope, query: np.ndarray, k: int, where: RecallFilter | None = None
    ) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        snap = self._snap()
        ahead = snap is not None and snap.plan.neighbourhood and not snap.prefetched
        if snap is not None and ahead and snap.scope in (None, scope):
            snap.scope = scope
            own_f, own_args = pg_filter_where(where, "", "vf")
            chunk_f, chunk_args = pg_filter_where(where, "m", "cf")
            narrow = (own_f, chunk_f, {**named("vf", own_args), **named("cf", chunk_args)})
            return self._prefetch(snap, scope, Vector(query), k, narrow)
        sql, args, ef = self._vector_query(scope, query, k, where)

        def run(conn: Conn) -> list[tuple[str, float]]:
            if ef is not None:
                # Transaction-local: the pooled connection goes back unchanged.
                conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
            return [(r[0], float(r[1])) for r in conn.execute(sql, args)]

        return self._read("search", run, transaction=ef is not None)

    def _vector_query(
        self,
        scope: Scope,
        query: np.ndarray,
        k: int,
        where: RecallFilter | None = None,
        rows: str | None = None,
    ) -> tuple[str, dict[str, Any], int | None]:
        """The statement of ``vector_search`` (rows ``id, similarity, distance``, best first),
        its parameters, and the ``hnsw.ef_search`` it needs set first (None: the default);
        ``rows``: see :func:`~.vectors.own_hits`."""
        keys = scope_keys(scope)
        narrowed, narrow_params = pg_filter_where(where, "", "vf")
        chunk_scoped = chunk_scope(keys)
        chunk_narrowed, chunk_narrow_params = pg_filter_where(where, "m", "cf")
        args = {
            "q": Vector(query),
            "k": k,
            "ws": scope.workspace,
            **{key: getattr(scope, key) for key in keys},
            **named("vf", narrow_params),
            **named("cf", chunk_narrow_params),
        }
        # HNSW's iterative scan (on for every connection) keeps a filtered query from
        # coming back short.
        ef = min(1000, max(self._ef_search, k))
        # A long memory scores its best window too: the scope's chunk vectors are scanned
        # exactly (only texts longer than chunk_chars have them) and merged in.
        sql = (
            f"WITH hits AS MATERIALIZED ({own_hits(keys, narrowed, rows)}), "
            # The chunk vectors nearest first, each memory checked by key (no scan of the
            # workspace's memories).
            "chunk_hits AS MATERIALIZED (SELECT d.id, d.distance FROM ("
            "SELECT c.memory_id AS id, min(c.embedding <=> %(q)s) AS distance "
            f"FROM memory_chunks c WHERE {chunk_scoped} GROUP BY c.memory_id) d "
            "CROSS JOIN LATERAL (SELECT 1 FROM memories m WHERE m.workspace = %(ws)s "
            f"AND m.id = d.id AND m.status = 'active'{chunk_narrowed} OFFSET 0) ok "
            "ORDER BY d.distance LIMIT %(k)s) "
            "SELECT id, 1 - min(distance) AS similarity, min(distance) AS distance "
            "FROM (SELECT * FROM hits UNION ALL "
            "SELECT * FROM chunk_hits) AS both_hits GROUP BY id "
            "ORDER BY min(distance), id LIMIT %(k)s"
        )
        return sql, args, (ef if ef != self._ef_search else None)

    def memory_chunks(self, workspace: str, ids: Sequence[str]) -> dict[str, list[ChunkVector]]:
        cached = self._cached_windows(workspace, ids)
        if cached is not None:
            return cached

        def run(conn: Conn) -> dict[str, list[ChunkVector]]:
            out: dict[str, list[ChunkVector]] = {}
            for row in conn.execute(
                "SELECT memory_id, position, start_char, end_char, embedding FROM memory_chunks "
                "WHERE workspace = %s AND memory_id = ANY(%s) ORDER BY memory_id, position",
                (workspace, list(dict.fromkeys(ids))),
            ):
                out.setdefault(row[0], []).append(chunk_vector(row[1:], np.asarray))
            return out

        return self._read("reading chunk vectors", run)

    def vector_searches(
        self, scope: Scope, queries: np.ndarray, k: int
    ) -> list[list[tuple[str, float]]]:
        added = self._added_searches(scope, queries, k)
        if added is not None:
            return added
        # The HNSW index answers one vector per query: a batch is a loop of them.
        return [self.vector_search(scope, q, k) for q in queries]

    def _keyword_query(
        self, scope: Scope, words: Sequence[str], k: int, where: RecallFilter | None = None
    ) -> tuple[str, dict[str, Any]] | None:
        """The statement of ``keyword_search`` (rows ``id, score, seq``, best first) of the
        index terms ``words`` and its parameters; None when there is no term or ``k`` is 0
        (see :mod:`.keyword`)."""
        narrowed, narrow_params = pg_filter_where(where, "m", "filter")
        return keyword_query(
            scope, words, k, k1=self._k1, b=self._b, narrowed=narrowed,
            narrow_params=named("filter", narrow_params),
        )  # fmt: skip

    def keyword_search(
        self, scope: Scope, text: str, k: int, where: RecallFilter | None = None
    ) -> list[tuple[str, float]]:
        return self._keyword_hits(scope, terms(text), k, where)

    def keyword_scores(
        self, scope: Scope, words: Sequence[str], ids: Sequence[str]
    ) -> dict[str, float]:
        # The search's statement kept to ``ids``: the statistics stay the scope's.
        query = keyword_query(
            scope, list(words), len(ids), k1=self._k1, b=self._b,
            narrowed=" AND m.id = ANY(%(only_ids)s::text[])",
            narrow_params={"only_ids": list(ids)},
        ) if ids else None  # fmt: skip
        if query is None:
            return {}
        sql, params = query
        rows = self._read("scoring keyword hits", lambda c: c.execute(sql, params).fetchall())
        return {r[0]: float(r[1]) for r in rows if float(r[1]) > 0}

    def _keyword_hits(
        self, scope: Scope, words: Sequence[str], k: int, where: RecallFilter | None = None
    ) -> list[tuple[str, float]]:
        """``keyword_search`` of a text whose index terms are ``words``."""
        query = self._keyword_query(scope, words, k, where)
        if query is None:
            return []
        sql, params = query
        snap = self._snap()
        if snap is not None and not snap.keyword_ids and snap.scope in (None, scope):
            # A session: the hits come with their records and vectors (what recall reads next).
            snap.scope = scope
            sql = (
                f"SELECT t.id, t.score, {M_RAW} FROM ({sql}) t "
                "JOIN memories m ON m.workspace = %(ws)s AND m.id = t.id "
                "ORDER BY t.score DESC, m.seq"
            )

            def run(conn: Conn) -> list[Any]:
                cur = conn.cursor(binary=True)
                with conn.pipeline(), planned_once(conn):
                    finish = self._queue_scope_reads(conn, snap, scope)
                    cur.execute(sql, params)
                finish()
                return cur.fetchall()

            rows = self._read("keyword search", run)
            keep_raw(snap, rows, 2, N_MEMORY)  # decoded when read
            snap.keyword_ids = [r[0] for r in rows]
            snap.keyword_scores = [float(r[1]) for r in rows]
        else:
            rows = self._read("search", lambda c: c.execute(sql, params).fetchall())
        return [(r[0], float(r[1])) for r in rows]

    def memories_of_kind(self, scope: Scope, kind: str, limit: int) -> list[MemoryRecord]:
        cached = self._cached_kind(scope, kind, limit)
        return list(cached) if cached is not None else super().memories_of_kind(scope, kind, limit)

    def search_knowledge(
        self, scope: Scope, vector: np.ndarray, limit: int, min_score: float = 0.0
    ) -> list[KnowledgeChunk]:
        snap = self._snap(scope.workspace)
        ahead = snap.knowledge_ahead if snap is not None and snap.scope == scope else None
        if ahead is not None and np.array_equal(ahead[0], vector):
            rows = ahead[1]
            if limit <= len(rows) or len(rows) < KNOWLEDGE_AHEAD:
                return self._scored_chunks(rows[:limit], min_score)
        sql, args = self._knowledge_query(scope, vector, limit)
        rows = self._read("searching knowledge", lambda c: c.execute(sql, args).fetchall())
        return self._scored_chunks(rows, min_score)

    @staticmethod
    def _knowledge_query(scope: Scope, vector: np.ndarray, limit: int) -> tuple[str, list[Any]]:
        # The server ranks the scope's chunks (within max_knowledge_chunks_per_scope per
        # workspace and user, by the scope index) and sends back only the top ``limit``,
        # without their vectors. Scores equal to 6 places are ties, the older first, as in
        # every store (the server's float arithmetic differs from numpy's in the last bits).
        where, params = pg_scope_where(scope)
        sql = (
            f"SELECT {CHUNK_COLUMNS}, distance FROM (SELECT {CHUNK_COLUMNS}, seq, "
            f"embedding <=> %b AS distance FROM knowledge_chunks "
            f"WHERE {where}) c ORDER BY round(distance::numeric, 6), seq "
            "LIMIT %s"
        )
        return sql, [Vector(vector), *params, limit]

    def _queue_knowledge(
        self, conn: Conn, snap: Snapshot, scope: Scope, vector: np.ndarray
    ) -> Callable[[], None]:
        """Queue, in the open pipeline of ``conn``, the knowledge search a recall makes next
        (its ``KNOWLEDGE_AHEAD`` nearest chunks to the recall's query vector), if the session
        was told of one; the returned function keeps the answer."""
        if not snap.plan.knowledge or snap.knowledge_ahead is not None:
            return lambda: None
        cur = conn.cursor(binary=True)
        cur.execute(*self._knowledge_query(scope, vector, KNOWLEDGE_AHEAD))
        query = np.array(vector, dtype=np.float32)

        def finish() -> None:
            snap.knowledge_ahead = (query, cur.fetchall())

        return finish

    def _scored_chunks(
        self, rows: Sequence[Sequence[Any]], min_score: float
    ) -> list[KnowledgeChunk]:
        out = []
        for row in rows:
            distance = float(row[-1])
            score = 0.0 if distance != distance else min(1.0, max(0.0, 1.0 - distance))
            if score < min_score:
                break
            chunk = self._chunk(row)
            chunk.score = round(score, 6)
            out.append(chunk)
        return out

    def _lock_knowledge_partition(self, conn: Any, workspace: str, user_id: str | None) -> None:
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            (f"knowledge|{workspace}|{user_id or ''}",),
        )

    def edges_from(
        self, workspace: str, ids: Sequence[str], min_weight: float = 0.0, kind: str | None = None
    ) -> list[Edge]:
        cached = self._cached_edges(workspace, ids, min_weight, kind)
        if cached is not None:
            return cached
        return super().edges_from(workspace, ids, min_weight, kind)

    def learned_edge_parts(
        self, workspace: str, src_ids: Sequence[str], kind: str | None = None
    ) -> list[tuple[str, str, str, str | None, float]]:
        cached = self._cached_parts(workspace, src_ids, kind)
        return (
            cached if cached is not None else super().learned_edge_parts(workspace, src_ids, kind)
        )

    def _no_feedback_since(self, scope: Scope, since: float | None) -> bool:
        return self._no_feedback(scope, since)

    def vectors(self, workspace: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        ids = list(dict.fromkeys(ids))
        held = _held(ids, workspace, self._cached_vectors, self._added_vectors)
        if held is not None:
            return held

        def run(conn: Conn) -> dict[str, np.ndarray]:
            with conn.cursor(binary=True) as cur:
                cur.execute(
                    "SELECT id, embedding FROM memories WHERE workspace = %s AND id = ANY(%s)",
                    (workspace, ids),
                )
                return {r[0]: r[1] for r in cur}

        return self._read("reading vectors", run)

    def term_postings(
        self, scope: Scope, terms: Sequence[str], limit: int
    ) -> tuple[int, dict[str, tuple[int, list[str]]]]:
        added = self._added_postings(scope, terms, limit)
        if added is not None:
            return added
        wanted = list(dict.fromkeys(terms))
        (count_sql, count_params), (terms_sql, terms_params) = self._postings_queries(
            scope, wanted, limit
        )

        def run(conn: Conn) -> tuple[int, dict[str, tuple[int, list[str]]]]:
            total = conn.execute(count_sql, count_params).fetchone()
            out: dict[str, tuple[int, list[str]]] = {t: (0, []) for t in wanted}
            if wanted:
                for term, df, ids in conn.execute(terms_sql, terms_params).fetchall():
                    out[term] = (int(df), [i for i in ids if i is not None])
            return int(total[0]) if total else 0, out

        return self._read("reading term postings", run)

    def _postings_queries(
        self, scope: Scope, terms: Sequence[str], limit: int
    ) -> tuple[tuple[str, list[Any]], tuple[str, list[Any]]]:
        """The statements of ``term_postings``: the scope's size; per term its document count
        and newest ids (rows ``term, df, ids``)."""
        where, params = pg_scope_where(scope, "m")
        wanted = list(dict.fromkeys(terms))
        count = (f"SELECT count(*) FROM memories m WHERE {where} AND m.status = 'active'", params)
        if scope.user_id is not None and scope.agent_id is None and scope.session_id is None:
            # A user's scope is a keyword partition: its size is kept in keyword_stats, its
            # document counts in keyword_terms, its postings in keyword_postings by seq (an
            # index-only scan backwards for the newest). Reading each memory that holds a
            # term instead cost seconds per batch in a scope of a few thousand memories (a
            # speaker's name is in every one of them).
            part = [scope.workspace, scope.user_id]
            size = (
                "SELECT coalesce(max(n), 0) FROM keyword_stats "
                "WHERE workspace = %s AND user_key = %s",
                part,
            )
            return size, (
                "SELECT t.term, k.df, ARRAY(SELECT m.id FROM keyword_postings p "
                "JOIN memories m ON m.workspace = p.workspace AND m.seq = p.seq "
                "WHERE p.workspace = %s AND p.user_key = %s AND p.term = t.term "
                "ORDER BY p.seq DESC LIMIT %s) FROM unnest(%s::text[]) AS t(term) "
                "JOIN keyword_terms k ON k.workspace = %s AND k.user_key = %s "
                "AND k.term = t.term WHERE k.df > 0",
                [*part, limit, wanted, *part],
            )
        return (
            count,
            (
                "SELECT t.term, count(m.seq), "
                "coalesce((array_agg(m.id ORDER BY m.seq DESC))[1:%s], '{}') "
                "FROM unnest(%s::text[], %s::tsquery[]) AS t(term, q) JOIN memories m "
                f"ON m.terms @@ t.q WHERE {where} AND m.status = 'active' GROUP BY t.term",
                [limit, wanted, [quote_lexeme(t) for t in wanted], *params],
            ),
        )

    def _latest_query(self, scope: Scope) -> tuple[str, list[Any]]:
        where, params = pg_scope_where(scope)
        return (
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} AND status = 'active' "
            "ORDER BY seq DESC LIMIT 1",
            params,
        )

    def latest_memories(self, scope: Scope, limit: int) -> list[MemoryRecord]:
        added = self._added_latest(scope, limit)
        return added if added is not None else super().latest_memories(scope, limit)

    def edge_counts(self, workspace: str, ids: Sequence[str]) -> dict[str, int]:
        added = self._added_counts(workspace, ids)
        return added if added is not None else super().edge_counts(workspace, ids)

    def reply_facts(
        self, scope: Scope, ask: ReplyQuery, witnesses: Sequence[tuple[str, str]] = ()
    ) -> list[ReplyFacts]:
        context, context_min, since, limit = ask
        empty = self._empty_replies(scope, since)
        if empty is not None:
            return empty
        if not witnesses:  # the edge context's read: maybe read with the neighbourhood
            ahead = self._replies_ahead(scope, ask)
            if ahead is not None:
                return _reply_facts(ahead)
        where, params = pg_scope_where(scope, "m")
        # A user's signals and the workspace-wide ones count for that user; a recall made
        # without a user reads only the workspace-wide ones.
        user_clause = " AND user_id IS NULL"
        user_params: list[Any] = []
        if scope.user_id is not None:
            user_clause = " AND (user_id = %s OR user_id IS NULL)"
            user_params.append(scope.user_id)
        wanted_pairs = set(witnesses)
        witness_recalls = list({r for r, _ in witnesses})

        scoped = f"FROM reply_signals WHERE workspace = %s{user_clause} AND created_at >= %s"
        signals = (
            "SELECT r.memory_id, r.recall_id, r.value, r.created_at, r.context_embedding, "
            "r.source FROM reply_signals r JOIN memories m ON m.workspace = r.workspace "
            "AND m.id = r.memory_id AND m.status = 'active' "
            "WHERE r.workspace = %s AND r.recall_id = ANY({recalls}) AND r.created_at >= %s "
            f"AND {where}"
        )

        def matching() -> list[Any]:
            return [scope.workspace, *user_params, since, Vector(context()), 1.0 - context_min]

        def run(conn: Conn) -> list[Any]:
            cur = conn.cursor(binary=True)
            any_signal = cur.execute(
                f"SELECT 1 {scoped} LIMIT 1", [scope.workspace, *user_params, since]
            ).fetchone()
            # The matching recalls first (pgvector's distance in the server), then only
            # their signals: the cost follows the matches, not the signals stored.
            matched: list[str] = []
            if any_signal:
                matched = [
                    r[0]
                    for r in cur.execute(
                        f"SELECT recall_id {scoped} AND context_embedding <=> %b <= %s "
                        "GROUP BY recall_id ORDER BY max(seq) DESC LIMIT %s",
                        [*matching(), limit],
                    ).fetchall()
                ]
            recall_ids = list(dict.fromkeys([*matched, *witness_recalls]))
            if not recall_ids:
                return []
            rows = cur.execute(
                signals.replace("{recalls}", "%s"), [scope.workspace, recall_ids, since, *params]
            ).fetchall()
            keep = set(matched)
            return [r for r in rows if r[1] in keep or (r[1], r[0]) in wanted_pairs]

        def together(conn: Conn) -> list[Any]:
            # The session's probe found the user's signals (the query's vector is wanted): the
            # matching recalls and their signals in one statement (one round trip).
            sql, args = replies_statement(
                scope, since, context(), context_min, limit, "%s::text[]", [witness_recalls]
            )
            rows = conn.cursor(binary=True).execute(sql, args).fetchall()
            return [r[:6] for r in rows if r[6] or (r[1], r[0]) in wanted_pairs]

        if self._signals_likely(scope):
            rows = self._read("reading reply signals", together)
        else:
            rows = self._read("reading reply signals", run, transaction=True)
        return _reply_facts(rows)

    def _learning_reads_ahead(
        self, scope: Scope, memory_ids: Sequence[str], since: float, ask: LearningAhead
    ) -> LearningReads | None:
        if self._no_feedback(scope, since):
            return [], [], [], []
        snap = self._snap(scope.workspace)
        if (
            snap is None
            or snap.scope != scope
            or snap.plan.feedback_since is None
            or since < snap.plan.feedback_since
        ):
            return None  # not this session's: the plain reads
        context, limit = ask.context, ask.limit
        context_min, reply_limit = ask.context_min, ask.reply_limit
        ahead = self._learned_ahead(scope, since, limit, context_min, reply_limit)
        if ahead is not None:  # read with the neighbourhood
            events, pairs, rows = ahead
            return events, pairs, [], _reply_facts(rows)
        # In a session the probe tells whether the user has reply signals: the feedback
        # records and the signals (witnesses: the recalls the ratings were given on) in one
        # pipelined read-only transaction.
        # Only what the probe found any of: no statement for a kind of record there is none of.
        found = snap.found
        send = self._learning_reader(scope, memory_ids, since, limit, found)
        if not (found[2] or self._signals_likely(scope)):
            # No ratings (so no witnesses) and no signals of the user: no reply signal counts.
            facts = self._read_together("reading feedback", send)
            return (*facts, [])
        sql, args = replies_statement(
            scope,
            since,
            context() if self._signals_likely(scope) else None,
            context_min,
            reply_limit,
            "ARRAY(SELECT recall_id FROM memory_ratings WHERE workspace = %s "
            "AND memory_id = ANY(%s) AND created_at >= %s AND recall_id IS NOT NULL)",
            [scope.workspace, list(dict.fromkeys(memory_ids)), since],
        )

        def together(conn: Conn) -> Callable[[], tuple[Any, list[Any]]]:
            facts = send(conn)
            cur = conn.cursor(binary=True)
            cur.execute(sql, args)
            return lambda: (facts(), cur.fetchall())

        (events, pairs, ratings), rows = self._read_together("reading feedback", together)
        wanted = {(r.recall_id, r.memory_id) for r in ratings if r.recall_id is not None}
        kept = [r[:6] for r in rows if r[6] or (r[1], r[0]) in wanted]
        return events, pairs, ratings, _reply_facts(kept)


def _reply_facts(rows: Sequence[Sequence[Any]]) -> list[ReplyFacts]:
    """Reply facts from rows ``memory_id, recall_id, value, created_at, context, source``,
    each (recall, memory) once."""
    seen: set[tuple[str, str]] = set()
    out = []
    for memory_id, recall_id, value, created_at, vector, source in rows:
        if (recall_id, memory_id) not in seen:
            seen.add((recall_id, memory_id))
            out.append(ReplyFacts(memory_id, recall_id, value, created_at, vector, source))
    return out


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and stats)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


#: psycopg's placeholders (a vector travels in pgvector's binary format), arrays for IN lists,
#: and row locks where concurrent writers meet.
#: The nearest knowledge chunks a recall's session reads with its vector search (recall asks
#: for ``knowledge_recall_limit``, 3 by default; a larger ask is a query of its own).
KNOWLEDGE_AHEAD = 10

DIALECT = Dialect(
    name="postgresql",
    mark="%s",
    vector_mark="%b",
    vector=Vector,
    json=jsonb,
    for_update=" FOR UPDATE",
    for_share=" FOR SHARE",
    ordered=True,
    key_order=", key_id",
)

"""The text of the PostgreSQL read session's statements (see :mod:`.reads`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import numpy as np
from psycopg import pq

from ...models import Scope
from ..sql.dialect import scope_where
from ..tables import MEMORY_COLUMNS
from .snapshot import NARROW_KINDS, PARTS_OF
from .vectors import Vector

__all__ = [
    "HEAD_GUESS",
    "HEAD_MARGIN",
    "M_COLUMNS",
    "M_RAW",
    "NARROW",
    "N_MEMORY",
    "PROBE",
    "SIGNAL_MEMORIES",
    "pg_scope_where",
    "planned_once",
    "replies_statement",
]

N_MEMORY = len(MEMORY_COLUMNS.split(","))
M_COLUMNS = ", ".join("m." + c.strip() for c in MEMORY_COLUMNS.split(","))
# The same as undecoded as they travel (metadata as JSON text, the vector in pgvector's binary
# format), for the neighbourhood's rows: most are never asked for, so they are decoded on use.
M_RAW = M_COLUMNS.replace("m.metadata", "m.metadata::text") + ", vector_send(m.embedding)"
# Candidates past the refinement depth whose neighbours are read ahead too (the keyword hits'
# cosine is guessed from their own vector: a chunk's may lift them).
HEAD_MARGIN = 15
# The head of the fused candidates (recall.fusion.fuse, ``score`` mode), guessed: ``v`` a
# vector hit's similarity, else the keyword hit's own vector's (``kw_cos``, computed by the
# client from the vectors its search brought); each part over its list's best.
HEAD_GUESS = """
            fused AS MATERIALIZED (
                SELECT c.id, greatest(coalesce(1 - c.distance, k.cos, 0), 0) AS v,
                       coalesce(k.score, 0) AS s
                FROM cand c LEFT JOIN unnest(%(kw)s::text[], %(kw_scores)s::float8[],
                                             %(kw_cos)s::float8[]) AS k(id, score, cos)
                ON k.id = c.id),
            head AS MATERIALIZED (
                SELECT id, row_number() OVER (ORDER BY score DESC, id) AS rk FROM (
                    SELECT id, (1 - %(kw_weight)s) * v / coalesce(nullif(max(v) OVER (), 0), 1)
                               + %(kw_weight)s * s / coalesce(nullif(max(s) OVER (), 0), 1)
                               AS score FROM fused) f
                ORDER BY rk LIMIT %(head)s),"""
NARROW = "(" + ", ".join(f"'{k}'" for k in NARROW_KINDS) + ")"

# The rows of ``_replies_statement`` ({signals}), the first of each memory with the memory's
# row (``M_RAW``, from column 14), its out-edges (columns 10-13) after a marker column 9 and
# their logged changes (the last four columns, ``PARTS_OF``).
SIGNAL_MEMORIES = f"""
    WITH s AS MATERIALIZED (
        SELECT t.*, row_number() OVER (PARTITION BY t.memory_id) AS rn FROM ({{signals}}) t),
    u AS (SELECT DISTINCT memory_id AS id FROM s),
    ea AS (SELECT src, array_agg(dst ORDER BY dst, kind) AS dsts,
                  array_agg(kind ORDER BY dst, kind) AS kinds,
                  array_agg(weight ORDER BY dst, kind) AS weights,
                  array_agg(updated_at ORDER BY dst, kind) AS ups
           FROM edges WHERE workspace = %s AND src = ANY(ARRAY(SELECT id FROM u))
           GROUP BY src),
    mm AS (SELECT * FROM memories WHERE workspace = %s AND id = ANY(ARRAY(SELECT id FROM u))),
    pa AS ({PARTS_OF.format(ws="%s", sources="ARRAY(SELECT id FROM u)")})
    SELECT s.memory_id, s.recall_id, s.value, s.created_at, s.context_embedding, s.source,
           s.matched, s.newest, s.n, m.id, ea.dsts, ea.kinds, ea.weights, ea.ups, {M_RAW},
           pa.dsts, pa.kinds, pa.recalls, pa.applied
    FROM s LEFT JOIN mm m ON s.rn = 1 AND m.id = s.memory_id
    LEFT JOIN ea ON s.rn = 1 AND ea.src = s.memory_id
    LEFT JOIN pa ON s.rn = 1 AND pa.src = s.memory_id
"""

# Does any feedback record of the scope count for a recall (a superset of what the reads of
# learning_facts and reply_facts select)? One row of booleans.
PROBE = """
    SELECT
      EXISTS (SELECT 1 FROM feedback_events e WHERE e.workspace = %(ws)s
              AND (%(user)s::text IS NULL OR e.user_id = %(user)s OR e.user_id IS NULL)
              AND (e.created_at >= %(since)s OR EXISTS (SELECT 1 FROM decision_reviews r
                   WHERE r.workspace = e.workspace AND r.event_id = e.id
                   AND r.created_at >= %(since)s))),
      EXISTS (SELECT 1 FROM preference_pairs WHERE workspace = %(ws)s
              AND (%(user)s::text IS NULL OR user_id = %(user)s OR user_id IS NULL)
              AND created_at >= %(since)s),
      EXISTS (SELECT 1 FROM memory_ratings WHERE workspace = %(ws)s
              AND created_at >= %(since)s),
      EXISTS (SELECT 1 FROM reply_signals WHERE workspace = %(ws)s
              AND (%(user)s::text IS NULL OR user_id = %(user)s OR user_id IS NULL)
              AND created_at >= %(since)s)
"""


_GENERIC = "SELECT set_config('plan_cache_mode', 'force_generic_plan', false)"
_CUSTOM = "SELECT set_config('plan_cache_mode', 'force_custom_plan', false)"


@contextmanager
def planned_once(conn: Any) -> Iterator[None]:
    """The statements queued inside, in the open pipeline of ``conn``, use the generic plan of
    their prepared statement (planned once per connection) instead of a custom plan each time.

    The store's connections plan every statement anew (``force_custom_plan``, see
    ``PostgresStore._configure``): the best plan of a vector search depends on its scope.
    Statements whose plan does not (the session's change-log reads, keyword search over one
    user's postings, the feedback probe and reads, the feedback write) spent ~0.3-1.6 ms each
    planning: about half of the server's time in a recall or feedback on 1,000 memories.

    Only in pipeline mode: the switch and the switch back travel with the statements and run
    in one transaction (the pipeline's implicit one, or the caller's), so a failure between
    them rolls the switch back with it and the connection never goes back to the pool with
    generic plans on. Outside a pipeline the statements are planned as usual.
    """
    if conn.pgconn.pipeline_status == pq.PipelineStatus.OFF:
        yield
        return
    conn.execute(_GENERIC)
    try:
        yield
    finally:
        # A broken connection is thrown away by the pool; anything else runs the switch back.
        with suppress(Exception):
            conn.execute(_CUSTOM)


def pg_scope_where(scope: Scope, alias: str = "") -> tuple[str, list[Any]]:
    """:func:`..sql.dialect.scope_where` with PostgreSQL's ``%s`` placeholders."""
    where, params = scope_where(scope, alias)
    return where.replace("?", "%s"), params


def replies_statement(
    scope: Scope,
    since: float,
    context: np.ndarray | None,
    context_min: float,
    limit: int,
    witnesses: str,
    witness_args: list[Any],
) -> tuple[str, list[Any]]:
    """One statement for a store's ``reply_facts``: the signals of the recalls whose query matches
    ``context`` (none without it) and of the recalls ``witnesses`` (an array expression
    with ``witness_args``) gives, with a column saying whether the recall matched, then
    the newest of its matching signals' times (null if it did not match) and the number
    of matching recalls found (before ``limit`` cut them)."""
    where, params = pg_scope_where(scope, "m")
    user_clause, user_params = " AND user_id IS NULL", []
    if scope.user_id is not None:
        user_clause, user_params = " AND (user_id = %s OR user_id IS NULL)", [scope.user_id]
    if context is None:
        matched = "SELECT NULL::text AS recall_id, NULL::float8 AS newest, 0 AS n WHERE false"
        matched_args = []
    else:
        matched = (
            "SELECT recall_id, max(created_at) AS newest, count(*) OVER () AS n "
            f"FROM reply_signals WHERE workspace = %s{user_clause} "
            "AND created_at >= %s AND context_embedding <=> %b <= %s "
            "GROUP BY recall_id ORDER BY max(seq) DESC LIMIT %s"
        )
        matched_args = [scope.workspace, *user_params, since, Vector(context),
                        1.0 - context_min, limit]  # fmt: skip
    sql = (
        f"WITH matched AS MATERIALIZED ({matched}) "
        "SELECT r.memory_id, r.recall_id, r.value, r.created_at, r.context_embedding, "
        "r.source, mt.recall_id IS NOT NULL AS matched, mt.newest, "
        "(SELECT max(n) FROM matched) AS n "
        "FROM reply_signals r JOIN memories m ON m.workspace = r.workspace "
        "AND m.id = r.memory_id AND m.status = 'active' "
        "LEFT JOIN matched mt ON mt.recall_id = r.recall_id WHERE r.workspace = %s "
        f"AND r.recall_id = ANY(ARRAY(SELECT recall_id FROM matched) || {witnesses}) "
        f"AND r.created_at >= %s AND {where}"
    )
    return sql, [*matched_args, scope.workspace, *witness_args, since, *params]

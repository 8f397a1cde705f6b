"""Keyword search of the PostgreSQL store: BM25 statements that return the exact top k.

Three statements, the first that applies is used (:func:`keyword_query`):

* :func:`postings_first` — one (workspace, user) partition, no agent / session key and no
  recall filter (a recall's usual search): reads the narrow ``keyword_postings`` rows
  (migration m016) by an index-only scan, the rare terms' first, and the common terms' only
  for the rows that can still reach the top k.
* :func:`rare_first` — one partition with filters: the same pruning over the memory rows.
* the exact statement — every matching memory row (a search across users).

All three compute BM25 exactly as ``recall.keyword.BM25Index`` does (idf and the average
length per (workspace, user) partition, agent / session keys and filters applied after the
document frequency is counted); scores differ only in the order of a float sum (~1e-15).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..models import Scope
from ..recall.text import terms

__all__ = ["RARE_BUDGET", "keyword_query", "postings_first", "quote_lexeme", "rare_first"]

# Rows of its rarest terms keyword search scores before it decides whether the common terms
# can matter (at least 20 x k).
RARE_BUDGET = 2000


def quote_lexeme(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def keyword_query(
    scope: Scope,
    text: str,
    k: int,
    *,
    k1: float,
    b: float,
    narrowed: str = "",
    narrow_params: dict[str, Any] | None = None,
    plan: str = "",
) -> tuple[str, dict[str, Any]] | None:
    """The statement of ``keyword_search`` (rows ``id, score, seq``, best first) and its
    parameters; None when the text has no term or ``k`` is 0. ``narrowed`` is a recall
    filter's condition on alias ``m`` (`` AND ...``), its parameters ``narrow_params``.
    ``plan`` forces a statement where it applies (``"exact"``, ``"rare"``; for tests and
    bench/pg_keyword_topk.py), else the first that applies is used."""
    query_terms = terms(text)
    if not query_terms or k <= 0:
        return None
    counts = Counter(query_terms)
    words = list(counts)
    part_where = ["m.workspace = %(ws)s", "m.status = 'active'"]
    filters = []
    params: dict[str, Any] = {
        "ws": scope.workspace,
        "words": words,
        "qtf": [counts[w] for w in words],
        "tsq": " | ".join(quote_lexeme(w) for w in words),
        "k1": k1,
        "b": b,
        "k": k,
        **(narrow_params or {}),
    }
    if scope.user_id is not None:
        part_where.append("m.user_id = %(user_id)s")
        params["user_id"] = scope.user_id
    for key in ("agent_id", "session_id"):
        if getattr(scope, key) is not None:
            filters.append(f"c.{key} = %({key})s")
            params[key] = getattr(scope, key)
    if scope.user_id is not None:
        params["budget"] = max(RARE_BUDGET, 20 * k)
        if not filters and not narrowed and plan not in ("exact", "rare"):
            return postings_first(), params
        params["lits"] = [quote_lexeme(w) for w in words]
    if narrowed:
        filters.append("c.kept")
    # One pass over the matching rows' matching lexemes (the GIN index finds the rows).
    exact = f"""
        WITH hits AS (
            SELECT m.seq, m.id, m.user_id, m.agent_id, m.session_id, m.doc_len,
                   u.lexeme AS term, cardinality(u.positions) AS tf,
                   (TRUE{narrowed}) AS kept
            FROM memories m CROSS JOIN LATERAL unnest(m.terms) AS u
            WHERE {" AND ".join(part_where)} AND m.terms @@ %(tsq)s::tsquery
              AND u.lexeme = ANY(%(words)s::text[])
        ),
        df AS (SELECT user_id, term, count(*) AS df FROM hits GROUP BY user_id, term),
        q AS (SELECT * FROM unnest(%(words)s::text[], %(qtf)s::int[]) AS q(term, qtf))
        SELECT c.id, sum(
            q.qtf
            * ln(1.0 + (p.n - df.df + 0.5) / (df.df + 0.5))
            * c.tf * (%(k1)s + 1.0)
            / (c.tf + %(k1)s * (1.0 - %(b)s + %(b)s * c.doc_len
                / greatest(p.total_len::float8 / greatest(p.n, 1), 1e-9)))
        ) AS score, c.seq
        FROM hits c
        JOIN q ON q.term = c.term
        JOIN df ON df.user_id IS NOT DISTINCT FROM c.user_id AND df.term = c.term
        JOIN keyword_stats p ON p.workspace = %(ws)s AND p.user_key = coalesce(c.user_id, '')
        {"WHERE " + " AND ".join(filters) if filters else ""}
        GROUP BY c.seq, c.id
        ORDER BY score DESC, c.seq
        LIMIT %(k)s
    """
    if scope.user_id is None or plan == "exact":
        return exact, params
    rare = [f.replace("c.", "m.") for f in filters if f != "c.kept"]
    return rare_first(exact, rare + ([narrowed.removeprefix(" AND ")] if narrowed else [])), params


# One term's BM25 part of a posting ``p`` (``w``: qtf x idf of the term, ``st``: the partition).
_PART = "w * p.tf * (%(k1)s + 1.0) / (p.tf + %(k1)s * (1.0 - %(b)s + %(b)s * p.doc_len / st.avgdl))"
_POSTINGS = "keyword_postings p ON p.workspace = %(ws)s AND p.user_key = %(user_id)s"


def postings_first() -> str:
    """Keyword search of one (workspace, user) partition over ``keyword_postings`` (one row per
    active memory and term: seq, tf, length, id; read by index-only scans), reading the
    postings of common terms only for the rows that can reach the top ``k`` (max-score
    pruning, exact).

    Document frequencies come from ``keyword_terms``. The rarest terms whose frequencies add
    up to at most ``budget`` postings (at least the rarest one) are *rare*: all their
    postings are read and summed per memory (a partial score, a lower bound of its score).
    The others are *common*; one common term adds at most ``qtf x idf x (k1 + 1)``, all of
    them at most ``ub``. Let ``theta`` be the ``k``-th best partial score: a memory whose
    partial score plus ``ub`` is below ``theta`` cannot reach the top ``k``; each of the
    others gets its common terms' parts by index lookups of its (term, seq) postings, so its
    score is complete. A memory holding no rare term scores at most ``ub``: when the
    ``k``-th best complete score beats it (or no term is common) these are the exact top
    ``k``; otherwise every posting of every query term is summed instead (PostgreSQL decides
    once and runs only the chosen branch).
    """
    return f"""
        WITH st AS MATERIALIZED (
            SELECT n, greatest(total_len::float8 / greatest(n, 1), 1e-9) AS avgdl
            FROM keyword_stats WHERE workspace = %(ws)s AND user_key = %(user_id)s),
        q AS MATERIALIZED (
            SELECT t.term, d.df,
                   (t.qtf * ln(1.0 + (st.n - d.df + 0.5) / (d.df + 0.5)))::float8 AS w
            FROM unnest(%(words)s::text[], %(qtf)s::int[]) AS t(term, qtf)
            JOIN keyword_terms d ON d.workspace = %(ws)s AND d.user_key = %(user_id)s
                 AND d.term = t.term AND d.df > 0
            CROSS JOIN st),
        ranked AS MATERIALIZED (
            SELECT term, w, sum(df) OVER (ORDER BY df, term) <= %(budget)s
                   OR row_number() OVER (ORDER BY df, term) = 1 AS rare
            FROM q),
        common AS MATERIALIZED (SELECT term, w FROM ranked WHERE NOT rare),
        bound AS MATERIALIZED (
            SELECT coalesce(sum(w * (%(k1)s + 1.0)), 0) AS ub FROM common),
        part AS MATERIALIZED (
            SELECT p.seq, p.id, sum({_PART}) AS score
            FROM ranked r JOIN {_POSTINGS} AND p.term = r.term CROSS JOIN st
            WHERE r.rare
            GROUP BY p.seq, p.id),
        cut AS MATERIALIZED (
            SELECT coalesce((SELECT score FROM part ORDER BY score DESC
                             OFFSET (%(k)s - 1) LIMIT 1), -1) AS theta),
        scored AS MATERIALIZED (
            SELECT s.id, s.score + coalesce((
                SELECT sum({_PART}) FROM common c JOIN {_POSTINGS}
                    AND p.term = c.term AND p.seq = s.seq CROSS JOIN st), 0) AS score, s.seq
            FROM part s
            WHERE s.score + (SELECT ub FROM bound) >= (SELECT theta FROM cut)
            ORDER BY score DESC, s.seq
            LIMIT %(k)s),
        decided AS MATERIALIZED (
            SELECT (SELECT ub FROM bound) = 0
                   OR (count(*) = %(k)s AND min(score) > (SELECT ub FROM bound)) AS ok
            FROM scored)
        SELECT id, score, seq FROM scored WHERE (SELECT ok FROM decided)
        UNION ALL
        SELECT * FROM (
            SELECT p.id, sum({_PART}) AS score, p.seq
            FROM q JOIN {_POSTINGS} AND p.term = q.term CROSS JOIN st
            WHERE NOT (SELECT ok FROM decided)
            GROUP BY p.seq, p.id
            ORDER BY score DESC, p.seq
            LIMIT %(k)s) e
        ORDER BY score DESC, seq
    """


def rare_first(exact: str, filters: list[str]) -> str:
    """Keyword search of one (workspace, user) partition that reads the rows of common terms
    only when they can reach the top ``k`` (max-score pruning, exact).

    The document frequency of each query term comes from ``keyword_terms`` (no count over the
    rows). The rarest terms whose frequencies add up to at most ``budget`` rows (at least the
    rarest one) are *rare*; their rows are found through the GIN index and scored in full
    (every query term). A row holding no rare term scores at most the sum of the common terms'
    upper bounds, ``qtf x idf x (k1 + 1)``. When the ``k``-th best scored row beats that bound
    (or no term is common) the scored rows are the exact top ``k``; otherwise ``exact`` (the
    plain query over every matching row) runs instead: PostgreSQL evaluates the choice once
    and runs only the chosen branch.
    """
    extra = "".join(f" AND {f}" for f in filters)
    return f"""
        WITH st AS MATERIALIZED (
            SELECT n, greatest(total_len::float8 / greatest(n, 1), 1e-9) AS avgdl
            FROM keyword_stats WHERE workspace = %(ws)s AND user_key = %(user_id)s),
        q AS MATERIALIZED (
            SELECT t.term, t.qtf, t.lit, d.df,
                   ln(1.0 + (st.n - d.df + 0.5) / (d.df + 0.5)) AS idf
            FROM unnest(%(words)s::text[], %(qtf)s::int[], %(lits)s::text[]) AS t(term, qtf, lit)
            JOIN keyword_terms d ON d.workspace = %(ws)s AND d.user_key = %(user_id)s
                 AND d.term = t.term AND d.df > 0
            CROSS JOIN st),
        ranked AS MATERIALIZED (
            SELECT q.*, sum(df) OVER (ORDER BY df, term) AS cum,
                   row_number() OVER (ORDER BY df, term) AS pos FROM q),
        rare AS MATERIALIZED (SELECT * FROM ranked WHERE cum <= %(budget)s OR pos = 1),
        bound AS MATERIALIZED (
            SELECT coalesce(sum(qtf * idf * (%(k1)s + 1.0)), 0) AS ub
            FROM ranked WHERE term NOT IN (SELECT term FROM rare)),
        tsq AS MATERIALIZED (SELECT string_agg(lit, ' | ')::tsquery AS tsq FROM rare),
        scored AS MATERIALIZED (
            SELECT m.id, sum(
                q.qtf * q.idf * cardinality(u.positions) * (%(k1)s + 1.0)
                / (cardinality(u.positions) + %(k1)s * (1.0 - %(b)s + %(b)s * m.doc_len
                    / st.avgdl))
            ) AS score, m.seq
            FROM memories m CROSS JOIN LATERAL unnest(m.terms) AS u
            JOIN q ON q.term = u.lexeme
            CROSS JOIN st
            WHERE m.workspace = %(ws)s AND m.user_id = %(user_id)s AND m.status = 'active'
              AND m.terms @@ (SELECT tsq FROM tsq){extra}
            GROUP BY m.seq, m.id
            ORDER BY score DESC, m.seq
            LIMIT %(k)s),
        decided AS MATERIALIZED (
            SELECT (SELECT ub FROM bound) = 0
                   OR (count(*) = %(k)s AND min(score) > (SELECT ub FROM bound)) AS ok
            FROM scored)
        SELECT id, score, seq FROM scored WHERE (SELECT ok FROM decided)
        UNION ALL
        SELECT * FROM ({exact}) e WHERE NOT (SELECT ok FROM decided)
        ORDER BY score DESC, seq
    """

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
from collections.abc import Sequence
from typing import Any

from ...models import Scope

__all__ = ["RARE_BUDGET", "keyword_query", "postings_first", "quote_lexeme", "rare_first"]

# Rows of its rarest terms keyword search scores before it decides whether the common terms
# can matter (at least 20 x k).
RARE_BUDGET = 2000


def quote_lexeme(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def keyword_query(
    scope: Scope,
    query_terms: Sequence[str],
    k: int,
    *,
    k1: float,
    b: float,
    narrowed: str = "",
    narrow_params: dict[str, Any] | None = None,
    plan: str = "",
) -> tuple[str, dict[str, Any]] | None:
    """The statement of ``keyword_search`` (rows ``id, score, seq``, best first) of a text's
    index terms (``query_terms``, as :func:`~engrammar.recall.text.terms` finds them) and its
    parameters; None when there is no term or ``k`` is 0. ``narrowed`` is a recall
    filter's condition on alias ``m`` (`` AND ...``), its parameters ``narrow_params``.
    ``plan`` forces a statement where it applies (``"exact"``, ``"rare"``: to compare the
    pruned statements with the exact one), else the first that applies is used."""
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
    active memory and term: seq, tf, length; read by index-only scans; the top ``k``'s ids
    come from ``memories`` by ``seq``) that reads the postings of common terms only where
    they can change the top ``k`` (max-score pruning in two passes, exact).

    Document frequencies come from ``keyword_terms``; one term adds at most its bound
    ``qtf x idf x (k1 + 1)`` to a memory's score. The rarest terms whose frequencies add up
    to at most ``budget`` postings (at least the rarest one) are *rare*, the others *common*.

    1. Every posting of the rare terms is read and summed per memory (a partial score, a
       lower bound). With ``theta0`` the ``k``-th best partial score, a memory whose partial
       score plus all common bounds is below ``theta0`` cannot reach the top ``k``; the
       others get their common terms' parts by index lookups of their (term, seq) postings.
       The ``k``-th best of these complete scores, ``theta``, is a lower bound of the true
       ``k``-th best score (-1 when fewer than ``k`` memories hold a rare term).
    2. A memory holding no rare term scores only common terms' parts. The common terms of
       the smallest bounds whose bounds add up to less than ``theta`` are *non-essential*: a
       memory holding only those scores below ``theta`` and is left out. The postings of the
       other (*essential*) common terms are read for the memories of no rare term, their
       non-essential parts looked up where they can still reach ``theta``.

    The top ``k`` of both passes' complete scores is the exact top ``k``. Each pass sums a
    memory's parts in its own order, so the scores of the head (within 1e-9 of the ``k``-th)
    are summed again, every memory's parts in term order: memories of equal BM25 scores get
    equal floats and are ordered by ``seq``, as the exact statement orders them. When the first
    pass's top beats every common bound no essential term is left and pass 2 reads nothing;
    at worst (``theta`` -1) every posting of every common term is read once. ``theta0`` and
    ``theta`` are lowered by 1e-9 so that a float sum's last bit never leaves out a tie.
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
            SELECT term, w, w * (%(k1)s + 1.0) AS ub,
                   sum(df) OVER (ORDER BY df, term) <= %(budget)s
                   OR row_number() OVER (ORDER BY df, term) = 1 AS rare
            FROM q),
        common AS MATERIALIZED (SELECT term, w, ub FROM ranked WHERE NOT rare),
        part AS MATERIALIZED (
            SELECT p.seq, sum({_PART}) AS score
            FROM ranked r JOIN {_POSTINGS} AND p.term = r.term CROSS JOIN st
            WHERE r.rare
            GROUP BY p.seq),
        short AS MATERIALIZED (
            SELECT * FROM part
            WHERE score + (SELECT coalesce(sum(ub), 0) FROM common) >= coalesce(
                (SELECT score FROM part ORDER BY score DESC OFFSET (%(k)s - 1) LIMIT 1), -1)
                - 1e-9),
        pass1 AS MATERIALIZED (
            SELECT s.seq, s.score + coalesce(c.score, 0) AS score FROM short s
            LEFT JOIN (
                SELECT p.seq, sum({_PART}) AS score
                FROM common c JOIN {_POSTINGS} AND p.term = c.term
                     AND p.seq = ANY((SELECT array_agg(seq) FROM short)::bigint[])
                CROSS JOIN st GROUP BY p.seq) c ON c.seq = s.seq),
        cut AS MATERIALIZED (
            SELECT coalesce((SELECT score FROM pass1 ORDER BY score DESC
                             OFFSET (%(k)s - 1) LIMIT 1), -1) - 1e-9 AS theta),
        essential AS MATERIALIZED (
            SELECT term, w, sum(ub) OVER (ORDER BY ub, term) >= (SELECT theta FROM cut) AS ess
            FROM common),
        part2 AS MATERIALIZED (
            SELECT p.seq, sum({_PART}) AS score
            FROM essential e JOIN {_POSTINGS} AND p.term = e.term CROSS JOIN st
            WHERE e.ess AND NOT EXISTS (SELECT 1 FROM part x WHERE x.seq = p.seq)
            GROUP BY p.seq),
        short2 AS MATERIALIZED (
            SELECT * FROM part2
            WHERE score + (SELECT coalesce(sum(c.ub), 0) FROM common c JOIN essential e
                           ON e.term = c.term AND NOT e.ess) >= (SELECT theta FROM cut)),
        pass2 AS MATERIALIZED (
            SELECT s.seq, s.score + coalesce(c.score, 0) AS score FROM short2 s
            LEFT JOIN (
                SELECT p.seq, sum({_PART}) AS score
                FROM essential e JOIN {_POSTINGS} AND p.term = e.term
                     AND p.seq = ANY((SELECT array_agg(seq) FROM short2)::bigint[])
                CROSS JOIN st WHERE NOT e.ess GROUP BY p.seq) c ON c.seq = s.seq),
        found AS MATERIALIZED (SELECT * FROM pass1 UNION ALL SELECT * FROM pass2),
        head AS MATERIALIZED (
            SELECT seq FROM found WHERE score >= coalesce((
                SELECT score FROM found ORDER BY score DESC OFFSET (%(k)s - 1) LIMIT 1), -1)
                - 1e-9),
        summed AS MATERIALIZED (
            SELECT p.seq, sum({_PART} ORDER BY p.term) AS score
            FROM q JOIN {_POSTINGS} AND p.term = q.term
                 AND p.seq = ANY((SELECT array_agg(seq) FROM head)::bigint[])
            CROSS JOIN st GROUP BY p.seq
            ORDER BY score DESC, p.seq LIMIT %(k)s)
        SELECT m.id, x.score, x.seq FROM summed x
        JOIN memories m ON m.workspace = %(ws)s AND m.seq = x.seq
        ORDER BY x.score DESC, x.seq
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

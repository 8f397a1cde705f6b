"""Keyword search of the PostgreSQL store: the rare-first BM25 statement (exact top k)."""

from __future__ import annotations

__all__ = ["rare_first"]


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

"""PostgreSQL keyword search: the postings statement's top k against the exact BM25 statement
On every LoCoMo question, with the latency of each statement side by side.

    python bench/pg_keyword_topk.py [--n 10000] [--k 100] [--url URL] [--out FILE]

Fills a throwaway server (or uses ``--url``, a database this script filled before) with
LoCoMo's rows twice: ``--n`` rows in ONE user scope ``u`` (beyond LoCoMo's ~10,000 rows,
copies of its turns, as bench/pg_scope.py builds them) and each conversation's own rows in
its own scope (the conversation's id). Vectors are random (8 dimensions): keyword search does
not read them. Then for every LoCoMo question, asked in its conversation's scope, and every
distinct question asked in scope ``u``, the three statements of
``postgres_keyword.keyword_query`` run one after the other (order rotating):

* ``exact``: every matching memory row, its terms unnested (the reference);
* ``rare``: main's statement before bounded top-k (max-score pruning over the memory rows);
* ``postings``: the statement recall uses now (index-only postings, rare terms first).

Reported: how many top 10s and top ``--k``s equal the exact one (ids in order; "up to ties":
ids differ only among rows whose exact scores are equal within 1e-9, which the float sums'
order may swap), the largest score difference, how often each pruned statement fell back to
reading every matching row, and p50 / p95 of each statement's client-side time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

PLANS = ("exact", "rare", "postings")
TOL = 1e-9


def fill(url: str, data: Path, n: int) -> None:
    import numpy as np

    from engrammar.store import NewMemory
    from engrammar.store.postgres.store import PostgresStore
    from store_bench import locomo_rows

    rows, _ = locomo_rows(data, max(n, 10_000))
    store = PostgresStore(url, pool_size=2)
    store.check_embedder("synthetic", 8)
    vecs = np.random.default_rng(1).normal(size=(len(rows), 8)).astype(np.float32)
    mems: list[Any] = []
    for i, (user, session, kind, text) in enumerate(rows):
        if i < n:
            mems.append(NewMemory(f"u{i}", "default", "u", None, session, "user", text, kind,
                                  float(i), {}, f"u{i}", vecs[i]))  # fmt: skip
        if "-copy" not in user:
            mems.append(NewMemory(f"c{i}", "default", user, None, session, "user", text, kind,
                                  float(i), {}, f"c{i}", vecs[i]))  # fmt: skip
    t = time.perf_counter()
    for b in range(0, len(mems), 2000):
        store.add_memories(mems[b : b + 2000])
    print(f"filled {len(mems)} memories in {time.perf_counter() - t:.0f} s", flush=True)
    store.close()
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def compare(exact: list[Any], other: list[Any]) -> str:
    """Returns "same" (ids in order), "ties" (ids differ only among equal exact scores) or "differ"."""
    if [r[0] for r in exact] == [r[0] for r in other]:
        return "same"
    if len(exact) != len(other):
        return "differ"
    for a, b in zip(exact, other, strict=True):
        if abs(float(a[1]) - float(b[1])) > TOL * max(1.0, abs(float(a[1]))):
            return "differ"
    # Scores agree position by position: the ids of each run of equal scores must agree,
    # except the last run when the cut at k splits it.
    runs: list[list[int]] = [[0]]
    for i in range(1, len(exact)):
        if abs(float(exact[i][1]) - float(exact[runs[-1][0]][1])) <= TOL:
            runs[-1].append(i)
        else:
            runs.append([i])
    for run in runs[:-1]:
        if {exact[i][0] for i in run} != {other[i][0] for i in run}:
            return "differ"
    return "ties"


def branch(conn: Any, sql: str, params: dict[str, Any]) -> bool | None:
    """Whether a pruned statement kept to its first pass (True) or read more: for ``rare``,
    every matching row; for ``postings``, the postings of a common term (its second pass)."""
    for final, probe in (
        ("SELECT id, score, seq FROM scored WHERE", "SELECT ok FROM decided"),
        (
            "SELECT m.id, x.score, x.seq FROM summed x",
            "SELECT NOT bool_or(ess) FROM essential",
        ),
    ):
        head, sep, _ = sql.partition(final)
        if sep:
            row = conn.execute(head + probe, params).fetchone()
            return row[0] is None or bool(row[0])
    return None


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def run(url: str, data: Path, k: int, limit: int) -> str:
    import psycopg

    from engrammar import Config
    from engrammar.models import Scope
    from engrammar.recall.text import terms
    from engrammar.store.postgres.keyword import keyword_query
    from store_bench import locomo_rows

    config = Config()
    _, questions = locomo_rows(data, 10)
    asked = [(u, q) for u, q in questions] + [
        ("u", q) for q in dict.fromkeys(q for _, q in questions)
    ]
    if limit:
        asked = asked[:limit] + [a for a in asked if a[0] == "u"][:limit]
    conn = psycopg.connect(url, autocommit=True)
    out = []
    for label, group in (
        ("each conversation's scope", [a for a in asked if a[0] != "u"]),
        ("one scope of all rows (u)", [a for a in asked if a[0] == "u"]),
    ):
        times: dict[str, list[float]] = {p: [] for p in PLANS}
        top10: dict[str, dict[str, int]] = {p: {} for p in PLANS[1:]}
        topk: dict[str, dict[str, int]] = {p: {} for p in PLANS[1:]}
        kept: dict[str, int] = {p: 0 for p in PLANS[1:]}
        maxdiff = 0.0
        rows_read = []
        for i, (user, question) in enumerate(group):
            scope = Scope(config.workspace, user)
            stmts = {}
            for plan in PLANS:
                built = keyword_query(
                    scope, terms(question), k, k1=config.bm25_k1, b=config.bm25_b, plan=plan
                )
                if built is None:
                    break
                stmts[plan] = built
            if len(stmts) < len(PLANS):
                continue
            res: dict[str, list[Any]] = {}
            order = PLANS[i % 3 :] + PLANS[: i % 3]
            for plan in order:
                sql, params = stmts[plan]
                t = time.perf_counter()
                res[plan] = conn.execute(sql, params).fetchall()
                times[plan].append((time.perf_counter() - t) * 1000)
            for plan in PLANS[1:]:
                c10 = compare(res["exact"][:10], res[plan][:10])
                ck = compare(res["exact"], res[plan])
                top10[plan][c10] = top10[plan].get(c10, 0) + 1
                topk[plan][ck] = topk[plan].get(ck, 0) + 1
                kept[plan] += bool(branch(conn, *stmts[plan]))
                if len(res[plan]) == len(res["exact"]):
                    maxdiff = max(
                        [maxdiff]
                        + [abs(a[1] - b[1]) for a, b in zip(res["exact"], res[plan], strict=True)]
                    )
            params = stmts["exact"][1]
            rows_read.append(
                conn.execute(
                    "SELECT coalesce(sum(df), 0) FROM keyword_terms WHERE workspace = %(ws)s "
                    "AND user_key = %(user_id)s AND term = ANY(%(words)s)",
                    params,
                ).fetchone()[0]
            )
        n = len(times["exact"])
        if not n or not any(rows_read):  # no such scope in this store
            continue
        out.append(f"\n{label}: {n} questions, k = {k}; postings of the query terms p50 "
                   f"{statistics.median(rows_read):.0f} (every matching row's)\n")  # fmt: skip
        out.append("| statement | p50 ms | p95 ms | top 10 = exact (same / up to ties / differ) "
                   f"| top {k} = exact | first pass only |")  # fmt: skip
        out.append("|---|---|---|---|---|---|")
        for plan in PLANS:
            cells = ["", "", ""]
            if plan != "exact":
                t10, tk = top10[plan], topk[plan]
                cells = [
                    f"{t10.get('same', 0)} / {t10.get('ties', 0)} / {t10.get('differ', 0)}",
                    f"{tk.get('same', 0)} / {tk.get('ties', 0)} / {tk.get('differ', 0)}",
                    f"{kept[plan]} of {n}",
                ]
            out.append(f"| {plan} | {statistics.median(times[plan]):.2f} | "
                       f"{pct(times[plan], 95):.2f} | " + " | ".join(cells) + " |")  # fmt: skip
        out.append(f"\nlargest score difference against exact: {maxdiff:.2e}")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=str(ROOT / "../shared/data/locomo10.json"))
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=100, help="hits asked for (recall's candidate_pool)")
    ap.add_argument("--url", default="", help="a database this script filled before")
    ap.add_argument("--limit", type=int, default=0, help="ask only this many questions a scope")
    ap.add_argument("--out", default="", help="append the report to this file")
    args = ap.parse_args()
    import pg

    server = None
    url = args.url
    if not url:
        bindir, reason = pg.find_bindir()
        if bindir is None:
            sys.exit(f"no PostgreSQL server: {reason}")
        server = pg.PgServer(bindir, options="-c synchronous_commit=off -c shared_buffers=512MB")
        server.start()
        url = server.new_database()
        fill(url, Path(args.data), args.n)
    try:
        from engrammar.store.postgres.store import PostgresStore

        PostgresStore(url, pool_size=1).close()  # migrations (a store filled by older code)
        started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        load = os.getloadavg()
        report = run(url, Path(args.data), args.k, args.limit)
        head = (f"pg_keyword_topk --n {args.n} --k {args.k}: {started}, load "
                f"{load[0]:.1f} -> {os.getloadavg()[0]:.1f}")  # fmt: skip
        print(head + report, flush=True)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as f:
                f.write(head + report + "\n")
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()

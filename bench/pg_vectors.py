"""PostgreSQL per-user vector search: recall@10 against exact search, and latency.

    python bench/pg_vectors.py --sizes 100000            # 100 users, one throwaway server
    python bench/pg_vectors.py --sizes 100000 --users 1  # one user holding every memory
    python bench/pg_vectors.py --sizes 1000000 --pg-url postgresql://... --reuse

Loads bench/store_bench.py's synthetic memories (clustered 384-d unit vectors, Zipf words;
``--users`` users x 4 agents in one workspace) through ``store.bulk_load()``, then asks, for
queries spread over the users:

* the vector step alone, ``store.vector_search(user scope, q, k)`` for k = 10 and k = 100 (what
  ``Memory.recall`` asks): p50 / p95 ms, and recall@10 of its first ten hits against exact
  search (the same scope's brute-force cosine top 10, computed in numpy from the vectors
  loaded);
* the store-level search of store_bench (vector top-100 + BM25 top-100 in the user scope).

``--reuse`` keeps a database loaded by an earlier run (``--pg-url``): the vectors are
regenerated from the same seed for the exact answers, nothing is reloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from _common import start_pg_server  # noqa: E402
from engrammar.models import Scope  # noqa: E402
from engrammar.store.postgres.store import PostgresStore  # noqa: E402
from store_bench import DIM, Synthetic, machine, pct, timed_each  # noqa: E402

AGENTS = 4
BATCH = 1000


def user_of(i: int, users: int) -> str:
    return f"u{i % users:03d}"


def load(store: PostgresStore, gen: Synthetic, size: int, users: int, reuse: bool) -> float:
    """Load ``size`` synthetic memories (unless ``reuse``); seconds spent, 0 when reused."""
    have = store.stats(Scope("bench"))["memories"] if reuse else 0
    if reuse and have >= size:
        return 0.0
    t0 = time.perf_counter()
    gen_s = 0.0
    with store.bulk_load():
        for start in range(have, size, BATCH):
            t = time.perf_counter()
            rows = gen.rows(start, min(BATCH, size - start), users, AGENTS)
            gen_s += time.perf_counter() - t
            store.add_memories(rows)
            if start and start % 100_000 == 0:
                print(f"  loaded {start:,}", flush=True)
    return time.perf_counter() - t0 - gen_s


def user_vectors(gen: Synthetic, size: int, users: int, wanted: set[str]) -> dict[str, Any]:
    """The loaded vectors and ids of the ``wanted`` users (regenerated from the seed)."""
    vecs: dict[str, list[np.ndarray]] = {u: [] for u in wanted}
    ids: dict[str, list[np.ndarray]] = {u: [] for u in wanted}
    for start in range(0, size, BATCH):
        n = min(BATCH, size - start)
        rng = np.random.default_rng((gen.seed, start))
        v = gen.vectors(rng, n)  # the same draws as Synthetic.rows (vectors come first)
        idx = np.arange(start, start + n)
        owners = idx % users
        for u in wanted:
            sel = owners == int(u[1:])
            vecs[u].append(v[sel])
            ids[u].append(idx[sel])
    return {u: (np.concatenate(vecs[u]), np.concatenate(ids[u])) for u in wanted}


def exact_top(vecs: np.ndarray, ids: np.ndarray, q: np.ndarray, k: int) -> list[str]:
    sims = vecs @ q
    top = np.argpartition(-sims, k)[:k]
    top = top[np.argsort(-sims[top], kind="stable")]
    return [f"s{ids[i]:08d}" for i in top]


# main's vector query before the buckets (commit 7b14fd0): one global HNSW index, filtered.
GLOBAL_SQL = (
    "WITH hits AS MATERIALIZED (SELECT id, embedding <=> %(q)s AS distance FROM memories "
    "WHERE workspace = %(ws)s AND user_id = %(u)s AND status = 'active' "
    "ORDER BY embedding <=> %(q)s LIMIT %(k)s), "
    "chunk_hits AS MATERIALIZED (SELECT c.memory_id AS id, min(c.embedding <=> %(q)s) AS distance "
    "FROM memory_chunks c JOIN memories m ON m.workspace = c.workspace AND m.id = c.memory_id "
    "AND m.status = 'active' WHERE c.workspace = %(ws)s AND c.user_id = %(u)s "
    "GROUP BY c.memory_id ORDER BY 2 LIMIT %(k)s) "
    "SELECT id, 1 - min(distance) FROM (SELECT * FROM hits UNION ALL SELECT * FROM chunk_hits) "
    "AS both_hits GROUP BY id ORDER BY min(distance), id LIMIT %(k)s"
)


class GlobalIndex:
    """``vector_search`` as main asked it (the global index only), on one connection set up
    like the store's (same ef_search, iterative scans, custom plans)."""

    def __init__(self, url: str, ef_search: int) -> None:
        import psycopg

        from engrammar.store.postgres.search import Vector, register_vector

        self.conn = psycopg.connect(url, autocommit=True)
        register_vector(self.conn)
        self.conn.execute(
            "SELECT set_config('hnsw.ef_search', %s, false), "
            "set_config('hnsw.iterative_scan', 'relaxed_order', false), "
            "set_config('plan_cache_mode', 'force_custom_plan', false)",
            (str(ef_search),),
        )
        self.vector = Vector

    def vector_search(self, scope: Scope, q: np.ndarray, k: int) -> list[tuple[str, float]]:
        args = {"q": self.vector(q), "ws": scope.workspace, "u": scope.user_id, "k": k}
        return [(r[0], r[1]) for r in self.conn.execute(GLOBAL_SQL, args)]


def measure(
    store: Any, gen: Synthetic, size: int, users: int, queries: int, keyword: Any = None
) -> dict[str, Any]:
    qrng = np.random.default_rng(99)
    qvecs = gen.vectors(qrng, queries)
    qtexts = [" ".join(gen.words[qrng.integers(50, 5000, size=3)]) for _ in range(queries)]
    asked = [user_of(i * 7, users) for i in range(queries)]  # spread over the users
    t = time.perf_counter()
    truth_vecs = user_vectors(gen, size, users, set(asked))
    truth = [exact_top(*truth_vecs[u], qvecs[i], 10) for i, u in enumerate(asked)]
    del truth_vecs
    print(f"  exact answers in {time.perf_counter() - t:.0f} s", flush=True)
    out: dict[str, Any] = {}
    for i in range(queries):  # warm-up: every query once (each pooled connection plans cold first)
        store.vector_search(Scope("bench", asked[i]), qvecs[i], 100)
    for k in (10, 100):
        got: list[list[str]] = [[] for _ in range(queries)]

        def one(i: int, k: int = k, got: list[list[str]] = got) -> None:
            got[i] = [h[0] for h in store.vector_search(Scope("bench", asked[i]), qvecs[i], k)]

        lat = timed_each(one, range(queries))
        recall = [len(set(g[:10]) & set(t)) / 10 for g, t in zip(got, truth, strict=True)]
        out[f"vector_k{k}"] = {
            "p50_ms": pct(lat, 50),
            "p95_ms": pct(lat, 95),
            "recall_at_10": float(np.mean(recall)),
            "recall_at_10_min": float(np.min(recall)),
        }

    def search(i: int) -> None:
        scope = Scope("bench", asked[i])
        store.vector_search(scope, qvecs[i], 100)
        (keyword or store).keyword_search(scope, qtexts[i], 100)

    def words(i: int) -> None:
        (keyword or store).keyword_search(Scope("bench", asked[i]), qtexts[i], 100)

    lat = timed_each(search, range(queries))
    out["store_search"] = {"p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95)}
    lat = timed_each(words, range(queries))
    out["keyword_k100"] = {"p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="100000")
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--pg-url", default="", help="an existing database (else a throwaway)")
    ap.add_argument("--reuse", action="store_true", help="keep what --pg-url holds already")
    ap.add_argument("--ef-search", type=int, default=100)
    ap.add_argument("--out", default="", help="a JSON file for the results")
    ap.add_argument(
        "--global-index", action="store_true", help="also main's query (global HNSW index only)"
    )
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    info = {
        "machine": machine(),
        "command": "python " + " ".join(sys.argv),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average": os.getloadavg(),
    }
    server = None
    url = args.pg_url
    if not url:
        server = start_pg_server()
        url = server.new_database()
    results: dict[str, Any] = {}
    try:
        t = time.perf_counter()  # opening migrates an older store (m013 builds the buckets)
        store = PostgresStore(url, pool_size=4, hnsw_ef_search=args.ef_search)
        info["open_s"] = time.perf_counter() - t
        store.check_embedder("synthetic", DIM)
        gen = Synthetic()
        for size in (int(s) for s in args.sizes.split(",") if s):
            load_s = load(store, gen, size, args.users, args.reuse)
            res = {"load_s": load_s, **measure(store, gen, size, args.users, args.queries)}
            if args.global_index:
                old = GlobalIndex(url, args.ef_search)
                res["global_index"] = measure(old, gen, size, args.users, args.queries, store)
                old.conn.close()
            results[str(size)] = res
            print(f"{size:,} memories, {args.users} users: {json.dumps(res)}", flush=True)
        store.close()
    finally:
        if server is not None:
            server.stop()
    info["load_average_end"] = os.getloadavg()
    if args.out:
        Path(args.out).write_text(json.dumps({"info": info, "results": results}, indent=1))


if __name__ == "__main__":
    main()

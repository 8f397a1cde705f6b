"""Where a PostgreSQL recall's time goes at N memories in one user scope.

    python bench/pg_profile.py [--n 10000] [--recalls 50] [--dir DIR]

Fills a throwaway server through the bulk path (``pg_bulk_side_by_side.bulk_rows``: sequence
and semantic edges), runs warm-up recalls, then ``--recalls`` recalls of pg_scope's questions
timing each exchange, then the same recalls again with ``auto_explain`` (ANALYZE, BUFFERS,
nested statements) logging every statement's plan to DIR/plans.log, and a cProfile of the
client side to DIR/client.prof.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=str(ROOT / "../shared/data/locomo10.json"))
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--recalls", type=int, default=50)
    ap.add_argument("--dir", default="/tmp/pg_profile")
    ap.add_argument("--url", help="profile this filled store instead (user u); no plans log")
    args = ap.parse_args()
    import psycopg

    import pg
    from engrammar import Config, Memory
    from engrammar.embed.onnx import MiniLMEmbedder
    from pg_bulk_side_by_side import bulk_add, bulk_rows
    from pg_scope import texts_and_vectors
    from store_bench import Precomputed

    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    rows, qs, table, _ = texts_and_vectors(Path(args.data), args.n)
    embedder = Precomputed(MiniLMEmbedder(), table)
    if args.url:
        profile(args, args.url, embedder, qs)
        return
    bindir, reason = pg.find_bindir()
    if bindir is None:
        sys.exit(f"no PostgreSQL server: {reason}")
    server = pg.PgServer(
        bindir,
        options="-c synchronous_commit=off -c shared_buffers=512MB "
        "-c session_preload_libraries=auto_explain",
    )
    server.start()
    try:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE filled")
        url = server.url("filled")
        mem = Memory(Config(store=url, embed_cache_size=0), embedder=embedder)
        print(f"bulk fill {bulk_add(mem, *bulk_rows(rows, table)):.0f} s", flush=True)
        mem.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")
        profile(args, url, embedder, qs)
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute(
                "ALTER DATABASE filled SET auto_explain.log_min_duration = 0; "
                "ALTER DATABASE filled SET auto_explain.log_analyze = on; "
                "ALTER DATABASE filled SET auto_explain.log_buffers = on; "
                "ALTER DATABASE filled SET auto_explain.log_nested_statements = on"
            )
        log = server.root / "log"
        start = log.stat().st_size
        mem = Memory(Config(store=url, embed_cache_size=0), embedder=embedder)
        for q in qs[:: max(1, len(qs) // args.recalls)][:5]:
            mem.recall(q, user_id="u")
        mem.close()
        (out / "plans.log").write_text(log.read_text(errors="replace")[start:])
        print(f"plans: {out / 'plans.log'}")
    finally:
        server.stop()


def profile(args: Any, url: str, embedder: Any, qs: list[str]) -> None:
    """Recalls on ``url``: each exchange's time, a cProfile, each statement by hand."""
    from engrammar import Config, Memory
    from engrammar.store.postgres.store import PostgresStore

    out = Path(args.dir)
    asked = qs[:: max(1, len(qs) // args.recalls)][: args.recalls]
    times: dict[str, list[float]] = {}
    original = PostgresStore._tx

    def tx(self: Any, what: str, *a: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        try:
            return original(self, what, *a, **kw)
        finally:
            times.setdefault(what, []).append(time.perf_counter() - t)

    PostgresStore._tx = tx  # type: ignore[method-assign]
    mem = Memory(Config(store=url, embed_cache_size=0), embedder=embedder)
    for q in asked[:10]:
        mem.recall(q, user_id="u")
    times.clear()
    lat = []
    prof = cProfile.Profile()
    for q in asked:
        t = time.perf_counter()
        prof.enable()
        mem.recall(q, user_id="u")
        prof.disable()
        lat.append(time.perf_counter() - t)
    prof.dump_stats(str(out / "client.prof"))
    print(f"recall p50 {statistics.median(lat) * 1000:.1f} ms ({len(lat)} recalls)")
    for what, v in sorted(times.items(), key=lambda x: -sum(x[1])):
        print(f"  {what}: n={len(v)} p50 {statistics.median(v) * 1000:.1f} ms "
              f"total {sum(v) * 1000:.0f} ms")  # fmt: skip
    pstats.Stats(str(out / "client.prof")).sort_stats("cumulative").print_stats(25)
    statements(mem, asked[:5], url)
    mem.close()
    PostgresStore._tx = original  # type: ignore[method-assign]


def statements(mem: Any, asked: list[str], url: str) -> None:
    """The statements of ``asked``'s recalls, each run again by hand: planning and execution
    time in the server (EXPLAIN ANALYZE, timing off) and the client's time for it (binary
    rows, fetched), p50 over the recalls."""
    import psycopg

    seen: list[tuple[str, Any, bool]] = []
    original = psycopg.Cursor.execute

    def execute(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
        seen.append((str(query) if isinstance(query, str) else query.as_string(self), params,
                     self.format == psycopg.pq.Format.BINARY))  # fmt: skip
        return original(self, query, params, **kw)

    psycopg.Cursor.execute = execute  # type: ignore[method-assign]
    try:
        for q in asked:
            mem.recall(q, user_id="u")
    finally:
        psycopg.Cursor.execute = original  # type: ignore[method-assign]
    got: dict[str, list[tuple[float, float, float, int]]] = {}
    with psycopg.connect(url, autocommit=True, prepare_threshold=None) as conn:
        mem.store._configure(conn)
        for sql, params, binary in seen:
            head = " ".join(sql.split())[:60]
            if not head.upper().startswith(("SELECT", "WITH")) or "set_config" in head:
                continue
            plan = conn.execute("EXPLAIN (ANALYZE, TIMING OFF, SUMMARY, FORMAT JSON) " + sql,
                                params).fetchone()[0][0]  # fmt: skip
            cur = conn.cursor(binary=binary)
            t = time.perf_counter()
            n = len(cur.execute(sql, params).fetchall())
            took = time.perf_counter() - t
            got.setdefault(head, []).append(
                (plan["Planning Time"], plan["Execution Time"], took * 1000, n)
            )
    for head, v in sorted(got.items(), key=lambda x: -sum(r[2] for r in x[1])):
        print(f"{head!r}: n={len(v)} plan {statistics.median(r[0] for r in v):.1f} ms, "
              f"exec {statistics.median(r[1] for r in v):.1f} ms, client "
              f"{statistics.median(r[2] for r in v):.1f} ms, rows {statistics.median(r[3] for r in v)}")  # fmt: skip


if __name__ == "__main__":
    main()

"""SQLite and PostgreSQL stores side by side: insert throughput, recall latency with scope
filters, and throughput under 1, 4 and 16 concurrent clients.

    python bench/store_bench.py                       # 10k LoCoMo + 100k synthetic
    python bench/store_bench.py --sizes 100000,1000000 --load-budget 600

Parts:
1. **LoCoMo 10k** (real text, real MiniLM vectors): the turns, observations and session
   summaries of ../shared/data/locomo10.json (cycled under a second user id up to 10k), one
   user per conversation, one session id per session. Insert throughput (single client,
   batches of one session), then ``Memory.recall`` p50/p95 over the LoCoMo questions scoped to
   the conversation's user (and to user + session), query vectors pre-cached so that the model
   is not timed; then recall and add throughput with 1, 4 and 16 client threads.
2. **Synthetic** (clustered random unit vectors, 384-d; Zipf-distributed words): loaded in
   batches of 1000 up to each size (within ``--load-budget`` seconds per store: what was reached
   is reported), then store-level recall (vector top-100 + BM25 top-100, as ``Memory.recall``
   asks the store) p50/p95 with filters: user, user + agent, and the whole workspace.

PostgreSQL is a throwaway server started like the tests do (tests/pg.py) with fsync on and
synchronous_commit off (the durability of SQLite's WAL + synchronous=NORMAL), or ``--pg-url``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _common import start_pg_server  # noqa: E402
from engrammar import Config, Memory  # noqa: E402
from engrammar.models import Scope  # noqa: E402
from engrammar.store import NewMemory, Store  # noqa: E402
from engrammar.store.postgres.store import PostgresStore  # noqa: E402
from engrammar.store.sqlite.store import SQLiteStore  # noqa: E402

DIM = 384


# -- data ----------------------------------------------------------------------------------------
def locomo_rows(
    path: Path, n: int
) -> tuple[list[tuple[str, str, str, str]], list[tuple[str, str]]]:
    """(user_id, session_id, kind, text) rows and (user_id, question) pairs."""
    data = json.loads(path.read_text(encoding="utf-8"))
    turns: list[tuple[str, str, str, str]] = []
    extra: list[tuple[str, str, str, str]] = []
    questions: list[tuple[str, str]] = []
    for sample in data:
        user = str(sample["sample_id"])
        conv = sample["conversation"]
        for key, value in conv.items():
            if key.startswith("session_") and isinstance(value, list):
                turns += [(user, key, "message", t["text"]) for t in value if t.get("text")]
        for key, by_speaker in sample.get("observation", {}).items():
            session = key.removesuffix("_observation")
            for facts in by_speaker.values():
                extra += [(user, session, "fact", f[0]) for f in facts]
        for key, text in sample.get("session_summary", {}).items():
            extra.append((user, key.removesuffix("_summary"), "event", text))
        questions += [(user, q["question"]) for q in sample["qa"]]
    rows = turns + extra
    cycle = 0
    while len(rows) < n:
        cycle += 1
        rows += [(f"{u}-copy{cycle}", s, k, t) for u, s, k, t in turns][: n - len(rows)]
    return rows[:n], questions


class Synthetic:
    """Deterministic clustered vectors and Zipf text, generated in chunks."""

    def __init__(self, seed: int = 0, clusters: int = 2000, vocab: int = 20000) -> None:
        rng = np.random.default_rng(seed)
        self.centroids = rng.normal(size=(clusters, DIM)).astype(np.float32)
        self.centroids /= np.linalg.norm(self.centroids, axis=1, keepdims=True)
        self.words = np.array([f"w{i}x" for i in range(vocab)])
        ranks = np.arange(1, vocab + 1, dtype=np.float64)
        self.p = (1 / ranks) / (1 / ranks).sum()
        self.seed = seed

    def vectors(self, rng: np.random.Generator, n: int) -> np.ndarray:
        c = rng.integers(0, len(self.centroids), size=n)
        v = self.centroids[c] + 0.35 * rng.normal(size=(n, DIM)).astype(np.float32) / np.sqrt(DIM)
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)

    def texts(self, rng: np.random.Generator, n: int) -> list[str]:
        lengths = rng.integers(6, 30, size=n)
        flat = rng.choice(self.words, size=int(lengths.sum()), p=self.p)
        out, at = [], 0
        for length in lengths:
            out.append(" ".join(flat[at : at + length]))
            at += length
        return out

    def rows(self, start: int, n: int, users: int, agents: int) -> list[NewMemory]:
        rng = np.random.default_rng((self.seed, start))
        vecs, texts = self.vectors(rng, n), self.texts(rng, n)
        now = time.time()
        return [
            NewMemory(
                id=f"s{start + i:08d}",
                workspace="bench",
                user_id=f"u{(start + i) % users:03d}",
                agent_id=f"a{(start + i) % agents}",
                session_id=None,
                role="user",
                content=texts[i],
                kind="message",
                created_at=now,
                metadata={},
                dedup_key=f"s{start + i:08d}",
                embedding=vecs[i],
            )
            for i in range(n)
        ]


class Precomputed:
    """The real model's name and size, with the benchmark's query vectors computed up front."""

    def __init__(self, inner: Any, vectors: dict[str, np.ndarray]) -> None:
        self.inner, self.vectors = inner, vectors
        self.name, self.dim = inner.name, inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if all(t in self.vectors for t in texts):
            return np.stack([self.vectors[t] for t in texts])
        return np.asarray(self.inner.embed(texts))


# -- measuring -----------------------------------------------------------------------------------
def pct(values: Sequence[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))] * 1000


def timed(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def run_clients(clients: int, seconds: float, work: Callable[[int, int], int]) -> float:
    """Units of work per second done by ``clients`` threads in ``seconds``."""
    done = [0] * clients
    stop = time.perf_counter() + seconds
    errors: list[BaseException] = []

    def loop(c: int) -> None:
        i = 0
        try:
            while time.perf_counter() < stop:
                done[c] += work(c, i)
                i += 1
        except BaseException as exc:  # reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=loop, args=(c,)) for c in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return sum(done) / (time.perf_counter() - t0)


def open_store(kind: str, where: str) -> Store:
    if kind == "sqlite":
        return SQLiteStore(where)
    return PostgresStore(where, pool_size=20)


# -- parts ---------------------------------------------------------------------------------------
def bench_locomo(
    kind: str, where: str, rows: list[tuple[str, str, str, str]], vecs: np.ndarray,
    questions: list[tuple[str, str]], qvecs: dict[str, np.ndarray], embedder: Any,
    clients: list[int], seconds: float,
) -> dict[str, Any]:  # fmt: skip
    out: dict[str, Any] = {}
    config = Config(path=where) if kind == "sqlite" else Config(store=where, pool_size=20)
    mem = Memory(config, embedder=Precomputed(embedder, qvecs))
    store = mem.store
    # Insert: batches of one session, single client.
    batches: dict[tuple[str, str], list[int]] = {}
    for i, (user, session, _, _) in enumerate(rows):
        batches.setdefault((user, session), []).append(i)
    now = time.time()
    t0 = time.perf_counter()
    for (user, session), idx in batches.items():
        store.add_memories(
            [
                NewMemory(
                    f"l{i:06d}", "default", user, None, session, "user", rows[i][3], rows[i][2],
                    now, {}, f"l{i:06d}", vecs[i],
                )
                for i in idx
            ]
        )  # fmt: skip
    elapsed = time.perf_counter() - t0
    out["insert_per_s"] = len(rows) / elapsed
    # Recall latency (the full Memory.recall; query vectors come precomputed).
    present = {u for u, _ in batches}
    asked = [(u, q) for u, q in questions if u in present]
    sample = asked[:: max(1, len(asked) // 300)][:300]
    sessions = {u: [s for (uu, s) in batches if uu == u] for u, _ in sample}
    for user, q in sample[:20]:
        mem.recall(q, user_id=user)  # warm-up (SQLite builds its partition indexes here)
    lat_user = timed_each(lambda uq: mem.recall(uq[1], user_id=uq[0]), sample)
    lat_session = timed_each(
        lambda uq: mem.recall(uq[1], user_id=uq[0], session_id=sessions[uq[0]][0]), sample
    )
    out["recall_user_ms"] = (pct(lat_user, 50), pct(lat_user, 95))
    out["recall_user_session_ms"] = (pct(lat_session, 50), pct(lat_session, 95))
    # Concurrency: one Memory (one store handle, its pool) shared by the client threads.
    out["recall_qps"] = {}
    out["add_per_s"] = {}
    for c in clients:
        out["recall_qps"][c] = run_clients(
            c, seconds, lambda cl, i: (mem.recall(sample[(cl * 37 + i) % len(sample)][1],
                                                   user_id=sample[(cl * 37 + i) % len(sample)][0]),
                                       1)[1],
        )  # fmt: skip
        tag = f"{kind}{c}"

        def add(cl: int, i: int, tag: str = tag) -> int:
            base = (cl * 100_003 + i * 10) % len(rows)
            batch = [
                NewMemory(
                    f"c{tag}-{cl}-{i}-{j}", "default", f"client{cl}", None, None, "user",
                    rows[(base + j) % len(rows)][3], "message", time.time(), {},
                    f"c{tag}-{cl}-{i}-{j}", vecs[(base + j) % len(rows)],
                )
                for j in range(10)
            ]  # fmt: skip
            store.add_memories(batch)
            return len(batch)

        out["add_per_s"][c] = run_clients(c, seconds, add)
    mem.close()
    return out


def timed_each(fn: Callable[[Any], Any], items: Sequence[Any]) -> list[float]:
    out = []
    for item in items:
        t = time.perf_counter()
        fn(item)
        out.append(time.perf_counter() - t)
    return out


def bench_synthetic(
    kind: str, where: str, sizes: list[int], budget: float, users: int, agents: int
) -> dict[str, Any]:
    store = open_store(kind, where)
    store.check_embedder("synthetic", DIM)
    gen = Synthetic()
    out: dict[str, Any] = {"sizes": {}}
    loaded, load_time, batch = 0, 0.0, 1000
    qrng = np.random.default_rng(99)
    qvecs = gen.vectors(qrng, 200)
    # Query words from the middle of the Zipf curve, like the content words of a question
    # (the head plays the part of the stop words the analyser drops).
    qtexts = [" ".join(gen.words[qrng.integers(50, 5000, size=3)]) for _ in range(200)]
    for size in sizes:
        t_bulk = time.perf_counter()
        gen_time = 0.0
        with store.bulk_load():
            while loaded < size and time.perf_counter() - t_bulk - gen_time < budget:
                t = time.perf_counter()
                rows = gen.rows(loaded, min(batch, size - loaded), users, agents)
                gen_time += time.perf_counter() - t
                store.add_memories(rows)
                loaded += len(rows)
        load_time += time.perf_counter() - t_bulk - gen_time
        res: dict[str, Any] = {
            "loaded": loaded,
            "insert_per_s": loaded / load_time if load_time else 0.0,
            "load_s": load_time,
        }
        scopes = {
            "user": lambda i: Scope("bench", f"u{i % users:03d}"),
            "user+agent": lambda i: Scope("bench", f"u{i % users:03d}", f"a{i % agents}"),
            "workspace": lambda i: Scope("bench"),
        }
        for name, scope_of in scopes.items():
            n = 60 if name == "workspace" else 150

            def recall(i: int, scope_of: Callable[[int], Scope] = scope_of) -> None:
                scope = scope_of(i)
                store.vector_search(scope, qvecs[i % len(qvecs)], 100)
                store.keyword_search(scope, qtexts[i % len(qtexts)], 100)

            for i in range(users if name != "workspace" else 3):
                recall(i)  # warm-up: every user's partition once (SQLite loads it lazily)
            lat = timed_each(recall, range(n))
            res[name] = (pct(lat, 50), pct(lat, 95))
        if kind == "postgres":
            import psycopg

            with psycopg.connect(where) as conn:
                sizes_row = conn.execute(
                    "SELECT pg_relation_size('memories_embedding_hnsw'), "
                    "pg_total_relation_size('memories')"
                ).fetchone()
            assert sizes_row is not None
            res["hnsw_bytes_per_memory"] = sizes_row[0] / max(loaded, 1)
            res["table_bytes_per_memory"] = sizes_row[1] / max(loaded, 1)
        else:
            res["table_bytes_per_memory"] = Path(where).stat().st_size / max(loaded, 1)
        out["sizes"][size] = res
        print(f"  {kind} {size}: {res}", flush=True)
        if loaded < size:
            break
    store.close()
    return out


def embed_cached(embedder: Any, texts: list[str], queries: list[str]) -> tuple[Any, Any]:
    """The model's vectors, kept in the temp folder between runs (never in the repository)."""
    import hashlib

    key = hashlib.sha256("\x00".join([embedder.name, *texts, "\x01", *queries]).encode())
    cache = Path(tempfile.gettempdir()) / f"engrammar-bench-{key.hexdigest()[:16]}.npz"
    if cache.exists():
        data = np.load(cache)
        return data["texts"], data["queries"]
    t = time.perf_counter()
    vecs, qv = embedder.embed(texts), embedder.embed(queries)
    print(f"embedded {len(texts) + len(queries)} texts in {time.perf_counter() - t:.0f} s")
    np.savez(cache, texts=vecs, queries=qv)
    return vecs, qv


# -- report --------------------------------------------------------------------------------------
def machine() -> str:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} cores, "
        f"{mem_gb:.0f} GiB RAM, load average at start {os.getloadavg()[0]:.1f}; "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}"
    )


def report(args: argparse.Namespace, info: dict[str, Any], results: dict[str, Any]) -> str:
    kinds = ["sqlite", "postgres"]
    lines = [
        "# Store benchmark: SQLite vs PostgreSQL + pgvector",
        "",
        f"- machine: {info['machine']}",
        f"- PostgreSQL: {info['pg_version']} (pgvector {info['pgvector']}), {info['pg_how']}",
        f"- command: `{info['command']}`",
        f"- date: {info['date']}; total wall time {info['wall_s']:.0f} s",
        "",
    ]
    if "locomo" in results:
        lo = results["locomo"]
        lines += [
            f"## LoCoMo text, {info['locomo_n']} memories (real MiniLM vectors)",
            "",
            "| | SQLite | PostgreSQL |",
            "|---|---|---|",
            "| insert, 1 client (memories/s) | "
            + " | ".join(f"{lo[k]['insert_per_s']:.0f}" for k in kinds)
            + " |",
            "| recall p50 / p95, user scope (ms) | "
            + " | ".join("{:.1f} / {:.1f}".format(*lo[k]["recall_user_ms"]) for k in kinds)
            + " |",
            "| recall p50 / p95, user + session scope (ms) | "
            + " | ".join("{:.1f} / {:.1f}".format(*lo[k]["recall_user_session_ms"]) for k in kinds)
            + " |",
        ]
        for c in args.clients:
            lines.append(
                f"| recall throughput, {c} clients (recalls/s) | "
                + " | ".join(f"{lo[k]['recall_qps'][c]:.0f}" for k in kinds)
                + " |"
            )
        for c in args.clients:
            lines.append(
                f"| add throughput, {c} clients (memories/s, batches of 10) | "
                + " | ".join(f"{lo[k]['add_per_s'][c]:.0f}" for k in kinds)
                + " |"
            )
        lines += [
            "",
            "`Memory.recall` end to end (vector + BM25 candidates, fusion, graph walk, learned "
            "re-ranking, fetch, recall record write), query embeddings cached. Concurrent clients are threads of one process "
            "sharing one `Memory` (PostgreSQL: one pool of 20 connections).",
            "",
        ]
    if "synthetic" in results:
        sy = results["synthetic"]
        lines += [
            f"## Synthetic vectors ({DIM}-d, clustered), {args.users} users x {args.agents} "
            "agents in one workspace",
            "",
            "Store-level recall: vector top-100 + BM25 top-100 in the scope (what "
            "`Memory.recall` asks the store). p50 / p95 in ms. Loaded in batches of 1000 inside "
            "`store.bulk_load()` (PostgreSQL builds the HNSW index once at the end; SQLite builds "
            "its in-process index on the first search).",
            "",
            "| memories | store | loaded | bulk load incl. index build (memories/s) | user | "
            "user + agent | whole workspace |",
            "|---|---|---|---|---|---|---|",
        ]
        sizes_notes: list[str] = []
        for size in args.sizes:
            for k in kinds:
                r = sy.get(k, {"sizes": {}})["sizes"].get(size)
                if r is None and k not in sy:
                    lines.append(f"| {size:,} | {k} | not run (see notes) | | | | |")
                    continue
                if r is None:
                    lines.append(f"| {size:,} | {k} | not reached (load budget) | | | | |")
                    continue
                disk = f"{r['table_bytes_per_memory']:.0f} B/memory on disk"
                if "hnsw_bytes_per_memory" in r:
                    disk += f", HNSW index {r['hnsw_bytes_per_memory']:.0f} B/memory"
                sizes_notes.append(f"- {size:,} {k}: {disk}")
                lines.append(
                    f"| {size:,} | {k} | {r['loaded']:,} | {r['insert_per_s']:.0f} | "
                    + " | ".join(
                        "{:.1f} / {:.1f}".format(*r[s]) for s in ("user", "user+agent", "workspace")
                    )
                    + " |"
                )
        lines += ["", *sizes_notes, ""]
    lines += info.get("notes", [])
    lines += NOTES
    return "\n".join(lines) + "\n"


NOTES = [
    "## Reading these numbers",
    "",
    "- The machine is shared (load average in the header): absolute figures are noisy and",
    "  lower than on a dedicated host; the side-by-side ratios are the point.",
    "- SQLite answers in process (no round trips) from an in-memory index per (workspace, user);",
    "  PostgreSQL pays one round trip per store call (a recall makes about ten: vector,",
    "  keyword, fetches, graph hops, feedback facts, the recall record) and a context switch to",
    "  the server, which dominates at these sizes",
    "  on 2 busy cores. What PostgreSQL buys is not latency on one box but many application",
    "  machines on one memory, and the same latency at sizes where one process's RAM is short.",
    "- PostgreSQL insert throughput is bounded by growing the HNSW graph row by row; bulk loads",
    "  (`engrammar migrate`, `store.bulk_load()`) build it once at the end instead.",
    "- SQLite's whole-workspace scope searches each (workspace, user) partition in turn (100",
    "  here); PostgreSQL's goes through one HNSW index.",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", default=str(ROOT / "../shared/data/locomo10.json"))
    ap.add_argument("--locomo-n", type=int, default=10_000)
    ap.add_argument("--sizes", default="100000", help="synthetic sizes, comma separated")
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--seconds", type=float, default=5.0, help="per concurrency measurement")
    ap.add_argument("--load-budget", type=float, default=300.0, help="seconds of loading per store")
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--pg-url", default="", help="an existing empty database (else a throwaway)")
    ap.add_argument("--skip-locomo", action="store_true")
    ap.add_argument("--stores", default="sqlite,postgres", help="synthetic part: which stores")
    ap.add_argument("--out", default=str(ROOT / "bench/results/stores.md"))
    args = ap.parse_args()
    # A polite kill still stops the throwaway server (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    args.clients = [int(c) for c in args.clients.split(",") if c]
    start = time.time()
    info: dict[str, Any] = {
        "machine": machine(),
        "command": "python " + " ".join(sys.argv),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "notes": [],
    }
    server = None
    if args.pg_url:
        pg_new_db: Callable[[], str] = lambda: args.pg_url  # noqa: E731
        info["pg_how"] = "server given by --pg-url"
    else:
        server = start_pg_server()
        pg_new_db = server.new_database
        info["pg_how"] = (
            f"throwaway server from {server.bindir}, fsync on, synchronous_commit off, "
            "shared_buffers 1GB, work_mem 16MB"
        )
    results: dict[str, Any] = {}
    try:
        import psycopg

        with psycopg.connect(pg_new_db()) as conn:
            info["pg_version"] = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
            row = conn.execute("SELECT default_version FROM pg_available_extensions "
                               "WHERE name = 'vector'").fetchone()  # fmt: skip
            info["pgvector"] = row[0] if row else "?"
        with tempfile.TemporaryDirectory(prefix="engrammar-bench-") as tmp:
            if not args.skip_locomo:
                from engrammar.embed.onnx import MiniLMEmbedder

                rows, questions = locomo_rows(Path(args.data), args.locomo_n)
                info["locomo_n"] = len(rows)
                embedder = MiniLMEmbedder()
                qs = list(dict.fromkeys(q for _, q in questions))
                vecs, qv = embed_cached(embedder, [r[3] for r in rows], qs)
                qvecs = {q: qv[i] for i, q in enumerate(qs)}
                results["locomo"] = {}
                for kind in ("sqlite", "postgres"):
                    where = str(Path(tmp) / "locomo") if kind == "sqlite" else pg_new_db()
                    results["locomo"][kind] = bench_locomo(
                        kind, where, rows, vecs, questions, qvecs, embedder,
                        args.clients, args.seconds,
                    )  # fmt: skip
                    print(kind, results["locomo"][kind], flush=True)
            if args.sizes:
                results["synthetic"] = {}
                for kind in args.stores.split(","):
                    where = str(Path(tmp) / "synthetic.db") if kind == "sqlite" else pg_new_db()
                    results["synthetic"][kind] = bench_synthetic(
                        kind, where, args.sizes, args.load_budget, args.users, args.agents
                    )
    finally:
        if server is not None:
            server.stop()
    info["wall_s"] = time.time() - start
    text = report(args, info, results)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    Path(args.out).with_suffix(".json").write_text(
        json.dumps({"info": info, "results": results}, indent=1, default=str), encoding="utf-8"
    )
    print(text)


if __name__ == "__main__":
    main()

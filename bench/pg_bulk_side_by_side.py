"""``bench/pg_side_by_side.py`` at sizes where filling PostgreSQL through ``Memory.add`` takes too
long: SQLite is filled as ``bench/pg_scope.py`` fills it (LoCoMo texts in ONE user scope ``u``,
``Memory.add`` one session at a time, vectors precomputed), exported (``Memory.export``), and
the export is loaded into PostgreSQL in one transaction (``Memory.import_``: the bulk path,
the same memories, ids and edges). Then two copies of that database (``CREATE DATABASE ...
TEMPLATE``) and a copy of the SQLite folder go to ``pg_side_by_side.py``.

    python bench/pg_bulk_side_by_side.py --other-src ../main/src --dir DIR [--n 10000]
        [--recalls 200] [--rankings N]

``DIR`` keeps the filled SQLite folder and the export: a second run reuses them. The server is
a throwaway one started like pg_scope's (synchronous_commit off, shared_buffers 512MB).
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--other-src", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--data", default=str(ROOT / "../shared/data/locomo10.json"))
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--recalls", type=int, default=200)
    ap.add_argument(
        "--fill",
        choices=("add", "bulk"),
        default="add",
        help="add: SQLite through Memory.add, PostgreSQL by importing its export; bulk: both "
        "through Store.add_memories (see bulk_rows: sequence and semantic edges only)",
    )
    ap.add_argument(
        "--rankings",
        type=int,
        default=0,
        metavar="N",
        help="instead: N recalls with feedback (this code, its defaults), then pg_rankings.py "
        "on two copies of that store with feedback_edge_context on for both versions",
    )
    args = ap.parse_args()
    import psycopg

    import pg
    from engrammar import Config, Memory
    from engrammar.embed.onnx import MiniLMEmbedder
    from pg_scope import fill, texts_and_vectors
    from store_bench import Precomputed

    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    filled, export = work / f"sqlite_{args.n}", work / f"export_{args.n}.jsonl"
    rows, qs, table, gold = texts_and_vectors(Path(args.data), args.n)
    embedder = Precomputed(MiniLMEmbedder(), table)
    bulk = bulk_rows(rows, table) if args.fill == "bulk" else None
    if bulk is not None:
        filled = work / f"sqlite_{args.n}_bulk"
        shutil.rmtree(filled, ignore_errors=True)
        mem = Memory(Config(path=str(filled), embed_cache_size=0), embedder=embedder)
        print(f"sqlite: {bulk_add(mem, *bulk):.0f} s for the bulk fill", flush=True)
        mem.close()
    elif not export.exists():
        shutil.rmtree(filled, ignore_errors=True)
        mem = Memory(Config(path=str(filled), embed_cache_size=0), embedder=embedder)
        took = fill(mem, rows)
        print(f"sqlite: filled {len(rows)} memories in one user scope in {took:.0f} s", flush=True)
        mem.export(str(export) + ".part", user_id="u")
        mem.close()
        Path(str(export) + ".part").rename(export)
    bindir, reason = pg.find_bindir()
    if bindir is None:
        sys.exit(f"no PostgreSQL server: {reason}")
    server = pg.PgServer(bindir, options="-c synchronous_commit=off -c shared_buffers=512MB")
    server.start()
    try:
        url = server.url("filled")
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE filled")
        mem = Memory(Config(store=url, embed_cache_size=0), embedder=embedder)
        t = time.perf_counter()
        if bulk is not None:
            print(f"postgres: {bulk_add(mem, *bulk):.0f} s for the bulk fill", flush=True)
        else:
            out = mem.import_(str(export))
            print(
                f"postgres: imported {out['memories']} memories, {out['edges']} edges in "
                f"{time.perf_counter() - t:.0f} s",
                flush=True,
            )
        mem.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")
        if args.rankings:
            rankings(args, server, url, embedder, qs, gold)
            return
        with psycopg.connect(server.url(), autocommit=True) as conn:
            for name in ("ab_other", "ab_this"):
                conn.execute(f"CREATE DATABASE {name} TEMPLATE filled")
        run = work / f"sqlite_{args.n}_run"
        shutil.rmtree(run, ignore_errors=True)
        shutil.copytree(filled, run)
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "bench" / "pg_side_by_side.py"),
                "--other-src",
                args.other_src,
                "--other-url",
                server.url("ab_other"),
                "--this-url",
                server.url("ab_this"),
                "--sqlite-path",
                str(run),
                "--data",
                args.data,
                "--n",
                str(args.n),
                "--recalls",
                str(args.recalls),
            ],
            check=True,
        )
    finally:
        server.stop()


def bulk_rows(rows: list[Any], table: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """pg_scope's rows as stored memories of user ``u`` (one session each as pg_scope's fill
    groups them, an hour apart, 10 s between messages) with the edges ``add`` builds from
    vectors and order: ``semantic`` edges to each memory's nearest (cosine at least
    graph_semantic_threshold, at most graph_max_edges_per_memory, both ways, the cosine as
    the weight) and ``sequence`` edges between consecutive messages of a session. Not built:
    salient-term and tension edges, chunk vectors of long texts, context blending."""
    import uuid

    import numpy as np

    from engrammar import Config
    from engrammar.store.base import NewEdge, NewMemory

    config = Config()
    rng = np.random.default_rng(7)
    sessions: dict[str, list[int]] = {}
    for i, (_, session, _, _) in enumerate(rows):
        sessions.setdefault(session + rows[i][0], []).append(i)
    start = time.time() - 3600.0 * (len(sessions) + 1)
    memories: list[Any] = []
    edges: list[Any] = []
    for n, idx in enumerate(sessions.values()):
        ids = [uuid.uuid4().hex for _ in idx]
        for k, (i, memory_id) in enumerate(zip(idx, ids, strict=True)):
            memories.append(
                NewMemory(
                    id=memory_id, workspace=config.workspace, user_id="u", agent_id=None,
                    session_id=rows[idx[0]][1], role="user", content=rows[i][3],
                    kind=rows[i][2], created_at=start + 3600.0 * n + 10.0 * k, metadata={},
                    dedup_key=uuid.uuid4().hex, embedding=_vector(table[rows[i][3]], rows[i][0], rng),
                )
            )  # fmt: skip
        for a, b in itertools.pairwise(ids):
            edges += [NewEdge(a, b, "sequence", config.graph_sequence_weight),
                      NewEdge(b, a, "sequence", config.graph_sequence_weight)]  # fmt: skip
    vecs = np.stack([m.embedding for m in memories]).astype(np.float32)
    cap, threshold = config.graph_max_edges_per_memory, config.graph_semantic_threshold
    pairs: dict[tuple[str, str], float] = {}
    for first in range(0, len(memories), 250):
        sims = vecs[first : first + 250] @ vecs.T
        for row, i in enumerate(range(first, min(first + 250, len(memories)))):
            sims[row, i] = -1.0
            top = np.argpartition(-sims[row], cap)[:cap]
            for j in top[np.lexsort((top, -sims[row][top]))]:
                cos = float(sims[row, j])
                if cos >= threshold:
                    w = min(max(cos, config.edge_weight_min), config.edge_weight_max)
                    pairs[(memories[i].id, memories[j].id)] = w
                    pairs[(memories[j].id, memories[i].id)] = w
    edges += [NewEdge(a, b, "semantic", w) for (a, b), w in pairs.items()]
    return memories, edges


def _vector(vec: Any, user: str, rng: Any) -> Any:
    """A row's vector: its text's, or for a copy beyond LoCoMo's 10,000 rows (``-copyN``
    users, see pg_scope.texts_and_vectors) the text's moved at random (cosine ~0.85), so that
    copies are near their original but not equal."""
    import numpy as np

    v = np.asarray(vec, dtype=np.float32)
    if "-copy" not in user:
        return v
    moved = v + rng.normal(0.0, 0.03, v.shape).astype(np.float32)
    return moved / np.linalg.norm(moved)


def bulk_add(mem: Any, memories: list[Any], edges: list[Any]) -> float:
    """Store ``bulk_rows``' memories and edges through the store's bulk path (batches of
    1,000 memories, each edge with the batch of its later end); seconds taken."""
    t = time.perf_counter()
    where = {m.id: i // 1000 for i, m in enumerate(memories)}
    by_batch: dict[int, list[Any]] = {}
    for e in edges:
        by_batch.setdefault(max(where[e.src], where[e.dst]), []).append(e)
    for b in range(0, len(memories), 1000):
        mem.store.add_memories(memories[b : b + 1000], by_batch.get(b // 1000, []))
    return time.perf_counter() - t


def rankings(args: Any, server: Any, url: str, embedder: Any, qs: list[str], gold: Any) -> None:
    """Feedback records first (recalls of pg_scope's questions, the gold answer as the reply),
    then both versions rank on copies of that store."""
    import psycopg

    from engrammar import Config, Memory

    asked = qs[:: max(1, len(qs) // args.rankings)][: args.rankings]
    replies = [gold.get(q, "I do not know.") for q in asked]
    for text, vec in zip(replies, embedder.inner.embed(replies), strict=True):
        embedder.vectors.setdefault(text, vec)
    mem = Memory(Config(store=url, embed_cache_size=0), embedder=embedder)
    for q, reply in zip(asked, replies, strict=True):
        result = mem.recall(q, user_id="u")
        mem.feedback(response=reply, user_id="u", recall_id=result.recall_id)
    mem.close()
    with psycopg.connect(server.url(), autocommit=True) as conn:
        for name in ("rk_other", "rk_this"):
            conn.execute(f"CREATE DATABASE {name} TEMPLATE filled")
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "pg_rankings.py"),
            "--other-src",
            args.other_src,
            "--other-url",
            server.url("rk_other"),
            "--this-url",
            server.url("rk_this"),
            "--data",
            args.data,
            "--n",
            str(args.n),
            "--set",
            "feedback_edge_context=true",
        ],
        check=True,
    )


if __name__ == "__main__":
    main()

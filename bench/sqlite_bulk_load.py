"""A SQLite partition's load, bulk against row by row, in one process.

For each (workspace, user) partition of a store file: the store's ``_load_partition`` (the
bulk path: ``ScopeIndex.extend``) and the row-by-row load it replaced (``reserve`` and one
``upsert`` per row, as main loaded until then), alternating ``--repeat`` times, wall and CPU
time of each; then the two indexes compared: ids and slots, every slot's terms, the BM25
postings and scores, keyword search (top 50: ids, order, scores) and vector search (top 20)
for every LoCoMo question (``--data``; or LongMemEval dev's, given its ``.json.gz``), and term
postings.

    python bench/sqlite_bulk_load.py STORE_DIR_OR_FILE [--users u,v] [--repeat 3] [--data F]

Read-only on the store (its indexes are built in this process and dropped).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _row_by_row(store: Any, workspace: str, user: str | None) -> Any:
    from engrammar.store.sqlite.index import ScopeIndex
    from engrammar.store.sqlite.search import CHUNK_COLUMNS, chunk_lists

    conn = store._sync_conn
    index = ScopeIndex(store._dimension(), store._k1, store._b, store._ann_threshold)
    conn.execute("BEGIN")
    try:
        rows = conn.execute(
            "SELECT id, agent_id, session_id, created_at, content, embedding, metadata, kind, "
            "role FROM memories WHERE workspace = ? AND user_id IS ? AND status = 'active' "
            "ORDER BY seq",
            (workspace, user),
        ).fetchall()
        chunks = chunk_lists(
            conn.execute(
                f"SELECT {CHUNK_COLUMNS} FROM memory_chunks WHERE workspace = ? AND user_id IS ? "
                "ORDER BY memory_id, position",
                (workspace, user),
            )
        )
        index.reserve(len(rows))
        for row in rows:
            index.upsert(store._index_row(row, chunks.get(row[0])))
    finally:
        conn.execute("COMMIT")
    return index


def _timed(call: Any) -> tuple[float, float, Any]:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    out = call()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def _compare(bulk: Any, ref: Any, questions: list[str]) -> dict[str, int]:
    from engrammar.recall.text import terms

    n = len(ref._ids)
    assert bulk._ids == ref._ids and bulk._slot == ref._slot, "ids"
    assert all(bulk._doc_terms(s) == ref._doc_terms(s) for s in range(n)), "terms"
    assert np.array_equal(bulk._vectors[:n], ref._vectors[:n]), "vectors"
    assert np.array_equal(bulk._created[:n], ref._created[:n]), "times"
    assert bulk._metadata == ref._metadata, "metadata"
    assert bulk._agents == ref._agents and bulk._sessions == ref._sessions, "agents/sessions"
    assert np.array_equal(bulk._chunks[: bulk._n_chunks], ref._chunks[: ref._n_chunks])
    assert np.array_equal(bulk._owners[: bulk._n_chunks], ref._owners[: ref._n_chunks])
    a, b = bulk._bm25, ref._bm25
    assert a._lengths == b._lengths and a._total_len == b._total_len and len(a) == len(b)
    vocab = set(a._packed) | set(a._postings)
    assert vocab == set(b._postings), "vocabulary"
    for term in vocab:
        sa, ta = a._array(term)
        sb, tb = b._array(term)
        order = np.argsort(sb)
        assert np.array_equal(sa, sb[order]) and np.array_equal(ta, tb[order]), term
    searches = 0
    vectors = ref._vectors[: min(n, 50)]
    for q in questions:
        qt = terms(q)
        assert np.array_equal(a.scores(qt, n), b.scores(qt, n)), q
        assert bulk.keyword_search(qt, 50) == ref.keyword_search(qt, 50), q
        assert bulk.term_postings(qt, 5) == ref.term_postings(qt, 5), q
        searches += 1
    for v in vectors:
        assert bulk.vector_search(v, 20) == ref.vector_search(v, 20)
    return {"terms": len(vocab), "keyword_searches": searches, "vector_searches": len(vectors)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("store")
    ap.add_argument("--users", default="", help="comma-separated (default: every user)")
    ap.add_argument("--workspace", default="default")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", default=str(ROOT / "../shared/data/locomo10.json"))
    ap.add_argument("--questions", type=int, default=400)
    args = ap.parse_args()
    from engrammar.store.sqlite.store import SQLiteStore

    path = Path(args.store)
    store = SQLiteStore(path / "engrammar.db" if path.is_dir() else path)
    conn = store._sync_conn
    users = (
        args.users.split(",")
        if args.users
        else [
            r[0]
            for r in conn.execute(
                "SELECT user_id, count(*) FROM memories WHERE workspace = ? GROUP BY user_id "
                "ORDER BY 2 DESC",
                (args.workspace,),
            )
        ]
    )
    if args.data.endswith(".gz"):  # LongMemEval dev (../shared/data/lme_dev/lme_dev.json.gz)
        with gzip.open(args.data) as f:
            questions = [q["question"] for q in json.load(f)["questions"]]
    else:
        data = json.loads(Path(args.data).read_text())
        questions = [q["question"] for sample in data for q in sample["qa"]]
    questions = questions[: args.questions]
    print(f"{path}: {len(users)} partitions, load {os.getloadavg()[0]:.1f}", flush=True)
    print(
        "| user | rows | bulk wall s | bulk CPU s | row by row wall s | row by row CPU s | same |"
    )
    print("|---|---|---|---|---|---|---|")
    totals: dict[str, list[float]] = {"bulk": [], "rows": []}
    for user in users:
        times: dict[str, list[tuple[float, float]]] = {"bulk": [], "rows": []}
        bulk = ref = None
        for _ in range(args.repeat):
            with store._index_lock:
                w, c, bulk = _timed(lambda u=user: store._load_partition(args.workspace, u))
            times["bulk"].append((w, c))
            w, c, ref = _timed(lambda u=user: _row_by_row(store, args.workspace, u))
            times["rows"].append((w, c))
        same = _compare(bulk, ref, questions)
        med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
               for k, v in times.items()}  # fmt: skip
        for k in totals:
            totals[k].append(med[k][0])
        print(
            f"| {user} | {len(ref)} | {med['bulk'][0]:.3f} | {med['bulk'][1]:.3f} | "
            f"{med['rows'][0]:.3f} | {med['rows'][1]:.3f} | yes ({same['terms']} terms, "
            f"{same['keyword_searches']} keyword + {same['vector_searches']} vector searches) |",
            flush=True,
        )
        del bulk, ref
    print(
        f"medians of {args.repeat} alternating loads each; all partitions: bulk "
        f"{sum(totals['bulk']):.2f} s, row by row {sum(totals['rows']):.2f} s; "
        f"load {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]}"
    )
    store.close()


if __name__ == "__main__":
    main()

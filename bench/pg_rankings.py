"""Do two versions of engrammar's code rank the same on PostgreSQL? Recall and search (limit
10) of pg_scope's questions, question by question, with the clock frozen at one instant for
both (learned weights decay with time). ``--set KEY=JSON``: a Config setting for both.

    python bench/pg_rankings.py --other-src ../main/src --other-url URL --this-url URL \\
        [--n 3000] [--questions 100]

The two URLs should be copies of one filled store (``CREATE DATABASE ... TEMPLATE``), e.g. one
holding feedback records from a ``bench/pg_side_by_side.py`` run. ``--other-src``: as in
pg_side_by_side (the other package is loaded as ``engrammar_other``). Prints how many recalls
and searches list the same ids in the same order, and the largest score difference.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from _common import load_other_engrammar  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--other-src", required=True)
    ap.add_argument("--other-url", required=True)
    ap.add_argument("--this-url", required=True)
    ap.add_argument("--data", default=str(ROOT / "../shared/data/locomo10.json"))
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="a Config setting for both versions, e.g. feedback_edge_context=true",
    )
    args = ap.parse_args()
    settings = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}
    engrammar_other = load_other_engrammar(args.other_src)

    import engrammar
    from engrammar.embed.onnx import MiniLMEmbedder
    from pg_scope import texts_and_vectors
    from store_bench import Precomputed

    _, qs, table, _ = texts_and_vectors(Path(args.data), args.n)
    emb = MiniLMEmbedder()
    asked = qs[:: max(1, len(qs) // args.questions)][: args.questions]
    frozen = time.time()
    real = time.time
    time.time = lambda: frozen  # both versions read the clock through the time module
    try:
        mems: dict[str, Any] = {
            "other": engrammar_other.Memory(
                engrammar_other.Config(store=args.other_url, embed_cache_size=0, **settings),
                embedder=Precomputed(emb, table),
            ),
            "this": engrammar.Memory(
                engrammar.Config(store=args.this_url, embed_cache_size=0, **settings),
                embedder=Precomputed(emb, table),
            ),
        }
        same = {"recall": 0, "search": 0}
        worst = 0.0
        for q in asked:
            for call in ("recall", "search"):
                lists = []
                for mem in mems.values():
                    if call == "recall":
                        got = mem.recall(q, user_id="u", limit=10).memories
                    else:
                        got = mem.search(q, user_id="u", limit=10)
                    lists.append([(m.memory.id, m.score) for m in got])
                a, b = lists
                if [i for i, _ in a] == [i for i, _ in b]:
                    same[call] += 1
                    worst = max([worst, *(abs(x[1] - y[1]) for x, y in zip(a, b, strict=True))])
        for mem in mems.values():
            mem.close()
    finally:
        time.time = real
    print("command: python " + " ".join(sys.argv))
    print(
        f"recall: {same['recall']} / {len(asked)} the same ids in the same order; "
        f"search: {same['search']} / {len(asked)}; largest score difference {worst:.2g}"
    )


if __name__ == "__main__":
    main()

"""Recall and feedback on the embedded SQLite store at n memories in ONE user scope
(sq100k): the store filled as ``pg_bulk_side_by_side.py --fill bulk`` fills it (pg_scope's LoCoMo
rows, beyond 10,000 copies with moved vectors; sequence and semantic edges), then ``--rounds``
of recall + feedback (the gold answer as the reply) on a copy of it, by the code under
``--src`` (this checkout's ``src`` if not given): recall and feedback p50, how many times a
partition was loaded from the database (``SQLiteSearch._load_partition``), the recalled ids,
and a cProfile of the middle round's recall and feedback.

    python bench/sqlite_scope_feedback.py --dir DIR --n 100000 --rounds 8 [--src OTHER/src]
        [--no-feedback] [--out FILE.json]

``DIR`` keeps the filled store (``DIR/sqlite_N``); each run works on a fresh copy of it
(``DIR/run_N``) unless ``--no-copy`` (then rounds add to what earlier runs left, e.g. recalls
only on a store that already has feedback). Run two versions one after the other, or at once
on separate ``--run`` folders, and compare the printed figures and the ids in the JSON.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--src", default=str(ROOT / "src"))
    ap.add_argument("--run", default="", help="the copy to work on (else DIR/run_N)")
    ap.add_argument("--no-copy", action="store_true", help="reuse --run as it is")
    ap.add_argument("--no-feedback", action="store_true", help="recalls only")
    ap.add_argument("--out", default="")
    ap.add_argument("--data", default=str(ROOT / "../shared/data/locomo10.json"))
    args = ap.parse_args()
    sys.path.insert(0, str(Path(args.src).resolve()))
    sys.path.insert(1, str(ROOT / "tests"))
    sys.path.insert(1, str(ROOT / "bench"))
    import engrammar

    if not engrammar.__file__ or not engrammar.__file__.startswith(str(Path(args.src).resolve())):
        sys.exit(f"engrammar imported from {engrammar.__file__}, not --src")
    from engrammar import Config, Memory
    from engrammar.embed.onnx import MiniLMEmbedder
    from engrammar.store.sqlite.search import SQLiteSearch
    from pg_bulk_side_by_side import bulk_add, bulk_rows
    from pg_scope import texts_and_vectors
    from store_bench import Precomputed

    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    rows, qs, table, gold = texts_and_vectors(Path(args.data), args.n)
    embedder = Precomputed(MiniLMEmbedder(), table)
    filled = work / f"sqlite_{args.n}"
    if not filled.exists():
        part = work / f"sqlite_{args.n}.part"
        shutil.rmtree(part, ignore_errors=True)
        mem = Memory(Config(path=str(part), embed_cache_size=0), embedder=embedder)
        print(f"filled in {bulk_add(mem, *bulk_rows(rows, table)):.0f} s", flush=True)
        mem.close()
        part.rename(filled)
    run = Path(args.run) if args.run else work / f"run_{args.n}"
    if not args.no_copy:
        shutil.rmtree(run, ignore_errors=True)
        shutil.copytree(filled, run)

    loads = [0]
    load = SQLiteSearch._load_partition

    def counted(self: Any, *a: Any) -> Any:
        loads[0] += 1
        return load(self, *a)

    SQLiteSearch._load_partition = counted  # type: ignore[method-assign]
    asked = qs[:: max(1, len(qs) // 100)][:100][: args.rounds + 1]
    replies = [gold.get(q, "I do not know.") for q in asked]
    for text, vec in zip(replies, embedder.inner.embed(replies), strict=True):
        embedder.vectors.setdefault(text, vec)
    mem = Memory(Config(path=str(run), embed_cache_size=0), embedder=embedder)
    res: dict[str, Any] = {"load_start": os.getloadavg(), "recall": [], "feedback": []}
    res |= {"ids": [], "loads": []}
    t = time.perf_counter()
    mem.recall(asked[0], user_id="u")  # the partition's first load
    res["first_recall"] = time.perf_counter() - t
    for i, (q, reply) in enumerate(zip(asked[1:], replies[1:], strict=True)):
        before = loads[0]
        profile = i == args.rounds // 2
        took, result = _timed(profile, res, "recall", lambda q=q: mem.recall(q, user_id="u"))
        res["recall"].append(took)
        if not args.no_feedback:
            rid = result.recall_id
            took, _ = _timed(
                profile, res, "feedback", lambda r=reply, rid=rid: mem.feedback(
                    response=r, user_id="u", recall_id=rid
                )
            )  # fmt: skip
            res["feedback"].append(took)
        res["ids"].append([m.memory.id for m in result.memories])
        res["loads"].append(loads[0] - before)
        print(i, f"recall {res['recall'][-1] * 1000:.0f} ms, loads {res['loads'][-1]}", flush=True)
    res["load_end"] = os.getloadavg()
    mem.close()
    fb = ""
    if res["feedback"]:
        fb = f", feedback p50 {statistics.median(res['feedback']) * 1000:.1f} ms"
    print(
        f"n {args.n}: first recall {res['first_recall']:.2f} s, recall p50 {statistics.median(res['recall']) * 1000:.1f} ms{fb}, "
        f"partition loads {sum(res['loads'])} in {args.rounds} rounds, "
        f"load {res['load_start'][0]:.1f} -> {res['load_end'][0]:.1f}"
    )
    if args.out:
        Path(args.out).write_text(json.dumps(res))


def _timed(profile: bool, res: dict[str, Any], name: str, call: Any) -> tuple[float, Any]:
    prof = cProfile.Profile() if profile else None
    if prof is not None:
        prof.enable()
    t = time.perf_counter()
    out = call()
    took = time.perf_counter() - t
    if prof is not None:
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(18)
        res[f"{name}_profile"] = text.getvalue()
    return took, out


if __name__ == "__main__":
    main()

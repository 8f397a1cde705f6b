"""Rankings before and after one round of feedback, deep enough to study carry-over offline.

Runs the split and the round of ``feedback_learning.py`` (one mode) once, keeps the fed-back
store (``--keep``), and writes for every question its top ``--depth`` before and after the
round (memory id, dia_id, score) plus the question's vector, so that a rule that brings a
related question's accepted memories in can be tried on the saved rankings in seconds
(``--from`` re-measures only the "after" side on a kept store, e.g. with ``--set``).

    python bench/feedback_carry_probe.py --store-cache /tmp/s13/fl-all.db --embed-cache \
        --keep /tmp/s13/carry13/fed-both.db --out /tmp/s13/carry13/probe-main.json
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engrammar import Memory
from feedback_learning import DEFAULT_DATA, REFEREE, Bench


def rankings(
    bench: Bench, mem: Memory, queries: list[dict[str, Any]], depth: int
) -> dict[str, list[list[Any]]]:
    out = {}
    for q in queries:
        result = mem.recall(q["question"], user_id=q["sample_id"], limit=depth)
        out[q["question_id"]] = [
            [m.id, m.memory.metadata.get("dia_id", ""), round(m.score, 6)] for m in result.memories
        ]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(DEFAULT_DATA))
    p.add_argument("--referee", default=str(REFEREE))
    p.add_argument("--store-cache", required=True)
    p.add_argument("--embed-cache", action="store_true")
    p.add_argument("--mode", default="both", choices=("ratings", "replies", "both"))
    p.add_argument("--rate-depth", type=int, default=20)
    p.add_argument("--depth", type=int, default=50)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--conversations", type=int, default=0)
    p.add_argument("--keep", help="save the fed-back store here")
    p.add_argument("--from", dest="fed", help="a kept fed-back store: measure it, no round")
    p.add_argument("--before", action="store_true", help="also rank before feedback")
    p.add_argument("--test-only", action="store_true", help="rank test questions only")
    p.add_argument("--set", action="append", metavar="NAME=JSON")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    args.min_samples = args.max_adjustment = None
    bench = Bench(args)
    bench.ingest()
    queries = bench.test if args.test_only else bench.train + bench.test
    out: dict[str, Any] = {
        "subsets": bench.subsets(),
        "samples": [s["sample_id"] for s in bench.data],
    }
    out["evidence"] = {q["question_id"]: q["evidence"] for q in bench.train + bench.test}
    out["question"] = {q["question_id"]: q["question"] for q in bench.train + bench.test}
    t0 = time.perf_counter()
    if args.before:
        mem = bench.fresh("before")
        out["before"] = rankings(bench, mem, queries, args.depth)
        mem.close()
        print(f"before: {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    if args.fed:
        folder = bench.tmp / "fed"
        folder.mkdir(parents=True)
        src = sqlite3.connect(args.fed)
        dst = sqlite3.connect(folder / "engrammar.db")
        src.backup(dst)
        src.close()
        dst.close()
        mem = Memory(bench.config.replace(path=str(folder)))
    else:
        mem = bench.fresh("fed")
        bench.feedback_round(mem, 0.0, random.Random(args.seed), args.mode)
        print(f"round: {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    out["after"] = rankings(bench, mem, queries, args.depth)
    mem.close()
    if args.keep and not args.fed:
        Path(args.keep).parent.mkdir(parents=True, exist_ok=True)
        src = sqlite3.connect(bench.tmp / "fed" / "engrammar.db")
        dst = sqlite3.connect(args.keep)
        src.backup(dst)
        src.close()
        dst.close()
    print(f"after: {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out))
    shutil.rmtree(bench.tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

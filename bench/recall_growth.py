"""Does recall get slower as a store receives feedback? In-process, no HTTP.

Drives one embedded-default `Memory` (SQLite + the default model) with `bench/load.py`'s request
plan (60 % recall, 25 % add, 15 % feedback with a reply) in rounds of operations, and prints
the median and p99 of each operation per round. The load test's p99 depends on the server's
CPU per request staying flat over a run; this isolates the part that grows with the data.

    python bench/recall_growth.py [--rounds N] [--per-round M] [--reply-weight W]

(by default 6 rounds of 500 operations).

`--reply-weight 0` switches reply learning off (`feedback_reply_weight`), to tell growth that
comes from the scopes getting bigger (adds) from growth that comes from the feedback.
Results go to bench/results/recall_growth.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import RESULTS, machine
from engrammar import Config, Memory
from load import USERS, Plan, _sentence


def run(rounds: int, per_round: int, reply_weight: float | None, seed: int) -> dict:
    extra = {} if reply_weight is None else {"feedback_reply_weight": reply_weight}
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(Config(path=tmp, **extra))
        rng = random.Random(seed)
        for user in USERS:
            mem.add([_sentence(rng, user) for _ in range(20)], user_id=user)
        plan = Plan(seed, 0.6, 0.25)
        out = []
        for r in range(rounds):
            times: dict[str, list[float]] = {"recall": [], "add": [], "feedback": []}
            for _ in range(per_round):
                op, _, body = plan.next()
                t0 = time.perf_counter()
                if op == "recall":
                    mem.recall(body["query"], user_id=body["user_id"])
                elif op == "add":
                    mem.add(body["content"], user_id=body["user_id"])
                else:
                    mem.feedback(response=body["response"], user_id=body["user_id"])
                times[op].append(time.perf_counter() - t0)
            row = {"round": r + 1, "operations_so_far": (r + 1) * per_round}
            for op, values in times.items():
                row[op] = {
                    "n": len(values),
                    "p50_ms": round(float(np.median(values)) * 1000, 2),
                    "p99_ms": round(float(np.percentile(values, 99)) * 1000, 2),
                }
            out.append(row)
            print(json.dumps(row), flush=True)
        mem.close()
    return {"rounds": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--per-round", type=int, default=500)
    ap.add_argument("--reply-weight", type=float, default=None)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=RESULTS / "recall_growth.json")
    args = ap.parse_args()
    result = run(args.rounds, args.per_round, args.reply_weight, args.seed)
    result["machine"] = machine()
    result["command"] = "python bench/recall_growth.py " + " ".join(sys.argv[1:])
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()

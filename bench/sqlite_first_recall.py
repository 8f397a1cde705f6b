"""The first recall of a big SQLite user scope in a fresh process, two versions alternating:
wall and CPU time of the process's first ``Memory.recall`` (which loads
the partition into the in-process index), then of a second one, and the ids recalled.

    python bench/sqlite_first_recall.py --store DIR --src BASE/src --src THIS/src
        [--rounds 3] [--user u] [--data ../shared/data/locomo10.json]

Each version works on its own copy of ``DIR`` (made once, ``DIR.copy<i>``); the query is a
LoCoMo question with its vector from the bench's disk cache (so the model is not timed).
Wall time on a shared machine swings with the load; CPU time (``time.process_time``) of the
process is the steadier figure, and both are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time
sys.path.insert(0, {src!r})
sys.path.insert(1, {bench!r})
import engrammar
assert engrammar.__file__.startswith({src!r}), engrammar.__file__
from engrammar import Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder
from _embcache import DiskCachedEmbedder
embedder = DiskCachedEmbedder(MiniLMEmbedder())
q = {query!r}
embedder.embed([q])
mem = Memory(Config(path={path!r}, embed_cache_size=0), embedder=embedder)
out = {{}}
for name in ("first", "second"):
    wall, cpu = time.perf_counter(), time.process_time()
    result = mem.recall(q, user_id={user!r})
    out[name] = [time.perf_counter() - wall, time.process_time() - cpu]
out["ids"] = [m.memory.id for m in result.memories]
mem.close()
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--store", required=True)
    ap.add_argument("--src", action="append", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--user", default="u")
    ap.add_argument("--data", default=str(ROOT / "../shared/data/locomo10.json"))
    args = ap.parse_args()
    data = json.loads(Path(args.data).read_text())
    query = data[0]["qa"][0]["question"]
    copies = []
    for i, _ in enumerate(args.src):
        copy = Path(f"{args.store.rstrip('/')}.copy{i}")
        if not copy.exists():
            shutil.copytree(args.store, copy)
        copies.append(copy)
    got: dict[int, list[dict[str, list[float]]]] = {i: [] for i in range(len(args.src))}
    ids: dict[int, list[str]] = {}
    for r in range(args.rounds):
        for i, src in enumerate(args.src):
            code = CHILD.format(
                src=str(Path(src).resolve()),
                bench=str(ROOT / "bench"),
                query=query,
                path=str(copies[i]),
                user=args.user,
            )
            load = os.getloadavg()[0]
            line = (
                subprocess.run(
                    [sys.executable, "-c", code], check=True, capture_output=True, text=True
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            out = json.loads(line)
            ids[i] = out.pop("ids")
            got[i].append(out)
            print(
                f"round {r + 1} {src}: first recall {out['first'][0]:.2f} s wall / "
                f"{out['first'][1]:.2f} s CPU, second {out['second'][0] * 1000:.0f} ms wall "
                f"(load {load:.1f})",
                flush=True,
            )
    print("\n| version | first recall wall s (median) | CPU s (median) | second recall ms |")
    print("|---|---|---|---|")
    for i, src in enumerate(args.src):
        first = got[i]
        print(
            f"| {src} | {statistics.median(x['first'][0] for x in first):.2f} | "
            f"{statistics.median(x['first'][1] for x in first):.2f} | "
            f"{statistics.median(x['second'][0] for x in first) * 1000:.0f} |"
        )
    same = all(ids[i] == ids[0] for i in ids)
    print(f"recalled ids the same in every version: {same} ({len(ids[0])} ids)")


if __name__ == "__main__":
    main()

"""Where ``Memory.add`` of one session into a filled SQLite user scope spends its time beyond
the model.

    python bench/sqlite_add_profile.py --dir DIR --n 1500 [--sessions 6] [--src OTHER/src]

Fills ``DIR/fill_N`` once (LoCoMo sessions, cycled under new session ids up to ``N`` turns,
one user, through ``Memory.add`` with vectors from the bench's disk cache), then on a fresh
copy adds ``--sessions`` more LoCoMo sessions (texts the fill did not use, the real model, no
embedding cache), each timed beside the raw embedding of the same texts (alternating), and
cProfiles them: the cumulative time of each step of the add (embedding, neighbour search,
term postings, tension checks, edge counts, the write, the index catch-up).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

STEPS = [
    ("embed_memories", "embedding (the model and chunking)"),
    ("vector_searches", "neighbour search (store.vector_searches)"),
    ("term_postings", "term postings (store.term_postings)"),
    ("_tension_edges", "tension checks (with their get_memories)"),
    ("edge_counts", "edge counts"),
    ("latest_memories", "session's latest memory"),
    ("add_memories", "the write (store.add_memories)"),
    ("_refresh", "index catch-up (_refresh)"),
    ("build_edges", "build_edges in all"),
]


def _sessions(data: Path) -> list[list[dict[str, Any]]]:
    sys.path.insert(0, str(ROOT / "bench"))
    from _common import load_locomo, locomo_turns

    grouped: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for t in locomo_turns(load_locomo(data)):
        grouped.setdefault((t["sample_id"], t["session"]), []).append(t)
    return list(grouped.values())


def _messages(session: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"role": "user", "name": t["speaker"], "content": t["text"]} for t in session]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--n", type=int, default=1500)
    ap.add_argument("--sessions", type=int, default=6)
    ap.add_argument("--src", default=str(ROOT / "src"))
    ap.add_argument("--data", default=str(ROOT / "../shared/data/locomo10.json"))
    args = ap.parse_args()
    sys.path.insert(0, str(Path(args.src).resolve()))
    sys.path.insert(1, str(ROOT / "bench"))
    import engrammar
    from _embcache import DiskCachedEmbedder
    from engrammar import Config, Memory
    from engrammar.embed.onnx import MiniLMEmbedder

    print(f"engrammar from {engrammar.__file__}", flush=True)
    sessions = _sessions(Path(args.data))
    measured, fill = sessions[-args.sessions :], sessions[: -args.sessions]
    model = MiniLMEmbedder()
    work = Path(args.dir)
    filled = work / f"fill_{args.n}"
    if not filled.exists():
        part = work / f"fill_{args.n}.part"
        shutil.rmtree(part, ignore_errors=True)
        mem = Memory(Config(path=str(part)), embedder=DiskCachedEmbedder(model))
        t, total, k = time.perf_counter(), 0, 0
        while total < args.n:
            s = fill[k % len(fill)]
            mem.add(_messages(s)[: args.n - total], user_id="u", session_id=f"s{k}")
            total += min(len(s), args.n - total)
            k += 1
        mem.close()
        part.rename(filled)
        print(f"filled {total} turns in {time.perf_counter() - t:.0f} s", flush=True)
    run = work / f"run_{args.n}_{os.getpid()}"
    shutil.copytree(filled, run)
    mem = Memory(Config(path=str(run), embed_cache_size=0), embedder=model)
    mem.recall("warm up the index", user_id="u")
    model.embed(["warm up the model"])
    raw, added, ratio = [], [], []
    prof = cProfile.Profile()
    load = os.getloadavg()[0]
    for i, s in enumerate(measured):
        texts = [f"{t['speaker']}: {t['text']}" for t in s]
        t = time.perf_counter()
        model.embed(texts)
        raw.append(time.perf_counter() - t)
        prof.enable()
        t = time.perf_counter()
        mem.add(_messages(s), user_id="u", session_id=f"new{i}")
        added.append(time.perf_counter() - t)
        prof.disable()
        ratio.append(added[-1] / raw[-1])
        print(f"session {i}: {len(s)} turns, raw {raw[-1] * 1000:.0f} ms, add "
              f"{added[-1] * 1000:.0f} ms ({ratio[-1]:.2f}x)", flush=True)  # fmt: skip
    mem.close()
    shutil.rmtree(run, ignore_errors=True)
    stats = pstats.Stats(prof)
    by_name: dict[str, float] = {}
    for (_, _, name), (_, _, _, cum, _) in stats.stats.items():  # type: ignore[attr-defined]
        by_name[name] = max(by_name.get(name, 0.0), cum)
    total = sum(added)
    print(f"\nn {args.n}: add p50 {statistics.median(added) * 1000:.0f} ms, raw p50 "
          f"{statistics.median(raw) * 1000:.0f} ms, ratio p50 {statistics.median(ratio):.2f}x "
          f"(sum {total / sum(raw):.2f}x); load {load:.1f} -> {os.getloadavg()[0]:.1f}")  # fmt: skip
    print("| step | seconds under cProfile (all adds) |\n|---|---|")
    for name, what in STEPS:
        print(f"| {what} | {by_name.get(name, 0.0):.3f} |")
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
    print(text.getvalue())


if __name__ == "__main__":
    main()

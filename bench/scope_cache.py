"""Bounded scope caches: searches over 100,000 distinct (workspace, user)
scopes must not grow the process without bound.

Each search on a new user used to keep an in-memory index with 64 x dim float32 preallocated,
never evicted. Now an empty scope keeps nothing and the rest share one LRU bounded by
``scope_cache_bytes``. This script searches N distinct users (a share of them with memories)
and reports resident memory and the cache's size as it goes.

    .venv/bin/python bench/scope_cache.py                 # 100,000 scopes, default budget
    .venv/bin/python bench/scope_cache.py --budget 1000000 --scopes 20000
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS
from engrammar import Config, HashEmbedder, Memory


def rss_mb() -> float:
    """Current resident set size in MB (Linux /proc), else the peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cache_bytes(cache: Any) -> int:
    """Bytes the store's scope caches hold (also on a version before the bound, for a
    before/after comparison: there they were a plain dict of indexes)."""
    if hasattr(cache, "total"):
        return int(cache.total)
    return sum(int(getattr(i, "nbytes", i._vectors.nbytes)) for i in cache.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scopes", type=int, default=100_000)
    parser.add_argument("--with-data", type=int, default=2_000, help="scopes given memories")
    parser.add_argument("--budget", type=int, default=None, help="scope_cache_bytes")
    parser.add_argument("--out", default=str(RESULTS / "scope_cache.json"))
    args = parser.parse_args()
    settings = {} if args.budget is None else {"scope_cache_bytes": args.budget}
    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory(Config(path=tmp, **settings), embedder=HashEmbedder())
        budget = getattr(memory.config, "scope_cache_bytes", None)
        step = max(1, args.scopes // max(1, args.with_data))
        for i in range(0, args.scopes, step):
            memory.add(
                [f"user {i} deploys on tuesdays", f"user {i} drinks tea"], user_id=f"user-{i}"
            )
        memory.search("warm up", user_id="user-0")
        cache = memory.store._indexes  # type: ignore[attr-defined]
        start_rss = rss_mb()
        samples = []
        started = time.perf_counter()
        peak_cache = 0
        for i in range(args.scopes):
            memory.search("when does this user deploy", user_id=f"user-{i}")
            peak_cache = max(peak_cache, _cache_bytes(cache))
            if (i + 1) % max(1, args.scopes // 10) == 0:
                samples.append(
                    {
                        "scopes_searched": i + 1,
                        "rss_mb": round(rss_mb(), 1),
                        "cache_bytes": _cache_bytes(cache),
                        "cached_scopes": len(cache),
                    }
                )
                print(samples[-1], flush=True)
        elapsed = time.perf_counter() - started
        memory.close()
    result = {
        "scopes": args.scopes,
        "scopes_with_memories": len(range(0, args.scopes, step)),
        "scope_cache_bytes": budget,
        "peak_cache_bytes": peak_cache,
        "rss_mb_before": round(start_rss, 1),
        "rss_mb_after": samples[-1]["rss_mb"] if samples else None,
        "searches_per_s": round(args.scopes / elapsed, 1),
        "samples": samples,
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=2))


if __name__ == "__main__":
    main()

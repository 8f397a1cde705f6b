"""Recall latency with and without chunk vectors on the same LongMemEval scopes, interleaved.

    python bench/chunk_latency.py --chunks DIR --plain DIR [--sample 6] [--rounds 5]

``DIR``: the ``--store`` folders of two bench/lme.py runs over the same sample, one with the
default ``chunk_chars`` and one with ``--ingest '{"chunk_chars": 0}'``. Every question is asked
in both stores in turn (default configuration, limit 10, tension check on; the first round only
warms the indexes and query vectors), so both see the same load. Writes
bench/results/chunk_latency.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, pct
from _embcache import CACHE_ROOT, DiskCachedEmbedder
from engrammar import CachedEmbedder, Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder
from lme import stratified, write_dev_set


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunks", required=True)
    ap.add_argument("--plain", required=True)
    ap.add_argument("--sample", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="lat-")
    data = stratified(write_dev_set(Path(tmp.name), 0, ""), args.sample)
    started = machine()
    emb = CachedEmbedder(DiskCachedEmbedder(MiniLMEmbedder(), CACHE_ROOT), 4096)
    stores = {"with chunk vectors": args.chunks, "chunk_chars 0": args.plain}
    mems = {
        name: Memory(Config(path=str(Path(d) / "store"), max_content_chars=1_000_000), embedder=emb)
        for name, d in stores.items()
    }
    seconds: dict[str, list[float]] = {name: [] for name in mems}
    for round_ in range(args.rounds + 1):
        for entry in data:
            for name, mem in mems.items():
                t0 = time.perf_counter()
                mem.recall(entry["question"], user_id=entry["question_id"], limit=10)
                if round_:
                    seconds[name].append(time.perf_counter() - t0)
    for mem in mems.values():
        mem.close()
    turns = [sum(map(len, e["haystack_sessions"])) for e in data]
    lines = [
        "# Recall latency with and without chunk vectors (LongMemEval scopes)",
        "",
        "Command: `python bench/chunk_latency.py "
        + " ".join(map(shlex.quote, sys.argv[1:]))
        + "`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine: "
        f"{started['cpu']}, {started['cores']} cores (load at start "
        f"{started['load_avg_at_start']}).  ",
        f"{len(data)} questions, scopes of {min(turns)}-{max(turns)} turns; each asked "
        f"{args.rounds} times in both stores in turn (default, limit 10, tension check on).",
        "",
        "| store | p50 ms | p95 ms | n |",
        "|---|---|---|---|",
    ]
    for name, secs in seconds.items():
        lines.append(
            f"| {name} | {pct(secs, 50) * 1000:.1f} | {pct(secs, 95) * 1000:.1f} | {len(secs)} |"
        )
    Path(args.out, "chunk_latency.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    print(json.dumps({k: len(v) for k, v in seconds.items()}))


if __name__ == "__main__":
    main()

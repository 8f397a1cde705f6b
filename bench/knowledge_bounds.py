"""What one oversized knowledge base costs the server, before and after the knowledge bounds.

    python bench/knowledge_bounds.py --before SRC [--after SRC]

``SRC``: a checkout's ``src`` folder (``--after`` defaults to this checkout's). Each version runs
in a process of its own, against a real ``engrammar serve`` app on a loopback port over a SQLite
store, with the deterministic test embedder (the real model would take hours to embed the
200,000 passages the old code stored; what is measured here is the store and the searches):

1. the probe's request: ``POST /v1/knowledge`` with a 200,000-character document and
   ``chunk_chars`` 1 (status, seconds, passages stored, store size, resident memory);
2. the recalls of that user afterwards (median of 10, resident memory growth);
3. a scope at the new cap: 20,000 passages (10 documents of 2,000), and the median
   ``POST /v1/knowledge/search`` and ``POST /v1/recall`` of that user (20 each).

Writes bench/results/knowledge_bounds.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine

HERE = Path(__file__).resolve().parent
WORDS = "harbour lantern copper meadow violet engine quarry saddle ribbon orchard".split()


def _document(chars: int, seed: int = 0) -> str:
    out, i = [], seed
    while sum(map(len, out)) < chars:
        words = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(12)]
        out.append(f"Sentence {i} says the {' '.join(words)}. ")
        i += 1
    return "".join(out)[:chars]


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def _median_ms(fn: Any, n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2] * 1000


def measure() -> dict[str, Any]:
    """One version's figures (run with that version on ``sys.path``)."""
    import httpx
    import uvicorn

    from engrammar import Config, HashEmbedder, Memory
    from engrammar.interfaces.rest import server_config
    from engrammar.server import build_app

    sys.path.insert(0, str(HERE.parent / "tests"))
    from serving import free_port

    tmp = Path(tempfile.mkdtemp(prefix="kb-bounds-"))
    mem = Memory(
        Config(path=str(tmp / "store"), max_request_bytes=8_000_000), embedder=HashEmbedder()
    )
    port = free_port()
    app = build_app(mem, auth=False)
    server = uvicorn.Server(server_config(mem, app, host="127.0.0.1", port=port,
                                          log_level="critical"))  # fmt: skip
    import threading

    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    base = f"http://127.0.0.1:{port}"
    client = httpx.Client(base_url=base, timeout=3600)
    out: dict[str, Any] = {}
    rss0, size0 = _rss_mb(), _size_mb(tmp)
    t0 = time.perf_counter()
    r = client.post("/v1/knowledge", json={"name": "probe", "text": _document(200_000),
                                           "chunk_chars": 1, "user_id": "probe"})  # fmt: skip
    out["probe_status"] = r.status_code
    out["probe_s"] = round(time.perf_counter() - t0, 2)
    out["probe_passages"] = r.json().get("chunk_count", 0) if r.status_code == 201 else 0
    out["probe_store_mb"] = round(_size_mb(tmp) - size0, 1)
    out["probe_rss_mb"] = round(_rss_mb() - rss0, 1)
    rss1 = _rss_mb()
    recall = {"query": "copper lantern harbour", "user_id": "probe"}
    out["probe_recall_ms"] = round(_median_ms(lambda: client.post("/v1/recall", json=recall), 10))
    out["probe_recall_rss_mb"] = round(_rss_mb() - rss1, 1)
    for i in range(10):
        kb = mem.add_knowledge(f"doc {i}", [f"{s}." for s in _document(300_000, i * 10_000)
                                            .split(". ")[:2000]], user_id="full")  # fmt: skip
        assert kb.chunk_count == 2000
    search = {"query": "copper lantern harbour", "user_id": "full", "limit": 5}
    recall = {"query": "copper lantern harbour", "user_id": "full"}
    client.post("/v1/knowledge/search", json=search)  # the first loads what it keeps
    out["cap_search_ms"] = round(
        _median_ms(lambda: client.post("/v1/knowledge/search", json=search), 20), 1
    )
    out["cap_recall_ms"] = round(_median_ms(lambda: client.post("/v1/recall", json=recall), 20), 1)
    server.should_exit = True
    mem.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--before", required=True, help="src folder of the version before")
    ap.add_argument("--after", default=str(HERE.parent / "src"))
    ap.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure()))
        return
    started = machine()
    rows = {}
    for name, src in (("before", args.before), ("after", args.after)):
        env = {**os.environ, "PYTHONPATH": src}
        done = subprocess.run([sys.executable, __file__, "--measure", "--before", src],
                              env=env, capture_output=True, text=True, check=True)  # fmt: skip
        rows[name] = json.loads(done.stdout.strip().splitlines()[-1])
    b, a = rows["before"], rows["after"]
    command = "python bench/knowledge_bounds.py " + " ".join(shlex.quote(x) for x in sys.argv[1:])
    lines = [
        "# One oversized knowledge base, before and after the knowledge bounds",
        "",
        f"Command: `{command}`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine: "
        f"{started['cpu']}, {started['cores']} cores (load at start {started['load_avg_at_start']}). ",
        "Real server on loopback, SQLite store, deterministic test embedder (the store and the "
        "searches are measured, not the model). Before: no floor on `chunk_chars`, no caps, every "
        "knowledge search reads every vector of the scope. After: `chunk_chars` >= 100, at most "
        "5,000 passages a knowledge base and 20,000 a workspace and user, search by a kept "
        "index.",
        "",
        "| | before | after |",
        "|---|---|---|",
        f"| probe: `POST /v1/knowledge`, 200,000 characters, `chunk_chars` 1 | "
        f"{b['probe_status']} in {b['probe_s']} s | {a['probe_status']} in {a['probe_s']} s |",
        f"| passages stored | {b['probe_passages']:,} | {a['probe_passages']:,} |",
        f"| store growth, MB | {b['probe_store_mb']} | {a['probe_store_mb']} |",
        f"| server memory growth, MB | {b['probe_rss_mb']} | {a['probe_rss_mb']} |",
        f"| that user's recall afterwards, median ms | {b['probe_recall_ms']} | "
        f"{a['probe_recall_ms']} |",
        f"| memory growth over 10 recalls, MB | {b['probe_recall_rss_mb']} | "
        f"{a['probe_recall_rss_mb']} |",
        f"| 20,000 passages in a scope: `POST /v1/knowledge/search`, median ms | "
        f"{b['cap_search_ms']} | {a['cap_search_ms']} |",
        f"| 20,000 passages in a scope: `POST /v1/recall`, median ms | {b['cap_recall_ms']} | "
        f"{a['cap_recall_ms']} |",
        "",
    ]
    out = Path(args.out) / "knowledge_bounds.md"
    out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()

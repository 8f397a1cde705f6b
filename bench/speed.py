"""Speed of the embedded default, with the raw embedder measured beside it in the same run.

    python bench/speed.py [--data ../shared/data/locomo10.json] [--turns 1000] [--large 10000]

Writes bench/results/speed.md: add throughput for LoCoMo turns (batched and one
message per call) against the raw embedding time of the same texts; recall p50/p95 at 1k and
10k memories in one scope against the physical limit (query embedding + exact scan); recall on
one LongMemEval dev-S scope stored as an agent stores it (every turn with its role, long
messages with window vectors; ``limit`` 50, as bench/ranking.py asks); cold start.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA, RESULTS, load_locomo, locomo_turns, machine, summary_ms
from _embcache import DiskCachedEmbedder
from engrammar import Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.store import NewMemory
from ranking import SHARED, ingest_lme, lme_date


class _Recording:
    """The embedder as ``add`` calls it, keeping every text it was asked to embed."""

    def __init__(self, inner: MiniLMEmbedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        return self.inner.embed(texts)


#: Rounds of the batched add and its raw embeddings (the quickest of each is reported).
ADD_ROUNDS = 2


def _fresh_memory(path: Path, embedder: MiniLMEmbedder | _Recording) -> Memory:
    # A cache of zero size: every add really embeds, as for new text in production.
    return Memory(Config(path=str(path), embed_cache_size=0), embedder=embedder)


def _clock(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall and process CPU seconds (every thread's, the model's too) of ``fn()``."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def bench_add(turns: list[dict], embedder: MiniLMEmbedder, tmp: Path) -> dict:
    texts = [t["text"] for t in turns]
    # The model's first large batch sets up its buffers for every shape: paid here, by none
    # of the timed calls.
    embedder.embed(texts[:200])
    messages = [
        {"role": "user", "content": x, "name": t["speaker"]}
        for x, t in zip(texts, turns, strict=True)
    ]
    # Twice in turn (raw embedder, add into a new store, raw embedder on what add asked it to
    # embed), the quickest of each kept: load from other processes only ever adds time.
    raw: list[tuple[float, float]] = []
    add: list[tuple[float, float]] = []
    enriched: list[tuple[float, float]] = []
    for attempt in range(ADD_ROUNDS):
        raw.append(_clock(lambda: embedder.embed(texts)))
        recording = _Recording(embedder)
        m = _fresh_memory(tmp / f"add_batch_{attempt}", recording)
        add.append(_clock(lambda: m.add(messages, user_id="bench")))  # noqa: B023
        m.close()
        # What add really embeds, as it asked for it: each turn with its speaker's name, a
        # long turn as its windows (chunk_chars) instead of whole.
        embedded = recording.texts
        enriched.append(_clock(lambda: embedder.embed(embedded)))  # noqa: B023
    raw_batch, raw_cpu = min(w for w, _ in raw), min(c for _, c in raw)
    add_batch, add_cpu = min(w for w, _ in add), min(c for _, c in add)
    raw_enriched, enriched_cpu = min(w for w, _ in enriched), min(c for _, c in enriched)

    # One message per call, as a chat loop adds them; first 200 turns, each timed right after
    # the raw embedder on the same text, so both see the same moment of a noisy machine.
    single = texts[:200]
    raw_single = []
    m = _fresh_memory(tmp / "add_single", embedder)
    per_msg = []
    for x in single:
        t0 = time.perf_counter()
        embedder.embed([x])
        raw_single.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        m.add(x, user_id="bench")
        per_msg.append(time.perf_counter() - t0)
    m.close()
    return {
        "turns": len(texts),
        "raw_embed_batch_s": round(raw_batch, 3),
        "raw_embed_batch_cpu_s": round(raw_cpu, 3),
        "add_batch_s": round(add_batch, 3),
        "add_batch_cpu_s": round(add_cpu, 3),
        "add_batch_per_s": round(len(texts) / add_batch, 1),
        "add_over_raw_embed": round(add_batch / raw_batch, 3),
        "add_over_raw_embed_cpu": round(add_cpu / raw_cpu, 3),
        "embedded_texts": len(embedded),
        "raw_embed_enriched_s": round(raw_enriched, 3),
        "raw_embed_enriched_cpu_s": round(enriched_cpu, 3),
        "add_over_raw_enriched": round(add_batch / raw_enriched, 3),
        "add_over_raw_enriched_cpu": round(add_cpu / enriched_cpu, 3),
        "single_raw_embed": summary_ms(raw_single),
        "single_add": summary_ms(per_msg),
        "single_add_over_raw_p50": round(
            summary_ms(per_msg)["p50_ms"] / summary_ms(raw_single)["p50_ms"], 3
        ),
    }


def _fill(m: Memory, turns: list[dict], vectors: np.ndarray, n: int) -> None:
    """n memories in one scope: LoCoMo turns repeated with distinct ids (vectors reused)."""
    rows = []
    for i in range(n):
        t = turns[i % len(turns)]
        rep = i // len(turns)
        text = t["text"] if rep == 0 else f"{t['text']} (#{rep})"
        rows.append(
            NewMemory(
                id=uuid.uuid4().hex,
                workspace="default",
                user_id="bench",
                agent_id=None,
                session_id=None,
                role="user",
                content=text,
                kind="message",
                created_at=time.time(),
                metadata={},
                dedup_key=uuid.uuid4().hex,
                embedding=vectors[i % len(turns)],
            )
        )
    for start in range(0, len(rows), 5000):
        m.store.add_memories(rows[start : start + 5000])


def bench_recall(
    turns: list[dict],
    vectors: np.ndarray,
    queries: list[str],
    embedder: MiniLMEmbedder,
    tmp: Path,
    n: int,
) -> dict:
    m = Memory(Config(path=str(tmp / f"recall_{n}"), embed_cache_size=0), embedder=embedder)
    _fill(m, turns, vectors, n)
    m.recall(queries[0], user_id="bench")  # loads the scope's index once
    matrix = vectors[np.arange(n) % len(turns)]
    out = _timed(
        queries,
        lambda q: m.recall(q, user_id="bench"),
        lambda q: _scan(embedder, matrix, q, 10),
    )
    m.close()
    return {"memories": n, **out}


def _scan(embedder: MiniLMEmbedder, matrix: np.ndarray, query: str, k: int) -> None:
    """The physical limit of one recall: embed the query, scan every vector exactly."""
    qv = embedder.embed([query])[0]
    sims = np.einsum("ij,j->i", matrix, qv)  # the fastest exact scan measured here
    np.argpartition(-sims, k)[:k]


def _timed(
    queries: list[str], recall: Callable[[str], object], limit: Callable[[str], object]
) -> dict:
    """Recall and the limit on each query, one right after the other (the same moment of a
    noisy machine): wall time, and the process's CPU time (every thread, the model's too),
    which another process's load on the machine barely changes."""
    lat, lim, lat_cpu, lim_cpu = [], [], [], []
    for q in queries:
        for fn, wall, cpu in ((recall, lat, lat_cpu), (limit, lim, lim_cpu)):
            t0, c0 = time.perf_counter(), time.process_time()
            fn(q)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    r, li = summary_ms(lat), summary_ms(lim)
    rc, lc = summary_ms(lat_cpu), summary_ms(lim_cpu)
    return {
        "recall": r,
        "limit_embed_plus_scan": li,
        "p50_over_limit": round(r["p50_ms"] / li["p50_ms"], 3),
        "recall_cpu": rc,
        "limit_cpu": lc,
        "cpu_p50_over_limit": round(rc["p50_ms"] / lc["p50_ms"], 3),
    }


def bench_devs(embedder: MiniLMEmbedder, tmp: Path, queries: int) -> dict:
    """Recall on one dev-S scope of the agent protocol: the first fresh question's haystack
    (~500 turns, user and assistant, each with its role; the assistant's long answers with
    window vectors), asked the fresh questions at that question's date, ``limit`` 50."""
    data_file = tmp / "devs_fresh.json"
    export = [str(SHARED / "eval" / "lme_dev.py"), str(data_file), "--set", "s", "--fresh"]
    subprocess.run(
        [sys.executable, *export],
        check=True,
        capture_output=True,
    )
    data = json.loads(data_file.read_text())
    entry, user = data[0], data[0]["question_id"]
    cfg = Config(path=str(tmp / "devs"), embed_cache_size=0, max_content_chars=1_000_000)
    # Stored through Memory.add with the on-disk vector cache (the vectors are the model's);
    # asked with the model itself, so each query is really embedded.
    with Memory(cfg, embedder=DiskCachedEmbedder(embedder)) as m:
        ingest_lme(m, [entry], {"user", "assistant"})
    db = sqlite3.connect(tmp / "devs" / "engrammar.db")
    turns = db.execute("SELECT count(*) FROM memories WHERE user_id = ?", (user,)).fetchone()[0]
    blobs = [r[0] for r in db.execute("SELECT embedding FROM memories WHERE user_id = ?", (user,))]
    blobs += [
        r[0] for r in db.execute("SELECT embedding FROM memory_chunks WHERE user_id = ?", (user,))
    ]
    db.close()
    # The limit scans every vector recall searches: each memory's own and its windows'.
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
    asked = lme_date(entry["question_date"]).timestamp() + 86_399
    questions = [e["question"] for e in data][:queries]
    m = Memory(cfg, embedder=embedder)
    m.recall(questions[0], user_id=user, limit=50, as_of=asked)  # loads the scope's index once
    out = _timed(
        questions,
        lambda q: m.recall(q, user_id=user, limit=50, as_of=asked),
        lambda q: _scan(embedder, matrix, q, 50),
    )
    m.close()
    return {
        "question": user,
        "memories": turns,
        "vectors": len(blobs),
        "queries": len(questions),
        **out,
    }


def bench_cold_start(tmp: Path, repeats: int = 5) -> dict:
    path = tmp / "cold"
    m = Memory(Config(path=str(path)))
    m.add(
        ["I always write documentation before code.", "Long meetings are unproductive."],
        user_id="alice",
    )
    m.close()
    code = (
        "import time; t=time.perf_counter(); from engrammar import Memory, Config; "
        f"t1=time.perf_counter(); m=Memory(Config(path={str(path)!r})); t2=time.perf_counter(); "
        "m.recall('How do you approach projects?', user_id='alice'); t3=time.perf_counter(); "
        "print(t1-t, t2-t1, t3-t2, t3-t)"
    )
    runs = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        runs.append([float(x) for x in out.stdout.split()])
    arr = np.array(runs)
    med = np.median(arr, axis=0)
    return {
        "import_s": round(med[0], 3),
        "open_s": round(med[1], 3),
        "first_recall_s": round(med[2], 3),
        "total_s": round(med[3], 3),
        "repeats": repeats,
    }


_HEAD = (
    "| memories | recall p50 | recall p95 | limit p50 (embed query + exact scan) | p50 / limit "
    "| recall CPU p50 | limit CPU p50 | CPU p50 / limit |"
)


def _row(r: dict) -> str:
    return (
        f"| {r['memories']:,} | {r['recall']['p50_ms']} ms | {r['recall']['p95_ms']} ms | "
        f"{r['limit_embed_plus_scan']['p50_ms']} ms | **{r['p50_over_limit']}×** | "
        f"{r['recall_cpu']['p50_ms']} ms | {r['limit_cpu']['p50_ms']} ms | "
        f"**{r['cpu_p50_over_limit']}×** |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--large", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--devs-queries", type=int, default=80, help="dev-S questions asked")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()

    conversations = load_locomo(args.data)
    turns = locomo_turns(conversations)
    questions = [q["question"] for c in conversations for q in c["qa"]][: args.queries]
    embedder = MiniLMEmbedder()
    embedder.embed(["warm-up"])
    report: dict = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "command": "python bench/"
        + " ".join([Path(sys.argv[0]).name, *map(shlex.quote, sys.argv[1:])]),
    }
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        report["add"] = bench_add(turns[: args.turns], embedder, tmp)
        vectors = embedder.embed([t["text"] for t in turns])
        report["recall"] = [
            bench_recall(turns, vectors, questions, embedder, tmp, n) for n in (1000, args.large)
        ]
        report["devs"] = bench_devs(embedder, tmp, args.devs_queries)
        report["cold_start"] = bench_cold_start(tmp)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    a, cs = report["add"], report["cold_start"]
    lines = [
        "# Speed of the embedded default",
        "",
        f"Command: `{report['command']}` · date: {report['date']} · machine: "
        f"{report['machine']['cpu']}, "
        f"{report['machine']['cores']} cores, Python {report['machine']['python']}, "
        f"load average at start {tuple(round(x, 2) for x in report['machine']['load_avg_at_start'])}",
        "",
        "All figures from one run; ratios compare numbers measured side by side. CPU times are "
        "the process's (every thread's, the model's too): load from other processes on the "
        "machine stretches wall time far more than them.",
        "",
        "## Add (LoCoMo turns, real MiniLM int8 embeddings, embedding cache off)",
        "",
        "Target: batched add <= 1.2× the raw embedding of the same texts. Run one after the "
        f"other, {ADD_ROUNDS} rounds, the quickest of each kept (wall and CPU apart): the raw "
        "embedder on the turns, `add` of them into a new store, the raw embedder on what "
        "`add` asked it to embed.",
        "",
        "| what | wall | CPU |",
        "|---|---|---|",
        f"| turns in one `add` call | {a['turns']} | |",
        f"| raw embedder, same texts in one batch | {a['raw_embed_batch_s']} s | {a['raw_embed_batch_cpu_s']} s |",
        f"| `Memory.add`, one call | {a['add_batch_s']} s ({a['add_batch_per_s']} messages/s) | {a['add_batch_cpu_s']} s |",
        f"| add / raw embedding time | **{a['add_over_raw_embed']}×** | **{a['add_over_raw_embed_cpu']}×** |",
        f"| raw embedder on the {a['embedded_texts']} texts `add` embeds (speaker: turn; a long turn's windows instead of it) | {a['raw_embed_enriched_s']} s | {a['raw_embed_enriched_cpu_s']} s |",
        f"| add / raw embedding of those texts (the graph, the store and the index: the rest) | **{a['add_over_raw_enriched']}×** | **{a['add_over_raw_enriched_cpu']}×** |",
        "",
        "| one message per call | value |",
        "|---|---|",
        f"| raw embed p50 / p95 | {a['single_raw_embed']['p50_ms']} / {a['single_raw_embed']['p95_ms']} ms |",
        f"| `add` p50 / p95 | {a['single_add']['p50_ms']} / {a['single_add']['p95_ms']} ms |",
        f"| `add` / raw embed (p50) | **{a['single_add_over_raw_p50']}×** |",
        "",
        f"## Recall ({len(questions)} LoCoMo questions, one scope)",
        "",
        "Target: recall p50 <= 1.4× the limit.",
        "",
        _HEAD,
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [_row(r) for r in report["recall"]]
    dv = report["devs"]
    lines += [
        "",
        f"## Recall on a dev-S agent scope ({dv['queries']} questions, `limit` 50)",
        "",
        f"LongMemEval dev-S, first fresh question ({dv['question']}): {dv['memories']} turns, "
        f"user and assistant, stored with their roles; {dv['vectors']} vectors with the "
        "windows of long messages. Target: recall p50 <= 30 ms.",
        "",
        _HEAD,
        "|---|---|---|---|---|---|---|---|",
        _row(dv),
    ]
    lines += [
        "",
        f"## Cold start (new process: import + open + first recall, median of {cs['repeats']})",
        "",
        f"import {cs['import_s']} s · open (loads the model) {cs['open_s']} s · first recall "
        f"{cs['first_recall_s']} s · total **{cs['total_s']} s**",
        "",
        "For scale: MemWire 0.1.2, the system engrammar is a drop-in for, is measured beside engrammar, mem0 and the "
        "floors on the same workload in bench/results/peers.md (not re-measured here).",
        "",
    ]
    (out / "speed.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()

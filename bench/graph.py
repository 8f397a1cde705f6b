"""The memory graph: its cost and its effect on LoCoMo retrieval.

    python bench/graph.py [--data ../shared/data/locomo10.json] [--conversations 2]

Writes bench/results/graph.md (tension detection is measured by bench/tensions.py):

* LoCoMo (first N conversations, one scope each, one ``add`` per session so the sequence edges
  are real): edges per memory by kind; add time; recall p50/p95 with the graph on and off;
  evidence hit rate @5 and @10 (a question counts as hit if any of its evidence turns is among
  the top k) for graph_depth=0 and for several graph weights, all on the same stored graph.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA, RESULTS, load_locomo, locomo_turns, machine, summary_ms
from engrammar import Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.engine import ingest as engine_ingest

SETTINGS: list[tuple[str, dict[str, Any]]] = [
    ("graph off (graph_depth=0)", {"graph_depth": 0}),
    ("graph_weight=0.1 (default)", {}),
    ("graph_weight=0.3", {"graph_weight": 0.3}),
    ("graph_weight=0.5", {"graph_weight": 0.5}),
]


def ingest(mem: Memory, conv: dict[str, Any], user: str) -> tuple[dict[str, str], float, int]:
    """Adds every session; returns memory id -> dia_id, seconds, messages."""
    c = conv["conversation"]
    ids: dict[str, str] = {}
    n = 1
    spent = 0.0
    count = 0
    while f"session_{n}" in c:
        turns = c[f"session_{n}"]
        messages = []
        for t in turns:
            text = t["text"]
            if t.get("blip_caption"):
                text = f"{text} [shares an image: {t['blip_caption']}]"
            messages.append({"role": "user", "content": text, "name": t["speaker"]})
        t0 = time.perf_counter()
        out = mem.add(messages, user_id=user, session_id=f"{user}-s{n}")
        spent += time.perf_counter() - t0
        count += len(messages)
        for memory_id, t in zip(out, turns, strict=True):
            ids.setdefault(memory_id, t["dia_id"])
        n += 1
    return ids, spent, count


def locomo(args: argparse.Namespace, embedder: MiniLMEmbedder, tmp: Path) -> dict[str, Any]:
    conversations = load_locomo(args.data)[: args.conversations]
    path = tmp / "locomo"
    dia_of: dict[str, dict[str, str]] = {}
    add_s = 0.0
    added = 0
    with Memory(Config(path=str(path)), embedder=embedder) as mem:
        for conv in conversations:
            ids, spent, count = ingest(mem, conv, conv["sample_id"])
            dia_of[conv["sample_id"]] = ids
            add_s += spent
            added += count
        kinds: Counter[str] = Counter()
        degree = []
        for conv in conversations:
            edges = mem.store.edges_from("default", list(dia_of[conv["sample_id"]]))
            kinds.update(e.kind for e in edges)
            per: Counter[str] = Counter(e.src for e in edges)
            degree += [per.get(i, 0) for i in dia_of[conv["sample_id"]]]
    raw = embedder.embed  # time of the embeddings alone, for the add overhead
    texts = [
        t["text"]
        for conv in conversations
        for n in range(1, 100)
        for t in conv["conversation"].get(f"session_{n}", [])
    ]
    t0 = time.perf_counter()
    for start in range(0, len(texts), 64):
        raw(texts[start : start + 64])
    raw_s = time.perf_counter() - t0
    # All settings open the same store; each question is recalled under every setting in turn,
    # so a busy machine slows them alike.
    mems = [
        Memory(Config(path=str(path), **overrides), embedder=embedder) for _, overrides in SETTINGS
    ]
    hits5 = [0] * len(SETTINGS)
    hits10 = [0] * len(SETTINGS)
    lat: list[list[float]] = [[] for _ in SETTINGS]
    total = 0
    for conv in conversations:
        user = conv["sample_id"]
        for mem in mems:
            mem.recall("warm-up", user_id=user)
        for qa in conv["qa"]:
            evidence = set(qa.get("evidence") or [])
            if not evidence or qa.get("category") == 5:
                continue
            total += 1
            for k, mem in enumerate(mems):
                t0 = time.perf_counter()
                result = mem.recall(qa["question"], user_id=user, limit=10)
                lat[k].append(time.perf_counter() - t0)
                found = [dia_of[user].get(m.id) for m in result.memories]
                hits5[k] += bool(evidence & set(found[:5]))
                hits10[k] += bool(evidence & set(found[:10]))
    for mem in mems:
        mem.close()
    rows = [
        {
            "setting": label,
            "questions": total,
            "hit@5": round(hits5[k] / total, 4),
            "hit@10": round(hits10[k] / total, 4),
            "recall": summary_ms(lat[k]),
        }
        for k, (label, _) in enumerate(SETTINGS)
    ]
    return {
        "conversations": len(conversations),
        "messages": added,
        "add_s": round(add_s, 2),
        "raw_embed_s": round(raw_s, 2),
        "edges_by_kind": dict(kinds),
        "edges_per_memory_mean": round(sum(degree) / max(1, len(degree)), 2),
        "edges_per_memory_max": max(degree, default=0),
        "settings": rows,
    }


def single_adds(args: argparse.Namespace, embedder: MiniLMEmbedder, tmp: Path) -> dict[str, Any]:
    """One message per ``add`` onto 1,000 stored turns: the whole call and its graph part."""
    turns = locomo_turns(load_locomo(args.data))[:1200]
    spent: list[float] = []
    inner = engine_ingest.build_edges

    def timed(*a: Any, **k: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return inner(*a, **k)
        finally:
            spent.append(time.perf_counter() - t0)

    total = []
    with Memory(Config(path=str(tmp / "single"), embed_cache_size=0), embedder=embedder) as mem:
        mem.add(
            [{"role": "user", "content": t["text"], "name": t["speaker"]} for t in turns[:1000]],
            user_id="u",
            session_id="first",
        )
        engine_ingest.build_edges = timed
        try:
            for t in turns[1000:]:
                t0 = time.perf_counter()
                mem.add(
                    [{"role": "user", "content": t["text"], "name": t["speaker"]}],
                    user_id="u",
                    session_id="second",
                )
                total.append(time.perf_counter() - t0)
        finally:
            engine_ingest.build_edges = inner
    return {
        "stored": 1000,
        "adds": len(total),
        "add": summary_ms(total),
        "graph": summary_ms(spent),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--conversations", type=int, default=2)
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    embedder = MiniLMEmbedder()
    embedder.embed(["warm-up"])
    command = "python bench/" + " ".join([Path(sys.argv[0]).name, *map(shlex.quote, sys.argv[1:])])
    m = machine()
    where = f"machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, load average at start {tuple(round(x, 2) for x in m['load_avg_at_start'])}"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory() as d:
        g = locomo(args, embedder, Path(d))
        single = single_adds(args, embedder, Path(d))
    lines = [
        "# The memory graph on LoCoMo",
        "",
        f"Command: `{command}` · {where}",
        "",
        f"First {g['conversations']} LoCoMo conversations, {g['messages']} messages, one `add` "
        "per session. Hit@k = share of questions (category 5 excluded) with an evidence turn "
        "among the top k of `recall`; all settings recall from the same stored graph, each "
        "question under every setting in turn (latencies compare side by side).",
        "",
        f"Edges: {g['edges_by_kind']} · per memory mean {g['edges_per_memory_mean']}, max "
        f"{g['edges_per_memory_max']} · add {g['add_s']} s for {g['messages']} messages "
        f"(raw embedding of the bare texts {g['raw_embed_s']} s; `add` embeds them with "
        "their reply context, see embed_context, so the two differ in more than the graph)",
        "",
        "| setting | questions | hit@5 | hit@10 | recall p50 | recall p95 |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['setting']} | {r['questions']} | {r['hit@5']} | {r['hit@10']} | "
        f"{r['recall']['p50_ms']} ms | {r['recall']['p95_ms']} ms |"
        for r in g["settings"]
    ]
    lines += [
        "",
        f"One message per `add` onto {single['stored']:,} stored LoCoMo turns ({single['adds']} "
        f"adds): whole call p50 {single['add']['p50_ms']} ms / p95 {single['add']['p95_ms']} ms, "
        f"of which choosing the edges (neighbour search, term frequencies, tension checks) p50 "
        f"{single['graph']['p50_ms']} ms / p95 {single['graph']['p95_ms']} ms.",
        "",
    ]
    (out / "graph.md").write_text("\n".join(lines))
    (out / "graph.json").write_text(
        json.dumps(
            {"command": command, "machine": m, "locomo": g, "single_adds": single},
            indent=2,
        )
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()

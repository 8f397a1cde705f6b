"""Retrieval quality on LoCoMo: every variant, scored by the shared referee.

    python bench/locomo.py [--data ../shared/data/locomo10.json] [--conversations 1-10]
                           [--tune 1-5] [--ingest-ablations] [--out bench/results]

Ingests each conversation into its own user scope through the public API once (the default
configuration), then asks all questions through ``Memory.recall`` under each recall-time
variant over that same store: BM25 alone, vector alone, fused, fused + graph, the default, and
the default minus one step at a time. ``--ingest-ablations`` also builds the stores that differ
at ingest (no previous-message context in the vectors; no speaker names at all), which costs a
full re-embedding each. Writes bench/results/locomo.md, locomo.json and locomo_recall_at_k.png;
conversations in ``--tune`` are the ones defaults were tuned on, the rest are reported apart.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _locomo as ev
from _common import DEFAULT_DATA, RESULTS, machine
from _embcache import DiskCachedEmbedder
from engrammar import CachedEmbedder, Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder

OFF = {
    "speaker_boost": 0.0,
    "time_boost": 0.0,
    "neighbour_weight": 0.0,
    "second_neighbour_weight": 0.0,
    "query_without_speakers": False,
    "question_penalty": 0.0,
    "assistant_penalty": 0.0,
}
HAS_GRAPH = "graph_weight" in Config.describe()
GRAPH_OFF = {"graph_depth": 0} if HAS_GRAPH else {}

# name -> (config overrides at recall time, which ingest store)
VARIANTS: dict[str, tuple[dict[str, Any], str]] = {
    "bm25": ({"keyword_weight": 1.0, **OFF, **GRAPH_OFF}, "default"),
    "vector": ({"keyword_weight": 0.0, **OFF, **GRAPH_OFF}, "default"),
    "fused": ({**OFF, **GRAPH_OFF}, "default"),
    "fused (rrf)": ({"fusion": "rrf", **OFF, **GRAPH_OFF}, "default"),
    **({"fused + graph": ({**OFF}, "default")} if HAS_GRAPH else {}),
    "default": ({}, "default"),
    "default - speaker boost": ({"speaker_boost": 0.0}, "default"),
    "default - time boost": ({"time_boost": 0.0}, "default"),
    "default - names in the query vector": ({"query_without_speakers": False}, "default"),
    "default - question penalty": ({"question_penalty": 0.0}, "default"),
    "default - assistant penalty": ({"assistant_penalty": 0.0}, "default"),
    "default - neighbours": ({"neighbour_weight": 0.0}, "default"),
    "default - second neighbours": ({"second_neighbour_weight": 0.0}, "default"),
    "default - newer first": ({"recency_similarity": 1.0}, "default"),
    "default - event cover": ({"event_cover": False}, "default"),
    "default - group repeats": ({"group_repeats": False}, "default"),
    "default - proximity": ({"proximity_weight": 0.0}, "default"),
    **({"default - graph": ({**GRAPH_OFF}, "default")} if HAS_GRAPH else {}),
    **(
        {
            "default - graph - neighbours": (
                {**GRAPH_OFF, "neighbour_weight": 0.0, "second_neighbour_weight": 0.0},
                "default",
            )
        }
        if HAS_GRAPH
        else {}
    ),
}
# Settings probed around the default (run with --variants NAME,...).
PROBES: dict[str, tuple[dict[str, Any], str]] = {
    "default with neighbour_weight 0.6": ({"neighbour_weight": 0.6}, "default"),
    "default with neighbour_weight 1.0": ({"neighbour_weight": 1.0}, "default"),
    "default - graph with neighbour_weight 1.0": (
        {**GRAPH_OFF, "neighbour_weight": 1.0},
        "default",
    ),
    "default with speaker_boost 0.5": ({"speaker_boost": 0.5}, "default"),
    **{
        f"default with question_penalty {w}": ({"question_penalty": w}, "default")
        for w in (0.3, 0.5)
    },
    **{f"default with bm25_b {w}": ({"bm25_b": w}, "default") for w in (0.3, 0.5, 0.75)},
    "default with keyword_weight 0.6": ({"keyword_weight": 0.6}, "default"),
    "default with bm25_b 0.5 + keyword_weight 0.6": (
        {"bm25_b": 0.5, "keyword_weight": 0.6},
        "default",
    ),
    "default with bm25_b 0.5 + keyword_weight 0.55": (
        {"bm25_b": 0.5, "keyword_weight": 0.55},
        "default",
    ),
    **{
        f"default with session_spread {w}": ({"session_spread": w}, "default")
        for w in (0.1, 0.2, 0.3, 0.5)
    },
}
INGEST_VARIANTS: dict[str, tuple[dict[str, Any], str]] = {
    "default - context in vectors": ({}, "no-context"),
    "default - speaker names": ({}, "no-names"),
    "bm25 - speaker names": ({"keyword_weight": 1.0, **OFF, **GRAPH_OFF}, "no-names"),
    "vector - speaker names": ({"keyword_weight": 0.0, **OFF, **GRAPH_OFF}, "no-names"),
    "default with chunk_chars 250": ({}, "chunks-250"),
}
# Ingest-time differences: Config changes and whether speakers are given as names.
STORES = {
    "default": ({}, True),
    "no-context": ({"embed_context": False}, True),
    "no-names": ({}, False),
    "chunks-250": ({"chunk_chars": 250}, True),
}
KS = (1, 3, 5, 10, 20, 50)


def ingest_store(
    name: str,
    root: Path,
    data: list[dict[str, Any]],
    numbers: list[int],
    model: MiniLMEmbedder | DiskCachedEmbedder,
    reuse: bool = False,
) -> dict[str, Any]:
    changes, names = STORES[name]
    path = root / name
    if reuse and (path / "ingest.json").is_file():
        print(f"  [{name}] reusing {path} (ingest timed when it was built)", flush=True)
        return {**json.loads((path / "ingest.json").read_text()), "reused": True}
    cfg = Config(path=str(path), embed_cache_size=0, **changes)
    per_conv = []
    t0 = time.perf_counter()
    with Memory(cfg, embedder=model) as mem:
        for n in numbers:
            sample = data[n - 1] if names else _anonymous(data[n - 1])
            c0 = time.perf_counter()
            turns = ev.ingest(mem, sample)
            per_conv.append({"conversation": n, "turns": turns, "s": time.perf_counter() - c0})
            print(
                f"  [{name}] conversation {n}: {turns} turns in {per_conv[-1]['s']:.1f}s",
                flush=True,
            )
    total = time.perf_counter() - t0
    turns = sum(c["turns"] for c in per_conv)
    out = {
        "seconds": round(total, 2),
        "turns": turns,
        "turns_per_s": round(turns / total, 1),
        "per_conversation": per_conv,
        "path": str(path),
        "config": changes,
    }
    (path / "ingest.json").write_text(json.dumps(out), encoding="utf-8")
    return out


def _anonymous(sample: dict[str, Any]) -> dict[str, Any]:
    # Speakers dropped from the turns: what a store without names sees (text only).
    out = json.loads(json.dumps(sample))
    conv = out["conversation"]
    for key, value in conv.items():
        if key.startswith("session_") and isinstance(value, list):
            for turn in value:
                turn["speaker"] = None
    return out


def metrics(report: dict[str, Any]) -> dict[str, Any]:
    keep = [f"recall@{k}" for k in KS] + [f"ndcg@{k}" for k in KS] + ["mrr", "n"]
    return {row: {k: report[row][k] for k in keep if k in report[row]} for row in report}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--conversations", default="1-10")
    ap.add_argument("--tune", default="1-5", help="conversations the defaults were tuned on")
    ap.add_argument("--limit", type=int, default=50, help="memories recalled per question")
    ap.add_argument("--variants", default="", help="comma-separated subset of variant names")
    ap.add_argument("--ingest-ablations", action="store_true")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--store", default="", help="folder for the stores (default: a temp dir)")
    ap.add_argument("--reuse", action="store_true", help="reuse stores already in --store")
    ap.add_argument(
        "--embed-cache",
        action="store_true",
        help="keep turn vectors on disk (~/.cache/engrammar-bench): ingest times then "
        "measure the store, not the model",
    )
    ap.add_argument("--latency-questions", type=int, default=300)
    ap.add_argument(
        "--latency-only",
        action="store_true",
        help="re-measure only the latency (and query embedding) into the report in --out",
    )
    args = ap.parse_args()

    data = ev.load(args.data)
    ref = ev.referee(ev.referee_path(args.data))
    numbers = ev.parse_numbers(args.conversations, len(data))
    tune = [n for n in ev.parse_numbers(args.tune, len(data)) if n in numbers]
    held = [n for n in numbers if n not in tune]
    groups = {"all": numbers, "tune": tune, "held-out": held}
    questions = [q for q in ev.questions(ref, [data[n - 1] for n in numbers]) if q["evidence"]]
    print(f"{len(numbers)} conversations, {len(questions)} questions with evidence", flush=True)

    variants = dict(VARIANTS)
    known = {**VARIANTS, **INGEST_VARIANTS, **PROBES}
    if args.ingest_ablations:
        variants.update(INGEST_VARIANTS)
    if args.variants:
        wanted = [v.strip() for v in args.variants.split(",")]
        variants = {k: known[k] for k in wanted}
    if args.latency_only:
        variants = {}

    model = MiniLMEmbedder()
    ingest_model = DiskCachedEmbedder(model) if args.embed_cache else model
    tmp = tempfile.TemporaryDirectory(prefix="locomo-")
    root = Path(args.store) if args.store else Path(tmp.name)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    # The physical floor of a recall: embedding the question alone, timed in the same run.
    embed_s = []
    for q in questions[:500]:
        t0 = time.perf_counter()
        model.embed([q["question"]])
        embed_s.append(time.perf_counter() - t0)
    embed_ms = {
        "p50": round(ev.percentile(embed_s, 50) * 1000, 2),
        "p95": round(ev.percentile(embed_s, 95) * 1000, 2),
        "n": len(embed_s),
    }
    print(f"query embedding alone: p50 {embed_ms['p50']} ms, p95 {embed_ms['p95']} ms", flush=True)

    command = "python bench/locomo.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    doc: dict[str, Any] = {
        "command": command.strip(),
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "groups": groups,
        "limit": args.limit,
        "defaults": {
            k: v[0]
            for k, v in Config.describe().items()
            if k
            in (
                "keyword_weight",
                "fusion",
                "bm25_k1",
                "bm25_b",
                "embed_context",
                "speaker_boost",
                "time_boost",
                "neighbour_weight",
                "second_neighbour_weight",
                "query_without_speakers",
                "question_penalty",
                "proximity_weight",
                "proximity_window",
                "candidate_pool",
                "graph_weight",
                "graph_seeds",
                "graph_depth",
                "graph_sequence_weight",
            )
        },
        "ingest": {},
        "query_embedding_ms": embed_ms,
        "latency_ms": {},
        "variants": {},
    }
    # Questions are embedded once for all quality runs (the same vectors every time).
    shared = CachedEmbedder(model, 8192)
    if args.latency_only:
        # Keep the quality figures of the report already there; only the timings are new.
        previous = json.loads((out / "locomo.json").read_text(encoding="utf-8"))
        previous["latency_command"] = doc["command"]
        previous["query_embedding_ms"] = embed_ms
        previous["latency_ms"] = {}
        previous["latency_machine"] = doc["machine"]
        doc = previous
        doc["ingest"]["default"] = ingest_store("default", root, data, numbers, model, True)
    ingests: dict[str, Any] = doc["ingest"]
    results: dict[str, Any] = doc["variants"]
    # Variants run store by store, and the report is rewritten after each one, so a run cut
    # short still leaves every figure it measured.
    for name, (changes, store) in sorted(variants.items(), key=lambda kv: kv[1][1] != "default"):
        if store not in ingests:
            print(f"ingest [{store}]", flush=True)
            ingests[store] = ingest_store(store, root, data, numbers, ingest_model, args.reuse)
        # Tension detection does not change the ranking, and at limit 50 it compares up to
        # 1,225 pairs per recall; the quality runs skip it (latency is measured apart, below).
        cfg = Config(path=ingests[store]["path"], tension_min_similarity=1.0, **changes)
        t0 = time.perf_counter()
        with Memory(cfg, embedder=shared) as mem:
            run = ev.ask(mem, questions, limit=args.limit)
        wall = time.perf_counter() - t0
        entry: dict[str, Any] = {"store": store, "config": changes, "wall_s": round(wall, 1)}
        for group, nums in groups.items():
            if nums:
                report, _ = ev.score(ref, [data[n - 1] for n in nums], run)
                entry[group] = metrics(report)
        results[name] = entry
        o = entry["all"]["overall_1-4"]
        print(
            f"{name:32s} r@5 {o['recall@5']:.3f} r@10 {o['recall@10']:.3f} "
            f"ndcg@10 {o['ndcg@10']:.3f} mrr {o['mrr']:.3f} "
            f"mh r@10 {entry['all']['1:multi-hop']['recall@10']:.3f} ({wall:.0f}s)",
            flush=True,
        )
        if name == "default":
            run.write(out / "locomo_default.run.jsonl")
        (out / "locomo.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
        write_markdown(doc, out / "locomo.md")
        plot(results, out / "locomo_recall_at_k.png")

    # Latency of the default configuration as users run it: a fresh Memory (no cached query
    # vectors), tension detection on, graph on.
    step = max(1, len(questions) // max(args.latency_questions, 1))
    lat_items = questions[::step]
    latency_runs = (
        ("default, limit 10", 10, {}),
        ("default, limit 10, no tension check", 10, {"tension_min_similarity": 1.0}),
    )
    timed = "default" in ingests and args.latency_questions > 0  # 0 skips the latency runs
    for label, limit, extra in latency_runs if timed else ():
        with Memory(Config(path=ingests["default"]["path"], **extra), embedder=model) as mem:
            lat = ev.ask(mem, lat_items, limit=limit)
        doc["latency_ms"][label] = {
            "p50": round(ev.percentile(lat.seconds, 50) * 1000, 2),
            "p95": round(ev.percentile(lat.seconds, 95) * 1000, 2),
            "n": len(lat.seconds),
        }
        print(f"latency [{label}]: {doc['latency_ms'][label]}", flush=True)
        (out / "locomo.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
        write_markdown(doc, out / "locomo.md")
    print(f"wrote {out / 'locomo.md'}")


def write_markdown(doc: dict[str, Any], path: Path) -> None:
    lines = [
        "# LoCoMo retrieval (referee: ../shared/eval/locomo_retrieval.py)",
        "",
        f"Command: `{doc['command']}`  ",
        f"Date: {doc['date']}; machine: {doc['machine']['cpu']}, {doc['machine']['cores']} cores "
        f"(shared with other jobs; load at start {doc['machine']['load_avg_at_start']}); "
        f"Python {doc['machine']['python']}.  ",
        f"Protocol: one memory per turn, each conversation its own user scope, every question "
        f"through `Memory.recall(limit={doc['limit']})`; gold = evidence dialog ids. "
        f"Tuned on conversations {doc['groups']['tune']}; held-out {doc['groups']['held-out']}.",
        "",
        "Defaults: " + ", ".join(f"`{k}={v!r}`" for k, v in doc["defaults"].items()),
        "",
        "What was tried one idea at a time, and what was not kept: `locomo_notes.md`.",
        "",
        "## Categories 1-4 (overall)",
        "",
        "| variant | set | n | recall@5 | recall@10 | nDCG@10 | MRR | multi-hop r@10 | temporal r@10 "
        "| open-domain r@10 | single-hop r@10 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    cats = ["1:multi-hop", "2:temporal", "3:open-domain", "4:single-hop"]
    for name, entry in doc["variants"].items():
        for group in ("all", "tune", "held-out"):
            if group not in entry:
                continue
            o = entry[group]["overall_1-4"]
            cells = [
                f"{entry[group][c]['recall@10']:.3f}" if c in entry[group] else "-" for c in cats
            ]
            lines.append(
                f"| {name} | {group} | {o['n']} | {o['recall@5']:.3f} | {o['recall@10']:.3f} | "
                f"{o['ndcg@10']:.3f} | {o['mrr']:.3f} | " + " | ".join(cells) + " |"
            )
    lines += [
        "",
        "## Per category (all conversations)",
        "",
        "| variant | category | n | recall@5 | recall@10 | nDCG@10 | MRR |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, entry in doc["variants"].items():
        for cat in [*cats, "5:adversarial"]:
            row = entry["all"].get(cat)
            if row:
                lines.append(
                    f"| {name} | {cat} | {row['n']} | {row['recall@5']:.3f} | "
                    f"{row['recall@10']:.3f} | {row['ndcg@10']:.3f} | {row['mrr']:.3f} |"
                )
    lines += [
        "",
        "## Ingest",
        "",
        "| store | turns | seconds | turns/s | config |",
        "|---|---|---|---|---|",
    ]
    for name, ing in doc["ingest"].items():
        lines.append(
            f"| {name} | {ing['turns']} | {ing['seconds']} | {ing['turns_per_s']} | "
            f"`{ing['config']}` |"
        )
    emb = doc["query_embedding_ms"]
    lines += [
        "",
        "## Recall latency (default configuration)",
        "",
        "Per question, wall clock, on a fresh `Memory` (no cached query vectors): query "
        "embedding, search, refinement, graph walk, tension check, fetching the results and "
        f"writing the recall record. Embedding a question alone took p50 {emb['p50']} ms, "
        f"p95 {emb['p95']} ms in the same run (the floor any recall pays at that load). The "
        "quality runs above skip the tension check, which does not change the ranking."
        + (
            f" Timed by `{doc['latency_command']}` (load at start "
            f"{doc['latency_machine']['load_avg_at_start']})."
            if "latency_command" in doc
            else ""
        ),
        "",
        "| run | questions | p50 ms | p95 ms |",
        "|---|---|---|---|",
    ]
    for label, lat in doc["latency_ms"].items():
        lines.append(f"| {label} | {lat['n']} | {lat['p50']} | {lat['p95']} |")
    lines += ["", "![recall@k](locomo_recall_at_k.png)", ""]
    path.write_text("\n".join(lines), encoding="utf-8")


def plot(results: dict[str, Any], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (pip install -e '.[bench]'): no plot")
        return
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, entry in results.items():
        o = entry["all"]["overall_1-4"]
        ax.plot(KS, [o[f"recall@{k}"] for k in KS], marker="o", label=name)
    ax.set_xscale("log")
    ax.set_xticks(KS, [str(k) for k in KS])
    ax.set_xlabel("k")
    ax.set_ylabel("recall@k (categories 1-4)")
    ax.set_title("LoCoMo retrieval: recall@k per variant")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()

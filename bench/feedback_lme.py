"""Learning from feedback on LongMemEval: the second dataset for learning from feedback.

``bench/feedback_learning.py`` measures learning on LoCoMo, where many questions share one
conversation. LongMemEval gives every question its own haystack (one user scope each), of
user <-> assistant chats with long messages, so what it can show is different and
complementary:

* **re-asked**: one round of feedback on every scored dev question, then each question asked
  again. Per round, each question is recalled as a user would (``--rate-depth`` memories, at
  the question's date) and, by mode, *ratings* (every recalled memory rated: a gold turn
  ``accepted``, any other ``rejected``, tied to the recall), *replies* (the simulated reply,
  the question and its gold answer, sent through ``feedback(response=..., recall_id=...)``)
  or *both*; *noisy* is *both* with ``--flip`` of the ratings inverted at random;
* **other users untouched**: a round of *both* on the ``tune`` half only, then the
  ``held-out`` half asked: learning stays in the scope it was given in, so every held-out
  question's top ``--limit`` must be exactly what it was before (counted, not assumed);
* **what a top-``--rate-depth`` user could teach at most**: every gold turn of the recall the
  user rated moved to the top (an oracle on the "before" lists), beside the real gains.

Scored by the referee (../shared/eval/longmemeval_retrieval.py, turn level, official gold),
by half (``tune`` / ``held-out``, lme.py's hash split) and by question type. Needs a store
ingested by ``bench/lme.py --store DIR`` (all questions, default ingest settings); it is
copied for every condition and never written.

    python bench/lme.py --store /tmp/lme --variants default --speed-questions 0
    python bench/feedback_lme.py --store /tmp/lme/store
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine
from _embcache import CACHE_ROOT, DiskCachedEmbedder
from engrammar import CachedEmbedder, Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder
from lme import TYPES, _as_of, ask, half, referee, stratified, write_dev_set

METRICS = ("turn/recall_all@5", "turn/ndcg_any@10", "turn/recall_any@5")
MODES = ("both", "ratings", "replies", "noisy")


def gold_turns(ref: ModuleType, entry: dict[str, Any]) -> set[str]:
    turns, _sessions = ref.gold_for(entry, "official")
    return set(turns)


def feedback_round(
    mem: Memory,
    ref: ModuleType,
    data: Sequence[dict[str, Any]],
    mode: str,
    depth: int,
    flip: float,
    rng: random.Random,
) -> dict[str, int]:
    """One round of ``mode`` feedback over ``data``; returns what was given."""
    counts = {"ratings": 0, "flipped": 0, "replies": 0}
    rate = mode in ("ratings", "both", "noisy")
    reply = mode in ("replies", "both", "noisy")
    for entry in data:
        user = entry["question_id"]
        result = mem.recall(entry["question"], user_id=user, limit=depth, **_as_of(entry))
        gold = gold_turns(ref, entry)
        if rate:
            for item in result.memories:
                good = item.memory.metadata.get("turn_id") in gold
                if mode == "noisy" and rng.random() < flip:
                    good = not good
                    counts["flipped"] += 1
                verdict = "accepted" if good else "rejected"
                mem.rate_memory(item.id, verdict, user_id=user, recall_id=result.recall_id)
                counts["ratings"] += 1
        if reply:
            text = f"{entry['question']} {entry['answer']}"
            mem.feedback(response=text, user_id=user, recall_id=result.recall_id)
            counts["replies"] += 1
    return counts


def oracle(
    ref: ModuleType, data: Sequence[dict[str, Any]], run: dict[str, list[str]], depth: int
) -> dict[str, list[str]]:
    """The "before" lists with every gold turn of the top ``depth`` moved to the top."""
    out = {}
    for entry in data:
        ranked = run[entry["question_id"]]
        gold = gold_turns(ref, entry)
        seen = ranked[:depth]
        out[entry["question_id"]] = (
            [t for t in seen if t in gold] + [t for t in seen if t not in gold] + ranked[depth:]
        )
    return out


def all_at_5(
    ref: ModuleType, data: Sequence[dict[str, Any]], run: dict[str, list[str]]
) -> dict[str, int]:
    """Per question: 1 when every gold turn is in the top 5 (recall_all@5), else 0."""
    out = {}
    for entry in data:
        top = set(run[entry["question_id"]][:5])
        out[entry["question_id"]] = int(gold_turns(ref, entry) <= top)
    return out


def copy_store(src: Path, dst: Path) -> None:
    """A consistent copy of the store's database (SQLite's backup: WAL content included)."""
    dst.mkdir(parents=True)
    a = sqlite3.connect(src / "engrammar.db")
    b = sqlite3.connect(dst / "engrammar.db")
    a.backup(b)
    a.close()
    b.close()


def scores(
    ref: ModuleType, groups: dict[str, list[dict[str, Any]]], run: dict[str, list[str]]
) -> dict[str, dict[str, dict[str, float]]]:
    """Per group (all / tune / held-out), per type and overall: the metrics and n."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, entries in groups.items():
        report, _extra = ref.evaluate(
            list(entries), {e["question_id"]: run[e["question_id"]] for e in entries}
        )
        out[name] = {
            row: {"n": v["n"], **{m: v[m] for m in METRICS if m in v}} for row, v in report.items()
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--store", required=True, help="a store ingested by bench/lme.py --store")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated: " + ", ".join(MODES))
    ap.add_argument("--rate-depth", type=int, default=20, help="memories rated per question")
    ap.add_argument("--limit", type=int, default=50, help="recall depth when measuring")
    ap.add_argument("--flip", type=float, default=0.2, help="share of ratings inverted (noisy)")
    ap.add_argument("--sample", type=int, default=0, help="N questions over the types (0: all)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-isolation", action="store_true", help="skip the other-users check")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=JSON")
    ap.add_argument("--name", default="feedback_lme")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in modes:
        if m not in MODES:
            sys.exit(f"--modes: unknown mode {m!r} (known: {', '.join(MODES)})")
    settings = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}

    ref = referee("longmemeval_retrieval.py")
    tmp = Path(tempfile.mkdtemp(prefix="feedback-lme-"))
    try:
        data = stratified(write_dev_set(tmp, 0, ""), args.sample or 10_000)
        store = Path(args.store)
        ingested = json.loads((store / "ingest.json").read_text())
        missing = {e["question_id"] for e in data} - set(ingested["questions"])
        if missing:
            sys.exit(f"{store} lacks {len(missing)} questions: run bench/lme.py --store --reuse")
        groups = {
            "all": data,
            "tune": [e for e in data if half(e["question_id"]) == "tune"],
            "held-out": [e for e in data if half(e["question_id"]) == "held-out"],
        }
        shared = CachedEmbedder(DiskCachedEmbedder(MiniLMEmbedder(), CACHE_ROOT), 4096)

        def open_copy(name: str) -> Memory:
            folder = tmp / name
            copy_store(store, folder)
            cfg = Config(
                path=str(folder),
                tension_min_similarity=1.0,
                max_content_chars=1_000_000,
                **{**ingested.get("config", {}), **settings},
            )
            return Memory(cfg, embedder=shared)

        command = "python bench/feedback_lme.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        doc: dict[str, Any] = {
            "command": command,
            "machine": machine(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "questions": {g: len(v) for g, v in groups.items()},
            "rate_depth": args.rate_depth,
            "flip": args.flip,
            "settings": settings,
            "learning": {
                k: v[0] for k, v in Config.describe().items() if k.startswith("feedback_")
            },
            "conditions": {},
        }
        t0 = time.perf_counter()
        with open_copy("before") as mem:
            before, _ = ask(mem, data, args.limit)
        doc["conditions"]["before"] = {
            "scores": scores(ref, groups, before),
            "all@5": all_at_5(ref, data, before),
        }
        doc["conditions"]["oracle"] = {
            "scores": scores(ref, groups, oracle(ref, data, before, args.rate_depth))
        }
        print(f"before: {time.perf_counter() - t0:.0f}s", flush=True)
        for mode in modes:
            t0 = time.perf_counter()
            with open_copy(mode) as mem:
                given = feedback_round(
                    mem, ref, data, mode, args.rate_depth, args.flip, random.Random(args.seed)
                )
                t_round = time.perf_counter() - t0
                after, _ = ask(mem, data, args.limit)
            shutil.rmtree(tmp / mode, ignore_errors=True)
            doc["conditions"][mode] = {
                "given": given,
                "round_s": round(t_round, 1),
                "scores": scores(ref, groups, after),
                "changed": sum(before[q] != after[q] for q in before),
                "all@5": all_at_5(ref, data, after),
            }
            print(f"{mode}: {time.perf_counter() - t0:.0f}s {given}", flush=True)
        if not args.no_isolation:
            t0 = time.perf_counter()
            with open_copy("isolation") as mem:
                given = feedback_round(
                    mem, ref, groups["tune"], "both", args.rate_depth, 0.0, random.Random(0)
                )
                after, _ = ask(mem, data, args.limit)
            held = [e["question_id"] for e in groups["held-out"]]
            tuned = [e["question_id"] for e in groups["tune"]]
            doc["conditions"]["isolation"] = {
                "given": given,
                "scores": scores(ref, groups, after),
                "held_out_changed": sum(before[q] != after[q] for q in held),
                "held_out": len(held),
                "tune_changed": sum(before[q] != after[q] for q in tuned),
            }
            print(f"isolation: {time.perf_counter() - t0:.0f}s", flush=True)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{args.name}.json").write_text(json.dumps(doc, indent=1))
        (out / f"{args.name}.md").write_text(report(doc))
        print(f"wrote {out / (args.name + '.md')}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


LABEL = {
    "before": "before feedback",
    "oracle": "oracle: every gold turn of the rated top 20 moved to the top",
    "both": "ratings + replies, after feedback pass 1",
    "ratings": "ratings only, after feedback pass 1",
    "replies": "replies only, after feedback pass 1",
    "noisy": "ratings (20 % inverted) + replies, after feedback pass 1",
    "isolation": "ratings + replies on the tune half only",
}


def report(doc: dict[str, Any]) -> str:
    conds = doc["conditions"]
    base = conds["before"]["scores"]
    m = doc["machine"]
    lines = [
        "# Learning from feedback on LongMemEval (dev set)",
        "",
        f"Command: `{doc['command']}`  ",
        f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, load at start"
        f" {m['load_avg_at_start'][0]:.1f}; {doc['date']}  ",
        f"Data: {doc['questions']['all']} scored dev questions (tune {doc['questions']['tune']},"
        f" held-out {doc['questions']['held-out']}), each in its own user scope. Per round each"
        f" question is recalled at its date (limit {doc['rate_depth']}); *ratings*: every"
        " recalled memory rated (a gold turn accepted, any other rejected, tied to the recall);"
        " *replies*: the question and its gold answer sent through `feedback(response=...,"
        " recall_id=...)`; then every question is asked again. Metrics: the referee's, turn"
        " level; points are the change against *before feedback*.",
        "",
    ]
    if doc.get("settings"):
        lines += [f"Settings changed: `{json.dumps(doc['settings'])}`", ""]
    for group in ("all", "tune", "held-out"):
        lines += [
            f"## {group} (n = {doc['questions'][group]})",
            "",
            "| condition | recall_all@5 | ndcg_any@10 | recall_any@5 |",
            "|---|---|---|---|",
        ]
        for name, cond in conds.items():
            if name == "isolation":
                continue
            row = cond["scores"][group]["overall"]
            cells = []
            for m in METRICS:
                v = row[m]
                d = 100 * (v - base[group]["overall"][m])
                cells.append(f"{v:.3f}" + ("" if name == "before" else f" {d:+.1f}"))
            lines.append(f"| {LABEL.get(name, name)} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += [
        "## By question type (all), recall_all@5",
        "",
        "| condition | " + " | ".join(t for t in TYPES if t in base["all"]) + " |",
        "|---|" + "---|" * sum(t in base["all"] for t in TYPES),
    ]
    for name, cond in conds.items():
        if name == "isolation":
            continue
        cells = []
        for t in TYPES:
            if t not in base["all"]:
                continue
            v = cond["scores"]["all"][t]["turn/recall_all@5"]
            d = 100 * (v - base["all"][t]["turn/recall_all@5"])
            cells.append(f"{v:.3f}" + ("" if name == "before" else f" {d:+.1f}"))
        lines.append(f"| {LABEL.get(name, name)} | " + " | ".join(cells) + " |")
    lines.append("")
    given = {k: c["given"] for k, c in conds.items() if "given" in c}
    if given:
        lines += [
            "Feedback given per condition: " + "; ".join(f"{k} {v}" for k, v in given.items()),
            "",
        ]
    if "isolation" in conds:
        iso = conds["isolation"]
        held = iso["scores"]["held-out"]["overall"]
        tune = iso["scores"]["tune"]["overall"]
        lines += [
            "## Other users untouched",
            "",
            f"One round of ratings + replies on the tune half only: tune recall_all@5"
            f" {tune['turn/recall_all@5']:.3f}"
            f" ({100 * (tune['turn/recall_all@5'] - base['tune']['overall']['turn/recall_all@5']):+.1f};"
            f" {iso['tune_changed']} of {doc['questions']['tune']} rankings moved); held-out"
            f" recall_all@5 {held['turn/recall_all@5']:.3f}: **{iso['held_out_changed']} of"
            f" {iso['held_out']} held-out top-50 rankings differ from before**.",
            "",
        ]
    lines += [
        "Learning settings: " + ", ".join(f"`{k}` = {v}" for k, v in doc["learning"].items()),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()

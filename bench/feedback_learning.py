"""Does engrammar learn from feedback? A LoCoMo benchmark (no public benchmark measures this).

Each conversation's questions (categories 1-4) are split deterministically into train and test
halves (by a hash of the question id). Every dialog turn is one memory in the conversation's
user scope (as the referee's protocol says). Then:

1. measure recall@5 and nDCG@10 on train and test (the referee's metric functions);
2. feedback rounds over the train questions: recall, a simulated user rates every recalled
   memory (gold evidence ``accepted``, the rest ``rejected``, each rating tied to its recall),
   and a simulated assistant reply (question + gold answer) goes through
   ``Memory.feedback(response=...)`` when the library has that method;
3. measure again: train (re-asked) and test (unseen) after each round.

Repeated with 20% of the ratings flipped at random, and once with an adversarial burst after a
clean round: for some train questions one inverted rating (the best-ranked evidence rejected)
each; the burst is checked against the configured bound on a single score.

Ingestion (about 5.9k turns) is embedded once; every condition runs on a copy of that store.

    python bench/feedback_learning.py [--data ../shared/data/locomo10.json] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import platform
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from engrammar import Config, Memory

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT / ".." / "shared" / "data" / "locomo10.json"
REFEREE = ROOT / ".." / "shared" / "eval" / "locomo_retrieval.py"


def load_referee(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("locomo_retrieval", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load the referee at {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def is_train(question_id: str) -> bool:
    return hashlib.sha256(question_id.encode()).digest()[0] % 2 == 0


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.ref = load_referee(Path(args.referee))
        self.data = self.ref.load_data(args.data)
        if args.conversations:
            self.data = self.data[: args.conversations]
        queries = [
            q
            for q in self.ref.build_queries(self.data)
            if q["category"] in (1, 2, 3, 4) and q["evidence"]
        ]
        self.train = [q for q in queries if is_train(q["question_id"])]
        self.test = [q for q in queries if not is_train(q["question_id"])]
        self.tmp = Path(tempfile.mkdtemp(prefix="engrammar-feedback-bench-"))
        self.base_db = self.tmp / "base" / "engrammar.db"
        overrides = {
            name: value
            for name, value in (
                ("feedback_min_samples", args.min_samples),
                ("feedback_max_adjustment", args.max_adjustment),
            )
            if value is not None
        }
        self.config = Config(path=str(self.base_db.parent), **overrides)

    # -- store -----------------------------------------------------------------------------
    def ingest(self) -> float:
        """Embed and add every turn; with ``--store-cache`` reuse (or fill) a cached copy."""
        cache = Path(self.args.store_cache) if self.args.store_cache else None
        if cache is not None and cache.exists():
            self.base_db.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(cache, self.base_db)
            return float(json.loads(cache.with_suffix(".json").read_text())["ingest_seconds"])
        t0 = time.perf_counter()
        mem = Memory(self.config)
        for sample in self.data:
            messages = [
                {
                    "role": "user",
                    "content": self.ref.memory_text(turn),
                    "metadata": {"dia_id": turn["dia_id"]},
                }
                for turn in self.ref.iter_memories(sample)
            ]
            mem.add(messages, user_id=sample["sample_id"])
        mem.close()
        seconds = time.perf_counter() - t0
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            src = sqlite3.connect(self.base_db)
            dst = sqlite3.connect(cache)
            src.backup(dst)
            src.close()
            dst.close()
            cache.with_suffix(".json").write_text(json.dumps({"ingest_seconds": seconds}))
        return seconds

    def fresh(self, name: str) -> Memory:
        """A Memory on a copy of the ingested store (SQLite online backup: consistent)."""
        folder = self.tmp / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        src = sqlite3.connect(self.base_db)
        dst = sqlite3.connect(folder / "engrammar.db")
        src.backup(dst)
        src.close()
        dst.close()
        return Memory(self.config.replace(path=str(folder)))

    # -- measuring ---------------------------------------------------------------------------
    def ranked(self, mem: Memory, q: dict[str, Any], limit: int) -> list[tuple[str, str]]:
        result = mem.recall(q["question"], user_id=q["sample_id"], limit=limit)
        return [(m.id, m.memory.metadata.get("dia_id", "")) for m in result.memories]

    def measure(self, mem: Memory, queries: list[dict[str, Any]]) -> dict[str, float]:
        rows = []
        for q in queries:
            ranked = [d for _, d in self.ranked(mem, q, 10) if d]
            rows.append(self.ref.score_query(ranked, q["evidence"], (5, 10)))
        return {
            "recall@5": sum(r["recall@5"] for r in rows) / len(rows),
            "ndcg@10": sum(r["ndcg@10"] for r in rows) / len(rows),
        }

    def snapshot(self, mem: Memory) -> dict[str, dict[str, float]]:
        return {"train": self.measure(mem, self.train), "test": self.measure(mem, self.test)}

    # -- feedback ----------------------------------------------------------------------------
    def feedback_round(self, mem: Memory, flip: float, rng: random.Random) -> dict[str, int]:
        counts = {"ratings": 0, "flipped": 0, "replies": 0}
        use_reply = hasattr(mem, "feedback") and not self.args.ratings_only
        for q in self.train:
            result = mem.recall(q["question"], user_id=q["sample_id"], limit=self.args.rate_depth)
            gold = set(q["evidence"])
            for item in result.memories:
                good = item.memory.metadata.get("dia_id") in gold
                if flip and rng.random() < flip:
                    good = not good
                    counts["flipped"] += 1
                mem.rate_memory(
                    item.id, "accepted" if good else "rejected", recall_id=result.recall_id
                )
                counts["ratings"] += 1
            if use_reply:
                reply = f"{q['question']} {q['answer']}"
                mem.feedback(response=reply, user_id=q["sample_id"], recall_id=result.recall_id)
                counts["replies"] += 1
        return counts

    def adversarial_burst(self, mem: Memory, rng: random.Random) -> dict[str, Any]:
        """One inverted rating for each of some train questions; each checked against the bound."""
        bound = mem.config.feedback_max_adjustment
        targets = rng.sample(self.train, min(self.args.burst, len(self.train)))
        worst = 0.0
        for q in targets:
            before = mem.recall(q["question"], user_id=q["sample_id"], limit=self.args.rate_depth)
            gold = set(q["evidence"])
            victim = next(
                (m for m in before.memories if m.memory.metadata.get("dia_id") in gold), None
            )
            if victim is None:
                continue
            mem.rate_memory(victim.id, "rejected", recall_id=before.recall_id)
            after = mem.recall(
                q["question"], user_id=q["sample_id"], limit=self.args.rate_depth * 5
            )
            moved = next((m for m in after.memories if m.id == victim.id), None)
            if moved is None:
                worst = max(worst, 1.0)  # fell out of the list: count as a full move
                continue
            worst = max(worst, abs(moved.score / victim.score - 1.0))
        return {"ratings": len(targets), "max_relative_score_change": worst, "bound": bound}


def run(args: argparse.Namespace) -> dict[str, Any]:
    bench = Bench(args)
    out: dict[str, Any] = {
        "n_train": len(bench.train),
        "n_test": len(bench.test),
        "conversations": len(bench.data),
        "config": {
            name: getattr(bench.config, name)
            for name in (
                "feedback_min_samples",
                "feedback_max_adjustment",
                "feedback_half_life_days",
                "feedback_context_min",
                "feedback_context_full",
                "feedback_reply_top",
                "feedback_reply_weight",
                "feedback_reply_context_min",
                "feedback_reply_context_full",
                "feedback_conflict_weight",
            )
        },
    }
    print(f"train {len(bench.train)}, test {len(bench.test)}; ingesting...", file=sys.stderr)
    out["ingest_seconds"] = bench.ingest()
    rounds = args.rounds
    for name, flip in (("clean", 0.0), ("noisy20", 0.2)):
        rng = random.Random(args.seed)
        mem = bench.fresh(name)
        curve = [bench.snapshot(mem)]
        counts = []
        has_reply = hasattr(mem, "feedback") and not args.ratings_only
        for r in range(rounds):
            t0 = time.perf_counter()
            counts.append(bench.feedback_round(mem, flip, rng))
            curve.append(bench.snapshot(mem))
            print(
                f"{name} round {r + 1}: train r@5 {curve[-1]['train']['recall@5']:.3f} "
                f"test r@5 {curve[-1]['test']['recall@5']:.3f} ({time.perf_counter() - t0:.0f}s)",
                file=sys.stderr,
            )
            if name == "noisy20" and not args.noisy_all_rounds:
                break
        out[name] = {"curve": curve, "counts": counts, "replies_used": has_reply}
        if name == "clean":
            rng = random.Random(args.seed + 1)
            burst_mem = bench.fresh("burst")
            bench.feedback_round(burst_mem, 0.0, rng)
            clean1 = bench.snapshot(burst_mem)
            burst = bench.adversarial_burst(burst_mem, rng)
            burst["after"] = bench.snapshot(burst_mem)
            burst["before"] = clean1
            out["adversarial"] = burst
            burst_mem.close()
        mem.close()
    shutil.rmtree(bench.tmp, ignore_errors=True)
    return out


def report(out: dict[str, Any], args: argparse.Namespace, command: str) -> str:
    clean = out["clean"]["curve"]
    noisy = out["noisy20"]["curve"]
    base_tr, base_te = clean[0]["train"], clean[0]["test"]
    one_tr, one_te = clean[1]["train"], clean[1]["test"]
    gain = one_tr["recall@5"] - base_tr["recall@5"]
    noisy_gain = noisy[1]["train"]["recall@5"] - noisy[0]["train"]["recall@5"]
    adv = out["adversarial"]
    lines = [
        "# Learning from feedback on LoCoMo",
        "",
        f"Command: `{command}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared), Python "
        f"{platform.python_version()}, {platform.system()}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  ",
        f"Data: {out['conversations']} conversations, categories 1-4; train {out['n_train']} / "
        f"test {out['n_test']} questions (split by sha256(question_id)); ingest "
        f"{out['ingest_seconds']:.0f} s. Metrics: the referee's `score_query`.  ",
        f"Feedback per round: each train question recalled (limit {args.rate_depth}), every "
        "recalled memory rated (evidence accepted, others rejected, tied to the recall); "
        + (
            "the simulated reply (question + gold answer) sent through `feedback(response=...)`."
            if out["clean"]["replies_used"]
            else "**no `Memory.feedback(response=...)` in this build: ratings only.**"
        ),
        "",
        "| condition | train recall@5 | train nDCG@10 | test recall@5 | test nDCG@10 |",
        "|---|---|---|---|---|",
    ]

    def row(name: str, s: dict[str, dict[str, float]]) -> str:
        return (
            f"| {name} | {s['train']['recall@5']:.3f} | {s['train']['ndcg@10']:.3f} | "
            f"{s['test']['recall@5']:.3f} | {s['test']['ndcg@10']:.3f} |"
        )

    lines.append(row("before feedback", clean[0]))
    for i, s in enumerate(clean[1:], 1):
        lines.append(row(f"clean, after round {i}", s))
    for i, s in enumerate(noisy[1:], 1):
        lines.append(row(f"20% flipped, after round {i}", s))
    lines.append(row("clean round 1 + adversarial burst", adv["after"]))
    keep = noisy_gain / gain if gain else 0.0
    if len(noisy) == len(clean) and len(clean) > 2:
        clean_n = clean[-1]["train"]["recall@5"] - base_tr["recall@5"]
        noisy_n = noisy[-1]["train"]["recall@5"] - noisy[0]["train"]["recall@5"]
        late_keep = noisy_n / clean_n if clean_n else 0.0
    else:
        late_keep = None
    lines += [
        "",
        "| target | result | met |",
        "|---|---|---|",
        f"| re-asked recall@5 +20 points after one round | {100 * gain:+.1f} points | "
        f"{'yes' if gain >= 0.20 else 'no'} |",
        f"| (after {len(clean) - 1} rounds) re-asked recall@5 | "
        f"{100 * (clean[-1]['train']['recall@5'] - base_tr['recall@5']):+.1f} points | "
        f"{'yes' if clean[-1]['train']['recall@5'] - base_tr['recall@5'] >= 0.20 else 'no'} |",
        f"| unseen not worse | recall@5 {100 * (one_te['recall@5'] - base_te['recall@5']):+.1f}, "
        f"nDCG@10 {100 * (one_te['ndcg@10'] - base_te['ndcg@10']):+.1f} points | "
        f"{'yes' if one_te['recall@5'] >= base_te['recall@5'] - 1e-9 else 'no'} |",
        f"| 20% noise keeps >= 80% of the clean gain (round 1) | {100 * noisy_gain:+.1f} "
        f"points = {100 * keep:.0f}% | {'yes' if keep >= 0.8 else 'no'} |",
        *(
            [
                f"| 20% noise keeps >= 80% of the clean gain (after {len(clean) - 1} rounds, "
                f"noise redrawn each round) | {100 * late_keep:.0f}% | "
                f"{'yes' if late_keep >= 0.8 else 'no'} |"
            ]
            if late_keep is not None
            else []
        ),
        f"| one adversarial rating moves a score at most feedback_max_adjustment "
        f"({adv['bound']}) | max relative change {adv['max_relative_score_change']:.3f} over "
        f"{adv['ratings']} single ratings | "
        f"{'yes' if adv['max_relative_score_change'] <= adv['bound'] + 1e-9 else 'no'} |",
        "",
        f"Adversarial burst ({adv['ratings']} inverted ratings, one per question): re-asked "
        f"recall@5 {adv['before']['train']['recall@5']:.3f} -> "
        f"{adv['after']['train']['recall@5']:.3f}.",
        "",
        "Learning settings: " + ", ".join(f"`{k}` = {v}" for k, v in out.get("config", {}).items()),
        "",
        f"![recall@5 vs feedback rounds]({args.name}.png)",
        "",
    ]
    return "\n".join(lines)


def plot(out: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, style in (("clean", "-o"), ("noisy20", "--s")):
        curve = out[name]["curve"]
        xs = list(range(len(curve)))
        label = "20% flipped" if name == "noisy20" else "clean"
        ax.plot(xs, [c["train"]["recall@5"] for c in curve], style, label=f"re-asked ({label})")
        ax.plot(
            xs, [c["test"]["recall@5"] for c in curve], style, alpha=0.5, label=f"unseen ({label})"
        )
    ax.set_xticks(range(len(out["clean"]["curve"])))
    ax.set_xlabel("feedback rounds over the train questions")
    ax.set_ylabel("recall@5")
    ax.set_title("engrammar on LoCoMo: learning from feedback")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--referee", default=str(REFEREE))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate-depth", type=int, default=20, help="memories rated per question")
    parser.add_argument("--burst", type=int, default=50, help="questions hit by the adversary")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--conversations", type=int, default=0, help="first N only (0 = all)")
    parser.add_argument("--ratings-only", action="store_true", help="skip feedback(response=)")
    parser.add_argument("--noisy-all-rounds", action="store_true")
    parser.add_argument("--min-samples", type=float, help="override feedback_min_samples")
    parser.add_argument("--max-adjustment", type=float, help="override feedback_max_adjustment")
    parser.add_argument(
        "--store-cache",
        help="SQLite file: reuse this ingested store if it exists, else ingest and save it here",
    )
    parser.add_argument("--name", default="feedback_learning", help="result file stem")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    command = "python bench/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])
    out = run(args)
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{args.name}.json").write_text(json.dumps(out, indent=2))
    (folder / f"{args.name}.md").write_text(report(out, args, command))
    plot(out, folder / f"{args.name}.png")
    print(report(out, args, command))


if __name__ == "__main__":
    main()

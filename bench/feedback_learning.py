"""Does engrammar learn from feedback, and does it carry over? A LoCoMo benchmark.

Each conversation's questions (categories 1-4) are split deterministically into train and test
halves (by a hash of the question id). Every dialog turn is one memory in the conversation's
user scope (as the referee's protocol says). Test questions that share at least one evidence
turn with some train question of their conversation are *related unseen*, the rest *unrelated
unseen*. Then:

1. measure recall@5 and nDCG@10 per question (the referee's metric functions);
2. one (or ``--rounds``) feedback round over the train questions in each mode, on its own copy
   of the store: *ratings* (a simulated user rates every recalled memory: gold evidence
   ``accepted``, the rest ``rejected``, each rating tied to its recall), *replies* (a simulated
   assistant reply, question + gold answer, goes through ``Memory.feedback(response=...)``, no
   ratings) and *both*;
3. measure again: re-asked (train), related unseen and unrelated unseen, reported for
   conversations 1-5 and 6-10 separately.

Also (unless ``--no-noise``): *both* with 20% of the ratings flipped at random, and an
adversarial burst after a clean round: for some train questions one inverted rating (the
best-ranked evidence rejected by its own user) each, checked against what the rules promise: the
rating's learned share of the score within ``feedback_max_adjustment``, and the memory passed by
at most one memory not itself rejected.

Ingestion (about 5.9k turns) is embedded once (``--store-cache`` keeps it between runs);
every condition runs on a copy of that store.

    python bench/feedback_learning.py [--store-cache /tmp/locomo-store.db] [--modes both]
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
# The shared folder sits beside the checkout (or beside the folder of worktrees).
SHARED = next(
    (p / "shared" for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared").is_dir()),
    ROOT.parent / "shared",
)
DEFAULT_DATA = SHARED / "data" / "locomo10.json"
REFEREE = SHARED / "eval" / "locomo_retrieval.py"


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
        # A test question is "related" when some train question of its conversation has an
        # evidence turn in common with it: feedback on that turn could carry over.
        seen = {(q["sample_id"], d) for q in self.train for d in q["evidence"]}
        self.related = [
            q for q in self.test if any((q["sample_id"], d) in seen for d in q["evidence"])
        ]
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
        for item in args.set or ():
            name, _, raw = item.partition("=")
            overrides[name] = json.loads(raw)
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
        mem = Memory(self.config, embedder=self.ingest_embedder())
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

    def ingest_embedder(self) -> Any:
        """The default model, with ``--embed-cache`` behind a disk cache of its vectors
        (bench/_embcache.py): the same vectors, computed once across runs."""
        if not self.args.embed_cache:
            return None
        from engrammar.embed import make_embedder

        sys.path.insert(0, str(ROOT / "bench"))
        from _embcache import DiskCachedEmbedder

        return DiskCachedEmbedder(make_embedder(self.config))

    def fresh(self, name: str, **overrides: Any) -> Memory:
        """A Memory on a copy of the ingested store (SQLite online backup: consistent)."""
        folder = self.tmp / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        src = sqlite3.connect(self.base_db)
        dst = sqlite3.connect(folder / "engrammar.db")
        src.backup(dst)
        src.close()
        dst.close()
        return Memory(self.config.replace(path=str(folder), **overrides))

    # -- measuring ---------------------------------------------------------------------------
    def ranked(self, mem: Memory, q: dict[str, Any], limit: int) -> list[tuple[str, str]]:
        result = mem.recall(q["question"], user_id=q["sample_id"], limit=limit)
        return [(m.id, m.memory.metadata.get("dia_id", "")) for m in result.memories]

    def measure(self, mem: Memory, queries: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
        """Per question id: recall@5 and nDCG@10."""
        out = {}
        for q in queries:
            ranked = [d for _, d in self.ranked(mem, q, 10) if d]
            row = self.ref.score_query(ranked, q["evidence"], (5, 10))
            out[q["question_id"]] = {"recall@5": row["recall@5"], "ndcg@10": row["ndcg@10"]}
        return out

    def snapshot(self, mem: Memory) -> dict[str, dict[str, float]]:
        return self.measure(mem, self.train + self.test)

    def subsets(self) -> dict[str, list[str]]:
        related = {q["question_id"] for q in self.related}
        return {
            "train": [q["question_id"] for q in self.train],
            "test": [q["question_id"] for q in self.test],
            "related": sorted(related),
            "unrelated": [q["question_id"] for q in self.test if q["question_id"] not in related],
        }

    def progress(self, name: str, snap: dict[str, dict[str, float]], seconds: float = 0) -> None:
        parts = []
        for key, ids in self.subsets().items():
            parts.append(f"{key} {sum(snap[i]['recall@5'] for i in ids) / len(ids):.3f}")
        print(f"{name}: r@5 " + ", ".join(parts) + f" ({seconds:.0f}s)", file=sys.stderr)

    # -- feedback ----------------------------------------------------------------------------
    def feedback_round(
        self, mem: Memory, flip: float, rng: random.Random, mode: str
    ) -> dict[str, int]:
        """One round over the train questions; ``mode`` is ratings, replies or both."""
        counts = {"ratings": 0, "flipped": 0, "replies": 0}
        for q in self.train:
            result = mem.recall(q["question"], user_id=q["sample_id"], limit=self.args.rate_depth)
            gold = set(q["evidence"])
            if mode in ("ratings", "both"):
                for item in result.memories:
                    good = item.memory.metadata.get("dia_id") in gold
                    if flip and rng.random() < flip:
                        good = not good
                        counts["flipped"] += 1
                    mem.rate_memory(
                        item.id, "accepted" if good else "rejected", recall_id=result.recall_id
                    )
                    counts["ratings"] += 1
            if mode in ("replies", "both"):
                reply = f"{q['question']} {q['answer']}"
                mem.feedback(response=reply, user_id=q["sample_id"], recall_id=result.recall_id)
                counts["replies"] += 1
        return counts

    def flood(self, mem: Memory, rng: random.Random) -> dict[str, Any]:
        """One source (``flood``) gives ``--flood`` inverted ratings within one minute: for
        train questions picked at random it recalls as the user would, then (``--flood-shape
        repeat``) rejects the recalled evidence and accepts the best recalled non-evidence
        memory over and over, ``--flood-repeat`` ratings a question, or (``spread``) rates
        every recalled memory once, inverted, as a clean round would (no repeats). Every
        rating is tied to the flooder's own recall."""
        start = time.time()
        total = self.args.flood
        spacing = 60.0 / total  # 1,000 ratings in a minute: timestamps 60 ms apart
        given = 0
        questions = rng.sample(self.train, len(self.train))
        targets_hit: set[str] = set()
        for q in questions:
            if given >= total:
                break
            result = mem.recall(q["question"], user_id=q["sample_id"], limit=self.args.rate_depth)
            gold = set(q["evidence"])
            evidence = [m for m in result.memories if m.memory.metadata.get("dia_id") in gold]
            other = [m for m in result.memories if m.memory.metadata.get("dia_id") not in gold]
            if self.args.flood_shape == "spread":
                plan = [
                    (m.id, "rejected" if m in evidence else "accepted") for m in result.memories
                ]
                repeat = len(plan)
            else:
                plan = [(m.id, "rejected") for m in evidence]
                plan += [(m.id, "accepted") for m in other[:1]]
                repeat = self.args.flood_repeat
            if not plan:
                continue
            for i in range(repeat):
                memory_id, verdict = plan[i % len(plan)]
                if given >= total:
                    break
                mem.rate_memory(
                    memory_id,
                    verdict,
                    recall_id=result.recall_id,
                    source="flood",
                    timestamp=start + given * spacing,
                )
                targets_hit.add(memory_id)
                given += 1
        return {
            "ratings": given,
            "memories": len(targets_hit),
            "seconds_spanned": 60.0,
            "shape": self.args.flood_shape,
        }

    def adversarial_burst(self, mem: Memory, rng: random.Random) -> dict[str, Any]:
        """One inverted rating for each of some train questions (the best-ranked evidence
        rejected, by the memory's own user), each checked against what the rules promise: the
        rating's learned share of the score moves at most ``feedback_max_adjustment``, and the
        memory falls below at most one memory that was not itself rejected by its user."""
        bound = mem.config.feedback_max_adjustment
        targets = rng.sample(self.train, min(self.args.burst, len(self.train)))
        worst_share = 0.0
        worst_places = 0
        rated = 0
        for q in targets:
            before = mem.recall(q["question"], user_id=q["sample_id"], limit=self.args.rate_depth)
            gold = set(q["evidence"])
            victim = next(
                (m for m in before.memories if m.memory.metadata.get("dia_id") in gold), None
            )
            if victim is None:
                continue
            rated += 1
            mem.rate_memory(victim.id, "rejected", recall_id=before.recall_id)
            after = mem.recall(
                q["question"], user_id=q["sample_id"], limit=self.args.rate_depth * 5
            )
            ids = [m.id for m in after.memories]
            if victim.id not in ids:
                worst_places = max(worst_places, len(ids))  # fell out of the list
                continue
            moved = after.memories[ids.index(victim.id)]
            was_below = {m.id for m in before.memories[before.memories.index(victim) + 1 :]}
            passed = [
                m
                for m in after.memories[: ids.index(victim.id)]
                if (m.id in was_below or m.id not in {x.id for x in before.memories})
                and not m.components.get("rejected_by_user")
            ]
            worst_places = max(worst_places, len(passed))
            share = moved.components.get("learned", 0.0) - victim.components.get("learned", 0.0)
            worst_share = max(worst_share, abs(share))
        return {
            "ratings": rated,
            "max_learned_share_change": worst_share,
            "max_places": worst_places,
            "bound": bound,
        }


MODES = ("ratings", "replies", "both")
MODE_LABEL = {
    "ratings": "ratings only",
    "replies": "replies only",
    "both": "ratings + replies",
}
GROUPS = (("conversations 1-5", 0, 5), ("conversations 6-10", 5, 10), ("all", 0, 10))
SUBSETS = (
    ("re-asked", "train"),
    ("related unseen", "related"),
    ("unrelated unseen", "unrelated"),
    ("unseen (all)", "test"),
)


def run(args: argparse.Namespace) -> dict[str, Any]:
    bench = Bench(args)
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            raise SystemExit(f"--modes: unknown mode {m!r} (choose from {', '.join(MODES)})")
    out: dict[str, Any] = {
        "n_train": len(bench.train),
        "n_test": len(bench.test),
        "n_related": len(bench.related),
        "n_unrelated": len(bench.test) - len(bench.related),
        "conversations": len(bench.data),
        "samples": [s["sample_id"] for s in bench.data],
        "subsets": bench.subsets(),
        "config": {
            name: getattr(bench.config, name)
            for name in (
                "feedback_min_samples",
                "feedback_max_adjustment",
                "feedback_half_life_days",
                "feedback_context_min",
                "feedback_context_full",
                "feedback_rating_context_min",
                "feedback_rating_context_full",
                "feedback_rating_memory_margin",
                "feedback_reply_top",
                "feedback_reply_weight",
                "feedback_reply_context_min",
                "feedback_reply_context_full",
                "feedback_conflict_weight",
                "feedback_source_window_s",
                "feedback_term_weight",
                "feedback_rating_anchor",
                "feedback_anchor_bound",
                "feedback_edge_context",
            )
        },
        "conditions": {},
    }
    print(
        f"train {len(bench.train)}, test {len(bench.test)} ({len(bench.related)} related); "
        "ingesting...",
        file=sys.stderr,
    )
    out["ingest_seconds"] = bench.ingest()
    conds = out["conditions"]
    partial = Path(args.out) / f"{args.name}.partial.json"
    Path(args.out).mkdir(parents=True, exist_ok=True)
    base = bench.fresh("before")
    conds["before"] = bench.snapshot(base)
    base.close()
    bench.progress("before", conds["before"])
    for mode in modes:
        rng = random.Random(args.seed)
        mem = bench.fresh(mode)
        for r in range(args.rounds):
            t0 = time.perf_counter()
            bench.feedback_round(mem, 0.0, rng, mode)
            name = f"{mode}/{r + 1}"
            conds[name] = bench.snapshot(mem)
            bench.progress(name, conds[name], time.perf_counter() - t0)
            partial.write_text(json.dumps(out))  # a long run keeps what it measured
        mem.close()
    if args.flood:
        for cond, overrides in (
            ("flood", {}),
            ("flood-undefended", {"feedback_source_window_s": 0.0}),
        ):
            rng = random.Random(args.seed)
            mem = bench.fresh(cond, **overrides)
            t0 = time.perf_counter()
            bench.feedback_round(mem, 0.0, rng, "both")
            out.setdefault("floods", {})[cond] = bench.flood(mem, random.Random(args.seed + 2))
            conds[cond] = bench.snapshot(mem)
            bench.progress(cond, conds[cond], time.perf_counter() - t0)
            partial.write_text(json.dumps(out))
            mem.close()
    if not args.no_noise:
        rng = random.Random(args.seed)
        mem = bench.fresh("noisy20")
        t0 = time.perf_counter()
        bench.feedback_round(mem, 0.2, rng, "both")
        conds["noisy20/1"] = bench.snapshot(mem)
        bench.progress("noisy20/1", conds["noisy20/1"], time.perf_counter() - t0)
        mem.close()
        rng = random.Random(args.seed + 1)
        burst_mem = bench.fresh("burst")
        bench.feedback_round(burst_mem, 0.0, rng, "both")
        burst = bench.adversarial_burst(burst_mem, rng)
        conds["burst"] = bench.snapshot(burst_mem)
        out["adversarial"] = burst
        burst_mem.close()
    shutil.rmtree(bench.tmp, ignore_errors=True)
    return out


def merge(files: list[str]) -> dict[str, Any]:
    """One result from several runs' JSON files: the first file's data, every file's
    conditions (``before`` once; it is the same store and code path in each)."""
    out: dict[str, Any] | None = None
    for spec in files:
        path, _, label = spec.partition("=")
        part = json.loads(Path(path).read_text())
        if out is None:
            out = {**part, "conditions": {"before": part["conditions"]["before"]}}
        elif part["subsets"] != out["subsets"]:
            raise SystemExit(f"{path}: another split of the questions; cannot merge")
        for name, snap in part["conditions"].items():
            if name != "before":
                out["conditions"][f"{name}@{label}" if label else name] = snap
        for name, flood in part.get("floods", {}).items():
            out.setdefault("floods", {})[f"{name}@{label}" if label else name] = flood
        if not label:  # the settings of the code the unmarked rows measured
            out["config"] = part["config"]
            if "adversarial" in part:
                out["adversarial"] = part["adversarial"]
    assert out is not None
    return out


def mean_of(snap: dict[str, dict[str, float]], ids: list[str], metric: str = "recall@5") -> float:
    return sum(snap[i][metric] for i in ids) / len(ids) if ids else float("nan")


def subset_ids(out: dict[str, Any], subset: str, lo: int, hi: int) -> list[str]:
    samples = set(out["samples"][lo:hi])
    return [q for q in out["subsets"][subset] if q.split("#")[0] in samples]


def report(out: dict[str, Any], args: argparse.Namespace, command: str) -> str:
    conds = out["conditions"]
    before = conds["before"]
    lines = [
        "# Learning from feedback on LoCoMo",
        "",
        f"Command: `{command}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared), Python "
        f"{platform.python_version()}, {platform.system()}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  ",
        f"Data: {out['conversations']} conversations, categories 1-4; train {out['n_train']} / "
        f"test {out['n_test']} questions (split by sha256(question_id)); of the test questions "
        f"{out['n_related']} are *related unseen* (they share at least one evidence turn with "
        f"some train question of their conversation), {out['n_unrelated']} *unrelated unseen*. "
        f"Ingest {out['ingest_seconds']:.0f} s. Metrics: the referee's `score_query`.  ",
        f"Feedback per round: each train question recalled (limit {args.rate_depth}); "
        "*ratings*: every recalled memory rated (evidence accepted, others rejected, tied to the "
        "recall); *replies*: the simulated reply (question + gold answer) sent through "
        "`feedback(response=..., recall_id=...)`; *both*: the two together.",
        "",
    ]
    present = [c for c in conds if c != "before"]
    for title, lo, hi in GROUPS:
        if lo >= len(out["samples"]):
            continue
        lines += [
            f"## {title}",
            "",
            "recall@5 (nDCG@10 in brackets); n = "
            + ", ".join(f"{label} {len(subset_ids(out, key, lo, hi))}" for label, key in SUBSETS),
            "",
            "| condition | " + " | ".join(label for label, _ in SUBSETS) + " |",
            "|---|" + "---|" * len(SUBSETS),
        ]
        for cond in ["before", *present]:
            snap = conds[cond]
            cells = []
            for _, key in SUBSETS:
                ids = subset_ids(out, key, lo, hi)
                r5 = mean_of(snap, ids)
                nd = mean_of(snap, ids, "ndcg@10")
                if cond == "before":
                    cells.append(f"{r5:.3f} ({nd:.3f})")
                else:
                    cells.append(f"{r5:.3f} ({nd:.3f}) {100 * (r5 - mean_of(before, ids)):+.1f}")
            lines.append(f"| {condition_label(cond)} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += targets(out, args)
    lines += [
        "Learning settings: " + ", ".join(f"`{k}` = {v}" for k, v in out["config"].items()),
        "",
    ]
    return "\n".join(lines)


def condition_label(cond: str) -> str:
    if "@" in cond:  # merged from another run: "<mode>/<round>@<label>"
        name, _, label = cond.partition("@")
        return f"{condition_label(name)} [{label}]"
    if cond == "before":
        return "before feedback"
    if cond == "burst":
        return "both, feedback pass 1 + adversarial burst"
    if cond == "flood":
        return "both, feedback pass 1 + a flood of inverted ratings from one source"
    if cond == "flood-undefended":
        return "the same flood, `feedback_source_window_s` = 0 (no per-source bound)"
    name, _, rnd = cond.partition("/")
    if name == "noisy20":
        return f"both, 20% of ratings flipped, after feedback pass {rnd}"
    return f"{MODE_LABEL[name]}, after feedback pass {rnd}"


def targets(out: dict[str, Any], args: argparse.Namespace) -> list[str]:
    conds = out["conditions"]
    before = conds["before"]
    lines = ["## Targets (after one feedback pass on the train half)", ""]
    lines += ["| target | conversations | result | met |", "|---|---|---|---|"]

    def gain(cond: str, key: str, lo: int, hi: int) -> float:
        ids = subset_ids(out, key, lo, hi)
        return 100 * (mean_of(conds[cond], ids) - mean_of(before, ids))

    checks = [
        ("both/1", "train", 20.0, "ratings + replies: re-asked recall@5 >= +20 points"),
        ("both/1", "related", 10.0, "ratings + replies: related unseen >= +10 points"),
        ("both/1", "unrelated", -0.5, "ratings + replies: unrelated unseen >= -0.5 points"),
        ("ratings/1", "train", 20.0, "ratings only: re-asked >= +20 points"),
        ("ratings/1", "related", 10.0, "ratings only: related unseen >= +10 points"),
        ("ratings/1", "unrelated", -0.5, "ratings only: unrelated unseen >= -0.5 points"),
        ("replies/1", "train", 10.0, "replies only: re-asked >= +10 points"),
        ("replies/1", "test", 0.0, "replies only: unseen >= 0"),
    ]
    for cond, key, bar, label in checks:
        if cond not in conds:
            continue
        for title, lo, hi in GROUPS[:2]:
            if lo >= len(out["samples"]):
                continue
            g = gain(cond, key, lo, hi)
            lines.append(f"| {label} | {title[14:]} | {g:+.1f} | {'yes' if g >= bar else 'no'} |")
    if "noisy20/1" in conds and "both/1" in conds:
        clean = gain("both/1", "train", 0, 10)
        noisy = gain("noisy20/1", "train", 0, 10)
        keep = noisy / clean if clean else 0.0
        lines.append(
            f"| 20% flipped ratings keep >= 80% of the clean re-asked gain | all | "
            f"{noisy:+.1f} = {100 * keep:.0f}% | {'yes' if keep >= 0.8 else 'no'} |"
        )
    for cond in conds:
        if cond.partition("@")[0] not in ("flood", "flood-undefended") or "both/1" not in conds:
            continue
        for title, lo, hi in GROUPS[:2]:
            if lo >= len(out["samples"]):
                continue
            clean = gain("both/1", "train", lo, hi)
            flooded = gain(cond, "train", lo, hi)
            keep = flooded / clean if clean else 0.0
            flood = out["floods"][cond]
            lines.append(
                f"| {condition_label(cond.partition('@')[0])} ({flood.get('shape', 'repeat')}): "
                f"{flood['ratings']} ratings on {flood['memories']} memories keep >= 90% of the "
                f"clean re-asked gain | {title[14:]} | {flooded:+.1f} of "
                f"{clean:+.1f} = {100 * keep:.0f}% | {'yes' if keep >= 0.9 else 'no'} |"
            )
    adv = out.get("adversarial")
    if adv and "max_places" in adv:
        lines.append(
            f"| one adversarial rating moves the learned share of a score at most "
            f"feedback_max_adjustment ({adv['bound']}) | all | max change "
            f"{adv['max_learned_share_change']:.3f} over {adv['ratings']} single ratings | "
            f"{'yes' if adv['max_learned_share_change'] <= adv['bound'] + 1e-9 else 'no'} |"
        )
        lines.append(
            f"| one adversarial rejection by the memory's own user lets at most one memory "
            f"(not itself rejected) past it | all | at most {adv['max_places']} over "
            f"{adv['ratings']} single ratings | {'yes' if adv['max_places'] <= 1 else 'no'} |"
        )
    lines.append("")
    return lines


def plot(out: dict[str, Any], path: Path) -> None:
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
        return

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    conds = out["conditions"]
    present = [c for c in conds if c != "before"]
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(1, len(present))
    for j, cond in enumerate(present):
        gains = [
            100
            * (
                mean_of(conds[cond], subset_ids(out, key, 0, 10))
                - mean_of(conds["before"], subset_ids(out, key, 0, 10))
            )
            for _, key in SUBSETS
        ]
        xs = [i + j * width for i in range(len(SUBSETS))]
        ax.bar(xs, gains, width, label=condition_label(cond))
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(SUBSETS))])
    ax.set_xticklabels([label for label, _ in SUBSETS])
    ax.axhline(0, color="black", linewidth=0.5)
    ax.set_ylabel("recall@5 change (points)")
    ax.set_title("engrammar on LoCoMo: what one round of feedback changes")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--referee", default=str(REFEREE))
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--rate-depth", type=int, default=20, help="memories rated per question")
    parser.add_argument("--burst", type=int, default=50, help="questions hit by the adversary")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--conversations", type=int, default=0, help="first N only (0 = all)")
    parser.add_argument(
        "--modes", default=",".join(MODES), help="comma list of ratings, replies, both"
    )
    parser.add_argument(
        "--no-noise", action="store_true", help="skip the 20%% flipped and adversarial runs"
    )
    parser.add_argument(
        "--flood",
        type=int,
        default=0,
        help="after a clean round (both), one source gives this many inverted ratings in a "
        "minute (with and without the per-source bound); 0 = no flood run",
    )
    parser.add_argument(
        "--flood-repeat", type=int, default=20, help="flood ratings per recalled question"
    )
    parser.add_argument(
        "--flood-shape",
        choices=("repeat", "spread"),
        default="repeat",
        help="repeat: the evidence of each question rejected over and over; spread: every "
        "recalled memory rated once, inverted",
    )
    parser.add_argument("--min-samples", type=float, help="override feedback_min_samples")
    parser.add_argument("--max-adjustment", type=float, help="override feedback_max_adjustment")
    parser.add_argument(
        "--set",
        action="append",
        metavar="NAME=JSON",
        help="any Config setting for the learning runs, e.g. feedback_rating_context_min=0.3",
    )
    parser.add_argument(
        "--store-cache",
        help="SQLite file: reuse this ingested store if it exists, else ingest and save it here",
    )
    parser.add_argument(
        "--embed-cache",
        action="store_true",
        help="ingest through the disk cache of vectors (~/.cache/engrammar-bench)",
    )
    parser.add_argument("--name", default="feedback_learning", help="result file stem")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    parser.add_argument(
        "--merge",
        nargs="+",
        metavar="RESULT.json[=LABEL]",
        help="no run: merge the conditions of result files of earlier runs (same data and "
        "split) into one report; conditions of a file given a LABEL are marked with it",
    )
    args = parser.parse_args()
    command = "python bench/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])
    out = merge(args.merge) if args.merge else run(args)
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{args.name}.json").write_text(json.dumps(out, indent=2))
    (folder / f"{args.name}.md").write_text(report(out, args, command))
    plot(out, folder / f"{args.name}.png")
    print(report(out, args, command))


if __name__ == "__main__":
    main()

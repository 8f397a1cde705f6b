"""Do stated preferences come back when a question needs them but does not name them? PrefEval.

Protocol (``../shared/eval/README.md``, PrefEval dev topics in ``../shared/data/prefeval_dev/``):
per item, a fresh user scope holding the preference message(s) first (explicit: the
``preference`` text as one user message; choice-based: the 4 messages of ``conversation``,
any of which counts as gold), then 50 distractor messages taken as a consecutive window of the
flattened ``filtered_inter_turns.json`` (user and assistant turns, in order, wrapping around;
start drawn per item); then one recall with the item's ``question``. Scored: hit@1, hit@5 (a
gold message in the top 1 / 5) and MRR over the top 10; 100 items per kind, round-robin over
the topics (item ``i`` is entry ``i // 10`` of the ``i % 10``-th topic, topics sorted by name).

engrammar's ranking is what a caller reads: the ``preferences`` slot of the result first (when
the build has one), then ``memories``; "memories only" scores ``memories`` alone. Plain Okapi
BM25 over the same messages (k1 1.5, b 0.75, lowercase words) is run on the same items as a
check of the protocol (README: hit@1 0.395, hit@5 0.570).

Also measured: how often an item's preference surfaces in the ``preferences`` slot for a
question of another topic (the question of item ``i + 5``): standing preferences must come
back when they bear on the question, not always.

    python bench/preferences.py [--items 100] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from engrammar import Config, Memory

ROOT = Path(__file__).resolve().parent.parent
SHARED = next(
    (p / "shared" for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared").is_dir()),
    ROOT.parent / "shared",
)
DATA = SHARED / "data" / "prefeval_dev"
KINDS = ("explicit", "choice")


def load_items(data: Path, kind: str, n: int) -> list[dict[str, Any]]:
    folder = data / (
        "explicit_preference" if kind == "explicit" else "implicit_preference/choice-based"
    )
    topics = sorted(folder.glob("*.json"))
    entries = {t.stem: json.loads(t.read_text(encoding="utf-8")) for t in topics}
    items = []
    for i in range(n):
        topic = topics[i % len(topics)].stem
        entry = entries[topic][i // len(topics)]
        if kind == "explicit":
            gold = [{"role": "user", "content": entry["preference"]}]
        else:
            c = entry["conversation"]
            gold = [
                {"role": "user", "content": c["query"]},
                {"role": "assistant", "content": c["assistant_options"]},
                {"role": "user", "content": c["user_selection"]},
                {"role": "assistant", "content": c["assistant_acknowledgment"]},
            ]
        items.append({"i": i, "topic": topic, "question": entry["question"], "gold": gold})
    return items


def distractor_pool(data: Path) -> list[dict[str, str]]:
    turns = json.loads((data / "filtered_inter_turns.json").read_text(encoding="utf-8"))
    return [
        {"role": m["role"], "content": m["content"]} for conv in turns for m in conv["conversation"]
    ]


def window(pool: list[dict[str, str]], start: int, size: int) -> list[dict[str, str]]:
    return [pool[(start + k) % len(pool)] for k in range(size)]


def metrics(ranked: list[str], gold: set[str]) -> dict[str, float]:
    ranked = list(dict.fromkeys(ranked))[:10]
    first = next((k for k, r in enumerate(ranked) if r in gold), None)
    return {
        "hit@1": float(first is not None and first < 1),
        "hit@5": float(first is not None and first < 5),
        "mrr@10": 0.0 if first is None else 1.0 / (first + 1),
    }


_WORD = re.compile(r"[a-z0-9]+")


def bm25_rank(docs: list[str], query: str, k1: float = 1.5, b: float = 0.75) -> list[int]:
    toks = [_WORD.findall(d.lower()) for d in docs]
    avg = sum(len(t) for t in toks) / max(1, len(toks))
    df: Counter[str] = Counter()
    for t in toks:
        df.update(set(t))
    n = len(docs)
    scores = []
    for t in toks:
        tf = Counter(t)
        s = 0.0
        for w in set(_WORD.findall(query.lower())):
            if w not in tf:
                continue
            idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
            s += idf * tf[w] * (k1 + 1) / (tf[w] + k1 * (1 - b + b * len(t) / avg))
        scores.append(s)
    return sorted(range(n), key=lambda i: -scores[i])


def mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]} if rows else {}


def run(args: argparse.Namespace) -> dict[str, Any]:
    data = Path(args.data)
    pool = distractor_pool(data)
    tmp = Path(tempfile.mkdtemp(prefix="engrammar-prefeval-"))
    overrides: dict[str, Any] = {}
    for pair in args.set:
        key, _, value = pair.partition("=")
        overrides[key] = json.loads(value)
    mem = Memory(Config(path=str(tmp), embed_cache_size=20_000, **overrides))
    out: dict[str, Any] = {
        "items": args.items,
        "seed": args.seed,
        "kinds": {},
        "overrides": overrides,
    }
    t0 = time.perf_counter()
    try:
        for kind in KINDS:
            rng = random.Random(f"{args.seed}:{kind}")
            items = load_items(data, kind, args.items)
            rows: dict[str, list[dict[str, float]]] = {"engrammar": [], "memories": [], "bm25": []}
            per_topic: dict[str, list[float]] = {}
            slot_sizes: list[int] = []
            golds: list[set[str]] = []
            sims: list[tuple[bool, float]] = []
            for item in items:
                user = f"prefeval-{kind}-{item['i']}"
                start = rng.randrange(len(pool))
                messages = item["gold"] + window(pool, start, args.distractors)
                ids = mem.add(messages, user_id=user)
                gold = set(ids[: len(item["gold"])])
                golds.append(gold)
                result = mem.recall(item["question"], user_id=user, limit=10)
                slot = getattr(result, "preferences", [])
                prefs = [p.id for p in slot]
                for p in slot:
                    sims.append((p.id in gold, p.score))
                slot_sizes.append(len(prefs))
                mems = [m.id for m in result.memories]
                rows["engrammar"].append(metrics(prefs + mems, gold))
                rows["memories"].append(metrics(mems, gold))
                per_topic.setdefault(item["topic"], []).append(rows["engrammar"][-1]["hit@5"])
                order = bm25_rank([m["content"] for m in messages], item["question"])
                rows["bm25"].append(metrics([ids[k] for k in order], gold))
            # Off-topic: item i's scope asked the question of item i + 5 (another topic).
            off = 0
            off_sims: list[float] = []
            for item, gold in zip(items, golds, strict=True):
                other = items[(item["i"] + 5) % len(items)]
                result = mem.recall(
                    other["question"], user_id=f"prefeval-{kind}-{item['i']}", limit=10
                )
                slot = getattr(result, "preferences", [])
                off += any(p.id in gold for p in slot)
                off_sims += [p.score for p in slot if p.id in gold]
            out["kinds"][kind] = {
                "n": len(items),
                "engrammar": mean(rows["engrammar"]),
                "memories_only": mean(rows["memories"]),
                "bm25": mean(rows["bm25"]),
                "per_topic_hit@5": {t: sum(v) / len(v) for t, v in sorted(per_topic.items())},
                "mean_preferences_slot": sum(slot_sizes) / len(slot_sizes),
                "off_topic_surfaced": off / len(items),
                "slot_similarities": sims,
                "off_topic_similarities": off_sims,
            }
            shown = {k: v for k, v in out["kinds"][kind].items() if "similarities" not in k}
            print(kind, json.dumps(shown), file=sys.stderr)
    finally:
        mem.close()
        shutil.rmtree(tmp, ignore_errors=True)
    out["seconds"] = time.perf_counter() - t0
    both = [out["kinds"][k] for k in KINDS]
    out["overall"] = {
        name: {m: sum(k[name][m] for k in both) / len(both) for m in both[0][name]}
        for name in ("engrammar", "memories_only", "bm25")
    }
    return out


def report(out: dict[str, Any], command: str) -> str:
    lines = [
        "# Preferences surfacing on PrefEval (dev topics)",
        "",
        f"Command: `{command}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared), Python "
        f"{platform.python_version()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"{out['seconds']:.0f} s  ",
        f"Protocol: `../shared/eval/README.md` (PrefEval); {out['items']} items per kind, "
        f"round-robin over the 10 dev topics; 50 distractors per item; window starts drawn "
        f"with seed {out['seed']}. engrammar's ranking: the `preferences` slot, then "
        "`memories`.",
        "",
        "| kind | ranking | hit@1 | hit@5 | MRR@10 |",
        "|---|---|---|---|---|",
    ]
    names = (("engrammar", "engrammar"), ("memories_only", "memories only"), ("bm25", "BM25"))
    for kind in (*KINDS, "overall"):
        block = out["overall"] if kind == "overall" else out["kinds"][kind]
        for key, label in names:
            r = block[key]
            lines.append(
                f"| {kind} | {label} | {r['hit@1']:.3f} | {r['hit@5']:.3f} | {r['mrr@10']:.3f} |"
            )
    lines += [
        "",
        "| kind | mean size of the preferences slot | preference surfaced for another "
        "topic's question |",
        "|---|---|---|",
    ]
    for kind in KINDS:
        k = out["kinds"][kind]
        lines.append(
            f"| {kind} | {k['mean_preferences_slot']:.2f} | {100 * k['off_topic_surfaced']:.0f}% |"
        )
    o = out["overall"]["engrammar"]
    lines += [
        "",
        "| target (explicit and choice-based together) | result | met |",
        "|---|---|---|",
        f"| hit@5 >= 0.92 | {o['hit@5']:.3f} | {'yes' if o['hit@5'] >= 0.92 else 'no'} |",
        f"| hit@1 >= 0.75 | {o['hit@1']:.3f} | {'yes' if o['hit@1'] >= 0.75 else 'no'} |",
        "",
        "hit@5 per topic: "
        + "; ".join(
            f"{kind} "
            + ", ".join(f"{t} {v:.2f}" for t, v in out["kinds"][kind]["per_topic_hit@5"].items())
            for kind in KINDS
        ),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--items", type=int, default=100, help="items per kind")
    parser.add_argument("--distractors", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--set", action="append", default=[], help="config override KEY=JSON (repeatable)"
    )
    parser.add_argument("--name", default="preferences")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    command = "python bench/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])
    out = run(args)
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{args.name}.json").write_text(json.dumps(out, indent=2))
    text = report(out, command)
    (folder / f"{args.name}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()

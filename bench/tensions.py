"""Facts that change: tension detection and supersession in ranking, on a labelled set.

    python bench/tensions.py [--locomo-conversations 2]

Data: bench/data/tensions_pairs.jsonl, (older, newer) statement pairs written for this
project over 17 topics, labelled contradiction or not; a fixed third (``split`` = heldout) is
kept out of tuning. Each contradiction has a present-tense ``question`` and most a
``past_question``. Writes bench/results/tensions.md and tensions.json.

Measured, on tune and heldout separately, with the real default model:

* detection: precision and recall of ``recall.tensions.detect_tension`` on the pairs (the
  older statement first); also on the earlier sets tests/data/tensions*.jsonl;
* newer-first: each contradiction is stored in its own scope among six unrelated messages,
  either in one ``add`` call (older first) or in two calls a month apart; the present question
  must rank the newer statement above the older;
* past-first: the past question must rank the older statement above the newer;
* direction: the tension recall reports names the newer statement as ``newer``;
* chat false alarms: pairs of LoCoMo turns of one speaker (the first N conversations) the
  detector flags, per 1,000 turns, with examples (most are real chat, not contradictions).

Embeddings are cached outside the repository (bench/_embcache.py).
"""

from __future__ import annotations

import argparse
import inspect
import json
import shlex
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA, RESULTS, ROOT, load_locomo, locomo_turns, machine
from _embcache import DiskCachedEmbedder
from engrammar import Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.recall.tensions import Statement, detect_tension

DATA = ROOT / "bench" / "data" / "tensions_pairs.jsonl"
OLD_SETS = [
    ROOT / "tests" / "data" / "tensions.jsonl",
    ROOT / "tests" / "data" / "tensions_holdout.jsonl",
]
SPLITS = ("tune", "heldout")
MIN_SIMILARITY = Config().tension_min_similarity
FILLER = [
    "I had a long day, the meeting ran over.",
    "Can you recommend a good podcast about history?",
    "The weather has been grey all week.",
    "I tried a new pasta recipe with lemon and garlic.",
    "My laptop battery drains really fast.",
    "I watched a documentary about octopuses last night.",
]
# Worktrees sit one level deeper than the main checkout.
LOCOMO = next(
    (
        p
        for p in (DEFAULT_DATA, ROOT.parents[1] / "shared" / "data" / "locomo10.json")
        if p.is_file()
    ),
    DEFAULT_DATA,
)
DAY = 86400.0
T0 = 1_700_000_000.0


def load(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def detection(
    rows: list[dict[str, Any]], embedder: DiskCachedEmbedder, label: str
) -> dict[str, Any]:
    older = embedder.embed([str(r["older"]) for r in rows])
    newer = embedder.embed([str(r["newer"]) for r in rows])
    tp = fp = fn = 0
    errors: list[str] = []
    by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    for row, a, b in zip(rows, older, newer, strict=True):
        found = detect_tension(
            Statement("a", str(row["older"]), 1.0),
            Statement("b", str(row["newer"]), 2.0),
            float(a @ b),
            MIN_SIMILARITY,
        )
        truth = bool(row[label])
        kind = str(row.get("kind", ""))
        if found is not None and truth:
            tp += 1
            by_kind[kind]["found"] += 1
        elif found is not None:
            fp += 1
            by_kind[kind]["false alarm"] += 1
            errors.append(f"false alarm ({kind}, {found.kind}): {row['older']} / {row['newer']}")
        elif truth:
            fn += 1
            by_kind[kind]["missed"] += 1
            errors.append(
                f"missed ({kind}, cos {float(a @ b):.2f}): {row['older']} / {row['newer']}"
            )
        else:
            by_kind[kind]["right"] += 1
    return {
        "pairs": len(rows),
        "contradictions": tp + fn,
        "precision": round(tp / max(1, tp + fp), 3),
        "recall": round(tp / max(1, tp + fn), 3),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "by_kind": {k: dict(v) for k, v in sorted(by_kind.items())},
        "errors": errors,
    }


def _rank(ids: list[str], memory_id: str) -> int:
    return ids.index(memory_id) if memory_id in ids else len(ids) + 1


def ranking(rows: list[dict[str, Any]], embedder: DiskCachedEmbedder, tmp: Path) -> dict[str, Any]:
    """Newer-first, past-first and tension direction, one scope per pair and mode."""
    out: dict[str, Any] = {}
    has_as_of = "as_of" in inspect.signature(Memory.recall).parameters
    with Memory(Config(path=str(tmp / "ranking")), embedder=embedder) as mem:
        for mode in ("one call", "two calls"):
            newer_first = past_first = as_of_first = direction = with_tension = 0
            n_present = n_past = 0
            misses: list[str] = []
            for row in rows:
                if not row["label"] or "question" not in row:
                    continue
                user = f"{row['id']}-{mode.replace(' ', '')}"
                mem.add(FILLER, user_id=user, timestamp=T0 - 60 * DAY)
                if mode == "one call":
                    old_id, new_id = mem.add(
                        [row["older"], row["newer"]], user_id=user, timestamp=T0
                    )
                else:
                    (old_id,) = mem.add(row["older"], user_id=user, timestamp=T0)
                    (new_id,) = mem.add(row["newer"], user_id=user, timestamp=T0 + 30 * DAY)
                result = mem.recall(row["question"], user_id=user, limit=10)
                ids = [m.id for m in result.memories]
                n_present += 1
                ok = _rank(ids, new_id) < _rank(ids, old_id)
                newer_first += ok
                if not ok:
                    misses.append(
                        f"{row['id']} [{row['split']}] {row['question']} -> {result.memories[0].content}"
                    )
                pair = [t for t in result.tensions if {t.a, t.b} == {old_id, new_id}]
                with_tension += bool(pair)
                direction += bool(pair) and pair[0].newer == new_id
                if "past_question" in row:
                    n_past += 1
                    result = mem.recall(row["past_question"], user_id=user, limit=10)
                    ids = [m.id for m in result.memories]
                    past_first += _rank(ids, old_id) < _rank(ids, new_id)
                    if has_as_of and mode == "two calls":
                        result = mem.recall(row["question"], user_id=user, limit=10, as_of=T0 + DAY)  # type: ignore[call-arg]
                        ids = [m.id for m in result.memories]
                        as_of_first += _rank(ids, old_id) < _rank(ids, new_id)
            out[mode] = {
                "present_questions": n_present,
                "newer_first": round(newer_first / max(1, n_present), 3),
                "tension_reported": round(with_tension / max(1, n_present), 3),
                "direction_right": round(direction / max(1, n_present), 3),
                "past_questions": n_past,
                "past_first": round(past_first / max(1, n_past), 3),
                "misses": misses,
            }
            if has_as_of and mode == "two calls":
                out[mode]["as_of_older_first"] = round(as_of_first / max(1, n_past), 3)
    return out


def chat_false_alarms(
    data: Path, conversations: int, embedder: DiskCachedEmbedder
) -> dict[str, Any]:
    """Pairs of one speaker's LoCoMo turns the detector flags (each turn against its 8 most
    similar earlier turns of the same conversation, as ``add`` checks it)."""
    turns = locomo_turns(load_locomo(data)[:conversations])
    vecs = embedder.embed([t["text"] for t in turns])
    flagged: list[str] = []
    for sample in sorted({t["sample_id"] for t in turns}):
        idx = [i for i, t in enumerate(turns) if t["sample_id"] == sample]
        sims = vecs[idx] @ vecs[idx].T
        for r, i in enumerate(idx):
            earlier = [
                (float(sims[r, c]), idx[c]) for c in range(r) if sims[r, c] >= MIN_SIMILARITY
            ]
            for cos, j in sorted(earlier, reverse=True)[:8]:
                a, b = turns[j], turns[i]
                found = detect_tension(
                    Statement(str(j), a["text"], float(j), a["speaker"]),
                    Statement(str(i), b["text"], float(i), b["speaker"]),
                    cos,
                    MIN_SIMILARITY,
                )
                if found is not None:
                    flagged.append(
                        f"{a['dia_id']} / {b['dia_id']} ({found.kind}): {a['text'][:90]} / {b['text'][:90]}"
                    )
    return {
        "conversations": conversations,
        "turns": len(turns),
        "flagged_pairs": len(flagged),
        "per_1000_turns": round(1000 * len(flagged) / max(1, len(turns)), 2),
        "examples": flagged[:12],
    }


def write_markdown(doc: dict[str, Any], path: Path) -> None:
    lines = [
        "# Facts that change: tensions and supersession",
        "",
        f"Command: `{doc['command']}` · machine: {doc['machine']['cpu']}, {doc['machine']['cores']} cores, "
        f"Python {doc['machine']['python']}, load average at start {tuple(round(x, 2) for x in doc['machine']['load_avg_at_start'])}",
        "",
        f"Data: `bench/data/tensions_pairs.jsonl`, {doc['pairs']} (older, newer) pairs written for this project over "
        f"{doc['topics']} topics; a fixed third (`split` = heldout) was kept out of tuning. "
        f"Model: the default MiniLM; similarity gate `tension_min_similarity` = {MIN_SIMILARITY}.",
        "",
        "## Detection (`recall.tensions.detect_tension`)",
        "",
        "| set | pairs | contradictions | precision | recall |",
        "|---|---|---|---|---|",
    ]
    for name, d in doc["detection"].items():
        lines.append(
            f"| {name} | {d['pairs']} | {d['contradictions']} | {d['precision']} | {d['recall']} |"
        )
    lines += [
        "",
        "By kind (tune + heldout):",
        "",
        "| kind | found | missed | right (no tension) | false alarm |",
        "|---|---|---|---|---|",
    ]
    merged: dict[str, Counter[str]] = defaultdict(Counter)
    for split in SPLITS:
        for kind, c in doc["detection"][split]["by_kind"].items():
            merged[kind].update(c)
    for kind, c in sorted(merged.items()):
        lines.append(
            f"| {kind} | {c['found']} | {c['missed']} | {c['right']} | {c['false alarm']} |"
        )
    lines += ["", "## Supersession in ranking (`Memory.recall`, limit 10)", ""]
    lines += [
        "Each contradiction in its own scope among six unrelated messages; *one call*: `add([older, newer])`; "
        "*two calls*: the newer added 30 days after the older. Newer-first: the present question ranks the newer "
        "statement above the older. Past-first: the past question ranks the older above the newer. Direction: "
        "recall reports the pair as a tension with `newer` = the newer statement.",
        "",
        "| split | mode | present questions | newer-first | tension reported | direction right | past questions | past-first | as_of: older first |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for split in SPLITS:
        for mode, d in doc["ranking"][split].items():
            lines.append(
                f"| {split} | {mode} | {d['present_questions']} | {d['newer_first']} | {d['tension_reported']} | "
                f"{d['direction_right']} | {d['past_questions']} | {d['past_first']} | {d.get('as_of_older_first', 'n/a')} |"
            )
    fa = doc["chat_false_alarms"]
    lines += [
        "",
        "## False alarms in real chat (LoCoMo)",
        "",
        f"Conversations 1-{fa['conversations']}, {fa['turns']} turns: {fa['flagged_pairs']} flagged pairs "
        f"({fa['per_1000_turns']} per 1,000 turns). Examples:",
        "",
        *[f"- {e}" for e in fa["examples"]],
        "",
        "## Errors",
        "",
    ]
    for name, d in doc["detection"].items():
        if d["errors"]:
            lines += [f"{name}:", "", *[f"- {e}" for e in d["errors"]], ""]
    for split in SPLITS:
        for mode, d in doc["ranking"][split].items():
            if d["misses"]:
                lines += [
                    f"Newer not first ({split}, {mode}):",
                    "",
                    *[f"- {e}" for e in d["misses"]],
                    "",
                ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=LOCOMO, help="locomo10.json")
    parser.add_argument("--locomo-conversations", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-ranking", action="store_true", help="detection only (fast)")
    args = parser.parse_args()
    command = "python bench/tensions.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    embedder = DiskCachedEmbedder(MiniLMEmbedder())
    rows = load(DATA)
    doc: dict[str, Any] = {
        "command": command.strip(),
        "machine": machine(),
        "pairs": len(rows),
        "topics": len({r["topic"] for r in rows}),
        "detection": {},
        "ranking": {},
    }
    for split in SPLITS:
        doc["detection"][split] = detection(
            [r for r in rows if r["split"] == split], embedder, "label"
        )
    for path in OLD_SETS:
        doc["detection"][f"tests/data/{path.name}"] = detection(
            load(path), embedder, "contradiction"
        )
    doc["chat_false_alarms"] = chat_false_alarms(args.data, args.locomo_conversations, embedder)
    embedder.save()
    for name, d in doc["detection"].items():
        print(
            f"{name}: precision {d['precision']} recall {d['recall']} ({d['tp']} tp, {d['fp']} fp, {d['fn']} fn)"
        )
    print(f"LoCoMo flagged pairs: {doc['chat_false_alarms']['flagged_pairs']}")
    if args.no_ranking:
        return
    with tempfile.TemporaryDirectory(prefix="tensions-") as tmp:
        for split in SPLITS:
            doc["ranking"][split] = ranking(
                [r for r in rows if r["split"] == split], embedder, Path(tmp) / split
            )
            for mode, d in doc["ranking"][split].items():
                print(split, mode, {k: v for k, v in d.items() if k != "misses"})
    embedder.save()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tensions.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    write_markdown(doc, args.out / "tensions.md")
    print(f"wrote {args.out / 'tensions.md'}")


if __name__ == "__main__":
    main()

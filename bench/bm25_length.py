"""BM25 length normalisation on long messages: keyword search alone over LongMemEval dev.

    python bench/bm25_length.py [--b 0,0.1,0.25,0.5,0.75] [--out bench/results]

Engrammar's own keyword index (``recall.keyword.BM25Index`` over ``recall.text.terms``, the
terms the store indexes: the whole text of every message, k1 1.2) over each question's haystack
(user and assistant turns), for several ``bm25_b``; scored by the referee (turn level, tune and
held-out halves as in bench/lme.py). No model is needed, so it runs on every scored question.
Also reports how long messages fare: the share of the top 5 that are longer than 1,000
characters against their share of the haystacks (no scored question has a gold turn that
long, so every long message in a top 5 is a distractor). Writes bench/results/bm25_length.md
and .json (``--render`` rewrites the .md from the .json).
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine
from engrammar.recall.keyword import BM25Index
from engrammar.recall.text import terms
from lme import half, referee, sessions, stratified, write_dev_set

LONG = 1000


def run_b(data: list[dict[str, Any]], b: float) -> tuple[dict[str, list[str]], dict[str, Any]]:
    run: dict[str, list[str]] = {}
    top_long = top_n = 0
    gold_hits: dict[str, list[float]] = {"long": [], "short": []}
    for entry in data:
        ids, lengths = [], []
        index = BM25Index(k1=1.2, b=b)
        for sid, _when, turns in sessions(entry):
            for i, turn in enumerate(turns):
                if not turn["content"].strip():
                    continue
                index.add(len(ids), terms(turn["content"]))
                ids.append(f"{sid}_{i + 1}")
                lengths.append(len(turn["content"]))
        scores = index.scores(terms(entry["question"]), len(ids))
        order = [int(j) for j in np.argsort(-scores, kind="stable")[:50] if scores[j] > 0]
        run[entry["question_id"]] = [ids[j] for j in order]
        top_long += sum(lengths[j] > LONG for j in order[:5])
        top_n += len(order[:5])
        gold = {
            f"{sid}_{i + 1}"
            for sid, _w, turns in sessions(entry)
            for i, t in enumerate(turns)
            if t.get("has_answer") and t["role"] == "user"
        }
        gold_len = [lengths[ids.index(g)] for g in gold if g in ids]
        if gold_len:
            hit = float(any(ids[j] in gold for j in order[:5]))
            gold_hits["long" if max(gold_len) > LONG else "short"].append(hit)
    share = {
        "top5_long_share": round(top_long / max(top_n, 1), 3),
        "recall_any@5_gold_long": round(float(np.mean(gold_hits["long"] or [0])), 3),
        "recall_any@5_gold_short": round(float(np.mean(gold_hits["short"] or [0])), 3),
        "questions_gold_long": len(gold_hits["long"]),
        "questions_gold_short": len(gold_hits["short"]),
    }
    return run, share


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--b", default="0,0.1,0.25,0.5,0.75")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--render", action="store_true", help="only rewrite the .md from the .json")
    args = ap.parse_args()
    out = Path(args.out)
    if args.render:
        render(json.loads((out / "bm25_length.json").read_text(encoding="utf-8")), out)
        return
    ref = referee("longmemeval_retrieval.py")
    tmp = tempfile.TemporaryDirectory(prefix="bm25-")
    data = stratified(write_dev_set(Path(tmp.name), 0, ""), 10_000)
    groups = {
        "all": data,
        "tune": [e for e in data if half(e["question_id"]) == "tune"],
        "held-out": [e for e in data if half(e["question_id"]) == "held-out"],
    }
    all_lengths = [
        len(t["content"])
        for e in data
        for _s, _w, turns in sessions(e)
        for t in turns
        if t["content"].strip()
    ]
    doc: dict[str, Any] = {
        "command": "python bench/bm25_length.py " + " ".join(map(shlex.quote, sys.argv[1:])),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "questions": {g: len(v) for g, v in groups.items()},
        "haystack_long_share": round(float(np.mean([n > LONG for n in all_lengths])), 3),
        "runs": {},
    }
    for b in [float(x) for x in args.b.split(",")]:
        run, share = run_b(data, b)
        row: dict[str, Any] = {"long": share}
        for g, entries in groups.items():
            report, _ = ref.evaluate(entries, run)
            o = report["overall"]
            row[g] = {k: round(o[k], 3) for k in ("turn/recall_all@5", "turn/ndcg_any@10")}
        doc["runs"][str(b)] = row
        print(b, json.dumps(row), flush=True)
    (out / "bm25_length.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    render(doc, out)


def render(doc: dict[str, Any], out: Path) -> None:
    lines = [
        "# BM25 length normalisation on long messages (LongMemEval dev, keyword search alone)",
        "",
        f"Command: `{doc['command']}`  ",
        f"Date: {doc['date']}; machine: {doc['machine']['cpu']}, {doc['machine']['cores']} cores "
        f"(load at start {doc['machine']['load_avg_at_start']}).  ",
        f"Questions: {doc['questions']}; engrammar's BM25 (k1 1.2) over every turn's whole "
        f"text. Long = over {LONG} characters: {doc['haystack_long_share']:.1%} of the "
        "haystacks' turns.",
        "",
        "No scored question has a gold turn over that length: every long message in a top 5 "
        "is a distractor.",
        "",
        "| bm25_b | r_all@5 all | ndcg@10 all | r_all@5 tune | ndcg@10 tune | r_all@5 held-out "
        "| ndcg@10 held-out | long share of top 5 | r_any@5 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for b, row in doc["runs"].items():
        lg = row["long"]
        lines.append(
            f"| {b} | "
            + " | ".join(
                f"{row[g]['turn/recall_all@5']:.3f} | {row[g]['turn/ndcg_any@10']:.3f}"
                for g in ("all", "tune", "held-out")
            )
            + f" | {lg['top5_long_share']:.3f} | {lg['recall_any@5_gold_short']:.3f} |"
        )
    lines += [
        "",
        "Plain Okapi BM25 of the referee (k1 1.5, b 0.75, its own tokens) on the same turns: "
        "r_all@5 0.493, ndcg@10 0.574 (../shared/eval/README.md).",
    ]
    (out / "bm25_length.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out / 'bm25_length.md'}")


if __name__ == "__main__":
    main()

"""Where a LongMemEval run's gold turns miss the top k, grouped (no model, no store needed).

    python bench/lme_failures.py RUN.jsonl [--k 5] [--show N]

Reads a run file written by bench/lme.py (``<name>_default.run.jsonl``: per question the ranked
turn ids) and the dev set (written out with ../shared/eval/lme_dev.py into a temp dir) and
prints, over the scored questions of the run, by half (tune / held-out, as bench/lme.py splits
them):

- the questions short of recall_all@k, per type;
- the ranks of the gold turns outside the top k;
- for each such turn, whether its session has another turn in the top k (the right
  conversation, the wrong turn) and, if so, whether the gold turn was said before or after
  those turns, and whether a copy of its exact text (another session of the haystack) ranks
  above it;
- what ranks first when a gold turn does not: a copy of a gold text, another turn of a gold
  session, or another session.

``--show N`` prints the first N failing questions with their missing gold turns and top k.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lme import TYPES, half, write_dev_set


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def _session(turn_id: str) -> str:
    return turn_id.rsplit("_", 1)[0]


def _position(turn_id: str) -> int:
    return int(turn_id.rsplit("_", 1)[1])


def _turns(entry: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """Every turn of the haystack by id, and the gold ids (user turns with ``has_answer``)."""
    texts: dict[str, dict[str, Any]] = {}
    gold: set[str] = set()
    for sid, turns in zip(entry["haystack_session_ids"], entry["haystack_sessions"], strict=True):
        for i, turn in enumerate(turns):
            tid = f"{sid}_{i + 1}"
            texts[tid] = turn
            if turn.get("has_answer") and turn["role"] == "user":
                gold.add(tid)
    return texts, gold


def _bucket(rank: int | None, k: int) -> str:
    if rank is None:
        return "not in the list"
    if rank <= 2 * k:
        return f"{k + 1}-{2 * k}"
    return f"{2 * k + 1}-50" if rank <= 50 else "over 50"


def analyse(data: list[dict[str, Any]], run: dict[str, list[str]], k: int) -> dict[str, Counter]:
    out: dict[str, Counter] = {
        name: Counter() for name in ("failing", "ranks", "missing", "first", "scored")
    }
    for entry in data:
        qid = entry["question_id"]
        if qid not in run:
            continue
        texts, gold = _turns(entry)
        if not gold:
            continue
        group = half(qid)
        ranked = run[qid]
        out["scored"][group] += 1
        head = ranked[:k]
        if not all(g in head for g in gold):
            out["failing"][(group, entry["question_type"])] += 1
        gold_texts = {_norm(texts[g]["content"]) for g in gold}
        for g in gold:
            rank = ranked.index(g) + 1 if g in ranked else None
            if rank is not None and rank <= k:
                continue
            out["ranks"][(group, _bucket(rank, k))] += 1
            same = [t for t in head if _session(t) == _session(g)]
            above = ranked[: (rank or len(ranked) + 1) - 1]
            copy = any(
                t != g and t in texts and _norm(texts[t]["content"]) == _norm(texts[g]["content"])
                for t in above
            )
            if not same:
                where = "its session has no turn in the top k"
            elif _position(g) < min(map(_position, same)):
                where = "session in the top k; the gold turn was said before those turns"
            else:
                where = "session in the top k; the gold turn was said after one of them"
            out["missing"][(group, where)] += 1
            if copy:
                out["missing"][(group, "a copy of its text ranks above it")] += 1
        first = ranked[0] if ranked else None
        if first is None or first in gold:
            out["first"][(group, "a gold turn")] += 1
        elif first in texts and _norm(texts[first]["content"]) in gold_texts:
            out["first"][(group, "a copy of a gold text")] += 1
        elif _session(first) in {_session(g) for g in gold}:
            out["first"][(group, "another turn of a gold session")] += 1
        else:
            out["first"][(group, "another session")] += 1
    return out


def show(data: list[dict[str, Any]], run: dict[str, list[str]], k: int, n: int) -> None:
    shown = 0
    for entry in data:
        qid = entry["question_id"]
        if qid not in run or shown >= n:
            continue
        texts, gold = _turns(entry)
        ranked = run[qid]
        missing = [g for g in sorted(gold) if g not in ranked[:k]]
        if not gold or not missing:
            continue
        shown += 1
        ranks = {g: (ranked.index(g) + 1 if g in ranked else None) for g in sorted(gold)}
        print(f"\n== {entry['question_type']} {qid} ({half(qid)}): {entry['question']}")
        print(f"   asked {entry['question_date']}; gold ranks {ranks}")
        for g in missing:
            print(f"   MISSING {g}: {_norm(texts[g]['content'])[:240]}")
        for i, t in enumerate(ranked[:k]):
            mark = "G" if t in gold else " "
            print(f"   {i + 1:2d} {mark} {t}: {_norm(texts[t]['content'])[:160]}")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("run", help="a run file of bench/lme.py (one JSON line per question)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--show", type=int, default=0, help="print N failing questions")
    args = ap.parse_args()
    run: dict[str, list[str]] = {}
    for line in Path(args.run).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            run[row["question_id"]] = row["retrieved_ids"]
    with tempfile.TemporaryDirectory(prefix="lme-") as tmp:
        data = write_dev_set(Path(tmp), 0, "")
    data = [e for e in data if e["question_type"] in TYPES]
    out = analyse(data, run, args.k)
    groups = ("tune", "held-out")
    print(f"{dict(out['scored'])} scored questions of the run; k = {args.k}")
    for title, key in (
        (f"questions short of recall_all@{args.k}, per type", "failing"),
        (f"gold turns outside the top {args.k}, by rank", "ranks"),
        ("those gold turns, by where their session is", "missing"),
        ("what ranks first", "first"),
    ):
        print(f"\n{title} (tune / held-out):")
        labels = sorted({label for _g, label in out[key]})
        for label in labels:
            counts = " / ".join(str(out[key][(g, label)]) for g in groups)
            print(f"  {label}: {counts}")
    if args.show:
        show(data, run, args.k, args.show)


if __name__ == "__main__":
    main()

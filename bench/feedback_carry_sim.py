"""Try carry-over rules offline on the rankings of ``feedback_carry_probe.py``.

A rule brings the memories accepted for earlier, similar questions (ratings ``accepted`` and
reply signals +1, each with its recall's query vector, read from the kept fed-back store) into
a question's ranking at a level relative to its ``reply_top``-th score, and the sim reports
recall@5 per subset and half against the "before" ranking. Only for tuning: the rule kept is
implemented in ``learn.scoring`` and measured with ``feedback_learning.py``.

    python bench/feedback_carry_sim.py --probe /tmp/s13/carry13/probe-main.json \
        --fed /tmp/s13/carry13/fed-both.db
"""

from __future__ import annotations

import argparse
import itertools
import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from engrammar import Config
from engrammar.embed import make_embedder


def vec(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


def load(args: argparse.Namespace) -> dict[str, Any]:
    probe = json.loads(Path(args.probe).read_text())
    db = sqlite3.connect(args.fed)
    records: dict[str, dict[str, Any]] = {}  # recall id -> user, vector, {memory: value}
    for user, memory_id, verdict, blob, recall_id in db.execute(
        "SELECT user_id, memory_id, verdict, context_embedding, recall_id FROM memory_ratings"
    ):
        r = records.setdefault(
            recall_id, {"user": user, "vec": vec(blob), "rating": {}, "reply": {}}
        )
        r["rating"][memory_id] = 1.0 if verdict == "accepted" else -1.0
    for user, memory_id, value, blob, recall_id in db.execute(
        "SELECT user_id, memory_id, value, context_embedding, recall_id FROM reply_signals"
    ):
        r = records.setdefault(
            recall_id, {"user": user, "vec": vec(blob), "rating": {}, "reply": {}}
        )
        r["reply"][memory_id] = value
    mvec = {i: vec(b) for i, b in db.execute("SELECT id, embedding FROM memories")}
    dia = {
        i: json.loads(m).get("dia_id", "")
        for i, m in db.execute("SELECT id, metadata FROM memories")
    }
    cache = Path(args.probe).with_suffix(".qvec.npz")
    ids = sorted(probe["question"])
    if cache.exists():
        data = np.load(cache)
        qv = dict(zip(data["ids"].tolist(), data["v"], strict=True))
    else:
        emb = make_embedder(Config())
        v = np.asarray(emb.embed([probe["question"][i] for i in ids]), dtype=np.float32)
        np.savez(cache, ids=np.array(ids), v=v)
        qv = dict(zip(ids, v, strict=True))
    return {"probe": probe, "records": records, "mvec": mvec, "dia": dia, "qv": qv}


def recall5(ranked: list[str], evidence: list[str]) -> float:
    top = set(ranked[:5])
    ev = set(evidence)
    return len(top & ev) / len(ev)


def apply_rule(
    d: dict[str, Any], qid: str, ranking: list[list[Any]], p: dict[str, float]
) -> list[str]:
    user = qid.split("#")[0]
    q = d["qv"][qid]
    scores = {m: s for m, _, s in ranking}
    dia = {m: x for m, x, _ in ranking}
    levels = sorted(scores.values(), reverse=True)
    anchor = levels[min(5, len(levels)) - 1] if levels else 1.0
    votes: dict[str, list[tuple[float, float, bool]]] = {}  # (value, match, by a reply)
    for r in d["records"].values():
        if r["user"] != user:
            continue
        c = float(q @ r["vec"])
        if c < p["lo"]:
            continue
        m = min(1.0, (c - p["lo"]) / (p["full"] - p["lo"]))
        said: dict[str, tuple[float, bool]] = {}
        if p["ratings"]:
            for mid, v in r["rating"].items():
                said[mid] = (v, False)
        if p["replies"]:
            for mid, v in r["reply"].items():
                old = said.get(mid)
                if old is None:
                    said[mid] = (v, v > 0)
                elif old[0] > 0 and v > 0:
                    said[mid] = (v, True)  # corroborated: the reply's placement
                elif old[0] * v < 0:
                    said[mid] = (0.0, False)  # disputed: nothing
        for mid, (v, rep) in said.items():
            if not v:
                continue
            mv = d["mvec"].get(mid)
            if v > 0 and p["margin"] > 0 and mv is not None:
                gap = float(r["vec"] @ mv) - float(q @ mv)
                if gap >= p["margin"]:
                    continue
            votes.setdefault(mid, []).append((v, m, rep))
    out = dict(scores)
    for mid, vs in votes.items():
        pos = sum(m for v, m, _ in vs if v > 0)
        neg = sum(m for v, m, _ in vs if v < 0)
        if pos <= 0:
            continue
        mv = d["mvec"].get(mid)
        if mv is None:
            continue
        best = max(m for v, m, _ in vs if v > 0)
        rep = any(r and v > 0 for v, _, r in vs)
        consist = pos / (pos + p["neg_w"] * neg + p["prior"])
        qc = float(q @ mv)
        if qc < p["mem_min"]:
            continue
        level = anchor * p["scale"] * best * consist
        if p.get("oracle") and d["dia"].get(mid) not in d["probe"]["evidence"][qid]:
            continue
        own = scores.get(mid)
        if p["boost"]:
            if own is None:
                continue
            level = own * (1 + p["boost"] * best * consist)
        if own is not None and not p["lift_present"]:
            continue
        if not rep and p["bound"]:
            if own is None:
                continue
            level = min(level, own * 1.5)
        out[mid] = max(out.get(mid, 0.0), level)
        if mid not in dia:
            dia[mid] = d["dia"].get(mid, "")
    order = sorted(out, key=lambda m: -out[m])
    return [dia.get(m) or d["dia"].get(m, "") for m in order]


def evaluate(
    d: dict[str, Any], p: dict[str, float] | None, side: str = "after"
) -> dict[str, float]:
    probe = d["probe"]
    samples = probe["samples"]
    res = {}
    for subset in ("train", "related", "unrelated"):
        for half, (lo, hi) in (("1-5", (0, 5)), ("6-10", (5, 10))):
            ids = [
                q
                for q in probe["subsets"][subset]
                if q.split("#")[0] in samples[lo:hi] and q in probe[side]
            ]
            tot = 0.0
            for qid in ids:
                ranking = probe[side][qid]
                ranked = [x for _, x, _ in ranking] if p is None else apply_rule(d, qid, ranking, p)
                tot += recall5(ranked, probe["evidence"][qid])
            res[f"{subset} {half}"] = tot / len(ids) if ids else float("nan")
    return res


def precision(d: dict[str, Any], lo_cos: float = 0.5, half: tuple[int, int] = (0, 5)) -> None:
    """How often a carried memory (a positive vote from a train question whose cosine with the
    test question is at least ``lo_cos``) is the test question's evidence, by its rank in the
    "after" list (test questions of the conversations ``half``)."""
    probe = d["probe"]
    samples = probe["samples"][half[0] : half[1]]
    bins = [(0, 5), (5, 10), (10, 20), (20, 50), (50, 10**9)]
    counts = {b: [0, 0] for b in bins}
    for t in probe["subsets"]["test"]:
        if t.split("#")[0] not in samples:
            continue
        q = d["qv"][t]
        rank = {m: i for i, (m, _, _) in enumerate(probe["after"][t])}
        pos: set[str] = set()
        for r in d["records"].values():
            if r["user"] != t.split("#")[0] or float(q @ r["vec"]) < lo_cos:
                continue
            said = dict(r["rating"])
            for mid, v in r["reply"].items():
                old = said.get(mid)
                said[mid] = v if old is None else (old if old * v > 0 else 0.0)
            pos |= {m for m, v in said.items() if v > 0}
        for mid in pos:
            b = next(b for b in bins if b[0] <= rank.get(mid, 10**8) < b[1])
            counts[b][0] += 1
            counts[b][1] += d["dia"].get(mid) in probe["evidence"][t]
    for (a, z), (n, e) in counts.items():
        print(
            f"ranks {a + 1}-{z if z < 10**9 else 'beyond'}: {n} carried, {e} evidence, "
            f"precision {e / max(n, 1):.3f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True)
    ap.add_argument("--fed", required=True)
    ap.add_argument("--grid", default="")
    ap.add_argument("--precision", action="store_true", help="the precision table only")
    ap.add_argument(
        "--before-run",
        default="bench/results/feedback_runs/session12-main.json",
        help="a feedback_learning.py result whose 'before' recall@5 per question is used",
    )
    args = ap.parse_args()
    d = load(args)
    if args.precision:
        precision(d)
        return
    snap = json.loads(Path(args.before_run).read_text())["conditions"]["before"]
    before = {}
    probe = d["probe"]
    for subset in ("train", "related", "unrelated"):
        for half, (lo, hi) in (("1-5", (0, 5)), ("6-10", (5, 10))):
            ids = [
                q for q in probe["subsets"][subset] if q.split("#")[0] in probe["samples"][lo:hi]
            ]
            before[f"{subset} {half}"] = sum(snap[q]["recall@5"] for q in ids) / len(ids)
    after = evaluate(d, None, "after")

    def show(name: str, r: dict[str, float]) -> None:
        cells = " ".join(f"{k} {100 * (r[k] - before[k]):+5.1f}" for k in r)
        print(f"{name:60s} {cells}", flush=True)

    show("after (main)", after)
    base = {
        "lo": 0.6,
        "full": 0.85,
        "replies": 1,
        "ratings": 1,
        "bound": 1,
        "neg_w": 1.0,
        "prior": 1.0,
        "margin": 0.0,
        "mem_min": 0.0,
        "scale": 1.2,
        "lift_present": 1,
        "boost": 0.0,
    }
    grid = json.loads(args.grid) if args.grid else {}
    keys = list(grid)
    for combo in itertools.product(*(grid[k] for k in keys)):
        p = {**base, **dict(zip(keys, combo, strict=True))}
        show(" ".join(f"{k}={v}" for k, v in zip(keys, combo, strict=True)), evaluate(d, p))


if __name__ == "__main__":
    main()

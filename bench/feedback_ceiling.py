"""How far can one round of feedback carry to unseen questions? A ceiling, on LoCoMo.

``bench/feedback_learning.py`` measures what engrammar's learned ranking gains on *related
unseen* questions (test questions sharing an evidence turn with some train question) and loses
on *unrelated* ones. This benchmark asks what *any* re-ranking built on the same feedback could
gain, without running a feedback round:

1. ``recall(limit=50)`` before feedback for every question; the simulated user of
   ``feedback_learning``'s round accepts the evidence in each train question's top
   ``--rate-depth`` and rejects the rest (read off the lists before feedback: within a real
   round the later recalls move a little);
2. where each related unseen question's shared, accepted evidence ranks (why it fails);
3. the oracle: every shared, accepted evidence turn in recall's top K moved to the top;
4. how often a memory accepted for some train question is the evidence of a test question it is
   a candidate of, by rank and by the two questions' cosine, against every candidate;
5. a learned ceiling: a logistic re-ranker of the top 50 on features of the ranking and of the
   feedback (accepted / rejected by how many train questions, how close those questions are to
   this one and of the same kind, how close the memory is to each; accepted neighbours in the
   dialogue), fitted on conversations 6-10 and applied to 1-5 and the other way round. Its
   feedback part is scaled by alpha to trace what related unseen questions can gain for what
   unrelated ones lose.

    python bench/feedback_ceiling.py --store-cache /tmp/locomo-store.db --embed-cache
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from feedback_learning import DEFAULT_DATA, REFEREE, ROOT, Bench

DEPTH = 50
KINDS = ("how many", "how long", "when", "why", "where", "who", "which", "would", "what")
BASE = ("log rank", "score / best", "cosine(query, memory)")
FEEDBACK = (
    "accepted",
    "log(1 + #accepted)",
    "log(1 + #rejected)",
    "best cosine with an accepting question",
    "best cosine with a rejecting question",
    "accepted x best accepting cosine",
    "memory closer to the query than to its accepting question (margin 0.1)",
    "rejected",
    "an accepted turn within 2 of it in the dialogue",
    "best cosine with the question of an accepted neighbour",
    "accepted by a question of the same kind (when / how many / ...)",
    "best cosine with an accepting question of the same kind",
    "log(1 + #rejected by questions of the same kind)",
)
ALPHAS = (0.25, 0.5, 0.75, 1.0, 1.5)


def kind(question: str) -> str:
    text = question.casefold()
    return next((k for k in KINDS if text.startswith(k)), "other")


def dialogue_position(dia_id: str) -> tuple[int, int] | None:
    found = re.match(r"D(\d+):(\d+)$", dia_id or "")
    return (int(found.group(1)), int(found.group(2))) if found else None


Lists = dict[str, list[tuple[str, str, float]]]


def recall_lists(bench: Bench) -> tuple[Lists, float, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Recall's top ``DEPTH`` before feedback for every question (id, dia_id, score), the
    seconds it took, the questions' vectors and the recalled memories' stored vectors."""
    mem = bench.fresh("before")
    t0 = time.perf_counter()
    out = {}
    for q in bench.train + bench.test:
        result = mem.recall(q["question"], user_id=q["sample_id"], limit=DEPTH)
        out[q["question_id"]] = [
            (m.id, m.memory.metadata.get("dia_id", ""), m.score) for m in result.memories
        ]
    seconds = time.perf_counter() - t0
    ids = sorted({i for lst in out.values() for i, _, _ in lst})
    memory_vecs = mem._engine.store.vectors("default", ids)
    question_vecs = dict(
        zip(
            [q["question_id"] for q in bench.train + bench.test],
            mem._engine.embedder.embed([q["question"] for q in bench.train + bench.test]),
            strict=True,
        )
    )
    mem.close()
    return out, seconds, question_vecs, memory_vecs


def recall_at(order: list[str], gold: set[str], k: int = 5) -> float:
    return len(gold & set(order[:k])) / len(gold)


class Ceiling:
    def __init__(
        self,
        bench: Bench,
        lists: Lists,
        question_vecs: dict[str, np.ndarray],
        memory_vecs: dict[str, np.ndarray],
    ) -> None:
        self.bench, self.lists = bench, lists
        self.qv, self.mv = question_vecs, memory_vecs
        self.related = {q["question_id"] for q in bench.related}
        self.kind = {q["question_id"]: kind(q["question"]) for q in bench.train + bench.test}
        samples = [s["sample_id"] for s in bench.data]
        self.half = {s: "1-5" if i < 5 else "6-10" for i, s in enumerate(samples)}
        # The simulated round: evidence in a train question's top ``rate_depth`` accepted.
        self.accepted: dict[str, list[str]] = defaultdict(list)  # memory -> train questions
        self.rejected: dict[str, list[str]] = defaultdict(list)
        self.accepted_at: dict[tuple[str, str], list[str]] = defaultdict(list)  # (sample, dia)
        for q in bench.train:
            gold = set(q["evidence"])
            for mid, dia, _ in lists[q["question_id"]][: bench.args.rate_depth]:
                if dia in gold:
                    self.accepted[mid].append(q["question_id"])
                    self.accepted_at[(q["sample_id"], dia)].append(q["question_id"])
                else:
                    self.rejected[mid].append(q["question_id"])

    def cos(self, a: str, b: str) -> float:
        return float(self.qv[a] @ self.qv[b])

    # -- 2 and 3: where shared evidence ranks; the oracle --------------------------------------
    def failures(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for q in self.bench.related:
            qid, gold = q["question_id"], set(q["evidence"])
            dias = [d for _, d, _ in self.lists[qid]]
            if recall_at(dias, gold) >= 1:
                bucket = "all evidence in the top 5 already"
            else:
                shared = [
                    i
                    for i, (mid, d, _) in enumerate(self.lists[qid], 1)
                    if d in gold and mid in self.accepted
                ]
                accepted_any = any((q["sample_id"], d) in self.accepted_at for d in gold)
                if shared:
                    best = shared[0]
                    bucket = (
                        "shared evidence at 1-5, other evidence missing"
                        if best <= 5
                        else "shared evidence best at 6-10"
                        if best <= 10
                        else "shared evidence best at 11-20"
                        if best <= 20
                        else "shared evidence best at 21-50"
                    )
                elif accepted_any:
                    bucket = "shared evidence accepted but beyond recall's top 50"
                else:
                    bucket = "shared evidence never accepted (missed by its train question)"
            out[self.half[q["sample_id"]]][bucket] += 1
        return {k: dict(v) for k, v in out.items()}

    def oracle(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for half in ("1-5", "6-10"):
            qs = [q for q in self.bench.related if self.half[q["sample_id"]] == half]
            row = {"before": float(np.mean([self._r5(q, 0) for q in qs]))}
            for k in (10, 20, 50):
                row[f"top {k}"] = float(np.mean([self._r5(q, k) for q in qs]))
            out[half] = row
        return out

    def _r5(self, q: dict[str, Any], k: int) -> float:
        gold = set(q["evidence"])
        lst = self.lists[q["question_id"]]
        lifted = [d for mid, d, _ in lst[:k] if d in gold and mid in self.accepted]
        order = lifted + [d for _, d, _ in lst if d not in lifted]
        return recall_at(order, gold)

    # -- 4: how often an accepted candidate is the evidence ----------------------------------------
    def precision(self) -> list[dict[str, Any]]:
        rows = []
        for lo, hi in ((1, 5), (6, 10), (11, 20), (21, 50)):
            cells: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for q in self.bench.test:
                qid, gold = q["question_id"], set(q["evidence"])
                for mid, d, _ in self.lists[qid][lo - 1 : hi]:
                    ev = int(d in gold)
                    cells["every candidate"][0] += ev
                    cells["every candidate"][1] += 1
                    by = self.accepted.get(mid)
                    if not by:
                        continue
                    best = max(self.cos(qid, t) for t in by)
                    for bar in (0.0, 0.5, 0.7, 0.85):
                        if best >= bar:
                            key = f"accepted, questions' cosine >= {bar}"
                            cells[key][0] += ev
                            cells[key][1] += 1
            rows.append({"ranks": f"{lo}-{hi}", **{k: tuple(v) for k, v in cells.items()}})
        return rows

    # -- 5: a learned re-ranker on the same feedback ---------------------------------------------
    def features(self, q: dict[str, Any]) -> tuple[np.ndarray, list[str]]:
        qid, sample = q["question_id"], q["sample_id"]
        lst = self.lists[qid]
        top = lst[0][2] if lst else 1.0
        rows = []
        for i, (mid, dia, score) in enumerate(lst):
            acc, rej = self.accepted.get(mid, []), self.rejected.get(mid, [])
            qm = float(self.qv[qid] @ self.mv[mid])
            qa = max((self.cos(qid, t) for t in acc), default=0.0)
            qr = max((self.cos(qid, t) for t in rej), default=0.0)
            tm = max((float(self.qv[t] @ self.mv[mid]) for t in acc), default=0.0)
            same = [t for t in acc if self.kind[t] == self.kind[qid]]
            nb_q = self.neighbours(sample, dia)
            rows.append(
                [
                    np.log(i + 1),
                    score / top if top else 0.0,
                    qm,
                    float(bool(acc)),
                    np.log1p(len(acc)),
                    np.log1p(len(rej)),
                    qa,
                    qr,
                    qa * float(bool(acc)),
                    max(0.0, qm - tm + 0.1) * float(bool(acc)),
                    float(bool(rej)),
                    float(bool(nb_q)),
                    max((self.cos(qid, t) for t in nb_q), default=0.0),
                    float(bool(same)),
                    max((self.cos(qid, t) for t in same), default=0.0),
                    np.log1p(sum(self.kind[t] == self.kind[qid] for t in rej)),
                ]
            )
        # The order of the features above: BASE, then FEEDBACK.
        return np.array(rows, dtype=float), [d for _, d, _ in lst]

    def neighbours(self, sample: str, dia: str, width: int = 2) -> list[str]:
        pos = dialogue_position(dia)
        if pos is None:
            return []
        session, turn = pos
        return [
            t
            for k in range(turn - width, turn + width + 1)
            if k != turn
            for t in self.accepted_at.get((sample, f"D{session}:{k}"), [])
        ]

    def learned(self) -> dict[str, dict[str, float]]:
        data = []
        for q in self.bench.test:
            feats, dias = self.features(q)
            ys = np.array([d in set(q["evidence"]) for d in dias], dtype=float)
            data.append((q, self.half[q["sample_id"]], feats, ys, dias))
        nb = len(BASE)
        out: dict[str, dict[str, float]] = {}
        for alpha in ALPHAS:
            gains: dict[str, list[tuple[float, float]]] = defaultdict(list)
            for held in ("1-5", "6-10"):
                fit_on = [x for x in data if x[1] != held]
                xs = np.concatenate([x[2] for x in fit_on])
                ys = np.concatenate([x[3] for x in fit_on])
                base, full = logistic(xs[:, :nb], ys), logistic(xs, ys)
                for q, half, feats, _, dias in data:
                    if half != held:
                        continue
                    b = base(feats[:, :nb])
                    order = np.argsort(-(b + alpha * (full(feats) - b)), kind="stable")
                    gold = set(q["evidence"])
                    subset = "related" if q["question_id"] in self.related else "unrelated"
                    gains[f"{held} {subset}"].append(
                        (recall_at([dias[i] for i in order], gold), recall_at(dias, gold))
                    )
            out[f"{alpha}"] = {
                k: 100 * float(np.mean([a - b for a, b in v])) for k, v in sorted(gains.items())
            }
        return out


def logistic(xs: np.ndarray, ys: np.ndarray, l2: float = 1e-2, steps: int = 50) -> Any:
    """A ridge-regularised logistic regression (Newton steps on standardised features); returns
    the function giving the log-odds of new rows."""
    mu, sd = xs.mean(0), xs.std(0) + 1e-9
    z = np.c_[(xs - mu) / sd, np.ones(len(xs))]
    w = np.zeros(z.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-z @ w))
        grad = z.T @ (p - ys) / len(ys) + l2 * w
        hess = (z * (p * (1 - p))[:, None]).T @ z / len(ys) + l2 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return lambda rows: np.c_[(rows - mu) / sd, np.ones(len(rows))] @ w


def report(out: dict[str, Any], command: str) -> str:
    lines = [
        "# How far one round of feedback can carry: a ceiling on LoCoMo",
        "",
        f"Command: `{command}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared, load {out['load']}), "
        f"Python {platform.python_version()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
        f"; {out['recalls']} recalls (limit {DEPTH}) in {out['recall_seconds']:.0f} s  ",
        f"Data: the split of `feedback_learning.py`: train {out['n_train']}, related unseen "
        f"{out['n_related']}, unrelated unseen {out['n_unrelated']}. The simulated round: the "
        f"evidence in each train question's top {out['rate_depth']} before feedback accepted, the "
        "rest rejected.",
        "",
        "## Why related unseen questions miss evidence in their top 5 (before feedback)",
        "",
        "| case | conv 1-5 | conv 6-10 |",
        "|---|---|---|",
    ]
    cases = sorted({c for v in out["failures"].values() for c in v})
    for case in cases:
        lines.append(
            f"| {case} | "
            + " | ".join(str(out["failures"].get(h, {}).get(case, 0)) for h in ("1-5", "6-10"))
            + " |"
        )
    lines += [
        "",
        "## Oracle: every shared, accepted evidence turn in recall's top K moved to the top",
        "",
        "related unseen recall@5",
        "",
        "| conv | before | from the top 10 | from the top 20 | from the top 50 |",
        "|---|---|---|---|---|",
    ]
    for half, row in out["oracle"].items():
        b = row["before"]
        lines.append(
            f"| {half} | {b:.3f} | "
            + " | ".join(
                f"{row[f'top {k}']:.3f} ({100 * (row[f'top {k}'] - b):+.1f})" for k in (10, 20, 50)
            )
            + " |"
        )
    lines += [
        "",
        "## How often a candidate is the question's evidence (all test questions)",
        "",
        "Share of evidence among a test question's candidates at these ranks: every candidate, "
        "and those accepted for some train question whose cosine with the test question is at "
        "least the bar (evidence / candidates).",
        "",
    ]
    keys = [k for k in out["precision"][0] if k != "ranks"]
    lines += ["| ranks | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    for row in out["precision"]:
        cells = []
        for k in keys:
            ev, n = row.get(k, (0, 0))
            cells.append(f"{ev / n:.3f} ({ev}/{n})" if n else "-")
        lines.append(f"| {row['ranks']} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## A learned re-ranker on the same feedback (cross-validated by halves)",
        "",
        f"Logistic regression over recall's top {DEPTH}: base features ({', '.join(BASE)}) "
        f"plus feedback features ({'; '.join(FEEDBACK)}); fitted on the test questions of one "
        "half of the conversations, applied to the other half; the feedback part of its log-odds "
        "scaled by alpha. recall@5 change in points against recall's order before feedback.",
        "",
        "| alpha | related 1-5 | unrelated 1-5 | related 6-10 | unrelated 6-10 |",
        "|---|---|---|---|---|",
    ]
    for alpha, row in out["learned"].items():
        lines.append(
            f"| {alpha} | "
            + " | ".join(
                f"{row[f'{h} {s}']:+.1f}"
                for h, s in (
                    ("1-5", "related"),
                    ("1-5", "unrelated"),
                    ("6-10", "related"),
                    ("6-10", "unrelated"),
                )
            )
            + " |"
        )
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store-cache", help="ingested LoCoMo store (see feedback_learning.py)")
    parser.add_argument("--embed-cache", action="store_true")
    parser.add_argument("--rate-depth", type=int, default=20)
    parser.add_argument("--name", default="feedback_ceiling")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    bench_args = argparse.Namespace(
        referee=str(REFEREE),
        data=str(DEFAULT_DATA),
        conversations=0,
        min_samples=None,
        max_adjustment=None,
        set=[],
        store_cache=args.store_cache,
        embed_cache=args.embed_cache,
        rate_depth=args.rate_depth,
    )
    bench = Bench(bench_args)
    bench.ingest()
    lists, seconds, question_vecs, memory_vecs = recall_lists(bench)
    ceiling = Ceiling(bench, lists, question_vecs, memory_vecs)
    out = {
        "load": os.getloadavg()[0].__round__(1),
        "recalls": len(lists),
        "recall_seconds": seconds,
        "n_train": len(bench.train),
        "n_related": len(bench.related),
        "n_unrelated": len(bench.test) - len(bench.related),
        "rate_depth": args.rate_depth,
        "failures": ceiling.failures(),
        "oracle": ceiling.oracle(),
        "precision": ceiling.precision(),
        "learned": ceiling.learned(),
    }
    command = "python bench/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{args.name}.json").write_text(json.dumps(out, indent=2))
    text = report(out, command)
    (folder / f"{args.name}.md").write_text(text)
    print(text)
    shutil.rmtree(bench.tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

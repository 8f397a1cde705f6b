"""Knowledge updates on the LongMemEval dev set: does the most recent fact rank first?

    python /work/shared/eval/lme_dev.py --types knowledge-update "$TMPDIR"/lme_ku.json
    python bench/lme_updates.py "$TMPDIR"/lme_ku.json

For each knowledge-update question with gold user turns (``has_answer``) on at least two
different dates, one user scope holds the question's haystack (user turns, one ``add`` per
session, stamped with the session's date). The question is asked with ``recall`` (limit 50;
``as_of`` = the question's date, or just after the haystack's last session when that is later,
as bench/lme.py does: 3 of these questions hold a gold turn dated later than the question, and the
strict date hid them from recall; ``--strict-as-of`` keeps it) and with plain Okapi BM25
over the same turns (k1 1.5, b 0.75, lower-cased words, a short stop-word list, as
../shared/eval/README.md describes). Counted: the share of questions whose most recent gold
turn ranks above every earlier gold turn (a gold turn missing from the top 50 ranks last), and
the share whose most recent gold turn is in the top 5. Some questions ask for the earlier value
("What was my previous goal ... before I updated it?"): for them the right turn to rank first
is the older one. A second count, "the answer's turn first", takes as the turn that must rank
above the other gold turns the latest gold turn that holds every word of the dataset's answer
(words of three letters or more, and numbers) when only earlier gold turns hold it, else the
most recent: labelled from the data, not by engrammar's own question rules. Results:
bench/results/lme_updates.md.
Embeddings are cached outside the repository (bench/_embcache.py).
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import re
import shlex
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine
from _embcache import DiskCachedEmbedder
from engrammar import Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder

LIMIT = 50
OURS_FIRST = "engrammar answer's turn first"
BM25_FIRST = "bm25 answer's turn first"
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    """a an the and or but if of at by for with about to from in on is are was were be been am i
    you he she it we they me my your our this that these those do does did have has had not no so
    what which who when where how can could would should will just""".split()
)


def parse_date(text: str) -> float:
    """``2023/06/15 (Thu) 09:25`` as epoch seconds (UTC)."""
    day, _, clock = text.split(" ")
    return datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=UTC).timestamp()


def user_turns(q: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for sid, date, sess in zip(
        q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"], strict=True
    ):
        for i, t in enumerate(sess):
            if t["role"] == "user" and t["content"].strip():
                out.append(
                    {
                        "id": f"{sid}_{i + 1}",
                        "session": sid,
                        "time": parse_date(date),
                        "order": i,
                        "text": t["content"],
                        "gold": bool(t.get("has_answer")),
                    }
                )
    return out


def asked_at(q: dict[str, Any], strict: bool = False) -> float:
    """When the question is asked: its date, or just after the last session of its haystack
    when that is dated later (LongMemEval puts every session before its question, yet some
    are stamped later on the question's day)."""
    asked = parse_date(q["question_date"])
    if strict:
        return asked
    return max(
        [asked]
        + [
            parse_date(d) + len(sess)
            for d, sess in zip(q["haystack_dates"], q["haystack_sessions"], strict=True)
        ]
    )


def bm25(turns: list[dict[str, Any]], query: str) -> list[str]:
    docs = [[w for w in _WORD.findall(t["text"].lower()) if w not in _STOP] for t in turns]
    n = len(docs)
    avg = sum(map(len, docs)) / max(1, n)
    df: Counter[str] = Counter()
    for d in docs:
        df.update(set(d))
    q = [w for w in _WORD.findall(query.lower()) if w not in _STOP]
    scores = []
    for t, d in zip(turns, docs, strict=True):
        tf = Counter(d)
        s = 0.0
        for w in q:
            if w in tf:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * tf[w] * 2.5 / (tf[w] + 1.5 * (0.25 + 0.75 * len(d) / avg))
        scores.append((s, t["id"]))
    return [i for s, i in sorted(scores, key=lambda x: -x[0]) if s > 0][:LIMIT]


def newest_first(
    ranked: list[str], gold: list[dict[str, Any]], first: dict[str, Any] | None = None
) -> tuple[bool, bool]:
    """(the most recent gold turn, or ``first`` when given, above every other gold turn; it
    is in the top 5)."""
    latest = first or max(gold, key=lambda t: (t["time"], t["order"]))
    pos = {i: k for k, i in enumerate(ranked)}
    mine = pos.get(latest["id"], LIMIT + 1)
    others = [pos.get(t["id"], LIMIT + 1) for t in gold if t is not latest]
    return mine < min(others), mine < 5


def answer_turn(gold: list[dict[str, Any]], answer: Any) -> dict[str, Any]:
    """The gold turn that must rank first: the latest one holding every word of ``answer``
    when only earlier gold turns hold it (the question asks for a previous value), else the
    most recent gold turn."""
    ordered = sorted(gold, key=lambda t: (t["time"], t["order"]))
    words = [w for w in _WORD.findall(str(answer).lower()) if len(w) > 2 or w.isdigit()]
    holding = [t for t in ordered if words and set(words) <= set(_WORD.findall(t["text"].lower()))]
    if holding and ordered[-1] not in holding:
        return holding[-1]
    return ordered[-1]


def _by_kind(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The answer's turn first, apart for the questions asking for the present value (there it
    is the most recent gold turn) and for those asking for an earlier one."""
    out = {}
    for name, earlier in (
        ("asking for the present value", False),
        ("asking for an earlier value", True),
    ):
        sel = [r for r in rows if r["asks_earlier"] == earlier]
        out[name] = {
            "questions": len(sel),
            "engrammar": round(sum(r["engrammar_answer_first"] for r in sel) / max(1, len(sel)), 3),
            "bm25": round(sum(r["bm25_answer_first"] for r in sel) / max(1, len(sel)), 3),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="lme_dev.py output (knowledge-update questions)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-as-of", action="store_true", help="recall without the question date")
    parser.add_argument(
        "--strict-as-of",
        action="store_true",
        help="as_of the question's date even before sessions dated later",
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a Config setting"
    )
    args = parser.parse_args()
    command = "python bench/lme_updates.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    questions = json.loads(args.data.read_text(encoding="utf-8"))
    embedder = DiskCachedEmbedder(MiniLMEmbedder())
    has_as_of = "as_of" in inspect.signature(Memory.recall).parameters and not args.no_as_of
    counts: Counter[str] = Counter()
    rows = []
    t0 = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="lme-ku-") as tmp,
        Memory(
            Config(
                path=str(Path(tmp) / "store"),
                max_content_chars=1_000_000,
                **{k: float(v) for k, v in (kv.split("=", 1) for kv in args.set)},
            ),
            embedder=embedder,
        ) as mem,
    ):
        for q in questions:
            if q["question_id"].endswith("_abs"):
                continue
            turns = user_turns(q)
            gold = [t for t in turns if t["gold"]]
            if len({t["time"] for t in gold}) < 2:
                continue
            user = q["question_id"]
            by_session: dict[str, list[dict[str, Any]]] = {}
            for t in turns:
                by_session.setdefault(t["session"], []).append(t)
            id_of: dict[str, str] = {}
            for sid, ts in by_session.items():
                ids = mem.add(
                    [t["text"] for t in ts],
                    user_id=user,
                    session_id=f"{user}-{sid}",
                    timestamp=ts[0]["time"],
                )
                for memory_id, t in zip(ids, ts, strict=True):
                    id_of.setdefault(memory_id, t["id"])
            kwargs: dict[str, Any] = {}
            if has_as_of:
                kwargs["as_of"] = asked_at(q, args.strict_as_of)
            result = mem.recall(q["question"], user_id=user, limit=LIMIT, **kwargs)
            ranked = [id_of[m.id] for m in result.memories if m.id in id_of]
            base_ranked = bm25(turns, q["question"])
            ours = newest_first(ranked, gold)
            base = newest_first(base_ranked, gold)
            wanted = answer_turn(gold, q.get("answer", ""))
            earlier = wanted is not max(gold, key=lambda t: (t["time"], t["order"]))
            counts["questions"] += 1
            counts["questions asking for an earlier value"] += earlier
            ours_answer = newest_first(ranked, gold, wanted)[0]
            base_answer = newest_first(base_ranked, gold, wanted)[0]
            counts[OURS_FIRST] += ours_answer
            counts[BM25_FIRST] += base_answer
            counts["engrammar newest first"] += ours[0]
            counts["engrammar newest in top 5"] += ours[1]
            counts["bm25 newest first"] += base[0]
            counts["bm25 newest in top 5"] += base[1]
            rows.append(
                {
                    "question_id": user,
                    "engrammar": ours,
                    "bm25": base,
                    "asks_earlier": earlier,
                    "engrammar_answer_first": ours_answer,
                    "bm25_answer_first": base_answer,
                }
            )
            if len(rows) % 10 == 0:
                embedder.save()
    embedder.save()
    n = counts["questions"]
    # Halves by question id (sorted), so a figure tuned on one half can be checked on the other.
    ids = sorted(r["question_id"] for r in rows)
    first = set(ids[: len(ids) // 2])
    halves = {}
    for name, part in (("first half", first), ("second half", set(ids) - first)):
        sel = [r for r in rows if r["question_id"] in part]
        halves[name] = {
            "questions": len(sel),
            "engrammar newest first": round(
                sum(r["engrammar"][0] for r in sel) / max(1, len(sel)), 3
            ),
            "bm25 newest first": round(sum(r["bm25"][0] for r in sel) / max(1, len(sel)), 3),
            OURS_FIRST: round(sum(r["engrammar_answer_first"] for r in sel) / max(1, len(sel)), 3),
            BM25_FIRST: round(sum(r["bm25_answer_first"] for r in sel) / max(1, len(sel)), 3),
        }
    doc = {
        "command": command,
        "machine": machine(),
        "as_of": has_as_of,
        "questions": n,
        "seconds": round(time.perf_counter() - t0, 1),
        "rates": {
            k: round(v / max(1, n), 3)
            for k, v in counts.items()
            if k not in ("questions", "questions asking for an earlier value")
        },
        "asking_earlier": counts["questions asking for an earlier value"],
        "by_kind": _by_kind(rows),
        "halves": halves,
        "rows": rows,
    }
    print(json.dumps({k: v for k, v in doc.items() if k != "rows"}, indent=1))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lme_updates.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    lines = [
        "# Knowledge updates on the LongMemEval dev set",
        "",
        f"Command: `{command}` · machine: {doc['machine']['cpu']}, {doc['machine']['cores']} cores, "
        f"load average at start {tuple(round(x, 2) for x in doc['machine']['load_avg_at_start'])}",
        "",
        f"{n} knowledge-update questions with gold user turns on two or more dates (abstention "
        "questions skipped); user turns ingested, one `add` per session at the session's date; "
        f"recall limit {LIMIT}, `as_of` = the question's date "
        f"({'strictly' if args.strict_as_of else 'or just after a session dated later'}): "
        f"{'yes' if has_as_of else 'no'}.",
        "",
        "| system | most recent gold turn above every earlier one | most recent gold turn in top 5 "
        "| the answer's gold turn above the others |",
        "|---|---|---|---|",
        f"| engrammar | {doc['rates']['engrammar newest first']} | "
        f"{doc['rates']['engrammar newest in top 5']} | {doc['rates'][OURS_FIRST]} |",
        f"| BM25 | {doc['rates']['bm25 newest first']} | {doc['rates']['bm25 newest in top 5']} | "
        f"{doc['rates'][BM25_FIRST]} |",
        "",
        f"{doc['asking_earlier']} of the {n} questions ask for an earlier value (the dataset's "
        "answer is held only by an earlier gold turn); the last column counts the answer's turn "
        "first for them, the most recent for the rest.",
        "",
        "The same by what the question asks for: the most recent gold turn first where it "
        "asks for the present value, the earlier value's turn first where it asks for that",
        "",
        "| questions | n | engrammar | BM25 |",
        "|---|---|---|---|",
        *[
            f"| {k} | {v['questions']} | {v['engrammar']} | {v['bm25']} |"
            for k, v in doc["by_kind"].items()
        ],
        "",
        "By half of the question ids (sorted): most recent gold turn above every earlier one, "
        "and the answer's turn above the others",
        "",
        "| half | questions | engrammar | BM25 | engrammar, answer's turn | BM25, answer's turn |",
        "|---|---|---|---|---|---|",
        *[
            f"| {k} | {v['questions']} | {v['engrammar newest first']} | {v['bm25 newest first']} "
            f"| {v[OURS_FIRST]} | {v[BM25_FIRST]} |"
            for k, v in halves.items()
        ],
        "",
    ]
    (args.out / "lme_updates.md").write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {args.out / 'lme_updates.md'}")


if __name__ == "__main__":
    main()

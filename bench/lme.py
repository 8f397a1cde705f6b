"""Retrieval quality on the LongMemEval dev set, every recall step ablated, scored by the referee.

    python bench/lme.py [--sample N] [--types knowledge-update,...] [--variants NAME,...]
                        [--store DIR] [--reuse] [--out bench/results] [--speed-questions 3]

Writes the dev set out with ../shared/eval/lme_dev.py into a temp dir (never into the repo),
ingests each question's haystack into its own user scope through the public ``Memory`` API
(user and assistant turns, one ``add`` per session, the session's date as the timestamp, the
turn's LongMemEval id in its metadata), then asks every question through ``Memory.recall``
under each recall-time variant over that same store, and scores each run with
../shared/eval/longmemeval_retrieval.py (turn and session level, per question type).
Questions are split by a hash of their id: the ``tune`` half is what defaults were tuned on,
the ``held-out`` half is reported apart. Plain Okapi BM25 over each haystack (the referee's
reference protocol: k1 1.5, b 0.75, lowercase words, a short stop-word list) runs beside.

Embeddings are cached on disk (bench/_embcache.py, ~/.cache/engrammar-bench) so that an
ingest-time change costs the store's work, not the model's. Speed is
measured apart on a few questions with the bare model: ``add`` time against the time the
model takes on exactly the texts ``add`` gave it, and recall latency on a ~500-turn scope.
Writes bench/results/lme.md, lme.json and lme_recall_at_k.png.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import random
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, machine, pct
from _embcache import CACHE_ROOT, DiskCachedEmbedder
from engrammar import CachedEmbedder, Config, Memory, RankingProfile
from engrammar.embed.onnx import MiniLMEmbedder

# ../shared/eval beside the repository (or beside the folder of git worktrees).
_ROOT = Path(__file__).resolve().parent.parent
EVAL = next(
    (
        p
        for p in (_ROOT.parent / "shared" / "eval", _ROOT.parent.parent / "shared" / "eval")
        if p.is_dir()
    ),
    _ROOT.parent / "shared" / "eval",
)
KS = (1, 3, 5, 10, 30, 50)
TYPES = (
    "knowledge-update",
    "multi-session",
    "single-session-preference",
    "single-session-user",
    "temporal-reasoning",
)

# Stages switched off for the plain baselines (RankingProfile weights).
OFF: dict[str, Any] = {
    "session_weight": 0.0,
    "time_weight": 0.0,
    "answer_weight": 0.0,
    "role_weight": 0.0,
    "question_weight": 0.0,
}
# Every ranking stage switched off one at a time (RankingProfile weights, as bench/ranking.py);
# a name starting with "_" changes how the question is asked, not the profile.
VARIANTS: dict[str, dict[str, Any]] = {
    "bm25": {"keyword_weight": 1.0, **OFF, "graph_depth": 0},
    "vector": {"keyword_weight": 0.0, **OFF, "graph_depth": 0},
    "fused": {**OFF, "graph_depth": 0},
    "default": {},
    "default - session evidence": {"session_weight": 0.0},
    "default - time": {"time_weight": 0.0},
    "default - answer kind": {"answer_weight": 0.0},
    "default - whose words": {"role_weight": 0.0},
    "default - question date (as_of)": {"_no_as_of": True},
    "default, as_of the question date even before later sessions": {"_strict_as_of": True},
    "default + neighbours 0.3": {"neighbour_weight": 0.3},
    "default - graph": {"graph_depth": 0},
    "default, replaced memories x0.5": {"superseded_factor": 0.5},
}
PROBES: dict[str, dict[str, Any]] = {
    **{f"default with recency_similarity {w}": {"recency_similarity": w} for w in (0.3, 0.5)},
    **{f"default with keyword_weight {w}": {"keyword_weight": w} for w in (0.3, 0.6)},
    **{f"default with role_weight {w}": {"role_weight": w} for w in (0.3,)},
}


def referee(name: str) -> ModuleType:
    path = EVAL / name
    spec = importlib.util.spec_from_file_location(name.removesuffix(".py"), path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import the referee from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_dev_set(folder: Path, limit: int, types: str) -> list[dict[str, Any]]:
    out = folder / "lme_dev.json"
    cmd = [sys.executable, str(EVAL / "lme_dev.py"), str(out)]
    if limit:
        cmd += ["--limit", str(limit)]
    if types:
        cmd += ["--types", types]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    data: list[dict[str, Any]] = json.loads(out.read_text(encoding="utf-8"))
    return data


def stratified(data: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """``n`` questions taken round-robin over the scored types, each type in hash order.

    The dev set is sorted by type; a prefix would hold only the first types. Embedding a
    question's haystack costs the model about a minute on a busy 2-core machine until the
    cache holds it, so quick runs take a small sample that still spans every type.
    """
    by_type: dict[str, list[dict[str, Any]]] = {}
    for entry in sorted(data, key=lambda e: hashlib.sha1(e["question_id"].encode()).digest()):
        if entry["question_type"] in TYPES and "_abs" not in entry["question_id"]:
            by_type.setdefault(entry["question_type"], []).append(entry)
    out: list[dict[str, Any]] = []
    while len(out) < n and any(by_type.values()):
        for t in TYPES:
            if by_type.get(t) and len(out) < n:
                out.append(by_type[t].pop(0))
    return out


def half(question_id: str) -> str:
    """``tune`` or ``held-out``, by the parity of a hash of the question id."""
    return "tune" if hashlib.sha1(question_id.encode()).digest()[0] % 2 == 0 else "held-out"


def spread_evidence(data: list[dict[str, Any]], seed: int) -> None:
    """Give each question's evidence sessions random places among its haystack's dates.

    LongMemEval dates its evidence sessions late in the haystack (on average at the 93rd-94th
    percentile of the dates for every type but knowledge-update), so any rule that prefers
    later memories gains there for that reason alone. Here the haystack keeps its set of
    dates; the sessions holding a gold turn get dates drawn at random from it, in their own
    order (a knowledge update stays later than what it updates), and the other sessions get the
    rest in random order. Questions that name a time ("two weeks ago", "in March") lose their
    meaning: read temporal-reasoning apart.
    """
    for entry in data:
        rng = random.Random(f"{seed}:{entry['question_id']}")
        dates = entry["haystack_dates"]
        order = sorted(range(len(dates)), key=lambda k: session_time(dates[k]))
        ranked = [dates[k] for k in order]  # the haystack's dates, earliest first
        gold = [
            k
            for k, turns in enumerate(entry["haystack_sessions"])
            if any(t.get("has_answer") for t in turns)
        ]
        gold.sort(key=lambda k: session_time(dates[k]))
        places = sorted(rng.sample(range(len(ranked)), len(gold)))
        taken = set(places)
        rest = [ranked[k] for k in range(len(ranked)) if k not in taken]
        rng.shuffle(rest)
        new = list(dates)
        for k, place in zip(gold, places, strict=True):
            new[k] = ranked[place]
        evidence = set(gold)
        others = [k for k in range(len(dates)) if k not in evidence]
        for k, date in zip(others, rest, strict=True):
            new[k] = date
        entry["haystack_dates"] = new


def session_time(text: str) -> datetime:
    """LongMemEval's ``2023/05/28 (Sun) 19:47`` as a UTC datetime."""
    return datetime.strptime(text.strip(), "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC)


def sessions(entry: dict[str, Any]) -> list[tuple[str, datetime, list[dict[str, Any]]]]:
    return [
        (sid, session_time(date), turns)
        for sid, date, turns in zip(
            entry["haystack_session_ids"],
            entry["haystack_dates"],
            entry["haystack_sessions"],
            strict=True,
        )
    ]


def messages_of(sid: str, when: datetime, turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One session's turns as ``add`` messages; empty turns are left out (nothing to store)."""
    return [
        {
            "role": turn["role"],
            "content": turn["content"],
            # A second apart: the order within a session survives in the timestamps.
            "timestamp": when.timestamp() + i,
            "metadata": {"turn_id": f"{sid}_{i + 1}"},
        }
        for i, turn in enumerate(turns)
        if turn["content"].strip()
    ]


def ingest(mem: Memory, entry: dict[str, Any]) -> int:
    user = entry["question_id"]
    added = 0
    for sid, when, turns in sessions(entry):
        messages = messages_of(sid, when, turns)
        if messages:
            added += len(mem.add(messages, user_id=user, session_id=f"{user}/{sid}"))
    return added


def ingest_all(
    store: Path,
    data: Sequence[dict[str, Any]],
    embedder: DiskCachedEmbedder,
    reuse: bool,
    changes: dict[str, Any],
) -> dict[str, Any]:
    """Ingest every question not in ``store`` yet (with ``reuse``: a larger sample adds only
    its new questions); ``store/ingest.json`` lists what is in it and what it cost."""
    ingest_file = store / "ingest.json"
    done: dict[str, Any] = {"questions": [], "turns": 0, "seconds": 0.0, "model_seconds": 0.0}
    if reuse and ingest_file.is_file():
        done = json.loads(ingest_file.read_text())
        if done.get("config", {}) != changes:
            sys.exit(f"{store} was built with {done.get('config')}, not {changes}")
    elif store.exists() and any(store.iterdir()):
        sys.exit(f"{store} is not empty: pass --reuse or another --store")
    todo = [e for e in data if e["question_id"] not in set(done["questions"])]
    cfg = Config(path=str(store), embed_cache_size=0, max_content_chars=1_000_000, **changes)
    t0 = time.perf_counter()
    model0 = embedder.seconds
    with Memory(cfg, embedder=embedder) as mem:
        for i, entry in enumerate(todo):
            done["turns"] += ingest(mem, entry)
            done["questions"].append(entry["question_id"])
            done["seconds"] = round(done["seconds"] + time.perf_counter() - t0, 1)
            done["model_seconds"] = round(done["model_seconds"] + embedder.seconds - model0, 1)
            t0, model0 = time.perf_counter(), embedder.seconds
            done["config"] = changes
            ingest_file.write_text(json.dumps(done), encoding="utf-8")
            print(
                f"  ingested {i + 1}/{len(todo)} ({done['turns']} turns in the store)", flush=True
            )
    return {k: v for k, v in done.items() if k != "questions"} | {
        "questions_in_store": len(done["questions"])
    }


def question_time(entry: dict[str, Any]) -> float:
    return session_time(entry["question_date"]).timestamp()


def ask(
    mem: Memory,
    data: Sequence[dict[str, Any]],
    limit: int,
    dated: bool = True,
    strict: bool = False,
) -> tuple[dict[str, list[str]], list[float]]:
    """Recall every question in its scope, asked (when ``dated``) at its ``question_date`` or
    after its haystack's last session, whichever is later (``strict``: at its date even when
    sessions of its haystack are dated later; see :func:`_as_of`)."""
    run: dict[str, list[str]] = {}
    seconds: list[float] = []
    for entry in data:
        t0 = time.perf_counter()
        result = mem.recall(
            entry["question"],
            user_id=entry["question_id"],
            limit=limit,
            **(_as_of(entry, strict) if dated else {}),
        )
        seconds.append(time.perf_counter() - t0)
        run[entry["question_id"]] = [
            str(m.memory.metadata["turn_id"])
            for m in result.memories
            if "turn_id" in m.memory.metadata
        ]
    return run, seconds


def _as_of(entry: dict[str, Any], strict: bool = False) -> dict[str, Any]:
    """When the question is asked: its date, or just after the last turn of its haystack when
    that is later. 28 of the 272 scored dev questions hold sessions dated after their
    ``question_date`` (40 of 482 gold turns), yet LongMemEval puts every haystack session
    before its question; ``recall(as_of=)`` leaves out what was said after ``as_of``, so the
    strict date would hide those gold turns from recall altogether."""
    if "as_of" not in Memory.recall.__code__.co_varnames:
        return {}
    asked = question_time(entry)
    if not strict:
        last = max(
            (when.timestamp() + len(turns) for _sid, when, turns in sessions(entry)),
            default=asked,
        )
        asked = max(asked, last)
    return {"as_of": asked}


# -- the referee's reference BM25 ---------------------------------------------------------------
_WORDS = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an the and or but if of to in on at for with from by about as is are was were be been "
    "being it its this that these those i me my we our you your he she they them his her their "
    "do does did have has had what which who whom when where why how can could would should "
    "will shall may might must not no so than too very just".split()
)


def bm25_run(
    data: Sequence[dict[str, Any]], k1: float = 1.5, b: float = 0.75
) -> dict[str, list[str]]:
    """Plain Okapi BM25 over each haystack's turns (user and assistant), top 50."""
    run: dict[str, list[str]] = {}
    for entry in data:
        ids, docs = [], []
        for sid, _when, turns in sessions(entry):
            for i, turn in enumerate(turns):
                ids.append(f"{sid}_{i + 1}")
                docs.append([w for w in _WORDS.findall(turn["content"].lower()) if w not in _STOP])
        n = len(docs)
        df: Counter[str] = Counter()
        for doc in docs:
            df.update(set(doc))
        avg = sum(map(len, docs)) / max(n, 1)
        query = [w for w in _WORDS.findall(entry["question"].lower()) if w not in _STOP]
        scores = np.zeros(n)
        for j, doc in enumerate(docs):
            tf = Counter(doc)
            s = 0.0
            for w in query:
                f = tf.get(w, 0)
                if f:
                    idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                    s += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(doc) / avg))
            scores[j] = s
        order = np.argsort(-scores, kind="stable")[:50]
        run[entry["question_id"]] = [ids[j] for j in order]
    return run


# -- scoring ------------------------------------------------------------------------------------
def score(
    ref: ModuleType, data: Sequence[dict[str, Any]], run: dict[str, list[str]]
) -> dict[str, dict[str, Any]]:
    report, _extra = ref.evaluate(list(data), run)
    keep = [
        f"{level}/{m}@{k}"
        for level in ("turn", "session")
        for m in ("recall_all", "recall_any", "ndcg_any")
        for k in KS
    ]
    return {row: {"n": v["n"], **{k: v[k] for k in keep if k in v}} for row, v in report.items()}


def grouped(
    ref: ModuleType, groups: dict[str, list[dict[str, Any]]], run: dict[str, list[str]]
) -> dict[str, Any]:
    return {g: score(ref, entries, run) for g, entries in groups.items() if entries}


# -- speed --------------------------------------------------------------------------------------
class _Recorder:
    """The bare model, noting every text it is given (what ``add`` embeds, chunks included)."""

    def __init__(self, inner: MiniLMEmbedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += list(texts)
        return self.inner.embed(texts)


def speed(
    entries: Sequence[dict[str, Any]],
    model: MiniLMEmbedder,
    root: Path,
    max_sessions: int = 0,
    store: Path | None = None,
    shared: Any = None,
) -> dict[str, Any]:
    """``add`` time against the bare model's time on the same texts (the first
    ``max_sessions`` sessions of each question when given: on a loaded machine a whole
    haystack takes the model most of an hour); recall latency on the whole ~500-turn scope
    (in ``store``, the ingested store, when given)."""
    rec = _Recorder(model)
    cfg = Config(path=str(root / "speed"), embed_cache_size=0, max_content_chars=1_000_000)
    add_s, turns = 0.0, 0
    batches: list[list[str]] = []
    with Memory(cfg, embedder=rec) as mem:
        for entry in entries:
            for sid, when, raw in sessions(entry)[: max_sessions or None]:
                messages = messages_of(sid, when, raw)
                if not messages:
                    continue
                before = len(rec.texts)
                t0 = time.perf_counter()
                mem.add(messages, user_id=entry["question_id"], session_id=sid)
                add_s += time.perf_counter() - t0
                batches.append(rec.texts[before:])
                turns += len(messages)
        # The same texts in the same batches, through the bare model, right after.
        t0 = time.perf_counter()
        for batch in batches:
            model.embed(batch)
        embed_s = time.perf_counter() - t0
        if store is None:
            _run, seconds = ask(mem, entries * 10, limit=10)
    if store is not None:
        # Tension check on, as recall runs by default.
        with Memory(Config(path=str(store), max_content_chars=1_000_000), embedder=shared) as big:
            ask(big, entries, limit=10)  # warm the scope's index and the query vectors
            _run, seconds = ask(big, entries * 10, limit=10)
    return {
        "questions": len(entries),
        "turns": turns,
        "texts_embedded": sum(map(len, batches)),
        "add_s": round(add_s, 2),
        "embed_s": round(embed_s, 2),
        "add_over_embed": round(add_s / embed_s, 3),
        "sessions": max_sessions,
        "recall_scope_turns": [sum(map(len, e["haystack_sessions"])) for e in entries],
        "recall_ms": _ms(seconds),
    }


def _ms(seconds: Sequence[float]) -> dict[str, float]:
    return {
        "p50": round(pct(seconds, 50) * 1000, 2),
        "p95": round(pct(seconds, 95) * 1000, 2),
        "n": len(seconds),
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--sample", type=int, default=0, help="N questions round-robin over the types (0: all)"
    )
    ap.add_argument("--types", default="", help="comma-separated question types")
    ap.add_argument("--variants", default="", help="comma-separated subset of variant names")
    ap.add_argument("--store", default="", help="folder for the store (default: a temp dir)")
    ap.add_argument(
        "--reuse", action="store_true", help="reuse the store in --store (adding new questions)"
    )
    ap.add_argument(
        "--ingest",
        default="",
        help="Config changes at ingest, as JSON (e.g. '{\"embed_context\": false}'); "
        "use its own --store",
    )
    ap.add_argument(
        "--spread-evidence",
        type=int,
        default=None,
        metavar="SEED",
        help="evidence sessions at random dates of their haystack (see spread_evidence); "
        "use its own --store",
    )
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--name", default="lme", help="report file names (lme.md, lme.json, ...)")
    ap.add_argument("--recall-limit", type=int, default=50)
    ap.add_argument("--speed-questions", type=int, default=3, help="0 skips the speed run")
    ap.add_argument(
        "--speed-sessions",
        type=int,
        default=0,
        help="time add on the first N sessions of each speed question (0: all); recall "
        "latency is then measured on the ingested store (the whole ~500-turn scopes)",
    )
    args = ap.parse_args()

    ref = referee("longmemeval_retrieval.py")
    tmp = tempfile.TemporaryDirectory(prefix="lme-")
    # Abstention and single-session-assistant questions are not scored (the referee's
    # official mode): they are not ingested either.
    data = write_dev_set(Path(tmp.name), 0, args.types)
    data = stratified(data, args.sample or len(data))
    if args.spread_evidence is not None:
        spread_evidence(data, args.spread_evidence)
    groups = {
        "all": data,
        "tune": [e for e in data if half(e["question_id"]) == "tune"],
        "held-out": [e for e in data if half(e["question_id"]) == "held-out"],
    }
    print(f"{len(data)} questions ({len(groups['tune'])} tune, {len(groups['held-out'])} held-out)")

    args.ingest = json.loads(args.ingest) if args.ingest else {}
    variants = dict(VARIANTS)
    if args.variants:
        known = {**VARIANTS, **PROBES}
        variants = {k.strip(): known[k.strip()] for k in args.variants.split(",")}

    model = MiniLMEmbedder()
    cached = DiskCachedEmbedder(model, CACHE_ROOT)
    root = Path(args.store) if args.store else Path(tmp.name)
    store = root / "store"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = "python bench/lme.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    doc: dict[str, Any] = {
        "command": command.strip(),
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "questions": {g: len(v) for g, v in groups.items()},
        "recall_limit": args.recall_limit,
        "spread_evidence": args.spread_evidence,
        "defaults": {
            **{k: v[0] for k, v in Config.describe().items() if k in _SHOWN},
            **{k: v[0] for k, v in RankingProfile.describe().items()},
        },
        "variants": {},
    }
    doc["variants"]["bm25 (referee protocol)"] = {"config": "plain Okapi BM25, not engrammar"}
    doc["variants"]["bm25 (referee protocol)"].update(grouped(ref, groups, bm25_run(data)))

    doc["ingest"] = ingest_all(store, data, cached, args.reuse, args.ingest)
    shared = CachedEmbedder(cached, 4096)
    for name, changes in variants.items():
        settings = {k: v for k, v in changes.items() if not k.startswith("_")}
        cfg = Config(
            path=str(store),
            tension_min_similarity=1.0,
            max_content_chars=1_000_000,
            ranking=RankingProfile(**settings),
            **args.ingest,
        )
        t0 = time.perf_counter()
        with Memory(cfg, embedder=shared) as mem:
            run, _ = ask(
                mem,
                data,
                args.recall_limit,
                dated="_no_as_of" not in changes,
                strict="_strict_as_of" in changes,
            )
        entry = {"config": changes, "wall_s": round(time.perf_counter() - t0, 1)}
        entry.update(grouped(ref, groups, run))
        doc["variants"][name] = entry
        o = entry["all"]["overall"]
        print(
            f"{name:36s} r_all@5 {o['turn/recall_all@5']:.3f} ndcg@10 {o['turn/ndcg_any@10']:.3f} "
            + " ".join(
                f"{t[:8]} {entry['all'][t]['turn/recall_all@5']:.3f}"
                for t in TYPES
                if t in entry["all"]
            )
            + f" ({entry['wall_s']}s)",
            flush=True,
        )
        if name == "default":
            with (out / f"{args.name}_default.run.jsonl").open("w") as f:
                for qid, ids in run.items():
                    f.write(json.dumps({"question_id": qid, "retrieved_ids": ids}) + "\n")
        write_reports(doc, out, args.name)
    if args.speed_questions:
        # Questions with ~500-turn haystacks, through the bare model (no cache).
        picks = sorted(data, key=lambda e: abs(sum(map(len, e["haystack_sessions"])) - 500))
        doc["speed"] = speed(
            picks[: args.speed_questions],
            model,
            Path(tmp.name),
            args.speed_sessions,
            store if args.speed_sessions else None,
            shared,
        )
        print(f"speed: {doc['speed']}")
        write_reports(doc, out, args.name)
    print(f"wrote {out / (args.name + '.md')}")


_SHOWN = ("bm25_k1", "bm25_b", "chunk_chars", "window_limit", "candidate_pool")


def write_reports(doc: dict[str, Any], out: Path, name: str) -> None:
    (out / f"{name}.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    lines = [
        "# LongMemEval dev retrieval (referee: ../shared/eval/longmemeval_retrieval.py)",
        "",
        f"Command: `{doc['command']}`  ",
        f"Date: {doc['date']}; machine: {doc['machine']['cpu']}, {doc['machine']['cores']} cores "
        "(shared with other jobs; load average at start "
        f"{', '.join(f'{x:.1f}' for x in doc['machine']['load_avg_at_start'])}).  ",
        "Protocol: each question's haystack in its own user scope, user and assistant turns, one "
        "`add` per session dated by the session, empty turns left out; every question through "
        f"`Memory.recall(limit={doc['recall_limit']})`; gold = user turns with `has_answer` "
        "(the referee's official mode; abstention and single-session-assistant questions are "
        f"not scored). Questions: {doc['questions']} (halves split by a hash of the id).",
        "",
        *(
            [
                f"**Evidence at random dates** (`--spread-evidence {doc['spread_evidence']}`): "
                "each haystack keeps its dates, but the sessions holding a gold turn take random "
                "ones of them (in their own order) instead of the late ones LongMemEval gives "
                "them; questions naming a time lose their meaning (read temporal-reasoning "
                "apart).",
                "",
            ]
            if doc.get("spread_evidence") is not None
            else []
        ),
        "Defaults: " + ", ".join(f"`{k}={v!r}`" for k, v in doc["defaults"].items()),
        "",
        "## Turn level, overall (recall_all@5 / ndcg_any@10), per half",
        "",
        "| variant | set | n | recall_all@5 | recall_any@5 | ndcg_any@10 | recall_all@10 | "
        "session recall_all@5 | " + " | ".join(f"{t} r_all@5" for t in TYPES) + " |",
        "|---|---|---|---|---|---|---|---|" + "---|" * len(TYPES),
    ]
    for vname, entry in doc["variants"].items():
        for group in ("all", "tune", "held-out"):
            if group not in entry:
                continue
            o = entry[group]["overall"]
            cells = [
                f"{entry[group][t]['turn/recall_all@5']:.3f}" if t in entry[group] else "-"
                for t in TYPES
            ]
            lines.append(
                f"| {vname} | {group} | {o['n']} | {o['turn/recall_all@5']:.3f} | "
                f"{o['turn/recall_any@5']:.3f} | {o['turn/ndcg_any@10']:.3f} | "
                f"{o['turn/recall_all@10']:.3f} | {o['session/recall_all@5']:.3f} | "
                + " | ".join(cells)
                + " |"
            )
    lines += [
        "",
        "## Per question type (all questions), turn level",
        "",
        "| variant | type | n | recall_all@5 | ndcg_any@10 | recall_all@10 | session recall_all@5 |",
        "|---|---|---|---|---|---|---|",
    ]
    for vname, entry in doc["variants"].items():
        for t in (*TYPES, "overall"):
            row = entry["all"].get(t)
            if row:
                lines.append(
                    f"| {vname} | {t} | {row['n']} | {row['turn/recall_all@5']:.3f} | "
                    f"{row['turn/ndcg_any@10']:.3f} | {row['turn/recall_all@10']:.3f} | "
                    f"{row['session/recall_all@5']:.3f} |"
                )
    ing = doc.get("ingest", {})
    lines += ["", "## Ingest", "", f"`{json.dumps(ing)}`", ""]
    if "speed" in doc:
        s = doc["speed"]
        lines += [
            "## Speed (bare model, no embedding cache)",
            "",
            f"{s['questions']} questions with ~500-turn haystacks, {s['turns']} turns added "
            f"(first {s.get('sessions') or 'all'} sessions each): `add` took "
            f"{s['add_s']} s; the model alone on the same {s['texts_embedded']} texts (chunks "
            f"included) in the same batches {s['embed_s']} s: **{s['add_over_embed']}x**. "
            f"Recall (default, limit 10, tension check on), each question 10 times: p50 "
            f"**{s['recall_ms']['p50']} ms**, p95 {s['recall_ms']['p95']} ms (n={s['recall_ms']['n']}).",
        ]
        lines.append("")
    lines += [f"![recall_all@k]({name}_recall_at_k.png)", ""]
    (out / f"{name}.md").write_text("\n".join(lines), encoding="utf-8")
    plot(doc, out / f"{name}_recall_at_k.png")


def plot(doc: dict[str, Any], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (pip install -e '.[bench]'): no plot")
        return
    fig, ax = plt.subplots(figsize=(8, 5))
    for vname, entry in doc["variants"].items():
        o = entry["all"]["overall"]
        ax.plot(KS, [o[f"turn/recall_all@{k}"] for k in KS], marker="o", label=vname)
    ax.set_xscale("log")
    ax.set_xticks(KS, [str(k) for k in KS])
    ax.set_xlabel("k")
    ax.set_ylabel("turn recall_all@k")
    ax.set_title("LongMemEval dev: turn recall_all@k per variant")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()

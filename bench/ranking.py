"""Ranking quality on every development protocol, each stage ablated, in one table.

    python bench/ranking.py [--protocols P,...] [--store DIR] [--sample N] [--out bench/results]

Protocols (see ../shared/eval/README.md), each ingested once through ``Memory.add`` into its
own SQLite store under ``--store`` (kept, so a second run only asks) and asked through
``Memory.recall`` with the default ``RankingProfile`` and with one stage switched off per
variant (a profile passed per call, so one store serves every variant):

- ``locomo-rich``: one memory per LoCoMo turn, the speaker as ``name``, the session's date
  as its timestamp; ``locomo-plain``: ``"Speaker: text [shared image: caption]"`` as a user
  message, no name, no timestamp, one ``add`` per session. Scored by locomo_retrieval.py
  (recall@10 / nDCG@10, categories 1-4).
- ``lme-oracle``: the LongMemEval dev set (oracle questions, 44 sessions each), user and
  assistant turns; ``devs-tuned`` / ``devs-fresh``: LongMemEval dev-S, user turns only
  (official); ``devs-fresh-agent``: dev-S fresh questions, every turn with its role.
  Scored by longmemeval_retrieval.py (turn recall_all@5 / ndcg_any@10).

Plain BM25 (k1 1.5, b 0.75, lowercase words, a short stop list) runs on the same rows.
Embeddings are cached on disk (bench/_embcache.py). Writes bench/results/ranking.md and
ranking.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine
from _embcache import DiskCachedEmbedder
from engrammar import Config, Memory, RankingProfile
from engrammar.embed.onnx import MiniLMEmbedder

_ROOT = Path(__file__).resolve().parent.parent
SHARED = next(
    p for p in (_ROOT.parent / "shared", _ROOT.parent.parent / "shared") if (p / "eval").is_dir()
)
PROTOCOLS = (
    "locomo-rich",
    "locomo-plain",
    "lme-oracle",
    "devs-tuned",
    "devs-fresh",
    "devs-fresh-agent",
)
DEFAULT = RankingProfile()
# Each stage switched off alone.
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "- full text": {"keyword_weight": 0.0},
    "- vectors": {"keyword_weight": 1.0},
    "- session evidence": {"session_weight": 0.0},
    "session evidence 0.2": {"session_weight": 0.2},
    "+ neighbours 0.3": {"neighbour_weight": 0.3},
    "- time": {"time_weight": 0.0},
    "- answer kind": {"answer_weight": 0.0},
    "answer kind 0.1": {"answer_weight": 0.1},
    "answer kind 0.2": {"answer_weight": 0.2},
    "- whose words": {"role_weight": 0.0},
    "+ question as written (vector)": {"names_in_vector": 1},
    "- questions": {"question_weight": 0.0},
    "- graph": {"graph_depth": 0},
    "replaced x0.5": {"superseded_factor": 0.5},
}


def referee(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, SHARED / "eval" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_WORDS = re.compile(r"[a-z0-9]+")
_STOP = set(
    "a an the and or but of to in on at for with is are was were be been i you he she it we they "
    "my your me do did does what when where who how which that this there".split()
)


def bm25(docs: list[tuple[str, str]], question: str, k: int = 50) -> list[str]:
    """Plain Okapi BM25 (k1 1.5, b 0.75) over ``(id, text)``, the best ``k`` ids."""
    toks = [[w for w in _WORDS.findall(t.lower()) if w not in _STOP] for _, t in docs]
    n, avg = len(toks), sum(map(len, toks)) / max(len(toks), 1) or 1.0
    df: Counter[str] = Counter()
    for t in toks:
        df.update(set(t))
    q = [w for w in _WORDS.findall(question.lower()) if w not in _STOP]
    scores = []
    for t in toks:
        tf, s = Counter(t), 0.0
        for w in q:
            f = tf.get(w, 0)
            if f:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * f * 2.5 / (f + 1.5 * (0.25 + 0.75 * len(t) / avg))
        scores.append(s)
    order = sorted(range(n), key=lambda i: -scores[i])[:k]
    return [docs[i][0] for i in order]


# -- datasets ---------------------------------------------------------------------------------
def lme_date(text: str) -> datetime:
    return datetime.strptime(text.replace(" (", " ").split(" ")[0], "%Y/%m/%d")


def lme_data(kind: str, tmp: Path, sample: int) -> list[dict[str, Any]]:
    out = tmp / f"{kind}.json"
    if not out.exists():
        cmd = [sys.executable, str(SHARED / "eval" / "lme_dev.py"), str(out)]
        if kind != "oracle":
            cmd += ["--set", "s"]
        subprocess.run(cmd, check=True, capture_output=True)
    data = json.loads(out.read_text())
    if kind == "oracle" and sample:
        data = data[:: max(1, len(data) // sample)][:sample]
    return data


def lme_turns(entry: dict[str, Any], roles: set[str]) -> list[tuple[str, str, str, float]]:
    """``(session id, turn id, role, text)`` and time of every stored turn."""
    out = []
    for sid, date, turns in zip(
        entry["haystack_session_ids"],
        entry["haystack_dates"],
        entry["haystack_sessions"],
        strict=True,
    ):
        when = lme_date(date).timestamp()
        for i, t in enumerate(turns):
            if t["role"] in roles and t["content"].strip():
                out.append((sid, f"{sid}_{i + 1}", t["role"], t["content"], when + i))
    return out


def ingest_lme(mem: Memory, data: list[dict[str, Any]], roles: set[str]) -> None:
    for n, entry in enumerate(data, 1):
        user = entry["question_id"]
        if mem.list(user_id=user, limit=1):
            continue
        by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for sid, tid, role, text, when in lme_turns(entry, roles):
            by_session[sid].append(
                {"role": role, "content": text, "timestamp": when, "metadata": {"turn_id": tid}}
            )
        for sid, messages in by_session.items():
            mem.add(messages, user_id=user, session_id=f"{user}/{sid}")
        if n % 20 == 0:
            print(f"    ingested {n}/{len(data)}", flush=True)


def locomo_sessions(sample: dict[str, Any], rich: bool) -> list[list[dict[str, Any]]]:
    conv = sample["conversation"]
    out = []
    for key in sorted(
        (k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])
    ):
        date = conv.get(f"{key}_date_time")
        when = datetime.strptime(date, "%I:%M %p on %d %B, %Y").timestamp() if date else None
        messages = []
        for i, turn in enumerate(conv[key]):
            text = turn["text"]
            if turn.get("blip_caption"):
                text += f" [shared image: {turn['blip_caption']}]"
            meta = {"turn_id": turn["dia_id"]}
            if rich:
                m: dict[str, Any] = {"role": "user", "content": text, "name": turn["speaker"]}
                if when is not None:
                    m["timestamp"] = when + i
            else:
                m = {"role": "user", "content": f"{turn['speaker']}: {text}"}
            m["metadata"] = meta
            messages.append(m)
        out.append(messages)
    return out


# -- running ----------------------------------------------------------------------------------
def turn_ids(mem: Memory, result: Any) -> list[str]:
    return [m.memory.metadata.get("turn_id", "") for m in result.memories]


def run_protocol(
    name: str, root: Path, tmp: Path, embedder: DiskCachedEmbedder, sample: int
) -> dict[str, Any]:
    store = root / ("devs-official" if name in ("devs-tuned", "devs-fresh") else name)
    cfg = Config(path=str(store), embed_cache_size=0, max_content_chars=1_000_000)
    t0 = time.perf_counter()
    runs: dict[str, dict[str, list[str]]] = {v: {} for v in VARIANTS}
    base: dict[str, list[str]] = {}
    timings: list[float] = []
    with Memory(cfg, embedder=embedder) as mem:
        if name.startswith("locomo"):
            loc = referee("locomo_retrieval")
            data = loc.load_data(str(SHARED / "data" / "locomo10.json"))
            queries = [q for q in loc.build_queries(data) if q["category"] in (1, 2, 3, 4)]
            for sample_ in data:
                user = sample_["sample_id"]
                if not mem.list(user_id=user, limit=1):
                    for n, messages in enumerate(locomo_sessions(sample_, name.endswith("rich"))):
                        mem.add(messages, user_id=user, session_id=f"{user}/{n}")
            print(f"  [{name}] ingested in {time.perf_counter() - t0:.0f} s", flush=True)
            texts = {
                s["sample_id"]: [(m["dia_id"], loc.memory_text(m)) for m in loc.iter_memories(s)]
                for s in data
            }
            for q in queries:
                user = q["sample_id"]
                for variant, change in VARIANTS.items():
                    t = time.perf_counter()
                    r = mem.recall(q["question"], user_id=user, limit=50, profile=change)
                    if variant == "default":
                        timings.append(time.perf_counter() - t)
                    runs[variant][q["question_id"]] = turn_ids(mem, r)
                base[q["question_id"]] = bm25(texts[user], q["question"])
            scored = {}
            for variant, run in [*runs.items(), ("plain BM25", base)]:
                rep = loc.evaluate(data, run)[0]
                scored[variant] = {
                    "headline": (
                        round(rep["overall_1-4"]["recall@10"], 3),
                        round(rep["overall_1-4"]["ndcg@10"], 3),
                    ),
                    "types": {
                        k: round(v["recall@10"], 3)
                        for k, v in rep.items()
                        if k[0] in "1234" and ":" in k
                    },
                }
            return {"figures": scored, "seconds": time.perf_counter() - t0, "recall_s": timings}
        kind = "oracle" if name == "lme-oracle" else "s"
        data = lme_data(kind, tmp, sample if kind == "oracle" else 0)
        if name == "devs-tuned":
            data = [e for e in data if not e.get("fresh")]
        elif name.startswith("devs-fresh"):
            data = [e for e in data if e.get("fresh")]
        roles = {"user"} if name in ("devs-tuned", "devs-fresh") else {"user", "assistant"}
        gold = "official" if roles == {"user"} else "all"
        ingest_lme(mem, data, roles)
        print(f"  [{name}] ingested in {time.perf_counter() - t0:.0f} s", flush=True)
        for entry in data:
            user = entry["question_id"]
            asked = lme_date(entry["question_date"]).timestamp() + 86_399
            for variant, change in VARIANTS.items():
                t = time.perf_counter()
                r = mem.recall(
                    entry["question"], user_id=user, limit=50, as_of=asked, profile=change
                )
                if variant == "default":
                    timings.append(time.perf_counter() - t)
                runs[variant][user] = turn_ids(mem, r)
            docs = [(tid, text) for _, tid, _, text, _ in lme_turns(entry, roles)]
            base[user] = bm25(docs, entry["question"])
        lme = referee("longmemeval_retrieval")
        scored = {}
        for variant, run in [*runs.items(), ("plain BM25", base)]:
            rep, extra = lme.evaluate(data, run, gold)
            scored[variant] = {
                "headline": (
                    round(rep["overall"]["turn/recall_all@5"], 3),
                    round(rep["overall"]["turn/ndcg_any@10"], 3),
                ),
                "types": {
                    t: round(r["turn/recall_all@5"], 3) for t, r in rep.items() if t != "overall"
                },
                "scored": extra,
            }
        return {"figures": scored, "seconds": time.perf_counter() - t0, "recall_s": timings}


def p50(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2] * 1000 if xs else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    ap.add_argument("--store", default="", help="folder of the protocols' stores (kept)")
    ap.add_argument("--sample", type=int, default=0, help="oracle build: questions (0 = all)")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument(
        "--variants",
        default="",
        help='profiles to ask instead of the stage ablations, as JSON: {"name": {weight: '
        "value}}; the default profile is asked too (write to another --out)",
    )
    args = ap.parse_args()
    if args.variants:
        try:
            asked = json.loads(args.variants)
            for change in asked.values():
                RankingProfile(**change)  # an unknown weight or a bad value fails here
        except (ValueError, TypeError, AttributeError) as exc:
            raise SystemExit(f"--variants: {exc}") from None
        VARIANTS.clear()
        VARIANTS.update({"default": {}, **asked})
    tmp_dir = tempfile.TemporaryDirectory()
    root = Path(args.store) if args.store else Path(tmp_dir.name) / "stores"
    tmp = root / "data"
    tmp.mkdir(parents=True, exist_ok=True)
    embedder = DiskCachedEmbedder(MiniLMEmbedder())
    out = Path(args.out)
    doc_file = out / "ranking.json"
    doc = json.loads(doc_file.read_text()) if doc_file.exists() else {"protocols": {}}
    for name in args.protocols.split(","):
        print(f"[{name}]", flush=True)
        doc["protocols"][name] = run_protocol(name, root, tmp, embedder, args.sample)
        doc["protocols"][name]["sample"] = args.sample if name == "lme-oracle" else 0
        m = machine()
        doc["machine"] = f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores"
        doc["date"] = time.strftime("%Y-%m-%d")
        doc["command"] = "python bench/ranking.py " + " ".join(sys.argv[1:])
        doc_file.write_text(json.dumps(doc, indent=1))
        write_table(doc, out / "ranking.md")
        f = doc["protocols"][name]["figures"]
        for v, r in f.items():
            print(f"  {v:24s} {r['headline']}", flush=True)


def write_table(doc: dict[str, Any], path: Path) -> None:
    names = [p for p in PROTOCOLS if p in doc["protocols"]]
    lines = [
        "# Ranking on every development protocol",
        "",
        f"Command: `{doc['command']}` · machine: {doc['machine']} · date: {doc['date']}",
        "",
        "LoCoMo: recall@10 / nDCG@10 (categories 1-4); LongMemEval: turn recall_all@5 / "
        "ndcg_any@10. Each variant is the default profile with one stage changed, asked over "
        "the same store.",
        "",
        "| variant | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    variants = [*VARIANTS, "plain BM25"]
    for v in variants:
        cells = []
        for p in names:
            f = doc["protocols"][p]["figures"].get(v)
            cells.append(f"{f['headline'][0]:.3f} / {f['headline'][1]:.3f}" if f else "")
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    lines += ["", "Per question type (recall_all@5 or recall@10), default and plain BM25:", ""]
    for p in names:
        figs = doc["protocols"][p]["figures"]
        types = sorted(figs["default"]["types"])
        lines.append(
            f"- {p}: "
            + "; ".join(
                f"{t}: {figs['default']['types'][t]:.3f} (BM25 {figs['plain BM25']['types'].get(t, 0):.3f})"
                for t in types
            )
        )
    lines += ["", "Recall p50 (default profile, limit 50), ingest time:", ""]
    for p in names:
        d = doc["protocols"][p]
        lines.append(f"- {p}: {p50(d['recall_s']):.1f} ms; {d['seconds']:.0f} s in all")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

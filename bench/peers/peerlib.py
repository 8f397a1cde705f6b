"""The workload every peer runner executes, the same for every system.

Runs inside each system's own virtual environment, so it needs only the standard library and
numpy. A runner script defines an adapter (how to open a store, add, recall, give feedback for
its system) and calls :func:`main`; the driver (bench/peers.py) writes a job file and reads the
result file:

    <venv>/bin/python bench/peers/run_<system>.py JOB.json RESULT.json

Phases (one fresh process each, so the peak RSS reported belongs to that phase):

* ``speed``: store A gets the first ``n_single`` texts one ``add`` per message (latency), then
  ``n_queries`` recalls at that size and ``n_feedback`` feedback calls (each after a recall);
  store B gets ``n_batch`` texts in calls of ``batch`` messages (throughput), then the recalls
  at that size. Every loop stops when its time budget is spent and says how far it got.
* ``large``: a fresh store filled with ``n_large`` memories (LoCoMo turns repeated with
  distinct text, vectors reused from the raw embedder) by the system's bulk path, then recalls.
* ``quality``: one scope per LoCoMo conversation, every turn added, every question recalled
  (top ``k``); the run file for the shared referee is written.
* ``cold``: a new process imports the system, opens store A and answers one recall.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

T_START = time.perf_counter()


class Unsupported(Exception):
    """The system has no such operation (e.g. feedback); the result records it, not a failure."""


class Adapter:
    """What a runner implements for its system. ``ref`` is the caller's id for an item."""

    name = "?"
    notes: list[str]

    def __init__(self) -> None:
        self.notes = []

    def import_system(self) -> None:
        """Import the system's modules (timed separately in the cold start)."""

    def open(self, path: Path, job: dict[str, Any]) -> None:
        raise NotImplementedError

    def add_one(self, scope: str, text: str, ref: str) -> None:
        raise Unsupported("one message per call")

    def add_many(self, scope: str, texts: list[str], refs: list[str]) -> None:
        raise NotImplementedError

    def ingest_conversation(self, sample_id: str, dia_ids: list[str]) -> bool:
        """Quality pass: ingest these turns of a LoCoMo conversation the system's own way;
        False = use the shared canonical texts through ``add_many``."""
        return False

    def flush(self) -> None:
        """Finish pending work an ingest started (index builds, background writes)."""

    def recall(self, scope: str, query: str, k: int) -> list[str]:
        """The refs of the best ``k`` items for ``query`` in ``scope``, best first."""
        raise NotImplementedError

    def feedback(self, scope: str, response: str) -> Any:
        raise Unsupported("no feedback operation")

    def embedded_extra(self, texts: list[str]) -> list[str]:
        """What the last add embedded besides ``texts`` themselves (engrammar: the chunk
        windows of its long messages), timed raw beside it so the add is compared with the
        raw embedding of everything it embeds."""
        return []

    def bulk_fill(
        self, scope: str, texts: list[str], refs: list[str], vectors: np.ndarray, budget: Budget
    ) -> tuple[str, int]:
        """Fill with precomputed vectors (stopping between chunks once ``budget`` is spent);
        returns a one-line description of the path used and how many went in."""
        raise Unsupported("no bulk path")

    def close(self) -> None:
        pass


# -- measuring -----------------------------------------------------------------------------
def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def summary_ms(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    return {
        "p50_ms": round(pct(values, 50) * 1000, 3),
        "p95_ms": round(pct(values, 95) * 1000, 3),
        "mean_ms": round(sum(values) / len(values) * 1000, 3),
        "n": len(values),
    }


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def disk_mb(path: Path) -> float:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):  # a file removed while walking
                total += os.lstat(os.path.join(root, f)).st_size
    return round(total / 1e6, 2)


class Budget:
    """Wall-clock allowance for one loop; ``None`` seconds means no limit."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.t0 = time.perf_counter()

    def spent(self) -> bool:
        return self.seconds is not None and time.perf_counter() - self.t0 > self.seconds


class Limit:
    """The physical limit, timed in the same process right after the operation it bounds, so
    the ratio holds under a shared machine's varying load: the raw embedder on the same texts
    (every ``every``-th add call, compared with exactly those calls) and, for recall, query
    embedding + exact scan over the vectors of everything the store holds.

    ``table`` maps each added text to its vector (recorded by the adapter as the system embeds
    it), so the exact scan covers exactly the store's contents without embedding them twice.
    """

    def __init__(self, embedder: Any, table: dict[str, np.ndarray], every: int = 2) -> None:
        self.embedder, self.table, self.every = embedder, table, every
        self.reset()

    def reset(self) -> None:
        self.texts: list[str] = []
        self.matrix = np.empty((0, 0), dtype=np.float32)
        self.calls = 0

    def note(self, texts: list[str]) -> None:
        self.texts.extend(texts)

    def sample(self) -> bool:
        self.calls += 1
        return (self.calls - 1) % self.every == 0

    def time_embed(self, texts: list[str]) -> float:
        t0 = time.perf_counter()
        self.embedder.embed(texts)
        return time.perf_counter() - t0

    def vectors(self) -> np.ndarray:
        return np.stack([self.table[t] for t in self.texts]).astype(np.float32)

    def search(self, query: str, k: int) -> float:
        if len(self.matrix) != len(self.texts):
            self.matrix = self.vectors()
        t0 = time.perf_counter()
        qv = self.embedder.embed([query])[0]
        # einsum: the fastest exact scan here (steady single-threaded SIMD; BLAS threads thrash)
        sims = np.einsum("ij,j->i", self.matrix, qv)
        kk = min(k, len(sims))
        top = np.argpartition(-sims, kk - 1)[:kk]
        top[np.argsort(-sims[top])]
        return time.perf_counter() - t0


def _timed_recalls(
    a: Adapter,
    scope: str,
    queries: list[str],
    k: int,
    budget: float | None,
    limit: Limit | None = None,
) -> dict[str, Any]:
    lat: list[float] = []
    lim: list[float] = []
    b = Budget(budget)
    try:
        a.recall(scope, queries[0], k)  # warm-up (lazy index loads), not timed
    except Unsupported as exc:
        return {"unsupported": str(exc)}
    for q in queries:
        if b.spent():
            break
        t0 = time.perf_counter()
        a.recall(scope, q, k)
        lat.append(time.perf_counter() - t0)
        if limit is not None:
            lim.append(limit.search(q, k))
    out = summary_ms(lat)
    out["cut_by_budget"] = len(lat) < len(queries)
    if limit is not None:
        out["limit"] = summary_ms(lim)
    return out


# -- phases --------------------------------------------------------------------------------
def phase_speed(a: Adapter, job: dict[str, Any], work: Path) -> dict[str, Any]:
    w = json.loads(Path(job["workload"]).read_text())
    texts, refs, queries = w["texts"], w["refs"], w["queries"]
    budgets = job.get("budgets", {})
    k = job.get("k", 10)
    res: dict[str, Any] = {}
    scope = "bench"

    # Store A: one message per call.
    a.open(work / "A", job)
    limit: Limit | None = getattr(a, "limit", None)
    n_single = job["n_single"]
    lat: list[float] = []
    raw: list[float] = []
    raw_extra: list[float] = []  # the same calls' chunk windows (see Adapter.embedded_extra)
    matched: list[float] = []
    b = Budget(budgets.get("single"))
    try:
        for text, ref in zip(texts[:n_single], refs[:n_single], strict=True):
            if b.spent():
                break
            t0 = time.perf_counter()
            a.add_one(scope, text, ref)
            lat.append(time.perf_counter() - t0)
            if limit is not None:
                limit.note([text])
                if limit.sample():
                    matched.append(lat[-1])
                    raw.append(limit.time_embed([text]))
                    extra = a.embedded_extra([text])
                    raw_extra.append(limit.time_embed(extra) if extra else 0.0)
        t0 = time.perf_counter()
        a.flush()
        flush_s = time.perf_counter() - t0
        res["single"] = summary_ms(lat)
        res["single"]["target"] = n_single
        res["single"]["flush_s"] = round(flush_s, 3)
        res["single"]["total_s"] = round(sum(lat) + flush_s, 3)
        if limit is not None:
            res["single"]["raw_embed"] = summary_ms(raw)
            res["single"]["raw_with_windows"] = summary_ms(
                [r + x for r, x in zip(raw, raw_extra, strict=True)]
            )
            res["single"]["matched_add"] = summary_ms(matched)
    except Unsupported as exc:
        # Fill A in one batch so the recall and feedback workloads still run at this size.
        t0 = time.perf_counter()
        a.add_many(scope, texts[:n_single], refs[:n_single])
        a.flush()
        res["single"] = {
            "unsupported": str(exc),
            "one_batch_instead_s": round(time.perf_counter() - t0, 3),
        }
        lat = [0.0] * n_single
        if limit is not None:
            limit.note(texts[:n_single])
    size_a = len(lat)
    nq = job["n_queries"]
    res["recall_a"] = _timed_recalls(a, scope, queries[:nq], k, budgets.get("recall"), limit)
    res["recall_a"]["memories"] = size_a
    fb_lat: list[float] = []
    try:
        if "unsupported" in res["recall_a"]:
            raise Unsupported("no recall, so no feedback on it")
        b = Budget(budgets.get("feedback"))
        stats_sum: dict[str, float] = {}
        for q, resp in zip(queries[: job["n_feedback"]], w["responses"], strict=False):
            if b.spent():
                break
            a.recall(scope, q, k)
            t0 = time.perf_counter()
            st = a.feedback(scope, resp)
            fb_lat.append(time.perf_counter() - t0)
            if isinstance(st, dict):
                for key, val in st.items():
                    if isinstance(val, int | float):
                        stats_sum[key] = stats_sum.get(key, 0) + val
        res["feedback"] = summary_ms(fb_lat)
        res["feedback"]["target"] = job["n_feedback"]
        res["feedback"]["memories"] = size_a
        res["feedback"]["effect_totals"] = stats_sum
    except Unsupported as exc:
        res["feedback"] = {"unsupported": str(exc)}
    a.close()
    res["disk_a_mb"] = disk_mb(work / "A")

    # Store B: calls of `batch` messages.
    if limit is not None:
        limit.reset()
    a.open(work / "B", job)
    n_batch, batch = job["n_batch"], job["batch"]
    chunk_s: list[float] = []
    raw_s: list[float] = []
    raw_extra_s: list[float] = []
    matched_s: list[float] = []
    matched_n = extra_n = 0
    b = Budget(budgets.get("batch"))
    done = 0
    for start in range(0, n_batch, batch):
        if b.spent():
            break
        part = texts[start : start + batch]
        t0 = time.perf_counter()
        a.add_many(scope, part, refs[start : start + batch])
        if start + batch >= n_batch:
            a.flush()
        chunk_s.append(time.perf_counter() - t0)
        if limit is not None:
            limit.note(part)
            if limit.sample():
                matched_s.append(chunk_s[-1])
                raw_s.append(limit.time_embed(part))
                extra = a.embedded_extra(part)
                raw_extra_s.append(limit.time_embed(extra) if extra else 0.0)
                matched_n += len(part)
                extra_n += len(extra)
        done = min(n_batch, start + batch)
    if done < n_batch:
        t0 = time.perf_counter()
        a.flush()
        chunk_s[-1] += time.perf_counter() - t0
    res["batch"] = {
        "target": n_batch,
        "done": done,
        "batch": batch,
        "chunk_s": [round(x, 3) for x in chunk_s],
        "total_s": round(sum(chunk_s), 3),
        "per_s": round(done / sum(chunk_s), 2) if chunk_s else None,
        "first_chunk_per_s": round(min(batch, done) / chunk_s[0], 2) if chunk_s else None,
    }
    if limit is not None:
        res["batch"]["matched_add_s"] = [round(x, 3) for x in matched_s]
        res["batch"]["raw_s"] = [round(x, 3) for x in raw_s]
        res["batch"]["matched_texts"] = matched_n
        res["batch"]["raw_extra_s"] = [round(x, 3) for x in raw_extra_s]
        res["batch"]["extra_texts"] = extra_n
        if job.get("save_vectors"):
            # The vectors of every text added to B, in order: reused by the other systems.
            np.save(job["vectors"], limit.vectors())
    res["recall_b"] = _timed_recalls(a, scope, queries[:nq], k, budgets.get("recall"), limit)
    res["recall_b"]["memories"] = done
    a.close()
    res["disk_b_mb"] = disk_mb(work / "B")
    return res


def phase_large(a: Adapter, job: dict[str, Any], work: Path) -> dict[str, Any]:
    """Recall at each of ``large_sizes`` memories (fresh store each), filled through the
    system's bulk path with the raw embedder's vectors; stops growing once a fill is cut by
    its budget. With a limit probe, the exact scan over the same vectors is timed beside."""
    w = json.loads(Path(job["workload"]).read_text())
    base_texts: list[str] = w["texts"][: w["n_turns"]]
    base_vectors = np.load(job["vectors"])[: len(base_texts)]
    limit: Limit | None = None
    out: list[dict[str, Any]] = []
    for idx, n in enumerate(job["large_sizes"]):
        texts, refs = [], []
        for i in range(n):
            rep, j = divmod(i, len(base_texts))
            texts.append(base_texts[j] if rep == 0 else f"{base_texts[j]} (#{rep})")
            refs.append(f"L{i}")
        vectors = base_vectors[np.arange(n) % len(base_texts)]
        store = work / f"L{idx}"
        a.open(store, job)
        limit = getattr(a, "limit", None)
        t0 = time.perf_counter()
        how, filled = a.bulk_fill("bench", texts, refs, vectors, Budget(job["budgets"].get("fill")))
        a.flush()
        fill_s = time.perf_counter() - t0
        if limit is not None:
            limit.reset()
            limit.texts = texts[:filled]
            limit.matrix = np.ascontiguousarray(vectors[:filled], dtype=np.float32)
        rec = _timed_recalls(
            a,
            "bench",
            w["queries"][: job["n_queries"]],
            job.get("k", 10),
            job["budgets"].get("recall"),
            limit,
        )
        a.close()
        out.append(
            {
                "memories": filled,
                "target": n,
                "fill": how,
                "fill_s": round(fill_s, 2),
                "recall": rec,
                "disk_mb": disk_mb(store),
            }
        )
        if filled < n:
            break
    return {"sizes": out}


def phase_quality(a: Adapter, job: dict[str, Any], work: Path) -> dict[str, Any]:
    q = json.loads(Path(job["quality"]).read_text())
    k = job.get("k", 10)
    b = Budget(job["budgets"].get("quality"))
    a.open(work / job.get("store_name", "Q"), job)
    lines: list[str] = []
    done: list[str] = []
    t_add = t_recall = 0.0
    n_q = 0
    for conv in q["conversations"]:
        if b.spent():
            break
        sid = conv["sample_id"]
        t0 = time.perf_counter()
        turns = conv["turns"]
        if not a.ingest_conversation(sid, [t[0] for t in turns]):
            for start in range(0, len(turns), 500):
                part = turns[start : start + 500]
                a.add_many(sid, [t[1] for t in part], [t[0] for t in part])
        a.flush()
        t_add += time.perf_counter() - t0
        t0 = time.perf_counter()
        for qid, question in conv["questions"]:
            ids = a.recall(sid, question, k)
            lines.append(json.dumps({"question_id": qid, "retrieved_dialog_ids": ids}))
            n_q += 1
        t_recall += time.perf_counter() - t0
        done.append(sid)
    a.close()
    run_path = Path(job["run_file"])
    run_path.write_text("\n".join(lines) + "\n")
    return {
        "conversations": done,
        "questions": n_q,
        "add_s": round(t_add, 2),
        "recall_s": round(t_recall, 2),
        "run_file": str(run_path),
    }


def phase_cold(a: Adapter, job: dict[str, Any], work: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    a.import_system()
    t1 = time.perf_counter()
    a.open(work / "A", job)
    t2 = time.perf_counter()
    got = a.recall("bench", job["cold_query"], job.get("k", 10))
    t3 = time.perf_counter()
    a.close()
    return {
        "interpreter_to_main_s": round(t0 - T_START, 3),
        "import_s": round(t1 - t0, 3),
        "open_s": round(t2 - t1, 3),
        "first_recall_s": round(t3 - t2, 3),
        "total_s": round(t3 - t0, 3),
        "first_recall_results": len(got),
    }


PHASES = {
    "speed": phase_speed,
    "large": phase_large,
    "quality": phase_quality,
    "cold": phase_cold,
}


def main(adapter: Adapter) -> None:
    job_path, result_path = Path(sys.argv[1]), Path(sys.argv[2])
    job = json.loads(job_path.read_text())
    work = Path(job["workdir"])
    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"system": adapter.name, "phase": job["phase"]}
    t0 = time.perf_counter()
    try:
        if job["phase"] != "cold":
            adapter.import_system()
        out["result"] = PHASES[job["phase"]](adapter, job, work)
        out["ok"] = True
    except Exception as exc:  # a process boundary: the driver records the failure in the row
        out["ok"] = False
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["traceback"] = traceback.format_exc()[-4000:]
    out["wall_s"] = round(time.perf_counter() - t0, 2)
    out["peak_rss_mb"] = peak_rss_mb()
    out["notes"] = adapter.notes
    result_path.write_text(json.dumps(out, indent=1))

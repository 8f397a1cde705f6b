"""Concurrency on one store (a SQLite folder or a PostgreSQL URL): N processes x M threads
adding, recalling, feeding back, rating and adjusting edge weights for a bounded time.

Checks: no call fails (SQLite busy is handled by the store), no edge update is lost (each
shared edge's final weight equals its initial weight plus every delta whose call returned),
no score update is lost (every thread also rates the shared seed memories: per memory and
verdict, the stored ratings equal the rating calls that returned; a memory's learned score is
computed from exactly these append-only records, there is no score column to lose updates
of), memory counts equal the adds that returned, every feedback is applied exactly once (each
names its recall, the idempotency key, and is sent twice: the second changes nothing and the
recall's edge changes come from one transaction), and the integrity check passes.

tests/test_concurrency.py runs it small; bench/concurrency.py runs it long and records the figures:

    python bench/concurrency.py --procs 4 --threads 4 --seconds 20
"""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import threading
import time
import traceback
from typing import Any

from engrammar import Config, HashEmbedder, Memory
from engrammar.store.base import EdgeAdjustment, EdgeBounds, EdgeDelta


def _config(location: str) -> Config:
    if "://" in location:
        return Config(store=location)
    return Config(path=location)


SHARED_USER = "shared"
# Wide clamps, so the expected final weight is exactly the sum of the applied deltas.
LO, HI = -1e9, 1e9


def _seed(path: str) -> tuple[list[tuple[str, str, str, float]], list[str]]:
    with Memory(_config(path), embedder=HashEmbedder()) as mem:
        mem.add(
            [
                {"role": "user", "content": "We deploy on Tuesdays after the standup."},
                {"role": "assistant", "content": "Tuesday deploys after standup, noted."},
                {"role": "user", "content": "Rollbacks go through the release channel."},
            ],
            user_id=SHARED_USER,
        )
        ids = [m.id for m in mem.list(user_id=SHARED_USER)]
        edges = mem.store.edges_from(mem.config.workspace, ids)
        if not edges:
            raise SystemExit("the seed conversation built no edges")
        return [(e.src, e.dst, e.kind, e.weight) for e in edges[:4]], ids


def _thread(
    path: str,
    pid: int,
    tid: int,
    edges: list[tuple[str, str, str, float]],
    shared: list[str],
    until: float,
    out: dict[str, Any],
    lock: threading.Lock,
) -> None:
    user = f"p{pid}t{tid}"
    ops = {"add": 0, "recall": 0, "feedback": 0, "rate": 0, "adjust": 0}
    consumed = 0  # feedback calls that applied (the first of each pair)
    repeats_applied = 0  # repeated feedback calls that changed something: must stay 0
    last_recall: str | None = None
    applied = [0.0] * len(edges)
    rated: dict[str, int] = {}  # "memory_id verdict" -> rating calls that returned
    added = 0
    latencies: list[float] = []
    errors: list[str] = []
    try:
        mem = Memory(_config(path), embedder=HashEmbedder())
    except Exception:  # the thread is a process boundary: report, never hide
        with lock:
            out["errors"].append(traceback.format_exc())
        return
    i = 0
    own: list[str] = []
    while time.monotonic() < until:
        step = i % 5
        i += 1
        start = time.perf_counter()
        try:
            if step == 0:
                ids = mem.add(f"note {i} of {user}: deploy window {i % 7}", user_id=user)
                own.extend(ids)
                added += len(ids)
                ops["add"] += 1
            elif step == 1:
                last_recall = mem.recall(f"deploy window {i % 7}", user_id=user).recall_id
                ops["recall"] += 1
            elif step == 2 and last_recall is not None:
                reply = f"The deploy window is {i % 7}."
                first = mem.feedback(reply, user_id=user, recall_id=last_recall)
                consumed += bool(first.get("consumed"))
                # The same feedback again (a client retrying after a timeout): a no-op.
                again = mem.feedback(reply, user_id=user, recall_id=last_recall)
                repeats_applied += bool(again.get("consumed")) + again.get("strengthened", 0)
                repeats_applied += again.get("weakened", 0)
                last_recall = None
                ops["feedback"] += 1
            elif step == 3 and own and (i // 5) % 2:
                mem.rate_memory(own[i % len(own)], "accepted", user_id=user)
                ops["rate"] += 1
            elif step == 3:
                target = shared[(i // 10) % len(shared)]
                verdict = "accepted" if (i // 10) % 3 else "rejected"
                mem.rate_memory(target, verdict, user_id=user)
                rated[f"{target} {verdict}"] = rated.get(f"{target} {verdict}", 0) + 1
                ops["rate"] += 1
            else:
                k = i % len(edges)
                delta = 0.01 if (i // 5) % 2 else -0.007
                src, dst, kind, _ = edges[k]
                mem.store.adjust_edges(
                    mem.config.workspace,
                    EdgeAdjustment([EdgeDelta(src, dst, kind, delta)], EdgeBounds(LO, HI)),
                )
                applied[k] += delta
                ops["adjust"] += 1
        except Exception:  # counted and reported: the point of the run is that there are none
            errors.append(traceback.format_exc(limit=3))
        latencies.append(time.perf_counter() - start)
    mem.close()
    with lock:
        for name, n in ops.items():
            out["ops"][name] = out["ops"].get(name, 0) + n
        out["applied"] = [a + b for a, b in zip(out["applied"], applied, strict=True)]
        out["added"] += added
        out["consumed"] += consumed
        out["repeats_applied"] += repeats_applied
        for name, n in rated.items():
            out["rated"][name] = out["rated"].get(name, 0) + n
        out["errors"].extend(errors)
        out["latencies"].extend(latencies)


def _process(
    path: str,
    pid: int,
    threads: int,
    edges: list[tuple[str, str, str, float]],
    shared: list[str],
    until: float,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "rated": {},
        "ops": {},
        "applied": [0.0] * len(edges),
        "added": 0,
        "consumed": 0,
        "repeats_applied": 0,
        "errors": [],
        "latencies": [],
    }
    lock = threading.Lock()
    workers = [
        threading.Thread(target=_thread, args=(path, pid, t, edges, shared, until, out, lock))
        for t in range(threads)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return out


def run(path: str, procs: int, threads: int, seconds: float) -> dict[str, Any]:
    """Run the load and return the checks' inputs and figures (see the module docstring)."""
    edges, shared = _seed(path)
    with Memory(_config(path), embedder=HashEmbedder()) as mem:
        before_count = mem.stats()["memories"]
    until_wall = time.time() + seconds
    ctx = mp.get_context("spawn")
    started = time.perf_counter()
    with ctx.Pool(procs) as pool:
        # Each process converts the wall-clock end into its own monotonic deadline.
        results = pool.starmap(
            _process_wall,
            [(path, p, threads, edges, shared, until_wall, seconds / 2) for p in range(procs)],
        )
    elapsed = time.perf_counter() - started
    applied = [sum(r["applied"][k] for r in results) for k in range(len(edges))]
    ops: dict[str, int] = {}
    for r in results:
        for name, n in r["ops"].items():
            ops[name] = ops.get(name, 0) + n
    latencies = sorted(x for r in results for x in r["latencies"])
    with Memory(_config(path), embedder=HashEmbedder()) as mem:
        ws = mem.config.workspace
        final = {
            (e.src, e.dst, e.kind): e.weight
            for e in mem.store.edges_from(ws, list({src for src, _, _, _ in edges}), LO)
        }
        after_count = mem.stats()["memories"]
        db = mem.config.sqlite_file
    facts = _facts(path, str(db), shared)
    integrity, ratings, recalls = facts["integrity"], facts["ratings"], facts["recalls"]
    stored_ratings = facts["stored_ratings"]
    rated: dict[str, int] = {}
    for r in results:
        for name, n in r["rated"].items():
            rated[name] = rated.get(name, 0) + n
    lost_scores = [
        {
            "memory verdict": name,
            "expected": rated.get(name, 0),
            "stored": stored_ratings.get(name, 0),
        }
        for name in sorted(set(rated) | set(stored_ratings))
        if rated.get(name, 0) != stored_ratings.get(name, 0)
    ]
    lost = [
        {"expected": w0 + applied[k], "final": final[(src, dst, kind)]}
        for k, (src, dst, kind, w0) in enumerate(edges)
        if abs(final[(src, dst, kind)] - (w0 + applied[k])) > 1e-6
    ]

    def pct(q: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000, 2)

    return {
        "procs": procs,
        "threads": threads,
        "seconds": round(elapsed, 2),
        "ops": ops,
        "calls": sum(ops.values()),
        "calls_per_s": round(sum(ops.values()) / elapsed, 1),
        "p50_ms": pct(0.5) if latencies else None,
        "p99_ms": pct(0.99) if latencies else None,
        "errors": [e for r in results for e in r["errors"]],
        "lost_edge_updates": lost,
        "shared_ratings": sum(rated.values()),
        "lost_score_updates": lost_scores,
        "memories_expected": before_count + sum(r["added"] for r in results),
        "memories_found": after_count,
        "ratings_expected": ops.get("rate", 0),
        "ratings_found": ratings,
        "recalls_expected": ops.get("recall", 0),
        "recalls_found": recalls,
        "feedback_applied": sum(r["consumed"] for r in results),
        "recalls_consumed": facts["consumed"],
        "feedback_repeats_applied": sum(r["repeats_applied"] for r in results),
        "recalls_changed_twice": facts["changed_twice"],
        "integrity": integrity,
    }


def _facts(location: str, sqlite_file: str, shared: list[str]) -> dict[str, Any]:
    """Counts read straight from the database, and its integrity check."""
    marks = ", ".join(["?"] * len(shared))
    queries = {
        "ratings": "SELECT count(*) FROM memory_ratings",
        "recalls": "SELECT count(*) FROM recalls",
        "consumed": "SELECT count(*) FROM recalls WHERE consumed_at IS NOT NULL",
        # Feedback writes a recall's edge changes in one transaction, at one time.
        "changed_twice": "SELECT count(*) FROM (SELECT recall_id FROM edge_changes "
        "WHERE recall_id IS NOT NULL GROUP BY recall_id HAVING count(DISTINCT at) > 1) t",
    }
    by_verdict = (
        "SELECT memory_id, verdict, count(*) FROM memory_ratings "
        f"WHERE memory_id IN ({marks}) GROUP BY 1, 2"
    )
    out: dict[str, Any] = {}
    if "://" in location:
        import psycopg

        with psycopg.connect(location, autocommit=True) as pg:
            for name, sql in queries.items():
                out[name] = pg.execute(sql).fetchone()[0]  # type: ignore[index]
            rows = pg.execute(by_verdict.replace("?", "%s"), shared).fetchall()
        out["integrity"] = "ok"  # PostgreSQL checks its own constraints on every write
    else:
        conn = sqlite3.connect(sqlite_file)
        for name, sql in queries.items():
            out[name] = conn.execute(sql).fetchone()[0]
        rows = conn.execute(by_verdict, shared).fetchall()
        out["integrity"] = conn.execute("PRAGMA integrity_check").fetchone()[0]
        conn.close()
    out["stored_ratings"] = {f"{m} {v}": n for m, v, n in rows}
    return out


def _process_wall(
    path: str,
    pid: int,
    threads: int,
    edges: list[tuple[str, str, str, float]],
    shared: list[str],
    until: float,
    least: float,
) -> dict[str, Any]:
    # On a busy machine starting the process (imports, opening the store) can eat the whole
    # window: each process then still works ``least`` seconds from when it is ready, and the
    # processes, started together, still overlap.
    return _process(
        path, pid, threads, edges, shared, time.monotonic() + max(until - time.time(), least)
    )

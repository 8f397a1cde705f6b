"""How long a search of one scope waits while another scope's large add runs on the server.

    python bench/contention.py --before SRC [--after SRC] [--messages 10000] [--window 300]

``SRC``: a checkout's ``src`` folder (``--after`` defaults to this checkout's). Each version runs
in a process of its own: a real ``engrammar serve`` app on a loopback port over a SQLite store
with the real default model. One client sends ``POST /v1/memories`` with ``--messages``
messages of ~390 characters (one request); meanwhile another searches a different user's
memories (``POST /v1/search``) every 0.2 s, each search waiting at most 120 s, until the add
answers or ``--window`` seconds have passed. Reported: the searches' latency while the add
runs (p50, p99, max), the same searches' latency on an idle server, and how the add ended.
Writes bench/results/contention.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, pct

HERE = Path(__file__).resolve().parent
TOPICS = "harbour lantern copper meadow violet engine quarry saddle ribbon orchard".split()


def _message(i: int) -> str:
    words = [TOPICS[(i * 7 + k) % len(TOPICS)] for k in range(6)]
    text = (
        f"Note {i}: on day {i % 365} the team discussed the {' and the '.join(words)}, agreed "
        f"that ticket {i * 31 % 9973} waits for review, and that the {words[0]} budget moves "
        f"to the next quarter because the {words[1]} supplier is late again. "
    )
    while len(text) < 390:
        text += f"Someone added that {words[len(text) % 6]} matters too. "
    return text[:390]


def measure(messages: int, window: float) -> dict[str, Any]:
    """One version's figures (run with that version on ``sys.path``)."""
    import httpx
    import uvicorn

    from engrammar import Config, Memory
    from engrammar.interfaces.rest import server_config
    from engrammar.server import build_app

    sys.path.insert(0, str(HERE.parent / "tests"))
    from serving import free_port

    tmp = Path(tempfile.mkdtemp(prefix="contention-"))
    config = Config(path=str(tmp / "store"), max_request_bytes=32 * 1024 * 1024)
    mem = Memory(config)
    mem.add([f"Reader fact {i}: the {TOPICS[i % 10]} opens at {i % 12} o'clock." for i in
             range(50)], user_id="reader")  # fmt: skip
    port = free_port()
    server = uvicorn.Server(server_config(mem, build_app(mem, auth=False), host="127.0.0.1",
                                          port=port, log_level="critical"))  # fmt: skip
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    base = f"http://127.0.0.1:{port}"
    query = {"query": "when does the copper shop open", "user_id": "reader", "limit": 5}

    asked = iter(range(10**9))

    def search(client: httpx.Client) -> float:
        # A new wording each time: a cached query vector would not need the model at all.
        body = {**query, "query": f"{query['query']} on day {next(asked)}"}
        t0 = time.perf_counter()
        with contextlib.suppress(httpx.TimeoutException):
            client.post(f"{base}/v1/search", json=body, timeout=120).raise_for_status()
        return time.perf_counter() - t0

    with httpx.Client() as client:
        idle = [search(client) for _ in range(40)]
    outcome: dict[str, Any] = {}

    def add() -> None:
        body = {"messages": [{"role": "user", "content": _message(i)} for i in range(messages)],
                "user_id": "writer"}  # fmt: skip
        t0 = time.perf_counter()
        try:
            with httpx.Client() as c:
                r = c.post(f"{base}/v1/memories", json=body, timeout=window + 600)
            outcome["status"] = r.status_code
            outcome["retry_after"] = r.headers.get("retry-after")
        except httpx.TimeoutException:
            outcome["status"] = "timeout"
        outcome["seconds"] = round(time.perf_counter() - t0, 1)

    writer = threading.Thread(target=add, daemon=True)
    started = time.perf_counter()
    writer.start()
    time.sleep(1.0)  # the add's body is sent and its work begun
    busy = []
    with httpx.Client() as client:
        while writer.is_alive() and time.perf_counter() - started < window:
            busy.append(search(client))
            time.sleep(0.2)
    finished = not writer.is_alive()
    if not finished:
        outcome.setdefault("status", f"still running after {window:g} s")
    server.should_exit = True
    return {
        "idle_p50_ms": round(pct(idle, 50) * 1000, 1),
        "idle_p99_ms": round(pct(idle, 99) * 1000, 1),
        "busy_n": len(busy),
        "busy_p50_ms": round(pct(busy, 50) * 1000, 1),
        "busy_p99_ms": round(pct(busy, 99) * 1000, 1),
        "busy_max_ms": round(max(busy, default=float("nan")) * 1000, 1),
        "add": outcome,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--before", required=True, help="src folder of the version before")
    ap.add_argument("--after", default=str(HERE.parent / "src"))
    ap.add_argument("--messages", type=int, default=10_000)
    ap.add_argument("--window", type=float, default=300.0)
    ap.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--only", choices=("before", "after"), help="run one version")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.messages, args.window)), flush=True)
        # An add still running holds the model in a thread; leave without waiting for it.
        os._exit(0)
    started = machine()
    rows: dict[str, Any] = {}
    saved = Path(args.out) / "contention.json"
    if saved.exists():
        rows = json.loads(saved.read_text())
    for name, src in (("before", args.before), ("after", args.after)):
        if args.only not in (None, name):
            continue
        env = {**os.environ, "PYTHONPATH": src}
        cmd = [sys.executable, __file__, "--measure", "--before", src,
               "--messages", str(args.messages), "--window", str(args.window)]  # fmt: skip
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"{name} failed:\n{done.stderr[-3000:]}")
        rows[name] = json.loads(done.stdout.strip().splitlines()[-1])
        rows[name]["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        rows[name]["load"] = [round(x, 1) for x in started["load_avg_at_start"]]
        saved.write_text(json.dumps(rows, indent=1) + "\n")
    command = "python bench/contention.py " + " ".join(shlex.quote(x) for x in sys.argv[1:])
    lines = [
        "# A search while another scope's large add runs (real model, real server)",
        "",
        f"Command: `{command}` (each version once; `--only` runs one and keeps the other's "
        "row from bench/results/contention.json)  ",
        f"Machine: {started['cpu']}, {started['cores']} cores, shared with other work (load "
        "average at each run's start in the table).  ",
        f"One `POST /v1/memories` of {args.messages:,} messages of 390 characters (one request, "
        "user `writer`) while `POST /v1/search` of user `reader` runs every 0.2 s, each "
        f"waiting at most 120 s, for as long as the add runs (at most {args.window:g} s).",
        "",
        "| version | date | load | idle search p50 / p99 ms | searches during the add | "
        "p50 ms | p99 ms | max ms | the add |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("before", "after"):
        r = rows.get(name)
        if r is None:
            continue
        add = r["add"]
        ended = str(add.get("status"))
        if "seconds" in add:
            ended += f" after {add['seconds']} s"
        if add.get("retry_after"):
            ended += f" (Retry-After {add['retry_after']})"
        lines.append(
            f"| {name} | {r['date']} | {r['load'][0]} | {r['idle_p50_ms']} / {r['idle_p99_ms']} | "
            f"{r['busy_n']} | {r['busy_p50_ms']} | {r['busy_p99_ms']} | {r['busy_max_ms']} | "
            f"{ended} |"
        )
    out = Path(args.out) / "contention.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""What the interfaces add on top of the library: CLI start-up, MCP over stdio and HTTP, REST.

    python bench/interfaces.py [--data ../shared/data/locomo10.json] [--turns 300] [--calls 50]

Fills a store with LoCoMo turns (real MiniLM model), then measures, side by side in one run:
in-process ``Memory.search``; the same searches as REST calls and as MCP tool calls over
streamable HTTP to an ``engrammar serve`` subprocess; as MCP tool calls over stdio to an
``engrammar mcp`` subprocess; and the start-up of each. Writes bench/results/interfaces.md.
"""

from __future__ import annotations

import argparse
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA, RESULTS, load_locomo, locomo_turns, machine, summary_ms
from engrammar import Config, Memory
from engrammar.keys import create_api_key

ENGRAMMAR = [sys.executable, "-m", "engrammar.cli"]


def _env(store: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
    env["ENGRAMMAR_PATH"] = str(store)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bench_cli_start(store: Path) -> dict[str, Any]:
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([*ENGRAMMAR, "--help"], env=_env(store), check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    search = []
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run(
            [*ENGRAMMAR, "search", "hobbies", "-u", "locomo", "--json"],
            env=_env(store),
            check=True,
            capture_output=True,
        )
        search.append(time.perf_counter() - t0)
    return {"help": summary_ms(times), "search": summary_ms(search)}


async def _stdio(store: Path, queries: list[str]) -> dict[str, Any]:
    params = StdioServerParameters(
        command=ENGRAMMAR[0], args=[*ENGRAMMAR[1:], "mcp"], env=_env(store)
    )
    t0 = time.perf_counter()
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as streams,
            ClientSession(streams[0], streams[1]) as s,
        ):
            await s.initialize()
            await s.list_tools()
            ready = time.perf_counter() - t0
            first = await s.call_tool("memory_search", {"query": queries[0], "user_id": "locomo"})
            assert not first.is_error
            first_answer = time.perf_counter() - t0
            times = []
            for q in queries:
                t1 = time.perf_counter()
                r = await s.call_tool("memory_search", {"query": q, "user_id": "locomo"})
                times.append(time.perf_counter() - t1)
                assert not r.is_error
    return {"ready_s": ready, "first_answer_s": first_answer, "search": summary_ms(times)}


async def _mcp_http(base: str, key: str, queries: list[str]) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{base}/mcp", http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as s,
    ):
        await s.initialize()
        times = []
        for q in queries:
            t1 = time.perf_counter()
            r = await s.call_tool("memory_search", {"query": q, "user_id": "locomo"})
            times.append(time.perf_counter() - t1)
            assert not r.is_error
    return {"search": summary_ms(times)}


def bench_http(store: Path, key: str, queries: list[str], mcp_queries: list[str]) -> dict[str, Any]:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [*ENGRAMMAR, "serve", "--port", str(port), "--log-level", "warning"],
        env=_env(store),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as c:
            while True:
                try:
                    if c.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.05)
                if time.perf_counter() - t0 > 120:
                    raise RuntimeError("server did not start")
            ready = time.perf_counter() - t0
            times = []
            for q in queries:
                t1 = time.perf_counter()
                r = c.post("/v1/search", json={"query": q, "user_id": "locomo"})
                times.append(time.perf_counter() - t1)
                r.raise_for_status()
        mcp = anyio.run(_mcp_http, base, key, mcp_queries)
    finally:
        proc.terminate()
        proc.wait(10)
    return {"ready_s": ready, "rest_search": summary_ms(times), "mcp_search": mcp["search"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    m = machine()
    turns = locomo_turns(load_locomo(args.data))[: args.turns]
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        with Memory(Config(path=str(store))) as mem:
            mem.add(
                [{"role": "user", "content": t["text"], "name": t["speaker"]} for t in turns],
                user_id="locomo",
            )
            key, _ = create_api_key(mem.store, "default")
            # Four disjoint query sets: a repeated query would be answered from the embedding
            # cache of a process that already saw it, which is not what is measured here.
            texts = [t["text"][:80] for t in turns]
            sets = [texts[i::4][: args.calls] for i in range(4)]
            mem.search("warm up", user_id="locomo")  # load the index and the model
            inproc = []
            for q in sets[0]:
                t1 = time.perf_counter()
                mem.search(q, user_id="locomo")
                inproc.append(time.perf_counter() - t1)
        cli = bench_cli_start(store)
        stdio = anyio.run(_stdio, store, sets[1])
        http = bench_http(store, key, sets[2], sets[3])
    command = "python bench/interfaces.py " + shlex.join(sys.argv[1:])
    lines = [
        "# Interfaces: what CLI, MCP and REST add to the library",
        "",
        f"Command: `{command.strip()}` · machine: {m['cpu']}, {m['cores']} cores, "
        f"Python {m['python']}, load average at start {tuple(round(x, 2) for x in m['load_avg_at_start'])}",
        "",
        f"Store: {len(turns)} LoCoMo turns in one scope, real MiniLM model; {len(sets[0])} "
        "searches (limit 10) per row, a different set of queries per row (no embedding-cache "
        "hits), all measured in the same run.",
        "",
        "| what | p50 ms | p95 ms |",
        "|---|---|---|",
        f"| `Memory.search` in process | {summary_ms(inproc)['p50_ms']} | {summary_ms(inproc)['p95_ms']} |",
        f"| REST `POST /v1/search` (httpx, loopback) | {http['rest_search']['p50_ms']} | "
        f"{http['rest_search']['p95_ms']} |",
        f"| MCP `memory_search`, streamable HTTP | {http['mcp_search']['p50_ms']} | "
        f"{http['mcp_search']['p95_ms']} |",
        f"| MCP `memory_search`, stdio | {stdio['search']['p50_ms']} | {stdio['search']['p95_ms']} |",
        f"| `engrammar --help` (process start) | {cli['help']['p50_ms']} | {cli['help']['p95_ms']} |",
        f"| `engrammar search` (process start + model load + search) | {cli['search']['p50_ms']} | "
        f"{cli['search']['p95_ms']} |",
        "",
        "| start-up | seconds |",
        "|---|---|",
        f"| `engrammar mcp`: spawn to initialized + tools listed | {stdio['ready_s']:.2f} |",
        f"| `engrammar mcp`: spawn to first search answered | {stdio['first_answer_s']:.2f} |",
        f"| `engrammar serve`: spawn to /healthz answering | {http['ready_s']:.2f} |",
        "",
    ]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "interfaces.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

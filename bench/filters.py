"""What recall's filters cost: recall p50 on one 10k-memory SQLite scope, unfiltered and with
each kind of filter, measured side by side (each question asks every variant in turn, so all
see the same moment of a noisy machine).

    python bench/filters.py [--data ../shared/data/locomo10.json] [--memories 10000]
                            [--queries 200]

The scope holds LoCoMo turns (repeated with distinct text up to --memories), real MiniLM
vectors, alternating user / assistant roles, kinds (message 80 %, fact 10 %, decision 5 %,
event 5 %), a topic in metadata (one of 10) and times spread over 100 days. Two rounds: the
query embedding cached (each question recalled once before timing: what the filter adds to
the retrieval itself) and not cached (what a user waits for). Writes
bench/results/filters.md and filters.json, with `uptime` at start and end.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA, RESULTS, load_locomo, locomo_turns, machine, summary_ms
from _embcache import DiskCachedEmbedder
from engrammar import Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.engine.filters import parse_filters
from engrammar.store import NewMemory

DAY = 86_400.0
START = 1_700_000_000.0
KINDS = ["message"] * 16 + ["fact"] * 2 + ["decision", "event"]

VARIANTS: dict[str, dict[str, Any] | None] = {
    "none": None,
    "metadata topic = t3 (10 %)": {"metadata": {"topic": "t3"}},
    "metadata topic in [t3, t7] (20 %)": {"metadata": {"topic": {"in": ["t3", "t7"]}}},
    "kind fact (10 %)": {"kind": "fact"},
    "role user (50 %)": {"role": "user"},
    "last 30 days (30 %)": {"since": START + 70 * DAY},
    "kind + role + time + metadata (1.7 %)": {
        "kind": ["fact", "decision"],
        "role": "assistant",
        "since": START + 50 * DAY,
        "metadata": {"topic": {"in": ["t1", "t2", "t3", "t4", "t5"]}},
    },
}


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _fill(m: Memory, turns: list[dict[str, Any]], vectors: np.ndarray, n: int) -> None:
    rows = []
    for i in range(n):
        t = turns[i % len(turns)]
        rep = i // len(turns)
        rows.append(
            NewMemory(
                id=uuid.uuid4().hex,
                workspace="default",
                user_id="bench",
                agent_id=None,
                session_id=None,
                role="user" if i % 2 == 0 else "assistant",
                content=t["text"] if rep == 0 else f"{t['text']} (#{rep})",
                kind=KINDS[i % len(KINDS)],
                created_at=START + (i * 100 * DAY) / n,
                metadata={"speaker": t["speaker"], "topic": f"t{(i // 3) % 10}"},
                dedup_key=uuid.uuid4().hex,
                embedding=vectors[i % len(turns)],
            )
        )
    for start in range(0, len(rows), 5000):
        m.store.add_memories(rows[start : start + 5000])


def _round(m: Memory, questions: list[str], cached: bool) -> dict[str, Any]:
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    returned: dict[str, list[int]] = {name: [] for name in VARIANTS}
    for q in questions:
        if cached:
            m.recall(q, user_id="bench")  # the query's vector is then in the embedding cache
        for name, filters in VARIANTS.items():
            where = parse_filters(filters)
            t0 = time.perf_counter()
            r = m.recall(q, user_id="bench", filters=filters)
            times[name].append(time.perf_counter() - t0)
            returned[name].append(len(r.memories))
            assert where is None or all(where.matches(x.memory) for x in r.memories)
    base = summary_ms(times["none"])["p50_ms"]
    return {
        name: {
            **summary_ms(values),
            "p50_over_none": round(summary_ms(values)["p50_ms"] / base, 3),
            "mean_returned": round(float(np.mean(returned[name])), 2),
        }
        for name, values in times.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--turns", type=int, default=2_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()

    conversations = load_locomo(args.data)
    turns = locomo_turns(conversations)[: args.turns]
    questions = [q["question"] for c in conversations for q in c["qa"]][: args.queries]
    model = MiniLMEmbedder()
    vectors = DiskCachedEmbedder(model).embed([t["text"] for t in turns])
    report: dict[str, Any] = {
        "machine": machine(),
        "uptime_at_start": _uptime(),
        "command": "python bench/"
        + " ".join([Path(sys.argv[0]).name, *map(shlex.quote, sys.argv[1:])]),
        "memories": args.memories,
        "questions": len(questions),
    }
    with tempfile.TemporaryDirectory() as tmp:
        cached = Memory(Config(path=tmp), embedder=model)
        _fill(cached, turns, vectors, args.memories)
        cached.recall(questions[0], user_id="bench")  # loads the scope's index once
        report["cached_query_vector"] = _round(cached, questions, cached=True)
        cached.close()
        uncached = Memory(Config(path=tmp, embed_cache_size=0), embedder=model)
        uncached.recall(questions[0], user_id="bench")
        report["uncached_query_vector"] = _round(uncached, questions, cached=False)
        uncached.close()
    report["uptime_at_end"] = _uptime()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "filters.json").write_text(json.dumps(report, indent=2))
    mach = report["machine"]
    lines = [
        "# What recall's filters cost",
        "",
        f"Command: `{report['command']}` · machine: {mach['cpu']}, {mach['cores']} cores "
        f"(shared with other work), Python {mach['python']}.",
        "",
        f"- `uptime` at start: `{report['uptime_at_start']}`",
        f"- `uptime` at end: `{report['uptime_at_end']}`",
        "",
        f"One SQLite scope of {args.memories:,} memories (LoCoMo turns, real MiniLM vectors), "
        f"{len(questions)} LoCoMo questions, `Memory.recall` with the default limit (10). Each "
        "question asks every variant in turn, so the ratios compare figures measured side by "
        "side; the absolute times move with the machine's load.",
        "",
    ]
    for key, title in (
        ("cached_query_vector", "Query vector cached (the retrieval alone)"),
        ("uncached_query_vector", "Query embedded on every call (what a caller waits for)"),
    ):
        lines += [
            f"## {title}",
            "",
            "| filter | p50 | p95 | p50 / unfiltered | memories returned (mean) |",
            "|---|---|---|---|---|",
        ]
        for name, row in report[key].items():
            lines.append(
                f"| {name} | {row['p50_ms']} ms | {row['p95_ms']} ms | "
                f"{row['p50_over_none']}× | {row['mean_returned']} |"
            )
        lines.append("")
    lines += [
        "## Reading it",
        "",
        "- A filter is applied inside the in-process index (a mask over the scope's rows before "
        "the top-k: kinds, roles and times as arrays, metadata through a per-key value index "
        "built on first use), so it costs no more than the unfiltered search: the ratios near "
        "1 are the machine's noise.",
        "- A `kind` filter that leaves out `preference` is much faster: recall then skips its "
        "standing-preferences slot, whose SQL read (`memories_of_kind`: the newest memories of "
        "kind `preference`, walking the scope's index row by row) is about half of an "
        "unfiltered recall at 10k memories on this machine. That read is the same on main; an "
        "index on `(workspace, user_id, kind, seq)` would take it out of every recall.",
        "- Every filtered result was checked against its filter while timing (the script "
        "asserts it).",
        "",
    ]
    (out / "filters.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()

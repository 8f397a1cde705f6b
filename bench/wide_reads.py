"""Two reads that grew with the store: a search whose metadata filter names 32 keys, and the
inspector's rank shifts (``rank_shifts(limit=50)``), each on one SQLite scope of 10,000
memories, side by side with another checkout of engrammar (the code before a change).

    python bench/wide_reads.py [--baseline ../main-before/src] [--repeats 10] [--postgres]

The scope holds 10,000 short notes (hash embedder: the figures are the index, ranking and
store work, not the model's), 32 metadata keys on each with three values, and 60 rated
recalls (two ratings each, and a reply). ``--baseline`` runs the same measurements in a
subprocess importing engrammar from that source folder. ``--postgres`` also times the
filtered searches on a PostgreSQL scope of the same notes (a throwaway server started like
the tests start it): that store has no value indexes of its own to thrash, the filter is SQL.
Writes bench/results/wide_reads.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine

WORDS = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
    "sigma tau"
).split()


def _notes(rng: random.Random) -> list[dict[str, Any]]:
    return [
        {
            "role": "user",
            "content": " ".join(rng.choice(WORDS) for _ in range(8)) + f" {i}",
            "metadata": {f"k{j}": rng.randrange(3) for j in range(32)},
        }
        for i in range(10_000)
    ]


def _median_ms(call: Any, repeats: int) -> float:
    call()  # warm
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return round(statistics.median(times) * 1000, 1)


def _filtered_searches(mem: Any, repeats: int) -> dict[str, float]:
    out = {"search, no filter": _median_ms(
        lambda: mem.search("alpha beta", user_id="u", limit=10), repeats)}  # fmt: skip
    for keys in (8, 16, 32):
        where = {"metadata": {f"k{j}": {"in": [0, 1]} for j in range(keys)}}
        out[f"search, {keys}-key metadata filter"] = _median_ms(
            lambda w=where: mem.search("alpha beta", user_id="u", filters=w, limit=10), repeats
        )
    return out


def measure_postgres(repeats: int) -> dict[str, float]:
    """The filtered searches on a PostgreSQL scope of the same notes."""
    from engrammar import Config, HashEmbedder, Memory

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from _common import start_pg_server

    server = start_pg_server()
    try:
        mem = Memory(Config(store=server.new_database()), embedder=HashEmbedder())
        notes = _notes(random.Random(0))
        for start in range(0, len(notes), 1000):
            mem.add(notes[start : start + 1000], user_id="u", dedup=False)
        out = _filtered_searches(mem, repeats)
        mem.close()
        return out
    finally:
        server.stop()


def measure(repeats: int) -> dict[str, float]:
    """Median milliseconds of each read, on a store built here."""
    from engrammar import Config, HashEmbedder, Memory

    rng = random.Random(0)
    mem = Memory(Config(path=tempfile.mkdtemp()), embedder=HashEmbedder())
    notes = _notes(rng)
    for start in range(0, len(notes), 1000):
        mem.add(notes[start : start + 1000], user_id="u", dedup=False)
    for q in range(60):
        r = mem.recall(" ".join(rng.choice(WORDS) for _ in range(3)), user_id="u")
        for m in r.memories[:2]:
            verdict = "accepted" if q % 2 else "rejected"
            mem.rate_memory(m.id, verdict, recall_id=r.recall_id, user_id="u")
        mem.feedback(r.memories[0].content, user_id="u", recall_id=r.recall_id)

    out = _filtered_searches(mem, repeats)
    out["rank_shifts(limit=50)"] = _median_ms(
        lambda: mem.rank_shifts(user_id="u", limit=50), repeats
    )
    mem.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="a source folder of engrammar to compare with")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--postgres", action="store_true", help="time PostgreSQL's filters too")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:  # the baseline's subprocess
        print(json.dumps(measure(args.repeats)))
        return
    uptime_start = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    before, baseline = None, "none"
    if args.baseline:
        env = {**os.environ, "PYTHONPATH": str(Path(args.baseline).resolve())}
        run = subprocess.run(
            [sys.executable, __file__, "--json", "--repeats", str(args.repeats)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        before = json.loads(run.stdout.strip().splitlines()[-1])
        rev = subprocess.run(
            ["git", "-C", args.baseline, "log", "-1", "--format=%h"], capture_output=True, text=True
        ).stdout.strip()
        baseline = f"the checkout at {rev}" if rev else args.baseline
    after = measure(args.repeats)
    on_pg = measure_postgres(args.repeats) if args.postgres else {}
    uptime_end = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    m = machine()
    given = ["--repeats", str(args.repeats)] + (["--baseline", "SRC"] if args.baseline else [])
    given += ["--postgres"] if args.postgres else []
    command = "python bench/wide_reads.py " + shlex.join(given)
    lines = [
        "# Wide reads: a 32-key metadata filter, and rank shifts",
        "",
        f"Command: `{command.strip()}` · machine: {m['cpu']}, {m['cores']} cores (shared with "
        f"other work), Python {m['python']} · date: {time.strftime('%Y-%m-%d', time.gmtime())}.",
        "",
        f"- `uptime` at start: `{uptime_start}`",
        f"- `uptime` at end: `{uptime_end}`",
        "",
        "One SQLite scope of 10,000 notes with 32 metadata keys each and 60 rated recalls "
        f"(hash embedder); median of {args.repeats} calls after one warm-up. Baseline: "
        f"{baseline}.",
        "",
        "| read | before (baseline) | now |",
        "|---|---|---|",
    ]
    for name, now in after.items():
        was = f"{before[name]} ms" if before and name in before else "-"
        lines.append(f"| {name} | {was} | {now} ms |")
    if on_pg:
        lines += [
            "",
            "The same notes in one PostgreSQL scope (a local throwaway server, the same run), "
            "this checkout:",
            "",
            "| read | PostgreSQL |",
            "|---|---|",
            *[f"| {name} | {ms} ms |" for name, ms in on_pg.items()],
        ]
    lines += [
        "",
        "## Reading it",
        "",
        "- A filter naming more metadata keys than the scope index keeps value indexes for (16) "
        "used to build one per key on every search, each evicting another the same filter "
        "needed; it now builds none and reads the keys without an index row by row, on the rows "
        "the other conditions left in.",
        "- PostgreSQL keeps no value indexes of its own: a metadata filter is a condition of the "
        "SQL search (`metadata -> key = ANY(...)` per key), so more keys cost no rebuilds there; "
        "a 32-key filter costs no more than a 16-key one. A filtered search does cost several "
        "times an unfiltered one there (the conditions are read on every row of the scope: no "
        "index holds metadata).",
        "- Rank shifts re-rank each recall's query once and read every rated memory's rank off "
        "that ranking: a memory the cut left below it is ranked right after it, as explain "
        "ranks it, without a ranking of its own (only one that is no candidate at all is "
        "explained on its own); the ratings are read newest first with one indexed query, not "
        "counted through the scope's statistics. What remains is one ranking per recall shown.",
        "",
    ]
    (RESULTS / "wide_reads.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""SQLite and PostgreSQL side by side on one large user scope (the targets): recall and
feedback p50, round trips per recall and where a PostgreSQL recall's time goes, and add time
over the raw embedding time.

    python bench/pg_scope.py [--n 10000] [--questions 200] [--adds 100]

* Data: the LoCoMo turns, observations and summaries (``store_bench.locomo_rows``, the same
  10k texts and cached MiniLM vectors), all in ONE user scope, added with ``Memory.add`` one
  session at a time (so the graph has its sequence edges), vectors precomputed.
* Recall: ``Memory.recall`` of the LoCoMo questions (query vectors precomputed), the two stores
  alternating question by question so that both see the same machine load; then ``feedback``
  with the gold answer as the reply (its vector precomputed too) on the recall just made.
* PostgreSQL: exchanges per recall (``PostgresStore._tx`` calls: one statement or one pipelined
  batch each) and the time spent inside them (server + wire) against the whole call.
* Add: ``Memory.add`` of one message with the real model (embedding cache off) against the raw
  embedder on the same text, alternating; ratio of the medians.

PostgreSQL is a throwaway server started like the tests do (tests/pg.py), synchronous_commit off.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from engrammar import Config, Memory  # noqa: E402
from engrammar.embed.onnx import MiniLMEmbedder  # noqa: E402
from engrammar.store.postgres.store import PostgresStore  # noqa: E402
from store_bench import Precomputed, embed_cached, locomo_rows, machine  # noqa: E402


def p50(values: list[float]) -> float:
    return statistics.median(values) * 1000


def answers(path: Path) -> dict[str, str]:
    import json

    out: dict[str, str] = {}
    for sample in json.loads(path.read_text(encoding="utf-8")):
        for q in sample["qa"]:
            if q.get("answer") is not None:
                out[q["question"]] = str(q["answer"])
    return out


class Timing:
    """Counts PostgresStore._tx calls and the time inside them."""

    def __init__(self) -> None:
        self.n = 0
        self.s = 0.0
        self.on = ""  # the phase being timed ("" none)
        self.by_what: dict[str, dict[str, list[float]]] = {}
        original = PostgresStore._tx

        def counting(store: PostgresStore, what: str, *args: Any, **kw: Any) -> Any:
            self.n += 1
            t = time.perf_counter()
            try:
                return original(store, what, *args, **kw)
            finally:
                took = time.perf_counter() - t
                self.s += took
                if self.on:
                    self.by_what.setdefault(self.on, {}).setdefault(what, []).append(took)

        PostgresStore._tx = counting  # type: ignore[method-assign]


def fill(mem: Memory, rows: list[tuple[str, str, str, str]]) -> float:
    sessions: dict[str, list[int]] = {}
    for i, (_, session, _, _) in enumerate(rows):
        sessions.setdefault(session + rows[i][0], []).append(i)
    t = time.perf_counter()
    for idx in sessions.values():
        mem.add(
            [{"role": "user", "content": rows[i][3], "kind": rows[i][2]} for i in idx],
            user_id="u",
            session_id=rows[idx[0]][1],
            dedup=False,
        )
    return time.perf_counter() - t


def texts_and_vectors(
    data: Path, n: int
) -> tuple[list[Any], list[str], dict[str, Any], dict[str, str]]:
    """The first ``n`` LoCoMo rows, the distinct questions, every text's vector (cached) and
    each question's gold answer: what pg_scope and pg_side_by_side ask with."""
    rows, questions = locomo_rows(data, max(n, 10_000))
    rows = rows[:n]
    qs = list(dict.fromkeys(q for _, q in questions))
    # Beyond 10,000 the rows are copies of LoCoMo's turns (users "<id>-copyN"): their texts
    # are among the first 10,000 rows', embedded once (bulk_rows gives copies nearby vectors).
    first = rows[:10_000]
    vecs, qv = embed_cached(MiniLMEmbedder(), [r[3] for r in first], qs)
    table = {r[3]: vecs[i] for i, r in enumerate(first)}
    assert all(r[3] in table for r in rows[10_000:])
    table.update({q: qv[i] for i, q in enumerate(qs)})
    return rows, qs, table, answers(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=str(ROOT / "../shared/data/locomo10.json"))
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--adds", type=int, default=100)
    ap.add_argument("--out", default="", help="append the printed report to this file")
    ap.add_argument("--pg-options", default="", help="more server options (e.g. auto_explain)")
    ap.add_argument("--pg-url", default="", help="an existing server's database (else a throwaway)")
    ap.add_argument("--pg-adds-url", default="", help="with --pg-url: the database for adds")
    ap.add_argument("--sqlite-path", default="", help="a folder for the SQLite store (else a temp)")
    ap.add_argument("--reuse", action="store_true", help="stores already filled by an earlier run")
    ap.add_argument("--profile", action="store_true", help="cProfile the PostgreSQL recalls")
    ap.add_argument("--keep-log", default="", help="copy the server log here at the end")
    args = ap.parse_args()
    import pg

    bindir, reason = pg.find_bindir()
    if bindir is None:
        sys.exit(f"no PostgreSQL server: {reason}")
    server = (
        None
        if args.pg_url
        else pg.PgServer(
            bindir, options="-c synchronous_commit=off -c shared_buffers=512MB " + args.pg_options
        )
    )
    if server is not None:
        server.start()
    lines = [f"machine: {machine()}", "command: python " + " ".join(sys.argv)]
    try:
        rows, qs, table, gold = texts_and_vectors(Path(args.data), args.n)
        embedder = MiniLMEmbedder()
        asked = qs[:: max(1, len(qs) // args.questions)][: args.questions]
        replies = [gold.get(q, "I do not know.") for q in asked]
        for text, vec in zip(replies, embedder.embed(replies), strict=True):
            table.setdefault(text, vec)
        with tempfile.TemporaryDirectory(prefix="engrammar-pgscope-") as tmp:
            pg_url = args.pg_url or server.new_database()  # type: ignore[union-attr]
            tmp = args.sqlite_path or tmp
            mems = {
                "sqlite": Memory(Config(path=tmp, embed_cache_size=0),
                                 embedder=Precomputed(embedder, table)),
                "postgres": Memory(Config(store=pg_url, embed_cache_size=0),
                                   embedder=Precomputed(embedder, table)),
            }  # fmt: skip
            for kind, mem in mems.items():
                if args.reuse:
                    continue
                took = fill(mem, rows)
                if kind == "postgres":  # statistics, as autovacuum keeps them on a live store
                    import psycopg

                    with psycopg.connect(pg_url, autocommit=True) as conn:
                        conn.execute("ANALYZE")
                lines.append(
                    f"{kind}: filled {len(rows)} memories in one user scope in {took:.0f} s"
                )
                print(lines[-1], flush=True)
            timing = Timing()
            lat: dict[str, list[float]] = {k: [] for k in mems}
            fb: dict[str, list[float]] = {k: [] for k in mems}
            trips: list[int] = []
            inside: list[float] = []
            for q in asked[:20]:
                for mem in mems.values():
                    mem.recall(q, user_id="u")  # warm-up
            import cProfile

            prof = cProfile.Profile() if args.profile else None
            for q, reply in zip(asked, replies, strict=True):
                for kind, mem in mems.items():
                    timing.n, timing.s = 0, 0.0
                    timing.on = "recall" if kind == "postgres" else ""
                    if prof is not None and kind == "postgres":
                        prof.enable()
                    t = time.perf_counter()
                    result = mem.recall(q, user_id="u")
                    lat[kind].append(time.perf_counter() - t)
                    if prof is not None:
                        prof.disable()
                    timing.on = ""
                    if kind == "postgres":
                        trips.append(timing.n)
                        inside.append(timing.s)
                    timing.on = "feedback" if kind == "postgres" else ""
                    t = time.perf_counter()
                    mem.feedback(response=reply, user_id="u", recall_id=result.recall_id)
                    fb[kind].append(time.perf_counter() - t)
                    timing.on = ""
            if prof is not None:
                import pstats

                pstats.Stats(prof).sort_stats("tottime").print_stats(25)
            sq, pq = p50(lat["sqlite"]), p50(lat["postgres"])
            lines.append(
                f"recall p50 ms ({len(asked)} questions, one {len(rows)}-memory user scope): "
                f"sqlite {sq:.1f}, postgres {pq:.1f} ({pq / sq:.2f}x)"
            )
            lines.append(
                f"postgres exchanges per recall: mean {statistics.mean(trips):.2f}, "
                f"min {min(trips)}, max {max(trips)}; time inside them p50 "
                f"{p50(inside):.1f} ms of {pq:.1f} ms"
            )
            sf, pf = p50(fb["sqlite"]), p50(fb["postgres"])
            lines.append(f"feedback p50 ms: sqlite {sf:.1f}, postgres {pf:.1f} ({pf / sf:.2f}x)")
            # Add with the real model against the raw embedder on the same texts.
            adds_url = args.pg_adds_url or server.new_database()  # type: ignore[union-attr]
            adds = {k: Memory(Config(path=tmp + "/adds", embed_cache_size=0)
                              if k == "sqlite" else
                              Config(store=adds_url, embed_cache_size=0),
                              embedder=MiniLMEmbedder()) for k in mems}  # fmt: skip
            raw: list[float] = []
            added: dict[str, list[float]] = {k: [] for k in mems}
            for i, r in enumerate(rows[: args.adds]):
                text = f"{r[3]} ({i})"
                t = time.perf_counter()
                embedder.embed([text])
                raw.append(time.perf_counter() - t)
                for kind, mem in adds.items():
                    timing.on = "add" if kind == "postgres" else ""
                    t = time.perf_counter()
                    mem.add(text, user_id="adder", session_id="s1", dedup=False)
                    added[kind].append(time.perf_counter() - t)
                    timing.on = ""
            r50 = p50(raw)
            lines.append(
                f"add p50 ms (one message, real model): raw embedding {r50:.1f}, "
                + ", ".join(f"{k} {p50(v):.1f} ({p50(v) / r50:.2f}x)" for k, v in added.items())
            )
            calls = {"recall": len(asked), "feedback": len(asked), "add": max(1, args.adds)}
            for phase, by_what in timing.by_what.items():
                lines.append(
                    f"postgres {phase} exchanges by kind (calls per call, p50 ms, total s): "
                    + "; ".join(
                        f"{w} {len(v) / calls[phase]:.2f} {p50(v):.1f} {sum(v):.2f}"
                        for w, v in sorted(by_what.items(), key=lambda kv: -sum(kv[1]))
                    )
                )
            for m in [*mems.values(), *adds.values()]:
                m.close()
    finally:
        if server is not None and args.keep_log:
            import shutil

            shutil.copy(server.root / "log", args.keep_log)
        if server is not None:
            server.stop()
    import os

    lines.append(f"load (uptime): {os.getloadavg()}")
    report = "\n".join(lines)
    print(report)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write("\n```\n" + report + "\n```\n")


if __name__ == "__main__":
    main()

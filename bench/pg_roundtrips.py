"""Round trips and statements per recall on PostgreSQL, counted two ways.

* statements: PostgreSQL's own statement log (``log_statement=all``) of a throwaway server
  (tests/pg.py): the lines one recall adds, between two marker statements;
* exchanges (round trips): the store's calls to the server, counted by wrapping
  ``PostgresStore._tx`` (one statement, or one pipelined batch sent and answered together).

It loads the first LoCoMo conversations with the real model (the speaker and session metadata
``_locomo.ingest`` gives them), asks their questions, and prints per-recall counts, plus
whether keyword search returns the same top 10 with the same scores as the exact BM25 formula.

    python bench/pg_roundtrips.py [--conversations 2] [--questions 40] [--feedback]

``--feedback``: each recall is followed (outside the counted span) by ``feedback`` with the
question's gold answer as the reply, and the questions are asked twice: the second pass counts
recalls of a store holding feedback records (reply signals), reported on their own.
``--set KEY=JSON``: a Config setting (e.g. ``feedback_edge_context=false``).
``--src DIR``: run another checkout's ``src`` (e.g. main's, for the "before" figures).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import DEFAULT_DATA, ROOT, machine

sys.path.insert(0, str(ROOT / "src"))


def _pg_helper() -> Any:
    spec = importlib.util.spec_from_file_location("engrammar_tests_pg", ROOT / "tests" / "pg.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _dia(mem: Any, scope: Any, hits: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Hits as (dia_id, score): memory ids differ between two stores."""
    records = mem.store.get_memories(scope.workspace, [i for i, _ in hits])
    return [(records[i].metadata.get("dia_id", i), s) for i, s in hits]


def _same_ranking(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    """The same scores in the same order, and the same memories above the last score (hits
    tied at the cut-off may differ: both stores order ties differently). Scores to 1e-4: the
    embedded index sums in another order and precision (differences of ~1e-5 on LoCoMo)."""
    if len(a) != len(b) or any(abs(x[1] - y[1]) > 1e-4 for x, y in zip(a, b, strict=True)):
        return False
    if not a:
        return True
    cut = a[-1][1] + 1e-4
    return {d for d, s in a if s > cut} == {d for d, s in b if s > cut}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--conversations", type=int, default=2)
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--out", default="")
    ap.add_argument(
        "--plain",
        action="store_true",
        help="without read sessions: every read its own statement (what main did before)",
    )
    ap.add_argument("--feedback", action="store_true", help="feedback after each recall, 2 passes")
    ap.add_argument("--src", default="", help="another checkout's src folder to run")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="a Config setting for the PostgreSQL store, e.g. feedback_edge_context=true",
    )
    args = ap.parse_args()
    if args.src:
        sys.path.insert(0, str(Path(args.src).resolve()))

    import psycopg

    import _locomo as ev
    from engrammar import Config, Memory
    from engrammar.models import Scope
    from engrammar.store.postgres.store import PostgresStore
    from engrammar.store.sqlite.store import SQLiteStore

    # An exchange: one call of the store to the server (one statement, or one pipelined
    # batch of statements sent together and answered together).
    waits = [0]
    original_tx = PostgresStore._tx

    def counting_tx(self: Any, *args: Any, **kw: Any) -> Any:
        waits[0] += 1
        return original_tx(self, *args, **kw)

    PostgresStore._tx = counting_tx  # type: ignore[method-assign]
    if args.plain:
        import contextlib

        from engrammar.store.postgres.search import PostgresSearch

        PostgresSearch.reading = (  # type: ignore[method-assign, assignment]
            lambda self, *a, **kw: contextlib.nullcontext()
        )

    pg = _pg_helper()
    bindir, why = pg.find_bindir()
    if bindir is None:
        sys.exit(why)
    server = pg.PgServer(
        bindir,
        options=pg.PgServer.TEST_OPTIONS + " -c log_statement=all -c log_line_prefix='%p '",
    )
    server.start()
    log = server.root / "log"
    try:
        url = server.new_database()
        data = ev.load(args.data)[: args.conversations]
        tmp = Path(tempfile.mkdtemp(prefix="engrammar-rt-"))
        settings = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}
        mem = Memory(Config(path=str(tmp / "pg"), store=url, **settings))
        lite = Memory(Config(path=str(tmp / "lite")))
        for sample in data:
            ev.ingest(mem, sample)
            ev.ingest(lite, sample)
        ref = ev.referee(ev.referee_path(args.data))
        qs = ev.questions(ref, data)[: args.questions]
        mem.recall("warm up the pool", user_id=str(data[0]["sample_id"]))
        marker = psycopg.connect(server.url(url.rsplit("/", 1)[1]), autocommit=True)
        statements: list[int] = []
        trips: list[int] = []
        per_kind: dict[str, int] = {}
        same_top = 0
        passes = 2 if args.feedback else 1
        for q in qs * passes:
            marker.execute("SELECT 'rt-marker-begin'")
            waits[0] = 0
            result = mem.recall(q["question"], user_id=q["sample_id"], limit=10)
            trips.append(waits[0])
            # A recall record sent without waiting (store/postgres/recall_write.py) is answered
            # first, so that its statement lands before the end marker (not counted as a wait).
            getattr(mem.store, "_recall_writes_done", lambda: None)()
            marker.execute("SELECT 'rt-marker-end'")
            time.sleep(0.05)
            text = log.read_text(errors="replace")
            body = text[text.rindex("rt-marker-begin") : text.rindex("rt-marker-end")]
            body = body[: body.rfind("\n")]  # the end marker's own line, cut short
            lines = [
                ln for ln in body.splitlines() if "LOG:  statement:" in ln or "LOG:  execute" in ln
            ][1:]  # the first is the begin marker itself
            lines = [ln for ln in lines if "rt-marker" not in ln]
            statements.append(len(lines))
            if args.feedback:
                reply = str(q.get("answer") or "I do not know.")
                mem.feedback(response=reply, user_id=q["sample_id"], recall_id=result.recall_id)
            for ln in lines:
                head = re.split(r"statement: |execute [^:]*: ", ln, maxsplit=1)[-1]
                head = " ".join(head.split())[:40] or "(a statement of several lines)"
                per_kind[head] = per_kind.get(head, 0) + 1
            scope = Scope(mem.config.workspace, str(q["sample_id"]))
            assert isinstance(lite.store, SQLiteStore)
            a = mem.store.keyword_search(scope, q["question"], 10)
            b = lite.store.keyword_search(scope, q["question"], 10)
            if _same_ranking(_dia(mem, scope, a), _dia(lite, scope, b)):
                same_top += 1
        marker.close()

        def spread(values: list[int]) -> dict[str, float]:
            return {"mean": statistics.mean(values), "max": max(values), "min": min(values)}

        n = len(qs)
        out: dict[str, Any] = {
            "machine": machine(),
            "command": "python bench/pg_roundtrips.py " + " ".join(sys.argv[1:]),
            "engrammar": str(Path(sys.modules["engrammar"].__file__ or "").parent),
            "read_sessions": not args.plain,
            "settings": settings,
            "load": os.getloadavg(),
            "recalls": len(trips),
            "statements_per_recall": {
                "mean": statistics.mean(statements),
                "max": max(statements),
                "min": min(statements),
            },
            "exchanges_per_recall": {
                "mean": statistics.mean(trips),
                "max": max(trips),
                "min": min(trips),
            },
            **(
                {
                    "first_pass_no_records_at_start": {
                        "statements": spread(statements[:n]),
                        "exchanges": spread(trips[:n]),
                    },
                    "second_pass_with_reply_signals": {
                        "statements": spread(statements[n:]),
                        "exchanges": spread(trips[n:]),
                    },
                }
                if args.feedback
                else {}
            ),
            "statement_kinds": dict(sorted(per_kind.items(), key=lambda kv: -kv[1])[:25]),
            "keyword_top10_same_as_sqlite": f"{same_top} / {len(trips)}",
        }
        print(json.dumps(out, indent=2))
        if args.out:
            Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
        mem.close()
        lite.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()

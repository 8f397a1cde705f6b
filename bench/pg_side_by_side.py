"""Two versions of engrammar's code on PostgreSQL side by side in ONE process, with SQLite as
the reference: recall and feedback p50, exchanges per recall.

    python bench/pg_side_by_side.py --other-src ../main/src --other-url URL --this-url URL \\
        --sqlite-path DIR [--recalls 200]

``--other-src`` is the ``src`` folder of another checkout (e.g. main); its package is copied
under the name ``engrammar_other`` (the package imports itself relatively), so both versions
run in this process. Each PostgreSQL version gets its own copy of one filled store
(``CREATE DATABASE ... TEMPLATE``), SQLite a copy of the matching folder (filled as
``bench/pg_scope.py`` fills them: LoCoMo texts in one user scope ``u``). Question by question,
the order of the three rotating, each recall is followed by ``feedback`` with the gold answer
(as pg_scope does), so all see the same machine load: on a shared, busy machine this compares
two versions far more steadily than two pg_scope runs one after the other. The first half of
the recalls runs on stores without feedback records; the second asks the same questions again.
Exchanges are ``PostgresStore._tx`` calls (one statement or one pipelined batch each).

``--adds N`` (with ``--other-adds-url``, ``--this-adds-url``: empty databases, or copies of
filled ones with ``--add-user u``) then adds N LoCoMo messages one at a time with the real
model (embedding cache off) to both versions and SQLite (a fresh one, or a copy of
``--add-sqlite-path``), alternating with the raw embedding of the same text, the order
rotating: add p50 over the raw embedding's p50, and exchanges per add.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from _common import load_other_engrammar  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--other-src", required=True)
    ap.add_argument("--other-url", required=True, help="the other version's PostgreSQL store")
    ap.add_argument("--this-url", required=True, help="this version's PostgreSQL store")
    ap.add_argument("--sqlite-path", required=True)
    ap.add_argument("--data", default=str(ROOT / "../shared/data/locomo10.json"))
    ap.add_argument("--n", type=int, default=3000, help="memories the stores were filled with")
    ap.add_argument("--recalls", type=int, default=200)
    ap.add_argument("--adds", type=int, default=0, help="then this many adds (real model)")
    ap.add_argument("--other-adds-url", default="", help="with --adds: an empty database")
    ap.add_argument("--this-adds-url", default="", help="with --adds: an empty database")
    ap.add_argument("--add-sqlite-path", default="", help="with --adds: a store to copy")
    ap.add_argument(
        "--add-user", default="adder", help="the adds' user (u: the filled stores' own scope)"
    )
    args = ap.parse_args()
    engrammar_other = load_other_engrammar(args.other_src)
    from engrammar_other.store.postgres import PostgresStore as OtherStore  # type: ignore[import-not-found]

    import engrammar
    from engrammar.embed.onnx import MiniLMEmbedder
    from engrammar.store.postgres.store import PostgresStore
    from pg_scope import texts_and_vectors
    from store_bench import Precomputed

    _, qs, table, gold = texts_and_vectors(Path(args.data), args.n)
    emb = MiniLMEmbedder()
    asked = qs[:: max(1, len(qs) // 100)][:100]  # pg_scope's 100 questions
    asked = (asked * (args.recalls // len(asked) + 1))[: args.recalls]
    replies = [gold.get(q, "I do not know.") for q in asked]
    for text, vec in zip(replies, emb.embed(replies), strict=True):
        table.setdefault(text, vec)
    # [exchanges in the current recall, {what: [seconds]} of all, {what: [seconds]} in recalls]
    count: dict[str, list[Any]] = {"other": [0, {}, {}], "this": [0, {}, {}]}
    in_recall = [False]

    def counting(cls: Any, label: str) -> None:
        original = cls._tx

        def tx(self: Any, what: str, *a: Any, **kw: Any) -> Any:
            count[label][0] += 1
            t = time.perf_counter()
            try:
                return original(self, what, *a, **kw)
            finally:
                took = time.perf_counter() - t
                count[label][1].setdefault(what, []).append(took)
                if in_recall[0]:
                    count[label][2].setdefault(what, []).append(took)

        cls._tx = tx

    counting(OtherStore, "other")
    counting(PostgresStore, "this")
    mems: dict[str, Any] = {
        "other": engrammar_other.Memory(
            engrammar_other.Config(store=args.other_url, embed_cache_size=0),
            embedder=Precomputed(emb, table),
        ),
        "this": engrammar.Memory(
            engrammar.Config(store=args.this_url, embed_cache_size=0),
            embedder=Precomputed(emb, table),
        ),
        "sqlite": engrammar.Memory(
            engrammar.Config(path=args.sqlite_path, embed_cache_size=0),
            embedder=Precomputed(emb, table),
        ),
    }
    for q in asked[:10]:  # warm-up
        for m in mems.values():
            m.recall(q, user_id="u")
    for c in count.values():
        c[0] = 0
        c[1].clear()
        c[2].clear()
    lat: dict[str, list[float]] = {k: [] for k in mems}
    fb: dict[str, list[float]] = {k: [] for k in mems}
    ex: dict[str, list[int]] = {"other": [], "this": []}
    fx: dict[str, list[int]] = {"other": [], "this": []}
    order = list(mems)
    start_load = os.getloadavg()
    for i, (q, reply) in enumerate(zip(asked, replies, strict=True)):
        for kind in order[i % 3 :] + order[: i % 3]:
            mem = mems[kind]
            if kind in count:
                count[kind][0] = 0
            in_recall[0] = True
            t = time.perf_counter()
            result = mem.recall(q, user_id="u")
            lat[kind].append(time.perf_counter() - t)
            in_recall[0] = False
            if kind in count:
                ex[kind].append(count[kind][0])
            if kind in count:
                count[kind][0] = 0
            t = time.perf_counter()
            mem.feedback(response=reply, user_id="u", recall_id=result.recall_id)
            fb[kind].append(time.perf_counter() - t)
            if kind in count:
                fx[kind].append(count[kind][0])

    def p50(v: list[float]) -> float:
        return statistics.median(v) * 1000

    lines = [
        "command: python " + " ".join(sys.argv),
        f"{len(asked)} recalls, each followed by feedback, order rotating; load average at "
        f"start {start_load}, at end {os.getloadavg()}",
    ]
    half = len(asked) // 2
    parts = (
        ("first half (no feedback records at the start)", slice(0, half)),
        ("second half (the same questions again)", slice(half, None)),
    )
    for name, part in parts if asked else ():
        lines.append(name)
        for k in mems:
            a, f = lat[k][part], fb[k][part]
            line = (
                f"  {k}: recall p50 {p50(a):.1f} ms ({p50(a) / p50(lat['sqlite'][part]):.2f}x "
                f"sqlite), feedback p50 {p50(f):.1f} ms ({p50(f) / p50(fb['sqlite'][part]):.2f}x)"
            )
            if k in ex:
                line += (
                    f", exchanges per recall mean {statistics.mean(ex[k][part]):.2f}, "
                    f"per feedback {statistics.mean(fx[k][part]):.2f}"
                )
            lines.append(line)
    for k in count:
        lines.append(
            f"{k} exchanges by kind (count, p50 ms): "
            + "; ".join(
                f"{w} {len(v)} {p50(v):.1f}"
                for w, v in sorted(count[k][1].items(), key=lambda kv: -sum(kv[1]))
            )
        )
    for k in count:
        lines.append(
            f"{k} exchanges in recalls by kind (per recall, p50 ms): "
            + "; ".join(
                f"{w} {len(v) / len(asked):.2f} {p50(v):.1f}"
                for w, v in sorted(count[k][2].items(), key=lambda kv: -sum(kv[1]))
            )
        )
    for m in mems.values():
        m.close()
    if args.adds:
        lines += adds(args, emb, engrammar, engrammar_other, count)
    print("\n".join(lines))


def adds(args: Any, emb: Any, this: Any, other: Any, count: dict[str, list[Any]]) -> list[str]:
    """Add p50 of both versions and SQLite against the raw embedding, alternating."""
    from engrammar.embed.onnx import MiniLMEmbedder
    from store_bench import locomo_rows

    rows, _ = locomo_rows(Path(args.data), args.adds)
    folder = tempfile.mkdtemp(prefix="engrammar-adds-")
    if args.add_sqlite_path:
        shutil.rmtree(folder)
        shutil.copytree(args.add_sqlite_path, folder)
    mems = {
        "other": other.Memory(
            other.Config(store=args.other_adds_url, embed_cache_size=0), embedder=MiniLMEmbedder()
        ),
        "this": this.Memory(
            this.Config(store=args.this_adds_url, embed_cache_size=0), embedder=MiniLMEmbedder()
        ),
        "sqlite": this.Memory(
            this.Config(path=folder, embed_cache_size=0), embedder=MiniLMEmbedder()
        ),
    }
    took: dict[str, list[float]] = {k: [] for k in [*mems, "raw"]}
    ex: dict[str, list[int]] = {"other": [], "this": []}
    for c in count.values():
        c[1].clear()
    order = [*mems, "raw"]
    start_load = os.getloadavg()
    for i, r in enumerate(rows[: args.adds]):
        text = f"{r[3]} ({i})"
        for kind in order[i % 4 :] + order[: i % 4]:
            if kind in count:
                count[kind][0] = 0
            t = time.perf_counter()
            if kind == "raw":
                emb.embed([text])
            else:
                mems[kind].add(text, user_id=args.add_user, session_id="s1", dedup=False)
            took[kind].append(time.perf_counter() - t)
            if kind in count:
                ex[kind].append(count[kind][0])
    for m in mems.values():
        m.close()
    shutil.rmtree(folder, ignore_errors=True)
    raw = statistics.median(took["raw"]) * 1000
    out = [
        f"{args.adds} adds (one message, real model), order rotating; load average at start "
        f"{start_load}, at end {os.getloadavg()}; raw embedding p50 {raw:.1f} ms"
    ]
    for k in mems:
        p = statistics.median(took[k]) * 1000
        line = f"  {k}: add p50 {p:.1f} ms ({p / raw:.2f}x raw)"
        if k in ex:
            line += f", exchanges per add mean {statistics.mean(ex[k]):.2f}"
        out.append(line)
    for k in count:
        out.append(
            f"{k} add exchanges by kind (count, p50 ms): "
            + "; ".join(
                f"{w} {len(v)} {statistics.median(v) * 1000:.1f}"
                for w, v in sorted(count[k][1].items(), key=lambda kv: -sum(kv[1]))
            )
        )
    return out


if __name__ == "__main__":
    main()

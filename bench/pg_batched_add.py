"""Batched add against the raw embedding, two code versions on PostgreSQL and this version on
SQLite, side by side in ONE process (target: add <= 1.4x the raw embedding, measured as
bench/peers.py measures batched ingest: calls of 1,000 LoCoMo turns).

    python bench/pg_batched_add.py --other-src ../base/src [--calls 5] [--size 1000] \\
        [--scope new|one] [--out bench/results/pg_batched_add]

Each call adds the next ``--size`` LoCoMo turns (speaker as the message's name) to every
system in turn, the order rotating; each system's add embeds through a recorder, and the raw
embedder then embeds exactly the texts that add embedded (chunk windows included), in the same
calls, right after it: the ratio is add time over that raw time, summed over the calls after
the first (which creates the vector indexes). ``--scope new``: each call into a user scope of
its own (the store grows, the scopes do not); ``one``: every call into the same user scope (it
grows to calls x size; past 2,000 memories its searches walk the HNSW graph). The tension
rules' caches are emptied before every add, so that no system parses what another parsed.

A throwaway PostgreSQL server (tests/pg.py's helper, its test options) holds one empty
database per version; SQLite gets an empty folder.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))
from _common import load_other_engrammar, machine  # noqa: E402


def turns(path: Path) -> list[dict[str, Any]]:
    out = []
    for conv in json.loads(path.read_text()):
        c = conv["conversation"]
        for key in sorted(c):
            if key.startswith("session_") and isinstance(c[key], list):
                out += [
                    {"role": "user", "content": t["text"], "metadata": {"speaker": t["speaker"]}}
                    for t in c[key]
                ]
    return out


class Recorder:
    """The embedder an add uses: the texts of every call kept, to be embedded raw after."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.dim, self.calls = inner, inner.dim, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed(self, texts: Any) -> Any:
        self.calls.append(list(texts))
        return self.inner.embed(texts)


def clear_parse_caches(package: Any) -> None:
    for name in ("tension_read",):
        module = sys.modules.get(f"{package.__name__}.recall.{name}")
        for value in vars(module).values() if module is not None else ():
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--other-src", required=True, help="the src folder of the other version")
    ap.add_argument("--data", default=str(ROOT / "../shared/data/locomo10.json"))
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--scope", choices=("new", "one"), default="new")
    ap.add_argument("--out", default="")
    args = ap.parse_args()

    import psycopg

    import engrammar
    import pg
    from engrammar.embed.onnx import MiniLMEmbedder

    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    other = load_other_engrammar(args.other_src)
    data = turns(Path(args.data))
    if len(data) < args.calls * args.size:
        raise SystemExit(f"{len(data)} turns: fewer than {args.calls} x {args.size}")
    bindir, reason = pg.find_bindir()
    if bindir is None:
        raise SystemExit(f"no PostgreSQL: {reason}")
    server = pg.PgServer(bindir)
    server.start()
    try:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            for name in ("other_pg", "this_pg"):
                conn.execute(f"CREATE DATABASE {name}")
        inner = MiniLMEmbedder()
        systems: dict[str, tuple[Any, Recorder, Any]] = {}
        for name, package, store in (
            ("PostgreSQL, other", other, server.url("other_pg")),
            ("PostgreSQL, this", engrammar, server.url("this_pg")),
            ("SQLite, this", engrammar, None),
        ):
            rec = Recorder(inner)
            config = (
                package.Config(store=store, embed_cache_size=0)
                if store
                else package.Config(path=tempfile.mkdtemp(), embed_cache_size=0)
            )
            systems[name] = (package.Memory(config, embedder=rec), rec, package)
        names = list(systems)
        per_call: dict[str, list[dict[str, float]]] = {n: [] for n in names}
        for i in range(args.calls):
            batch = data[i * args.size : (i + 1) * args.size]
            user = "u" if args.scope == "one" else f"u{i}"
            order = names[i % len(names) :] + names[: i % len(names)]
            for name in order:
                mem, rec, package = systems[name]
                clear_parse_caches(engrammar)
                clear_parse_caches(other)
                rec.calls.clear()
                start = time.perf_counter()
                mem.add(batch, user_id=user)
                added = time.perf_counter() - start
                start = time.perf_counter()
                for texts in rec.calls:
                    inner.embed(texts)
                raw = time.perf_counter() - start
                texts_embedded = sum(map(len, rec.calls))
                per_call[name].append({"add_s": added, "raw_s": raw, "texts": texts_embedded})
            print(i, {n: round(per_call[n][-1]["add_s"] / per_call[n][-1]["raw_s"], 3)
                      for n in names}, flush=True)  # fmt: skip
        summary = {}
        for name in names:
            rest = per_call[name][1:]
            add_s, raw_s = sum(c["add_s"] for c in rest), sum(c["raw_s"] for c in rest)
            summary[name] = {"add_s": add_s, "raw_s": raw_s, "ratio": add_s / raw_s}
        for mem, _, _ in systems.values():
            mem.close()
    finally:
        server.stop()
    report = {
        "machine": machine(),
        "command": "python bench/pg_batched_add.py " + " ".join(sys.argv[1:]),
        "postgres": str(bindir),
        "started": started,
        "args": vars(args),
        "per_call": per_call,
        "summary": summary,
    }
    lines = [
        f"# Batched add against the raw embedding ({args.calls} calls of {args.size}, "
        f"scope: {args.scope})",
        "",
        f"`{report['command']}`, {report['started']}; machine: {report['machine']['cpu']}, "
        f"{report['machine']['cores']} cores, load at start {report['machine']['load_avg_at_start']}.",
        "",
        "| system | add (s, calls 2+) | raw embedding of the same texts (s) | add / raw | per call |",
        "|---|---|---|---|---|",
    ]
    for name in names:
        s = summary[name]
        calls = ", ".join(f"{c['add_s'] / c['raw_s']:.2f}" for c in per_call[name])
        lines.append(
            f"| {name} | {s['add_s']:.1f} | {s['raw_s']:.1f} | {s['ratio']:.2f}x | {calls} |"
        )
    print("\n".join(lines))
    if args.out:
        Path(args.out + ".json").write_text(json.dumps(report, indent=1))
        Path(args.out + ".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""Recall with long queries: a pasted text of up to 76,000 characters, of several shapes.

    python bench/long_queries.py [--turns 1000] [--rounds 3] [--out bench/results]

One scope of LoCoMo turns (real MiniLM int8 embeddings). For each shape and length, the
quickest of ``--rounds`` recalls after one that warms the caches (the query's vector among
them: what is timed is recall besides the model) and, beside it, the model's embedding of the
same text alone (it reads at most 256 word pieces). Recall's time should grow with the text's
length, not faster. Writes bench/results/long_queries.md.
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA, RESULTS, load_locomo, locomo_turns, machine
from engrammar import Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder

LENGTHS = (1_000, 10_000, 76_000)


def shapes(words: list[str], seed: int) -> dict[str, Callable[[int], str]]:
    """Texts of ``n`` characters: prose, and the repeats that once made a check read the
    whole text again for each word it found."""
    rng = random.Random(seed)

    def prose(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n // 4))[:n]

    def repeat(unit: str) -> Callable[[int], str]:
        return lambda n: (unit * (n // len(unit) + 1))[:n]

    return {
        "prose (LoCoMo words)": prose,
        '"did Melanie " repeated': repeat("did Melanie "),
        '"Melanie\'s cat. " repeated': repeat("Melanie's cat. "),
        '"12 May 2023 " repeated': repeat("12 May 2023 "),
        '"Was it my old job?" lines': repeat("Was it my old job?\n"),
    }


def quickest(call: Callable[[], object], rounds: int) -> float:
    call()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    turns = locomo_turns(load_locomo(Path(args.data)))[: args.turns]
    words = [w for t in turns for w in t["text"].split()]
    embedder = MiniLMEmbedder()
    started = machine()
    rows = []
    with (
        tempfile.TemporaryDirectory() as folder,
        Memory(Config(path=folder), embedder=embedder) as mem,
    ):
        mem.add(
            [{"role": "user", "content": t["text"], "name": t["speaker"]} for t in turns],
            user_id="u",
        )
        for shape, make in shapes(words, args.seed).items():
            for n in LENGTHS:
                text = make(n)
                recall_s = quickest(
                    lambda q=text: mem.recall(q, user_id="u", limit=10), args.rounds
                )
                embed_s = quickest(lambda q=text: embedder.embed([q]), args.rounds)
                rows.append((shape, n, recall_s, embed_s))
                print(
                    f"{shape:32} {n:6} recall {recall_s * 1e3:8.1f} ms  embed {embed_s * 1e3:7.1f} ms"
                )
    lines = [
        "# Recall with long queries",
        "",
        f"Command: `{shlex.join(['python', 'bench/long_queries.py', *sys.argv[1:]])}` · "
        f"machine: {started['cpu']}, {started['cores']} cores, Python {started['python']}, "
        f"load average at start {tuple(round(x, 2) for x in started['load_avg_at_start'])} · date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        "",
        f"One scope of {len(turns)} LoCoMo turns, real MiniLM int8 embeddings, `limit` 10. "
        f"Each figure is the quickest of {args.rounds} calls after one that warms the caches, "
        "the query's vector among them: `recall` is recall besides the model. `embed` is the "
        "model's embedding of the same text alone, uncached (it reads at most 256 word pieces "
        "of it).",
        "",
        "| query | characters | recall | recall per 1,000 characters | embed |",
        "|---|---|---|---|---|",
    ]
    for shape, n, recall_s, embed_s in rows:
        lines.append(
            f"| {shape} | {n:,} | {recall_s * 1e3:.1f} ms | {recall_s * 1e6 / n:.2f} ms | "
            f"{embed_s * 1e3:.1f} ms |"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "long_queries.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / 'long_queries.md'}")


if __name__ == "__main__":
    main()

"""Does this checkout rank exactly as another version of the code? For speed work, which must not
change what recall returns.

    python bench/same_ranking.py --base REV [--questions 200] [--store DIR] [--time 2]

Two scopes, each filled once (by this checkout) and copied for each version: one LoCoMo
conversation added as ``bench/ranking.py`` adds its rich protocol (speakers as ``name``, session
dates), and the dev-S scope ``bench/speed.py`` times (the first fresh question's haystack, every
turn with its role, the assistant's long answers with window vectors). Each version (``REV``'s
``src/`` is loaded beside this one as ``engrammar_other``) asks the same ``--questions``
questions of each scope (``limit`` 50, the clock frozen at one instant for both, one query
embedding shared by both); every returned field is compared: ids, order, scores, every score
component, excerpts, paths, tensions, preferences and the formatted text. Prints how many
recalls are identical and the first difference, if any; exits 1 on any difference.

``--time N``: then, side by side in one run (the same moments of a loaded machine), each
version answers every question of each scope N more times, one call of each in turn, and the
p50 of their time per recall is printed (wall and the process's CPU). Query vectors are
embedded once before, so the figures are what recall costs besides embedding the query.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import engrammar  # noqa: E402
from _common import DEFAULT_DATA, load_locomo, load_other_engrammar  # noqa: E402
from _embcache import DiskCachedEmbedder  # noqa: E402
from engrammar.embed.onnx import MiniLMEmbedder  # noqa: E402
from ranking import SHARED, ingest_lme, lme_date, locomo_sessions  # noqa: E402


class Shared:
    """One embedder both versions ask: each text embedded once, so both see the same vector."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self._seen: dict[str, np.ndarray] = {}

    def embed(self, texts: Any) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._seen]
        if missing:
            for t, v in zip(missing, self.inner.embed(missing), strict=True):
                self._seen[t] = v
        return np.stack([self._seen[t] for t in texts]) if texts else self.inner.embed(texts)


def base_source(rev: str, into: Path) -> Path:
    """``rev``'s ``src/`` (``git archive``), extracted under ``into``."""
    tar = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src/engrammar"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(into, filter="data")
    return into / "src"


def fill(store: Path, questions: int) -> dict[str, tuple[str, float | None, list[str]]]:
    """The two scopes (filled once under ``store``): scope name -> (user, as_of, questions)."""
    done = store / "scopes.json"
    if done.exists():
        return {k: (u, a, q) for k, (u, a, q) in json.loads(done.read_text()).items()}
    cfg = engrammar.Config(path=str(store), embed_cache_size=0, max_content_chars=1_000_000)
    conv = next(c for c in load_locomo(DEFAULT_DATA) if len(c["qa"]) >= questions)
    data_file = store / "devs.json"
    subprocess.run(
        [sys.executable, str(SHARED / "eval" / "lme_dev.py"), str(data_file), "--set", "s"],
        check=True,
        capture_output=True,
    )
    devs = json.loads(data_file.read_text())
    entry = next(e for e in devs if e.get("fresh"))
    with engrammar.Memory(cfg, embedder=DiskCachedEmbedder(MiniLMEmbedder())) as m:
        user = conv["sample_id"]
        for n, messages in enumerate(locomo_sessions(conv, rich=True)):
            m.add(messages, user_id=user, session_id=f"{user}/{n}")
        ingest_lme(m, [entry], {"user", "assistant"})
    scopes = {
        "locomo": (user, None, [q["question"] for q in conv["qa"]][:questions]),
        "devs-agent": (
            entry["question_id"],
            lme_date(entry["question_date"]).timestamp() + 86_399,
            [e["question"] for e in devs][:questions],
        ),
    }
    done.write_text(json.dumps(scopes))
    return scopes


def answers(
    package: Any, store: Path, embedder: Shared, scopes: dict[str, Any]
) -> dict[str, list[dict[str, Any]]]:
    cfg = package.Config(path=str(store), embed_cache_size=0, max_content_chars=1_000_000)
    out: dict[str, list[dict[str, Any]]] = {}
    with package.Memory(cfg, embedder=embedder) as m:
        for name, (user, as_of, questions) in scopes.items():
            got = []
            for q in questions:
                r = m.recall(q, user_id=user, limit=50, as_of=as_of).to_dict()
                r.pop("recall_id")
                got.append(r)
            out[name] = got
    return out


def timed(
    packages: dict[str, Any], stores: dict[str, Path], embedder: Shared, scopes: dict, rounds: int
) -> None:
    mems = {
        label: package.Memory(
            package.Config(
                path=str(stores[label]), embed_cache_size=0, max_content_chars=1_000_000
            ),
            embedder=embedder,
        )
        for label, package in packages.items()
    }
    try:
        for name, (user, as_of, questions) in scopes.items():
            wall: dict[str, list[float]] = {label: [] for label in mems}
            cpu: dict[str, list[float]] = {label: [] for label in mems}
            for _ in range(rounds):
                for q in questions:
                    for label, m in mems.items():
                        t, c = time.perf_counter(), time.process_time()
                        m.recall(q, user_id=user, limit=50, as_of=as_of)
                        wall[label].append(time.perf_counter() - t)
                        cpu[label].append(time.process_time() - c)
            p50 = {k: statistics.median(v) * 1000 for k, v in wall.items()}
            c50 = {k: statistics.median(v) * 1000 for k, v in cpu.items()}
            print(
                f"{name} time per recall besides the query embedding, p50 of "
                f"{len(wall['this'])}: base {p50['base']:.2f} ms wall / {c50['base']:.2f} ms "
                f"CPU; this {p50['this']:.2f} / {c50['this']:.2f} ms "
                f"(this / base: {p50['this'] / p50['base']:.3f} wall, "
                f"{c50['this'] / c50['base']:.3f} CPU)"
            )
    finally:
        for m in mems.values():
            m.close()


def first_difference(a: Any, b: Any, at: str = "") -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):  # the same keys in the same order
            return f"{at}: keys {list(a)} against {list(b)}"
        for k in a:
            found = first_difference(a[k], b[k], f"{at}.{k}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{at}: {len(a)} items against {len(b)}"
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{at}[{k}]")
            if found:
                return found
        return None
    return None if a == b else f"{at}: {a!r} against {b!r}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--base", required=True, help="git revision to compare against")
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--store", help="where the filled scopes are kept (default: a temp dir)")
    ap.add_argument("--time", type=int, default=0, help="rounds of side-by-side timing")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        other = load_other_engrammar(base_source(args.base, tmp / "base"))
        store = Path(args.store) if args.store else tmp / "store"
        store.mkdir(parents=True, exist_ok=True)
        scopes = fill(store, args.questions)
        embedder = Shared(MiniLMEmbedder())
        frozen = time.time()
        real = time.time
        time.time = lambda: frozen  # both versions read the clock through the time module
        packages = {"base": other, "this": engrammar}
        copies = {label: tmp / f"copy-{label}" for label in packages}
        try:
            runs = {}
            for label, package in packages.items():
                shutil.copytree(store, copies[label], ignore=shutil.ignore_patterns("*.json"))
                runs[label] = answers(package, copies[label], embedder, scopes)
        finally:
            time.time = real
        if args.time:
            timed(packages, copies, embedder, scopes, args.time)
    same_all = True
    for name in scopes:
        a, b = runs["base"][name], runs["this"][name]
        diffs = [
            first_difference(x, y, f"{name}[{k}]")
            for k, (x, y) in enumerate(zip(a, b, strict=True))
        ]
        diffs = [d for d in diffs if d]
        listed = sum(len(x["memories"]) for x in a)
        print(
            f"{name}: {len(a) - len(diffs)} of {len(a)} recalls identical ({listed} memories "
            "listed: ids, order, scores, components, excerpts, paths, tensions, formatted)"
        )
        if diffs:
            same_all = False
            print("  first difference:", diffs[0])
    sys.exit(0 if same_all else 1)


if __name__ == "__main__":
    main()

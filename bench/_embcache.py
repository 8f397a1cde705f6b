"""An embedder that keeps every vector it computed on disk, for benchmarks that re-ingest.

LongMemEval's dev set holds ~58k distinct messages (~150k with repeats across questions);
embedding them takes a quarter of an hour on a 2-core machine, which every ingest-time
experiment would otherwise pay again. Vectors are keyed by the model's name and the text's
SHA-1 and kept in one SQLite file per model under ``~/.cache/engrammar-bench`` (never in the
repository). The wrapped model still embeds every text it has not seen, so figures do not
depend on the cache, only the time to get them.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engrammar.embed.base import Embedder

CACHE_ROOT = Path(
    os.environ.get("ENGRAMMAR_BENCH_CACHE", Path.home() / ".cache" / "engrammar-bench")
)


class DiskCachedEmbedder:
    """``inner`` with a persistent text -> vector cache; ``computed`` counts model calls' texts."""

    def __init__(self, inner: Embedder, root: Path = CACHE_ROOT) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        root.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", inner.name)
        self._db = sqlite3.connect(root / f"{safe}.sqlite", check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS v (k BLOB PRIMARY KEY, e BLOB NOT NULL)")
        self.computed = 0
        self.seconds = 0.0  # time the model spent on texts not in the cache

    @staticmethod
    def _key(text: str) -> bytes:
        return hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()

    def cached(self, texts: Sequence[str]) -> dict[bytes, np.ndarray]:
        keys = list({self._key(t) for t in texts})
        found: dict[bytes, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" * len(part))
            for k, e in self._db.execute(f"SELECT k, e FROM v WHERE k IN ({marks})", part):
                found[bytes(k)] = np.frombuffer(e, dtype=np.float32)
        return found

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import time

        texts = list(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        found = self.cached(texts)
        missing: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            hit = found.get(self._key(text))
            if hit is None:
                missing.setdefault(text, []).append(i)
            else:
                out[i] = hit
        if missing:
            todo = list(missing)
            t0 = time.perf_counter()
            vectors = self.inner.embed(todo)
            self.seconds += time.perf_counter() - t0
            self.computed += len(todo)
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO v VALUES (?, ?)",
                    [
                        (self._key(t), np.asarray(v, dtype=np.float32).tobytes())
                        for t, v in zip(todo, vectors, strict=True)
                    ],
                )
            for text, vec in zip(todo, vectors, strict=True):
                out[missing[text]] = vec
        return out

    def warm(self, texts: Sequence[str], batch: int = 512, log=print) -> int:  # type: ignore[no-untyped-def]
        """Embed every text of ``texts`` not cached yet, in large batches; returns how many."""
        unique = list(dict.fromkeys(texts))
        found = self.cached(unique)
        todo = [t for t in unique if self._key(t) not in found]
        for start in range(0, len(todo), batch):
            self.embed(todo[start : start + batch])
            if (start // batch) % 10 == 0:
                log(f"  embedded {min(start + batch, len(todo))}/{len(todo)} new texts")
        return len(todo)

    def save(self) -> None:
        """Nothing to do: every new vector is committed as it is computed (kept for callers
        written against the earlier file-per-run cache)."""

    def close(self) -> None:
        self._db.close()

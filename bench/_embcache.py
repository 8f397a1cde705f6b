"""An embedder that keeps every vector it computed on disk, outside the repository.

Benchmarks embed the same texts run after run; the cache makes a re-run cost only the
retrieval. The folder is ``$ENGRAMMAR_BENCH_CACHE`` or ``~/.cache/engrammar-bench``; one file
per model, keyed by the SHA-1 of each text.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engrammar.embed.base import Embedder


def cache_dir() -> Path:
    return Path(
        os.environ.get("ENGRAMMAR_BENCH_CACHE") or Path.home() / ".cache" / "engrammar-bench"
    )


class DiskCachedEmbedder:
    """Wraps ``inner``; ``save()`` writes the new vectors (call it when done)."""

    def __init__(self, inner: Embedder, tag: str = "") -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in inner.name + tag)
        self.path = cache_dir() / f"{safe}.npz"
        self._vectors: dict[str, np.ndarray] = {}
        self._dirty = False
        if self.path.is_file():
            with np.load(self.path) as data:
                keys, vecs = data["keys"], data["vectors"]
                self._vectors = {str(k): v for k, v in zip(keys, vecs, strict=True)}

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        todo = sorted({k for k in keys if k not in self._vectors})
        if todo:
            by_key = dict(zip(keys, texts, strict=True))
            fresh = self.inner.embed([by_key[k] for k in todo])
            for k, vec in zip(todo, fresh, strict=True):
                self._vectors[k] = np.asarray(vec, dtype=np.float32)
            self._dirty = True
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vectors[k] for k in keys]).astype(np.float32)

    def save(self) -> None:
        if not self._dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(self._vectors)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(keys), vectors=np.stack([self._vectors[k] for k in keys]))
        tmp.replace(self.path)
        self._dirty = False

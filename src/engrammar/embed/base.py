"""The Embedder protocol, an LRU cache around any embedder, and a deterministic test double."""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ..errors import EmbedderError

__all__ = ["CachedEmbedder", "Embedder", "HashEmbedder"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors.

    Contract: ``embed(texts)`` returns an array of shape ``(len(texts), dim)``, dtype float32,
    each row L2-normalised, row *i* for ``texts[i]``; the same text gives the same vector.
    ``name`` identifies the model: a store remembers the name and ``dim`` it was built with and
    refuses an embedder whose ``dim`` differs. Failures raise :class:`EmbedderError`.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: np.ndarray = (vectors / norms).astype(np.float32, copy=False)
    return out


def blend_context(
    vectors: np.ndarray,
    sources: Sequence[int | None],
    weight: float,
    before: np.ndarray | None = None,
) -> np.ndarray:
    """Each unit vector plus ``weight`` x the vector of the message it replies to, renormalised.

    ``sources[i]`` is a row of ``vectors``, -1 for ``before`` (the vector of the message stored
    just before these), or None. A reply so carries the subject of the message it answers
    without embedding any text twice.
    """
    table = vectors if before is None else np.vstack([vectors, before[None, :]])
    pairs = [
        (i, len(vectors) if src == -1 else src)
        for i, src in enumerate(sources)
        if src is not None and (src >= 0 or before is not None)
    ]
    out = vectors.copy()
    if not pairs or weight == 0:
        return out
    rows, srcs = [i for i, _ in pairs], [src for _, src in pairs]
    out[rows] = vectors[rows] + weight * table[srcs]
    return normalise(out)


class CachedEmbedder:
    """Wraps an embedder with an LRU cache of recently embedded texts (thread-safe)."""

    def __init__(self, inner: Embedder, size: int = 4096) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self._size = size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for i, text in enumerate(texts):
                hit = self._cache.get(text)
                if hit is None:
                    missing.setdefault(text, []).append(i)
                else:
                    self._cache.move_to_end(text)
                    out[i] = hit
        if missing:
            todo = list(missing)
            vectors = self.inner.embed(todo)
            if vectors.shape != (len(todo), self.dim):
                raise EmbedderError(
                    f"embedder {self.name!r} returned shape {vectors.shape}, "
                    f"expected ({len(todo)}, {self.dim})"
                )
            with self._lock:
                for text, vec in zip(todo, vectors, strict=True):
                    for i in missing[text]:
                        out[i] = vec
                    if self._size:
                        self._cache[text] = vec
                        self._cache.move_to_end(text)
                while len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        return out


_WORD = re.compile(r"[a-z0-9]+")


class HashEmbedder:
    """A deterministic, dependency-free embedder for tests: hashed words and character trigrams.

    Texts sharing words get similar vectors; it knows nothing of meaning. Use it where a test
    needs speed and determinism, never to judge recall quality.
    """

    def __init__(self, dim: int = 256) -> None:
        self.name = f"hash-{dim}"
        self.dim = dim

    def _features(self, text: str) -> list[str]:
        words = _WORD.findall(text.lower())
        grams = [f"#{w[i : i + 3]}" for w in words for i in range(max(1, len(w) - 2))]
        return words + grams

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat in self._features(text):
                h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest(), "little")
                weight = 2.0 if not feat.startswith("#") else 0.5
                out[row, h % self.dim] += weight if (h >> 32) & 1 else -weight
        return normalise(out)

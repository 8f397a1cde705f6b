"""An in-memory BM25 index over one scope's memories (pure computation, no I/O)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

__all__ = ["BM25Index"]


class BM25Index:
    """BM25 over documents addressed by a dense slot number.

    ``k1`` saturates term frequency; ``b`` weighs length normalisation (0 = none). Removing a
    document only marks its slot dead; the owner compacts by rebuilding.
    """

    def __init__(self, k1: float = 1.2, b: float = 0.1) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[int, int]] = {}
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._lengths: list[int] = []
        self._lengths_array: np.ndarray | None = None  # _lengths as floats, rebuilt on change
        self._alive: list[bool] = []
        self._total_len = 0
        self._n_alive = 0

    def __len__(self) -> int:
        return self._n_alive

    def add(self, slot: int, doc_terms: list[str]) -> None:
        while len(self._lengths) <= slot:
            self._lengths.append(0)
            self._alive.append(False)
        counts = Counter(doc_terms)
        for term, tf in counts.items():
            self._postings.setdefault(term, {})[slot] = tf
            self._arrays.pop(term, None)
        self._lengths[slot] = len(doc_terms)
        self._lengths_array = None
        self._alive[slot] = True
        self._total_len += len(doc_terms)
        self._n_alive += 1

    def remove(self, slot: int, doc_terms: list[str]) -> None:
        if slot >= len(self._alive) or not self._alive[slot]:
            return
        for term in set(doc_terms):
            posting = self._postings.get(term)
            if posting is not None:
                posting.pop(slot, None)
                self._arrays.pop(term, None)
                if not posting:
                    del self._postings[term]
        self._alive[slot] = False
        self._total_len -= self._lengths[slot]
        self._n_alive -= 1

    def _array(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        cached = self._arrays.get(term)
        if cached is None:
            posting = self._postings.get(term)
            if not posting:
                return None
            slots = np.fromiter(posting.keys(), dtype=np.int64, count=len(posting))
            tfs = np.fromiter(posting.values(), dtype=np.float32, count=len(posting))
            cached = self._arrays[term] = (slots, tfs)
        return cached

    def postings(self, term: str) -> dict[int, int]:
        """Slot -> term frequency of the live documents holding ``term`` (do not modify)."""
        return self._postings.get(term, {})

    def idf(self, term: str) -> float:
        df = len(self._postings.get(term, ()))
        n = max(self._n_alive, 1)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query_terms: list[str], size: int) -> np.ndarray:
        """BM25 score of every slot in ``range(size)`` for the query (0 where nothing matches)."""
        out = np.zeros(size, dtype=np.float32)
        if not self._n_alive:
            return out
        if self._lengths_array is None:
            self._lengths_array = np.asarray(self._lengths, dtype=np.float32)
        lengths = self._lengths_array
        avg = max(self._total_len / self._n_alive, 1e-9)
        for term, qtf in Counter(query_terms).items():
            arr = self._array(term)
            if arr is None:
                continue
            slots, tfs = arr
            norm = self.k1 * (1.0 - self.b + self.b * lengths[slots] / avg)
            contrib = self.idf(term) * tfs * (self.k1 + 1.0) / (tfs + norm)
            keep = slots < size  # slots of one posting are distinct, so += is safe
            out[slots[keep]] += qtf * contrib[keep]
        return out

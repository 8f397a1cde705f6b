"""An in-memory BM25 index over one scope's memories (pure computation, no I/O)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from itertools import chain

import numpy as np

__all__ = ["BM25Index", "TermLists", "pack_terms"]

#: Terms whose weights an index keeps between queries (forgotten at once past this many).
_WEIGHTS_KEPT = 4096


class TermLists:
    """The term lists of many documents, packed: document ``i`` holds
    ``[vocab[t] for t in term_ids[offsets[i]:offsets[i + 1]]]`` in order."""

    def __init__(self, vocab: list[str], term_ids: np.ndarray, offsets: np.ndarray) -> None:
        self.vocab = vocab
        self.term_ids = term_ids
        self.offsets = offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, doc: int) -> list[str]:
        vocab = self.vocab
        return [vocab[t] for t in self.term_ids[self.offsets[doc] : self.offsets[doc + 1]]]

    @property
    def nbytes(self) -> int:
        return self.term_ids.nbytes + self.offsets.nbytes + 60 * len(self.vocab)


def pack_terms(docs: Sequence[list[str]]) -> TermLists:
    """The term lists of many documents, packed (:class:`TermLists`): what
    :meth:`BM25Index.add_many` reads. The per-term work is C (a chain, a dict look-up)."""
    flat = list(chain.from_iterable(docs))
    vocab = {term: i for i, term in enumerate(dict.fromkeys(flat))}
    term_ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int32, count=len(flat))
    offsets = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, docs), dtype=np.int64, count=len(docs)), out=offsets[1:])
    return TermLists(list(vocab), term_ids, offsets)


class BM25Index:
    """BM25 over documents addressed by a dense slot number.

    ``k1`` saturates term frequency; ``b`` weighs length normalisation (0 = none). Removing a
    document only marks its slot dead; the owner compacts by rebuilding.

    A term's posting is a dict (slot -> term frequency) once a single document was added to
    or removed from it; :meth:`add_many` keeps postings packed as arrays (slots ascending,
    frequencies) until then, which is the form :meth:`scores` reads anyway.
    """

    def __init__(self, k1: float = 1.2, b: float = 0.1) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[int, int]] = {}
        # Packed postings of terms not in _postings, and the cached arrays of those in it.
        self._packed: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._lengths: list[int] = []
        self._lengths_array: np.ndarray | None = None  # _lengths as floats, rebuilt on change
        self._alive: list[bool] = []
        self._total_len = 0
        self._n_alive = 0
        # Per term queried since the index last changed: its postings' slots and the BM25
        # weight of each (a query term's share before its count in the query). Every change
        # moves the average length and the idf of every term: all are forgotten then.
        self._weights: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        # The query and scores of the last :meth:`scores` (None once the index changes).
        self._last: tuple[tuple[str, ...], np.ndarray] | None = None

    def __len__(self) -> int:
        return self._n_alive

    def _posting(self, term: str) -> dict[int, int] | None:
        """``term``'s posting as a dict (unpacked on first need), or None."""
        posting = self._postings.get(term)
        if posting is None:
            packed = self._packed.pop(term, None)
            if packed is None:
                return None
            slots, tfs = packed
            posting = self._postings[term] = dict(
                zip(slots.tolist(), tfs.astype(np.int64).tolist(), strict=True)
            )
        return posting

    def add(self, slot: int, doc_terms: list[str]) -> None:
        while len(self._lengths) <= slot:
            self._lengths.append(0)
            self._alive.append(False)
        postings, packed, arrays = self._postings, self._packed, self._arrays
        for term, tf in Counter(doc_terms).items():
            posting = postings.get(term)
            if posting is None:
                posting = self._posting(term) if term in packed else None
                if posting is None:
                    posting = postings[term] = {}
            posting[slot] = tf
            arrays.pop(term, None)
        self._lengths[slot] = len(doc_terms)
        self._lengths_array = None
        self._weights.clear()
        self._last = None
        self._alive[slot] = True
        self._total_len += len(doc_terms)
        self._n_alive += 1

    def add_many(self, first: int, docs: TermLists) -> None:
        """Add document ``i`` of ``docs`` at slot ``first + i``, for every ``i`` at once: the
        same index as :meth:`add` of each in turn. The slots must be new (``first`` at least
        every slot added before)."""
        n = len(docs)
        if n <= 0:
            return
        if first < len(self._lengths):
            for i in range(n):
                self.add(first + i, docs[i])
            return
        lengths = np.diff(docs.offsets)
        doc_of = np.repeat(np.arange(n, dtype=np.int64), lengths)
        # Each (term, document) pair once, with its count, sorted by term then document.
        pairs, tfs = np.unique(docs.term_ids.astype(np.int64) * n + doc_of, return_counts=True)
        term_of = pairs // n
        slots = pairs % n + first
        tf32 = tfs.astype(np.float32)
        cuts = np.flatnonzero(np.diff(term_of)) + 1
        los = np.concatenate(([0], cuts)).tolist() if len(pairs) else []
        bounds = zip(los, np.append(cuts, len(pairs)).tolist()[: len(los)], strict=True)
        vocab = docs.vocab
        for lo, hi in bounds:
            term = vocab[int(term_of[lo])]
            these = (slots[lo:hi], tf32[lo:hi])
            if term in self._postings:
                self._postings[term].update(
                    zip(these[0].tolist(), tfs[lo:hi].tolist(), strict=True)
                )
                self._arrays.pop(term, None)
            elif term in self._packed:
                old = self._packed[term]
                self._packed[term] = (
                    np.concatenate([old[0], these[0]]),
                    np.concatenate([old[1], these[1]]),
                )
            else:
                self._packed[term] = these
        self._lengths.extend([0] * (first - len(self._lengths)))
        self._alive.extend([False] * (first - len(self._alive)))
        self._lengths.extend(lengths.tolist())
        self._alive.extend([True] * n)
        self._lengths_array = None
        self._weights.clear()
        self._last = None
        self._total_len += int(lengths.sum())
        self._n_alive += n

    def remove(self, slot: int, doc_terms: list[str]) -> None:
        if slot >= len(self._alive) or not self._alive[slot]:
            return
        for term in set(doc_terms):
            posting = self._posting(term)
            if posting is not None:
                posting.pop(slot, None)
                self._arrays.pop(term, None)
                if not posting:
                    del self._postings[term]
        self._alive[slot] = False
        self._weights.clear()
        self._last = None
        self._total_len -= self._lengths[slot]
        self._n_alive -= 1

    def _array(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        cached = self._arrays.get(term)
        if cached is None:
            cached = self._packed.get(term)
        if cached is None:
            posting = self._postings.get(term)
            if not posting:
                return None
            slots = np.fromiter(posting.keys(), dtype=np.int64, count=len(posting))
            tfs = np.fromiter(posting.values(), dtype=np.float32, count=len(posting))
            cached = self._arrays[term] = (slots, tfs)
        return cached

    def slots(self, term: str) -> np.ndarray:
        """The slots of the live documents holding ``term`` (do not modify)."""
        found = self._array(term)
        return found[0] if found is not None else np.zeros(0, dtype=np.int64)

    def postings(self, term: str) -> dict[int, int]:
        """Slot -> term frequency of the live documents holding ``term`` (do not modify)."""
        return self._posting(term) or {}

    def df(self, term: str) -> int:
        packed = self._packed.get(term)
        return len(packed[0]) if packed is not None else len(self._postings.get(term, ()))

    def idf(self, term: str) -> float:
        df = self.df(term)
        n = max(self._n_alive, 1)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query_terms: list[str], size: int) -> np.ndarray:
        """BM25 score of every slot in ``range(size)`` for the query (0 where nothing matches),
        kept for :meth:`slot_scores` until the index changes."""
        out = self._scores(query_terms, size)
        self._last = (tuple(query_terms), out.copy())
        return out

    def _scores(self, query_terms: list[str], size: int) -> np.ndarray:
        """:meth:`scores`, not kept.

        Each term's weights (:meth:`_weights_of`) times its count in the query, added to the
        slots term after term: in float32, every element's arithmetic the same as scoring one
        term at a time, so the same bits. One term's slots are distinct, so each term is one
        buffered add (``np.add.at`` over all terms at once took half again the time on
        recall's queries of 3-6 terms, and grows with the postings)."""
        out = np.zeros(size, dtype=np.float32)
        if not self._n_alive:
            return out
        counts = Counter(query_terms)
        weights = self._weights_of(list(counts))
        within = size >= len(self._alive)  # every slot of a posting is below ``size``
        for term, qtf in counts.items():
            found = weights.get(term)
            if found is None:
                continue
            slots, weight = found
            # An int meets a float32 array as a float32 (NEP 50).
            contrib = qtf * weight
            if not within:
                keep = slots < size
                slots, contrib = slots[keep], contrib[keep]
            out[slots] += contrib
        return out

    def slot_scores(self, query_terms: list[str], slots: list[int]) -> list[float]:
        """The BM25 score of each of ``slots`` for the query, as :meth:`scores` gives it: the
        scores of the last query are kept until the index changes, so the scores of a few
        slots right after a search of the same terms cost a look-up."""
        last = self._last
        size = max(slots, default=-1) + 1
        if last is None or last[0] != tuple(query_terms) or len(last[1]) < size:
            self.scores(query_terms, max(size, len(self._alive)))
            last = self._last
        assert last is not None
        found: list[float] = last[1][slots].tolist()
        return found

    def _weights_of(self, query_terms: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The slots holding each of ``query_terms`` (those some live document holds) and the
        BM25 weight of the term in each, ``idf x tf x (k1 + 1) / (tf + k1 x (1 - b + b x
        length / average length))``: kept until the index changes, and those not kept
        computed together, in one pass of array operations over their postings."""
        cache = self._weights
        out = {t: cache[t] for t in query_terms if t in cache}
        missing = [t for t in query_terms if t not in out]
        found = []
        for term in missing:
            arr = self._array(term)
            if arr is not None:
                found.append((term, arr, self.idf(term)))
        if found:
            if self._lengths_array is None:
                self._lengths_array = np.asarray(self._lengths, dtype=np.float32)
            idfs: float | np.ndarray
            if len(found) == 1:
                _, (slots, tfs), idfs = found[0]
            else:
                slots = np.concatenate([arr[0] for _, arr, _ in found])
                tfs = np.concatenate([arr[1] for _, arr, _ in found])
                # A Python float meets float32 arrays as a float32 (NEP 50), as one term's idf.
                idfs = np.repeat(
                    np.array([idf for _, _, idf in found], dtype=np.float32),
                    [len(arr[0]) for _, arr, _ in found],
                )
            avg = max(self._total_len / self._n_alive, 1e-9)
            norm = self.k1 * (1.0 - self.b + self.b * self._lengths_array[slots] / avg)
            weight = idfs * tfs * (self.k1 + 1.0) / (tfs + norm)
            if len(cache) + len(found) > _WEIGHTS_KEPT:
                cache.clear()
            start = 0
            for term, arr, _ in found:
                end = start + len(arr[0])
                cache[term] = out[term] = (arr[0], weight[start:end])
                start = end
        return out
